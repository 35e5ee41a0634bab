//! What can go wrong on the HTTP path, before it becomes a
//! [`TransportError`].

use switchboard_wire::ErrorObject;

use crate::error::{Source, TransportError};
use crate::transport::http::AuthProviderError;

/// One failed exchange.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    /// The server answered with a non-success status whose body is not a
    /// JSON-RPC error we pass on as the response.
    Status(StatusFailure),
    /// The response stream ended or broke before the response arrived;
    /// the error that broke it, if one did.
    Stream(String, Option<Source>),
    /// No answer: connect, TLS or write failure, and the error underneath.
    Connect(String, Option<Source>),
    /// The answer is not one a Streamable HTTP server may give (content
    /// type, a body that is not JSON-RPC, a body over the limit).
    Protocol(String),
    /// The authorization provider failed.
    Auth(AuthProviderError),
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
            Failure::Closed => TransportError::closed(server, "transport closed"),
            Failure::Auth(error) => TransportError::Unauthorized {
                server,
                cause: error.0.clone(),
                source: Some(Source::new(error)),
            },
            Failure::Stream(cause, source) | Failure::Connect(cause, source) => {
                TransportError::Exchange {
                    server,
                    cause,
                    source,
                }
            }
            Failure::Protocol(cause) | Failure::Invalid(cause) => TransportError::Exchange {
                server,
                cause,
                source: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authorization_failure_stays_one() {
        let err = Failure::Auth(AuthProviderError(
            "needs login: s requires an interactive OAuth login".into(),
        ))
        .into_transport("s");
        assert!(
            matches!(err, TransportError::Unauthorized { .. }),
            "{err:?}"
        );
        assert!(err.is_auth_failure());
        assert!(!err.is_closed());
        assert!(err.to_string().contains("needs login"), "{err}");
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some("needs login: s requires an interactive OAuth login")
        );
        let refused = Failure::Connect("connection refused".into(), None).into_transport("s");
        assert!(!refused.is_auth_failure());
    }
}
