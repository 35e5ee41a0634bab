//! A new config applied to the running host: servers diffed by alias and
//! entry, the added and changed ones connected before they replace
//! anything, the dropped ones closed after; rules and the rest swapped in.
//! Calls in flight keep the server they started with; calls to servers
//! the reload does not touch never notice it.

use std::sync::Arc;

use tracing::{info, warn};

use super::mount::upstream_of;
use super::{Host, TableChange};
use crate::config::Config;
use crate::upstream::Upstream;

/// What a [`Host::reload`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Aliases mounted for the first time.
    pub added: Vec<String>,
    /// Aliases dropped (their connections closed).
    pub removed: Vec<String>,
    /// Aliases whose entry changed: connected anew, the old connection
    /// closed.
    pub changed: Vec<String>,
    /// Aliases left as they were.
    pub unchanged: Vec<String>,
    /// Settings the running host cannot change (each a sentence naming
    /// the key): they take effect at the next start.
    pub needs_restart: Vec<String>,
}

impl ReloadReport {
    /// Whether the reload changed any server.
    pub fn servers_changed(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }
}

impl Host {
    /// Applies `config` (already loaded and checked: a config with
    /// problems never gets here) to the running host. Servers are matched
    /// by alias: a new alias is mounted, a missing one dropped, one whose
    /// entry (transport, command, URL, headers, timeouts, `enabled`,
    /// OAuth) changed is connected anew and replaces the old connection
    /// once it is up; the others are untouched, and so are calls in flight
    /// to them. Rules, principals, callers' limits, roots and timeouts are
    /// swapped in; subscribers hear of the table's change. The audit log,
    /// lockfile, budget and breaker settings stay as they were started
    /// ([`ReloadReport::needs_restart`] names them).
    ///
    /// Reloads are meant to come from one place at a time (a config
    /// watcher): two at once may interleave their server lists.
    pub async fn reload(&self, config: Config) -> ReloadReport {
        let mut report = ReloadReport::default();
        if self.is_shut_down() {
            return report;
        }
        let old = self.upstreams();
        let mut next: Vec<Arc<Upstream>> = Vec::with_capacity(config.servers.len());
        let mut fresh: Vec<Arc<Upstream>> = Vec::new();
        for entry in &config.servers {
            let candidate = upstream_of(&config, entry);
            match old.iter().find(|s| s.alias() == entry.alias) {
                Some(current) if same_entry(current, &candidate) => {
                    report.unchanged.push(entry.alias.clone());
                    next.push(current.clone());
                }
                found => {
                    if found.is_some() {
                        report.changed.push(entry.alias.clone());
                    } else {
                        report.added.push(entry.alias.clone());
                    }
                    let candidate = Arc::new(candidate);
                    fresh.push(candidate.clone());
                    next.push(candidate);
                }
            }
        }
        let gone: Vec<Arc<Upstream>> = old
            .iter()
            .filter(|s| !next.iter().any(|n| Arc::ptr_eq(n, s)))
            .cloned()
            .collect();
        report.removed = gone
            .iter()
            .filter(|s| !config.servers.iter().any(|e| e.alias == s.alias()))
            .map(|s| s.alias().to_owned())
            .collect();
        report.needs_restart = needs_restart(&self.config_read(), &config);

        // New and changed servers come up before anything is replaced, so
        // calls keep going to the old connection meanwhile.
        self.connect_all(&fresh).await;
        if self.is_shut_down() {
            return report;
        }
        let rules_changed = self.config_read().rules != config.rules;
        if let Ok(mut current) = self.inner.config.write() {
            *current = config;
        }
        if let Ok(mut servers) = self.inner.servers.write() {
            *servers = Arc::new(next);
        }
        self.rebuild_table();
        if rules_changed {
            // What the gate says of every tool may have changed: a list
            // filtered by the rules must be read again.
            let _ = self.inner.changes.send(TableChange {
                changed: self
                    .table()
                    .entries()
                    .iter()
                    .map(|e| e.local_name.clone())
                    .collect(),
                ..TableChange::default()
            });
        }
        for server in &fresh {
            self.start_refresher(server);
            self.start_listener(server);
            self.start_offers(server);
            self.start_skills(server);
        }
        for server in gone {
            self.drop_offer(server.alias());
            // A server removed from the config takes its skills, and their
            // cached content, with it (one replaced keeps its alias).
            if self.server(server.alias()).is_none() {
                self.drop_skills(server.alias());
            }
            // Its refresher sees it is no longer mounted and stops.
            server.refresh.notify_one();
            let link = server.state().link.take();
            if let Some(link) = link {
                link.client.close().await;
            }
        }
        for setting in &report.needs_restart {
            warn!("config reload: {setting}");
        }
        info!(
            added = ?report.added,
            removed = ?report.removed,
            changed = ?report.changed,
            "config reloaded"
        );
        report
    }
}

/// Whether a running server can stay as it is under the new config.
fn same_entry(current: &Upstream, candidate: &Upstream) -> bool {
    current.config == candidate.config
        && current.startup_timeout == candidate.startup_timeout
        && current.default_call_timeout == candidate.default_call_timeout
}

/// The settings that differ and that only a restart applies.
fn needs_restart(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if old.audit != new.audit || old.audit_rotate != new.audit_rotate {
        out.push("\"audit\" or \"auditRotate\" changed; the running gateway keeps writing the old log as before until it is restarted".into());
    }
    if old.lockfile != new.lockfile {
        out.push(
            "\"lockfile\" changed; the running gateway keeps the old pins until it is restarted"
                .into(),
        );
    }
    if old.budget_chars != new.budget_chars || old.budget_media_bytes != new.budget_media_bytes {
        out.push("the result budget changed; it applies after a restart".into());
    }
    if old.breaker != new.breaker {
        out.push(
            "the breaker settings changed; servers mounted before the reload keep the old ones"
                .into(),
        );
    }
    out
}
