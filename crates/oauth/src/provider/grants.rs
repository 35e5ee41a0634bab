//! Obtaining tokens with the configured grant: the authorization code with
//! PKCE (through the user agent), client credentials, the JWT-bearer grant
//! and enterprise-managed authorization (an ID-JAG from the identity
//! provider).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::identity::pre_registered_identity;
use super::{FlowState, OAuthProvider};
use crate::assertion::{self, AssertionSource, JWT_BEARER};
use crate::config::{EnterpriseGrant, Grant, JwtBearerGrant};
use crate::discovery::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::dpop::DpopKey;
use crate::error::OAuthError;
use crate::flow::{self, PendingAuthorization};
use crate::registration::PreRegisteredClient;
use crate::secret::{Pkce, Secret, random_b64};
use crate::token::{self, IdentitySource, TokenRequest, TokenSet};
use crate::user_agent::AuthorizationRequest;

impl OAuthProvider {
    /// Obtains tokens from `issuer` for `scopes` with the configured grant,
    /// and installs them.
    pub(super) async fn authorize(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        issuer: &str,
        scopes: Vec<String>,
    ) -> Result<(Arc<TokenSet>, IdentitySource), OAuthError> {
        let metadata = self.metadata(st, issuer).await?;
        let result = match &self.inner.config.grant {
            Grant::AuthorizationCode => self.authorization_code(st, prm, &metadata, scopes).await,
            Grant::ClientCredentials(client) => {
                self.client_credentials(st, prm, &metadata, scopes, client)
                    .await
            }
            Grant::JwtBearer(grant) => self.jwt_bearer(st, prm, &metadata, scopes, grant).await,
            Grant::EnterpriseManaged(grant) => {
                self.enterprise_managed(st, prm, &metadata, scopes, grant)
                    .await
            }
        };
        let (tokens, source) = match result {
            Ok(r) => r,
            Err(e) => {
                if e.is_needs_login() {
                    self.inner.needs_login.store(true, Ordering::Release);
                }
                return Err(e);
            }
        };
        let tokens = Arc::new(tokens);
        self.install(&tokens).await;
        st.refreshed_for_challenge = false;
        self.inner.needs_login.store(false, Ordering::Release);
        tracing::info!(
            server = %self.inner.config.server,
            issuer = %tokens.issuer,
            scope = %tokens.scopes().join(" "),
            "authorized"
        );
        Ok((tokens, source))
    }

    /// The authorization-code grant for the MCP server's `resource`, the
    /// token bound to a DPoP key where the server binds tokens.
    async fn authorization_code(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        tracing::info!(server = %self.inner.config.server, issuer = %metadata.issuer, "requesting authorization");
        self.code_flow(st, metadata, scopes, Some(&prm.resource), true)
            .await
    }

    /// The authorization-code flow with PKCE, through the user agent, at
    /// `metadata.issuer`: for `resource` when given (the MCP server; sent on
    /// both requests), else for the issuer itself (a login at an identity
    /// provider); `offline_access` is added to `scopes` where offered and
    /// refresh tokens are wanted; with `dpop`, the token is bound to a new
    /// key where the issuer binds tokens.
    pub(super) async fn code_flow(
        &self,
        st: &mut FlowState,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
        resource: Option<&str>,
        dpop: bool,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        let Some(agent) = self.inner.config.user_agent.clone() else {
            return Err(OAuthError::NeedsLogin {
                server: self.inner.config.server.clone(),
            });
        };
        let issuer = metadata.issuer.clone();
        // AUTH-C-11: no S256, no flow.
        if !metadata.supports_s256() {
            return Err(OAuthError::PkceUnsupported { issuer });
        }
        let authorization_endpoint = self.endpoint(
            metadata.authorization_endpoint.as_deref(),
            &issuer,
            "authorization_endpoint",
        )?;
        let token_endpoint = self.endpoint(
            metadata.token_endpoint.as_deref(),
            &issuer,
            "token_endpoint",
        )?;
        let scopes = flow::with_offline_access(scopes, metadata, self.inner.config.refresh_tokens);
        let previous_redirect = self
            .stored_registration(&issuer)
            .await
            .and_then(|r| r.redirect_uris.first().cloned());
        let pending = agent.begin(previous_redirect.as_deref()).await?;
        let redirect_uri = pending.redirect_uri().to_owned();
        let client = self
            .identity(st, metadata, Some(&redirect_uri), &scopes)
            .await?;
        let pkce = Pkce::generate().map_err(OAuthError::Key)?;
        let state = random_b64(32).map_err(OAuthError::Key)?;
        // AUTH-C-12: the validated issuer is recorded with the verifier and
        // state before the user agent is sent anywhere.
        let record = PendingAuthorization {
            issuer: issuer.clone(),
            iss_supported: metadata.authorization_response_iss_parameter_supported,
            state: state.clone(),
            verifier: pkce.verifier,
            redirect_uri,
        };
        let scope = scopes.join(" ");
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", record.redirect_uri.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
        ];
        // AUTH-C-16: always, whether or not the server supports it.
        if let Some(resource) = resource {
            params.push(("resource", resource));
        }
        if !scope.is_empty() {
            params.push(("scope", scope.as_str()));
        }
        let url = flow::authorization_url(&authorization_endpoint, &params);
        let response = pending
            .complete(AuthorizationRequest {
                url,
                state: state.clone(),
            })
            .await?;
        let code = flow::validate_response(&response, &record)?;
        let dpop = match dpop {
            true => self.dpop_key_for(metadata)?,
            false => None,
        };
        let request = TokenRequest {
            endpoint: &token_endpoint,
            issuer: &issuer,
            client: &client,
            resource: resource.unwrap_or(&issuer),
            requested_scope: &scopes,
            dpop: dpop.as_ref(),
        };
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.expose().to_owned()),
            ("redirect_uri", record.redirect_uri.clone()),
            ("code_verifier", record.verifier.expose().to_owned()),
        ];
        if let Some(resource) = resource {
            form.push(("resource", resource.to_owned()));
        }
        match token::request(&self.inner.http, &request, form, None).await {
            Ok(tokens) => Ok((tokens, client.source)),
            Err(e) => {
                self.forget_rejected_registration(&e, &client, &issuer)
                    .await;
                Err(e)
            }
        }
    }

    /// The client credentials grant (no user), as the pre-registered
    /// `client`.
    async fn client_credentials(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
        client: &PreRegisteredClient,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        tracing::info!(server = %self.inner.config.server, issuer = %metadata.issuer, "requesting a client credentials token");
        let grant = DirectGrant {
            grant_type: "client_credentials",
            name: "the client_credentials grant",
            extra: Vec::new(),
        };
        self.direct_grant(st, prm, metadata, scopes, client, grant)
            .await
    }

    /// A new DPoP key when the authorization server binds tokens with
    /// ES256 and DPoP is not switched off.
    fn dpop_key_for(
        &self,
        metadata: &AuthorizationServerMetadata,
    ) -> Result<Option<DpopKey>, OAuthError> {
        if self.inner.config.dpop && metadata.supports_dpop_es256() {
            DpopKey::generate().map(Some)
        } else {
            Ok(None)
        }
    }

    /// The JWT-bearer grant with the workload's assertion (RFC 7523 §2.1).
    /// A refusal is reported as it is: no retry, no other grant.
    async fn jwt_bearer(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
        grant: &JwtBearerGrant,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        let assertion = grant.assertion.read().await?;
        tracing::info!(server = %self.inner.config.server, issuer = %metadata.issuer, "requesting a token with the workload's assertion (JWT bearer)");
        self.assertion_grant(st, prm, metadata, scopes, &grant.client, &assertion)
            .await
    }

    /// Enterprise-managed authorization (SEP-990): the user's ID token is
    /// exchanged at the identity provider for an ID-JAG addressed to this
    /// authorization server, which takes it with the JWT-bearer grant.
    async fn enterprise_managed(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
        grant: &EnterpriseGrant,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        let idp = &grant.idp;
        let read = match &idp.id_token {
            AssertionSource::IdpLogin(name) => self.stored_id_token(name),
            other => other.read().await,
        };
        let id_token = read.map_err(|e| match e {
            OAuthError::Assertion {
                source_name,
                reason,
            } => OAuthError::Assertion {
                source_name: format!(
                    "the ID token from identity provider {:?} ({source_name})",
                    idp.name
                ),
                reason: format!(
                    "{reason}; log in again: switchboard auth login --idp {}",
                    idp.name
                ),
            },
            other => other,
        })?;
        let endpoint = match &idp.token_endpoint {
            Some(e) => e.clone(),
            None => {
                let m = self.metadata(st, &idp.issuer).await?;
                self.endpoint(m.token_endpoint.as_deref(), &idp.issuer, "token_endpoint")?
            }
        };
        self.inner.http.check_url(&endpoint, "identity provider")?;
        let id_jag = assertion::exchange_for_id_jag(
            &self.inner.http,
            idp,
            &endpoint,
            &id_token,
            &metadata.issuer,
            &prm.resource,
            &scopes,
        )
        .await?;
        tracing::info!(server = %self.inner.config.server, issuer = %metadata.issuer, idp = %idp.name, "requesting a token with the identity assertion grant");
        self.assertion_grant(st, prm, metadata, scopes, &grant.client, &id_jag)
            .await
    }

    /// The ID token of the login at identity provider `name` from the
    /// token store; a missing or expired one means a person has to log in
    /// there.
    fn stored_id_token(&self, name: &str) -> Result<Secret, OAuthError> {
        let needs_login = || OAuthError::NeedsLogin {
            server: self.inner.config.server.clone(),
        };
        let Some(store) = &self.inner.config.store else {
            return Err(needs_login());
        };
        let Some(token) = store.id_token(name)? else {
            return Err(needs_login());
        };
        if assertion::check_jwt(token.expose()).is_err() {
            return Err(needs_login());
        }
        Ok(token)
    }

    /// The JWT-bearer token request with `assertion`, authenticated as
    /// `client`.
    async fn assertion_grant(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
        client: &PreRegisteredClient,
        assertion: &Secret,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        let grant = DirectGrant {
            grant_type: JWT_BEARER,
            name: "the JWT-bearer grant",
            extra: vec![("assertion", assertion.expose().to_owned())],
        };
        self.direct_grant(st, prm, metadata, scopes, client, grant)
            .await
    }

    /// A token request with no user in it (client credentials, JWT
    /// bearer), as the pre-registered `client`: the grant must be offered,
    /// the token is bound to a DPoP key when the server binds tokens.
    async fn direct_grant(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
        client: &PreRegisteredClient,
        grant: DirectGrant,
    ) -> Result<(TokenSet, IdentitySource), OAuthError> {
        let issuer = metadata.issuer.clone();
        if let Some(grants) = &metadata.grant_types_supported {
            if !grants.iter().any(|g| g == grant.grant_type) {
                return Err(OAuthError::Unsupported(format!(
                    "authorization server {issuer} does not offer {}",
                    grant.name
                )));
            }
        }
        let token_endpoint = self.endpoint(
            metadata.token_endpoint.as_deref(),
            &issuer,
            "token_endpoint",
        )?;
        self.check_binding(st, client, &issuer)?;
        let identity = pre_registered_identity(client, metadata)?;
        let resource = prm.resource.clone();
        let dpop = self.dpop_key_for(metadata)?;
        let request = TokenRequest {
            endpoint: &token_endpoint,
            issuer: &issuer,
            client: &identity,
            resource: &resource,
            requested_scope: &scopes,
            dpop: dpop.as_ref(),
        };
        let mut form = vec![("grant_type", grant.grant_type.to_owned())];
        form.extend(grant.extra);
        form.push(("resource", resource.clone()));
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let tokens = token::request(&self.inner.http, &request, form, None).await?;
        Ok((tokens, IdentitySource::PreRegistered))
    }
}

/// A grant that needs no user: its `grant_type`, its name in messages,
/// and its own form fields.
struct DirectGrant {
    grant_type: &'static str,
    name: &'static str,
    extra: Vec<(&'static str, String)>,
}
