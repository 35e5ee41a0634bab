//! JWT access tokens (RFC 9068) checked with their issuer's JWK set: the
//! header (`typ` `at+jwt`, no `crit` this verifier does not understand,
//! i.e. none), the signature with the key the token names, and a numeric
//! `exp`. What the claims say (issuer, audience, times, subject, scopes) is
//! for [`ClaimsValidator`](crate::ClaimsValidator) to check: give it
//! [`JwtVerifier::claims`] as its decoder.
//!
//! How the key set is fetched (where it is, over which HTTP client) is the
//! caller's: [`JwtVerifier::new`] takes a function that fetches it. The set
//! is cached, and fetched:
//! - once at a time: requests needing it while a fetch is under way wait
//!   for that fetch instead of starting their own (single flight), and
//!   requests the cached keys can serve never wait for a fetch;
//! - again after [`JWKS_MAX_AGE`], in the background: the request that
//!   notices goes on with the cached keys;
//! - again for a token naming a key not in the set (rotation): the first
//!   at once, then at most one every [`JWKS_MIN_REFETCH`], so tokens with
//!   made-up `kid`s cannot make the verifier hammer the issuer.
//!
//! A fetch that fails is remembered (negative caching): no other fetch is
//! tried before a back-off of [`JWKS_RETRY_FIRST`], doubling after each
//! failure up to [`JWKS_RETRY_MAX`]; meanwhile requests that need the
//! issuer get the failure (HTTP 503) at once. While the issuer cannot be
//! reached, the cached keys stay in use for [`JWKS_STALE_IF_ERROR`] past
//! their age (stale-if-error; [`JwtVerifier::stale_if_error`]), so an
//! outage of the issuer is not an outage of the resource server.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_wire::JsonObject;

use crate::auth::{AuthError, BoxFuture};
use crate::jws::{Jws, JwsError};

/// After an unknown `kid` made the verifier fetch the JWK set again, the
/// next such fetch waits this long.
pub const JWKS_MIN_REFETCH: Duration = Duration::from_secs(30);
/// The JWK set is fetched again when older than this, whatever the `kid`s.
pub const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);
/// After a failed fetch of the JWK set, no other is tried for this long;
/// the wait doubles with each failure in a row.
pub const JWKS_RETRY_FIRST: Duration = Duration::from_secs(2);
/// The longest wait between two fetches while the issuer fails.
pub const JWKS_RETRY_MAX: Duration = Duration::from_secs(60);
/// How long past [`JWKS_MAX_AGE`] the cached keys stay in use while the
/// issuer cannot be reached (the default of
/// [`JwtVerifier::stale_if_error`]).
pub const JWKS_STALE_IF_ERROR: Duration = Duration::from_secs(6 * 3600);

/// What the fetch function returns: the JWK set document (an object with
/// `keys`), or why it could not be had.
pub type FetchFuture = BoxFuture<'static, Result<JsonObject, String>>;

/// Verifies JWT access tokens with an issuer's JWK set (see the module
/// docs).
pub struct JwtVerifier {
    keys: Arc<KeySet>,
    /// `typ` `JWT` (or none) is accepted too.
    plain_jwt: bool,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("plain_jwt", &self.plain_jwt)
            .field("stale_if_error", &self.keys.stale_if_error)
            .finish_non_exhaustive()
    }
}

/// The cached key set and what its fetches are owed.
struct KeySet {
    /// Fetches the JWK set.
    fetch: Box<dyn Fn() -> FetchFuture + Send + Sync>,
    /// The clock ages and back-offs are measured with.
    clock: Arc<dyn Fn() -> Instant + Send + Sync>,
    stale_if_error: Duration,
    /// Never held across a fetch.
    state: Mutex<State>,
    /// Held by the one fetch under way (single flight).
    flight: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    keys: Arc<[JsonObject]>,
    /// When the keys were fetched.
    fetched: Option<Instant>,
    /// Fetches ended (well or not): a request that waited for the flight
    /// and sees this moved does not fetch again.
    ended: u64,
    /// Failed fetches in a row.
    failures: u32,
    /// No fetch before then (the back-off after a failure).
    retry_at: Option<Instant>,
    /// Why the last fetch failed.
    error: Option<String>,
    /// When an unknown `kid` last caused a fetch (the rate limit).
    kid_refetched: Option<Instant>,
}

/// The key set as one request sees it.
struct View {
    keys: Arc<[JsonObject]>,
    /// Younger than the maximum age.
    fresh: bool,
    /// Fresh, or stale but within the stale-if-error time.
    usable: bool,
    /// Not in a back-off.
    may_fetch: bool,
    ended: u64,
    error: Option<String>,
    kid_refetched: Option<Instant>,
    now: Instant,
}

impl JwtVerifier {
    /// A verifier whose JWK set `fetch` fetches, when first needed.
    pub fn new(fetch: impl Fn() -> FetchFuture + Send + Sync + 'static) -> JwtVerifier {
        JwtVerifier {
            keys: Arc::new(KeySet {
                fetch: Box::new(fetch),
                clock: Arc::new(Instant::now),
                stale_if_error: JWKS_STALE_IF_ERROR,
                state: Mutex::new(State::default()),
                flight: tokio::sync::Mutex::new(()),
            }),
            plain_jwt: false,
        }
    }

    /// Also accepts tokens whose `typ` is `JWT` (or that have none), as
    /// some authorization servers issue them; by default only `at+jwt`
    /// (or `application/at+jwt`) is, as RFC 9068 §4 requires, so an ID
    /// token or another JWT of the issuer is not taken for an access token.
    #[must_use]
    pub fn accept_plain_jwt(mut self, accept: bool) -> Self {
        self.plain_jwt = accept;
        self
    }

    /// How long past [`JWKS_MAX_AGE`] the cached keys stay in use while
    /// the issuer cannot be reached ([`JWKS_STALE_IF_ERROR`] by default;
    /// zero: not at all). Set it before the first token is checked.
    #[must_use]
    pub fn stale_if_error(mut self, time: Duration) -> Self {
        if let Some(keys) = Arc::get_mut(&mut self.keys) {
            keys.stale_if_error = time;
        }
        self
    }

    /// The clock the set's age and the fetch limits are measured with
    /// (`Instant::now` by default; tests move their own). Set it before
    /// the first token is checked.
    #[must_use]
    pub fn clock(mut self, now: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        if let Some(keys) = Arc::get_mut(&mut self.keys) {
            keys.clock = Arc::new(now);
        }
        self
    }

    /// Verifies `token` and returns its claims (the claims themselves are
    /// [`ClaimsValidator`](crate::ClaimsValidator)'s to check).
    ///
    /// # Errors
    /// [`AuthError::Unauthorized`] for a token that is not an access token
    /// this verifier accepts or does not verify, [`AuthError::Unavailable`]
    /// when the key set cannot be had.
    pub async fn claims(&self, token: &str) -> Result<JsonObject, AuthError> {
        let unauthorized = |why: String| AuthError::Unauthorized(why);
        let jws =
            Jws::decode(token).map_err(|_| unauthorized("the token is not a signed JWT".into()))?;
        // The header first: a token refused for it costs no key fetch.
        self.check_header(&jws)?;
        let key = self.keys.key_for(&jws).await?;
        jws.verify(&key).map_err(|e| match e {
            JwsError::Signature => unauthorized("the token's signature does not verify".into()),
            other => unauthorized(format!("the token cannot be checked: {other}")),
        })?;
        // RFC 9068 §2.2: an access token JWT carries exp, a NumericDate.
        if !matches!(jws.claims.get("exp"), Some(Value::Number(_))) {
            return Err(unauthorized("the token has no numeric exp".into()));
        }
        Ok(jws.claims)
    }

    /// `typ` and `crit` (RFC 9068 §4, RFC 7515 §4.1.11).
    fn check_header(&self, jws: &Jws<'_>) -> Result<(), AuthError> {
        let refuse = |why: String| Err(AuthError::Unauthorized(why));
        if jws.header.contains_key("crit") {
            // This verifier understands no header extension.
            return refuse(
                "the token names critical header parameters (crit) this server does not understand"
                    .into(),
            );
        }
        match jws.header.get("typ") {
            Some(Value::String(typ)) => {
                let lower = typ.to_ascii_lowercase();
                let media = lower.strip_prefix("application/").unwrap_or(&lower);
                match media {
                    "at+jwt" => Ok(()),
                    "jwt" if self.plain_jwt => Ok(()),
                    _ => refuse(format!(
                        "the token's typ is {typ:?}, not at+jwt: it is not an access token (RFC 9068)"
                    )),
                }
            }
            None if self.plain_jwt => Ok(()),
            None => refuse("the token has no typ; an access token's is at+jwt (RFC 9068)".into()),
            Some(_) => refuse("the token's typ is not a string".into()),
        }
    }
}

impl KeySet {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        switchboard_wire::shared::lock(&self.state)
    }

    fn view(&self) -> View {
        let now = (self.clock)();
        let state = self.lock();
        let age = state.fetched.map(|t| now.saturating_duration_since(t));
        View {
            keys: Arc::clone(&state.keys),
            fresh: age.is_some_and(|a| a < JWKS_MAX_AGE),
            usable: age.is_some_and(|a| a < JWKS_MAX_AGE.saturating_add(self.stale_if_error)),
            may_fetch: state.retry_at.is_none_or(|t| now >= t),
            ended: state.ended,
            error: state.error.clone(),
            kid_refetched: state.kid_refetched,
            now,
        }
    }

    /// The key for `jws` (see the module docs for when the set is
    /// fetched).
    async fn key_for(self: &Arc<Self>, jws: &Jws<'_>) -> Result<JsonObject, AuthError> {
        let unknown = || {
            AuthError::Unauthorized(
                "the token is signed with a key the issuer does not publish".into(),
            )
        };
        let unavailable = |view: &View| {
            AuthError::Unavailable(
                view.error
                    .clone()
                    .unwrap_or_else(|| "the issuer's JWK set cannot be fetched now".to_owned()),
            )
        };
        let view = self.view();
        if view.usable {
            if let Some(key) = pick(&view.keys, jws) {
                if !view.fresh && view.may_fetch {
                    // Old keys: refreshed behind this request, not before it.
                    let keys = Arc::clone(self);
                    tokio::spawn(async move { keys.refresh_if_idle(view.ended).await });
                }
                return Ok(key);
            }
            if view.fresh {
                // A kid not in a fresh set: rotation, or made up.
                let allowed = view
                    .kid_refetched
                    .is_none_or(|t| view.now.saturating_duration_since(t) >= JWKS_MIN_REFETCH);
                if !allowed {
                    return Err(unknown());
                }
                if !view.may_fetch {
                    return Err(unavailable(&view));
                }
                self.lock().kid_refetched = Some(view.now);
            }
        }
        if !view.may_fetch {
            return Err(unavailable(&view));
        }
        self.refresh(view.ended).await;
        let after = self.view();
        match pick(&after.keys, jws) {
            Some(key) if after.usable => Ok(key),
            // The last fetch failed (a success clears the error).
            _ if after.error.is_some() => Err(unavailable(&after)),
            _ => Err(unknown()),
        }
    }

    /// Fetches the set, unless a fetch ended since `seen` (this request
    /// waited for it: its outcome stands, good or bad).
    async fn refresh(&self, seen: u64) {
        let _flight = self.flight.lock().await;
        if self.lock().ended != seen {
            return;
        }
        self.fetch_now().await;
    }

    /// [`KeySet::refresh`] in the background: nothing when a fetch is
    /// under way already.
    async fn refresh_if_idle(&self, seen: u64) {
        let Ok(_flight) = self.flight.try_lock() else {
            return;
        };
        if self.lock().ended != seen {
            return;
        }
        self.fetch_now().await;
    }

    /// One fetch; the caller holds the flight.
    async fn fetch_now(&self) {
        let result = (self.fetch)().await;
        let now = (self.clock)();
        let mut state = self.lock();
        state.ended += 1;
        match result {
            Ok(set) => {
                let keys: Vec<JsonObject> = set
                    .get("keys")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|k| k.as_object().cloned()).collect())
                    .unwrap_or_default();
                tracing::debug!(keys = keys.len(), "fetched the issuer's JWK set");
                state.keys = keys.into();
                state.fetched = Some(now);
                state.failures = 0;
                state.retry_at = None;
                state.error = None;
            }
            Err(error) => {
                state.failures = state.failures.saturating_add(1);
                let wait = JWKS_RETRY_FIRST
                    .saturating_mul(1u32 << state.failures.saturating_sub(1).min(16))
                    .min(JWKS_RETRY_MAX);
                tracing::warn!(%error, retry_in_s = wait.as_secs(), cached_keys = state.keys.len(), "cannot fetch the issuer's JWK set");
                state.retry_at = Some(now + wait);
                state.error = Some(error);
            }
        }
    }
}

/// The key of `keys` that `jws` names (`kid`), or without a `kid` the one
/// signing key whose type fits its `alg`.
fn pick(keys: &[JsonObject], jws: &Jws<'_>) -> Option<JsonObject> {
    let field = |k: &JsonObject, name: &str| k.get(name).and_then(Value::as_str).map(str::to_owned);
    let signing = |k: &&JsonObject| field(k, "use").is_none_or(|u| u == "sig");
    if let Some(kid) = jws.kid() {
        return keys
            .iter()
            .filter(signing)
            .find(|k| field(k, "kid").as_deref() == Some(kid))
            .cloned();
    }
    let kty = match jws.alg()? {
        a if a.starts_with("ES") => "EC",
        a if a.starts_with("RS") => "RSA",
        _ => return None,
    };
    let mut fitting = keys
        .iter()
        .filter(signing)
        .filter(|k| field(k, "kty").as_deref() == Some(kty));
    match (fitting.next(), fitting.next()) {
        (Some(k), None) => Some(k.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use serde_json::json;

    #[test]
    fn keys_are_picked_by_kid_else_by_type() {
        let key = |v: Value| v.as_object().unwrap().clone();
        let keys = vec![
            key(json!({"kty": "EC", "kid": "a"})),
            key(json!({"kty": "EC", "kid": "b", "use": "enc"})),
            key(json!({"kty": "RSA", "kid": "c"})),
        ];
        let token = |header: Value| {
            let b64 = |v: String| URL_SAFE_NO_PAD.encode(v);
            format!("{}.{}.", b64(header.to_string()), b64("{}".into()))
        };
        let kid_of = |header: Value| {
            let t = token(header);
            let jws = Jws::decode(&t).unwrap();
            pick(&keys, &jws).map(|k| k["kid"].as_str().unwrap().to_owned())
        };
        assert_eq!(
            kid_of(json!({"alg": "ES256", "kid": "a"})).as_deref(),
            Some("a")
        );
        // An encryption key never verifies; an unknown kid finds nothing.
        assert_eq!(kid_of(json!({"alg": "ES256", "kid": "b"})), None);
        assert_eq!(kid_of(json!({"alg": "ES256", "kid": "z"})), None);
        // Without a kid: the one signing key of the fitting type.
        assert_eq!(kid_of(json!({"alg": "RS256"})).as_deref(), Some("c"));
        assert_eq!(kid_of(json!({"alg": "ES256"})).as_deref(), Some("a"));
        assert_eq!(kid_of(json!({"alg": "HS256"})), None);
    }
}
