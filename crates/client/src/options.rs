//! Per-call options and the client's configuration.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_wire::types::JsonObject;
use switchboard_wire::types::ProgressParams;
use switchboard_wire::{ClientCapabilities, Implementation, LoggingLevel};

use crate::input::InputHandler;
use crate::transport::NotificationSink;

/// Receives the progress of one request (`notifications/progress` whose
/// token is the request's). Called from the transport's reader: keep it
/// quick and non-blocking.
pub type ProgressSink = Arc<dyn Fn(ProgressParams) + Send + Sync>;

/// Options for one request; `RequestOptions::default()` uses the client's.
///
/// Every per-request option that reaches the server is declared here, and
/// only here: a host's call options embed these whole
/// (`switchboard_host::CallOptions::request`) and hand them down as they
/// are, so a new option is one field of this type.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Deadline for this call (each MRTR round gets its own); the client's
    /// default when `None`. On expiry the request is cancelled.
    pub timeout: Option<Duration>,
    /// Asks for progress: the client puts a progress token in `_meta` and
    /// hands each progress notification for it here.
    pub on_progress: Option<ProgressSink>,
    /// Receives every other notification about this request (e.g.
    /// `notifications/message` on HTTP, where it is tied to the request,
    /// and the `notifications/tasks` of a task it became).
    pub on_notification: Option<NotificationSink>,
    /// Log level to ask for (`_meta` `logLevel`), overriding the client's.
    pub log_level: Option<LoggingLevel>,
    /// The W3C trace context this request carries in `_meta`
    /// (`traceparent`, and `tracestate` when set).
    pub trace: Option<TraceContext>,
    /// Extra `_meta` keys for this call; the client's own keys win.
    pub meta: Option<JsonObject>,
    /// Answers the input requests of a task this call turns into (tasks
    /// extension), instead of the client's own [`InputHandler`]; it can
    /// only answer what the client's handler declared. For a caller that
    /// relays the questions elsewhere, e.g. a gateway to its own client.
    pub task_input: Option<Arc<dyn InputHandler>>,
    /// Answers the requests a legacy (2025-11-25) server sends during this
    /// call (elicitation, sampling, roots), instead of the client's own
    /// [`InputHandler`], when the client can tie them to it: this call was
    /// the client's only request in flight when the server's request
    /// arrived (nothing in a legacy request names the call it is for).
    /// A 2025-11-25 task the call becomes keeps it for its `tasks/result`,
    /// which carries the task's questions. It can only answer what the
    /// client's handler declared.
    pub call_input: Option<Arc<dyn InputHandler>>,
    /// Hand an `input_required` answer back to the caller (as
    /// [`crate::ClientError::InputRequired`]) instead of answering it
    /// through the client's input handler: for a gateway that relays the
    /// server's questions to its own client.
    pub relay_input: bool,
    /// The answers to a relayed `input_required`, sent with this request
    /// (`inputResponses` and the echoed `requestState`).
    pub resume: Option<Resume>,
    /// The capabilities of whoever the answers to this request's questions
    /// come from, when that is not this client alone (a gateway relaying
    /// them to its own client): the request then declares only the
    /// questions both can answer (`ClientCapabilities::narrowed_to`), so a
    /// modern server asks nothing that cannot be passed on. A 2025-11-25
    /// server learnt the client's capabilities once, at `initialize`.
    pub capabilities: Option<ClientCapabilities>,
    /// Leaves the task this call becomes running on the server when the
    /// call is dropped before the task ended (no `tasks/cancel`): for a
    /// caller that picks the task up again later
    /// ([`crate::Client::follow_task_with`]), e.g. a gateway stopping for
    /// a restart. Running out of the task deadline still cancels it.
    pub leave_task_on_drop: bool,
    /// A key naming this call across retries: sent in `_meta` under
    /// `dev.switchboard/idempotencyKey`
    /// ([`switchboard_wire::meta::IDEMPOTENCY_KEY`]), the same on every
    /// attempt (each attempt has a fresh request id), so a server that
    /// keeps a record (the Switchboard server framework does) answers a
    /// duplicate from it instead of running the call again.
    pub idempotency_key: Option<String>,
}

/// W3C Trace Context for one request: the `traceparent` (and
/// `tracestate`) it carries in `_meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-TRACEID-SPANID-FLAGS`.
    pub traceparent: String,
    /// Vendor entries, passed on unchanged.
    pub tracestate: Option<String>,
    /// The caller's own span, the parent of the request's span (16 hex
    /// digits), for whoever records spans (a host's call observers); not
    /// sent anywhere.
    pub parent_span_id: Option<String>,
}

impl TraceContext {
    /// A context with this `traceparent` alone.
    pub fn new(traceparent: impl Into<String>) -> Self {
        TraceContext {
            traceparent: traceparent.into(),
            tracestate: None,
            parent_span_id: None,
        }
    }
}

/// The answers to an `input_required` that was relayed, for the retry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resume {
    /// `inputResponses`, keyed like the server's requests.
    pub input_responses: Option<JsonObject>,
    /// The server's `requestState`, verbatim.
    pub request_state: Option<String>,
}

impl RequestOptions {
    /// Options with just a timeout.
    pub fn timeout(timeout: Duration) -> Self {
        RequestOptions {
            timeout: Some(timeout),
            ..RequestOptions::default()
        }
    }

    /// The same options, asking for progress.
    pub fn with_progress(mut self, sink: impl Fn(ProgressParams) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(sink));
        self
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("on_notification", &self.on_notification.is_some())
            .field("log_level", &self.log_level)
            .field("trace", &self.trace)
            .field("meta", &self.meta)
            .field("task_input", &self.task_input)
            .field("call_input", &self.call_input)
            .field("relay_input", &self.relay_input)
            .field("resume", &self.resume.is_some())
            .field("capabilities", &self.capabilities)
            .field("leave_task_on_drop", &self.leave_task_on_drop)
            .field("idempotency_key", &self.idempotency_key)
            .finish()
    }
}

/// How the client finds out which era a server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraPolicy {
    /// Probe with `server/discover`; on a recognised modern error retry with
    /// a supported version; on any other error or silence fall back to the
    /// 2025-11-25 `initialize` handshake (STDIO-14, STDIO-15, STDIO-16).
    #[default]
    Probe,
    /// Modern only: probe, never fall back.
    ModernOnly,
    /// Legacy only: `initialize` straight away.
    LegacyOnly,
    /// Assume a modern server speaking the latest version: no probe, no
    /// round trip before the first call. For servers known to be modern
    /// (and benchmarks); version errors then surface on the first call.
    AssumeModern,
}

/// Default of [`ClientConfig::max_items`].
pub const DEFAULT_MAX_ITEMS: usize = 50_000;

/// Default of [`ClientConfig::max_tool_bytes`]: 1 MiB.
pub const DEFAULT_MAX_TOOL_BYTES: usize = 1024 * 1024;

/// What a [`crate::Client`] is configured with.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Who the client is (`_meta` `clientInfo`, legacy `clientInfo`).
    pub client_info: Implementation,
    /// Default deadline of every request.
    pub timeout: Duration,
    /// How long to wait for the `server/discover` probe before deciding the
    /// server is legacy (legacy servers may not answer at all).
    pub probe_timeout: Duration,
    /// How to find the server's era.
    pub era_policy: EraPolicy,
    /// Log level to ask every request for (`_meta` `logLevel`).
    pub log_level: Option<LoggingLevel>,
    /// Most `input_required` rounds before a call fails.
    pub max_input_rounds: u32,
    /// Most pages a `list_all_*` call fetches before failing.
    pub max_pages: usize,
    /// Most items a `list_all_*` call collects before failing.
    pub max_items: usize,
    /// Largest tool definition (serialised JSON bytes) a tools listing
    /// keeps; larger ones are left out, in [`crate::Listing::dropped`] with
    /// the reason.
    pub max_tool_bytes: usize,
    /// Declare the tasks extension (`io.modelcontextprotocol/tasks`) on
    /// every request, so servers may answer `tools/call` with a task.
    pub tasks: bool,
    /// Deadline of a whole task, from the `tools/call` to its final status;
    /// on expiry the task is cancelled (`tasks/cancel`).
    pub task_timeout: Duration,
    /// Longest wait between two `tasks/get` when the server suggests no
    /// interval (the client backs off up to it). A server's own
    /// `pollIntervalMs` is always honoured, however long.
    pub max_poll_interval: Duration,
    /// Follow a task's `notifications/tasks` on a `subscriptions/listen`
    /// stream (`notifications.taskIds`) while it runs, so a status change
    /// is seen at once rather than at the next poll; polling goes on at
    /// the server's interval as a fallback.
    pub task_notifications: bool,
    /// Keys of a tool result's `_meta` that [`crate::Client::call_tool`]
    /// leaves out (an emptied `_meta` goes away); a transport may skip
    /// them unread. For a gateway that drops the downstream's reserved
    /// keys anyway. `None`: results keep their `_meta` whole.
    pub leave_out_result_meta: Option<fn(&str) -> bool>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_info: Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
            timeout: Duration::from_secs(60),
            probe_timeout: Duration::from_secs(10),
            era_policy: EraPolicy::Probe,
            log_level: None,
            max_input_rounds: 8,
            max_pages: 1000,
            max_items: DEFAULT_MAX_ITEMS,
            max_tool_bytes: DEFAULT_MAX_TOOL_BYTES,
            tasks: false,
            task_timeout: Duration::from_secs(1800),
            max_poll_interval: Duration::from_secs(5),
            task_notifications: true,
            leave_out_result_meta: None,
        }
    }
}
