//! Servers started on first use. A lazy server (`"lazy": true`, or, with
//! `toolSearch` set to `true` or a number, a server all of whose tools are
//! pinned) is not started at launch: it is listed with its pinned
//! definitions (searchable, listable, its status `not started`), its first
//! call starts it (the gate then judges its live definitions, so a change
//! since the pins is flagged as usual), and once no call has run on it for
//! its `idleTimeoutMs` (default 10 minutes) it is stopped again until the
//! next call. A lazy server with no pins is started at launch (its tools
//! must be learnt once) and stopped when idle like the others.

use std::sync::{Arc, Weak};

use tracing::{debug, info};

use super::{Host, Inner};
use crate::ToolSearch;
use crate::upstream::Upstream;

impl Host {
    /// Marks the lazy servers among `servers` and lists each with its
    /// pinned definitions, before anything is started.
    pub(super) fn prepare_lazy(&self, servers: &[Arc<Upstream>]) {
        let config = self.config_read();
        let searching = matches!(config.tool_search, ToolSearch::On | ToolSearch::Tokens(_));
        for server in servers.iter().filter(|s| s.config.enabled) {
            let pinned = self.inner.pins.approved_tools(server.alias());
            let lazy = server.config.lazy || (searching && !pinned.is_empty());
            if lazy {
                debug!(server = %server.alias(), pinned = pinned.len(), "lazy");
                server.set_lazy(pinned);
            }
        }
    }

    /// Starts the idle stop of each lazy server among `servers`.
    pub(super) fn start_idle_stops(&self, servers: &[Arc<Upstream>]) {
        for server in servers.iter().filter(|s| s.is_lazy()) {
            let idle = self.config_read().idle_timeout(server.alias());
            let task = tokio::spawn(idle_stop(Arc::downgrade(&self.inner), server.clone(), idle));
            self.tasks().push(task.abort_handle());
        }
    }

    /// Starts a lazy server that is not running, before its first call is
    /// judged; `Err` with why when it does not come up.
    pub(super) async fn start_lazy(
        &self,
        server: &Arc<Upstream>,
    ) -> Result<(), crate::upstream::Down> {
        if !server.is_lazy() || server.live_link().is_some() {
            return Ok(());
        }
        info!(server = %server.alias(), "starting a lazy server for its first call");
        self.relink(server, false).await.map(|_| ())
    }
}

/// Stops a lazy server once no call has run on it for `idle`.
async fn idle_stop(host: Weak<Inner>, server: Arc<Upstream>, idle: std::time::Duration) {
    loop {
        let wait = server
            .idle_left(idle, tokio::time::Instant::now())
            .max(std::time::Duration::from_millis(10));
        tokio::time::sleep(wait).await;
        let Some(inner) = host.upgrade() else {
            return;
        };
        let host = Host { inner };
        // A server a reload dropped or replaced is no longer watched.
        if !host.upstreams().iter().any(|s| Arc::ptr_eq(s, &server)) {
            return;
        }
        if server.live_link().is_none() || !server.idle_for(idle, tokio::time::Instant::now()) {
            continue;
        }
        // No start or call may slip in while it stops.
        let _starting = server.connecting.lock().await;
        if !server.idle_for(idle, tokio::time::Instant::now()) {
            continue;
        }
        let link = server.state().link.take();
        if let Some(link) = link {
            info!(server = %server.alias(), idle_ms = idle.as_millis() as u64, "stopping an idle lazy server");
            link.client.close().await;
        }
    }
}
