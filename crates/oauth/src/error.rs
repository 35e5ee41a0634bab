//! What can go wrong while authorizing, sorted by who is at fault.

use std::path::PathBuf;

/// An OAuth failure. Messages never contain a token, secret, code or
/// verifier.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    // -- The server or the authorization server broke a rule.
    /// A metadata document, registration or token response is not what the
    /// specs require.
    #[error("{what} from {url} is not valid: {reason}")]
    InvalidDocument {
        /// Which document (e.g. "protected resource metadata").
        what: &'static str,
        /// Where it came from.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The Protected Resource Metadata names another resource (AUTH-C-16).
    #[error(
        "the protected resource metadata at {url} is for {found:?}, not for this server ({expected}); refusing to authorize"
    )]
    ResourceMismatch {
        /// Where the metadata came from.
        url: String,
        /// The server URL we are talking to.
        expected: String,
        /// The `resource` the document names.
        found: String,
    },
    /// Authorization server metadata whose `issuer` is not the one its URL
    /// was built from (AUTH-C-04); none of its endpoints were used.
    #[error(
        "the authorization server metadata at {url} names issuer {found:?}, not {expected:?}; refusing to use it"
    )]
    IssuerMismatch {
        /// Where the metadata came from.
        url: String,
        /// The issuer the URL was built from.
        expected: String,
        /// The issuer the document names.
        found: String,
    },
    /// The authorization response failed validation (`iss`, `state`, a
    /// missing code); its error fields, if any, were not looked at
    /// (AUTH-C-13/14/15).
    #[error("the authorization response was rejected: {0}")]
    AuthorizationResponse(String),
    /// The authorization server answered with an OAuth error (after the
    /// response passed validation).
    #[error("{endpoint} refused: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// `authorization`, `token` or `registration`.
        endpoint: &'static str,
        /// The OAuth `error` code.
        error: String,
        /// `error_description`, when given.
        description: Option<String>,
    },
    /// The server keeps refusing a token for lack of scope.
    #[error(
        "the server still asks for scope {scope:?} after {attempts} authorizations; giving up (insufficient_scope)"
    )]
    StepUpLimit {
        /// The scopes the server asked for.
        scope: String,
        /// How many authorizations were made for this operation.
        attempts: usize,
    },

    /// A workload assertion or ID token could not be obtained or is not
    /// usable (missing file, failing command, not a JWT, expired).
    #[error("{source_name} {reason}")]
    Assertion {
        /// Where the assertion comes from (e.g. "assertion file PATH").
        source_name: String,
        /// What is wrong.
        reason: String,
    },

    // -- The authorization server lacks something we need.
    /// The metadata does not list `S256` in `code_challenge_methods_supported`
    /// (AUTH-C-11).
    #[error("authorization server {issuer} does not advertise PKCE with S256; refusing to proceed")]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// Nothing was found where the specs say to look.
    #[error("{0}")]
    NotFound(String),
    /// No way to obtain a client id at this authorization server.
    #[error(
        "no client identity for authorization server {issuer}: it offers neither client ID metadata documents nor dynamic registration; register a client there and configure its client_id"
    )]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// The flow needs something the authorization server does not offer
    /// (an endpoint, a grant type, an authentication method).
    #[error("{0}")]
    Unsupported(String),

    // -- The caller's configuration or situation.
    /// An interactive login is needed and no user agent is available.
    #[error("needs login: {server} requires an interactive OAuth login")]
    NeedsLogin {
        /// The server's alias.
        server: String,
    },
    /// Configuration that cannot work.
    #[error("invalid OAuth configuration: {0}")]
    Config(String),
    /// Pre-registered credentials belong to another authorization server
    /// (AUTH-C-10).
    #[error(
        "the configured client {client_id:?} is registered with {registered}, but the server now uses {current}; update the configuration"
    )]
    CredentialsForOtherIssuer {
        /// The configured client id.
        client_id: String,
        /// The issuer it is bound to.
        registered: String,
        /// The issuer the server names now.
        current: String,
    },

    // -- The environment.
    /// An HTTP exchange failed (connect, TLS, timeout, oversized body).
    #[error("request to {url} failed: {cause}")]
    Http {
        /// The URL, without its query.
        url: String,
        /// What happened.
        cause: String,
    },
    /// The user agent did not deliver an authorization response.
    #[error("the authorization did not complete: {0}")]
    UserAgent(String),
    /// Reading or writing the token store failed.
    #[error("token store {path}: {cause}")]
    Store {
        /// The file.
        path: PathBuf,
        /// What happened.
        cause: String,
    },
    /// A signing key could not be used.
    #[error("client assertion key: {0}")]
    Key(String),
}

impl OAuthError {
    /// Whether the error means "a person has to log in" (the host reports
    /// the server as needing `switchboard auth login`).
    pub fn is_needs_login(&self) -> bool {
        matches!(self, OAuthError::NeedsLogin { .. })
    }

    /// Whether the authorization server said the grant is no longer valid
    /// (`invalid_grant`, e.g. a revoked refresh token).
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, OAuthError::Refused { error, .. } if error == "invalid_grant")
    }
}
