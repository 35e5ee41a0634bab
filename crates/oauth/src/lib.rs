//! OAuth 2.1 for remote MCP servers (spec "Authorization", revision
//! 2026-07-28): the client side, plugged into `switchboard-client`'s
//! Streamable HTTP transport, using only that crate's public API (the
//! client crate knows nothing of this one).
//!
//! [`OAuthProvider`] implements the transport's
//! [`AuthProvider`](switchboard_client::AuthProvider) hook: it supplies
//! `Authorization: Bearer …` on every request (never a token in a URL,
//! AUTH-C-21) and reacts to 401 and 403 challenges by running the flow:
//!
//! 1. **Discovery**: the challenge's
//!    `resource_metadata`, else the path-inserted then root well-known
//!    Protected Resource Metadata URL; the document must name this server
//!    (AUTH-C-02, AUTH-C-16). Its first authorization server's metadata is
//!    read from the RFC 8414 / OpenID Connect URLs in the spec's order and
//!    used only if its `issuer` is identical (AUTH-C-03/04).
//! 2. **Client identity**: configured credentials for that issuer, else a
//!    Client ID Metadata Document URL where supported, else Dynamic Client
//!    Registration with `application_type` (AUTH-C-06..10). Credentials and
//!    tokens are kept per issuer and never shown to another server.
//! 3. **Authorization code + PKCE S256** (refused without S256, AUTH-C-11),
//!    `state`, `resource` on both requests, the issuer recorded with the
//!    verifier before redirecting and the RFC 9207 `iss` check on the
//!    response (AUTH-C-12..16), through a [`UserAgent`]: a browser and a
//!    loopback listener ([`LoopbackUserAgent`]) or a redirect read without
//!    a person ([`HeadlessUserAgent`]).
//! 4. **Tokens**: `client_secret_basic`, `client_secret_post`, `none` or
//!    `private_key_jwt` at the token endpoint; refresh before expiry and on
//!    a 401; step-up on 403 `insufficient_scope` with the union of scopes,
//!    bounded per operation (AUTH-C-19/20); the client credentials grant for
//!    agents acting for themselves ([`Grant::ClientCredentials`]); the
//!    JWT-bearer grant with a workload's assertion ([`Grant::JwtBearer`]);
//!    enterprise-managed authorization, an ID-JAG from the identity
//!    provider's token exchange ([`Grant::EnterpriseManaged`]).
//! 5. **DPoP** (RFC 9449): where the authorization server advertises ES256
//!    (and [`OAuthConfig::dpop`] is not off), tokens are bound to a per-login
//!    key; every token request and every request to the server carries a
//!    fresh proof, and `use_dpop_nonce` is retried once with the nonce.
//! 6. **Storage**: [`TokenStore`], one private file per user keyed by server
//!    and issuer (AUTH-C-25). Tokens, secrets, codes and verifiers are
//!    [`Secret`]s: they never appear in `Debug`, errors or logs.
//!
//! # Layout
//! - `challenge`: `WWW-Authenticate` parsing ([`parse_challenges`],
//!   [`BearerChallenge`]).
//! - `uri`: URL splitting, canonical resource URIs, well-known URLs.
//! - `discovery`: Protected Resource and authorization server metadata.
//! - `registration`: pre-registered clients, CIMD, DCR.
//! - `token`: the token endpoint and client authentication; `jwt`: client
//!   assertions; `dpop`: DPoP keys and proofs; `assertion`: assertion
//!   sources, the JWT-bearer grant's inputs and token exchange to an ID-JAG.
//! - `flow`: scope selection, the authorization URL, response validation.
//! - `user_agent`: [`UserAgent`], [`LoopbackUserAgent`], [`HeadlessUserAgent`].
//! - `store`: [`TokenStore`].
//! - `provider`: [`OAuthProvider`], the state machine tying it together.
//! - `inbound`: [`IssuerClient`], the resource-server side (an issuer's
//!   metadata and JWK set, token introspection) for a server checking
//!   the tokens it receives.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use switchboard_client::Client;
//! use switchboard_oauth::{LoopbackUserAgent, OAuthConfig, OAuthProvider, TokenStore};
//! use switchboard_client::transport::http::HttpTransport;
//!
//! let url = "https://mcp.example.com/mcp";
//! let oauth = OAuthProvider::new(
//!     OAuthConfig::new("example", url)
//!         .store(TokenStore::default_location()?)
//!         .user_agent(Arc::new(LoopbackUserAgent::new())),
//! )?;
//! // `switchboard auth login example` does this before connecting:
//! oauth.login().await?;
//! let transport = HttpTransport::builder("example", url)
//!     .auth(Arc::new(oauth.clone()))
//!     .build()?;
//! let client = Client::builder("example", transport).connect().await?;
//! # Ok(()) }
//! ```

mod assertion;
mod challenge;
mod config;
mod discovery;
mod dpop;
mod error;
mod flow;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod inbound;
mod jwt;
mod provider;
mod registration;
mod secret;
mod store;
mod token;
mod uri;
mod user_agent;

pub use assertion::{AssertionSource, IdentityProvider};
pub use challenge::{BearerChallenge, Challenge, ChallengeError, parse as parse_challenges};
pub use config::{EnterpriseGrant, Grant, JwtBearerGrant, OAuthConfig};
pub use discovery::{AuthorizationServerMetadata, ProtectedResourceMetadata};
pub use error::OAuthError;
pub use inbound::IssuerClient;
pub use jwt::SigningKey;
pub use provider::{LoginReport, OAuthProvider};
pub use registration::{PreRegisteredClient, Registration};
pub use secret::Secret;
pub use store::{StoredLogin, TokenStore, idp_login_key, principal_login_key};
pub use token::{IdentitySource, TokenEndpointAuthMethod, TokenSet};
pub use user_agent::{
    AuthorizationRequest, HeadlessUserAgent, LoopbackUserAgent, Notice, PendingRedirect,
    RedirectParams, UserAgent, open_in_browser,
};
