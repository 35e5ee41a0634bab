//! OAuth end to end with real components on 127.0.0.1: Switchboard's OAuth
//! client (`OAuthProvider` with the headless user agent, over the real HTTP
//! transport) logs in at the test authorization server, and the resource
//! server is Switchboard's own server framework, whose [`ClaimsValidator`]
//! checks the authorization server's ES256 access tokens (signature via
//! `jwt::verify`, then issuer, audience = the server's URL, expiry, scopes).
//!
//! The client's own OAuth tests run against authkit's scripted endpoint;
//! here the framework is the resource server, so what is proved is that
//! the two halves of Switchboard agree: discovery from our 401 and our
//! metadata document, audience-bound tokens we accept, refresh after our
//! 401 for an expired token, step-up after our 403, and refusals of tokens
//! from the wrong issuer or for the wrong resource.

// Helpers outside #[test] functions panic on failure too: that is how a test
// fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_authkit::jwt::{self, PublicKey};
use switchboard_authkit::{AuthServer, AuthServerConfig, IssMode};
use switchboard_client::{Client, ClientError};
use switchboard_oauth::{OAuthError, OAuthProvider};
use switchboard_server::http::HttpOptions;
use switchboard_server::{
    AuthError, AuthRequest, BoxFuture, ClaimsValidator, Context, Principal, ProtectedResource,
    Server, TokenValidator,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Generous: the machine is shared and slow at times.
mod common;

use common::WAIT;

/// What the resource server decided, in order.
#[derive(Clone, Debug, PartialEq)]
enum Decision {
    /// A token was accepted for this principal.
    Accepted(Principal),
    /// A token was refused, or a request lacked scope.
    Refused(AuthError),
}

/// Records every decision of the validator it wraps.
struct Recording<V> {
    inner: V,
    log: Arc<Mutex<Vec<Decision>>>,
}

impl<V: TokenValidator> TokenValidator for Recording<V> {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(async move {
            let outcome = self.inner.validate(token).await;
            self.log.lock().unwrap().push(match &outcome {
                Ok(p) => Decision::Accepted(p.clone()),
                Err(e) => Decision::Refused(e.clone()),
            });
            outcome
        })
    }

    fn authorize(&self, principal: &Principal, request: &AuthRequest<'_>) -> Result<(), AuthError> {
        let outcome = self.inner.authorize(principal, request);
        if let Err(e) = &outcome {
            self.log.lock().unwrap().push(Decision::Refused(e.clone()));
        }
        outcome
    }
}

/// Switchboard's server framework protecting two tools: `whoami` needs
/// `tickets:read` (like everything), `close_ticket` also `tickets:write`.
struct Tickets {
    url: String,
    log: Arc<Mutex<Vec<Decision>>>,
    /// Seconds the server's clock runs ahead of the real one.
    ahead: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Tickets {
    /// Serves on 127.0.0.1:0, trusting `auth` (the metadata names it), and
    /// verifying signatures with `keys`.
    async fn start(auth: &AuthServer, keys: Vec<PublicKey>) -> Tickets {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let prm = ProtectedResource::new(url.clone(), auth.issuer()).with_scopes(["tickets:read"]);
        let keys = Arc::new(keys);
        let decode = move |token: String| {
            let keys = Arc::clone(&keys);
            async move {
                let mut why = String::from("no key");
                for key in keys.iter() {
                    match jwt::verify(&token, key) {
                        Ok((_, Value::Object(claims))) => return Ok(claims),
                        Ok(_) => why = "the claims are not an object".into(),
                        // The signature matched but the token is no good.
                        Err(e) if e != "bad signature" => {
                            return Err(AuthError::Unauthorized(format!("the token is {e}")));
                        }
                        Err(e) => why = e,
                    }
                }
                Err(AuthError::Unauthorized(format!(
                    "the token is not valid: {why}"
                )))
            }
        };
        let ahead = Arc::new(AtomicU64::new(0));
        let clock_ahead = Arc::clone(&ahead);
        let validator = ClaimsValidator::for_resource(&prm, decode)
            .require_scopes(["tickets:read"])
            .tool_scopes("close_ticket", ["tickets:write"])
            .leeway(Duration::ZERO)
            .clock(move || jwt::now() + clock_ahead.load(Ordering::SeqCst));
        let log = Arc::new(Mutex::new(Vec::new()));
        let validator = Recording {
            inner: validator,
            log: Arc::clone(&log),
        };
        let server = Server::builder("tickets", "1.0.0")
            .tool(
                "whoami",
                "Names the caller and their scopes",
                |ctx: Context| async move {
                    let p = ctx.principal().expect("authenticated");
                    let mut scopes = p.scopes.clone();
                    scopes.sort_unstable();
                    format!("sub={} scopes={}", p.subject, scopes.join(" "))
                },
            )
            .tool("close_ticket", "Closes the ticket", || async { "closed" })
            .build()
            .unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let options = HttpOptions::new().auth(validator, prm);
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            switchboard_server::http::serve(server, listener, options, shutdown)
                .await
                .unwrap();
        });
        Tickets {
            url,
            log,
            ahead,
            stop: Some(stop),
            task,
        }
    }

    fn decisions(&self) -> Vec<Decision> {
        self.log.lock().unwrap().clone()
    }

    fn accepted(&self) -> Vec<Principal> {
        self.decisions()
            .into_iter()
            .filter_map(|d| match d {
                Decision::Accepted(p) => Some(p),
                Decision::Refused(_) => None,
            })
            .collect()
    }

    fn refusals(&self) -> Vec<AuthError> {
        self.decisions()
            .into_iter()
            .filter_map(|d| match d {
                Decision::Refused(e) => Some(e),
                Decision::Accepted(_) => None,
            })
            .collect()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }
}

fn provider(url: &str) -> OAuthProvider {
    OAuthProvider::new(common::headless_config("tickets", url)).unwrap()
}

async fn connect(url: &str, provider: &OAuthProvider) -> Result<Client, ClientError> {
    common::connect("tickets", url, provider).await
}

async fn call(client: &Client, tool: &str) -> String {
    client
        .call_tool(tool, None)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
        .joined_text()
}

fn grant_types(auth: &AuthServer) -> Vec<String> {
    auth.token_requests()
        .iter()
        .map(|r| r.form_param("grant_type").unwrap_or("").to_owned())
        .collect()
}

/// A bare POST with a bearer token: the status and the challenge.
async fn post_with(url: &str, token: &str) -> (u16, String) {
    let credentials = format!("Authorization: Bearer {token}\r\n");
    let (status, raw) = common::post_tools_list(url, &credentials).await;
    (status, common::header_of(&raw, "www-authenticate"))
}

// AUTH-S-01/02/04 with AUTH-C-01/02/11/12/16/21: our 401 and metadata lead
// the client through discovery, registration and the code flow; the token
// it gets is bound to our URL and accepted; the principal reaches the tool.
#[tokio::test]
async fn full_login_and_tool_calls() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let rs = Tickets::start(&auth, vec![auth.public_key()]).await;
    let p = provider(&rs.url);
    let client = connect(&rs.url, &p).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.items.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["close_ticket", "whoami"]);
    assert_eq!(
        call(&client, "whoami").await,
        "sub=user-1 scopes=tickets:read"
    );

    // Discovery went through our metadata document (the path-inserted URL
    // from our challenge) to the authorization server.
    let authz = auth.authorization_requests();
    assert_eq!(authz.len(), 1);
    assert_eq!(authz[0].query_param("resource"), Some(rs.url.as_str()));
    assert_eq!(authz[0].query_param("scope"), Some("tickets:read"));
    assert_eq!(
        auth.token_requests()[0].form_param("resource"),
        Some(rs.url.as_str())
    );
    // Every token we saw was accepted, issued by that server for us.
    assert!(rs.refusals().is_empty(), "{:?}", rs.refusals());
    let accepted = rs.accepted();
    assert!(accepted.len() >= 3, "discover, list, call: {accepted:?}");
    for principal in &accepted {
        assert_eq!(principal.claims["aud"], rs.url.as_str());
        assert_eq!(principal.issuer(), Some(auth.issuer().as_str()));
    }
    client.close().await;
    rs.stop().await;
}

// AUTH-S-04/06 with AUTH-C-23: a token our server finds expired is refused
// with 401 invalid_token; the client refreshes it (no new authorization)
// and the call goes through with the new token.
#[tokio::test]
async fn expired_token_is_refreshed_after_our_401() {
    // The client believes a 90 s token for 60 s (it refreshes 30 s early);
    // our server's clock then jumps 120 s ahead, so to us it has expired.
    let auth = AuthServer::start(AuthServerConfig {
        access_token_ttl: 90,
        ..Default::default()
    })
    .await;
    let rs = Tickets::start(&auth, vec![auth.public_key()]).await;
    let p = provider(&rs.url);
    let client = connect(&rs.url, &p).await.unwrap();
    call(&client, "whoami").await;
    let first = rs.accepted().last().unwrap().claims["jti"].clone();

    rs.ahead.store(120, Ordering::SeqCst);
    auth.configure(|c| c.access_token_ttl = 3600);
    assert_eq!(
        call(&client, "whoami").await,
        "sub=user-1 scopes=tickets:read"
    );

    assert!(
        rs.refusals()
            .contains(&AuthError::Unauthorized("the token expired".into())),
        "{:?}",
        rs.refusals()
    );
    assert_eq!(grant_types(&auth), ["authorization_code", "refresh_token"]);
    assert_eq!(auth.authorization_requests().len(), 1, "no new login");
    let refresh = &auth.token_requests()[1];
    assert_eq!(refresh.form_param("resource"), Some(rs.url.as_str()));
    let last = rs.accepted().last().unwrap().claims["jti"].clone();
    assert_ne!(first, last, "the call went through with the new token");
    client.close().await;
    rs.stop().await;
}

// AUTH-S-07 with AUTH-C-20: our 403 insufficient_scope names every scope
// the call needs; the client re-authorizes for the union and retries.
#[tokio::test]
async fn step_up_after_our_403() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let rs = Tickets::start(&auth, vec![auth.public_key()]).await;
    let p = provider(&rs.url);
    let client = connect(&rs.url, &p).await.unwrap();
    assert_eq!(
        call(&client, "whoami").await,
        "sub=user-1 scopes=tickets:read"
    );
    assert_eq!(call(&client, "close_ticket").await, "closed");

    assert!(
        rs.refusals().contains(&AuthError::InsufficientScope(vec![
            "tickets:read".into(),
            "tickets:write".into()
        ])),
        "{:?}",
        rs.refusals()
    );
    let authz = auth.authorization_requests();
    assert_eq!(authz.len(), 2, "one step-up");
    let mut stepped: Vec<_> = authz[1].query_param("scope").unwrap().split(' ').collect();
    stepped.sort_unstable();
    assert_eq!(stepped, ["tickets:read", "tickets:write"]);
    assert_eq!(
        call(&client, "whoami").await,
        "sub=user-1 scopes=tickets:read tickets:write"
    );
    client.close().await;
    rs.stop().await;
}

// AUTH-C-13 / AUTH-C-04: an authorization response whose `iss` is not the
// issuer, or metadata naming another issuer, stops the client before any
// token exists; our server never accepted anything.
#[tokio::test]
async fn issuer_mismatch_is_refused_by_the_client() {
    let auth = AuthServer::start(AuthServerConfig {
        iss: IssMode::Value("https://evil.example.com".into()),
        ..Default::default()
    })
    .await;
    let rs = Tickets::start(&auth, vec![auth.public_key()]).await;
    let err = provider(&rs.url).login().await.unwrap_err();
    assert!(matches!(err, OAuthError::AuthorizationResponse(_)), "{err}");
    assert_eq!(auth.authorization_requests().len(), 1);
    assert!(auth.token_requests().is_empty(), "no code sent anywhere");

    auth.configure(|c| {
        c.iss = IssMode::Correct;
        c.metadata_issuer = Some("https://evil.example.com".into());
    });
    let err = provider(&rs.url).login().await.unwrap_err();
    assert!(err.to_string().contains("issuer"), "{err}");
    assert_eq!(auth.authorization_requests().len(), 1, "not used");
    assert!(rs.accepted().is_empty());
    rs.stop().await;
}

// AUTH-S-04/05: tokens our server must not accept, whoever signed them: one
// from another authorization server (even with a key we hold), one for
// another resource, one expired; each a 401 invalid_token.
#[tokio::test]
async fn foreign_tokens_are_refused_by_our_server() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let other = AuthServer::start(AuthServerConfig::default()).await;
    // We hold the other server's key too (a shared key set): only the
    // issuer check stands between its tokens and our tools.
    let rs = Tickets::start(&auth, vec![auth.public_key(), other.public_key()]).await;
    let base = rs.url.trim_end_matches("/mcp").to_owned();
    let cases = [
        (
            other.mint_access_token(&rs.url, "tickets:read", 3600),
            "not issued by an authorization server of this resource",
        ),
        (
            auth.mint_access_token(&format!("{base}/other"), "tickets:read", 3600),
            "not issued for this resource",
        ),
        (
            auth.mint_access_token(&rs.url, "tickets:read", -120),
            "expired",
        ),
    ];
    for (token, why) in &cases {
        let (status, challenge) = post_with(&rs.url, token).await;
        assert_eq!(status, 401, "{why}");
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains(why),
            "{challenge}"
        );
        assert!(
            challenge.contains(&format!(
                "resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            )),
            "{challenge}"
        );
    }
    assert!(rs.accepted().is_empty());
    // The same server's token for us is fine.
    let good = auth.mint_access_token(&rs.url, "tickets:read", 3600);
    assert_eq!(post_with(&rs.url, &good).await.0, 200);
    rs.stop().await;
}
