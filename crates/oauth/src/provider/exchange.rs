//! Token exchange on behalf of a caller (RFC 8693): a gateway holding a
//! caller's access token asks this server's authorization server for a
//! token for the same user at this server, authenticated as its own
//! client there. The caller's token is the subject token and is never
//! sent to the server itself.

use super::OAuthProvider;
use crate::assertion::TOKEN_EXCHANGE;
use crate::error::OAuthError;
use crate::secret::Secret;
use crate::token::{self, TokenRequest, TokenSet};

/// Token type of an OAuth access token (RFC 8693 §3).
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

impl OAuthProvider {
    /// Exchanges `subject_token` (a caller's access token, as presented to
    /// the gateway) at the authorization server this server's Protected
    /// Resource Metadata names, for an access token for the same subject
    /// whose `resource` and `audience` are this server. The request is
    /// authenticated as this provider's client there (a pre-registered
    /// client, else its stored registration). The tokens are returned,
    /// not installed: they belong to the caller, not to this provider.
    ///
    /// # Errors
    /// [`OAuthError::Unsupported`] when the authorization server does not
    /// offer token exchange, [`OAuthError::NoClientIdentity`] without a
    /// client there, [`OAuthError::Refused`] when it refuses the exchange,
    /// and the discovery errors.
    pub async fn exchange_for_subject(
        &self,
        subject_token: &Secret,
        scopes: &[String],
    ) -> Result<TokenSet, OAuthError> {
        let mut st = self.inner.flow.lock().await;
        let prm = match st.prm.clone() {
            Some(prm) => prm,
            None => self.discover(&mut st, None).await?,
        };
        let issuer = super::select_issuer(&prm);
        let metadata = self.metadata(&mut st, &issuer).await?;
        if let Some(grants) = &metadata.grant_types_supported {
            if !grants.iter().any(|g| g == TOKEN_EXCHANGE) {
                return Err(OAuthError::Unsupported(format!(
                    "authorization server {issuer} does not offer token exchange (RFC 8693)"
                )));
            }
        }
        let endpoint = self.endpoint(
            metadata.token_endpoint.as_deref(),
            &issuer,
            "token_endpoint",
        )?;
        let client = self.identity(&mut st, &metadata, None, scopes).await?;
        drop(st);
        let request = TokenRequest {
            endpoint: &endpoint,
            issuer: &metadata.issuer,
            client: &client,
            resource: &prm.resource,
            requested_scope: scopes,
            dpop: None,
        };
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE.to_owned()),
            ("subject_token", subject_token.expose().to_owned()),
            ("subject_token_type", ACCESS_TOKEN_TYPE.to_owned()),
            ("requested_token_type", ACCESS_TOKEN_TYPE.to_owned()),
            ("resource", prm.resource.clone()),
            ("audience", prm.resource.clone()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        tracing::info!(server = %self.inner.config.server, issuer = %metadata.issuer, "exchanging a caller's token (RFC 8693)");
        token::request(&self.inner.http, &request, form, None).await
    }
}
