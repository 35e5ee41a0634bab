//! Where to authorize and as whom: the Protected Resource Metadata, the
//! authorization server's metadata and endpoints, the starting scopes, and
//! the client identity at each issuer (configured credentials, a Client ID
//! Metadata Document, a dynamic registration).

use super::{FlowState, OAuthProvider, blocking, lock};
use crate::challenge::BearerChallenge;
use crate::config::Grant;
use crate::discovery::{self, AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::error::OAuthError;
use crate::flow::{self};
use crate::registration::{self, PreRegisteredClient, Registration, RegistrationRequest};
use crate::token::{ClientIdentity, IdentitySource, TokenEndpointAuthMethod};

impl OAuthProvider {
    /// The scopes a new authorization starts from: the configured ones
    /// with the challenge's, else the spec's choice.
    pub(super) fn starting_scopes(
        &self,
        challenge: Option<&[String]>,
        supported: Option<&[String]>,
    ) -> Vec<String> {
        let configured = &self.inner.config.scopes;
        if configured.is_empty() {
            flow::initial_scopes(challenge, supported)
        } else {
            flow::union(challenge.unwrap_or_default(), configured)
        }
    }

    /// Reads the Protected Resource Metadata anew.
    pub(super) async fn discover(
        &self,
        st: &mut FlowState,
        bearer: Option<&BearerChallenge>,
    ) -> Result<ProtectedResourceMetadata, OAuthError> {
        let hint = bearer.and_then(|b| b.resource_metadata.as_deref());
        let prm =
            discovery::protected_resource_metadata(&self.inner.http, &self.inner.server, hint)
                .await?;
        tracing::debug!(server = %self.inner.config.server, url = %prm.url, issuers = ?prm.authorization_servers, "protected resource metadata");
        st.prm = Some(prm.clone());
        Ok(prm)
    }

    /// Validated metadata of `issuer` (cached for the provider's life).
    pub(super) async fn metadata(
        &self,
        st: &mut FlowState,
        issuer: &str,
    ) -> Result<AuthorizationServerMetadata, OAuthError> {
        if let Some(m) = st.metadata.get(issuer) {
            return Ok(m.clone());
        }
        let m = discovery::authorization_server_metadata(&self.inner.http, issuer).await?;
        tracing::debug!(issuer = %issuer, url = %m.url, "authorization server metadata");
        st.metadata.insert(issuer.to_owned(), m.clone());
        Ok(m)
    }

    pub(super) fn endpoint(
        &self,
        endpoint: Option<&str>,
        issuer: &str,
        name: &str,
    ) -> Result<String, OAuthError> {
        let endpoint = endpoint.ok_or_else(|| {
            OAuthError::Unsupported(format!("authorization server {issuer} publishes no {name}"))
        })?;
        self.inner
            .http
            .check_url(endpoint, "authorization server metadata")?;
        Ok(endpoint.to_owned())
    }

    /// The client identity at `metadata.issuer`, in the spec's order
    /// (AUTH-C-06): configured credentials, a Client ID Metadata Document,
    /// a dynamic registration.
    pub(super) async fn identity(
        &self,
        st: &mut FlowState,
        metadata: &AuthorizationServerMetadata,
        redirect_uri: Option<&str>,
        scopes: &[String],
    ) -> Result<ClientIdentity, OAuthError> {
        let issuer = &metadata.issuer;
        if let Some(client) = self.pre_registered_for(st, issuer)? {
            return pre_registered_identity(&client, metadata);
        }
        if let Some(url) = &self.inner.config.client_metadata_url {
            if metadata.client_id_metadata_document_supported {
                return Ok(ClientIdentity {
                    client_id: url.clone(),
                    secret: None,
                    method: TokenEndpointAuthMethod::None,
                    key: None,
                    source: IdentitySource::MetadataDocument,
                });
            }
        }
        if let Some(reg) = self.stored_registration(issuer).await {
            if reg.usable_for(redirect_uri) {
                return Ok(dynamic_identity(reg));
            }
        }
        let Some(endpoint) = metadata.registration_endpoint.as_deref() else {
            return Err(OAuthError::NoClientIdentity {
                issuer: issuer.clone(),
            });
        };
        let Some(redirect_uri) = redirect_uri else {
            return Err(OAuthError::NoClientIdentity {
                issuer: issuer.clone(),
            });
        };
        let endpoint = self.endpoint(Some(endpoint), issuer, "registration_endpoint")?;
        let request = RegistrationRequest {
            client_name: &self.inner.config.client_name,
            redirect_uri,
            refresh_tokens: self.inner.config.refresh_tokens,
            scope: (!scopes.is_empty()).then(|| scopes.join(" ")),
        };
        tracing::info!(issuer = %issuer, "registering a client (dynamic client registration)");
        let reg = registration::register(&self.inner.http, metadata, &endpoint, &request).await?;
        self.save_registration(issuer, &reg).await;
        Ok(dynamic_identity(reg))
    }

    /// The identity that got a token, for refreshing and revoking it.
    pub(super) async fn identity_for_refresh(
        &self,
        st: &mut FlowState,
        metadata: &AuthorizationServerMetadata,
        client_id: &str,
    ) -> Result<ClientIdentity, OAuthError> {
        let granted = match &self.inner.config.grant {
            Grant::ClientCredentials(client) => Some(client),
            Grant::JwtBearer(g) => Some(&g.client),
            Grant::EnterpriseManaged(g) => Some(&g.client),
            Grant::AuthorizationCode => None,
        };
        if let Some(client) = granted {
            if client.client_id == client_id {
                return pre_registered_identity(client, metadata);
            }
        }
        if let Ok(Some(client)) = self.pre_registered_for(st, &metadata.issuer) {
            if client.client_id == client_id {
                return pre_registered_identity(&client, metadata);
            }
        }
        if self.inner.config.client_metadata_url.as_deref() == Some(client_id) {
            return Ok(ClientIdentity {
                client_id: client_id.to_owned(),
                secret: None,
                method: TokenEndpointAuthMethod::None,
                key: None,
                source: IdentitySource::MetadataDocument,
            });
        }
        match self.stored_registration(&metadata.issuer).await {
            Some(reg) if reg.client_id == client_id => Ok(dynamic_identity(reg)),
            _ => Err(OAuthError::Unsupported(format!(
                "the client {client_id:?} that obtained the token is no longer configured"
            ))),
        }
    }

    /// Configured credentials for `issuer`: those bound to it, else unbound
    /// ones (bound to it now, AUTH-C-10).
    fn pre_registered_for(
        &self,
        st: &mut FlowState,
        issuer: &str,
    ) -> Result<Option<PreRegisteredClient>, OAuthError> {
        let clients = &self.inner.config.pre_registered;
        if let Some(c) = clients.iter().find(|c| c.issuer.as_deref() == Some(issuer)) {
            return Ok(Some(c.clone()));
        }
        let Some(c) = clients.iter().find(|c| c.issuer.is_none()) else {
            return Ok(None);
        };
        self.check_binding(st, c, issuer)?;
        Ok(Some(c.clone()))
    }

    /// Binds unbound credentials to the first issuer they are used with and
    /// refuses them elsewhere afterwards.
    pub(super) fn check_binding(
        &self,
        st: &mut FlowState,
        client: &PreRegisteredClient,
        issuer: &str,
    ) -> Result<(), OAuthError> {
        let bound = match &client.issuer {
            Some(i) => Some(i.clone()),
            None => st.bindings.get(&client.client_id).cloned().or_else(|| {
                self.current()
                    .filter(|t| t.client_id == client.client_id)
                    .map(|t| t.issuer.clone())
            }),
        };
        match bound {
            Some(registered) if registered != issuer => {
                Err(OAuthError::CredentialsForOtherIssuer {
                    client_id: client.client_id.clone(),
                    registered,
                    current: issuer.to_owned(),
                })
            }
            _ => {
                st.bindings
                    .insert(client.client_id.clone(), issuer.to_owned());
                Ok(())
            }
        }
    }

    pub(super) async fn stored_registration(&self, issuer: &str) -> Option<Registration> {
        if let Some(r) = lock(&self.inner.registrations).get(issuer) {
            return Some(r.clone());
        }
        let store = self.inner.config.store.clone()?;
        let key = issuer.to_owned();
        match blocking(move || store.registration(&key)).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the token store");
                None
            }
        }
    }

    async fn save_registration(&self, issuer: &str, reg: &Registration) {
        lock(&self.inner.registrations).insert(issuer.to_owned(), reg.clone());
        if let Some(store) = self.inner.config.store.clone() {
            let (issuer, reg) = (issuer.to_owned(), reg.clone());
            if let Err(e) = blocking(move || store.save_registration(&issuer, &reg)).await {
                tracing::warn!(error = %e, "cannot save the client registration");
            }
        }
    }

    /// A dynamic registration the server no longer knows is forgotten, so
    /// the next attempt registers again.
    pub(super) async fn forget_rejected_registration(
        &self,
        error: &OAuthError,
        client: &ClientIdentity,
        issuer: &str,
    ) {
        let rejected =
            matches!(error, OAuthError::Refused { error, .. } if error == "invalid_client");
        if !rejected || client.source != IdentitySource::Dynamic {
            return;
        }
        lock(&self.inner.registrations).remove(issuer);
        if let Some(store) = self.inner.config.store.clone() {
            let issuer = issuer.to_owned();
            let _ = blocking(move || store.remove_registration(&issuer)).await;
        }
    }
}

fn dynamic_identity(reg: Registration) -> ClientIdentity {
    ClientIdentity {
        client_id: reg.client_id,
        secret: reg.client_secret,
        method: reg.method,
        key: None,
        source: IdentitySource::Dynamic,
    }
}

/// Configured credentials as the identity at `metadata`'s token endpoint
/// (the authentication method chosen among those it supports).
pub(super) fn pre_registered_identity(
    client: &PreRegisteredClient,
    metadata: &AuthorizationServerMetadata,
) -> Result<ClientIdentity, OAuthError> {
    Ok(ClientIdentity {
        client_id: client.client_id.clone(),
        secret: client.client_secret.clone(),
        method: registration::method_for(
            client,
            metadata.token_endpoint_auth_methods_supported.as_deref(),
        )?,
        key: client.signing_key.clone(),
        source: IdentitySource::PreRegistered,
    })
}
