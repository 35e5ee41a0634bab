//! What a refused request sets off: a 401 (refresh once, else authorize
//! anew, at a new authorization server if the resource moved), a 403
//! `insufficient_scope` (step-up with the union of scopes, bounded per
//! operation), a DPoP nonce; requests refused while a flow ran just retry.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{
    FlowState, OAuthProvider, STEP_UP_WINDOW, Sent, header_value, lock, other_scheme_only,
    select_issuer,
};
use crate::challenge::BearerChallenge;
use crate::dpop::USE_DPOP_NONCE;
use crate::error::OAuthError;
use crate::flow::{self};
use switchboard_client::transport::http::{AuthChallenge, AuthRetry};

impl OAuthProvider {
    /// Reacts to a 401 or 403 from the server (see [`OAuthProvider`]) when
    /// it is not known which credentials the refused request carried
    /// (`challenge.sent_authorization` is not looked at). Requests refused
    /// while another one ran a flow just retry. The transport hook uses
    /// [`OAuthProvider::handle_challenge_for`] with the header it sent.
    ///
    /// # Errors
    /// The [`OAuthError`] that stopped the flow.
    pub async fn handle_challenge(
        &self,
        challenge: &AuthChallenge,
    ) -> Result<AuthRetry, OAuthError> {
        self.challenged(challenge, Sent::Unknown).await
    }

    /// [`OAuthProvider::handle_challenge`] for a request that carried
    /// `sent` as its `Authorization` header (`None`: no header). A refusal
    /// of anything but the current token is answered by a plain retry with
    /// the current one: a response that overtook a refresh never throws
    /// away the fresh token or starts a second login.
    ///
    /// # Errors
    /// The [`OAuthError`] that stopped the flow.
    pub async fn handle_challenge_for(
        &self,
        challenge: &AuthChallenge,
        sent: Option<&str>,
    ) -> Result<AuthRetry, OAuthError> {
        self.challenged(challenge, Sent::Known(sent)).await
    }

    async fn challenged(
        &self,
        challenge: &AuthChallenge,
        sent: Sent<'_>,
    ) -> Result<AuthRetry, OAuthError> {
        let generation = self.inner.generation.load(Ordering::Acquire);
        let bearer = BearerChallenge::from_headers(&challenge.www_authenticate);
        // RFC 9449 §9: the resource server wants its nonce in the proof;
        // retried once per new nonce.
        if challenge.status == 401
            && bearer.as_ref().and_then(|b| b.error.as_deref()) == Some(USE_DPOP_NONCE)
        {
            let Some(nonce) = challenge.dpop_nonce.clone() else {
                return Ok(AuthRetry::GiveUp);
            };
            let mut held = lock(&self.inner.rs_nonce);
            if held.as_deref() == Some(nonce.as_str()) {
                return Ok(AuthRetry::GiveUp);
            }
            tracing::debug!(server = %self.inner.config.server, "the server supplied a DPoP nonce; retrying with it");
            *held = Some(nonce);
            return Ok(AuthRetry::Retry);
        }
        let insufficient = bearer
            .as_ref()
            .is_some_and(BearerChallenge::is_insufficient_scope);
        if challenge.status != 401 && !(challenge.status == 403 && insufficient) {
            return Ok(AuthRetry::GiveUp);
        }
        if bearer.is_none() && other_scheme_only(&challenge.www_authenticate) {
            // `Basic`, `Negotiate`, …: not OAuth; the 401 stands.
            return Ok(AuthRetry::GiveUp);
        }
        let mut st = self.inner.flow.lock().await;
        self.ensure_loaded(&mut st).await;
        let stale = match sent {
            // Another request got a new token while this one waited.
            Sent::Unknown => self.inner.generation.load(Ordering::Acquire) != generation,
            Sent::Known(sent) => {
                let current = self.current().map(|t| header_value(&t));
                current.is_some() && current.as_deref() != sent
            }
        };
        if stale {
            return Ok(AuthRetry::Retry);
        }
        match (challenge.status, bearer) {
            (403, Some(bearer)) => {
                let operation = challenge
                    .method
                    .clone()
                    .unwrap_or_else(|| challenge.url.clone());
                self.step_up(&mut st, &bearer, operation).await?;
            }
            (_, bearer) => self.recover_unauthorized(&mut st, bearer.as_ref()).await?,
        }
        Ok(AuthRetry::Retry)
    }

    /// A 401: the token is missing, expired, revoked, or from an
    /// authorization server the resource no longer trusts.
    async fn recover_unauthorized(
        &self,
        st: &mut FlowState,
        bearer: Option<&BearerChallenge>,
    ) -> Result<(), OAuthError> {
        let prm = self.discover(st, bearer).await?;
        let issuer = select_issuer(&prm);
        let mut previous_scopes = Vec::new();
        if let Some(t) = self.current() {
            if t.issuer != issuer {
                // AUTH-C-05/10: the resource moved to another authorization
                // server; nothing from the old one is reused.
                tracing::info!(
                    server = %self.inner.config.server,
                    from = %t.issuer,
                    to = %issuer,
                    "the server now uses another authorization server; authorizing there"
                );
                self.drop_token(&t).await;
            } else {
                previous_scopes = t.requested_scope.clone();
                if t.refresh_token.is_some() && !st.refreshed_for_challenge {
                    match self.refresh(st, &t).await {
                        Ok(_) => {
                            st.refreshed_for_challenge = true;
                            return Ok(());
                        }
                        Err(e @ OAuthError::Refused { .. }) => {
                            tracing::info!(server = %self.inner.config.server, error = %e, "the refresh token was refused; authorizing anew");
                        }
                        // The authorization server cannot be reached or
                        // answers nonsense: keep the login for later.
                        Err(e) => return Err(e),
                    }
                }
                self.drop_token(&t).await;
            }
        }
        let scopes = flow::union(
            &previous_scopes,
            &self.starting_scopes(
                bearer.and_then(|b| b.scope.as_deref()),
                prm.scopes_supported.as_deref(),
            ),
        );
        self.authorize(st, &prm, &issuer, scopes).await.map(drop)
    }

    /// A 403 `insufficient_scope` (AUTH-C-20).
    async fn step_up(
        &self,
        st: &mut FlowState,
        bearer: &BearerChallenge,
        operation: String,
    ) -> Result<(), OAuthError> {
        let mut challenged = bearer.scope.clone().unwrap_or_default();
        let mut key_scopes = challenged.clone();
        key_scopes.sort();
        let now = Instant::now();
        let limit = self.inner.config.max_step_ups;
        let entry = st
            .step_ups
            .entry((operation, key_scopes))
            .or_insert((0, now));
        if now.duration_since(entry.1) > STEP_UP_WINDOW {
            *entry = (0, now);
        }
        if entry.0 >= limit {
            return Err(OAuthError::StepUpLimit {
                scope: challenged.join(" "),
                attempts: entry.0 + 1,
            });
        }
        entry.0 += 1;
        let prm = match (&st.prm, bearer.resource_metadata.is_some()) {
            (Some(prm), false) => prm.clone(),
            _ => self.discover(st, Some(bearer)).await?,
        };
        let issuer = select_issuer(&prm);
        let held = self
            .current()
            .filter(|t| t.issuer == issuer)
            .map(|t| flow::union(&t.requested_scope, &t.scopes()))
            .unwrap_or_else(|| prm.scopes_supported.clone().unwrap_or_default());
        if challenged.is_empty() {
            challenged = prm.scopes_supported.clone().unwrap_or_default();
        }
        let scopes = flow::union(&held, &challenged);
        tracing::info!(server = %self.inner.config.server, scope = %scopes.join(" "), "the server needs more scope; re-authorizing");
        self.authorize(st, &prm, &issuer, scopes).await.map(drop)
    }
}
