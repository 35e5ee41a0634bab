//! Errors of the client layer.
//!
//! [`TransportError`] is what a transport reports: the channel is gone, or
//! could never be opened. [`ClientError`] is what a caller of
//! [`crate::Client`] sees: a transport error, or a protocol-level outcome
//! (error response, timeout, unsupported version, invalid result). A tool
//! that ran and failed is **not** an error: it is a
//! [`switchboard_wire::CallToolResult`] with `isError: true`.

use std::sync::Arc;
use std::time::Duration;

use switchboard_wire::ErrorObject;

/// The typed error beneath a [`TransportError`] (an I/O, TLS or HTTP error,
/// the authorization layer's): shared, so the transport error stays
/// cloneable when one failure fails every pending request.
///
/// [`std::error::Error::source`] of the transport error is the error
/// inside, so `downcast_ref` finds its own type (e.g. `std::io::Error`).
#[derive(Clone)]
pub struct Source(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Source {
    /// Wraps an error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Source(Arc::new(error))
    }
}

impl From<Box<dyn std::error::Error + Send + Sync + 'static>> for Source {
    fn from(error: Box<dyn std::error::Error + Send + Sync + 'static>) -> Self {
        Source(Arc::from(error))
    }
}

impl std::ops::Deref for Source {
    type Target = dyn std::error::Error + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

/// Why a transport could not deliver a request or its response.
///
/// `Display` says what failed, including the text of the error underneath
/// (so one line tells the whole story); [`std::error::Error::source`] gives
/// that error itself, typed, where there is one.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The channel to the server is gone (process exited, stream broke,
    /// transport closed); `cause` says how, with exit status and the last
    /// stderr lines where there are some.
    #[error("connection to {server} closed: {cause}")]
    Closed {
        /// The server's name (alias).
        server: String,
        /// What happened.
        cause: String,
        /// The typed error underneath, when there is one (its text is in
        /// `cause`).
        #[source]
        source: Option<Source>,
    },
    /// The server could not be started (command not found, not executable,
    /// bad working directory, …).
    #[error("could not start {server}: {cause}")]
    Spawn {
        /// The server's name (alias).
        server: String,
        /// What went wrong.
        cause: String,
        /// The typed error underneath, when there is one (its text is in
        /// `cause`).
        #[source]
        source: Option<Source>,
    },
    /// The server ended this request itself: it sent
    /// `notifications/cancelled` for it, which servers do only to tear down a
    /// `subscriptions/listen` stream (CANC-05).
    #[error("{server} ended request {id}: {reason}")]
    CancelledByServer {
        /// The server's name (alias).
        server: String,
        /// The request it ended.
        id: String,
        /// The reason it gave, or a placeholder.
        reason: String,
    },
    /// One exchange failed on the way: the connection was refused or reset,
    /// the response stream broke or ended before the response, or the answer
    /// was not one a server may give. Only that request failed; the
    /// transport stays usable and a retry is a new request (HTTP).
    #[error("request to {server} failed: {cause}")]
    Exchange {
        /// The server's name (alias).
        server: String,
        /// What happened.
        cause: String,
        /// The typed error underneath, when there is one (its text is in
        /// `cause`).
        #[source]
        source: Option<Source>,
    },
    /// The HTTP server answered with a non-success status and a body that is
    /// not a JSON-RPC error the transport passes on as the response: an HTML
    /// page from a proxy, an empty 404/405 from a server of another era, a
    /// 401 the authorization hook gave up on. A JSON-RPC error body that
    /// came with it is in `error`.
    #[error("{server} answered HTTP {status}{}", http_detail(error.as_ref(), body))]
    Http {
        /// The server's name (alias).
        server: String,
        /// The HTTP status.
        status: u16,
        /// The JSON-RPC error of the body, when it held one.
        error: Option<ErrorObject>,
        /// The start of the body as text (empty when there was none).
        body: String,
        /// The `WWW-Authenticate` values of a 401/403.
        www_authenticate: Vec<String>,
    },
    /// The server demands authorization and the authorization layer could
    /// not supply it: discovery, registration or the token endpoint failed,
    /// or a person has to log in first. Only that request failed; the
    /// transport stays usable (a later login makes the next request work).
    /// A 401/403 the layer gave up on without failing is
    /// [`TransportError::Http`]; [`TransportError::is_auth_failure`] covers
    /// both.
    #[error("authorization for {server} failed: {cause}")]
    Unauthorized {
        /// The server's name (alias).
        server: String,
        /// What the authorization layer said (never a credential).
        cause: String,
        /// The typed error underneath, when there is one (its text is in
        /// `cause`).
        #[source]
        source: Option<Source>,
    },
    /// Two requests with one id were in flight at once (WIRE-04): a caller
    /// bug, refused before anything was sent.
    #[error("request id {id} is already in flight to {server}")]
    DuplicateId {
        /// The server's name (alias).
        server: String,
        /// The id.
        id: String,
    },
}

/// The tail of an [`TransportError::Http`] message: the JSON-RPC error, or
/// the start of the body.
fn http_detail(error: Option<&ErrorObject>, body: &str) -> String {
    match (error, body.is_empty()) {
        (Some(e), _) => format!(": {e}"),
        (None, false) => format!(": {body}"),
        (None, true) => String::new(),
    }
}

impl TransportError {
    /// The HTTP status, when the server answered with a non-success one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            TransportError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether this is how a server of another era (or a web server that is
    /// no MCP endpoint) refuses a modern HTTP POST: 400, 404 or 405 without
    /// a recognised modern JSON-RPC error (HTTP-C-16; the transport already
    /// passed modern errors on as the response).
    pub fn is_other_era_refusal(&self) -> bool {
        matches!(
            self,
            TransportError::Http {
                status: 400 | 404 | 405,
                ..
            }
        )
    }

    /// Whether the server refused the request for want of authorization:
    /// it answered 401 or 403, or the authorization layer failed to get
    /// past its challenge ([`TransportError::Unauthorized`]).
    pub fn is_auth_failure(&self) -> bool {
        matches!(
            self,
            TransportError::Unauthorized { .. }
                | TransportError::Http {
                    status: 401 | 403,
                    ..
                }
        )
    }

    /// [`TransportError::Closed`] with no typed cause.
    pub fn closed(server: impl Into<String>, cause: impl Into<String>) -> Self {
        TransportError::Closed {
            server: server.into(),
            cause: cause.into(),
            source: None,
        }
    }

    /// [`TransportError::Spawn`], keeping `source` as the typed cause.
    pub fn spawn(
        server: impl Into<String>,
        cause: impl Into<String>,
        source: Option<Source>,
    ) -> Self {
        TransportError::Spawn {
            server: server.into(),
            cause: cause.into(),
            source,
        }
    }

    /// Why the server's sandbox stopped it, when it did: a mechanism its
    /// sandbox needs is missing (it never started), or it died of a limit
    /// or a refusal of its sandbox. The text is the client's, never the
    /// server's.
    pub fn sandbox_stop(&self) -> Option<&crate::transport::sandbox::SandboxStop> {
        let source = match self {
            TransportError::Closed { source, .. } | TransportError::Spawn { source, .. } => {
                source.as_ref()?
            }
            _ => return None,
        };
        let error: &(dyn std::error::Error + 'static) = &**source;
        error.downcast_ref()
    }

    /// Whether the channel is gone for good (closed, or never opened).
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            TransportError::Closed { .. } | TransportError::Spawn { .. }
        )
    }
}

/// Everything a [`crate::Client`] call can fail with.
///
/// Sorted by who is at fault: the server answered with a protocol error or
/// broke the protocol; the two sides share no protocol version; the caller's
/// deadline passed; the transport failed. Use the predicates
/// ([`ClientError::is_timeout`], [`ClientError::protocol_error`], …) rather
/// than matching, so new variants do not break callers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error (unknown tool, bad
    /// arguments, internal fault, bad cursor, …). Code, message and `data`
    /// are kept as sent.
    #[error("{server} answered {method} with an error: {error}")]
    Protocol {
        /// The server's name (alias).
        server: String,
        /// The method called.
        method: String,
        /// The error object, verbatim.
        error: ErrorObject,
    },
    /// The server's answer is not a valid result for the method: it does not
    /// parse, carries an unknown `resultType` (WIRE-08), or breaks a rule
    /// the client enforces (a listing that never ends, an MRTR round limit).
    #[error("{server} sent an invalid result for {method}: {reason}")]
    InvalidResult {
        /// The server's name (alias).
        server: String,
        /// The method called.
        method: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server speaks no protocol version this client supports.
    #[error("{server} supports none of our protocol versions (it offers {supported:?})")]
    UnsupportedVersion {
        /// The server's name (alias).
        server: String,
        /// The versions it offers.
        supported: Vec<String>,
    },
    /// The server needs something this client cannot give: an input request
    /// of a kind the [`crate::InputHandler`] did not declare, or a feature a
    /// legacy server lacks.
    #[error("{server}: {method} needs {what}, which this client does not support")]
    Unsupported {
        /// The server's name (alias).
        server: String,
        /// The method called.
        method: String,
        /// What was needed.
        what: String,
    },
    /// The [`crate::InputHandler`] failed to produce an answer.
    #[error("{server}: answering an input request for {method} failed: {reason}")]
    Input {
        /// The server's name (alias).
        server: String,
        /// The method called.
        method: String,
        /// What the handler said.
        reason: String,
    },
    /// No response within the deadline; the request was cancelled
    /// (`notifications/cancelled` on stdio, stream closed on HTTP).
    #[error("{server} did not answer {method} within {after:?}")]
    Timeout {
        /// The server's name (alias).
        server: String,
        /// The method called.
        method: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The server answered `input_required` and the request asked for it
    /// to be handed back ([`crate::RequestOptions::relay_input`]).
    #[error("{server} needs input for {method}")]
    InputRequired {
        /// The server's name (alias).
        server: String,
        /// The method called.
        method: String,
        /// The server's answer, verbatim.
        result: Box<switchboard_wire::InputRequiredResult>,
    },
    /// The transport failed: the server is gone or could not be started.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

impl ClientError {
    /// The JSON-RPC error the server sent, if this is a protocol error.
    pub fn protocol_error(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Protocol { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The server's `input_required` answer, handed back because the
    /// request asked for it ([`crate::RequestOptions::relay_input`]).
    pub fn input_required(&self) -> Option<&switchboard_wire::InputRequiredResult> {
        match self {
            ClientError::InputRequired { result, .. } => Some(result),
            _ => None,
        }
    }

    /// Whether the server answered with a JSON-RPC error.
    pub fn is_protocol(&self) -> bool {
        self.protocol_error().is_some()
    }

    /// The JSON-RPC error code, if this is a protocol error.
    pub fn code(&self) -> Option<i64> {
        self.protocol_error().map(|e| e.code)
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout { .. })
    }

    /// Whether the transport is gone (server exited, could not start, or the
    /// client was closed).
    pub fn is_closed(&self) -> bool {
        matches!(self, ClientError::Transport(t) if t.is_closed())
    }

    /// Whether the server refused for want of authorization (see
    /// [`TransportError::is_auth_failure`]): the user has to log in, or the
    /// credentials need attention.
    pub fn is_auth_failure(&self) -> bool {
        self.transport_error()
            .is_some_and(TransportError::is_auth_failure)
    }

    /// Whether the two sides share no protocol version.
    pub fn is_unsupported_version(&self) -> bool {
        matches!(self, ClientError::UnsupportedVersion { .. })
    }

    /// Whether the server's result was invalid.
    pub fn is_invalid_result(&self) -> bool {
        matches!(self, ClientError::InvalidResult { .. })
    }

    /// The transport error underneath, if any.
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            ClientError::Transport(t) => Some(t),
            _ => None,
        }
    }
}
