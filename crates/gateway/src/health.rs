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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use switchboard_host::{Host, ServerStatus};
use switchboard_server::http::{HttpOptions, PlainResponse, PlainRoute};

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
pub(crate) fn routes(options: HttpOptions, host: &Host, drain: &Drain) -> HttpOptions {
    let healthz: PlainRoute = Arc::new(|| {
        Box::pin(std::future::ready(PlainResponse::new(
            200,
            "application/json",
            json!({"status": "ok"}).to_string(),
        )))
    });
    let host = host.clone();
    let drain = drain.clone();
    let readyz: PlainRoute = Arc::new(move || {
        let answer = if drain.is_draining() {
            PlainResponse::new(
                503,
                "application/json",
                json!({"ready": false, "draining": true}).to_string(),
            )
        } else {
            readiness(&host)
        };
        Box::pin(std::future::ready(answer))
    });
    options
        .plain_route("/healthz", healthz)
        .plain_route("/readyz", readyz)
}

/// The `/readyz` answer for `host` now.
fn readiness(host: &Host) -> PlainResponse {
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
        PlainResponse::new(200, "application/json", json!({"ready": true}).to_string())
    } else {
        PlainResponse::new(
            503,
            "application/json",
            json!({"ready": false, "missing": missing}).to_string(),
        )
    }
}
