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
//!
//! # Layout
//! - this file: the provider, its state, the request-time API (the header,
//!   the DPoP proof) and the transport hook;
//! - `login`: `switchboard auth login`, `status`, `logout` and the probe;
//! - `recovery`: what a 401 or a 403 `insufficient_scope` sets off;
//! - `grants`: obtaining tokens with each grant (the authorization-code
//!   flow, written once for the MCP server and for an identity provider);
//! - `tokens`: refresh, revocation and the token in use;
//! - `identity`: discovery, authorization server metadata and the client
//!   identity at each issuer.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;

use crate::config::OAuthConfig;
use crate::discovery::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::dpop::DpopKey;
use crate::error::OAuthError;
use crate::http::OAuthHttp;
use crate::registration::{self, Registration};
use crate::token::{IdentitySource, TokenSet};
use crate::uri::HttpUrl;
use switchboard_client::transport::BoxFuture;
use switchboard_client::transport::http::{
    AuthChallenge, AuthProvider, AuthProviderError, AuthRetry,
};
use switchboard_wire::shared::lock;

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
    /// The token store key: its canonical form, with the principal for a
    /// principal's login.
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

impl LoginReport {
    /// The report of a login that obtained `tokens` as a client from
    /// `source`.
    fn of(tokens: &TokenSet, source: IdentitySource) -> LoginReport {
        LoginReport {
            issuer: tokens.issuer.clone(),
            client_id: tokens.client_id.clone(),
            client_source: source,
            scopes: tokens.scopes(),
            expires_at: tokens.expires_at,
            has_refresh_token: tokens.refresh_token.is_some(),
        }
    }
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

mod exchange;
mod grants;
mod identity;
mod login;
mod recovery;
mod tokens;

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
        let server_key = match &config.principal {
            Some(name) => crate::store::principal_login_key(&server.canonical(), name),
            None => server.canonical(),
        };
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

    /// The header value for the next request, refreshing an expired token
    /// first when possible.
    ///
    /// # Errors
    /// Never for a missing token (the request goes without one and the
    /// server's 401 starts a flow); only when the flow lock is poisoned.
    pub async fn authorization_header(&self) -> Result<Option<String>, OAuthError> {
        // A fresh token, or none once the store is read: nothing to wait
        // for, and the same answer the transport takes without asking.
        if let Some(known) = self.authorization_header_now() {
            return Ok(known);
        }
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

    /// What [`OAuthProvider::authorization_header`] gives when it need not
    /// wait: a token that is not about to expire, or no token once the
    /// store has been read (`Some(None)`). `None` for a token due for a
    /// refresh and before the store is read.
    pub fn authorization_header_now(&self) -> Option<Option<String>> {
        match self.current() {
            Some(t) if !t.is_expired(EXPIRY_SKEW_SECS) => Some(Some(header_value(&t))),
            Some(_) => None,
            None if self.inner.loaded.load(Ordering::Acquire) => Some(None),
            None => None,
        }
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
}

impl AuthProvider for OAuthProvider {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, AuthProviderError>> {
        Box::pin(async move {
            self.authorization_header()
                .await
                .map_err(|e| AuthProviderError(e.to_string()))
        })
    }

    fn authorization_now(&self) -> Option<Result<Option<String>, AuthProviderError>> {
        self.authorization_header_now().map(Ok)
    }

    fn proof<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
        authorization: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthProviderError>> {
        Box::pin(async move {
            self.dpop_proof(method, url, authorization)
                .map_err(|e| AuthProviderError(e.to_string()))
        })
    }

    fn on_challenge<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> BoxFuture<'a, Result<AuthRetry, AuthProviderError>> {
        Box::pin(async move {
            // The transport says which header the refused request carried:
            // a refusal of a token replaced since is only retried.
            let sent = challenge.sent_authorization.as_deref();
            self.handle_challenge_for(challenge, sent).await.map_err(|e| {
                tracing::warn!(server = %self.inner.config.server, error = %e, "authorization failed");
                AuthProviderError(e.to_string())
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
        .filter_map(|v| crate::challenge::parse(v).ok())
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

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
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
