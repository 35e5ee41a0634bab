//! Bearer tokens on HTTP, with the server as an OAuth 2.1 resource server:
//! 401 with the metadata location, 403 for missing scope, 400 for a token in
//! the URL, the metadata document at its well-known URIs, the principal
//! reaching handlers, and requestState / state handles bound to it.
//!
//! Most tests use [`ClaimsValidator`] over an in-memory token table (what an
//! introspection endpoint would answer); the first three use the simpler
//! `Tokens` validator of `util`.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;
use switchboard_server::{AuthError, ClaimsValidator, ProtectedResource, StateHandles};
use switchboard_wire::JsonObject;

use crate::util::*;

async fn start_with_auth() -> Http {
    let (server, _) = server();
    let prm = ProtectedResource::new("http://127.0.0.1/mcp", "http://127.0.0.1:1/issuer")
        .with_scopes(["admin"]);
    start(server, HttpOptions::new().auth(Tokens, prm)).await
}

pub(crate) fn with_token(
    method: &str,
    params: &serde_json::Value,
    token: &str,
) -> Vec<(String, String)> {
    let mut h = standard_headers(method, params);
    h.push(header("authorization", &format!("Bearer {token}")));
    h
}

pub(crate) async fn call_as(
    http: &Http,
    token: &str,
    method: &str,
    params: serde_json::Value,
) -> Resp {
    let params = with_meta(params);
    http.post(
        &with_token(method, &params, token),
        body(json!(1), method, params),
    )
    .await
}

pub(crate) fn challenge(r: &Resp) -> String {
    r.headers
        .get("www-authenticate")
        .unwrap_or_else(|| panic!("no challenge on a {}", r.status))
        .to_str()
        .unwrap()
        .to_owned()
}

// AUTH-S-02/06: no token or a bad one is 401 with a challenge naming the
// metadata document, which is served.
#[tokio::test]
async fn unauthenticated_requests_get_401() {
    let http = start_with_auth().await;
    let r = http.call("tools/list", json!({})).await;
    assert_eq!(r.status, 401);
    let challenge = r.headers["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(
        "resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""
    ));
    assert!(challenge.contains("scope=\"admin\""));
    // RFC 6750 §3.1: no error code when no token was sent.
    assert!(!challenge.contains("error="), "{challenge}");
    let r = call_as(&http, "garbage", "tools/list", json!({})).await;
    assert_eq!(r.status, 401);
    assert!(
        r.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    let doc = http
        .raw(
            http::Method::GET,
            "/.well-known/oauth-protected-resource/mcp",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(doc.status, 200);
    let doc: serde_json::Value = serde_json::from_slice(&doc.body).unwrap();
    assert_eq!(doc["resource"], "http://127.0.0.1/mcp");
    assert_eq!(doc["authorization_servers"][0], "http://127.0.0.1:1/issuer");
    http.stop().await;
}

// AUTH-S-07: a valid token without the scope is 403 insufficient_scope.
#[tokio::test]
async fn principal_and_scopes() {
    let http = start_with_auth().await;
    let r = call_as(
        &http,
        "alice-token",
        "tools/call",
        json!({"name": "whoami"}),
    )
    .await;
    assert_eq!(r.result()["content"][0]["text"], "alice");
    let r = call_as(&http, "alice-token", "tools/call", json!({"name": "fail"})).await;
    assert_eq!(r.status, 403);
    let challenge = r.headers["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"admin\""),
        "{challenge}"
    );
    let r = call_as(&http, "admin-token", "tools/call", json!({"name": "fail"})).await;
    assert_eq!(r.status, 200);
    http.stop().await;
}

/// Runs the `book` tool's first two rounds as `token`; the requestState the
/// second round returns, and the retry that would complete it.
async fn book_until_state(http: &Http, token: &str) -> Value {
    let caps = meta_with(json!({"elicitation": {}}));
    let round =
        |answers: Value| json!({"name": "book", "_meta": caps.clone(), "inputResponses": answers});
    let r = call_as(
        http,
        token,
        "tools/call",
        json!({"name": "book", "_meta": caps.clone()}),
    )
    .await;
    assert_eq!(r.result()["resultType"], "input_required");
    let r = call_as(
        http,
        token,
        "tools/call",
        round(json!({"seat": {"action": "accept", "content": {"seat": "1C"}}})),
    )
    .await
    .result();
    let state = r["requestState"].as_str().unwrap().to_owned();
    let mut retry = round(json!({"confirm": {"action": "accept", "content": {"ok": true}}}));
    retry["requestState"] = json!(state);
    retry
}

fn assert_other_principal(r: &Resp) {
    assert_eq!(r.error_code(), -32602);
    assert!(
        r.response()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("different principal"),
        "{:?}",
        r.response()
    );
}

// MRTR-09: a requestState issued to one principal is refused for another.
#[tokio::test]
async fn state_is_bound_to_the_principal() {
    let http = start_with_auth().await;
    let retry = book_until_state(&http, "alice-token").await;
    let r = call_as(&http, "bob-token", "tools/call", retry.clone()).await;
    assert_other_principal(&r);
    let r = call_as(&http, "alice-token", "tools/call", retry).await;
    assert_eq!(r.result()["content"][0]["text"], "booked seat \"1C\"");
    http.stop().await;
}

// ---------------------------------------------------------------------------
// ClaimsValidator over an introspection-style token table.

const ISSUER: &str = "https://as.example.com";

pub(crate) use switchboard_wire::shared::unix_secs as now;

/// An opaque token nobody could guess or find elsewhere in the output.
pub(crate) fn fresh_token() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let a = RandomState::new().hash_one(n);
    let b = RandomState::new().hash_one(a);
    format!("tok{a:016x}{b:016x}")
}

/// What the introspection endpoint knows: token → claims. A token mapped
/// to `null` makes the endpoint "unreachable".
type Table = Arc<Mutex<HashMap<String, Value>>>;

/// A protected server: `resource` is its real URL.
pub(crate) struct Protected {
    pub(crate) http: Http,
    pub(crate) resource: String,
    table: Table,
}

impl Protected {
    /// Registers `claims` under a fresh token.
    pub(crate) fn token(&self, claims: Value) -> String {
        let token = fresh_token();
        self.table.lock().unwrap().insert(token.clone(), claims);
        token
    }

    /// Good claims for `sub` with `scope`, for this server.
    pub(crate) fn claims(&self, sub: &str, scope: &str) -> Value {
        json!({"active": true, "iss": ISSUER, "aud": self.resource, "sub": sub,
               "scope": scope, "iat": now(), "exp": now() + 3600})
    }

    /// A token for `sub` with `scope`, for this server.
    pub(crate) fn token_for(&self, sub: &str, scope: &str) -> String {
        self.token(self.claims(sub, scope))
    }

    pub(crate) fn metadata_url(&self) -> String {
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            self.http.addr
        )
    }
}

/// Starts the test server behind a [`ClaimsValidator`]: `tickets:read` for
/// everything, `tickets:write` to call `echo`, `tickets:admin` implying
/// both; `configure` may add to it.
pub(crate) async fn protected_with(
    builder: switchboard_server::ServerBuilder,
    configure: impl FnOnce(ClaimsValidator<DecodeFn>, &ProtectedResource) -> ClaimsValidator<DecodeFn>,
) -> Protected {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let prm = ProtectedResource::new(resource.clone(), ISSUER).with_scopes(["tickets:read"]);
    let table: Table = Arc::default();
    let decode = decoder(Arc::clone(&table));
    let validator = ClaimsValidator::for_resource(&prm, decode)
        .require_scopes(["tickets:read"])
        .tool_scopes("echo", ["tickets:write"])
        .implies("tickets:admin", ["tickets:read", "tickets:write"]);
    let validator = configure(validator, &prm);
    let http = start_on(
        listener,
        builder.build().unwrap(),
        HttpOptions::new().auth(validator, prm),
    );
    Protected {
        http,
        resource,
        table,
    }
}

pub(crate) async fn protected() -> Protected {
    protected_with(builder(Arc::default()), |v, _| v).await
}

pub(crate) type DecodeFn = Box<
    dyn Fn(String) -> std::future::Ready<Result<JsonObject, AuthError>> + Send + Sync + 'static,
>;

fn decoder(table: Table) -> DecodeFn {
    Box::new(move |token: String| {
        let found = table.lock().unwrap().get(&token).cloned();
        std::future::ready(match found {
            Some(Value::Object(claims)) => Ok(claims),
            Some(_) => Err(AuthError::Unavailable(
                "the introspection endpoint did not answer".into(),
            )),
            // RFC 7662: an unknown token is simply not active.
            None => Ok(JsonObject::from_iter([("active".into(), json!(false))])),
        })
    })
}

// AUTH-S-04/05: a token issued for another resource is refused with 401
// invalid_token, and the handler never runs; the same claims with our
// audience are accepted and the principal reaches the handler.
#[tokio::test]
async fn wrong_audience_token_is_refused_with_401() {
    let p = protected().await;
    let mut claims = p.claims("alice", "tickets:read");
    claims["aud"] = json!("https://other.example.com/mcp");
    let foreign = p.token(claims.clone());
    // A near miss: our origin, another path.
    claims["aud"] = json!(format!("http://{}/other", p.http.addr));
    let near = p.token(claims);
    for token in [&foreign, &near] {
        let r = call_as(&p.http, token, "tools/call", json!({"name": "whoami"})).await;
        assert_eq!(r.status, 401);
        let c = challenge(&r);
        assert!(c.contains("error=\"invalid_token\""), "{c}");
        assert!(c.contains("not issued for this resource"), "{c}");
        assert!(
            c.contains(&format!("resource_metadata=\"{}\"", p.metadata_url())),
            "{c}"
        );
        assert!(c.contains("scope=\"tickets:read\""), "{c}");
        assert!(r.body.windows(5).all(|w| w != b"alice"), "nothing served");
    }
    let good = p.token_for("alice", "tickets:read");
    let r = call_as(&p.http, &good, "tools/call", json!({"name": "whoami"})).await;
    assert_eq!(r.result()["content"][0]["text"], "alice");
    p.http.stop().await;
}

// AUTH-S-04/06: an expired token, an inactive one and one from another
// authorization server are all 401 invalid_token.
#[tokio::test]
async fn expired_inactive_and_foreign_tokens_get_401() {
    let p = protected().await;
    let mut expired = p.claims("alice", "tickets:read");
    expired["exp"] = json!(now() - 3600);
    let mut revoked = p.claims("alice", "tickets:read");
    revoked["active"] = json!(false);
    let mut foreign = p.claims("alice", "tickets:read");
    foreign["iss"] = json!("https://evil.example.com");
    for (claims, why) in [
        (expired, "the token expired"),
        (revoked, "not active"),
        (
            foreign,
            "not issued by an authorization server of this resource",
        ),
    ] {
        let token = p.token(claims);
        let r = call_as(&p.http, &token, "tools/list", json!({})).await;
        assert_eq!(r.status, 401, "{why}");
        let c = challenge(&r);
        assert!(
            c.contains("error=\"invalid_token\"") && c.contains(why),
            "{c}"
        );
        assert_eq!(r.error_code(), -32600);
    }
    // A token the endpoint has never seen: inactive.
    let r = call_as(&p.http, &fresh_token(), "tools/list", json!({})).await;
    assert_eq!(r.status, 401);
    p.http.stop().await;
}

// AUTH-S-06/07/08: a token without a needed scope is 403 with
// error="insufficient_scope", every scope the operation needs in one
// challenge and the metadata location; a broader scope implies narrower
// ones.
#[tokio::test]
async fn insufficient_scope_is_403_with_every_needed_scope() {
    let p = protected().await;
    let reader = p.token_for("alice", "tickets:read");
    let r = call_as(&p.http, &reader, "tools/list", json!({})).await;
    assert_eq!(r.status, 200);
    let r = call_as(
        &p.http,
        &reader,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        challenge(&r),
        format!(
            "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"tickets:read tickets:write\"",
            p.metadata_url()
        )
    );
    // No scope at all: still 403 (the token is valid), the full set named.
    let nothing = p.token_for("alice", "");
    let r = call_as(&p.http, &nothing, "tools/list", json!({})).await;
    assert_eq!(r.status, 403);
    assert!(challenge(&r).contains("scope=\"tickets:read\""));
    // AUTH-S-08: tickets:admin implies read and write.
    let admin = p.token_for("alice", "tickets:admin");
    let r = call_as(
        &p.http,
        &admin,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(r.result()["content"][0]["text"], "hi");
    p.http.stop().await;
}

// AUTH-S-01/02: the metadata document at the path-inserted well-known URI
// (RFC 9728 §3.1) and at the root, naming this server; the 401 challenge
// points at it.
#[tokio::test]
async fn metadata_is_served_at_the_well_known_uris() {
    let p = protected().await;
    let r = p.http.call("tools/list", json!({})).await;
    assert_eq!(r.status, 401);
    assert!(
        challenge(&r).contains(&format!("resource_metadata=\"{}\"", p.metadata_url())),
        "{}",
        challenge(&r)
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = p.http.raw(http::Method::GET, path, &[], Vec::new()).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.content_type(), "application/json");
        let doc: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            doc,
            json!({
                "resource": p.resource,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["tickets:read"],
                "bearer_methods_supported": ["header"],
            }),
            "{path}"
        );
    }
    let r = p
        .http
        .raw(
            http::Method::POST,
            "/.well-known/oauth-protected-resource/mcp",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 405);
    let r = p
        .http
        .raw(
            http::Method::GET,
            "/.well-known/oauth-protected-resource/other",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 404);
    p.http.stop().await;
}

// AUTH-C-21 / AUTH-S-06 (RFC 6750 §2.3): a token in the URL is refused
// with 400 invalid_request, alone or next to a good header, before any
// handler runs.
#[tokio::test]
async fn token_in_the_query_string_is_refused() {
    let p = protected().await;
    let token = p.token_for("alice", "tickets:read tickets:write");
    let params = with_meta(json!({"name": "whoami"}));
    let plain = standard_headers("tools/call", &params);
    let both = with_token("tools/call", &params, &token);
    for (query, headers) in [
        (format!("access_token={token}"), &plain),
        (format!("x=1&access_token={token}"), &plain),
        (format!("access_token={token}"), &both),
    ] {
        let r = p
            .http
            .raw(
                http::Method::POST,
                &format!("/mcp?{query}"),
                headers,
                body(json!(1), "tools/call", params.clone()),
            )
            .await;
        assert_eq!(r.status, 400, "{query}");
        let c = challenge(&r);
        assert!(c.contains("error=\"invalid_request\""), "{c}");
        assert!(c.contains("not accepted in the URL"), "{c}");
        assert!(!String::from_utf8_lossy(&r.body).contains("alice"));
    }
    // The header alone works; an unrelated query does not hurt.
    let r = p
        .http
        .raw(
            http::Method::POST,
            "/mcp?trace=1",
            &both,
            body(json!(1), "tools/call", params.clone()),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "alice");
    p.http.stop().await;
}

// MRTR-09 with real claims: a requestState minted for one principal is
// refused for another, including the same `sub` at another trusted
// issuer (the subject is qualified by the issuer then).
#[tokio::test]
async fn request_state_is_bound_across_principals() {
    let p = protected_with(builder(Arc::default()), |v, _| {
        v.issuer("https://as2.example.com")
    })
    .await;
    let scope = "tickets:read tickets:write";
    let alice = p.token_for("alice", scope);
    let bob = p.token_for("bob", scope);
    let mut elsewhere = p.claims("alice", scope);
    elsewhere["iss"] = json!("https://as2.example.com");
    let alice_elsewhere = p.token(elsewhere);
    let retry = book_until_state(&p.http, &alice).await;
    for other in [&bob, &alice_elsewhere] {
        let r = call_as(&p.http, other, "tools/call", retry.clone()).await;
        assert_other_principal(&r);
    }
    // A second token of the same principal is the same principal.
    let alice_again = p.token_for("alice", scope);
    let r = call_as(&p.http, &alice_again, "tools/call", retry).await;
    assert_eq!(r.result()["content"][0]["text"], "booked seat \"1C\"");
    p.http.stop().await;
}

// State handles (WIRE-22) created for one principal are unknown to another.
#[tokio::test]
async fn state_handles_are_bound_to_the_principal() {
    let carts: Arc<StateHandles<String>> = Arc::new(StateHandles::new(Duration::from_secs(600)));
    let (put, get) = (Arc::clone(&carts), carts);
    let builder = builder(Arc::default())
        .tool(
            "cart_put",
            "Stores the text; returns a handle",
            move |a: EchoArgs, ctx: switchboard_server::Context| {
                let carts = Arc::clone(&put);
                async move { carts.create(ctx.principal(), a.text) }
            },
        )
        .tool(
            "cart_get",
            "Reads the text stored under the handle",
            move |a: EchoArgs, ctx: switchboard_server::Context| {
                let carts = Arc::clone(&get);
                async move { carts.get(ctx.principal(), &a.text).map(|v| (*v).clone()) }
            },
        );
    let p = protected_with(builder, |v, _| v).await;
    let alice = p.token_for("alice", "tickets:read");
    let bob = p.token_for("bob", "tickets:read");
    let call = |token: String, name: &'static str, text: String| {
        let http = &p.http;
        async move {
            call_as(
                http,
                &token,
                "tools/call",
                json!({"name": name, "arguments": {"text": text}}),
            )
            .await
            .result()
        }
    };
    let r = call(alice.clone(), "cart_put", "two books".into()).await;
    let handle = r["content"][0]["text"].as_str().unwrap().to_owned();
    let r = call(bob, "cart_get", handle.clone()).await;
    assert_eq!(r["isError"], true);
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown or expired handle")
    );
    let r = call(alice, "cart_get", handle).await;
    assert_eq!(r["content"][0]["text"], "two books");
    p.http.stop().await;
}

// A token that cannot be checked now (introspection down) is 503 without a
// challenge: not a reason for the client to log in again.
#[tokio::test]
async fn validator_outage_is_503_not_401() {
    let p = protected().await;
    let token = p.token(Value::Null);
    let r = call_as(&p.http, &token, "tools/list", json!({})).await;
    assert_eq!(r.status, 503);
    assert!(r.headers.get("www-authenticate").is_none());
    assert!(
        r.response()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer")
    );
    p.http.stop().await;
}

pub(crate) fn legacy_headers(token: Option<&str>, session: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![
        header("content-type", "application/json"),
        header("accept", "application/json, text/event-stream"),
    ];
    if let Some(t) = token {
        h.push(header("authorization", &format!("Bearer {t}")));
    }
    if let Some(s) = session {
        h.push(header("mcp-session-id", s));
        h.push(header("mcp-protocol-version", "2025-11-25"));
    }
    h
}

// Legacy 2025-11-25 sessions get the same protection: scopes are checked on
// `initialize` and on session requests (which skip the mirrored headers),
// and ending a session needs a token.
#[tokio::test]
async fn legacy_sessions_are_protected_too() {
    let p = protected().await;
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}});
    let nothing = p.token_for("alice", "");
    let r = p
        .http
        .post(
            &legacy_headers(Some(&nothing), None),
            body(json!(0), "initialize", init.clone()),
        )
        .await;
    assert_eq!(r.status, 403);
    let reader = p.token_for("alice", "tickets:read");
    let r = p
        .http
        .post(
            &legacy_headers(Some(&reader), None),
            body(json!(0), "initialize", init),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let call = json!({"name": "echo", "arguments": {"text": "hi"}});
    let r = p
        .http
        .post(
            &legacy_headers(Some(&reader), Some(&session)),
            body(json!(1), "tools/call", call.clone()),
        )
        .await;
    assert_eq!(r.status, 403, "session requests are scope-checked");
    assert!(challenge(&r).contains("scope=\"tickets:read tickets:write\""));
    let r = p
        .http
        .post(
            &legacy_headers(None, Some(&session)),
            body(json!(1), "tools/call", call),
        )
        .await;
    assert_eq!(r.status, 401);
    let r = p
        .http
        .raw(
            http::Method::DELETE,
            "/mcp",
            &legacy_headers(None, Some(&session)),
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 401, "no session ends without a token");
    let r = p
        .http
        .raw(
            http::Method::DELETE,
            "/mcp",
            &legacy_headers(Some(&reader), Some(&session)),
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    p.http.stop().await;
}

/// Opens a legacy session as `token`; its id.
pub(crate) async fn legacy_initialize(http: &Http, token: &str, capabilities: Value) -> String {
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "old", "version": "1"}});
    let r = http
        .post(
            &legacy_headers(Some(token), None),
            body(json!(0), "initialize", init),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    r.headers["mcp-session-id"].to_str().unwrap().to_owned()
}

/// A legacy request in `session`, as `token`.
pub(crate) async fn legacy_post(
    http: &Http,
    token: &str,
    session: &str,
    method: &str,
    params: Value,
) -> Resp {
    http.post(
        &legacy_headers(Some(token), Some(session)),
        body(json!(1), method, params),
    )
    .await
}

pub(crate) async fn legacy_delete(http: &Http, token: &str, session: &str) -> Resp {
    http.raw(
        http::Method::DELETE,
        "/mcp",
        &legacy_headers(Some(token), Some(session)),
        Vec::new(),
    )
    .await
}

// A legacy (2025-11-25) session belongs to the principal whose token opened
// it (the legacy spec's session-hijacking guidance: session ids are bound
// to the user, as state is by ELIC-11 / MRTR-09). Another principal's
// valid token with that Mcp-Session-Id gets exactly the answer an unknown
// session gets (404 on POST and DELETE, 400 for an answer to a
// server-to-client request), so ids can be neither used nor probed. The
// same subject under another issuer is another principal; the same
// subject with a second token is the same one.
#[tokio::test]
async fn legacy_sessions_are_bound_to_their_principal() {
    let p = protected_with(builder(Arc::default()), |v, _| {
        v.issuer("https://as2.example.com")
    })
    .await;
    let alice = p.token_for("alice", "tickets:read");
    let alice_again = p.token_for("alice", "tickets:read");
    let bob = p.token_for("bob", "tickets:read");
    let mut elsewhere = p.claims("alice", "tickets:read");
    elsewhere["iss"] = json!("https://as2.example.com");
    let alice_elsewhere = p.token(elsewhere);
    let session = legacy_initialize(&p.http, &alice, json!({"sampling": {}})).await;
    let r = legacy_post(&p.http, &alice, &session, "ping", json!({})).await;
    assert_eq!(r.result(), json!({}));

    for other in [&bob, &alice_elsewhere] {
        let unknown = legacy_post(&p.http, other, "no-such-session", "tools/list", json!({})).await;
        assert_eq!(unknown.status, 404);
        let r = legacy_post(&p.http, other, &session, "tools/list", json!({})).await;
        assert_eq!(r.status, 404, "another principal's session is unknown");
        assert_eq!(r.body, unknown.body, "indistinguishable from an unknown id");
        let unknown = legacy_delete(&p.http, other, "no-such-session").await;
        assert_eq!(unknown.status, 404);
        let r = legacy_delete(&p.http, other, &session).await;
        assert_eq!(r.status, 404, "another principal cannot end the session");
        assert_eq!(r.body, unknown.body);
    }
    // Still alive for its owner.
    let r = legacy_post(&p.http, &alice, &session, "ping", json!({})).await;
    assert_eq!(r.result(), json!({}));

    // Only the owner answers the session's server-to-client requests.
    let mut stream = p
        .http
        .open_with(
            legacy_headers(Some(&alice), Some(&session)),
            body(json!(9), "tools/call", json!({"name": "need_sampling"})),
        )
        .await;
    let ask = stream.next().await.unwrap();
    assert_eq!(ask["method"], "sampling/createMessage");
    let answer = |text: &str| {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}})).unwrap()
    };
    let unknown = p
        .http
        .post(
            &legacy_headers(Some(&bob), Some("no-such-session")),
            answer("5"),
        )
        .await;
    let r = p
        .http
        .post(&legacy_headers(Some(&bob), Some(&session)), answer("5"))
        .await;
    assert_eq!(r.status, 400, "bob's answer is not taken");
    assert_eq!(r.body, unknown.body);
    let r = p
        .http
        .post(
            &legacy_headers(Some(&alice_again), Some(&session)),
            answer("4"),
        )
        .await;
    assert_eq!(r.status, 202);
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "model said 4");

    // The same principal with another token: same session, and it may end it.
    let r = legacy_post(
        &p.http,
        &alice_again,
        &session,
        "tools/call",
        json!({"name": "whoami"}),
    )
    .await;
    assert_eq!(
        r.result()["content"][0]["text"],
        "https://as.example.com#alice"
    );
    assert_eq!(
        legacy_delete(&p.http, &alice_again, &session).await.status,
        200
    );
    let r = legacy_post(&p.http, &alice, &session, "ping", json!({})).await;
    assert_eq!(r.status, 404, "ended");
    p.http.stop().await;
}

// AUTH-S-03: a 401 names the scopes this request needs, as the validator
// knows them (ClaimsValidator: required + per-method + per-tool), read
// from the Mcp-Method / Mcp-Name headers (base64-encoded names included);
// they are the ones a 403 would name, so a client that follows the 401 is
// not refused next. A legacy client announces nothing before its body:
// the scopes every request needs. (A validator that knows no scopes falls
// back to scopes_supported: `unauthenticated_requests_get_401`.)
#[tokio::test]
async fn unauthorized_challenge_names_the_scopes_the_request_needs() {
    let p = protected_with(builder(Arc::default()), |v, _| {
        v.tool_scopes("café", ["tickets:coffee", "offline_access"])
    })
    .await;
    let scope_of = |r: &Resp| {
        let c = challenge(r);
        let start = c
            .find("scope=\"")
            .unwrap_or_else(|| panic!("no scope in {c}"))
            + 7;
        c[start..start + c[start..].find('"').unwrap()].to_owned()
    };
    let echo = json!({"name": "echo", "arguments": {"text": "hi"}});
    let r = p.http.call("tools/call", echo.clone()).await;
    assert_eq!(r.status, 401);
    assert!(!challenge(&r).contains("error="), "{}", challenge(&r));
    assert_eq!(scope_of(&r), "tickets:read tickets:write");
    let r = p.http.call("tools/list", json!({})).await;
    assert_eq!((r.status, scope_of(&r)), (401, "tickets:read".into()));
    // AUTH-S-09: offline_access is never asked for.
    let r = p.http.call("tools/call", json!({"name": "café"})).await;
    assert_eq!(
        (r.status, scope_of(&r)),
        (401, "tickets:read tickets:coffee".into())
    );
    // An expired token gets the same guidance, with invalid_token.
    let mut expired = p.claims("alice", "tickets:read");
    expired["exp"] = json!(now() - 3600);
    let expired = p.token(expired);
    let r = call_as(&p.http, &expired, "tools/call", echo.clone()).await;
    assert_eq!(r.status, 401);
    assert!(challenge(&r).contains("error=\"invalid_token\""));
    assert_eq!(scope_of(&r), "tickets:read tickets:write");
    // Consistent with the 403 for the same request.
    let reader = p.token_for("alice", "tickets:read");
    let r = call_as(&p.http, &reader, "tools/call", echo.clone()).await;
    assert_eq!(
        (r.status, scope_of(&r)),
        (403, "tickets:read tickets:write".into())
    );
    // Asking for exactly what the 401 named is enough.
    let named = p.token_for("alice", "tickets:read tickets:write");
    let r = call_as(&p.http, &named, "tools/call", echo).await;
    assert_eq!(r.result()["content"][0]["text"], "hi");
    // Legacy initialize: no Mcp-Method, the required scopes.
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}});
    let r = p
        .http
        .post(
            &legacy_headers(None, None),
            body(json!(0), "initialize", init),
        )
        .await;
    assert_eq!((r.status, scope_of(&r)), (401, "tickets:read".into()));
    p.http.stop().await;
}

// AUTH-S-06 (RFC 6750 §2.1, §3.1): an Authorization header that is not
// `Bearer <token68>`, or two of them, is a malformed request: 400
// invalid_request before any handler runs, the token never echoed. Another
// scheme is no bearer token at all: 401 without an error code. The scheme
// is case-insensitive.
#[tokio::test]
async fn malformed_authorization_header_is_400_invalid_request() {
    let p = protected().await;
    let good = p.token_for("alice", "tickets:read");
    let params = with_meta(json!({"name": "whoami"}));
    let send = |values: Vec<String>, method: http::Method| {
        let mut h = standard_headers("tools/call", &params);
        for v in values {
            h.push(header("authorization", &v));
        }
        let http = &p.http;
        let body = body(json!(1), "tools/call", params.clone());
        async move { http.raw(method, "/mcp", &h, body).await }
    };
    for values in [
        vec!["Bearer".to_owned()],
        vec!["Bearer   ".to_owned()],
        vec![format!("Bearer {good} extra")],
        vec![format!("Bearer {good},x")],
        vec![format!("Bearer {good}@")],
        vec!["Bearer ====".to_owned()],
        vec![format!("Bearer {good}\u{e9}")],
        vec![format!("Bearer {good}"), format!("Bearer {good}")],
    ] {
        for method in [http::Method::POST, http::Method::DELETE] {
            let r = send(values.clone(), method.clone()).await;
            assert_eq!(r.status, 400, "{method} {values:?}");
            let c = challenge(&r);
            assert!(c.contains("error=\"invalid_request\""), "{c}");
            assert!(!c.contains(&good), "{c}");
            let text = String::from_utf8_lossy(&r.body);
            assert!(!text.contains(&good) && !text.contains("alice"), "{text}");
        }
    }
    let r = send(vec![format!("Basic {good}")], http::Method::POST).await;
    assert_eq!(r.status, 401);
    assert!(!challenge(&r).contains("error="), "{}", challenge(&r));
    for value in [format!("bearer {good}"), format!("BEARER   {good}")] {
        let r = send(vec![value], http::Method::POST).await;
        assert_eq!(r.result()["content"][0]["text"], "alice");
    }
    p.http.stop().await;
}

// A tool filter hides tools per principal in `tools/list`; without a
// principal (no filter match) the filter decides as well.
#[tokio::test]
async fn tool_filter_lists_per_principal() {
    let (server, _) = server();
    server.set_tool_filter(|principal, tool| {
        principal.is_none_or(|p| p.subject != "alice" || tool == "whoami")
    });
    let prm = ProtectedResource::new("http://127.0.0.1/mcp", "http://127.0.0.1:1/issuer");
    let http = start(server, HttpOptions::new().auth(Tokens, prm)).await;
    let names = |r: &Resp| -> Vec<String> {
        r.result()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let alice = call_as(&http, "alice-token", "tools/list", json!({})).await;
    assert_eq!(names(&alice), ["whoami"]);
    let bob = call_as(&http, "bob-token", "tools/list", json!({})).await;
    let bob = names(&bob);
    assert!(
        bob.len() > 1 && bob.iter().any(|n| n == "whoami"),
        "{bob:?}"
    );
    http.stop().await;
}
