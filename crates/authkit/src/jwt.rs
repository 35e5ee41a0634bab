//! JWTs for the test servers, written independently of the client so the
//! tests check one implementation against another: ES256 (or RS256, with
//! the fixed test key) access tokens the authorization server signs and
//! resource servers verify (audience included), and verification of client
//! assertions (ES256, RS256, EdDSA).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{
    self, EcdsaKeyPair, KeyPair as _, RsaKeyPair, RsaPublicKeyComponents, UnparsedPublicKey,
};
use serde_json::{Value, json};

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The RSA private key of the tests (PKCS#8 PEM), shared with the OAuth
/// client's tests. Test-only: it is public, never use it for anything else.
/// ring cannot generate RSA keys, so the tests use this fixed one.
pub const RSA_TEST_KEY_PEM: &str = include_str!("../../oauth/src/testdata/rsa-test-key.pem");

/// A key pair that signs access tokens: ES256 (a fresh key) or RS256 (the
/// fixed test key).
pub struct Signer {
    pair: Pair,
    kid: String,
}

enum Pair {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A fresh random key.
    ///
    /// # Panics
    /// If the system random number generator fails (tests only).
    pub fn generate(kid: &str) -> Signer {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let der = EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("random key");
        let pair = EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).expect("own key parses");
        Signer {
            pair: Pair::Es256(pair),
            kid: kid.to_owned(),
        }
    }

    /// The RS256 signer of [`RSA_TEST_KEY_PEM`] under `kid`.
    ///
    /// # Panics
    /// If the fixed key does not load (tests only).
    pub fn rs256_test_key(kid: &str) -> Signer {
        let body: String = RSA_TEST_KEY_PEM
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = STANDARD.decode(body).expect("the test key is base64");
        let pair = RsaKeyPair::from_pkcs8(&der).expect("the test key loads");
        Signer {
            pair: Pair::Rs256(pair),
            kid: kid.to_owned(),
        }
    }

    /// The key id (`kid`).
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key (uncompressed P-256 point, or PKCS#1 DER for RSA).
    pub fn public_key(&self) -> Vec<u8> {
        match &self.pair {
            Pair::Es256(p) => p.public_key().as_ref().to_vec(),
            Pair::Rs256(p) => p.public_key().as_ref().to_vec(),
        }
    }

    /// The public key, typed for [`verify`].
    pub fn verifying_key(&self) -> PublicKey {
        match &self.pair {
            Pair::Es256(_) => PublicKey::Es256(self.public_key()),
            Pair::Rs256(_) => PublicKey::Rs256(self.public_key()),
        }
    }

    /// The public key as one JWK.
    pub fn jwk(&self) -> Value {
        match &self.pair {
            Pair::Es256(p) => {
                let point = p.public_key().as_ref();
                json!({
                    "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
                    "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
                })
            }
            Pair::Rs256(p) => {
                let public: RsaPublicKeyComponents<Vec<u8>> = p.public().into();
                json!({
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid,
                    "n": URL_SAFE_NO_PAD.encode(&public.n),
                    "e": URL_SAFE_NO_PAD.encode(&public.e),
                })
            }
        }
    }

    /// The public key as a JWK set.
    pub fn jwks(&self) -> Value {
        json!({"keys": [self.jwk()]})
    }

    /// Signs `claims` as an `at+jwt`.
    ///
    /// # Panics
    /// If signing fails (tests only).
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_with_header(&json!({}), claims)
    }

    /// Signs `claims` with the `at+jwt` header (`alg`, `typ`, `kid`) whose
    /// members are replaced by `changes`' (a `null` member is left out, so
    /// `{"typ": null}` signs a token without `typ`).
    ///
    /// # Panics
    /// If signing fails (tests only).
    pub fn sign_with_header(&self, changes: &Value, claims: &Value) -> String {
        let alg = match self.pair {
            Pair::Es256(_) => "ES256",
            Pair::Rs256(_) => "RS256",
        };
        let mut header = json!({"alg": alg, "typ": "at+jwt", "kid": self.kid});
        if let (Some(header), Some(changes)) = (header.as_object_mut(), changes.as_object()) {
            for (name, value) in changes {
                match value {
                    Value::Null => header.remove(name),
                    v => header.insert(name.clone(), v.clone()),
                };
            }
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let sig = match &self.pair {
            Pair::Es256(p) => p
                .sign(&rng, input.as_bytes())
                .expect("signing works")
                .as_ref()
                .to_vec(),
            Pair::Rs256(p) => {
                let mut sig = vec![0; p.public().modulus_len()];
                p.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .expect("signing works");
                sig
            }
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
    }
}

/// A public key that verifies JWTs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// P-256, uncompressed point (ES256).
    Es256(Vec<u8>),
    /// RSA public key, PKCS#1 DER (RS256).
    Rs256(Vec<u8>),
    /// Ed25519 (EdDSA).
    Ed25519(Vec<u8>),
}

/// Why a JWT was refused.
pub type JwtError = String;

/// Verifies `token`'s signature with `key` and returns its header and
/// claims. Checks `exp` (and `nbf`) against the clock.
///
/// # Errors
/// A description of the first problem found.
pub fn verify(token: &str, key: &PublicKey) -> Result<(Value, Value), JwtError> {
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a compact JWS".into());
    };
    let decode = |part: &str| -> Result<Value, JwtError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| "bad base64url".to_owned())?;
        serde_json::from_slice(&bytes).map_err(|_| "not JSON".to_owned())
    };
    let header = decode(h)?;
    let claims = decode(c)?;
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "bad signature encoding".to_owned())?;
    let (alg, verifier, bytes): (&str, &'static dyn signature::VerificationAlgorithm, &[u8]) =
        match key {
            PublicKey::Es256(k) => ("ES256", &signature::ECDSA_P256_SHA256_FIXED, k),
            PublicKey::Rs256(k) => ("RS256", &signature::RSA_PKCS1_2048_8192_SHA256, k),
            PublicKey::Ed25519(k) => ("EdDSA", &signature::ED25519, k),
        };
    if header["alg"] != alg {
        return Err(format!("alg is {}, expected {alg}", header["alg"]));
    }
    UnparsedPublicKey::new(verifier, bytes)
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| "bad signature".to_owned())?;
    let now = now();
    match claims["exp"].as_u64() {
        Some(exp) if exp > now => {}
        Some(_) => return Err("expired".into()),
        None => return Err("no exp".into()),
    }
    if claims["nbf"].as_u64().is_some_and(|nbf| nbf > now + 30) {
        return Err("not yet valid".into());
    }
    Ok((header, claims))
}

/// Whether the JWT's `aud` (a string or an array) contains `audience`.
pub fn has_audience(claims: &Value, audience: &str) -> bool {
    match &claims["aud"] {
        Value::String(s) => s == audience,
        Value::Array(a) => a.iter().any(|v| v == audience),
        _ => false,
    }
}

/// A fresh ES256 client key: (PKCS#8 PEM for the client, public key for the
/// authorization server).
///
/// # Panics
/// If the system random number generator fails (tests only).
pub fn es256_client_key() -> (String, PublicKey) {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let der = EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("random key");
    let pair = EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).expect("own key parses");
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der.as_ref())
    );
    (pem, PublicKey::Es256(pair.public_key().as_ref().to_vec()))
}

/// A fresh Ed25519 client key: (PKCS#8 PEM, public key).
///
/// # Panics
/// If the system random number generator fails (tests only).
pub fn ed25519_client_key() -> (String, PublicKey) {
    let rng = SystemRandom::new();
    let der = signature::Ed25519KeyPair::generate_pkcs8(&rng).expect("random key");
    let pair = signature::Ed25519KeyPair::from_pkcs8(der.as_ref()).expect("own key parses");
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der.as_ref())
    );
    (pem, PublicKey::Ed25519(pair.public_key().as_ref().to_vec()))
}

/// Checks a DPoP proof (RFC 9449 §4.3) made for `htm` `htu`: `typ`,
/// ES256 with a public `jwk`, the signature, the method and URL (without
/// query), `jti` and a fresh `iat`. Returns the key's thumbprint (RFC 7638)
/// and the proof's `nonce`.
///
/// # Errors
/// A description of the first problem found.
pub fn verify_dpop_proof(
    proof: &str,
    htm: &str,
    htu: &str,
) -> Result<(String, Option<String>), JwtError> {
    let header: Value = proof
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the proof is not a JWT")?;
    if header["typ"] != "dpop+jwt" {
        return Err("typ is not dpop+jwt".into());
    }
    let jwk = &header["jwk"];
    if jwk.get("d").is_some() || jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err("jwk is not a P-256 public key".into());
    }
    let mut point = vec![4u8];
    for c in ["x", "y"] {
        point.extend(
            URL_SAFE_NO_PAD
                .decode(jwk[c].as_str().unwrap_or_default())
                .map_err(|_| "jwk is not a P-256 public key".to_owned())?,
        );
    }
    // A proof has no exp, which verify() insists on: the signature is
    // checked here.
    let mut parts = proof.split('.');
    let (Some(h), Some(c), Some(s)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("the proof is not a JWT".into());
    };
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "bad signature encoding".to_owned())?;
    UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| "bad signature".to_owned())?;
    let claims: Value = URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the proof's claims are not JSON")?;
    if claims["htm"] != htm {
        return Err("htm does not match".into());
    }
    let sent = claims["htu"].as_str().unwrap_or_default();
    if sent.split(['?', '#']).next() != Some(htu) {
        return Err("htu does not match".into());
    }
    if claims["jti"].as_str().is_none_or(str::is_empty) {
        return Err("no jti".into());
    }
    if claims["iat"]
        .as_u64()
        .is_none_or(|iat| iat.abs_diff(now()) > 300)
    {
        return Err("iat is not fresh".into());
    }
    let thumbprint = json!({"crv": "P-256", "kty": "EC", "x": jwk["x"], "y": jwk["y"]}).to_string();
    let digest = ring::digest::digest(&ring::digest::SHA256, thumbprint.as_bytes());
    Ok((
        URL_SAFE_NO_PAD.encode(digest.as_ref()),
        claims["nonce"].as_str().map(str::to_owned),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify() {
        let s = Signer::generate("k");
        let t = s.sign(&json!({"aud": "http://rs/mcp", "exp": now() + 60}));
        let (_, claims) = verify(&t, &PublicKey::Es256(s.public_key())).unwrap();
        assert!(has_audience(&claims, "http://rs/mcp"));
        assert!(!has_audience(&claims, "http://rs"));
        let other = Signer::generate("o");
        assert!(verify(&t, &PublicKey::Es256(other.public_key())).is_err());
        let expired = s.sign(&json!({"exp": now() - 1}));
        assert_eq!(
            verify(&expired, &PublicKey::Es256(s.public_key())).unwrap_err(),
            "expired"
        );
        assert!(verify("a.b", &PublicKey::Es256(s.public_key())).is_err());
        assert_eq!(s.jwks()["keys"][0]["kid"], "k");
    }
}
