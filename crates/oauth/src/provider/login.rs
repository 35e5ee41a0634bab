//! Logging in on request (`switchboard auth login`, at the MCP server's
//! authorization server or at an enterprise identity provider), the login
//! held, logging out, and the unauthenticated probe that finds where to
//! authorize.

use bytes::Bytes;
use serde_json::json;
use switchboard_wire::{meta, version};

use super::{LoginReport, OAuthProvider, blocking, select_issuer};
use crate::challenge::BearerChallenge;
use crate::error::OAuthError;
use crate::flow::{self};
use crate::store::StoredLogin;

impl OAuthProvider {
    /// Runs a full authorization now, whatever tokens are held (what
    /// `switchboard auth login ALIAS` does). The server is probed with an
    /// unauthenticated `server/discover`; its 401 challenge (or, failing
    /// that, the well-known metadata) says where to authorize.
    ///
    /// # Errors
    /// Any [`OAuthError`]; [`OAuthError::NotFound`] when the server neither
    /// challenges nor publishes Protected Resource Metadata.
    pub async fn login(&self) -> Result<LoginReport, OAuthError> {
        let bearer = self.probe().await?;
        let mut st = self.inner.flow.lock().await;
        self.ensure_loaded(&mut st).await;
        let prm = self.discover(&mut st, bearer.as_ref()).await?;
        let issuer = select_issuer(&prm);
        let previous = self.current().filter(|t| t.issuer == issuer);
        let mut scopes = self.starting_scopes(
            bearer.as_ref().and_then(|b| b.scope.as_deref()),
            prm.scopes_supported.as_deref(),
        );
        if let Some(t) = &previous {
            scopes = flow::union(&t.requested_scope, &scopes);
        }
        let (tokens, source) = self.authorize(&mut st, &prm, &issuer, scopes).await?;
        Ok(LoginReport::of(&tokens, source))
    }

    /// Logs in at an enterprise identity provider (what `switchboard auth
    /// login --idp NAME` does): an OpenID Connect authorization-code login
    /// with PKCE at the issuer this provider was built for (its metadata,
    /// OAuth or OpenID Connect, says where), through the user agent, as the
    /// pre-registered client. The tokens, with the ID token the
    /// enterprise-managed grant exchanges, are kept in the token store
    /// under [`idp_login_key`](crate::store::idp_login_key)`(name)`.
    ///
    /// # Errors
    /// Any [`OAuthError`]; [`OAuthError::InvalidDocument`] when the token
    /// response carries no ID token.
    pub async fn login_at_identity_provider(
        &self,
        name: &str,
        scopes: &[String],
    ) -> Result<LoginReport, OAuthError> {
        if self.inner.config.user_agent.is_none() {
            return Err(OAuthError::NeedsLogin {
                server: self.inner.config.server.clone(),
            });
        }
        let mut st = self.inner.flow.lock().await;
        let metadata = self.metadata(&mut st, &self.inner.config.url).await?;
        let scopes = flow::union(&["openid".to_owned()], scopes);
        tracing::info!(idp = %name, issuer = %metadata.issuer, "logging in at the identity provider");
        // No `resource`: the login is for the identity provider itself.
        let (tokens, source) = self
            .code_flow(&mut st, &metadata, scopes, None, false)
            .await?;
        if tokens.id_token.is_none() {
            return Err(OAuthError::InvalidDocument {
                what: "token response",
                url: crate::http::shown(metadata.token_endpoint.as_deref().unwrap_or_default()),
                reason: "it has no id_token (is \"openid\" a scope of this client?)".into(),
            });
        }
        if let Some(store) = self.inner.config.store.clone() {
            let key = crate::store::idp_login_key(name);
            let saved = tokens.clone();
            blocking(move || store.save_tokens(&key, &saved)).await?;
        }
        Ok(LoginReport::of(&tokens, source))
    }

    /// The login held for this server (memory first, then the store).
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the store cannot be read.
    pub async fn status(&self) -> Result<Option<StoredLogin>, OAuthError> {
        {
            let mut st = self.inner.flow.lock().await;
            self.ensure_loaded(&mut st).await;
        }
        Ok(self.current().map(|t| StoredLogin {
            server: self.inner.server_key.clone(),
            issuer: t.issuer.clone(),
            client_id: t.client_id.clone(),
            expires_at: t.expires_at,
            has_refresh_token: t.refresh_token.is_some(),
            scopes: t.scopes(),
        }))
    }

    /// Forgets this server's tokens, in memory and in the store, after
    /// revoking the refresh token (or the access token) where the
    /// authorization server offers revocation (RFC 7009, best effort).
    /// Returns whether there was a login.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the store cannot be written.
    pub async fn logout(&self) -> Result<bool, OAuthError> {
        let mut st = self.inner.flow.lock().await;
        self.ensure_loaded(&mut st).await;
        let had = self.current();
        if let Some(t) = &had {
            if let Err(e) = self.revoke(&mut st, t).await {
                tracing::info!(server = %self.inner.config.server, error = %e, "could not revoke the token; forgetting it anyway");
            }
        }
        self.set_token(None);
        st.refreshed_for_challenge = false;
        let removed = match &self.inner.config.store {
            Some(store) => {
                let store = store.clone();
                let key = self.inner.server_key.clone();
                blocking(move || store.remove_server(&key)).await?
            }
            None => false,
        };
        Ok(had.is_some() || removed)
    }

    /// An unauthenticated `server/discover`: its 401 challenge, if any.
    async fn probe(&self) -> Result<Option<BearerChallenge>, OAuthError> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "server/discover",
            "params": { meta::META: {
                meta::PROTOCOL_VERSION: version::LATEST,
                meta::CLIENT_CAPABILITIES: {},
                meta::CLIENT_INFO: { "name": "switchboard", "version": env!("CARGO_PKG_VERSION") },
            }},
        });
        let reply = self
            .inner
            .http
            .post_raw(
                &self.inner.config.url,
                "application/json",
                "application/json, text/event-stream",
                &[
                    ("mcp-protocol-version", version::LATEST.to_owned()),
                    ("mcp-method", "server/discover".to_owned()),
                ],
                Bytes::from(body.to_string()),
            )
            .await?;
        if reply.status != 401 {
            return Ok(None);
        }
        let values: Vec<String> = reply
            .headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        Ok(BearerChallenge::from_headers(&values).or(Some(BearerChallenge::default())))
    }
}
