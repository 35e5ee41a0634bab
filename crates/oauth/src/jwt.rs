//! Client assertions for `private_key_jwt` (RFC 7523 §2.2, OpenID Connect
//! Core §9): a short-lived JWT signed with the client's private key, with
//! `iss` and `sub` the client id and `aud` the authorization server's
//! issuer.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, RsaKeyPair};
use serde_json::json;

use super::error::OAuthError;
use super::secret::random_b64;

/// How long a client assertion is valid.
const ASSERTION_LIFETIME_SECS: u64 = 300;

/// A private key for `private_key_jwt` client authentication.
///
/// Supported: ES256 and ES384 (PKCS#8), RS256/384/512 and PS256/384/512
/// (PKCS#8 or PKCS#1), EdDSA with Ed25519 (PKCS#8).
pub struct SigningKey {
    alg: &'static str,
    key: Key,
    key_id: Option<String>,
}

enum Key {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair, &'static dyn signature::RsaEncoding),
    Ed25519(Ed25519KeyPair),
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads a PEM private key (`PRIVATE KEY` or `RSA PRIVATE KEY`) for the
    /// JWS algorithm `alg` (`ES256`, `RS256`, …); `None` picks the usual
    /// one for the key type (ES256, ES384, RS256 or EdDSA).
    ///
    /// # Errors
    /// [`OAuthError::Key`] for a key that does not parse or does not fit
    /// `alg`.
    pub fn from_pem(pem: &str, alg: Option<&str>) -> Result<SigningKey, OAuthError> {
        let (label, der) = decode_pem(pem)?;
        match label.as_str() {
            "PRIVATE KEY" => SigningKey::from_pkcs8(&der, alg),
            "RSA PRIVATE KEY" => {
                let pair = RsaKeyPair::from_der(&der)
                    .map_err(|e| OAuthError::Key(format!("the RSA key does not parse: {e}")))?;
                SigningKey::rsa(pair, alg.unwrap_or("RS256"))
            }
            "EC PRIVATE KEY" => Err(OAuthError::Key(
                "SEC1 EC keys are not supported; convert it with `openssl pkcs8 -topk8 -nocrypt`"
                    .into(),
            )),
            other => Err(OAuthError::Key(format!(
                "a PEM block labelled {other:?} is not a private key"
            ))),
        }
    }

    /// Reads a PKCS#8 DER private key; see [`SigningKey::from_pem`].
    ///
    /// # Errors
    /// [`OAuthError::Key`] for a key that does not parse or does not fit
    /// `alg`.
    pub fn from_pkcs8(der: &[u8], alg: Option<&str>) -> Result<SigningKey, OAuthError> {
        let rng = SystemRandom::new();
        let ec = |alg: &'static str, spec: &'static signature::EcdsaSigningAlgorithm| {
            EcdsaKeyPair::from_pkcs8(spec, der, &rng)
                .map(|k| SigningKey {
                    alg,
                    key: Key::Ecdsa(k),
                    key_id: None,
                })
                .map_err(|e| OAuthError::Key(format!("not a usable {alg} key: {e}")))
        };
        match alg {
            Some("ES256") => ec("ES256", &signature::ECDSA_P256_SHA256_FIXED_SIGNING),
            Some("ES384") => ec("ES384", &signature::ECDSA_P384_SHA384_FIXED_SIGNING),
            Some("EdDSA") => Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
                .map(|k| SigningKey {
                    alg: "EdDSA",
                    key: Key::Ed25519(k),
                    key_id: None,
                })
                .map_err(|e| OAuthError::Key(format!("not a usable Ed25519 key: {e}"))),
            Some(rsa @ ("RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512")) => {
                let pair = RsaKeyPair::from_pkcs8(der)
                    .map_err(|e| OAuthError::Key(format!("not a usable RSA key: {e}")))?;
                SigningKey::rsa(pair, rsa)
            }
            Some(other) => Err(OAuthError::Key(format!(
                "the signing algorithm {other:?} is not supported"
            ))),
            None => ec("ES256", &signature::ECDSA_P256_SHA256_FIXED_SIGNING)
                .or_else(|_| ec("ES384", &signature::ECDSA_P384_SHA384_FIXED_SIGNING))
                .or_else(|_| SigningKey::from_pkcs8(der, Some("RS256")))
                .or_else(|_| SigningKey::from_pkcs8(der, Some("EdDSA")))
                .map_err(|_| OAuthError::Key("the key is not an EC, RSA or Ed25519 key".into())),
        }
    }

    fn rsa(pair: RsaKeyPair, alg: &str) -> Result<SigningKey, OAuthError> {
        let (alg, encoding): (&'static str, &'static dyn signature::RsaEncoding) = match alg {
            "RS256" => ("RS256", &signature::RSA_PKCS1_SHA256),
            "RS384" => ("RS384", &signature::RSA_PKCS1_SHA384),
            "RS512" => ("RS512", &signature::RSA_PKCS1_SHA512),
            "PS256" => ("PS256", &signature::RSA_PSS_SHA256),
            "PS384" => ("PS384", &signature::RSA_PSS_SHA384),
            "PS512" => ("PS512", &signature::RSA_PSS_SHA512),
            other => {
                return Err(OAuthError::Key(format!(
                    "{other:?} is not an RSA signing algorithm"
                )));
            }
        };
        Ok(SigningKey {
            alg,
            key: Key::Rsa(pair, encoding),
            key_id: None,
        })
    }

    /// Puts `kid` in the JWT header (when the authorization server has
    /// several keys for this client).
    pub fn with_key_id(mut self, kid: impl Into<String>) -> SigningKey {
        self.key_id = Some(kid.into());
        self
    }

    /// The JWS algorithm.
    pub fn algorithm(&self) -> &'static str {
        self.alg
    }

    /// The public key bytes (uncompressed point, RSA public key DER, or the
    /// Ed25519 key), for tests and key registration.
    pub fn public_key(&self) -> Vec<u8> {
        match &self.key {
            Key::Ecdsa(k) => k.public_key().as_ref().to_vec(),
            Key::Rsa(k, _) => k.public_key().as_ref().to_vec(),
            Key::Ed25519(k) => k.public_key().as_ref().to_vec(),
        }
    }

    /// A fresh client assertion for `client_id` addressed to `audience`
    /// (the authorization server's issuer).
    pub(crate) fn client_assertion(
        &self,
        client_id: &str,
        audience: &str,
    ) -> Result<String, OAuthError> {
        let now = switchboard_wire::shared::unix_secs();
        let mut header = json!({ "alg": self.alg, "typ": "JWT" });
        if let Some(kid) = &self.key_id {
            header["kid"] = json!(kid);
        }
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME_SECS,
            "jti": random_b64(16).map_err(OAuthError::Key)?,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.sign(signing_input.as_bytes())?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, OAuthError> {
        let rng = SystemRandom::new();
        match &self.key {
            Key::Ecdsa(k) => k
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| OAuthError::Key("ECDSA signing failed".into())),
            Key::Rsa(k, encoding) => {
                let mut out = vec![0; k.public().modulus_len()];
                k.sign(*encoding, &rng, message, &mut out)
                    .map_err(|_| OAuthError::Key("RSA signing failed".into()))?;
                Ok(out)
            }
            Key::Ed25519(k) => Ok(k.sign(message).as_ref().to_vec()),
        }
    }
}

/// The label and DER bytes of the first PEM block in `pem`.
fn decode_pem(pem: &str) -> Result<(String, Vec<u8>), OAuthError> {
    let bad = |what: &str| OAuthError::Key(format!("the PEM text {what}"));
    let start = pem
        .find("-----BEGIN ")
        .ok_or_else(|| bad("has no BEGIN line"))?;
    let rest = &pem[start + "-----BEGIN ".len()..];
    let label_end = rest
        .find("-----")
        .ok_or_else(|| bad("has a broken BEGIN line"))?;
    let label = rest[..label_end].to_owned();
    let body = &rest[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let body_end = body
        .find(&end_marker)
        .ok_or_else(|| bad("has no matching END line"))?;
    let b64: String = body[..body_end]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let der = STANDARD
        .decode(b64)
        .map_err(|_| bad("body is not base64"))?;
    Ok((label, der))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::UnparsedPublicKey;

    fn pem(label: &str, der: &[u8]) -> String {
        format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            STANDARD.encode(der)
        )
    }

    fn verify(
        jwt: &str,
        alg: &'static dyn signature::VerificationAlgorithm,
        public: &[u8],
    ) -> serde_json::Value {
        let mut parts = jwt.split('.');
        let (h, c, s) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let sig = URL_SAFE_NO_PAD.decode(s).unwrap();
        UnparsedPublicKey::new(alg, public)
            .verify(format!("{h}.{c}").as_bytes(), &sig)
            .expect("signature verifies");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).unwrap()).unwrap()
    }

    #[test]
    fn es256_assertion_verifies_and_has_the_claims() {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let key = SigningKey::from_pem(&pem("PRIVATE KEY", der.as_ref()), Some("ES256"))
            .unwrap()
            .with_key_id("k1");
        let jwt = key
            .client_assertion("cid", "https://as.example.com")
            .unwrap();
        let claims = verify(&jwt, &signature::ECDSA_P256_SHA256_FIXED, &key.public_key());
        assert_eq!(claims["iss"], "cid");
        assert_eq!(claims["sub"], "cid");
        assert_eq!(claims["aud"], "https://as.example.com");
        assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
        assert!(claims["jti"].as_str().unwrap().len() >= 16);
        let header: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(jwt.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "k1");
        // Two assertions never share a jti.
        let again = key
            .client_assertion("cid", "https://as.example.com")
            .unwrap();
        assert_ne!(jwt, again);
        assert!(!format!("{key:?}").contains("PRIVATE"));
    }

    // A 2048-bit RSA key made for these tests only (openssl genpkey), in
    // PKCS#8 and in PKCS#1 form.
    const RSA_PKCS8: &str = include_str!("testdata/rsa-test-key.pem");
    const RSA_PKCS1: &str = include_str!("testdata/rsa-test-key-pkcs1.pem");

    #[test]
    fn rsa_assertions_verify() {
        for (pem, alg, verifier) in [
            (
                RSA_PKCS8,
                Some("RS256"),
                &signature::RSA_PKCS1_2048_8192_SHA256
                    as &'static dyn signature::VerificationAlgorithm,
            ),
            (RSA_PKCS8, None, &signature::RSA_PKCS1_2048_8192_SHA256),
            (
                RSA_PKCS1,
                Some("RS512"),
                &signature::RSA_PKCS1_2048_8192_SHA512,
            ),
            (
                RSA_PKCS1,
                Some("PS256"),
                &signature::RSA_PSS_2048_8192_SHA256,
            ),
        ] {
            let key = SigningKey::from_pem(pem, alg).unwrap();
            assert_eq!(key.algorithm(), alg.unwrap_or("RS256"));
            let jwt = key.client_assertion("svc", "https://as").unwrap();
            let claims = verify(&jwt, verifier, &key.public_key());
            assert_eq!(claims["sub"], "svc");
        }
    }

    #[test]
    fn ed25519_and_inference() {
        let rng = SystemRandom::new();
        let der = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let key = SigningKey::from_pem(&pem("PRIVATE KEY", der.as_ref()), None).unwrap();
        assert_eq!(key.algorithm(), "EdDSA");
        let jwt = key.client_assertion("c", "a").unwrap();
        verify(&jwt, &signature::ED25519, &key.public_key());
        let p384 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P384_SHA384_FIXED_SIGNING, &rng)
            .unwrap();
        assert_eq!(
            SigningKey::from_pkcs8(p384.as_ref(), None)
                .unwrap()
                .algorithm(),
            "ES384"
        );
    }

    #[test]
    fn bad_keys_are_clear_errors() {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let p = pem("PRIVATE KEY", der.as_ref());
        for (text, alg) in [
            ("no pem here", Some("ES256")),
            (
                "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----",
                Some("ES256"),
            ),
            (
                "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----",
                None,
            ),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
                None,
            ),
            (p.as_str(), Some("RS256")),
            (p.as_str(), Some("HS256")),
        ] {
            assert!(
                matches!(SigningKey::from_pem(text, alg), Err(OAuthError::Key(_))),
                "{text:.30} {alg:?}"
            );
        }
    }
}
