//! The resource-server side of JWT access tokens against the test issuer:
//! the framework's `JwtVerifier` (its key set fetched from the issuer's
//! `jwks_uri` over Switchboard's `IssuerClient`, as the gateway does)
//! under `ClaimsValidator`. The header (`typ`, `crit`), the claims (`exp`,
//! `sub`), and the key set while the issuer is down: one fetch at a time,
//! none during the back-off, the cached keys in use meanwhile.
//!
//! The verifier's clock is the test's: time moves only when the test says.

// Helpers outside #[test] functions panic on failure too: that is how a test
// fails.
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_authkit::jwt::{Signer, now};
use switchboard_authkit::{AuthServer, AuthServerConfig};
use switchboard_oauth::IssuerClient;
use switchboard_server::jwt::{JWKS_MAX_AGE, JWKS_RETRY_FIRST, JWKS_STALE_IF_ERROR, JwtVerifier};
use switchboard_server::{AuthError, ClaimsValidator, TokenValidator};

const RESOURCE: &str = "http://127.0.0.1:1/mcp";
/// Bounded waits: a verifier that waits for what it should not fails the
/// test after this, it does not hang it.
const BOUND: Duration = Duration::from_secs(20);

/// A clock that moves only when told.
#[derive(Clone)]
struct Clock {
    start: Instant,
    offset_ms: Arc<AtomicU64>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            offset_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    fn now(&self) -> Instant {
        self.start + Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }

    fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap();
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

/// The verifier's fetches: how many began, and a switch that holds the
/// next ones (they wait until the test ends) to see who waits for them.
#[derive(Clone, Default)]
struct Fetches {
    begun: Arc<AtomicUsize>,
    hold: Arc<AtomicBool>,
}

impl Fetches {
    fn begun(&self) -> usize {
        self.begun.load(Ordering::SeqCst)
    }
}

/// The validator a resource server puts in front of its endpoint: the
/// issuer's JWTs, for [`RESOURCE`].
struct Setup {
    auth: AuthServer,
    clock: Clock,
    fetches: Fetches,
    validator: Arc<dyn TokenValidator>,
}

async fn setup(configure: impl FnOnce(JwtVerifier) -> JwtVerifier) -> Setup {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let clock = Clock::new();
    let fetches = Fetches::default();
    let client = IssuerClient::new(Duration::from_secs(10)).unwrap();
    let url = format!("{}/jwks", auth.issuer());
    let (f, c) = (fetches.clone(), clock.clone());
    let verifier = JwtVerifier::new(move || {
        let (client, url, f) = (client.clone(), url.clone(), f.clone());
        Box::pin(async move {
            f.begun.fetch_add(1, Ordering::SeqCst);
            if f.hold.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            client
                .get_object(&url, "JWK set")
                .await
                .map_err(|e| e.to_string())
        })
    })
    .clock(move || c.now());
    let verifier = Arc::new(configure(verifier));
    let validator = ClaimsValidator::new(RESOURCE, move |token: String| {
        let verifier = Arc::clone(&verifier);
        async move { verifier.claims(&token).await }
    })
    .issuer(auth.issuer());
    Setup {
        auth,
        clock,
        fetches,
        validator: Arc::new(validator),
    }
}

impl Setup {
    fn claims(&self) -> Value {
        json!({
            "iss": self.auth.issuer(), "aud": RESOURCE, "sub": "alice",
            "client_id": "agent-7", "iat": now(), "exp": now() + 300,
        })
    }

    /// A token with the issuer's key: its claims and header changed.
    fn token(&self, claims: &[(&str, Value)], header: Value) -> String {
        let mut c = self.claims();
        for (k, v) in claims {
            c[*k] = v.clone();
        }
        self.auth.sign_access_token(&header, &c)
    }

    fn good(&self) -> String {
        self.token(&[], json!({}))
    }

    async fn check(&self, token: &str) -> Result<String, AuthError> {
        within(self.validator.validate(token))
            .await
            .map(|p| p.subject)
    }
}

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("waited for something it should not have")
}

fn unauthorized(result: Result<String, AuthError>, why: &str) {
    match result {
        Err(AuthError::Unauthorized(m)) => assert!(m.contains(why), "{m:?} vs {why:?}"),
        other => panic!("wanted 401 ({why}), got {other:?}"),
    }
}

fn unavailable(result: Result<String, AuthError>) {
    assert!(
        matches!(result, Err(AuthError::Unavailable(_))),
        "wanted 503, got {result:?}"
    );
}

// RFC 9068 §2.2: exp is required; `"exp": null` used to be taken for a
// token that never expires.
#[tokio::test]
async fn exp_must_be_a_number() {
    let s = setup(|v| v).await;
    assert_eq!(s.check(&s.good()).await.unwrap(), "alice");
    let null = s.token(&[("exp", Value::Null)], json!({}));
    let mut c = s.claims();
    c.as_object_mut().unwrap().remove("exp");
    let missing = s.auth.sign_access_token(&json!({}), &c);
    let text = s.token(&[("exp", json!("tomorrow"))], json!({}));
    for token in [null, missing, text] {
        unauthorized(s.check(&token).await, "exp");
    }
}

// A `sub` that is not a string used to be replaced by `client_id`: the
// caller became another principal.
#[tokio::test]
async fn a_sub_that_is_not_a_string_is_refused() {
    let s = setup(|v| v).await;
    for sub in [
        json!(42),
        json!({"id": "alice"}),
        json!(["alice"]),
        Value::Null,
    ] {
        let token = s.token(&[("sub", sub.clone())], json!({}));
        unauthorized(s.check(&token).await, "sub is not a string");
    }
    // Without `sub`, the client (a client-credentials token) is the caller.
    let mut c = s.claims();
    c.as_object_mut().unwrap().remove("sub");
    let token = s.auth.sign_access_token(&json!({}), &c);
    assert_eq!(s.check(&token).await.unwrap(), "agent-7");
}

// RFC 9068 §4: `typ` is `at+jwt`; anything else (an ID token's `JWT`, a
// DPoP proof's `dpop+jwt`, none) is not an access token.
#[tokio::test]
async fn typ_must_be_at_jwt() {
    let s = setup(|v| v).await;
    let typed = |typ: Value| s.token(&[], json!({"typ": typ}));
    assert!(s.check(&typed(json!("application/at+jwt"))).await.is_ok());
    assert!(s.check(&typed(json!("AT+JWT"))).await.is_ok());
    for typ in [json!("JWT"), json!("dpop+jwt"), json!(7), Value::Null] {
        unauthorized(s.check(&typed(typ)).await, "typ");
    }
    // Refused before any key is fetched.
    assert_eq!(s.fetches.begun(), 1, "only the accepted tokens needed keys");
}

// Configurable: `JWT` (or no typ) accepted too, `at+jwt` still.
#[tokio::test]
async fn plain_jwt_typ_when_configured() {
    let s = setup(|v| v.accept_plain_jwt(true)).await;
    for typ in [
        json!("JWT"),
        json!("application/jwt"),
        Value::Null,
        json!("at+jwt"),
    ] {
        let token = s.token(&[], json!({"typ": typ}));
        assert!(s.check(&token).await.is_ok(), "{typ}");
    }
    let token = s.token(&[], json!({"typ": "dpop+jwt"}));
    unauthorized(s.check(&token).await, "typ");
}

// RFC 7515 §4.1.11: a `crit` header this verifier does not understand
// (it understands none) is refused.
#[tokio::test]
async fn crit_headers_are_refused() {
    let s = setup(|v| v).await;
    for header in [
        json!({"crit": ["exp"], "exp": 1}),
        json!({"crit": ["https://example.com/bound"], "https://example.com/bound": true}),
        json!({"crit": []}),
    ] {
        unauthorized(s.check(&s.token(&[], header)).await, "crit");
    }
}

// While the issuer's key set cannot be fetched, requests do not each
// fetch it: concurrent ones share one fetch, later ones get its failure
// until the back-off ends (negative caching); then one fetch again.
#[tokio::test]
async fn an_unreachable_key_set_is_fetched_once_per_back_off() {
    let s = setup(|v| v).await;
    s.auth.configure(|c| c.jwks_down = true);
    let token = s.good();
    let validator = &s.validator;
    let checks = (0..8).map(|_| async { within(validator.validate(&token)).await });
    for result in futures_join(checks).await {
        assert!(
            matches!(result, Err(AuthError::Unavailable(_))),
            "{result:?}"
        );
    }
    for _ in 0..5 {
        unavailable(s.check(&token).await);
    }
    assert_eq!(s.auth.jwks_requests().len(), 1, "one fetch for 13 requests");
    // The back-off ends: one more fetch, then a longer back-off.
    s.clock.advance(JWKS_RETRY_FIRST);
    unavailable(s.check(&token).await);
    unavailable(s.check(&token).await);
    assert_eq!(s.auth.jwks_requests().len(), 2);
    s.clock.advance(JWKS_RETRY_FIRST);
    unavailable(s.check(&token).await);
    assert_eq!(s.auth.jwks_requests().len(), 2, "the back-off doubled");
    // The issuer is back: the next fetch after the back-off works.
    s.auth.configure(|c| c.jwks_down = false);
    s.clock.advance(JWKS_RETRY_FIRST);
    assert_eq!(s.check(&token).await.unwrap(), "alice");
    assert_eq!(s.auth.jwks_requests().len(), 3);
}

// A fetch under way (here one for a token with an unknown kid, which
// never ends) does not hold up requests the cached keys can serve.
#[tokio::test]
async fn cached_keys_serve_while_a_fetch_is_under_way() {
    let s = setup(|v| v).await;
    let good = s.good();
    assert_eq!(s.check(&good).await.unwrap(), "alice");
    s.fetches.hold.store(true, Ordering::SeqCst);
    let unknown = Signer::generate("rotated").sign(&s.claims());
    let validator = Arc::clone(&s.validator);
    let stuck = tokio::spawn(async move { validator.validate(&unknown).await });
    within(async {
        while s.fetches.begun() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(s.check(&good).await.unwrap(), "alice");
    assert!(!stuck.is_finished());
    stuck.abort();
}

// Stale-if-error: keys older than the maximum age are still used while
// the issuer is down (a refresh is tried behind the request), for a
// bounded time; after it, 503 until the issuer answers.
#[tokio::test]
async fn cached_keys_outlive_an_issuer_outage_for_a_bounded_time() {
    let s = setup(|v| v).await;
    let good = s.good();
    assert_eq!(s.check(&good).await.unwrap(), "alice");
    s.auth.configure(|c| c.jwks_down = true);
    s.clock.advance(JWKS_MAX_AGE + Duration::from_secs(1));
    assert_eq!(s.check(&good).await.unwrap(), "alice");
    // The refresh behind that request failed, without holding it up.
    within(async {
        while s.auth.jwks_requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(s.check(&good).await.unwrap(), "alice");
    // Past the stale-if-error time: no keys to use.
    s.clock.advance(JWKS_STALE_IF_ERROR);
    unavailable(s.check(&good).await);
    // The issuer is back.
    s.auth.configure(|c| c.jwks_down = false);
    s.clock.advance(Duration::from_secs(120));
    assert_eq!(s.check(&good).await.unwrap(), "alice");
}

/// Runs the futures together and returns their outputs in order.
async fn futures_join<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut outputs = Vec::new();
    let mut pending: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (i, f) in pending.iter_mut().enumerate() {
            if done[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => done[i] = Some(v),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    for v in done {
        outputs.extend(v);
    }
    outputs
}
