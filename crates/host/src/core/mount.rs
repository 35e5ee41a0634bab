//! Mounting every server, reconnecting one, rebuilding the table from
//! their tools, and shutting down.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use switchboard_client::InputHandler;
use switchboard_wire::Implementation;
use switchboard_wire::shared::lock;
use tokio::sync::broadcast;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use super::background::{login_watcher, store_stamp};
use super::{Host, HostError, Inner, TableChange};
use crate::audit::AuditLog;
use crate::auth::{self, TokenStore, UserAgent};
use crate::budget::Budget;
use crate::config::Config;
use crate::connect::ConnectOptions;
use crate::observe::CallObserver;
use crate::pins::Pins;
use crate::reason::Reason;
use crate::table::{Listed, TableEntry, ToolTable};
use crate::upstream::{Down, Link, Upstream};

/// How many table changes a slow subscriber may fall behind before it
/// misses some (it then sees `Lagged` and should re-read the table).
const CHANGE_BUFFER: usize = 64;

/// Options for [`Host::mount`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MountOptions {
    /// Who the host is to servers (`clientInfo`); the client's default
    /// when `None`.
    pub client_info: Option<Implementation>,
    /// Answers servers' input requests (elicitation, sampling, roots); none
    /// when `None`, and the client declares no such capability.
    pub input_handler: Option<Arc<dyn InputHandler>>,
    /// Time a stdio server gets after stdin closes (and again after
    /// `SIGTERM`) before it is killed at shutdown.
    pub shutdown_grace: Duration,
    /// Where OAuth logins of remote servers are read (and refreshed tokens
    /// saved): by default the per-user store `switchboard auth login`
    /// writes ([`auth::default_token_store`]); `None` keeps tokens in
    /// memory only. The host watches the file: when another process saves
    /// a login, servers waiting for one are connected again.
    pub token_store: Option<TokenStore>,
    /// Who logs in when a remote server wants an OAuth login. `None` (the
    /// default): no one; the server is reported as
    /// [`crate::ServerStatus::NeedsLogin`] until `switchboard auth login ALIAS`
    /// has been run. With one (e.g. a `LoopbackUserAgent`), the host starts
    /// the login itself; a login at mount must then finish within the
    /// server's start-up timeout, and one started by a call within the
    /// call's timeout.
    pub oauth_user_agent: Option<Arc<dyn UserAgent>>,
    /// Hears of every governed call once it has ended (metrics, traces).
    pub observer: Option<Arc<dyn CallObserver>>,
    /// The name of this replica (several gateways behind one URL): written
    /// into every audit line.
    pub replica: Option<String>,
    /// Where verified skill content is cached: by default the config's
    /// `skills.cacheDir`, else the user's cache directory
    /// (`skills::cache::default_root`).
    pub skill_cache: Option<std::path::PathBuf>,
    /// Counts callers' calls a minute for every replica at once (the
    /// gateway's shared store); `None`: this process counts its own.
    pub shared_limits: Option<Arc<dyn crate::limits::SharedLimits>>,
    /// Keys of tool results' `_meta` the clients leave out (see the
    /// client's `ClientConfig::leave_out_result_meta`): a gateway drops the
    /// downstream's reserved keys anyway, and so they are not even read.
    /// `None`: results keep their `_meta` whole.
    pub leave_out_result_meta: Option<fn(&str) -> bool>,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            client_info: None,
            input_handler: None,
            shutdown_grace: Duration::from_secs(2),
            token_store: auth::default_token_store().ok(),
            oauth_user_agent: None,
            observer: None,
            replica: None,
            skill_cache: None,
            shared_limits: None,
            leave_out_result_meta: None,
        }
    }
}

impl Host {
    /// Mounts every enabled server of `config`, in parallel: start-up takes
    /// as long as the slowest server, not the sum. A server that fails to
    /// start, times out or errors is recorded with its reason; the others
    /// mount.
    ///
    /// # Errors
    /// [`HostError`] only for the host's own files: a damaged lockfile or
    /// an audit log that cannot be opened.
    pub async fn mount(config: Config, options: MountOptions) -> Result<Host, HostError> {
        let pins = match &config.lockfile {
            Some(path) => Pins::open(path)?,
            None => Pins::in_memory(),
        };
        let audit = config
            .audit
            .as_deref()
            .map(AuditLog::open)
            .transpose()?
            .map(|log| {
                log.with_replica(options.replica.clone())
                    .with_rotation(config.audit_rotate)
            });
        let uses_oauth = config
            .servers
            .iter()
            .any(|s| s.enabled && auth::oauth_config(s).is_ok());
        // Taken before any server connects, so a login saved meanwhile is
        // noticed.
        let store_seen = match (&options.token_store, uses_oauth) {
            (Some(store), true) => Some((store.path().to_owned(), store_stamp(store.path()).await)),
            (None, true) => {
                debug!("no token store: OAuth logins last for this process only");
                None
            }
            _ => None,
        };
        let servers: Vec<Arc<Upstream>> = config
            .servers
            .iter()
            .map(|s| Arc::new(upstream_of(&config, s)))
            .collect();
        let skill_cache = options
            .skill_cache
            .clone()
            .or_else(|| config.skills.cache_dir.clone())
            .or_else(crate::skills::cache::default_root)
            .map(crate::skills::cache::Cache::at);
        let inner = Arc::new(Inner {
            budget: Budget::new(config.budget_chars).with_media_bytes(config.budget_media_bytes),
            config: RwLock::new(config),
            servers: RwLock::new(Arc::new(servers)),
            table: RwLock::new(Arc::new(ToolTable::default())),
            dropped: RwLock::new(Vec::new()),
            pins,
            audit,
            observer: options.observer,
            connect: ConnectOptions {
                client_info: options.client_info,
                input: options.input_handler,
                shutdown_grace: options.shutdown_grace,
                token_store: options.token_store,
                user_agent: options.oauth_user_agent,
                principal: None,
                leave_out_result_meta: options.leave_out_result_meta,
            },
            changes: broadcast::channel(CHANGE_BUFFER).0,
            builtins: crate::builtin::Builtins::default(),
            skills: super::skills::Skills::with_cache(skill_cache),
            search: Mutex::default(),
            results: crate::results::ResultStore::new(
                options.replica.clone(),
                crate::results::StoreLimits::default(),
            ),
            offers: super::catalog_sync::Offers::new(),
            limiter: Arc::default(),
            shared_limits: options.shared_limits,
            rebuild: Mutex::new(()),
            tasks: Mutex::new(Vec::new()),
            shut_down: std::sync::atomic::AtomicBool::new(false),
        });

        let host = Host { inner };
        let all = host.upstreams();
        host.prepare_lazy(&all);
        host.connect_all(&all).await;
        host.rebuild_table();
        host.start_idle_stops(&all);
        for server in all.iter() {
            host.start_refresher(server);
            host.start_listener(server);
        }
        host.mount_offers().await;
        host.mount_skills().await;
        if let Some((path, seen)) = store_seen {
            let task = tokio::spawn(login_watcher(Arc::downgrade(&host.inner), path, seen));
            host.tasks().push(task.abort_handle());
        }
        Ok(host)
    }

    /// Connects every enabled server of `servers` in parallel, recording
    /// each one's link or outage.
    pub(super) async fn connect_all(&self, servers: &[Arc<Upstream>]) {
        let mut starts = JoinSet::new();
        // A lazy server listed from its pins starts at its first call.
        for server in servers
            .iter()
            .filter(|s| s.config.enabled && !s.waits_for_first_call())
        {
            let server = server.clone();
            let connect = self.inner.connect.clone();
            starts.spawn(async move {
                let result = server.connect(&connect).await;
                (server, result)
            });
        }
        while let Some(joined) = starts.join_next().await {
            let Ok((server, result)) = joined else {
                continue;
            };
            match result {
                Ok((link, listing)) => {
                    info!(server = %server.alias(), tools = listing.items.len(), "mounted");
                    server.set_up(link, listing);
                }
                Err(down) => {
                    warn!(server = %server.alias(), reason = %down.reason, "server is down");
                    server.set_down(down);
                }
            }
        }
    }

    /// Tries to (re)connect a server now, e.g. one that was down at mount.
    ///
    /// # Errors
    /// [`HostError::UnknownServer`] for an alias not in the config; a
    /// failure to connect is not an error: see [`Host::servers`].
    pub async fn reconnect(&self, alias: &str) -> Result<(), HostError> {
        let server = self
            .server(alias)
            .ok_or_else(|| HostError::UnknownServer(alias.to_owned()))?;
        let _ = self.relink(&server, true).await;
        Ok(())
    }

    /// Stops every server (stdio: close stdin, wait, SIGTERM, SIGKILL to
    /// the whole process group) and every background task. Calls after
    /// this return an `isError` result.
    pub async fn shutdown(&self) {
        self.inner
            .shut_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let tasks = self
            .inner
            .tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in tasks {
            task.abort();
        }
        let mut closing = JoinSet::new();
        for server in self.upstreams().iter() {
            let link = server.state().link.take();
            if let Some(link) = link {
                closing.spawn(async move { link.client.close().await });
            }
        }
        while closing.join_next().await.is_some() {}
        // Kept results end with the session (their files too).
        self.inner.results.clear();
        debug!("host shut down");
    }

    /// Reconnects a server whose connection is gone. `force` reconnects
    /// even a server that is up.
    pub(super) async fn relink(&self, server: &Arc<Upstream>, force: bool) -> Result<Link, Down> {
        let _guard = server.connecting.lock().await;
        if !force {
            if let Some(link) = server.live_link() {
                return Ok(link);
            }
        }
        if self.is_shut_down() {
            return Err(Down::failed(
                crate::upstream::summary::SHUT_DOWN,
                Reason::ours("the host has shut down"),
            ));
        }
        match server.connect(&self.inner.connect).await {
            Ok((link, listing)) => {
                info!(server = %server.alias(), "reconnected");
                let old = server.state().link.take();
                if let Some(old) = old {
                    old.client.close().await;
                }
                server.set_up(link.clone(), listing);
                self.rebuild_table();
                self.start_listener(server);
                self.start_offers(server);
                self.start_skills(server);
                Ok(link)
            }
            Err(down) => {
                server.set_down(down.clone());
                Err(down)
            }
        }
    }

    /// Builds the table from every server's tools and tells subscribers
    /// what changed.
    pub(super) fn rebuild_table(&self) {
        let _guard = lock(&self.inner.rebuild);
        let mut snapshots: Vec<Listed> = self
            .upstreams()
            .iter()
            .filter(|s| s.config.enabled)
            .filter_map(|s| {
                let state = s.state();
                let listed = state.ever_up && !state.from_pins;
                (state.ever_up || state.from_pins).then(|| {
                    (
                        (
                            s.alias().to_owned(),
                            state.tools.clone(),
                            state.dropped.clone(),
                        ),
                        listed,
                    )
                })
            })
            .map(|(snapshot, listed)| {
                // Trust on first use: every definition of a real listing is
                // pinned when first seen, called or not (one listed from
                // its pins has nothing new).
                if listed {
                    if let Err(e) = self.inner.pins.see_tools(&snapshot.0, &snapshot.1) {
                        warn!(server = %snapshot.0, error = %e, "could not record the pins");
                    }
                }
                snapshot
            })
            .collect();
        // Switchboard's own tools, under the alias no server may take.
        let builtins = self.inner.builtins.definitions();
        if !builtins.is_empty() {
            snapshots.push((crate::builtin::ALIAS.to_owned(), builtins, Vec::new()));
        }
        let limits = self.config_read().description_limits;
        let (table, dropped) = ToolTable::of_listings_within(&snapshots, &limits);
        let old = self.table();
        let change = diff_tables(&old, &table);
        if let Ok(mut t) = self.inner.table.write() {
            *t = Arc::new(table);
        }
        if let Ok(mut d) = self.inner.dropped.write() {
            *d = dropped;
        }
        if change != TableChange::default() {
            let _ = self.inner.changes.send(change);
        }
    }
}

/// The mounted form of one server entry, its timeouts resolved against
/// the config's defaults.
pub(super) fn upstream_of(config: &Config, server: &crate::config::ServerConfig) -> Upstream {
    let startup = config.startup_timeout(&server.alias);
    let call = server.timeout.unwrap_or(config.timeouts.call);
    let mut server = server.clone();
    server.task_timeout = Some(config.task_timeout(&server.alias));
    Upstream::new(server, startup, call, config.breaker)
}

fn diff_tables(old: &ToolTable, new: &ToolTable) -> TableChange {
    let old_names: BTreeMap<&str, &TableEntry> = old
        .entries()
        .iter()
        .map(|e| (e.local_name.as_str(), e))
        .collect();
    let new_names: BTreeSet<&str> = new
        .entries()
        .iter()
        .map(|e| e.local_name.as_str())
        .collect();
    let mut change = TableChange::default();
    for e in new.entries() {
        match old_names.get(e.local_name.as_str()) {
            None => change.added.push(e.local_name.clone()),
            Some(o) if o.tool != e.tool || o.alias != e.alias => {
                change.changed.push(e.local_name.clone());
            }
            Some(_) => {}
        }
    }
    for name in old_names.keys() {
        if !new_names.contains(name) {
            change.removed.push((*name).to_owned());
        }
    }
    change
}
