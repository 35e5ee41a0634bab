//! Watching governed calls from outside: a [`CallObserver`] given in
//! [`MountOptions`](crate::MountOptions) hears of every call that
//! [`Host::call`](crate::Host::call) ends, once, from the same typed
//! outcome the audit line is written from (metrics and traces are
//! recorded there, never recomputed by a front end).

use std::time::{Duration, SystemTime};

use crate::audit::{Decider, Outcome};
use crate::gate::Verdict;

/// Hears of every governed call once it has ended.
///
/// Called on the call's own task after the audit line is written: keep it
/// quick and non-blocking (update counters, hand a span to an exporter).
pub trait CallObserver: Send + Sync + std::fmt::Debug {
    /// One call ended.
    fn call_ended(&self, call: &CallEvent<'_>);
}

/// One ended call, as an observer sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallEvent<'a> {
    /// The model-facing name called.
    pub tool: &'a str,
    /// The server's alias, once the name led to one.
    pub alias: Option<&'a str>,
    /// The tool's name on the server, once the table gave it.
    pub original_tool: Option<&'a str>,
    /// What the gate said before anyone was asked (`None` when no
    /// decision was made: unknown tool, host shut down).
    pub gate: Option<Verdict>,
    /// The final decision: [`Verdict::Allow`] or [`Verdict::Deny`].
    pub decision: Option<Verdict>,
    /// Who decided.
    pub decided_by: Decider,
    /// How the call ended, as in the audit line.
    pub outcome: Outcome,
    /// When the call started.
    pub started: SystemTime,
    /// How long it took.
    pub duration: Duration,
    /// The caller's trace context for this call, as given in its request
    /// options ([`CallOptions::request`](crate::CallOptions::request)).
    pub trace: Option<&'a TraceContext>,
}

/// W3C Trace Context for one call: the `traceparent` (and `tracestate`)
/// the call's downstream request carries in `_meta`, given in the call's
/// request options.
pub use switchboard_client::TraceContext;
