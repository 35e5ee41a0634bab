//! The hook through which an authorization layer (OAuth 2.1) supplies the
//! `Authorization` header and reacts to 401/403 challenges.
//!
//! The transport asks the provider for a header value before every HTTP
//! request it makes to the server (POST, GET and DELETE alike, HTTP-C-19)
//! and, when the server answers 401 or 403, hands it the challenge; if the
//! provider says so, the transport sends the same request again with the
//! fresh header. It never retries more than [`MAX_AUTH_RETRIES`] times for
//! one request, so a provider that keeps asking for retries cannot loop.

use std::fmt;

use crate::transport::BoxFuture;

/// How many times one request is re-sent after a challenge.
pub const MAX_AUTH_RETRIES: usize = 3;

/// A 401 or 403 answer from the server.
///
/// Its `Debug` form leaves out the credentials the refused request carried.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// The HTTP status: 401 (missing or invalid token) or 403 (e.g.
    /// `insufficient_scope`).
    pub status: u16,
    /// Every `WWW-Authenticate` header value of the answer, in order.
    pub www_authenticate: Vec<String>,
    /// The URL the refused request went to.
    pub url: String,
    /// The JSON-RPC method of the refused request (`None` for GET/DELETE).
    pub method: Option<String>,
    /// The `Authorization` header value the refused request carried (`None`:
    /// it carried none). Requests run concurrently, so the refusal may be
    /// of a token the provider has replaced since; comparing this with the
    /// current one tells a stale refusal (just retry) from a real one (run
    /// a flow).
    pub sent_authorization: Option<String>,
    /// The answer's `DPoP-Nonce` header (RFC 9449 §9), for a provider that
    /// binds tokens to a key: a 401 `use_dpop_nonce` is retried with it.
    pub dpop_nonce: Option<String>,
}

impl fmt::Debug for AuthChallenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials never reach logs: only whether there were any.
        let sent = self.sent_authorization.as_ref().map(|_| "<redacted>");
        f.debug_struct("AuthChallenge")
            .field("status", &self.status)
            .field("www_authenticate", &self.www_authenticate)
            .field("url", &self.url)
            .field("method", &self.method)
            .field("sent_authorization", &sent)
            .field("dpop_nonce", &self.dpop_nonce)
            .finish()
    }
}

/// What to do after a challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthRetry {
    /// Send the request again; [`AuthProvider::authorization`] is asked
    /// for the header anew.
    Retry,
    /// Give up: the request fails with the HTTP status.
    GiveUp,
}

/// Why the authorization layer could not supply credentials.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthProviderError(pub String);

/// Supplies credentials for the requests of one HTTP transport.
///
/// Implementations are called concurrently from every in-flight request;
/// they do their own locking (e.g. one token refresh shared by all).
pub trait AuthProvider: Send + Sync + fmt::Debug {
    /// The full `Authorization` header value for the next request (e.g.
    /// `Bearer abc`), or `None` to send none.
    ///
    /// # Errors
    /// [`AuthProviderError`] when no credentials can be obtained; the request fails
    /// with it.
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, AuthProviderError>>;

    /// What [`AuthProvider::authorization`] would give, when that is known
    /// at once (credentials held and fresh, or none held and none to
    /// load); `None` when it must be asked. Spares every request a boxed
    /// future. The default always asks.
    fn authorization_now(&self) -> Option<Result<Option<String>, AuthProviderError>> {
        None
    }

    /// A proof of possession for one request (the `DPoP` header of
    /// RFC 9449): asked after [`AuthProvider::authorization`], with the
    /// HTTP method, the full URL and the `Authorization` value the request
    /// will carry, and only when it carries one (a proof goes with an
    /// access token). `None` (the default) sends no proof.
    ///
    /// # Errors
    /// [`AuthProviderError`] when no proof can be made; the request fails with it.
    fn proof<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
        authorization: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthProviderError>> {
        let _ = (method, url, authorization);
        Box::pin(async { Ok(None) })
    }

    /// Told about a 401/403 answer, with its `WWW-Authenticate` challenges
    /// and the `Authorization` value the refused request carried, so it can
    /// run a flow (discovery, token refresh, step-up) before the transport
    /// retries, or just retry when that value is no longer the current one.
    ///
    /// # Errors
    /// [`AuthProviderError`] when the flow failed; the request fails with it.
    fn on_challenge<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> BoxFuture<'a, Result<AuthRetry, AuthProviderError>>;
}

/// A provider that always sends the same header value, e.g. a static
/// `Bearer` token from configuration; it never retries a challenge.
#[derive(Clone)]
pub struct StaticAuthorization {
    value: String,
}

impl StaticAuthorization {
    /// Sends `value` as the `Authorization` header on every request.
    pub fn new(value: impl Into<String>) -> Self {
        StaticAuthorization {
            value: value.into(),
        }
    }
}

impl fmt::Debug for StaticAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials never reach logs.
        f.debug_struct("StaticAuthorization")
            .field("value", &"<redacted>")
            .finish()
    }
}

impl AuthProvider for StaticAuthorization {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, AuthProviderError>> {
        let value = self.value.clone();
        Box::pin(async move { Ok(Some(value)) })
    }

    fn authorization_now(&self) -> Option<Result<Option<String>, AuthProviderError>> {
        Some(Ok(Some(self.value.clone())))
    }

    fn on_challenge<'a>(
        &'a self,
        _challenge: &'a AuthChallenge,
    ) -> BoxFuture<'a, Result<AuthRetry, AuthProviderError>> {
        Box::pin(async { Ok(AuthRetry::GiveUp) })
    }
}
