//! [`ResourceServer`]: a protected MCP endpoint that checks bearer tokens
//! like a careful resource server (signature by a trusted authorization
//! server, audience = this resource, expiry, scopes), answers 401/403 with
//! RFC 6750/9728 challenges, serves its Protected Resource Metadata, and
//! speaks just enough MCP (2026-07-28) for a client to connect, list and
//! call a tool.

use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::authorization::AuthServer;
use crate::http::{self as h, Reply, Running, Seen};
use crate::jwt::{self, PublicKey};

/// Where the Protected Resource Metadata is served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PrmAt {
    /// `/.well-known/oauth-protected-resource/mcp`.
    #[default]
    PathAware,
    /// `/.well-known/oauth-protected-resource` (the resource is the origin).
    Root,
    /// Only at this path, announced through `resource_metadata`.
    Custom(String),
}

/// How the protected endpoint behaves.
#[derive(Clone, Debug)]
pub struct ResourceConfig {
    /// Where the metadata is.
    pub prm_at: PrmAt,
    /// A `resource` to publish instead of the real one (mismatch tests).
    pub resource_override: Option<String>,
    /// Whether 401/403 challenges carry `resource_metadata`.
    pub challenge_resource_metadata: bool,
    /// The `scope` a 401 challenge carries.
    pub challenge_scope: Option<Vec<String>>,
    /// `scopes_supported` in the metadata.
    pub scopes_supported: Option<Vec<String>>,
    /// Scopes every request needs.
    pub required_scopes: Vec<String>,
    /// Extra scopes per JSON-RPC method (e.g. `tools/call` → `mcp:write`).
    pub method_scopes: Vec<(String, Vec<String>)>,
    /// Also serve one prompt (`whoami`) and one resource
    /// (`authkit://whoami`), whose text names the token's subject, as the
    /// `whoami` tool does.
    pub catalog: bool,
}

impl Default for ResourceConfig {
    fn default() -> Self {
        ResourceConfig {
            prm_at: PrmAt::PathAware,
            resource_override: None,
            challenge_resource_metadata: true,
            challenge_scope: None,
            scopes_supported: None,
            required_scopes: Vec::new(),
            method_scopes: Vec::new(),
            catalog: false,
        }
    }
}

/// Why a token was refused, as the resource server decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization: Bearer` header.
    Missing,
    /// The token is not valid here (bad signature, unknown issuer, wrong
    /// audience, expired); the reason says which.
    Invalid(String),
    /// Valid, but without these needed scopes.
    InsufficientScope(Vec<String>),
}

struct State {
    config: ResourceConfig,
    /// Issuers listed in the metadata, in order.
    authorization_servers: Vec<String>,
    /// Issuers whose tokens are accepted, with their keys.
    trusted: Vec<(String, PublicKey)>,
    requests: Vec<Seen>,
    refusals: Vec<Refusal>,
    /// The claims of every accepted token, by request, with the JSON-RPC
    /// method it carried.
    accepted: Vec<(String, Value)>,
    /// `jti`s of tokens refused from now on (revoked).
    revoked: Vec<String>,
}

struct Shared {
    base: String,
    state: Mutex<State>,
}

/// A running protected MCP endpoint on `127.0.0.1`; stops on drop.
pub struct ResourceServer {
    shared: Arc<Shared>,
    _running: Running,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// Starts an endpoint at `/mcp` protected by `auth`.
    ///
    /// # Panics
    /// When the port cannot be bound (tests only).
    pub async fn start(config: ResourceConfig, auth: &AuthServer) -> ResourceServer {
        let (running, shared) = h::serve_state(handle, |addr| Shared {
            base: format!("http://127.0.0.1:{}", addr.port()),
            state: Mutex::new(State {
                config,
                authorization_servers: vec![auth.issuer()],
                trusted: vec![(auth.issuer(), auth.public_key())],
                requests: Vec::new(),
                refusals: Vec::new(),
                accepted: Vec::new(),
                revoked: Vec::new(),
            }),
        })
        .await;
        ResourceServer {
            shared,
            _running: running,
        }
    }

    /// The MCP endpoint URL.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.shared.base)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.shared.base.clone()
    }

    /// The resource identifier tokens must be issued for.
    pub fn resource(&self) -> String {
        resource(&self.shared, &self.state().config)
    }

    /// Moves the resource to another authorization server: the metadata
    /// lists only `auth`, and only its tokens are accepted from now on.
    pub fn migrate_to(&self, auth: &AuthServer) {
        let mut st = self.state();
        st.authorization_servers = vec![auth.issuer()];
        st.trusted = vec![(auth.issuer(), auth.public_key())];
    }

    /// Changes the configuration of the running endpoint.
    pub fn configure(&self, change: impl FnOnce(&mut ResourceConfig)) {
        change(&mut self.state().config);
    }

    /// Refuses, from now on, every token presented so far (as if revoked):
    /// the next request with one gets a 401 `invalid_token`.
    pub fn revoke_seen_tokens(&self) {
        let mut st = self.state();
        let seen: Vec<String> = st
            .requests
            .iter()
            .filter_map(|s| s.header("authorization").map(str::to_owned))
            .filter_map(|v| v.split_once(' ').map(|(_, t)| t.to_owned()))
            .filter_map(|t| jti(&t))
            .collect();
        st.revoked.extend(seen);
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state().requests.clone()
    }

    /// The MCP requests (POSTs to `/mcp`), in order.
    pub fn mcp_requests(&self) -> Vec<Seen> {
        self.requests()
            .into_iter()
            .filter(|s| s.path == "/mcp")
            .collect()
    }

    /// The JSON-RPC method and the verified claims (`sub`, `aud`, `act`,
    /// …) of every request whose token was accepted, in order: who the
    /// endpoint saw.
    pub fn accepted(&self) -> Vec<(String, Value)> {
        self.state().accepted.clone()
    }

    /// Every refusal, in order.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.state().refusals.clone()
    }

    /// Checks `authorization` (an `Authorization` header value) for
    /// `method` as the endpoint would.
    ///
    /// # Errors
    /// The [`Refusal`].
    pub fn check(&self, authorization: Option<&str>, method: &str) -> Result<Value, Refusal> {
        let st = self.state();
        check(&self.shared, &st, authorization, method)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn prm_path(config: &ResourceConfig) -> String {
    match &config.prm_at {
        PrmAt::PathAware => "/.well-known/oauth-protected-resource/mcp".into(),
        PrmAt::Root => "/.well-known/oauth-protected-resource".into(),
        PrmAt::Custom(p) => p.clone(),
    }
}

fn resource(shared: &Shared, config: &ResourceConfig) -> String {
    if let Some(r) = &config.resource_override {
        return r.clone();
    }
    match config.prm_at {
        PrmAt::Root => shared.base.clone(),
        _ => format!("{}/mcp", shared.base),
    }
}

/// Verifies a bearer token against the trusted issuers; audience, expiry,
/// then scope for `method`.
pub(crate) fn check_token(
    token: &str,
    trusted: &[(String, PublicKey)],
    audience: &str,
    needed: &[String],
) -> Result<Value, Refusal> {
    let mut last = "no trusted authorization server signed it".to_owned();
    for (issuer, key) in trusted {
        match jwt::verify(token, key) {
            Ok((_, claims)) => {
                if claims["iss"] != issuer.as_str() {
                    last = "issuer mismatch".into();
                    continue;
                }
                if !jwt::has_audience(&claims, audience) {
                    return Err(Refusal::Invalid(format!(
                        "audience {} is not {audience}",
                        claims["aud"]
                    )));
                }
                let granted: Vec<&str> =
                    claims["scope"].as_str().unwrap_or("").split(' ').collect();
                let missing: Vec<String> = needed
                    .iter()
                    .filter(|s| !granted.contains(&s.as_str()))
                    .cloned()
                    .collect();
                if !missing.is_empty() {
                    return Err(Refusal::InsufficientScope(needed.to_vec()));
                }
                return Ok(claims);
            }
            Err(e) if e == "expired" => return Err(Refusal::Invalid("expired".into())),
            Err(e) => last = e,
        }
    }
    Err(Refusal::Invalid(last))
}

fn needed_scopes(config: &ResourceConfig, method: &str) -> Vec<String> {
    let mut needed = config.required_scopes.clone();
    for (m, scopes) in &config.method_scopes {
        if m == method {
            for s in scopes {
                if !needed.contains(s) {
                    needed.push(s.clone());
                }
            }
        }
    }
    needed
}

fn check(
    shared: &Shared,
    st: &State,
    authorization: Option<&str>,
    method: &str,
) -> Result<Value, Refusal> {
    let token = authorization
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err(Refusal::Missing);
    };
    if jti(token).is_some_and(|j| st.revoked.contains(&j)) {
        return Err(Refusal::Invalid("revoked".into()));
    }
    let audience = resource(shared, &st.config);
    check_token(
        token,
        &st.trusted,
        &audience,
        &needed_scopes(&st.config, method),
    )
}

/// The `jti` claim of a JWT, read without verification.
fn jti(token: &str) -> Option<String> {
    use base64::Engine as _;
    let claims = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims)
        .ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value["jti"].as_str().map(str::to_owned)
}

fn quote(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

fn handle(shared: &Shared, seen: Seen) -> Reply {
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    st.requests.push(seen.clone());
    let prm_path = prm_path(&st.config);
    if h::is(&seen, Method::GET, &prm_path) {
        let mut doc = json!({
            "resource": resource(shared, &st.config),
            "authorization_servers": st.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if let Some(s) = &st.config.scopes_supported {
            doc["scopes_supported"] = json!(s);
        }
        return h::json(StatusCode::OK, &doc);
    }
    if seen.path != "/mcp" {
        return h::json(StatusCode::NOT_FOUND, &json!({"error": "not_found"}));
    }
    if seen.method != "POST" {
        return h::text(StatusCode::METHOD_NOT_ALLOWED, "POST only");
    }
    let body = seen.json.clone().unwrap_or(Value::Null);
    let method = body["method"].as_str().unwrap_or("").to_owned();
    let metadata_url = format!("{}{prm_path}", shared.base);
    match check(shared, &st, seen.header("authorization"), &method) {
        Ok(claims) => {
            st.accepted.push((method, claims.clone()));
            let catalog = st.config.catalog;
            drop(st);
            answer(&body, &claims, catalog)
        }
        Err(refusal) => {
            let mut params = vec!["realm=\"mcp\"".to_owned()];
            let status = match &refusal {
                Refusal::Missing | Refusal::Invalid(_) => {
                    if let Refusal::Invalid(why) = &refusal {
                        params.push("error=\"invalid_token\"".into());
                        params.push(format!("error_description={}", quote(why)));
                    }
                    if let Some(scope) = &st.config.challenge_scope {
                        params.push(format!("scope={}", quote(&scope.join(" "))));
                    }
                    StatusCode::UNAUTHORIZED
                }
                Refusal::InsufficientScope(needed) => {
                    params.push("error=\"insufficient_scope\"".into());
                    params.push(format!("scope={}", quote(&needed.join(" "))));
                    StatusCode::FORBIDDEN
                }
            };
            if st.config.challenge_resource_metadata {
                params.push(format!("resource_metadata={}", quote(&metadata_url)));
            }
            st.refusals.push(refusal);
            let reply = h::json(status, &json!({"error": "unauthorized"}));
            h::with_header(
                reply,
                "www-authenticate",
                &format!("Bearer {}", params.join(", ")),
            )
        }
    }
}

/// Answers the MCP request in `body` for the caller in `claims`; with
/// `catalog`, prompts and resources too.
fn answer(body: &Value, claims: &Value, catalog: bool) -> Reply {
    let Some(id) = body.get("id").cloned() else {
        return h::text(StatusCode::ACCEPTED, "");
    };
    let who = format!(
        "sub={} scope={}",
        claims["sub"].as_str().unwrap_or(""),
        claims["scope"].as_str().unwrap_or("")
    );
    let capabilities = if catalog {
        json!({"tools": {}, "prompts": {}, "resources": {}})
    } else {
        json!({"tools": {}})
    };
    let result = match body["method"].as_str().unwrap_or("") {
        "server/discover" => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": capabilities,
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "authkit-resource", "version": "1.0.0"}},
        }),
        "tools/list" => json!({
            "tools": [{"name": "whoami", "description": "Who the token says you are", "inputSchema": {"type": "object"}}],
            "resultType": "complete",
        }),
        "tools/call" => json!({
            "content": [{"type": "text", "text": who}],
            "resultType": "complete",
        }),
        "prompts/list" if catalog => json!({
            "prompts": [{"name": "whoami", "description": "Who the token says you are"}],
            "resultType": "complete",
        }),
        "prompts/get" if catalog => json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": who}}],
            "resultType": "complete",
        }),
        "resources/list" if catalog => json!({
            "resources": [{"uri": "authkit://whoami", "name": "whoami", "mimeType": "text/plain"}],
            "resultType": "complete",
        }),
        "resources/templates/list" if catalog => json!({
            "resourceTemplates": [],
            "resultType": "complete",
        }),
        "resources/read" if catalog => json!({
            "contents": [{"uri": "authkit://whoami", "mimeType": "text/plain", "text": who}],
            "resultType": "complete",
        }),
        other => {
            return h::json(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: {other}")}}),
            );
        }
    };
    h::json(
        StatusCode::OK,
        &json!({"jsonrpc": "2.0", "id": id, "result": result}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::Signer;

    #[test]
    fn token_checks() {
        let signer = Signer::generate("k");
        let trusted = vec![(
            "http://as".to_owned(),
            PublicKey::Es256(signer.public_key()),
        )];
        let token = |claims: Value| signer.sign(&claims);
        let exp = jwt::now() + 60;
        let good =
            token(json!({"iss": "http://as", "aud": "http://rs/mcp", "scope": "a b", "exp": exp}));
        assert!(check_token(&good, &trusted, "http://rs/mcp", &["a".into()]).is_ok());
        assert_eq!(
            check_token(&good, &trusted, "http://rs/mcp", &["a".into(), "c".into()]),
            Err(Refusal::InsufficientScope(vec!["a".into(), "c".into()]))
        );
        assert!(matches!(
            check_token(&good, &trusted, "http://other/mcp", &[]),
            Err(Refusal::Invalid(_))
        ));
        let foreign = token(json!({"iss": "http://evil", "aud": "http://rs/mcp", "exp": exp}));
        assert!(matches!(
            check_token(&foreign, &trusted, "http://rs/mcp", &[]),
            Err(Refusal::Invalid(_))
        ));
        let expired = token(json!({"iss": "http://as", "aud": "http://rs/mcp", "exp": 1}));
        assert_eq!(
            check_token(&expired, &trusted, "http://rs/mcp", &[]),
            Err(Refusal::Invalid("expired".into()))
        );
    }
}
