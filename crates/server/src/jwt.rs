//! JWT access tokens (RFC 9068) checked with their issuer's JWK set: the
//! signature is verified with the key the token names, the set is cached
//! and fetched again when a token names a key not in it (rotation). What
//! the claims say (issuer, audience, times, scopes) is for
//! [`ClaimsValidator`](crate::ClaimsValidator) to check: give it
//! [`JwtVerifier::claims`] as its decoder.
//!
//! How the set is fetched (where it is, over which HTTP client) is the
//! caller's: [`JwtVerifier::new`] takes a function that fetches it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_wire::JsonObject;
use tokio::sync::Mutex;

use crate::auth::{AuthError, BoxFuture};
use crate::jws::{Jws, JwsError};

/// After an unknown `kid` made the verifier fetch the JWK set again, the
/// next such fetch waits this long.
pub const JWKS_MIN_REFETCH: Duration = Duration::from_secs(30);
/// The JWK set is fetched again when older than this, whatever the `kid`s.
pub const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

/// What the fetch function returns: the JWK set document (an object with
/// `keys`), or why it could not be had.
pub type FetchFuture = BoxFuture<'static, Result<JsonObject, String>>;

/// Verifies JWT access tokens with an issuer's JWK set (see the module
/// docs).
pub struct JwtVerifier {
    /// Fetches the JWK set.
    fetch: Box<dyn Fn() -> FetchFuture + Send + Sync>,
    /// The clock the set's age is measured with.
    clock: Arc<dyn Fn() -> Instant + Send + Sync>,
    state: Mutex<KeySet>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct KeySet {
    keys: Vec<JsonObject>,
    fetched: Option<Instant>,
    /// When an unknown `kid` last caused a fetch (the rate limit).
    refetched: Option<Instant>,
}

impl JwtVerifier {
    /// A verifier whose JWK set `fetch` fetches, when first needed.
    pub fn new(fetch: impl Fn() -> FetchFuture + Send + Sync + 'static) -> JwtVerifier {
        JwtVerifier {
            fetch: Box::new(fetch),
            clock: Arc::new(Instant::now),
            state: Mutex::new(KeySet::default()),
        }
    }

    /// The clock the set's age and the fetch limits are measured with
    /// (`Instant::now` by default; tests move their own).
    #[must_use]
    pub fn clock(mut self, now: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(now);
        self
    }

    /// Verifies `token` and returns its claims (the claims themselves are
    /// [`ClaimsValidator`](crate::ClaimsValidator)'s to check).
    ///
    /// # Errors
    /// [`AuthError::Unauthorized`] for a token that does not verify,
    /// [`AuthError::Unavailable`] when the key set cannot be had.
    pub async fn claims(&self, token: &str) -> Result<JsonObject, AuthError> {
        let unauthorized = |why: String| AuthError::Unauthorized(why);
        let jws =
            Jws::decode(token).map_err(|_| unauthorized("the token is not a signed JWT".into()))?;
        let key = self.key_for(&jws).await?;
        jws.verify(&key).map_err(|e| match e {
            JwsError::Signature => unauthorized("the token's signature does not verify".into()),
            other => unauthorized(format!("the token cannot be checked: {other}")),
        })?;
        // RFC 9068: an access token JWT carries exp.
        if !jws.claims.contains_key("exp") {
            return Err(unauthorized("the token has no exp".into()));
        }
        Ok(jws.claims)
    }

    fn elapsed(&self, since: Instant) -> Duration {
        (self.clock)().saturating_duration_since(since)
    }

    /// The key for `jws`: by `kid`, else the only key of a fitting type.
    /// An unknown `kid` fetches the set again (rotation): the first one at
    /// once, then at most one every [`JWKS_MIN_REFETCH`], so tokens with
    /// made-up `kid`s cannot make the verifier hammer the issuer.
    async fn key_for(&self, jws: &Jws<'_>) -> Result<JsonObject, AuthError> {
        let mut state = self.state.lock().await;
        let stale = state
            .fetched
            .is_none_or(|t| self.elapsed(t) >= JWKS_MAX_AGE);
        if stale {
            self.fetch(&mut state).await?;
        }
        if let Some(key) = pick(&state.keys, jws) {
            return Ok(key);
        }
        let may_refetch = state
            .refetched
            .is_none_or(|t| self.elapsed(t) >= JWKS_MIN_REFETCH);
        if !stale && may_refetch {
            state.refetched = Some((self.clock)());
            self.fetch(&mut state).await?;
            if let Some(key) = pick(&state.keys, jws) {
                return Ok(key);
            }
        }
        Err(AuthError::Unauthorized(
            "the token is signed with a key the issuer does not publish".into(),
        ))
    }

    async fn fetch(&self, state: &mut KeySet) -> Result<(), AuthError> {
        let set = (self.fetch)().await.map_err(AuthError::Unavailable)?;
        let keys: Vec<JsonObject> = set
            .get("keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|k| k.as_object().cloned()).collect())
            .unwrap_or_default();
        tracing::debug!(keys = keys.len(), "fetched the issuer's JWK set");
        state.keys = keys;
        state.fetched = Some((self.clock)());
        Ok(())
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
