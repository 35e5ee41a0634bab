//! The resource-server side: what a server checking the access tokens it
//! receives (the gateway) fetches from an authorization server, over the
//! same HTTP client as the flow (HTTPS, or HTTP to loopback only): the
//! issuer's metadata, its JWK set, and RFC 7662 introspection answers.
//! Checking the token itself is the caller's business.

use std::time::Duration;

use switchboard_wire::JsonObject;

use crate::discovery::{self, AuthorizationServerMetadata};
use crate::error::OAuthError;
use crate::http::{OAuthHttp, shown};
use crate::secret::Secret;
use crate::token::basic_header;

/// Fetches what a resource server needs from authorization servers.
#[derive(Clone, Debug)]
pub struct IssuerClient {
    http: OAuthHttp,
}

impl IssuerClient {
    /// A client with the platform's trust roots and `timeout` per exchange.
    ///
    /// # Errors
    /// [`OAuthError::Config`] when no TLS configuration can be built.
    pub fn new(timeout: Duration) -> Result<IssuerClient, OAuthError> {
        Ok(IssuerClient {
            http: OAuthHttp::new(None, timeout, false)?,
        })
    }

    /// The metadata of `issuer` (RFC 8414, else OpenID Connect), whose
    /// `issuer` must be identical.
    ///
    /// # Errors
    /// As the flow's discovery: not found, mismatching, unreachable.
    pub async fn metadata(&self, issuer: &str) -> Result<AuthorizationServerMetadata, OAuthError> {
        discovery::authorization_server_metadata(&self.http, issuer).await
    }

    /// `GET url` as a JSON object (a JWK set), `what` naming it in errors.
    ///
    /// # Errors
    /// [`OAuthError::Http`] when unreachable, [`OAuthError::InvalidDocument`]
    /// for a non-2xx status or a body that is not a JSON object.
    pub async fn get_object(
        &self,
        url: &str,
        what: &'static str,
    ) -> Result<JsonObject, OAuthError> {
        self.http.check_url(url, what)?;
        let reply = self.http.get_json(url).await?;
        if !reply.is_success() {
            return Err(OAuthError::InvalidDocument {
                what,
                url: shown(url),
                reason: format!("HTTP status {}", reply.status),
            });
        }
        reply
            .json_object()
            .map_err(|reason| OAuthError::InvalidDocument {
                what,
                url: shown(url),
                reason,
            })
    }

    /// Asks the introspection `endpoint` about `token` (RFC 7662), as the
    /// client `client_id` authenticated with `client_secret_basic`. The
    /// answer is returned as is: `"active": false` is for the caller.
    ///
    /// # Errors
    /// As [`IssuerClient::get_object`].
    pub async fn introspect(
        &self,
        endpoint: &str,
        client_id: &str,
        client_secret: &Secret,
        token: &str,
    ) -> Result<JsonObject, OAuthError> {
        const WHAT: &str = "introspection response";
        self.http.check_url(endpoint, "introspection endpoint")?;
        let auth = basic_header(client_id, client_secret)?;
        let reply = self
            .http
            .post_form(
                endpoint,
                &[("token", token), ("token_type_hint", "access_token")],
                Some(auth),
            )
            .await?;
        if !reply.is_success() {
            return Err(OAuthError::InvalidDocument {
                what: WHAT,
                url: shown(endpoint),
                reason: format!("HTTP status {}", reply.status),
            });
        }
        reply
            .json_object()
            .map_err(|reason| OAuthError::InvalidDocument {
                what: WHAT,
                url: shown(endpoint),
                reason,
            })
    }
}
