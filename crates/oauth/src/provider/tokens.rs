//! The token in use: refreshing it, revoking it at logout, and keeping
//! memory and the token store in step.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{FlowState, OAuthProvider, blocking, read};
use crate::dpop::DpopKey;
use crate::error::OAuthError;
use crate::token::{self, TokenRequest, TokenSet};

impl OAuthProvider {
    /// Uses the refresh token of `tokens` (same client, same resource) and
    /// installs the result.
    pub(super) async fn refresh(
        &self,
        st: &mut FlowState,
        tokens: &TokenSet,
    ) -> Result<Arc<TokenSet>, OAuthError> {
        let Some(refresh_token) = &tokens.refresh_token else {
            return Err(OAuthError::Unsupported(
                "no refresh token was issued".into(),
            ));
        };
        let metadata = self.metadata(st, &tokens.issuer).await?;
        let token_endpoint = self.endpoint(
            metadata.token_endpoint.as_deref(),
            &metadata.issuer,
            "token_endpoint",
        )?;
        let client = self
            .identity_for_refresh(st, &metadata, &tokens.client_id)
            .await?;
        // RFC 9449 §5: a refresh of a DPoP-bound token proves the same key.
        let dpop = tokens
            .dpop_key
            .as_ref()
            .map(DpopKey::from_stored)
            .transpose()?;
        let request = TokenRequest {
            endpoint: &token_endpoint,
            issuer: &metadata.issuer,
            client: &client,
            resource: &tokens.resource,
            requested_scope: &tokens.requested_scope,
            dpop: dpop.as_ref(),
        };
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.expose().to_owned()),
            ("resource", tokens.resource.clone()),
        ];
        let mut fresh =
            token::request(&self.inner.http, &request, form, Some(refresh_token)).await?;
        if fresh.granted_scope.is_none() {
            fresh.granted_scope.clone_from(&tokens.granted_scope);
        }
        let fresh = Arc::new(fresh);
        self.install(&fresh).await;
        tracing::info!(server = %self.inner.config.server, issuer = %fresh.issuer, "refreshed the access token");
        Ok(fresh)
    }

    pub(super) async fn revoke(
        &self,
        st: &mut FlowState,
        tokens: &TokenSet,
    ) -> Result<(), OAuthError> {
        let metadata = self.metadata(st, &tokens.issuer).await?;
        let Some(endpoint) = metadata.revocation_endpoint.clone() else {
            return Ok(());
        };
        let endpoint = self.endpoint(Some(&endpoint), &metadata.issuer, "revocation_endpoint")?;
        let client = self
            .identity_for_refresh(st, &metadata, &tokens.client_id)
            .await?;
        let (token, hint) = match &tokens.refresh_token {
            Some(r) => (r, "refresh_token"),
            None => (&tokens.access_token, "access_token"),
        };
        let request = TokenRequest {
            endpoint: &endpoint,
            issuer: &metadata.issuer,
            client: &client,
            resource: &tokens.resource,
            requested_scope: &[],
            dpop: None,
        };
        let form = vec![
            ("token", token.expose().to_owned()),
            ("token_type_hint", hint.to_owned()),
        ];
        // RFC 7009 §2.2: 200 with any body means revoked; the body is not a
        // token response, so only the status is looked at.
        match token::request(&self.inner.http, &request, form, None).await {
            Ok(_) | Err(OAuthError::InvalidDocument { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub(super) fn current(&self) -> Option<Arc<TokenSet>> {
        read(&self.inner.token).clone()
    }

    pub(super) fn set_token(&self, token: Option<Arc<TokenSet>>) {
        *self.inner.token.write().unwrap_or_else(|e| e.into_inner()) = token;
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub(super) async fn install(&self, tokens: &Arc<TokenSet>) {
        self.set_token(Some(tokens.clone()));
        if let Some(store) = self.inner.config.store.clone() {
            let key = self.inner.server_key.clone();
            let tokens = TokenSet::clone(tokens);
            if let Err(e) = blocking(move || store.save_tokens(&key, &tokens)).await {
                tracing::warn!(error = %e, "cannot save the tokens; they last for this process only");
            }
        }
    }

    pub(super) async fn drop_token(&self, tokens: &TokenSet) {
        if self
            .current()
            .is_some_and(|t| t.access_token == tokens.access_token)
        {
            self.set_token(None);
        }
        if let Some(store) = self.inner.config.store.clone() {
            let key = self.inner.server_key.clone();
            let issuer = tokens.issuer.clone();
            if let Err(e) = blocking(move || store.remove_tokens(&key, &issuer)).await {
                tracing::warn!(error = %e, "cannot update the token store");
            }
        }
    }

    pub(super) async fn ensure_loaded(&self, _locked: &mut FlowState) {
        // Only called with the flow lock held, so one reader at a time.
        if self.inner.loaded.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(store) = self.inner.config.store.clone() else {
            return;
        };
        let key = self.inner.server_key.clone();
        match blocking(move || store.tokens(&key)).await {
            Ok(Some(tokens)) if self.current().is_none() => {
                tracing::debug!(server = %self.inner.config.server, issuer = %tokens.issuer, "using stored tokens");
                self.set_token(Some(Arc::new(tokens)));
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the token store; continuing without stored tokens")
            }
        }
    }
}
