//! The test servers refuse what a strict server refuses, so client tests
//! that pass against them mean something.

// Helpers outside #[test] functions panic on failure too: that is how a test
// fails.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use switchboard_authkit::{
    AuthServer, AuthServerConfig, ResourceConfig, ResourceServer, TestClient,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

async fn send(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest
        .split_once('/')
        .map(|(a, p)| (a, format!("/{p}")))
        .unwrap();
    let mut stream = TcpStream::connect(authority).await.unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// Runs the authorization endpoint for a public client; returns the code.
async fn code(auth: &AuthServer, verifier: &str, resource: &str) -> String {
    let challenge = URL_SAFE_NO_PAD
        .encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()).as_ref());
    let query = form(&[
        ("response_type", "code"),
        ("client_id", "pub"),
        ("redirect_uri", "http://127.0.0.1:9/cb"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", "s"),
        ("resource", resource),
    ]);
    let a = send(
        &format!("{}/authorize?{query}", auth.issuer()),
        "GET",
        &[],
        "",
    )
    .await;
    assert_eq!(a.status, 302);
    let location = a.header("location").unwrap();
    assert!(location.starts_with("http://127.0.0.1:9/cb?"));
    let params: Vec<(String, String)> =
        form_urlencoded::parse(location.split_once('?').unwrap().1.as_bytes())
            .into_owned()
            .collect();
    assert!(params.contains(&("iss".into(), auth.issuer())));
    assert!(params.contains(&("state".into(), "s".into())));
    params.into_iter().find(|(k, _)| k == "code").unwrap().1
}

fn public_client() -> TestClient {
    TestClient {
        client_id: "pub".into(),
        secret: None,
        method: "none".into(),
        redirect_uris: vec!["http://127.0.0.1/cb".into()],
        jwt_key: None,
    }
}

#[tokio::test]
async fn registration_needs_application_type() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let url = format!("{}/register", auth.issuer());
    let without = send(
        &url,
        "POST",
        &[JSON],
        r#"{"redirect_uris":["http://127.0.0.1/cb"]}"#,
    )
    .await;
    assert_eq!(without.status, 400);
    assert_eq!(without.json()["error"], "invalid_client_metadata");
    let native = send(&url, "POST", &[JSON], r#"{"redirect_uris":["http://127.0.0.1/cb"],"application_type":"native","token_endpoint_auth_method":"client_secret_post"}"#).await;
    assert_eq!(native.status, 201);
    assert!(native.json()["client_secret"].is_string());
}

#[tokio::test]
async fn token_endpoint_checks_pkce_code_reuse_and_resource() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    auth.add_client(public_client());
    let token_url = format!("{}/token", auth.issuer());
    let exchange = |code: String, verifier: &'static str, resource: &'static str| {
        let token_url = token_url.clone();
        async move {
            let body = form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", "http://127.0.0.1:9/cb"),
                ("code_verifier", verifier),
                ("client_id", "pub"),
                ("resource", resource),
            ]);
            send(&token_url, "POST", &[FORM], &body).await
        }
    };
    let c = code(
        &auth,
        "right-verifier-right-verifier-right-verifier",
        "http://rs/mcp",
    )
    .await;
    let wrong = exchange(
        c,
        "wrong-verifier-wrong-verifier-wrong-verifier",
        "http://rs/mcp",
    )
    .await;
    assert_eq!(
        (wrong.status, wrong.json()["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    let c = code(
        &auth,
        "right-verifier-right-verifier-right-verifier",
        "http://rs/mcp",
    )
    .await;
    let other = exchange(
        c,
        "right-verifier-right-verifier-right-verifier",
        "http://elsewhere/mcp",
    )
    .await;
    assert_eq!(other.json()["error"], "invalid_target");

    let c = code(
        &auth,
        "right-verifier-right-verifier-right-verifier",
        "http://rs/mcp",
    )
    .await;
    let ok = exchange(
        c.clone(),
        "right-verifier-right-verifier-right-verifier",
        "http://rs/mcp",
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let again = exchange(
        c,
        "right-verifier-right-verifier-right-verifier",
        "http://rs/mcp",
    )
    .await;
    assert_eq!(again.json()["error"], "invalid_grant", "a code works once");
}

#[tokio::test]
async fn client_authentication_is_checked() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    auth.add_client(TestClient::basic("c", "right", &[]));
    let token_url = format!("{}/token", auth.issuer());
    let body = form(&[
        ("grant_type", "client_credentials"),
        ("resource", "http://rs/mcp"),
    ]);
    for (secret, status) in [("wrong", 401), ("right", 200)] {
        let basic = format!("Basic {}", STANDARD.encode(format!("c:{secret}")));
        let a = send(
            &token_url,
            "POST",
            &[FORM, ("Authorization", &basic)],
            &body,
        )
        .await;
        assert_eq!(a.status, status, "{}", a.body);
    }
    let unauthenticated = send(&token_url, "POST", &[FORM], &body).await;
    assert_eq!(unauthenticated.status, 401);
}

#[tokio::test]
async fn resource_server_checks_audience_expiry_and_scope() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let mcp = ResourceServer::start(
        ResourceConfig {
            method_scopes: vec![("tools/call".into(), vec!["mcp:write".into()])],
            ..Default::default()
        },
        &auth,
    )
    .await;
    let call = |token: Option<String>, method: &'static str| {
        let url = mcp.url();
        async move {
            let auth = token.map(|t| format!("Bearer {t}"));
            let mut headers = vec![JSON];
            if let Some(a) = &auth {
                headers.push(("Authorization", a.as_str()));
            }
            send(
                &url,
                "POST",
                &headers,
                &json!({"jsonrpc": "2.0", "id": 1, "method": method}).to_string(),
            )
            .await
        }
    };
    let prm_url = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        mcp.base_url()
    );

    let missing = call(None, "tools/list").await;
    assert_eq!(missing.status, 401);
    let challenge = missing.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer ")
            && challenge.contains(&format!("resource_metadata=\"{prm_url}\"")),
        "{challenge}"
    );
    assert!(
        !challenge.contains("error="),
        "no error code without a token (RFC 6750 §3.1)"
    );

    let wrong_audience = call(
        Some(auth.mint_access_token("http://other/mcp", "", 60)),
        "tools/list",
    )
    .await;
    assert_eq!(wrong_audience.status, 401);
    assert!(
        wrong_audience
            .header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\"")
    );

    let expired = call(
        Some(auth.mint_access_token(&mcp.resource(), "", -10)),
        "tools/list",
    )
    .await;
    assert_eq!(expired.status, 401);

    let read_only = auth.mint_access_token(&mcp.resource(), "mcp:read", 60);
    assert_eq!(
        call(Some(read_only.clone()), "tools/list").await.status,
        200
    );
    let forbidden = call(Some(read_only), "tools/call").await;
    assert_eq!(forbidden.status, 403);
    let challenge = forbidden.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp:write\""),
        "{challenge}"
    );

    let prm = send(&prm_url, "GET", &[], "").await.json();
    assert_eq!(prm["resource"], mcp.resource());
    assert_eq!(prm["authorization_servers"], json!([auth.issuer()]));
}
