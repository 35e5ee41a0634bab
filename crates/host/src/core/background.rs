//! What runs beside the calls: a refresher per server (re-listing on
//! `list_changed` or a stale `ttlMs`), a `subscriptions/listen` listener
//! per modern server that offers one, and the token-store watcher that
//! retries servers waiting for a login.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_wire::ErrorCode;
use switchboard_wire::shared::lock;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::{Host, Inner};
use crate::upstream::{Down, Upstream};

/// How often the token store is looked at for a login made by another
/// process (a stat of one file).
const LOGIN_POLL: Duration = Duration::from_secs(2);

impl Host {
    /// Asks every server whose listing's `ttlMs` has passed to refresh in
    /// the background ([`Host::tools`] does this itself; a caller that
    /// keeps its own copy of the list calls it instead).
    pub fn wake_stale(&self) {
        let now = Instant::now();
        for server in self.upstreams().iter() {
            if server.is_stale(now) {
                server.refresh.notify_one();
            }
        }
    }

    /// When the first tool listing now held goes stale (its `ttlMs`
    /// lapses), if any has a lifetime; a past instant for one already
    /// stale. A caller that keeps its own copy of the list (a gateway)
    /// sleeps until then and calls [`Host::wake_stale`].
    pub fn next_stale(&self) -> Option<std::time::Instant> {
        self.upstreams()
            .iter()
            .filter_map(|s| s.fresh_until())
            .min()
            .map(Instant::into_std)
    }

    pub(super) fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<tokio::task::AbortHandle>> {
        let mut tasks = lock(&self.inner.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks
    }

    /// Starts a server's refresher: one task for the life of the host.
    pub(super) fn start_refresher(&self, server: &Arc<Upstream>) {
        if !server.config.enabled || self.is_shut_down() {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let srv = server.clone();
        let task = tokio::spawn(refresher(weak, srv));
        self.tasks().push(task.abort_handle());
    }

    /// Starts a listener on the server's current connection when it offers
    /// list-changed notifications (modern servers; legacy ones send them
    /// unsolicited, and the client hands them to the refresher).
    pub(super) fn start_listener(&self, server: &Arc<Upstream>) {
        if self.is_shut_down() {
            return;
        }
        let Some(link) = server.live_link() else {
            return;
        };
        let offers = server
            .state()
            .description
            .as_ref()
            .and_then(|d| d.capabilities.tools.as_ref())
            .and_then(|t| t.list_changed)
            == Some(true);
        if offers && link.client.era() == switchboard_wire::Era::Modern {
            let task = tokio::spawn(listener(link.client.clone(), Arc::downgrade(server)));
            self.tasks().push(task.abort_handle());
        }
    }
}

/// When the token store changes (`switchboard auth login` in another
/// process, while a gateway runs), retries every server that is down for
/// want of authorization; one that comes up joins the table and
/// subscribers hear of its tools.
pub(super) async fn login_watcher(host: Weak<Inner>, path: PathBuf, mut seen: Option<StoreStamp>) {
    loop {
        tokio::time::sleep(LOGIN_POLL).await;
        let now = store_stamp(&path).await;
        if now == seen {
            continue;
        }
        seen = now;
        let Some(inner) = host.upgrade() else {
            return;
        };
        let host = Host { inner };
        let waiting: Vec<Arc<Upstream>> = host
            .upstreams()
            .iter()
            .filter(|s| s.config.enabled && s.live_link().is_none())
            .filter(|s| s.state().down.as_ref().is_some_and(Down::auth_required))
            .cloned()
            .collect();
        for server in waiting {
            match host.relink(&server, false).await {
                Ok(_) => {
                    info!(server = %server.alias(), "authorized with a login from the token store")
                }
                Err(down) => {
                    debug!(server = %server.alias(), reason = %down.reason, "still not authorized")
                }
            }
        }
    }
}

/// When and how big the token store file is; `None` while it does not
/// exist.
pub(super) type StoreStamp = (std::time::SystemTime, u64);

pub(super) async fn store_stamp(path: &Path) -> Option<StoreStamp> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Refreshes a server's tools whenever woken (list_changed, stale TTL).
async fn refresher(host: Weak<Inner>, server: Arc<Upstream>) {
    let alias = server.alias().to_owned();
    loop {
        server.refresh.notified().await;
        let Some(inner) = host.upgrade() else {
            return;
        };
        let host = Host { inner };
        // A server a reload dropped or replaced stops refreshing.
        if !host.upstreams().iter().any(|s| Arc::ptr_eq(s, &server)) {
            return;
        }
        let Some(link) = server.live_link() else {
            continue;
        };
        match link.client.list_all_tools().await {
            Ok(listing) => {
                debug!(server = %alias, tools = listing.items.len(), "refreshed the tool list");
                server.set_tools(listing);
                host.rebuild_table();
            }
            Err(e) => warn!(server = %alias, error = %e, "refreshing the tool list failed"),
        }
    }
}

/// Keeps a `subscriptions/listen` stream open for `tools/list_changed`,
/// re-opening it when it drops. Each time it opens, the tools are
/// refreshed: a change made before the stream was open (since the listing
/// at connect, or while it was down) was notified to no one.
async fn listener(client: switchboard_client::Client, server: Weak<Upstream>) {
    let filter = switchboard_wire::types::SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let mut backoff = Duration::from_millis(500);
    loop {
        match client.listen(filter.clone()).await {
            Ok(mut sub) => {
                backoff = Duration::from_millis(500);
                if let Some(s) = server.upgrade() {
                    s.refresh.notify_one();
                }
                while let Some(n) = sub.next().await {
                    if n.method == switchboard_wire::types::method::TOOLS_LIST_CHANGED {
                        match server.upgrade() {
                            Some(s) => s.refresh.notify_one(),
                            None => return,
                        }
                    }
                }
            }
            Err(e) if e.is_closed() => return,
            Err(e) if e.code() == Some(ErrorCode::MethodNotFound.code()) => {
                debug!(error = %e, "the server offers no listen stream; relying on unsolicited notifications");
                return;
            }
            Err(e) => debug!(error = %e, "opening the listen stream failed"),
        }
        if server.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(60));
    }
}
