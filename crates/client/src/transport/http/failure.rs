//! What can go wrong on the HTTP path, before it becomes a
//! [`TransportError`].

use switchboard_wire::ErrorObject;

use crate::error::TransportError;

/// One failed exchange.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    /// The server answered with a non-success status whose body is not a
    /// JSON-RPC error we pass on as the response.
    Status(StatusFailure),
    /// The response stream ended or broke before the response arrived.
    Stream(String),
    /// No answer: connect, TLS or write failure.
    Connect(String),
    /// The answer is not one a Streamable HTTP server may give (content
    /// type, a body that is not JSON-RPC, a body over the limit).
    Protocol(String),
    /// The authorization provider failed.
    Auth(String),
    /// A request that cannot be sent as given (bad header value, URL).
    Invalid(String),
    /// The transport was closed.
    Closed,
}

/// A non-success HTTP answer.
#[derive(Clone, Debug)]
pub(crate) struct StatusFailure {
    pub(crate) status: u16,
    /// The JSON-RPC error in the body, if it held one.
    pub(crate) error: Option<ErrorObject>,
    /// The start of the body as text (for an HTML page from a proxy).
    pub(crate) snippet: String,
    /// `WWW-Authenticate` values (401/403).
    pub(crate) www_authenticate: Vec<String>,
}

impl Failure {
    /// The transport error for this failure, naming the server.
    pub(crate) fn into_transport(self, server: &str) -> TransportError {
        let server = server.to_owned();
        match self {
            Failure::Status(s) => TransportError::Http {
                server,
                status: s.status,
                error: s.error,
                body: s.snippet,
                www_authenticate: s.www_authenticate,
            },
            Failure::Closed => TransportError::Closed {
                server,
                cause: "transport closed".to_owned(),
            },
            Failure::Auth(cause) => TransportError::Unauthorized { server, cause },
            Failure::Stream(cause)
            | Failure::Connect(cause)
            | Failure::Protocol(cause)
            | Failure::Invalid(cause) => TransportError::Exchange { server, cause },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authorization_failure_stays_one() {
        let err = Failure::Auth("needs login: s requires an interactive OAuth login".into())
            .into_transport("s");
        assert!(
            matches!(err, TransportError::Unauthorized { .. }),
            "{err:?}"
        );
        assert!(err.is_auth_failure());
        assert!(!err.is_closed());
        assert!(err.to_string().contains("needs login"), "{err}");
        let refused = Failure::Connect("connection refused".into()).into_transport("s");
        assert!(!refused.is_auth_failure());
    }
}
