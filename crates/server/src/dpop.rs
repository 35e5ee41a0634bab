//! DPoP on the resource-server side (RFC 9449 §4.3, §7, §9): a token bound
//! to a key (`cnf.jkt`) is only accepted together with a valid proof of
//! possession for this very request.
//!
//! [`DpopVerifier`] checks a proof: `typ: dpop+jwt`, ES256 with the public
//! key in `jwk` (no private part), the signature, `htm` = the request
//! method, `htu` = this endpoint (query and fragment never count), `iat`
//! within the freshness window, `ath` = the presented token's SHA-256, the
//! key's thumbprint = the token's `cnf.jkt`, a `jti` never seen within the
//! window (a bounded replay cache that refuses rather than forgets when it
//! is full), and, when enabled, a server nonce (current or previous).
//! Failures become 401s with a `WWW-Authenticate: DPoP` challenge; the
//! HTTP runner wires it in with
//! [`HttpOptions::dpop`](crate::http::HttpOptions::dpop).

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};

use crate::jws::{Jws, JwsError};
use switchboard_wire::shared::unix_secs as now_secs;

/// Why a proof was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// The proof is missing, malformed, or not for this request:
    /// `error="invalid_dpop_proof"` (or `invalid_token` when the token and
    /// the proof do not belong together).
    #[error("{0}")]
    Invalid(String),
    /// The proof lacks the current server nonce: `error="use_dpop_nonce"`
    /// with this nonce in `DPoP-Nonce`.
    #[error("a DPoP nonce is required")]
    UseNonce(String),
}

/// Checks DPoP proofs for one resource server. Share one instance between
/// all requests: it holds the replay cache and the nonces.
pub struct DpopVerifier {
    window: u64,
    max_proofs: usize,
    nonce_lifetime: Option<Duration>,
    state: Mutex<State>,
}

struct State {
    /// `jti`s seen, with when they may be forgotten (seconds), oldest first.
    seen: VecDeque<(String, u64)>,
    ids: HashSet<String>,
    /// The current nonce, the one before it, and when the current one was
    /// made.
    nonce: Option<(String, Option<String>, Instant)>,
}

impl fmt::Debug for DpopVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopVerifier")
            .field("window_secs", &self.window)
            .field("max_proofs", &self.max_proofs)
            .field("nonce_lifetime", &self.nonce_lifetime)
            .finish_non_exhaustive()
    }
}

impl Default for DpopVerifier {
    fn default() -> Self {
        DpopVerifier::new()
    }
}

/// The request a proof must be for.
#[derive(Clone, Copy, Debug)]
pub struct ProofTarget<'a> {
    /// The HTTP method (`POST`).
    pub method: &'a str,
    /// This endpoint's URL as clients address it (the resource URI).
    pub url: &'a str,
    /// The access token presented with the proof.
    pub access_token: &'a str,
    /// The token's `cnf.jkt`.
    pub jkt: &'a str,
}

impl DpopVerifier {
    /// Proofs fresh within 5 minutes either way, at most 10 000 remembered
    /// `jti`s, no server nonces.
    pub fn new() -> Self {
        DpopVerifier {
            window: 300,
            max_proofs: 10_000,
            nonce_lifetime: None,
            state: Mutex::new(State {
                seen: VecDeque::new(),
                ids: HashSet::new(),
                nonce: None,
            }),
        }
    }

    /// How far a proof's `iat` may be from now.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window.as_secs();
        self
    }

    /// How many `jti`s are remembered; a proof arriving while the cache is
    /// full of unexpired ones is refused (never a replay let through).
    pub fn max_proofs(mut self, max: usize) -> Self {
        self.max_proofs = max.max(1);
        self
    }

    /// Requires a server nonce in every proof (RFC 9449 §9), renewed after
    /// `lifetime`; the previous one stays valid until the next renewal.
    pub fn require_nonce(mut self, lifetime: Duration) -> Self {
        self.nonce_lifetime = Some(lifetime);
        self
    }

    /// The nonce to hand out now, when nonces are required.
    pub fn current_nonce(&self) -> Option<String> {
        let lifetime = self.nonce_lifetime?;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let renew = st
            .nonce
            .as_ref()
            .is_none_or(|(_, _, made)| made.elapsed() >= lifetime);
        if renew {
            let previous = st.nonce.take().map(|(n, _, _)| n);
            st.nonce = Some((random_nonce(), previous, Instant::now()));
        }
        st.nonce.as_ref().map(|(n, _, _)| n.clone())
    }

    /// Checks `proof` for `target`.
    ///
    /// # Errors
    /// [`DpopError::Invalid`] naming what is wrong (never quoting the token
    /// or the proof), [`DpopError::UseNonce`] when a nonce is missing or old.
    pub fn verify(&self, proof: &str, target: &ProofTarget<'_>) -> Result<(), DpopError> {
        let invalid = |why: &str| Err(DpopError::Invalid(why.to_owned()));
        let Ok(jws) = Jws::decode(proof) else {
            return invalid("the DPoP proof is not a JWT");
        };
        let header = &jws.header;
        // Read as a `Value`, where a missing member is `null`.
        let claims = Value::Object(jws.claims.clone());
        if header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
            return invalid("the DPoP proof's typ is not dpop+jwt");
        }
        if jws.alg() != Some("ES256") {
            return invalid("the DPoP proof is not signed with ES256");
        }
        let Some(jwk) = header.get("jwk").and_then(Value::as_object) else {
            return invalid("the DPoP proof's jwk is not a P-256 public key");
        };
        if jwk.contains_key("d") {
            return invalid("the DPoP proof's jwk contains a private key");
        }
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        let (Some("EC"), Some("P-256"), Some(x), Some(y)) =
            (field("kty"), field("crv"), field("x"), field("y"))
        else {
            return invalid("the DPoP proof's jwk is not a P-256 public key");
        };
        match jws.verify(jwk) {
            Ok(()) => {}
            Err(JwsError::Signature) => {
                return invalid("the DPoP proof's signature does not verify");
            }
            Err(_) => return invalid("the DPoP proof's jwk is not a P-256 public key"),
        }
        if claims["htm"] != target.method {
            return invalid("the DPoP proof is for another HTTP method");
        }
        let htu = claims["htu"].as_str().unwrap_or_default();
        if !same_url(htu, target.url) {
            return invalid("the DPoP proof is for another URL");
        }
        let now = now_secs();
        let Some(iat) = claims["iat"].as_u64() else {
            return invalid("the DPoP proof has no iat");
        };
        if iat.abs_diff(now) > self.window {
            return invalid("the DPoP proof is not fresh");
        }
        if claims["ath"].as_str() != Some(sha256(target.access_token).as_str()) {
            return invalid("the DPoP proof is not for this access token (ath)");
        }
        let thumbprint = sha256(&json!({"crv": "P-256", "kty": "EC", "x": x, "y": y}).to_string());
        if thumbprint != target.jkt {
            return invalid("the access token is bound to another key (cnf.jkt)");
        }
        let Some(jti) = claims["jti"].as_str().filter(|j| !j.is_empty()) else {
            return invalid("the DPoP proof has no jti");
        };
        if self.nonce_lifetime.is_some() {
            let sent = claims["nonce"].as_str();
            let current = self.current_nonce().unwrap_or_default();
            let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let previous = st.nonce.as_ref().and_then(|(_, p, _)| p.as_deref());
            if sent != Some(current.as_str()) && (sent.is_none() || sent != previous) {
                return Err(DpopError::UseNonce(current));
            }
        }
        self.remember(jti, now)
    }

    /// Records `jti`, refusing a replay or a full cache.
    fn remember(&self, jti: &str, now: u64) -> Result<(), DpopError> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.seen.front().is_some_and(|(_, until)| *until < now) {
            if let Some((old, _)) = st.seen.pop_front() {
                st.ids.remove(&old);
            }
        }
        if st.ids.contains(jti) {
            return Err(DpopError::Invalid(
                "the DPoP proof was already used (replayed jti)".into(),
            ));
        }
        if st.seen.len() >= self.max_proofs {
            return Err(DpopError::Invalid(
                "too many DPoP proofs in the freshness window; try again shortly".into(),
            ));
        }
        st.ids.insert(jti.to_owned());
        st.seen
            .push_back((jti.to_owned(), now.saturating_add(2 * self.window)));
        Ok(())
    }
}

/// The `cnf.jkt` of a token's claims: `Some` for a DPoP-bound token.
pub(crate) fn bound_key(claims: &serde_json::Map<String, Value>) -> Option<&str> {
    claims.get("cnf")?.get("jkt")?.as_str()
}

/// The URLs agree once query and fragment are dropped; scheme and host
/// compare case-insensitively (RFC 9449 §4.3 step 9).
fn same_url(a: &str, b: &str) -> bool {
    let strip = |u: &str| -> String {
        let u = &u[..u.find(['?', '#']).unwrap_or(u.len())];
        match u.find("://") {
            Some(i) => {
                let rest = &u[i + 3..];
                let end = rest.find('/').map_or(u.len(), |j| i + 3 + j);
                format!("{}{}", u[..end].to_ascii_lowercase(), &u[end..])
            }
            None => u.to_owned(),
        }
    };
    !a.is_empty() && strip(a) == strip(b)
}

fn sha256(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()))
}

fn random_nonce() -> String {
    let mut bytes = [0u8; 16];
    // A failing system RNG leaves a predictable nonce only in theory; the
    // timestamp keeps nonces distinct regardless.
    let _ = SystemRandom::new().fill(&mut bytes);
    format!("{}{}", URL_SAFE_NO_PAD.encode(bytes), now_secs())
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

    use super::*;

    const URL: &str = "http://127.0.0.1:9/mcp";

    struct Key(EcdsaKeyPair);

    impl Key {
        fn new() -> Key {
            let rng = SystemRandom::new();
            let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            Key(
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng)
                    .unwrap(),
            )
        }

        fn jwk(&self) -> Value {
            let p = self.0.public_key().as_ref();
            json!({"crv": "P-256", "kty": "EC",
                "x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..65])})
        }

        fn jkt(&self) -> String {
            sha256(&self.jwk().to_string())
        }

        fn proof(&self, claims: Value) -> String {
            let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()});
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let sig = self.0.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
        }
    }

    fn claims(jti: &str) -> Value {
        json!({"jti": jti, "htm": "POST", "htu": URL, "iat": now_secs(), "ath": sha256("tok")})
    }

    fn target<'a>(jkt: &'a str) -> ProofTarget<'a> {
        ProofTarget {
            method: "POST",
            url: URL,
            access_token: "tok",
            jkt,
        }
    }

    fn refused(v: &DpopVerifier, proof: &str, jkt: &str, why: &str) {
        match v.verify(proof, &target(jkt)) {
            Err(DpopError::Invalid(e)) => assert!(e.contains(why), "{e} (wanted {why})"),
            other => panic!("expected a refusal for {why}, got {other:?}"),
        }
    }

    // RFC 9449 §4.3/§11.1: a good proof passes once; the same proof again
    // is a replay.
    #[test]
    fn a_proof_is_accepted_once() {
        let (v, key) = (DpopVerifier::new(), Key::new());
        let proof = key.proof(claims("a"));
        v.verify(&proof, &target(&key.jkt())).unwrap();
        refused(&v, &proof, &key.jkt(), "replayed");
        // Query and fragment of htu and case of the host do not matter.
        let mut c = claims("b");
        c["htu"] = json!("HTTP://127.0.0.1:9/mcp");
        v.verify(&key.proof(c), &target(&key.jkt())).unwrap();
    }

    // A proof for another method, URL, token or key, a stale one, and a
    // broken one are refused with a reason.
    #[test]
    fn proofs_for_something_else_are_refused() {
        let (v, key) = (DpopVerifier::new(), Key::new());
        let jkt = key.jkt();
        let with = |name: &str, value: Value| {
            let mut c = claims(name);
            c[name] = value;
            key.proof(c)
        };
        refused(&v, &with("htm", json!("GET")), &jkt, "another HTTP method");
        refused(
            &v,
            &with("htu", json!("http://127.0.0.1:9/other")),
            &jkt,
            "another URL",
        );
        refused(&v, &with("ath", json!(sha256("other"))), &jkt, "ath");
        refused(
            &v,
            &with("iat", json!(now_secs() - 3600)),
            &jkt,
            "not fresh",
        );
        refused(
            &v,
            &key.proof(claims("k")),
            &Key::new().jkt(),
            "another key",
        );
        refused(&v, "a.b", &jkt, "not a JWT");
        let other = Key::new();
        let forged = {
            let p = key.proof(claims("f"));
            let sig = other.proof(claims("f"));
            format!(
                "{}.{}",
                p.rsplit_once('.').unwrap().0,
                sig.rsplit_once('.').unwrap().1
            )
        };
        refused(&v, &forged, &jkt, "signature");
    }

    // §9: without the nonce the answer names one; with it the proof passes.
    #[test]
    fn nonce_round_trip() {
        let v = DpopVerifier::new().require_nonce(Duration::from_secs(60));
        let key = Key::new();
        let Err(DpopError::UseNonce(nonce)) =
            v.verify(&key.proof(claims("n1")), &target(&key.jkt()))
        else {
            panic!("a nonce must be asked for");
        };
        let mut c = claims("n2");
        c["nonce"] = json!(nonce);
        v.verify(&key.proof(c), &target(&key.jkt())).unwrap();
        let mut c = claims("n3");
        c["nonce"] = json!("made-up");
        assert!(matches!(
            v.verify(&key.proof(c), &target(&key.jkt())),
            Err(DpopError::UseNonce(_))
        ));
    }

    // The replay cache is bounded and refuses when full instead of
    // forgetting unexpired proofs.
    #[test]
    fn a_full_replay_cache_refuses() {
        let (v, key) = (DpopVerifier::new().max_proofs(2), Key::new());
        v.verify(&key.proof(claims("1")), &target(&key.jkt()))
            .unwrap();
        v.verify(&key.proof(claims("2")), &target(&key.jkt()))
            .unwrap();
        refused(&v, &key.proof(claims("3")), &key.jkt(), "too many");
    }
}
