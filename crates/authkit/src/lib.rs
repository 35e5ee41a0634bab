//! A small OAuth 2.1 authorization server and a protected MCP endpoint, for
//! Switchboard's own tests (never for production): both run in-process on
//! `127.0.0.1:0`, are configured per test, and record every request so a
//! test can assert on what a client sent.
//!
//! # Layout
//! - [`AuthServer`] (`authorization`): metadata at the RFC 8414 or OpenID
//!   Connect well-known URL of a root or path issuer (or with a mismatching
//!   `issuer`), Dynamic Client Registration that insists on
//!   `application_type`, Client ID Metadata Documents, pre-registered
//!   clients, an authorization endpoint that approves at once with PKCE S256,
//!   `state`, `resource` and `iss` (correct, missing or any wrong value),
//!   a token endpoint with `client_secret_basic` / `client_secret_post` /
//!   `none` / `private_key_jwt`, refresh tokens (rotated or not), the client
//!   credentials grant, revocation, introspection (RFC 7662, for an
//!   authenticated client). Access tokens are ES256 JWTs whose `aud` is the
//!   requested resource.
//! - [`ResourceServer`] (`resource`): a protected MCP endpoint serving its
//!   Protected Resource Metadata (path-aware, root, or only through
//!   `resource_metadata`), refusing missing or invalid tokens with 401 and
//!   insufficient ones with 403 `insufficient_scope`, checking signature,
//!   issuer, audience and expiry; it can move to another authorization
//!   server mid-test.
//! - [`jwt`]: the token format, and [`jwt::verify`] for resource-server tests.
//!
//! # Example
//! ```no_run
//! # async fn demo() {
//! use switchboard_authkit::{AuthServer, AuthServerConfig, ResourceConfig, ResourceServer};
//!
//! let auth = AuthServer::start(AuthServerConfig::default()).await;
//! let mcp = ResourceServer::start(ResourceConfig::default(), &auth).await;
//! // Point a client at `mcp.url()`; then inspect `auth.token_requests()`.
//! # }
//! ```

mod authorization;
mod http;
pub mod jwt;
mod resource;

pub use authorization::{AuthServer, AuthServerConfig, IssMode, MetadataAt, TestClient};
pub use http::Seen;
pub use resource::{PrmAt, Refusal, ResourceConfig, ResourceServer};
