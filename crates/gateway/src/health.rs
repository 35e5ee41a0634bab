//! `/healthz` and `/readyz`: plain GET routes next to the MCP endpoint,
//! without authentication, for load balancers and orchestrators.
//!
//! - `/healthz`: 200 `{"status":"ok"}` while the process serves.
//! - `/readyz`: 200 `{"ready":true}` when every required server (config
//!   `"required"`, default `true`; disabled servers never count) is up;
//!   otherwise 503 with `{"ready":false,"missing":[{"server":…,"status":…}]}`.
//!   Only aliases and states are shown, never reasons: the route is open
//!   to anyone who can reach the port. While the gateway drains
//!   ([`Drain`]), 503 with `{"ready":false,"draining":true}`.
//!   With a shared store (`--state`), every answer also says
//!   `"state":"up"` or `"state":"down"`; a store that is down does not
//!   make the replica unready, since everything but approvals and limited
//!   calls is still served (and every replica shares the store: taking
//!   them all out of rotation would stop those calls too).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use switchboard_host::{Host, ServerStatus};
use switchboard_server::http::{HttpOptions, PlainResponse, PlainRoute};

use crate::SharedState;

/// A gateway about to stop, for a balancer to take it out of rotation
/// first: once [`Drain::start`] is called `/readyz` answers 503, while
/// calls, tasks and approvals go on being served as before.
#[derive(Debug, Clone, Default)]
pub struct Drain(Arc<AtomicBool>);

impl Drain {
    /// Starts draining: `/readyz` answers 503 from now on.
    pub fn start(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the gateway is draining.
    #[must_use]
    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// `options` with the two routes.
pub(crate) fn routes(
    options: HttpOptions,
    host: &Host,
    drain: &Drain,
    state: Option<&SharedState>,
    membership: Option<&Arc<crate::Membership>>,
) -> HttpOptions {
    let healthz: PlainRoute = Arc::new(|| {
        Box::pin(std::future::ready(PlainResponse::new(
            200,
            "application/json",
            json!({"status": "ok"}).to_string(),
        )))
    });
    let host = host.clone();
    let drain = drain.clone();
    let state = state.cloned();
    let membership = membership.cloned();
    let readyz: PlainRoute = Arc::new(move || {
        let (status, mut body) = if drain.is_draining() {
            (503, json!({"ready": false, "draining": true}))
        } else {
            readiness(&host)
        };
        if let Some(state) = &state {
            body["state"] = json!(if state.is_up() { "up" } else { "down" });
        }
        if let Some(membership) = &membership {
            // The other replicas this one found in the store's registry.
            let names: Vec<String> = membership.replicas().into_iter().map(|(n, _)| n).collect();
            body["replicas"] = json!(names);
        }
        let answer = PlainResponse::new(status, "application/json", body.to_string());
        Box::pin(std::future::ready(answer))
    });
    options
        .plain_route("/healthz", healthz)
        .plain_route("/readyz", readyz)
}

/// The `/readyz` status and body for `host` now.
fn readiness(host: &Host) -> (u16, serde_json::Value) {
    let config = host.config();
    let missing: Vec<_> = host
        .servers()
        .into_iter()
        .filter(|s| {
            s.status != ServerStatus::Up
                && s.status != ServerStatus::Disabled
                // A lazy server starts at its first call: not an outage.
                && s.status != ServerStatus::NotStarted
                && config
                    .servers
                    .iter()
                    .any(|c| c.alias == s.alias && c.required)
        })
        .map(|s| json!({"server": s.alias, "status": s.status.as_words()}))
        .collect();
    if missing.is_empty() {
        (200, json!({"ready": true}))
    } else {
        (503, json!({"ready": false, "missing": missing}))
    }
}
