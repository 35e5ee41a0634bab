//! Enterprise OAuth end to end on 127.0.0.1: Switchboard's OAuth client
//! against the test authorization server extended for DPoP (RFC 9449),
//! the JWT-bearer grant (RFC 7523) and token exchange to an ID-JAG
//! (SEP-990), with Switchboard's server framework as the resource server
//! checking DPoP proofs.

// Helpers outside #[test] functions panic on failure too: that is how a test
// fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use switchboard_authkit::jwt::{self, PublicKey, Signer};
use switchboard_authkit::{AuthServer, AuthServerConfig, TestClient};
use switchboard_client::{Client, ClientError};
use switchboard_oauth::{
    AssertionSource, EnterpriseGrant, Grant, IdentityProvider, JwtBearerGrant, OAuthConfig,
    OAuthProvider, PreRegisteredClient, Secret, TokenStore,
};
use switchboard_server::http::HttpOptions;
use switchboard_server::{AuthError, ClaimsValidator, DpopVerifier, ProtectedResource, Server};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

mod common;

/// The server framework with one tool, trusting `auth`'s tokens.
struct Resource {
    url: String,
    _stop: oneshot::Sender<()>,
}

impl Resource {
    async fn start(auth: &AuthServer, dpop: DpopVerifier) -> Resource {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let prm = ProtectedResource::new(url.clone(), auth.issuer());
        let key = auth.public_key();
        let decode = move |token: String| {
            let key = key.clone();
            async move {
                match jwt::verify(&token, &key) {
                    Ok((_, Value::Object(claims))) => Ok(claims),
                    _ => Err(AuthError::Unauthorized("the token is not valid".into())),
                }
            }
        };
        let validator = ClaimsValidator::for_resource(&prm, decode);
        let server = Server::builder("secured", "1.0.0")
            .tool("ping", "Answers pong", || async { "pong" })
            .build()
            .unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let options = HttpOptions::new().auth(validator, prm).dpop(dpop);
        tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            switchboard_server::http::serve(server, listener, options, shutdown)
                .await
                .unwrap();
        });
        Resource { url, _stop: stop }
    }
}

fn config(url: &str) -> OAuthConfig {
    common::headless_config("secured", url)
}

async fn connect(url: &str, provider: &OAuthProvider) -> Result<Client, ClientError> {
    common::connect("secured", url, provider).await
}

async fn ping(client: &Client) -> String {
    client.call_tool("ping", None).await.unwrap().joined_text()
}

/// A client of the resource server at `url` through `provider`, whose
/// first call is answered.
async fn connected_and_pinged(url: &str, provider: &OAuthProvider) -> Client {
    let client = connect(url, provider).await.unwrap();
    assert_eq!(ping(&client).await, "pong");
    client
}

/// An authorization server binding tokens with DPoP (asking for `nonce`
/// in proofs, when given) and the resource server trusting it (requiring
/// a nonce of its own then).
async fn dpop_servers(nonce: Option<&str>) -> (AuthServer, Resource) {
    let auth = AuthServer::start(AuthServerConfig {
        dpop: true,
        dpop_nonce: nonce.map(str::to_owned),
        ..AuthServerConfig::default()
    })
    .await;
    let verifier = match nonce {
        Some(_) => DpopVerifier::new().require_nonce(Duration::from_secs(600)),
        None => DpopVerifier::new(),
    };
    let rs = Resource::start(&auth, verifier).await;
    (auth, rs)
}

/// A public client registered as `client_id`, with no redirect URI.
fn public_client(client_id: &str) -> TestClient {
    TestClient {
        client_id: client_id.into(),
        secret: None,
        method: "none".into(),
        redirect_uris: Vec::new(),
        jwt_key: None,
    }
}

fn claims(token: &str) -> Value {
    let part = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// A raw POST with these credentials: the status, `WWW-Authenticate` and
/// `DPoP-Nonce`.
async fn post_with(url: &str, authorization: &str, proof: Option<&str>) -> (u16, String, String) {
    let proof = proof.map(|p| format!("DPoP: {p}\r\n")).unwrap_or_default();
    let credentials = format!("Authorization: {authorization}\r\n{proof}");
    let (status, raw) = common::post_tools_list(url, &credentials).await;
    (
        status,
        common::header_of(&raw, "www-authenticate"),
        common::header_of(&raw, "dpop-nonce"),
    )
}

// RFC 9449 end to end: the client binds its token to a key because the
// authorization server advertises DPoP, presents it with the DPoP scheme
// and a proof per request, and the framework accepts it.
#[tokio::test]
async fn dpop_bound_tokens_work_end_to_end() {
    let (auth, rs) = dpop_servers(None).await;
    let provider = OAuthProvider::new(config(&rs.url)).unwrap();
    let client = connected_and_pinged(&rs.url, &provider).await;
    assert_eq!(ping(&client).await, "pong");
    let token_request = &auth.token_requests()[0];
    assert!(
        token_request.header("dpop").is_some(),
        "a proof at the token endpoint"
    );
    let header = provider.authorization_header().await.unwrap().unwrap();
    let token = header.strip_prefix("DPoP ").expect("the DPoP scheme");
    assert!(claims(token)["cnf"]["jkt"].is_string());
    assert_eq!(provider.method(), "authorization code, DPoP-bound");

    // Opting out: a Bearer token from the same server.
    let plain = OAuthProvider::new(config(&rs.url).dpop(false)).unwrap();
    let _client = connected_and_pinged(&rs.url, &plain).await;
    assert_eq!(plain.method(), "authorization code, bearer");
}

// The framework refuses a bound token without its proof, as Bearer, with a
// replayed proof, and with a proof for another URL or method.
#[tokio::test]
async fn dpop_proofs_are_checked_by_the_resource_server() {
    let (_auth, rs) = dpop_servers(None).await;
    let provider = OAuthProvider::new(config(&rs.url)).unwrap();
    provider.login().await.unwrap();
    let header = provider.authorization_header().await.unwrap().unwrap();
    let token = header.strip_prefix("DPoP ").unwrap().to_owned();
    let proof = |method: &str, url: &str| {
        provider
            .dpop_proof(method, url, Some(&header))
            .unwrap()
            .unwrap()
    };

    let good = proof("POST", &rs.url);
    assert_eq!(post_with(&rs.url, &header, Some(&good)).await.0, 200);
    let (status, challenge, _) = post_with(&rs.url, &header, Some(&good)).await;
    assert_eq!(status, 401);
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    assert!(
        challenge.contains("invalid_dpop_proof") && challenge.contains("replayed"),
        "{challenge}"
    );

    let (status, challenge, _) = post_with(&rs.url, &header, None).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("exactly one DPoP proof"), "{challenge}");

    let bearer = format!("Bearer {token}");
    let (status, challenge, _) = post_with(&rs.url, &bearer, Some(&proof("POST", &rs.url))).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("bound to a DPoP key"), "{challenge}");

    let other_url = rs.url.replace("/mcp", "/other");
    let (status, challenge, _) =
        post_with(&rs.url, &header, Some(&proof("POST", &other_url))).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("another URL"), "{challenge}");
    let (status, challenge, _) = post_with(&rs.url, &header, Some(&proof("GET", &rs.url))).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("another HTTP method"), "{challenge}");

    // The key never shows in the provider's Debug output or its errors.
    let shown = format!("{provider:?}");
    assert!(!shown.contains(&token), "{shown}");
}

// Nonces from both servers: the token endpoint's use_dpop_nonce and the
// resource server's are each answered by one retry with the nonce.
#[tokio::test]
async fn dpop_nonces_round_trip() {
    let (auth, rs) = dpop_servers(Some("as-nonce-1")).await;
    let provider = OAuthProvider::new(config(&rs.url)).unwrap();
    let _client = connected_and_pinged(&rs.url, &provider).await;
    let proofs: Vec<Value> = auth
        .token_requests()
        .iter()
        .map(|r| claims(r.header("dpop").unwrap()))
        .collect();
    assert_eq!(proofs.len(), 2, "one refusal, one retry");
    assert!(proofs[0].get("nonce").is_none());
    assert_eq!(proofs[1]["nonce"], "as-nonce-1");

    // A proof without the resource server's nonce is told which one to use.
    let header = provider.authorization_header().await.unwrap().unwrap();
    let good = provider
        .dpop_proof("POST", &rs.url, Some(&header))
        .unwrap()
        .unwrap();
    assert!(
        claims(&good)["nonce"].is_string(),
        "the client kept the nonce"
    );
}

/// A workload JWT signed by `signer` for `audience`, expiring in `ttl`
/// seconds (negative: expired).
fn workload_jwt(signer: &Signer, audience: &str, ttl: i64) -> String {
    let now = jwt::now();
    signer.sign(&json!({
        "iss": "https://workload-issuer.example", "sub": "system:serviceaccount:ci:agent",
        "aud": audience, "iat": now, "exp": now.saturating_add_signed(ttl),
    }))
}

// RFC 7523 for workloads: the assertion file the platform refreshes is
// read for each token request; an expired one is refused before it is
// sent, with a message that says so; an untrusted one is refused by the
// authorization server.
#[tokio::test]
async fn jwt_bearer_grant_with_an_assertion_file() {
    let workload = Signer::generate("workload");
    let auth = AuthServer::start(AuthServerConfig {
        assertion_keys: vec![PublicKey::Es256(workload.public_key())],
        ..AuthServerConfig::default()
    })
    .await;
    auth.add_client(public_client("ci-agent"));
    let rs = Resource::start(&auth, DpopVerifier::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, workload_jwt(&workload, &auth.issuer(), 300)).unwrap();
    let grant = |file: &std::path::Path| {
        Grant::JwtBearer(JwtBearerGrant {
            client: PreRegisteredClient::new("ci-agent"),
            assertion: AssertionSource::File(file.to_owned()),
        })
    };
    let provider =
        OAuthProvider::new(OAuthConfig::new("secured", &rs.url).grant(grant(&file))).unwrap();
    let _client = connected_and_pinged(&rs.url, &provider).await;
    assert_eq!(
        auth.token_requests()[0].form_param("grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert!(auth.authorization_requests().is_empty(), "no browser");
    assert_eq!(provider.method(), "JWT bearer, bearer");

    std::fs::write(&file, workload_jwt(&workload, &auth.issuer(), -60)).unwrap();
    let expired =
        OAuthProvider::new(OAuthConfig::new("secured", &rs.url).grant(grant(&file))).unwrap();
    let before = auth.token_requests().len();
    let err = expired.login().await.unwrap_err().to_string();
    assert!(
        err.contains("expired") && err.contains("assertion file"),
        "{err}"
    );
    assert_eq!(auth.token_requests().len(), before, "nothing sent");

    let stranger = Signer::generate("stranger");
    std::fs::write(&file, workload_jwt(&stranger, &auth.issuer(), 300)).unwrap();
    let untrusted =
        OAuthProvider::new(OAuthConfig::new("secured", &rs.url).grant(grant(&file))).unwrap();
    let err = untrusted.login().await.unwrap_err().to_string();
    assert!(err.contains("invalid_grant"), "{err}");
}

// SEP-990: the user's ID token is exchanged at the identity provider for
// an ID-JAG, which the MCP server's authorization server takes with the
// JWT-bearer grant: no authorization request, no consent screen; and the
// tokens come out DPoP-bound where the authorization server offers it.
#[tokio::test]
async fn enterprise_managed_authorization() {
    let idp = AuthServer::start(AuthServerConfig {
        token_exchange: true,
        ..AuthServerConfig::default()
    })
    .await;
    idp.add_client(public_client("switchboard-at-idp"));
    let auth = AuthServer::start(AuthServerConfig {
        assertion_keys: vec![idp.public_key()],
        dpop: true,
        ..AuthServerConfig::default()
    })
    .await;
    auth.add_client(TestClient::basic("switchboard", "s3cret", &[]));
    let rs = Resource::start(&auth, DpopVerifier::new()).await;
    let grant = |id_token: String| {
        Grant::EnterpriseManaged(EnterpriseGrant {
            idp: IdentityProvider {
                name: "corp".into(),
                issuer: idp.issuer(),
                token_endpoint: None,
                client: PreRegisteredClient::new("switchboard-at-idp"),
                id_token: AssertionSource::Value(Secret::new(id_token)),
            },
            client: PreRegisteredClient::new("switchboard").secret("s3cret"),
        })
    };
    let id_token = idp.mint_id_token("alice", "switchboard-at-idp", 300);
    let provider =
        OAuthProvider::new(OAuthConfig::new("secured", &rs.url).grant(grant(id_token))).unwrap();
    let _client = connected_and_pinged(&rs.url, &provider).await;
    let exchange = &idp.token_requests()[0];
    assert_eq!(
        exchange.form_param("requested_token_type"),
        Some("urn:ietf:params:oauth:token-type:id-jag")
    );
    assert_eq!(
        exchange.form_param("audience"),
        Some(auth.issuer().as_str())
    );
    assert_eq!(exchange.form_param("resource"), Some(rs.url.as_str()));
    assert!(
        auth.authorization_requests().is_empty(),
        "no consent screen"
    );
    assert_eq!(provider.method(), "enterprise-managed, DPoP-bound");

    // An expired login at the identity provider says how to renew it.
    let stale = idp.mint_id_token("alice", "switchboard-at-idp", -60);
    let provider =
        OAuthProvider::new(OAuthConfig::new("secured", &rs.url).grant(grant(stale))).unwrap();
    let err = provider.login().await.unwrap_err().to_string();
    assert!(
        err.contains("expired") && err.contains("switchboard auth login --idp corp"),
        "{err}"
    );
}

// Keys and tokens never reach logs (AUTH-C-25), DPoP keys included: a
// DPoP flow with a persistent store under a TRACE subscriber, then the
// stored key and the token are searched for in the logs and in every
// Debug form.
#[tokio::test]
async fn no_dpop_key_reaches_the_logs() {
    let capture = switchboard_testutil::LogCapture::default();
    let _guard = capture.install();
    let (_auth, rs) = dpop_servers(Some("as-nonce")).await;
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::at(dir.path().join("oauth.json"));
    let provider = OAuthProvider::new(config(&rs.url).store(store.clone())).unwrap();
    let _client = connected_and_pinged(&rs.url, &provider).await;
    let stored = store.tokens(&rs.url).unwrap().expect("stored tokens");
    let key = stored.dpop_key.clone().expect("the DPoP key is stored");
    let secrets = [
        key.expose().to_owned(),
        stored.access_token.expose().to_owned(),
    ];
    let shown = [
        format!("{provider:?}"),
        format!("{stored:?}"),
        format!("{:?}", provider.status().await.unwrap()),
    ];
    let logs = capture.text();
    assert!(
        logs.contains("authorized"),
        "the subscriber captured the flow"
    );
    for secret in &secrets {
        assert!(!logs.contains(secret.as_str()), "a secret reached the logs");
        for text in &shown {
            assert!(
                !text.contains(secret.as_str()),
                "a secret reached Debug output: {text}"
            );
        }
    }
}
