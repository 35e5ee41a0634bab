//! [`AuthServer`]: an OAuth 2.1 authorization server that approves every
//! valid request at once (no login page), configurable per test to behave
//! like the servers Switchboard meets, good and bad.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use http::{Method, StatusCode};
use ring::rand::{SecureRandom as _, SystemRandom};
use serde_json::{Value, json};

use crate::http::{self as h, Reply, Running, Seen};
use crate::jwt::{self, PublicKey, Signer};

mod exchange;

/// Where the metadata document is served, relative to the issuer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetadataAt {
    /// RFC 8414: `/.well-known/oauth-authorization-server{path}`.
    #[default]
    OAuth,
    /// OpenID Connect, path inserted: `/.well-known/openid-configuration{path}`.
    OpenIdInserted,
    /// OpenID Connect, path appended: `{path}/.well-known/openid-configuration`.
    OpenIdAppended,
}

/// What the authorization response carries as `iss`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum IssMode {
    /// The issuer.
    #[default]
    Correct,
    /// Nothing.
    Omit,
    /// This exact string (a wrong or "normalised" issuer).
    Value(String),
}

/// How the test authorization server behaves.
#[derive(Clone, Debug)]
pub struct AuthServerConfig {
    /// Path of the issuer (`""` or e.g. `/tenant1`).
    pub issuer_path: String,
    /// Where the metadata is served.
    pub metadata_at: MetadataAt,
    /// An `issuer` to advertise instead of the real one.
    pub metadata_issuer: Option<String>,
    /// `code_challenge_methods_supported` (`None`: omitted).
    pub code_challenge_methods: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`.
    pub cimd_supported: bool,
    /// Client ID Metadata Documents the server "fetches" (by `client_id`).
    pub cimd_documents: Vec<Value>,
    /// Whether `registration_endpoint` exists.
    pub registration: bool,
    /// Registration without `application_type` is refused.
    pub require_application_type: bool,
    /// `token_endpoint_auth_methods_supported`.
    pub token_auth_methods: Vec<String>,
    /// `authorization_response_iss_parameter_supported` (`None`: omitted).
    pub iss_advertised: Option<bool>,
    /// What the redirect carries as `iss`.
    pub iss: IssMode,
    /// `scopes_supported` (`None`: omitted).
    pub scopes_supported: Option<Vec<String>>,
    /// Whether authorization code grants come with refresh tokens.
    pub refresh_tokens: bool,
    /// Whether a used refresh token is replaced by a new one.
    pub rotate_refresh_tokens: bool,
    /// Access token lifetime in seconds (`expires_in`).
    pub access_token_ttl: u64,
    /// Whether the client credentials grant is offered.
    pub client_credentials: bool,
    /// Whether `revocation_endpoint` exists.
    pub revocation: bool,
    /// The authorization endpoint answers `access_denied`.
    pub deny: bool,
    /// The authorization endpoint shows a login page instead of redirecting.
    pub interactive: bool,
    /// Scopes never granted, whatever is asked (a user who refuses them).
    pub withheld_scopes: Vec<String>,
    /// DPoP (RFC 9449): `dpop_signing_alg_values_supported: ["ES256"]`,
    /// and a token request with a valid proof gets a token bound to its
    /// key (`cnf.jkt`, `token_type: DPoP`); a bad proof is refused.
    pub dpop: bool,
    /// A nonce the token endpoint insists on in DPoP proofs
    /// (`use_dpop_nonce` until it is there).
    pub dpop_nonce: Option<String>,
    /// The JWT-bearer grant (RFC 7523) with assertions signed by one of
    /// these keys (a workload issuer, or an identity provider's ID-JAGs),
    /// addressed to this issuer, unexpired.
    pub assertion_keys: Vec<PublicKey>,
    /// Token exchange (RFC 8693): as an enterprise identity provider, of
    /// an ID token it signed ([`AuthServer::mint_id_token`]) for an ID-JAG
    /// signed with the same key; and of an access token it issued for
    /// another resource's access token for the same subject (`act` names
    /// the exchanging client).
    pub token_exchange: bool,
    /// The JWK set endpoint answers 503 (an issuer outage, as resource
    /// servers see it); the request is still recorded.
    pub jwks_down: bool,
}

impl Default for AuthServerConfig {
    fn default() -> Self {
        AuthServerConfig {
            issuer_path: String::new(),
            metadata_at: MetadataAt::OAuth,
            metadata_issuer: None,
            code_challenge_methods: Some(vec!["S256".into()]),
            cimd_supported: false,
            cimd_documents: Vec::new(),
            registration: true,
            require_application_type: true,
            token_auth_methods: vec![
                "client_secret_basic".into(),
                "client_secret_post".into(),
                "none".into(),
            ],
            iss_advertised: Some(true),
            iss: IssMode::Correct,
            scopes_supported: None,
            refresh_tokens: true,
            rotate_refresh_tokens: true,
            access_token_ttl: 3600,
            client_credentials: true,
            revocation: true,
            deny: false,
            interactive: false,
            withheld_scopes: Vec::new(),
            dpop: false,
            dpop_nonce: None,
            assertion_keys: Vec::new(),
            token_exchange: false,
            jwks_down: false,
        }
    }
}

/// A client the authorization server knows.
#[derive(Clone, Debug)]
pub struct TestClient {
    /// The client id.
    pub client_id: String,
    /// The secret, for `client_secret_*`.
    pub secret: Option<String>,
    /// `token_endpoint_auth_method`.
    pub method: String,
    /// Registered redirect URIs (loopback ports are flexible, RFC 8252).
    pub redirect_uris: Vec<String>,
    /// The key for `private_key_jwt`.
    pub jwt_key: Option<PublicKey>,
}

impl TestClient {
    /// A confidential client using `client_secret_basic`.
    pub fn basic(id: &str, secret: &str, redirect_uris: &[&str]) -> TestClient {
        TestClient {
            client_id: id.into(),
            secret: Some(secret.into()),
            method: "client_secret_basic".into(),
            redirect_uris: redirect_uris.iter().map(|s| (*s).to_owned()).collect(),
            jwt_key: None,
        }
    }

    /// A client authenticating with `private_key_jwt`.
    pub fn jwt(id: &str, key: PublicKey) -> TestClient {
        TestClient {
            client_id: id.into(),
            secret: None,
            method: "private_key_jwt".into(),
            redirect_uris: Vec::new(),
            jwt_key: Some(key),
        }
    }
}

struct CodeGrant {
    client_id: String,
    /// Who logged in at the authorization endpoint.
    subject: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
    scope: String,
}

struct RefreshGrant {
    client_id: String,
    subject: String,
    resource: String,
    scope: String,
}

struct State {
    config: AuthServerConfig,
    clients: HashMap<String, TestClient>,
    codes: HashMap<String, CodeGrant>,
    refresh: HashMap<String, RefreshGrant>,
    assertion_ids: HashSet<String>,
    requests: Vec<Seen>,
    issued: usize,
    next_client: usize,
    /// Who is logged in at the authorization endpoint (the `sub` of the
    /// tokens its codes give); "user-1" unless a test says otherwise.
    user: String,
}

struct Shared {
    base: String,
    /// The key tokens are signed with now, then the retired ones, which
    /// stay published (the JWK set lists them all).
    keys: Mutex<Vec<Arc<Signer>>>,
    state: Mutex<State>,
}

impl Shared {
    /// The key tokens are signed with.
    fn signer(&self) -> Arc<Signer> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())[0].clone()
    }

    /// Every published key as a JWK set.
    fn jwks(&self) -> Value {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()})
    }

    /// Verifies one of this server's own tokens with any published key.
    fn verify(&self, token: &str) -> Result<(Value, Value), jwt::JwtError> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut last = "no key".to_owned();
        for key in keys {
            match jwt::verify(token, &key.verifying_key()) {
                Ok(v) => return Ok(v),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// A running test authorization server on `127.0.0.1`; stops on drop.
pub struct AuthServer {
    shared: Arc<Shared>,
    _running: Running,
}

impl std::fmt::Debug for AuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthServer")
            .field("issuer", &self.issuer())
            .finish_non_exhaustive()
    }
}

impl AuthServer {
    /// Starts a server with `config` on `127.0.0.1:0`.
    ///
    /// # Panics
    /// When the port cannot be bound (tests only).
    pub async fn start(config: AuthServerConfig) -> AuthServer {
        // The base URL needs the port, which needs the listener: bind
        // through a handler that waits for the shared state.
        let (running, shared) = h::serve_state(handle, |addr| Shared {
            base: format!("http://127.0.0.1:{}", addr.port()),
            keys: Mutex::new(vec![Arc::new(Signer::generate("as-key"))]),
            state: Mutex::new(State {
                config,
                clients: HashMap::new(),
                codes: HashMap::new(),
                refresh: HashMap::new(),
                assertion_ids: HashSet::new(),
                requests: Vec::new(),
                issued: 0,
                user: "user-1".into(),
                next_client: 0,
            }),
        })
        .await;
        AuthServer {
            shared,
            _running: running,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.shared.base.clone()
    }

    /// The issuer identifier (base URL plus issuer path).
    pub fn issuer(&self) -> String {
        issuer(&self.shared, &self.state().config)
    }

    /// The key resource servers verify access tokens with.
    pub fn public_key(&self) -> PublicKey {
        self.shared.signer().verifying_key()
    }

    /// Key rotation: `signer` (with a new `kid`) signs every token from now
    /// on and is published first in the JWK set; the keys before it stay
    /// published.
    pub fn rotate_key(&self, signer: Signer) {
        self.shared
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(0, Arc::new(signer));
    }

    /// The requests for the JWK set.
    pub fn jwks_requests(&self) -> Vec<Seen> {
        self.requests_to("/jwks")
    }

    /// An ID token for `subject`, issued to `client_id` (its `aud`),
    /// valid for `ttl_secs` (negative: already expired), for token
    /// exchange at this server as an identity provider.
    pub fn mint_id_token(&self, subject: &str, client_id: &str, ttl_secs: i64) -> String {
        let now = jwt::now();
        self.shared.signer().sign(&json!({
            "iss": self.issuer(), "sub": subject, "aud": client_id,
            "iat": now, "exp": now.saturating_add_signed(ttl_secs),
        }))
    }

    /// Who the person at the browser logs in as from now on: the `sub`
    /// of the tokens the next authorization codes give (default
    /// "user-1").
    pub fn log_in_as(&self, subject: &str) {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .user = subject.to_owned();
    }

    /// Adds a pre-registered client.
    pub fn add_client(&self, client: TestClient) {
        self.state()
            .clients
            .insert(client.client_id.clone(), client);
    }

    /// Changes the configuration of the running server.
    pub fn configure(&self, change: impl FnOnce(&mut AuthServerConfig)) {
        change(&mut self.state().config);
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state().requests.clone()
    }

    /// The requests to the authorization endpoint.
    pub fn authorization_requests(&self) -> Vec<Seen> {
        self.requests_to("/authorize")
    }

    /// The requests to the token endpoint.
    pub fn token_requests(&self) -> Vec<Seen> {
        self.requests_to("/token")
    }

    /// The requests to the registration endpoint.
    pub fn registration_requests(&self) -> Vec<Seen> {
        self.requests_to("/register")
    }

    /// The requests to the revocation endpoint.
    pub fn revocation_requests(&self) -> Vec<Seen> {
        self.requests_to("/revoke")
    }

    /// The metadata paths that were requested, in order.
    pub fn metadata_paths(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|s| s.path.contains("/.well-known/"))
            .map(|s| s.path)
            .collect()
    }

    /// Forgets every refresh token (as if revoked by an administrator).
    pub fn revoke_refresh_tokens(&self) {
        self.state().refresh.clear();
    }

    /// How many access tokens were issued.
    pub fn tokens_issued(&self) -> usize {
        self.state().issued
    }

    /// Signs `claims` with the key tokens are signed with now, the header's
    /// members replaced by `header`'s (a `null` member is left out): a
    /// token as odd as a resource-server test needs.
    pub fn sign_access_token(&self, header: &Value, claims: &Value) -> String {
        self.shared.signer().sign_with_header(header, claims)
    }

    /// Issues an access token directly (for resource-server tests).
    pub fn mint_access_token(&self, audience: &str, scope: &str, ttl_secs: i64) -> String {
        self.mint_access_token_for("user-1", audience, scope, ttl_secs)
    }

    /// Issues an access token for `subject` directly: a caller's token
    /// for a gateway, in tests of what the gateway passes on.
    pub fn mint_access_token_for(
        &self,
        subject: &str,
        audience: &str,
        scope: &str,
        ttl_secs: i64,
    ) -> String {
        let now = jwt::now();
        let exp = if ttl_secs >= 0 {
            now + ttl_secs.unsigned_abs()
        } else {
            now.saturating_sub(ttl_secs.unsigned_abs())
        };
        self.shared.signer().sign(&json!({
            "iss": self.issuer(), "aud": audience, "sub": subject, "client_id": "minted",
            "scope": scope, "iat": now, "exp": exp, "jti": random(12),
        }))
    }

    fn requests_to(&self, suffix: &str) -> Vec<Seen> {
        let path = format!("{}{suffix}", self.state().config.issuer_path);
        self.requests()
            .into_iter()
            .filter(|s| s.path == path)
            .collect()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn issuer(shared: &Shared, config: &AuthServerConfig) -> String {
    format!("{}{}", shared.base, config.issuer_path)
}

fn random(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    let _ = SystemRandom::new().fill(&mut buf);
    URL_SAFE_NO_PAD.encode(buf)
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Reply {
    h::json(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

fn handle(shared: &Shared, seen: Seen) -> Reply {
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    st.requests.push(seen.clone());
    let p = st.config.issuer_path.clone();
    let metadata_path = match st.config.metadata_at {
        MetadataAt::OAuth => format!("/.well-known/oauth-authorization-server{p}"),
        MetadataAt::OpenIdInserted => format!("/.well-known/openid-configuration{p}"),
        MetadataAt::OpenIdAppended => format!("{p}/.well-known/openid-configuration"),
    };
    if h::is(&seen, Method::GET, &metadata_path) {
        return metadata(shared, &st.config);
    }
    if h::is(&seen, Method::GET, &format!("{p}/authorize")) {
        return authorize(shared, &mut st, &seen);
    }
    if h::is(&seen, Method::POST, &format!("{p}/token")) {
        return token(shared, &mut st, &seen);
    }
    if h::is(&seen, Method::POST, &format!("{p}/register")) && st.config.registration {
        return register(&mut st, &seen);
    }
    if h::is(&seen, Method::POST, &format!("{p}/revoke")) && st.config.revocation {
        return revoke(shared, &mut st, &seen);
    }
    if h::is(&seen, Method::GET, &format!("{p}/jwks")) {
        if st.config.jwks_down {
            return h::json(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": "temporarily_unavailable"}),
            );
        }
        return h::json(StatusCode::OK, &shared.jwks());
    }
    if h::is(&seen, Method::POST, &format!("{p}/introspect")) {
        return introspect(shared, &mut st, &seen);
    }
    h::json(StatusCode::NOT_FOUND, &json!({"error": "not_found"}))
}

fn metadata(shared: &Shared, c: &AuthServerConfig) -> Reply {
    let iss = issuer(shared, c);
    let mut grants = vec!["authorization_code", "refresh_token"];
    if c.client_credentials {
        grants.push("client_credentials");
    }
    if !c.assertion_keys.is_empty() {
        grants.push(JWT_BEARER);
    }
    if c.token_exchange {
        grants.push(TOKEN_EXCHANGE);
    }
    let mut doc = json!({
        "issuer": c.metadata_issuer.clone().unwrap_or_else(|| iss.clone()),
        "authorization_endpoint": format!("{iss}/authorize"),
        "token_endpoint": format!("{iss}/token"),
        "jwks_uri": format!("{iss}/jwks"),
        "introspection_endpoint": format!("{iss}/introspect"),
        "response_types_supported": ["code"],
        "grant_types_supported": grants,
        "token_endpoint_auth_methods_supported": c.token_auth_methods,
        "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256", "EdDSA"],
    });
    if c.registration {
        doc["registration_endpoint"] = json!(format!("{iss}/register"));
    }
    if c.revocation {
        doc["revocation_endpoint"] = json!(format!("{iss}/revoke"));
    }
    if let Some(m) = &c.code_challenge_methods {
        doc["code_challenge_methods_supported"] = json!(m);
    }
    if let Some(s) = &c.scopes_supported {
        doc["scopes_supported"] = json!(s);
    }
    if let Some(b) = c.iss_advertised {
        doc["authorization_response_iss_parameter_supported"] = json!(b);
    }
    if c.cimd_supported {
        doc["client_id_metadata_document_supported"] = json!(true);
    }
    if c.dpop {
        doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    h::json(StatusCode::OK, &doc)
}

/// RFC 8252 §7.3: a loopback redirect matches whatever its port.
fn redirect_matches(registered: &str, presented: &str) -> bool {
    if registered == presented {
        return true;
    }
    let strip_port = |u: &str| -> Option<(String, String)> {
        let rest = u.strip_prefix("http://")?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = match authority.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => authority,
        };
        matches!(host, "127.0.0.1" | "[::1]" | "localhost")
            .then(|| (host.to_owned(), path.to_owned()))
    };
    matches!((strip_port(registered), strip_port(presented)), (Some(a), Some(b)) if a == b)
}

fn known_client(st: &State, client_id: &str) -> Option<TestClient> {
    if let Some(c) = st.clients.get(client_id) {
        return Some(c.clone());
    }
    if !st.config.cimd_supported || !client_id.starts_with("https://") {
        return None;
    }
    let doc = st
        .config
        .cimd_documents
        .iter()
        .find(|d| d["client_id"] == client_id)?;
    Some(TestClient {
        client_id: client_id.to_owned(),
        secret: None,
        method: "none".into(),
        redirect_uris: doc["redirect_uris"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        jwt_key: None,
    })
}

fn authorize(shared: &Shared, st: &mut State, seen: &Seen) -> Reply {
    if st.config.interactive {
        return h::text(StatusCode::OK, "<html>log in here</html>");
    }
    let q = |n: &str| seen.query_param(n).map(str::to_owned);
    let Some(client) = q("client_id").and_then(|id| known_client(st, &id)) else {
        return h::text(StatusCode::BAD_REQUEST, "unknown client");
    };
    let Some(redirect_uri) = q("redirect_uri") else {
        return h::text(StatusCode::BAD_REQUEST, "no redirect_uri");
    };
    if !client
        .redirect_uris
        .iter()
        .any(|r| redirect_matches(r, &redirect_uri))
    {
        return h::text(StatusCode::BAD_REQUEST, "redirect_uri not registered");
    }
    let iss = issuer(shared, &st.config);
    let mut params: Vec<(String, String)> = Vec::new();
    let outcome = if q("response_type").as_deref() != Some("code") {
        Err(("unsupported_response_type", "response_type must be code"))
    } else if q("code_challenge_method").as_deref() != Some("S256") || q("code_challenge").is_none()
    {
        Err(("invalid_request", "PKCE with S256 is required"))
    } else if q("resource").is_none() && !has_scope(q("scope").as_deref(), "openid") {
        // An OpenID Connect login (scope `openid`) is for this server
        // itself; anything else names the resource.
        Err(("invalid_target", "resource is required"))
    } else if st.config.deny {
        Err(("access_denied", "the user said no"))
    } else {
        Ok(())
    };
    match outcome {
        Ok(()) => {
            let code = random(24);
            st.codes.insert(
                code.clone(),
                CodeGrant {
                    client_id: client.client_id,
                    subject: st.user.clone(),
                    redirect_uri: redirect_uri.clone(),
                    challenge: q("code_challenge").unwrap_or_default(),
                    resource: q("resource").unwrap_or_default(),
                    scope: q("scope")
                        .unwrap_or_default()
                        .split(' ')
                        .filter(|s| {
                            !s.is_empty() && !st.config.withheld_scopes.iter().any(|w| w == s)
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                },
            );
            params.push(("code".into(), code));
        }
        Err((error, description)) => {
            params.push(("error".into(), error.into()));
            params.push(("error_description".into(), description.into()));
        }
    }
    if let Some(state) = q("state") {
        params.push(("state".into(), state));
    }
    match &st.config.iss {
        IssMode::Correct => params.push(("iss".into(), iss)),
        IssMode::Omit => {}
        IssMode::Value(v) => params.push(("iss".into(), v.clone())),
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in &params {
        query.append_pair(k, v);
    }
    let sep = if redirect_uri.contains('?') { '&' } else { '?' };
    h::redirect(&format!("{redirect_uri}{sep}{}", query.finish()))
}

fn register(st: &mut State, seen: &Seen) -> Reply {
    let Some(body) = seen.json.as_ref().filter(|b| b.is_object()) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "body must be a JSON object",
        );
    };
    let Some(redirect_uris) = body["redirect_uris"].as_array().filter(|a| !a.is_empty()) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect_uris is required",
        );
    };
    let redirect_uris: Vec<String> = redirect_uris
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let application_type = body["application_type"].as_str();
    if st.config.require_application_type && !matches!(application_type, Some("native" | "web")) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "application_type must be native or web",
        );
    }
    // OpenID Connect Registration: a web client may not use loopback URIs.
    if application_type == Some("web") && redirect_uris.iter().any(|u| u.starts_with("http://")) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "web clients need https redirect URIs",
        );
    }
    let supported = &st.config.token_auth_methods;
    let method = match body["token_endpoint_auth_method"].as_str() {
        Some(m) if supported.iter().any(|s| s == m) => m.to_owned(),
        Some(m) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                &format!("{m} is not supported"),
            );
        }
        None => supported
            .first()
            .cloned()
            .unwrap_or_else(|| "client_secret_basic".into()),
    };
    st.next_client += 1;
    let client_id = format!("dcr-{}-{}", random(6), st.next_client);
    let secret = (method != "none").then(|| random(18));
    st.clients.insert(
        client_id.clone(),
        TestClient {
            client_id: client_id.clone(),
            secret: secret.clone(),
            method: method.clone(),
            redirect_uris: redirect_uris.clone(),
            jwt_key: None,
        },
    );
    let mut reply = json!({
        "client_id": client_id,
        "token_endpoint_auth_method": method,
        "redirect_uris": redirect_uris,
        "grant_types": body["grant_types"],
        "client_id_issued_at": jwt::now(),
    });
    if let Some(secret) = secret {
        reply["client_secret"] = json!(secret);
        reply["client_secret_expires_at"] = json!(0);
    }
    h::json(StatusCode::CREATED, &reply)
}

/// Authenticates the client of a token or revocation request.
/// # Errors
/// Why the client is refused (an `invalid_client` description).
fn authenticate(shared: &Shared, st: &mut State, seen: &Seen) -> Result<TestClient, String> {
    let invalid = |why: &str| why.to_owned();
    if let Some(header) = seen.header("authorization") {
        let Some(b64) = header.strip_prefix("Basic ") else {
            return Err(invalid("unsupported Authorization scheme"));
        };
        let decoded = STANDARD
            .decode(b64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| invalid("bad Basic credentials"))?;
        let (id, secret) = decoded
            .split_once(':')
            .ok_or_else(|| invalid("Basic credentials without ':'"))?;
        let (id, secret) = (h::form_decode(id), h::form_decode(secret));
        let client = st
            .clients
            .get(&id)
            .cloned()
            .ok_or_else(|| invalid("unknown client"))?;
        if client.method != "client_secret_basic"
            || client.secret.as_deref() != Some(secret.as_str())
        {
            return Err(invalid("wrong client credentials or method"));
        }
        return Ok(client);
    }
    if seen.form_param("client_assertion_type")
        == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    {
        let assertion = seen.form_param("client_assertion").unwrap_or_default();
        let id = seen.form_param("client_id").unwrap_or_default().to_owned();
        let client = st
            .clients
            .get(&id)
            .cloned()
            .ok_or_else(|| invalid("unknown client"))?;
        let key = client
            .jwt_key
            .clone()
            .ok_or_else(|| invalid("the client has no key"))?;
        let (_, claims) =
            jwt::verify(assertion, &key).map_err(|e| invalid(&format!("assertion: {e}")))?;
        let iss = issuer(shared, &st.config);
        if claims["iss"] != id.as_str() || claims["sub"] != id.as_str() {
            return Err(invalid("assertion iss/sub must be the client id"));
        }
        if !jwt::has_audience(&claims, &iss) && !jwt::has_audience(&claims, &format!("{iss}/token"))
        {
            return Err(invalid("assertion audience is not this server"));
        }
        let jti = claims["jti"]
            .as_str()
            .ok_or_else(|| invalid("assertion without jti"))?;
        if !st.assertion_ids.insert(jti.to_owned()) {
            return Err(invalid("assertion replayed"));
        }
        return Ok(client);
    }
    let id = seen
        .form_param("client_id")
        .ok_or_else(|| invalid("no client authentication"))?;
    let client = known_client(st, id).ok_or_else(|| invalid("unknown client"))?;
    match seen.form_param("client_secret") {
        Some(secret)
            if client.method == "client_secret_post"
                && client.secret.as_deref() == Some(secret) =>
        {
            Ok(client)
        }
        Some(_) => Err(invalid("wrong client credentials or method")),
        None if client.method == "none" => Ok(client),
        None => Err(invalid("this client must authenticate")),
    }
}

fn token(shared: &Shared, st: &mut State, seen: &Seen) -> Reply {
    let client = match authenticate(shared, st, seen) {
        Ok(c) => c,
        Err(why) => return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", &why),
    };
    // RFC 9449 §5: a proof binds the token to its key.
    let jkt = match seen.header("dpop").filter(|_| st.config.dpop) {
        None => None,
        Some(proof) => {
            let endpoint = format!("{}/token", issuer(shared, &st.config));
            match jwt::verify_dpop_proof(proof, "POST", &endpoint) {
                Err(why) => {
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_dpop_proof", &why);
                }
                Ok((jkt, nonce)) => {
                    if let Some(wanted) = st.config.dpop_nonce.clone() {
                        if nonce.as_deref() != Some(wanted.as_str()) {
                            let mut r = oauth_error(
                                StatusCode::BAD_REQUEST,
                                "use_dpop_nonce",
                                "the proof needs the server's nonce",
                            );
                            if let Ok(v) = http::HeaderValue::from_str(&wanted) {
                                r.headers_mut().insert("dpop-nonce", v);
                            }
                            return r;
                        }
                    }
                    Some(jkt)
                }
            }
        }
    };
    let f = |n: &str| seen.form_param(n).map(str::to_owned);
    let bad_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
    // The user of a code or refresh token; other grants act for "user-1".
    let mut subject = String::from("user-1");
    let (resource, scope, refresh) = match f("grant_type").as_deref() {
        Some(JWT_BEARER) if !st.config.assertion_keys.is_empty() => {
            let assertion = f("assertion").unwrap_or_default();
            let iss = issuer(shared, &st.config);
            let mut why = String::from("no trusted key signed it");
            let mut accepted = false;
            for key in &st.config.assertion_keys {
                match jwt::verify(&assertion, key) {
                    Ok((_, claims)) => {
                        if !jwt::has_audience(&claims, &iss) {
                            return bad_grant("the assertion is not addressed to this server");
                        }
                        accepted = true;
                        break;
                    }
                    Err(e) if e == "bad signature" || e.starts_with("alg is") => why = e,
                    Err(e) => return bad_grant(&format!("the assertion is {e}")),
                }
            }
            if !accepted {
                return bad_grant(&format!("the assertion is not valid: {why}"));
            }
            (
                f("resource").unwrap_or_default(),
                f("scope").unwrap_or_default(),
                false,
            )
        }
        Some(TOKEN_EXCHANGE) if st.config.token_exchange => {
            return exchange(shared, st, seen, &client.client_id);
        }
        Some("authorization_code") => {
            let Some(grant) = f("code").and_then(|c| st.codes.remove(&c)) else {
                return bad_grant("unknown or used code");
            };
            if grant.client_id != client.client_id {
                return bad_grant("the code belongs to another client");
            }
            if f("redirect_uri").as_deref() != Some(grant.redirect_uri.as_str()) {
                return bad_grant("redirect_uri differs");
            }
            let verifier = f("code_verifier").unwrap_or_default();
            let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
            if URL_SAFE_NO_PAD.encode(digest.as_ref()) != grant.challenge {
                return bad_grant("PKCE verification failed");
            }
            if f("resource").is_some_and(|r| r != grant.resource) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "resource differs",
                );
            }
            subject = grant.subject;
            (grant.resource, grant.scope, st.config.refresh_tokens)
        }
        Some("refresh_token") => {
            let Some(token) = f("refresh_token") else {
                return bad_grant("no refresh_token");
            };
            let Some(grant) = st.refresh.get(&token) else {
                return bad_grant("unknown or revoked refresh token");
            };
            if grant.client_id != client.client_id {
                return bad_grant("the refresh token belongs to another client");
            }
            if f("resource").is_some_and(|r| r != grant.resource) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "resource differs",
                );
            }
            let (resource, scope) = (grant.resource.clone(), grant.scope.clone());
            subject = grant.subject.clone();
            if !st.config.rotate_refresh_tokens {
                return issue(
                    shared,
                    st,
                    &client.client_id,
                    &subject,
                    &resource,
                    &scope,
                    Refresh::Keep(token),
                    jkt,
                );
            }
            st.refresh.remove(&token);
            (resource, scope, true)
        }
        Some("client_credentials") if st.config.client_credentials => {
            if client.method == "none" {
                return oauth_error(
                    StatusCode::UNAUTHORIZED,
                    "invalid_client",
                    "public clients cannot use client_credentials",
                );
            }
            (
                f("resource").unwrap_or_default(),
                f("scope").unwrap_or_default(),
                false,
            )
        }
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "not offered",
            );
        }
    };
    let refresh = if refresh { Refresh::New } else { Refresh::None };
    issue(
        shared,
        st,
        &client.client_id,
        &subject,
        &resource,
        &scope,
        refresh,
        jkt,
    )
}

/// `grant_type` of the JWT-bearer grant (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693).
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The ID-JAG token type (SEP-990).
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// Token exchange as an identity provider: an ID token this server signed
/// for an ID-JAG for `audience` and `resource`.
fn exchange(shared: &Shared, st: &State, seen: &Seen, client_id: &str) -> Reply {
    let f = |n: &str| seen.form_param(n).unwrap_or_default().to_owned();
    let bad = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_request", why);
    if f("subject_token_type") == exchange::ACCESS_TOKEN_TYPE {
        return exchange::exchange_access_token(shared, st, seen, client_id);
    }
    if f("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" {
        return bad("subject_token_type must be an ID token or an access token");
    }
    if f("requested_token_type") != ID_JAG {
        return bad("requested_token_type must be an ID-JAG");
    }
    if f("audience").is_empty() || f("resource").is_empty() {
        return bad("audience and resource are required");
    }
    let claims = match shared.verify(&f("subject_token")) {
        Ok((_, c)) => c,
        Err(e) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                &format!("the ID token is {e}"),
            );
        }
    };
    if !jwt::has_audience(&claims, client_id) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "the ID token was issued to another client",
        );
    }
    let now = jwt::now();
    let jag = shared.signer().sign(&json!({
        "iss": issuer(shared, &st.config), "sub": claims["sub"], "aud": f("audience"),
        "resource": f("resource"), "client_id": client_id, "scope": f("scope"),
        "iat": now, "exp": now + 300, "jti": random(12),
    }));
    h::json(
        StatusCode::OK,
        &json!({"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A", "expires_in": 300}),
    )
}

/// What an issued token response says about refresh tokens.
enum Refresh {
    None,
    New,
    /// The refresh token stays the same (no rotation).
    Keep(String),
}

fn has_scope(scope: Option<&str>, wanted: &str) -> bool {
    scope.is_some_and(|s| s.split(' ').any(|w| w == wanted))
}

// One argument per part of the token response; a struct would only
// rename them.
#[allow(clippy::too_many_arguments)]
fn issue(
    shared: &Shared,
    st: &mut State,
    client_id: &str,
    subject: &str,
    resource: &str,
    scope: &str,
    refresh: Refresh,
    jkt: Option<String>,
) -> Reply {
    let now = jwt::now();
    let iss = issuer(shared, &st.config);
    let ttl = st.config.access_token_ttl;
    let mut claims = json!({
        "iss": iss, "aud": resource, "sub": subject, "client_id": client_id,
        "scope": scope, "iat": now, "exp": now + ttl, "jti": random(12),
    });
    let token_type = match &jkt {
        Some(jkt) => {
            claims["cnf"] = json!({ "jkt": jkt });
            "DPoP"
        }
        None => "Bearer",
    };
    let access = shared.signer().sign(&claims);
    st.issued += 1;
    let mut reply = json!({"access_token": access, "token_type": token_type, "expires_in": ttl});
    if !scope.is_empty() {
        reply["scope"] = json!(scope);
    }
    // OpenID Connect: an ID token for the client, which this server as an
    // identity provider takes back in token exchange.
    if has_scope(Some(scope), "openid") {
        reply["id_token"] = json!(shared.signer().sign(&json!({
            "iss": iss, "sub": subject, "aud": client_id, "iat": now, "exp": now + ttl,
        })));
    }
    match refresh {
        Refresh::None => {}
        Refresh::Keep(token) => reply["refresh_token"] = json!(token),
        Refresh::New => {
            let token = random(24);
            st.refresh.insert(
                token.clone(),
                RefreshGrant {
                    client_id: client_id.to_owned(),
                    subject: subject.to_owned(),
                    resource: resource.to_owned(),
                    scope: scope.to_owned(),
                },
            );
            reply["refresh_token"] = json!(token);
        }
    }
    h::json(StatusCode::OK, &reply)
}

fn revoke(shared: &Shared, st: &mut State, seen: &Seen) -> Reply {
    if let Err(why) = authenticate(shared, st, seen) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", &why);
    }
    if let Some(token) = seen.form_param("token") {
        st.refresh.remove(token);
    }
    h::json(StatusCode::OK, &json!({}))
}

/// RFC 7662: an authenticated client asks about a token; one this server
/// signed and that has not expired is `active` with its claims, anything
/// else is `{"active": false}`.
fn introspect(shared: &Shared, st: &mut State, seen: &Seen) -> Reply {
    if let Err(why) = authenticate(shared, st, seen) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", &why);
    }
    let token = seen.form_param("token").unwrap_or_default();
    match shared.verify(token) {
        Ok((_, mut claims)) => {
            claims["active"] = json!(true);
            h::json(StatusCode::OK, &claims)
        }
        Err(_) => h::json(StatusCode::OK, &json!({"active": false})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_redirects_ignore_the_port() {
        assert!(redirect_matches(
            "http://127.0.0.1/callback",
            "http://127.0.0.1:5555/callback"
        ));
        assert!(redirect_matches(
            "http://127.0.0.1:1/callback",
            "http://127.0.0.1:2/callback"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/callback",
            "http://127.0.0.1:5555/other"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/callback",
            "http://evil.example/callback"
        ));
        assert!(!redirect_matches(
            "https://app.example/cb",
            "https://app.example:444/cb"
        ));
    }
}
