//! What a handler knows about the request it serves, and what it can do
//! besides answering: report progress, log, notice cancellation, read MRTR
//! answers and state.
//!
//! Everything here comes from *this* request (WIRE-19): its `_meta`, its
//! principal, its stream. Nothing is carried over from an earlier request on
//! the same connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use switchboard_wire::types::method;
use switchboard_wire::{
    ClientCapabilities, Implementation, LoggingLevel, Message, Notification, RequestId, RequestMeta,
};

use crate::auth::Principal;
use crate::cancel::Cancellation;
use crate::error::HandlerError;
use crate::input::InputResponses;
use crate::notify::Notifier;
use crate::seal::OpenedState;
use crate::server::Server;
use crate::sink::Sink;
use crate::state::StateUse;

/// No progress reported yet.
const NO_PROGRESS: u64 = u64::MAX;

/// The context of one request, handed to its handler.
pub struct Context {
    pub(crate) id: RequestId,
    pub(crate) method: &'static str,
    pub(crate) meta: Arc<RequestMeta>,
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) sink: Sink,
    pub(crate) cancel: Cancellation,
    pub(crate) input: InputResponses,
    pub(crate) state: Option<OpenedState>,
    pub(crate) server: Server,
    /// Bits of the last progress value sent (progress must rise, PROG-02).
    last_progress: AtomicU64,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("protocol_version", &self.meta.protocol_version)
            .field("principal", &self.principal.as_ref().map(|p| &p.subject))
            .finish_non_exhaustive()
    }
}

/// The pieces a [`Context`] is built from.
pub(crate) struct ContextParts {
    pub(crate) id: RequestId,
    pub(crate) method: &'static str,
    pub(crate) meta: Arc<RequestMeta>,
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) sink: Sink,
    pub(crate) cancel: Cancellation,
    pub(crate) input: InputResponses,
    pub(crate) state: Option<OpenedState>,
    pub(crate) server: Server,
}

/// A plain call's context, not built yet: only a handler that takes a
/// [`Context`] gets one, and only then are the request's shared parts
/// cloned into it (each clone and drop is an atomic operation).
pub(crate) struct LazyContext<'a> {
    pub(crate) id: RequestId,
    pub(crate) method: &'static str,
    pub(crate) meta: &'a Arc<RequestMeta>,
    pub(crate) principal: Option<&'a Arc<Principal>>,
    pub(crate) sink: &'a Sink,
    pub(crate) cancel: &'a Cancellation,
    pub(crate) server: &'a Server,
}

impl LazyContext<'_> {
    /// The context, its parts cloned.
    pub(crate) fn build(self) -> Context {
        Context::new(ContextParts {
            id: self.id,
            method: self.method,
            meta: Arc::clone(self.meta),
            principal: self.principal.cloned(),
            sink: self.sink.clone(),
            cancel: self.cancel.clone(),
            input: InputResponses::default(),
            state: None,
            server: self.server.clone(),
        })
    }
}

impl Context {
    pub(crate) fn new(p: ContextParts) -> Self {
        Context {
            id: p.id,
            method: p.method,
            meta: p.meta,
            principal: p.principal,
            sink: p.sink,
            cancel: p.cancel,
            input: p.input,
            state: p.state,
            server: p.server,
            last_progress: AtomicU64::new(NO_PROGRESS),
        }
    }

    /// The JSON-RPC id of this request.
    pub fn request_id(&self) -> &RequestId {
        &self.id
    }

    /// The method: `tools/call`, `prompts/get`, `resources/read` or
    /// `completion/complete`.
    pub fn method(&self) -> &str {
        self.method
    }

    /// The request's `_meta`: protocol version, capabilities, client info,
    /// log level, progress token, trace context and any other keys.
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// The protocol revision of this request.
    pub fn protocol_version(&self) -> &str {
        &self.meta.protocol_version
    }

    /// The capabilities the client declared on *this* request (WIRE-20).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.meta.client_capabilities
    }

    /// Who the client says it is (self-asserted: never a basis for
    /// security decisions, WIRE-18).
    pub fn client_info(&self) -> Option<&Implementation> {
        self.meta.client_info.as_ref()
    }

    /// The authenticated caller: from the bearer-token hook on HTTP, `None`
    /// on stdio.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    /// The server, e.g. to add tools at run time.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Announces changes to `subscriptions/listen` streams.
    pub fn notifier(&self) -> &Notifier {
        self.server.notifier()
    }

    /// Fails with -32021 unless the request declared `sampling`.
    ///
    /// # Errors
    /// The missing-capability error naming `{"sampling": {}}`.
    pub fn require_sampling(&self) -> Result<(), HandlerError> {
        if self.meta.client_capabilities.supports_sampling() {
            Ok(())
        } else {
            Err(HandlerError::missing_capability(
                serde_json::json!({"sampling": {}}),
            ))
        }
    }

    /// Fails with -32021 unless the request declared form elicitation.
    ///
    /// # Errors
    /// The missing-capability error naming `{"elicitation": {"form": {}}}`.
    pub fn require_elicitation(&self) -> Result<(), HandlerError> {
        if self.meta.client_capabilities.supports_elicitation_form() {
            Ok(())
        } else {
            Err(HandlerError::missing_capability(
                serde_json::json!({"elicitation": {"form": {}}}),
            ))
        }
    }

    // -- cancellation ------------------------------------------------------

    /// Whether the client cancelled this request (stdio
    /// `notifications/cancelled`, HTTP stream closed) or the server is
    /// shutting it down.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled; `select!` on it in long
    /// work. After cancellation nothing more is sent for the request.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// The flag behind [`Context::cancelled`], for spawned sub-tasks.
    pub fn cancellation(&self) -> Cancellation {
        self.cancel.clone()
    }

    // -- progress and logs -------------------------------------------------

    /// Whether the client asked for progress (`_meta.progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.meta.progress_token.is_some()
    }

    /// Sends `notifications/progress` when the request carries a progress
    /// token; does nothing otherwise.
    ///
    /// A value not above the previous one is dropped, because progress must
    /// rise with each notification (PROG-02).
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.meta.progress_token else {
            return;
        };
        if !progress.is_finite() || self.cancel.is_cancelled() {
            return;
        }
        let last = self.last_progress.load(Ordering::Relaxed);
        if last != NO_PROGRESS && progress <= f64::from_bits(last) {
            tracing::debug!(progress, "dropping non-increasing progress value");
            return;
        }
        self.last_progress
            .store(progress.to_bits(), Ordering::Relaxed);
        let mut params = Map::new();
        params.insert("progressToken".into(), token.to_value());
        params.insert("progress".into(), Value::from(progress));
        if let Some(total) = total.filter(|t| t.is_finite()) {
            params.insert("total".into(), Value::from(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), Value::from(message));
        }
        self.notify(method::PROGRESS, params).await;
    }

    /// The log level the request asked for (`io.modelcontextprotocol/logLevel`,
    /// or a 2025-11-25 session's `logging/setLevel`); `None`: no logs.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.meta.log_level
    }

    /// Whether a log message at `level` would be sent: only when the
    /// request set `io.modelcontextprotocol/logLevel` at or below it
    /// (LOG-03).
    pub fn log_enabled(&self, level: LoggingLevel) -> bool {
        self.meta.log_level.is_some_and(|min| level >= min)
    }

    /// Sends `notifications/message` on this request's stream, when the
    /// request asked for logs at this level (LOG-03/04).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        if !self.log_enabled(level) || self.cancel.is_cancelled() {
            return;
        }
        let mut params = Map::new();
        params.insert(
            "level".into(),
            serde_json::to_value(level).unwrap_or(Value::Null),
        );
        if let Some(logger) = logger {
            params.insert("logger".into(), Value::from(logger));
        }
        params.insert(
            "data".into(),
            serde_json::to_value(data).unwrap_or(Value::Null),
        );
        self.notify(method::MESSAGE, params).await;
    }

    /// Logs `message` at `debug`.
    pub async fn debug(&self, message: &str) {
        self.log(LoggingLevel::Debug, None, message).await;
    }

    /// Logs `message` at `info`.
    pub async fn info(&self, message: &str) {
        self.log(LoggingLevel::Info, None, message).await;
    }

    /// Logs `message` at `warning`.
    pub async fn warning(&self, message: &str) {
        self.log(LoggingLevel::Warning, None, message).await;
    }

    /// Logs `message` at `error`.
    pub async fn error(&self, message: &str) {
        self.log(LoggingLevel::Error, None, message).await;
    }

    async fn notify(&self, method: &str, params: Map<String, Value>) {
        let message =
            Message::Notification(Notification::new(method, Some(Value::Object(params)))).to_vec();
        self.sink.send(message).await;
    }

    // -- multi round-trip --------------------------------------------------

    /// The client's answers to an earlier `input_required` (MRTR).
    pub fn input(&self) -> &InputResponses {
        &self.input
    }

    /// Whether the request carried a verified `requestState`.
    pub fn has_state(&self) -> bool {
        self.state.is_some()
    }

    /// The state the handler put into its previous `input_required`,
    /// verified (integrity, expiry, principal, same request).
    ///
    /// # Errors
    /// -32602 when the state does not deserialize as `T`.
    pub fn state<T: DeserializeOwned>(&self) -> Result<Option<T>, HandlerError> {
        match &self.state {
            None => Ok(None),
            Some(s) => T::deserialize(&s.value).map(Some).map_err(|e| {
                HandlerError::invalid_params(format!(
                    "requestState does not hold what this request expects: {e}"
                ))
            }),
        }
    }

    /// Marks the request's `requestState` as used; a second use of the same
    /// state fails. Call it in handlers whose state must be redeemed at most
    /// once (MRTR-10). Without a state it does nothing. With a replay
    /// ledger the file work runs on the blocking pool.
    ///
    /// # Errors
    /// -32602 when this state was used before.
    pub async fn consume_state(&self) -> Result<(), HandlerError> {
        match &self.state {
            None => Ok(()),
            Some(s) => match self
                .server
                .replay_guard()
                .consume(s.nonce, s.expires_at_ms)
                .await
            {
                StateUse::First => Ok(()),
                StateUse::Again => Err(HandlerError::invalid_params(
                    "requestState was already used; start the request again without it",
                )),
                StateUse::Unrecorded(why) => Err(HandlerError::msg(format!(
                    "this server cannot record that requestState was used ({why}), so it is not accepted; \
                     the server's operator must make the ledger writable (or its store reachable), then the request can be retried"
                ))),
            },
        }
    }
}
