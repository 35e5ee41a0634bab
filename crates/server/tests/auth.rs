//! Bearer tokens on HTTP: 401 with the metadata location, 403 for missing
//! scope, the principal reaching handlers, and state bound to it.

use serde_json::json;
use switchboard_server::ProtectedResource;
use switchboard_server::http::HttpOptions;

use crate::util::*;

async fn start_with_auth() -> Http {
    let (server, _) = server();
    let prm = ProtectedResource::new("http://127.0.0.1/mcp", "http://127.0.0.1:1/issuer")
        .with_scopes(["admin"]);
    start(server, HttpOptions::new().auth(Tokens, prm)).await
}

fn with_token(method: &str, params: &serde_json::Value, token: &str) -> Vec<(String, String)> {
    let mut h = standard_headers(method, params);
    h.push(header("authorization", &format!("Bearer {token}")));
    h
}

async fn call_as(http: &Http, token: &str, method: &str, params: serde_json::Value) -> Resp {
    let params = with_meta(params);
    http.post(
        &with_token(method, &params, token),
        body(json!(1), method, params),
    )
    .await
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

// MRTR-09: a requestState issued to one principal is refused for another.
#[tokio::test]
async fn state_is_bound_to_the_principal() {
    let http = start_with_auth().await;
    let caps = meta_with(json!({"elicitation": {}}));
    let round = |answers: serde_json::Value| json!({"name": "book", "_meta": caps.clone(), "inputResponses": answers});
    call_as(
        &http,
        "alice-token",
        "tools/call",
        json!({"name": "book", "_meta": caps.clone()}),
    )
    .await;
    let r = call_as(
        &http,
        "alice-token",
        "tools/call",
        round(json!({"seat": {"action": "accept", "content": {"seat": "1C"}}})),
    )
    .await
    .result();
    let state = r["requestState"].as_str().unwrap().to_owned();
    let mut retry = round(json!({"confirm": {"action": "accept", "content": {"ok": true}}}));
    retry["requestState"] = json!(state);
    let r = call_as(&http, "bob-token", "tools/call", retry.clone()).await;
    assert_eq!(r.error_code(), -32602);
    assert!(
        r.response()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("different principal")
    );
    let r = call_as(&http, "alice-token", "tools/call", retry).await;
    assert_eq!(r.result()["content"][0]["text"], "booked seat \"1C\"");
    http.stop().await;
}
