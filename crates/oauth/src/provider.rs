//! [`OAuthProvider`]: the OAuth 2.1 client of one MCP server, plugged into
//! the HTTP transport through its [`AuthProvider`] hook.
//!
//! The transport asks it for the `Authorization` header before every
//! request and tells it about every 401/403. On a 401 it re-reads the
//! Protected Resource Metadata (so a change of authorization server is
//! noticed), refreshes the token once if it can, and otherwise runs a full
//! authorization; on a 403 `insufficient_scope` it re-authorizes for the
//! union of the scopes it had and the ones challenged, a bounded number of
//! times per operation. Only one flow runs at a time; requests that were
//! refused while it ran simply retry with its result.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use switchboard_wire::{meta, version};
use tokio::sync::Mutex as AsyncMutex;

use super::assertion::{self, AssertionSource, JWT_BEARER};
use super::challenge::BearerChallenge;
use super::config::{EnterpriseGrant, Grant, JwtBearerGrant, OAuthConfig};
use super::discovery::{self, AuthorizationServerMetadata, ProtectedResourceMetadata};
use super::dpop::{DpopKey, USE_DPOP_NONCE};
use super::error::OAuthError;
use super::flow::{self, PendingAuthorization};
use super::http::OAuthHttp;
use super::registration::{self, PreRegisteredClient, Registration, RegistrationRequest};
use super::secret::{Pkce, Secret, random_b64};
use super::store::StoredLogin;
use super::token::{
    self, ClientIdentity, IdentitySource, TokenEndpointAuthMethod, TokenRequest, TokenSet,
};
use super::uri::HttpUrl;
use super::user_agent::AuthorizationRequest;
use switchboard_client::transport::BoxFuture;
use switchboard_client::transport::http::{AuthChallenge, AuthError, AuthProvider, AuthRetry};

/// A token this close to expiry is refreshed before it is sent.
const EXPIRY_SKEW_SECS: u64 = 30;
/// Step-up attempts for one operation are counted over this window.
const STEP_UP_WINDOW: Duration = Duration::from_secs(600);

/// The OAuth 2.1 client of one MCP server, for the HTTP transport's
/// [`AuthProvider`] hook.
///
/// It supplies `Authorization: Bearer …` for every request. On a 401 it
/// re-reads the Protected Resource Metadata (a change of authorization
/// server is noticed there), refreshes the token once if it can, and
/// otherwise authorizes anew; on a 403 `insufficient_scope` it
/// re-authorizes for the union of the scopes held and challenged, at most
/// [`OAuthConfig::max_step_ups`](super::OAuthConfig::max_step_ups) times per
/// operation. One flow runs at a time; requests refused meanwhile retry with
/// its result.
///
/// Cheap to clone; clones share tokens and the flow lock.
#[derive(Clone)]
pub struct OAuthProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuthConfig,
    /// The MCP endpoint.
    server: HttpUrl,
    /// Its canonical form: the token store key and the fallback `resource`.
    server_key: String,
    http: OAuthHttp,
    /// The token in use (read on every request without the flow lock).
    token: RwLock<Option<Arc<TokenSet>>>,
    /// Bumped whenever the token changes, so requests refused while a flow
    /// ran know to just retry.
    generation: AtomicU64,
    /// Set when a login is needed and no user agent can do it.
    needs_login: AtomicBool,
    /// The token store has been read.
    loaded: AtomicBool,
    /// Dynamic registrations made in this process (when there is no store).
    registrations: Mutex<HashMap<String, Registration>>,
    /// The last DPoP nonce the resource server supplied (RFC 9449 §9).
    rs_nonce: Mutex<Option<String>>,
    flow: AsyncMutex<FlowState>,
}

#[derive(Default)]
struct FlowState {
    /// The last Protected Resource Metadata read.
    prm: Option<ProtectedResourceMetadata>,
    /// Validated authorization server metadata, by issuer.
    metadata: HashMap<String, AuthorizationServerMetadata>,
    /// The current token came from a refresh made for a 401: another 401
    /// means a full authorization, not another refresh.
    refreshed_for_challenge: bool,
    /// Step-ups per (operation, challenged scopes): count and first try.
    step_ups: HashMap<(String, Vec<String>), (usize, Instant)>,
    /// Pre-registered clients without an issuer, bound on first use.
    bindings: HashMap<String, String>,
}

/// What is known about the credentials a refused request carried.
#[derive(Clone, Copy)]
enum Sent<'a> {
    Unknown,
    Known(Option<&'a str>),
}

/// The outcome of a login.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginReport {
    /// The authorization server that issued the tokens.
    pub issuer: String,
    /// The client id used.
    pub client_id: String,
    /// How the client id was obtained.
    pub client_source: IdentitySource,
    /// The scopes the token carries.
    pub scopes: Vec<String>,
    /// When the access token expires (seconds since the epoch), if known.
    pub expires_at: Option<u64>,
    /// Whether a refresh token was issued.
    pub has_refresh_token: bool,
}

impl fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let has_token = read(&self.inner.token).is_some();
        f.debug_struct("OAuthProvider")
            .field("server", &self.inner.config.server)
            .field("url", &self.inner.server_key)
            .field("has_token", &has_token)
            .field("needs_login", &self.needs_login())
            .finish_non_exhaustive()
    }
}

impl OAuthProvider {
    /// Builds the provider. Nothing is fetched until it is first asked for
    /// a header or told about a challenge.
    ///
    /// # Errors
    /// [`OAuthError::Config`] for a server URL that is not `http(s)`, a
    /// client metadata URL that is not HTTPS with a path, or a TLS set-up
    /// failure.
    pub fn new(config: OAuthConfig) -> Result<OAuthProvider, OAuthError> {
        let server = HttpUrl::parse(&config.url)
            .map_err(|e| OAuthError::Config(format!("server URL {:?}: {e}", config.url)))?;
        if server.has_fragment() {
            return Err(OAuthError::Config(format!(
                "server URL {:?} must not have a fragment",
                config.url
            )));
        }
        if let Some(url) = &config.client_metadata_url {
            registration::check_metadata_document_url(url)?;
        }
        let http = OAuthHttp::new(
            config.tls.clone(),
            config.timeout,
            config.allow_insecure_http,
        )?;
        let server_key = server.canonical();
        Ok(OAuthProvider {
            inner: Arc::new(Inner {
                config,
                server,
                server_key,
                http,
                token: RwLock::new(None),
                generation: AtomicU64::new(0),
                needs_login: AtomicBool::new(false),
                loaded: AtomicBool::new(false),
                registrations: Mutex::new(HashMap::new()),
                rs_nonce: Mutex::new(None),
                flow: AsyncMutex::new(FlowState::default()),
            }),
        })
    }

    /// The server's alias.
    pub fn server(&self) -> &str {
        &self.inner.config.server
    }

    /// Whether the last attempt ended in "a person has to log in" (no user
    /// agent, no usable token). The host reports the server as
    /// "needs login: run `switchboard auth login ALIAS`".
    pub fn needs_login(&self) -> bool {
        self.inner.needs_login.load(Ordering::Acquire)
    }

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
        Ok(LoginReport {
            issuer: tokens.issuer.clone(),
            client_id: tokens.client_id.clone(),
            client_source: source,
            scopes: tokens.scopes(),
            expires_at: tokens.expires_at,
            has_refresh_token: tokens.refresh_token.is_some(),
        })
    }

    /// Logs in at an enterprise identity provider (what `switchboard auth
    /// login --idp NAME` does): an OpenID Connect authorization-code login
    /// with PKCE at the issuer this provider was built for (its metadata,
    /// OAuth or OpenID Connect, says where), through the user agent, as the
    /// pre-registered client. The tokens, with the ID token the
    /// enterprise-managed grant exchanges, are kept in the token store
    /// under [`idp_login_key`](super::store::idp_login_key)`(name)`.
    ///
    /// # Errors
    /// Any [`OAuthError`]; [`OAuthError::InvalidDocument`] when the token
    /// response carries no ID token.
    pub async fn login_at_identity_provider(
        &self,
        name: &str,
        scopes: &[String],
    ) -> Result<LoginReport, OAuthError> {
        let Some(agent) = self.inner.config.user_agent.clone() else {
            return Err(OAuthError::NeedsLogin {
                server: self.inner.config.server.clone(),
            });
        };
        let mut st = self.inner.flow.lock().await;
        let issuer = self.inner.config.url.clone();
        let metadata = self.metadata(&mut st, &issuer).await?;
        let issuer = metadata.issuer.clone();
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
        let scopes = flow::union(&["openid".to_owned()], scopes);
        let scopes = flow::with_offline_access(scopes, &metadata, self.inner.config.refresh_tokens);
        let pending = agent.begin(None).await?;
        let redirect_uri = pending.redirect_uri().to_owned();
        let client = self
            .identity(&mut st, &metadata, Some(&redirect_uri), &scopes)
            .await?;
        let pkce = Pkce::generate().map_err(OAuthError::Key)?;
        let state = random_b64(32).map_err(OAuthError::Key)?;
        let record = PendingAuthorization {
            issuer: issuer.clone(),
            iss_supported: metadata.authorization_response_iss_parameter_supported,
            state: state.clone(),
            verifier: pkce.verifier,
            redirect_uri,
        };
        let scope = scopes.join(" ");
        // No `resource`: the login is for the identity provider itself.
        let params = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", record.redirect_uri.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            ("scope", scope.as_str()),
        ];
        let url = flow::authorization_url(&authorization_endpoint, &params);
        tracing::info!(idp = %name, issuer = %issuer, "logging in at the identity provider");
        let response = pending
            .complete(AuthorizationRequest {
                url,
                state: state.clone(),
            })
            .await?;
        let code = flow::validate_response(&response, &record)?;
        let request = TokenRequest {
            endpoint: &token_endpoint,
            issuer: &issuer,
            client: &client,
            resource: &issuer,
            requested_scope: &scopes,
            dpop: None,
        };
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.expose().to_owned()),
            ("redirect_uri", record.redirect_uri.clone()),
            ("code_verifier", record.verifier.expose().to_owned()),
        ];
        let tokens = token::request(&self.inner.http, &request, form, None).await?;
        if tokens.id_token.is_none() {
            return Err(OAuthError::InvalidDocument {
                what: "token response",
                url: super::http::shown(&token_endpoint),
                reason: "it has no id_token (is \"openid\" a scope of this client?)".into(),
            });
        }
        if let Some(store) = self.inner.config.store.clone() {
            let key = super::store::idp_login_key(name);
            let saved = tokens.clone();
            blocking(move || store.save_tokens(&key, &saved)).await?;
        }
        Ok(LoginReport {
            issuer: tokens.issuer.clone(),
            client_id: tokens.client_id.clone(),
            client_source: client.source,
            scopes: tokens.scopes(),
            expires_at: tokens.expires_at,
            has_refresh_token: tokens.refresh_token.is_some(),
        })
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

    /// The header value for the next request, refreshing an expired token
    /// first when possible.
    ///
    /// # Errors
    /// Never for a missing token (the request goes without one and the
    /// server's 401 starts a flow); only when the flow lock is poisoned.
    pub async fn authorization_header(&self) -> Result<Option<String>, OAuthError> {
        let mut token = self.current();
        // The store is read once; after that a missing token never waits
        // for the flow lock (a login may be in progress for minutes).
        if token.is_none() && !self.inner.loaded.load(Ordering::Acquire) {
            let mut st = self.inner.flow.lock().await;
            self.ensure_loaded(&mut st).await;
            token = self.current();
        }
        let Some(mut t) = token else {
            return Ok(None);
        };
        if t.is_expired(EXPIRY_SKEW_SECS) {
            let generation = self.inner.generation.load(Ordering::Acquire);
            let mut st = self.inner.flow.lock().await;
            if self.inner.generation.load(Ordering::Acquire) == generation {
                match self.refresh(&mut st, &t).await {
                    Ok(fresh) => {
                        st.refreshed_for_challenge = false;
                        t = fresh;
                    }
                    Err(e) => {
                        tracing::info!(server = %self.inner.config.server, error = %e, "the access token expired and could not be refreshed");
                        // A refused refresh token is dead; an unreachable
                        // authorization server is not a reason to forget it.
                        if matches!(e, OAuthError::Refused { .. }) {
                            self.drop_token(&t).await;
                        }
                        return Ok(None);
                    }
                }
            } else if let Some(current) = self.current() {
                t = current;
            } else {
                return Ok(None);
            }
        }
        Ok(Some(header_value(&t)))
    }

    /// The `DPoP` proof header for a request to the resource server
    /// carrying `authorization` (RFC 9449 §7): `None` unless that is the
    /// current DPoP-bound token. A fresh proof (new `jti`) every time, with
    /// `ath` and the resource server's latest nonce.
    ///
    /// # Errors
    /// [`OAuthError::Key`] when the stored key is unusable or signing fails.
    pub fn dpop_proof(
        &self,
        method: &str,
        url: &str,
        authorization: Option<&str>,
    ) -> Result<Option<String>, OAuthError> {
        let Some(sent) = authorization.and_then(|a| a.strip_prefix("DPoP ")) else {
            return Ok(None);
        };
        let Some(t) = self.current() else {
            return Ok(None);
        };
        let Some(stored) = t
            .dpop_key
            .as_ref()
            .filter(|_| t.access_token.expose() == sent)
        else {
            return Ok(None);
        };
        let key = DpopKey::from_stored(stored)?;
        let nonce = lock(&self.inner.rs_nonce).clone();
        key.proof(method, url, Some(sent), nonce.as_deref())
            .map(Some)
    }

    /// How this server's tokens are obtained and presented, for
    /// `switchboard auth status`: the grant, and "DPoP-bound" or "bearer"
    /// for the token held.
    pub fn method(&self) -> String {
        let grant = self.inner.config.grant.describe();
        match self.current() {
            Some(t) if t.dpop_key.is_some() => format!("{grant}, DPoP-bound"),
            Some(_) => format!("{grant}, bearer"),
            None => grant.to_owned(),
        }
    }

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

    // -- Flows.

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

    /// Obtains tokens from `issuer` for `scopes` with the configured grant,
    /// and installs them.
    async fn authorize(
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

    async fn authorization_code(
        &self,
        st: &mut FlowState,
        prm: &ProtectedResourceMetadata,
        metadata: &AuthorizationServerMetadata,
        scopes: Vec<String>,
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
        let resource = prm.resource.clone();
        let scope = scopes.join(" ");
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", record.redirect_uri.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            // AUTH-C-16: always, whether or not the server supports it.
            ("resource", resource.as_str()),
        ];
        if !scope.is_empty() {
            params.push(("scope", scope.as_str()));
        }
        let url = flow::authorization_url(&authorization_endpoint, &params);
        tracing::info!(server = %self.inner.config.server, issuer = %issuer, "requesting authorization");
        let response = pending
            .complete(AuthorizationRequest {
                url,
                state: state.clone(),
            })
            .await?;
        let code = flow::validate_response(&response, &record)?;
        let dpop = self.dpop_key_for(metadata)?;
        let request = TokenRequest {
            endpoint: &token_endpoint,
            issuer: &issuer,
            client: &client,
            resource: &resource,
            requested_scope: &scopes,
            dpop: dpop.as_ref(),
        };
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.expose().to_owned()),
            ("redirect_uri", record.redirect_uri.clone()),
            ("code_verifier", record.verifier.expose().to_owned()),
            ("resource", resource.clone()),
        ];
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
        assertion: &super::secret::Secret,
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
        let identity = ClientIdentity {
            client_id: client.client_id.clone(),
            secret: client.client_secret.clone(),
            method: registration::method_for(
                client,
                metadata.token_endpoint_auth_methods_supported.as_deref(),
            )?,
            key: client.signing_key.clone(),
            source: IdentitySource::PreRegistered,
        };
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

    /// Uses the refresh token of `tokens` (same client, same resource) and
    /// installs the result.
    async fn refresh(
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

    async fn revoke(&self, st: &mut FlowState, tokens: &TokenSet) -> Result<(), OAuthError> {
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

    /// The scopes a new authorization starts from: the configured ones
    /// with the challenge's, else the spec's choice.
    fn starting_scopes(
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

    // -- Discovery and identity.

    /// Reads the Protected Resource Metadata anew.
    async fn discover(
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
    async fn metadata(
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

    fn endpoint(
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
    async fn identity(
        &self,
        st: &mut FlowState,
        metadata: &AuthorizationServerMetadata,
        redirect_uri: Option<&str>,
        scopes: &[String],
    ) -> Result<ClientIdentity, OAuthError> {
        let issuer = &metadata.issuer;
        if let Some(client) = self.pre_registered_for(st, issuer)? {
            return Ok(ClientIdentity {
                client_id: client.client_id.clone(),
                secret: client.client_secret.clone(),
                method: registration::method_for(
                    &client,
                    metadata.token_endpoint_auth_methods_supported.as_deref(),
                )?,
                key: client.signing_key.clone(),
                source: IdentitySource::PreRegistered,
            });
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
    async fn identity_for_refresh(
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
                return Ok(ClientIdentity {
                    client_id: client.client_id.clone(),
                    secret: client.client_secret.clone(),
                    method: registration::method_for(
                        client,
                        metadata.token_endpoint_auth_methods_supported.as_deref(),
                    )?,
                    key: client.signing_key.clone(),
                    source: IdentitySource::PreRegistered,
                });
            }
        }
        if let Ok(Some(client)) = self.pre_registered_for(st, &metadata.issuer) {
            if client.client_id == client_id {
                return Ok(ClientIdentity {
                    client_id: client.client_id.clone(),
                    secret: client.client_secret.clone(),
                    method: registration::method_for(
                        &client,
                        metadata.token_endpoint_auth_methods_supported.as_deref(),
                    )?,
                    key: client.signing_key.clone(),
                    source: IdentitySource::PreRegistered,
                });
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
    fn check_binding(
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

    async fn stored_registration(&self, issuer: &str) -> Option<Registration> {
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
    async fn forget_rejected_registration(
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

    // -- Token bookkeeping.

    fn current(&self) -> Option<Arc<TokenSet>> {
        read(&self.inner.token).clone()
    }

    fn set_token(&self, token: Option<Arc<TokenSet>>) {
        *self.inner.token.write().unwrap_or_else(|e| e.into_inner()) = token;
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
    }

    async fn install(&self, tokens: &Arc<TokenSet>) {
        self.set_token(Some(tokens.clone()));
        if let Some(store) = self.inner.config.store.clone() {
            let key = self.inner.server_key.clone();
            let tokens = TokenSet::clone(tokens);
            if let Err(e) = blocking(move || store.save_tokens(&key, &tokens)).await {
                tracing::warn!(error = %e, "cannot save the tokens; they last for this process only");
            }
        }
    }

    async fn drop_token(&self, tokens: &TokenSet) {
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

    async fn ensure_loaded(&self, _locked: &mut FlowState) {
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

impl AuthProvider for OAuthProvider {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            self.authorization_header()
                .await
                .map_err(|e| AuthError(e.to_string()))
        })
    }

    fn proof<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
        authorization: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            self.dpop_proof(method, url, authorization)
                .map_err(|e| AuthError(e.to_string()))
        })
    }

    fn on_challenge<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> BoxFuture<'a, Result<AuthRetry, AuthError>> {
        Box::pin(async move {
            // The transport says which header the refused request carried:
            // a refusal of a token replaced since is only retried.
            let sent = challenge.sent_authorization.as_deref();
            self.handle_challenge_for(challenge, sent).await.map_err(|e| {
                tracing::warn!(server = %self.inner.config.server, error = %e, "authorization failed");
                AuthError(e.to_string())
            })
        })
    }
}

/// The authorization server to use: the first one listed (RFC 9728 §7.6
/// leaves the choice to the client).
fn select_issuer(prm: &ProtectedResourceMetadata) -> String {
    prm.authorization_servers[0].clone()
}

/// Whether the challenges parse and none of them is `Bearer` or `DPoP`.
fn other_scheme_only(values: &[String]) -> bool {
    let mut schemes = values
        .iter()
        .filter_map(|v| super::challenge::parse(v).ok())
        .flatten()
        .peekable();
    schemes.peek().is_some() && schemes.all(|c| !c.is_scheme("Bearer") && !c.is_scheme("DPoP"))
}

/// The `Authorization` value for `t`: `DPoP` for a DPoP-bound token
/// (RFC 9449 §7.1), else `Bearer`.
fn header_value(t: &TokenSet) -> String {
    let scheme = if t.dpop_key.is_some() {
        "DPoP"
    } else {
        "Bearer"
    };
    format!("{scheme} {}", t.access_token.expose())
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

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs store I/O off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, OAuthError> + Send + 'static,
) -> Result<T, OAuthError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(OAuthError::Config(format!(
            "a token store task failed: {e}"
        )))
    })
}

/// A grant that needs no user: its `grant_type`, its name in messages,
/// and its own form fields.
struct DirectGrant {
    grant_type: &'static str,
    name: &'static str,
    extra: Vec<(&'static str, String)>,
}
