//! Prometheus metrics (`prometheus-client`), served on `/metrics` in the
//! OpenMetrics text format. Calls are counted where the host ends them
//! (a [`CallObserver`]); server states are read from the host when
//! scraped.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `switchboard_calls_total` | `server`, `tool`, `outcome` | governed calls, by audit outcome |
//! | `switchboard_call_errors_total` | `server`, `tool` | calls that failed (not `ok`, not refused) |
//! | `switchboard_call_duration_seconds` | `server`, `tool` | latency histogram of the calls that ran |
//! | `switchboard_gate_decisions_total` | `server`, `decision` | the gate's `allow` / `ask` / `deny` |
//! | `switchboard_approvals_total` | `server`, `answer` | questions answered `allow` or `deny` |
//! | `switchboard_server_up` | `server` | 1 when mounted and reachable |
//! | `switchboard_breaker_open` | `server` | 1 while the server's breaker is open |
//! | `switchboard_server_status` | `server`, `status` | 1 for the server's current status |
//! | `switchboard_tasks_resumed_total` | `server` | tasks handed on upstream that this process picked up again after a restart |
//! | `switchboard_reloads_total` | `file` (`config`, `tokens`, `tls`), `result` (`applied`, `rejected`) | reloads of the watched files; a rejected one leaves the running settings in place |
//! | `switchboard_auth_refusals_total` | `reason` | HTTP requests refused for their authorization: `missing_token`, `invalid_token`, `insufficient_scope`, `invalid_request`, `unavailable`, `invalid_proof` |
//! | `switchboard_state_up` | | with `--state`: 1 when the shared store answered its last use |
//! | `switchboard_state_errors_total` | `operation` (`replay`, `limit`, `ping`, `membership`, `console`) | with `--state`: uses of the shared store that failed |
//!
//! A name that is in no table is counted as `tool="(unknown)"`, so callers
//! cannot grow the label set without bound.
//!
//! Calls are counted as `switchboard audit stats` counts the audit log's
//! lines, so the two agree on the same traffic: a request handed back to
//! its caller (`asked`, `input_required`) is no call (its answered retry
//! is), a refusal (`denied`, `limited`) is a call but no error, and only
//! calls that were not refused have a duration (a denied call's time is
//! mostly someone reading a question).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use switchboard_host::{CallEvent, CallObserver, Decider, Host, Outcome, ServerStatus, Verdict};
use switchboard_server::Refusal;
use switchboard_wire::shared::{read_lock, write_lock};

use crate::SharedState;
use crate::state::Operation;

/// The content type of the exposition.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The gateway's metrics.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    errors: Family<ToolLabels, Counter>,
    latency: Family<ToolLabels, Histogram, fn() -> Histogram>,
    gate: Family<GateLabels, Counter>,
    approvals: Family<ApprovalLabels, Counter>,
    up: Family<ServerLabels, Gauge>,
    breaker: Family<ServerLabels, Gauge>,
    status: Family<StatusLabels, Gauge>,
    resumed: Family<ServerLabels, Counter>,
    refusals: Family<RefusalLabels, Counter>,
    reloads: Family<ReloadLabels, Counter>,
    /// The shared store, once one is attached (its metrics are read from
    /// it when scraped; none without one).
    state: Arc<OnceLock<SharedState>>,
    /// What an allowed call that ended ok counts, by server and tool: the
    /// same counters as in the families (they share their values), found
    /// without building label sets (strings) for every call.
    allowed_ok: RwLock<HashMap<String, HashMap<String, AllowedOk>>>,
}

/// The counters an allowed call that ended ok adds to.
#[derive(Clone)]
struct AllowedOk {
    calls: Counter,
    latency: Histogram,
    gate: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics(..)")
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GateLabels {
    server: String,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApprovalLabels {
    server: String,
    answer: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    file: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

/// The shared store's metrics, read from it when scraped: nothing before
/// a store is attached.
#[derive(Debug)]
struct StateCollector(Arc<OnceLock<SharedState>>);

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(state) = self.0.get() else {
            return Ok(());
        };
        let up = ConstGauge::new(i64::from(state.is_up()));
        up.encode(encoder.encode_descriptor(
            "switchboard_state_up",
            "1 when the shared store (--state) answered its last use",
            None,
            up.metric_type(),
        )?)?;
        let errors = Family::<OperationLabels, Counter>::default();
        for operation in [
            Operation::Replay,
            Operation::Limit,
            Operation::Ping,
            Operation::Membership,
            Operation::Console,
        ] {
            errors
                .get_or_create(&OperationLabels {
                    operation: operation.label(),
                })
                .inc_by(state.errors(operation));
        }
        errors.encode(encoder.encode_descriptor(
            "switchboard_state_errors",
            "Uses of the shared store that failed, by operation (replay, limit, ping, membership, console)",
            None,
            errors.metric_type(),
        )?)?;
        Ok(())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    server: String,
    status: &'static str,
}

/// Latency buckets: 0.5 ms to about 16 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics, registered.
    #[must_use]
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let calls = Family::<CallLabels, Counter>::default();
        let errors = Family::<ToolLabels, Counter>::default();
        let latency = Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let gate = Family::<GateLabels, Counter>::default();
        let approvals = Family::<ApprovalLabels, Counter>::default();
        let up = Family::<ServerLabels, Gauge>::default();
        let breaker = Family::<ServerLabels, Gauge>::default();
        let status = Family::<StatusLabels, Gauge>::default();
        let resumed = Family::<ServerLabels, Counter>::default();
        let refusals = Family::<RefusalLabels, Counter>::default();
        let reloads = Family::<ReloadLabels, Counter>::default();
        registry.register(
            "switchboard_calls",
            "Governed tool calls, by server, tool and outcome",
            calls.clone(),
        );
        registry.register(
            "switchboard_call_errors",
            "Tool calls that failed (refusals and questions handed back excluded)",
            errors.clone(),
        );
        registry.register(
            "switchboard_call_duration_seconds",
            "Duration of governed tool calls that were not refused",
            latency.clone(),
        );
        registry.register(
            "switchboard_gate_decisions",
            "What the gate said before anyone was asked: allow, ask or deny",
            gate.clone(),
        );
        registry.register(
            "switchboard_approvals",
            "Approval questions answered, by answer",
            approvals.clone(),
        );
        registry.register(
            "switchboard_server_up",
            "1 when the server is mounted and reachable",
            up.clone(),
        );
        registry.register(
            "switchboard_breaker_open",
            "1 while the server's breaker is open",
            breaker.clone(),
        );
        registry.register(
            "switchboard_server_status",
            "1 for the server's current status (up, down, tripped, disabled, needs_login)",
            status.clone(),
        );
        registry.register(
            "switchboard_tasks_resumed",
            "Tasks handed on upstream that this process picked up again after a restart",
            resumed.clone(),
        );
        registry.register(
            "switchboard_auth_refusals",
            "HTTP requests refused for their authorization, by reason",
            refusals.clone(),
        );
        registry.register(
            "switchboard_reloads",
            "Reloads of the config and tokens files, by file and result (applied, rejected)",
            reloads.clone(),
        );
        let state = Arc::new(OnceLock::new());
        registry.register_collector(Box::new(StateCollector(Arc::clone(&state))));
        Metrics {
            state,
            registry,
            calls,
            errors,
            latency,
            gate,
            approvals,
            up,
            breaker,
            status,
            resumed,
            refusals,
            reloads,
            allowed_ok: RwLock::default(),
        }
    }

    /// Reports `state`'s metrics from now on (the first store attached).
    pub(crate) fn attach_state(&self, state: &SharedState) {
        let _ = self.state.set(state.clone());
    }

    /// Counts a reload of `file` (`config`, `tokens` or `tls`), applied or
    /// not.
    pub(crate) fn reloaded(&self, file: &'static str, applied: bool) {
        self.reloads
            .get_or_create(&ReloadLabels {
                file,
                result: if applied { "applied" } else { "rejected" },
            })
            .inc();
    }

    /// Counts a request refused for its authorization.
    pub(crate) fn auth_refused(&self, refusal: Refusal) {
        self.refusals
            .get_or_create(&RefusalLabels {
                reason: refusal.as_str(),
            })
            .inc();
    }

    /// Counts a task of `server`'s picked up again after a restart.
    pub(crate) fn task_resumed(&self, server: &str) {
        self.resumed
            .get_or_create(&ServerLabels {
                server: server.to_owned(),
            })
            .inc();
    }

    /// The exposition, with the servers' states read from `host` now.
    #[must_use]
    pub fn render(&self, host: &Host) -> String {
        self.up.clear();
        self.breaker.clear();
        self.status.clear();
        for s in host.servers() {
            let server = ServerLabels {
                server: s.alias.clone(),
            };
            self.up
                .get_or_create(&server)
                .set(i64::from(s.status == ServerStatus::Up));
            self.breaker
                .get_or_create(&server)
                .set(i64::from(s.status == ServerStatus::Tripped));
            self.status
                .get_or_create(&StatusLabels {
                    server: s.alias,
                    status: status_label(s.status),
                })
                .set(1);
        }
        self.encode()
    }

    /// The exposition of what is counted, as it stands.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

impl CallObserver for Metrics {
    fn call_ended(&self, call: &CallEvent<'_>) {
        // Most calls: allowed, ended ok, of a tool counted before.
        let allowed_ok = call.outcome == Outcome::Ok
            && call.gate == Some(Verdict::Allow)
            && call.original_tool.is_some();
        let alias = call.alias.unwrap_or("");
        if allowed_ok {
            let known = read_lock(&self.allowed_ok);
            if let Some(counters) = known.get(alias).and_then(|tools| tools.get(call.tool)) {
                counters.calls.inc();
                counters.latency.observe(call.duration.as_secs_f64());
                counters.gate.inc();
                return;
            }
        }
        let server = alias.to_owned();
        // A request handed back is not a call: its retry, answered, is
        // counted (gate decision included), as `audit stats` counts it.
        if call.outcome.is_handed_back() {
            return;
        }
        // Only names the table routed are labels; anything else is one
        // bucket.
        let tool = if call.original_tool.is_some() {
            call.tool.to_owned()
        } else {
            "(unknown)".to_owned()
        };
        self.calls
            .get_or_create(&CallLabels {
                server: server.clone(),
                tool: tool.clone(),
                outcome: call.outcome.as_str(),
            })
            .inc();
        let labels = ToolLabels { server, tool };
        if call.outcome.is_error() {
            self.errors.get_or_create(&labels).inc();
        }
        if !call.outcome.is_refusal() {
            self.latency
                .get_or_create(&labels)
                .observe(call.duration.as_secs_f64());
        }
        if allowed_ok {
            let counters = AllowedOk {
                calls: self
                    .calls
                    .get_or_create(&CallLabels {
                        server: labels.server.clone(),
                        tool: labels.tool.clone(),
                        outcome: Outcome::Ok.as_str(),
                    })
                    .clone(),
                latency: self.latency.get_or_create(&labels).clone(),
                gate: self
                    .gate
                    .get_or_create(&GateLabels {
                        server: labels.server.clone(),
                        decision: Verdict::Allow.as_str(),
                    })
                    .clone(),
            };
            write_lock(&self.allowed_ok)
                .entry(labels.server.clone())
                .or_default()
                .insert(labels.tool.clone(), counters);
        }
        self.count_gate(call, &labels.server);
    }
}

impl Metrics {
    /// Counts what the gate said of `call` to `server`, and the approver's
    /// answer when someone was asked.
    fn count_gate(&self, call: &CallEvent<'_>, server: &str) {
        let Some(gate) = call.gate else { return };
        self.gate
            .get_or_create(&GateLabels {
                server: server.to_owned(),
                decision: gate.as_str(),
            })
            .inc();
        if gate == Verdict::Ask && call.decided_by != Decider::NoApprover {
            self.approvals
                .get_or_create(&ApprovalLabels {
                    server: server.to_owned(),
                    answer: call.decision.map_or("deny", Verdict::as_str),
                })
                .inc();
        }
    }
}

fn status_label(status: ServerStatus) -> &'static str {
    match status {
        ServerStatus::Up => "up",
        ServerStatus::Down => "down",
        ServerStatus::Tripped => "tripped",
        ServerStatus::Disabled => "disabled",
        ServerStatus::NeedsLogin => "needs_login",
        ServerStatus::NotStarted => "not_started",
    }
}
