//! Errors: what handlers return ([`HandlerError`]), what building and
//! serving can fail with ([`BuildError`], [`ServeError`]), and the one place
//! where a failure becomes a JSON-RPC error object ([`Fault`]).

use std::fmt;

use serde_json::{Value, json};
use switchboard_wire::{ErrorCode, ErrorObject, MetaError};

/// An error returned by a tool, prompt, resource or completion handler.
///
/// Like `anyhow::Error`, it converts from any [`std::error::Error`] with `?`,
/// and it does not implement `std::error::Error` itself (that is what makes
/// the blanket conversion possible).
///
/// What the client sees depends on how the error was made:
///
/// | made with | `tools/call` | other methods |
/// |---|---|---|
/// | [`HandlerError::msg`], `?` on a `std::error::Error` | a tool result with `isError: true` and the message, for the model to read (TOOL-15) | -32603 internal error |
/// | [`HandlerError::invalid_params`] | -32602 | -32602 |
/// | [`HandlerError::resource_not_found`] | -32602 with `data.uri` | -32602 with `data.uri` |
/// | [`HandlerError::missing_capability`] | -32021 (HTTP 400) | -32021 (HTTP 400) |
/// | [`HandlerError::internal`] | -32603 | -32603 |
/// | [`HandlerError::rpc`] | that error | that error |
pub struct HandlerError {
    repr: Repr,
}

enum Repr {
    /// A business failure: the handler ran and could not do what was asked.
    Failure(String),
    /// A protocol error, sent as a JSON-RPC error.
    Rpc(ErrorObject),
}

impl HandlerError {
    /// A business failure with a message telling the model what went wrong
    /// and what to change.
    pub fn msg(message: impl fmt::Display) -> Self {
        HandlerError {
            repr: Repr::Failure(message.to_string()),
        }
    }

    /// A -32602 invalid-params protocol error.
    pub fn invalid_params(message: impl fmt::Display) -> Self {
        HandlerError::rpc(ErrorObject::new(
            ErrorCode::InvalidParams,
            message.to_string(),
        ))
    }

    /// A -32603 internal protocol error.
    pub fn internal(message: impl fmt::Display) -> Self {
        HandlerError::rpc(ErrorObject::new(
            ErrorCode::InternalError,
            message.to_string(),
        ))
    }

    /// The "resource not found" error of 2026-07-28: -32602 with `data.uri`
    /// (RES-03).
    pub fn resource_not_found(uri: &str) -> Self {
        HandlerError::rpc(
            ErrorObject::new(
                ErrorCode::InvalidParams,
                format!("resource {uri:?} not found"),
            )
            .with_data(json!({ "uri": uri })),
        )
    }

    /// A -32021 error naming the client capabilities this request needs but
    /// did not declare, as a `ClientCapabilities` object such as
    /// `{"sampling": {}}` (WIRE-21).
    pub fn missing_capability(required: Value) -> Self {
        HandlerError::rpc(ErrorObject::missing_capability(required))
    }

    /// Any JSON-RPC error, sent as given.
    pub fn rpc(error: ErrorObject) -> Self {
        HandlerError {
            repr: Repr::Rpc(error),
        }
    }

    /// The JSON-RPC error this becomes, or `None` for a business failure.
    pub fn as_rpc(&self) -> Option<&ErrorObject> {
        match &self.repr {
            Repr::Rpc(e) => Some(e),
            Repr::Failure(_) => None,
        }
    }

    /// Whether this is a business failure (an `isError` result for tools).
    pub fn is_failure(&self) -> bool {
        matches!(self.repr, Repr::Failure(_))
    }

    /// The message.
    pub fn message(&self) -> &str {
        match &self.repr {
            Repr::Failure(m) => m,
            Repr::Rpc(e) => &e.message,
        }
    }

    /// Splits into the business-failure message or the protocol error.
    pub(crate) fn into_parts(self) -> Result<String, ErrorObject> {
        match self.repr {
            Repr::Failure(m) => Ok(m),
            Repr::Rpc(e) => Err(e),
        }
    }
}

impl<E> From<E> for HandlerError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        HandlerError::msg(with_causes(&error))
    }
}

/// An error and each of its causes, `: `-separated (a wrapping error's own
/// text often says only what failed; its cause says why).
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Failure(m) => f.debug_tuple("Failure").field(m).finish(),
            Repr::Rpc(e) => f.debug_tuple("Rpc").field(e).finish(),
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Failure(m) => f.write_str(m),
            Repr::Rpc(e) => fmt::Display::fmt(e, f),
        }
    }
}

/// Why a server could not be built, or a tool, prompt or resource added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two entries of one kind share a name (tool, prompt) or URI.
    #[error("{kind} {name:?} is registered twice")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The duplicated name or URI.
        name: String,
    },
    /// A tool's input or output schema is not usable.
    #[error("tool {tool:?}: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// A tool's `x-mcp-header` annotations break TOOL-09…11.
    #[error("tool {tool:?}: {source}")]
    InvalidHeaderAnnotation {
        /// The tool.
        tool: String,
        /// The rule broken.
        #[source]
        source: switchboard_wire::header::InvalidHeaderAnnotation,
    },
    /// A resource template does not parse as an RFC 6570 template.
    #[error("resource template {template:?}: {reason}")]
    InvalidTemplate {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// A name is empty or otherwise unusable.
    #[error("{kind} name {name:?} is invalid: {reason}")]
    InvalidName {
        /// What was being named.
        kind: &'static str,
        /// The name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A skill given in code breaks the Skills extension's rules (its path's
    /// last segment is not its frontmatter name, the frontmatter lacks a
    /// field, it is over the limits, …).
    #[error("skill {path:?} cannot be served: {reason}")]
    InvalidSkill {
        /// The skill's path.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Why a runner stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing the byte stream failed.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What kind of failure a [`Fault`] is: decides the HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// The body is not JSON or not a JSON-RPC request (-32700, -32600).
    Envelope,
    /// `params._meta` is missing or malformed (-32602, HTTP 400; WIRE-15).
    Meta,
    /// A mirrored header is missing or disagrees with the body (-32020).
    Header,
    /// The protocol version is not served (-32022).
    Version,
    /// A needed client capability was not declared (-32021).
    Capability,
    /// Unknown or unadvertised method (-32601, HTTP 404).
    MethodNotFound,
    /// Any other JSON-RPC error about this request (-32602, -32603, …):
    /// the exchange itself worked, so HTTP 200.
    Request,
}

/// A JSON-RPC error about one request, with what kind of failure it is.
#[derive(Clone, Debug)]
pub(crate) struct Fault {
    pub(crate) error: ErrorObject,
    pub(crate) kind: FaultKind,
}

impl Fault {
    pub(crate) fn new(kind: FaultKind, error: ErrorObject) -> Self {
        Fault { error, kind }
    }

    pub(crate) fn meta(e: &MetaError) -> Self {
        Fault::new(
            FaultKind::Meta,
            ErrorObject::new(ErrorCode::InvalidParams, e.to_string()),
        )
    }

    pub(crate) fn header(message: impl Into<String>) -> Self {
        Fault::new(FaultKind::Header, ErrorObject::header_mismatch(message))
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Fault::new(
            FaultKind::Request,
            ErrorObject::new(ErrorCode::InvalidParams, message),
        )
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Fault::new(
            FaultKind::Request,
            ErrorObject::new(ErrorCode::InternalError, message),
        )
    }

    pub(crate) fn invalid_request(message: impl Into<String>) -> Self {
        Fault::new(
            FaultKind::Envelope,
            ErrorObject::new(ErrorCode::InvalidRequest, message),
        )
    }

    pub(crate) fn method_not_found(method: &str) -> Self {
        Fault::new(
            FaultKind::MethodNotFound,
            ErrorObject::new(
                ErrorCode::MethodNotFound,
                format!("method {method:?} is not implemented by this server"),
            ),
        )
    }

    /// The mapping from a handler's protocol error to a fault: the code
    /// decides the HTTP status class.
    pub(crate) fn from_rpc(error: ErrorObject) -> Self {
        let kind = match error.known_code() {
            Some(ErrorCode::MissingRequiredClientCapability) => FaultKind::Capability,
            Some(ErrorCode::UnsupportedProtocolVersion) => FaultKind::Version,
            Some(ErrorCode::HeaderMismatch) => FaultKind::Header,
            Some(ErrorCode::MethodNotFound) => FaultKind::MethodNotFound,
            _ => FaultKind::Request,
        };
        Fault { error, kind }
    }

    /// The HTTP status this fault is answered with on Streamable HTTP: the
    /// one place where failures meet status codes.
    pub(crate) fn http_status(&self) -> u16 {
        match self.kind {
            FaultKind::Envelope
            | FaultKind::Meta
            | FaultKind::Header
            | FaultKind::Version
            | FaultKind::Capability => 400,
            FaultKind::MethodNotFound => 404,
            FaultKind::Request => 200,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_errors_become_failures_with_their_cause_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such ticket");
        let e = HandlerError::from(io);
        assert!(e.is_failure());
        assert_eq!(e.message(), "no such ticket");
    }

    #[test]
    fn protocol_errors_keep_code_and_status() {
        let e = HandlerError::resource_not_found("test://x");
        let obj = e.as_rpc().unwrap();
        assert_eq!(obj.code, ErrorCode::InvalidParams.code());
        assert_eq!(obj.data.as_ref().unwrap()["uri"], "test://x");
        let f = Fault::from_rpc(ErrorObject::missing_capability(json!({"sampling": {}})));
        assert_eq!(f.http_status(), 400);
        assert_eq!(Fault::method_not_found("x").http_status(), 404);
        assert_eq!(Fault::invalid_params("x").http_status(), 200);
    }
}
