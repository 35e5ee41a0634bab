//! Compact JWS (RFC 7515) checked against a public JWK (RFC 7517): the one
//! signature check of the server side, used by DPoP proofs and by the
//! validators of JWT access tokens.
//!
//! Algorithms: `ES256` (P-256), `ES384` (P-384), `RS256`, `RS384`,
//! `RS512` (RSA PKCS#1 v1.5, 2048 bits or more). `none`, HMAC and any
//! algorithm that does not fit the key are refused; a JWK that names its
//! `alg` must name the header's.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;
use switchboard_wire::JsonObject;

/// Why a JWS was refused. Messages never quote the token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwsError {
    /// Not three base64url parts with JSON object header and payload.
    #[error("not a compact JWS with JSON header and claims")]
    Malformed,
    /// The key is not a usable public key for the header's algorithm.
    #[error("{0}")]
    Key(String),
    /// The signature does not verify.
    #[error("the signature does not verify")]
    Signature,
}

/// A decoded (not yet verified) compact JWS.
#[derive(Clone, Debug)]
pub struct Jws<'a> {
    /// The protected header.
    pub header: JsonObject,
    /// The payload, read as JSON claims.
    pub claims: JsonObject,
    signing_input: &'a str,
    signature: Vec<u8>,
}

impl<'a> Jws<'a> {
    /// Splits and decodes `token` without checking its signature.
    ///
    /// # Errors
    /// [`JwsError::Malformed`].
    pub fn decode(token: &'a str) -> Result<Jws<'a>, JwsError> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwsError::Malformed);
        };
        let object = |part: &str| -> Result<JsonObject, JwsError> {
            let bytes = URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| JwsError::Malformed)?;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => Ok(map),
                _ => Err(JwsError::Malformed),
            }
        };
        let header = object(h)?;
        let claims = object(c)?;
        let signature = URL_SAFE_NO_PAD.decode(s).map_err(|_| JwsError::Malformed)?;
        Ok(Jws {
            header,
            claims,
            signing_input: &token[..h.len() + 1 + c.len()],
            signature,
        })
    }

    /// The header's `alg`.
    pub fn alg(&self) -> Option<&str> {
        self.header.get("alg").and_then(Value::as_str)
    }

    /// The header's `kid`.
    pub fn kid(&self) -> Option<&str> {
        self.header.get("kid").and_then(Value::as_str)
    }

    /// Checks the signature with the public key `jwk`.
    ///
    /// # Errors
    /// [`JwsError::Key`] for a key that does not fit the algorithm (or an
    /// algorithm not supported), [`JwsError::Signature`].
    pub fn verify(&self, jwk: &JsonObject) -> Result<(), JwsError> {
        let alg = self.alg().unwrap_or("");
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        if jwk.contains_key("d") {
            return Err(JwsError::Key("the key contains a private part".into()));
        }
        if field("alg").is_some_and(|a| a != alg) {
            return Err(JwsError::Key(format!(
                "the key is for {}, the token is signed with {alg}",
                field("alg").unwrap_or_default()
            )));
        }
        let bytes = |name: &str| -> Result<Vec<u8>, JwsError> {
            field(name)
                .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
                .ok_or_else(|| {
                    JwsError::Key(format!("the key's {name} is missing or not base64url"))
                })
        };
        let ok = match (alg, field("kty"), field("crv")) {
            ("ES256" | "ES384", Some("EC"), crv) => {
                let (want, size, algorithm) = if alg == "ES256" {
                    ("P-256", 32, &signature::ECDSA_P256_SHA256_FIXED)
                } else {
                    ("P-384", 48, &signature::ECDSA_P384_SHA384_FIXED)
                };
                if crv != Some(want) {
                    return Err(JwsError::Key(format!("{alg} needs a {want} key")));
                }
                let (x, y) = (bytes("x")?, bytes("y")?);
                if x.len() != size || y.len() != size {
                    return Err(JwsError::Key(format!("the key is not a {want} point")));
                }
                let mut point = Vec::with_capacity(1 + 2 * size);
                point.push(4);
                point.extend(x);
                point.extend(y);
                UnparsedPublicKey::new(algorithm, point)
                    .verify(self.signing_input.as_bytes(), &self.signature)
                    .is_ok()
            }
            ("RS256" | "RS384" | "RS512", Some("RSA"), _) => {
                let algorithm = match alg {
                    "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                    _ => &signature::RSA_PKCS1_2048_8192_SHA512,
                };
                RsaPublicKeyComponents {
                    n: bytes("n")?,
                    e: bytes("e")?,
                }
                .verify(algorithm, self.signing_input.as_bytes(), &self.signature)
                .is_ok()
            }
            (alg, kty, _) => {
                return Err(JwsError::Key(format!(
                    "algorithm {alg:?} with a key of type {} is not supported",
                    kty.unwrap_or("?")
                )));
            }
        };
        if ok { Ok(()) } else { Err(JwsError::Signature) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    use serde_json::json;

    fn es256() -> (EcdsaKeyPair, JsonObject) {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).unwrap();
        let p = pair.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": URL_SAFE_NO_PAD.encode(&p[1..33]),
                         "y": URL_SAFE_NO_PAD.encode(&p[33..])});
        (pair, jwk.as_object().unwrap().clone())
    }

    fn sign(pair: &EcdsaKeyPair, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    #[test]
    fn es256_signatures() {
        let (pair, jwk) = es256();
        let (_, other) = es256();
        let t = sign(
            &pair,
            &json!({"alg": "ES256", "kid": "k"}),
            &json!({"sub": "a"}),
        );
        let jws = Jws::decode(&t).unwrap();
        assert_eq!(jws.kid(), Some("k"));
        assert_eq!(jws.claims["sub"], "a");
        assert_eq!(jws.verify(&jwk), Ok(()));
        assert_eq!(jws.verify(&other), Err(JwsError::Signature));
        // The claims changed after signing.
        let mut parts: Vec<&str> = t.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(json!({"sub": "root"}).to_string());
        parts[1] = &forged;
        let forged = parts.join(".");
        assert_eq!(
            Jws::decode(&forged).unwrap().verify(&jwk),
            Err(JwsError::Signature)
        );
        // alg none, or an alg that does not fit the key.
        for alg in ["none", "HS256", "RS256"] {
            let t = sign(&pair, &json!({"alg": alg}), &json!({}));
            assert!(matches!(
                Jws::decode(&t).unwrap().verify(&jwk),
                Err(JwsError::Key(_))
            ));
        }
        let mut named = jwk.clone();
        named.insert("alg".into(), json!("ES384"));
        assert!(matches!(jws.verify(&named), Err(JwsError::Key(_))));
        assert_eq!(Jws::decode("a.b").unwrap_err(), JwsError::Malformed);
    }

    // The RSA test key of the OAuth client's tests (ring cannot make one).
    const RSA_PKCS8: &str = include_str!("../../oauth/src/testdata/rsa-test-key.pem");

    #[test]
    fn rs256_signatures() {
        use base64::engine::general_purpose::STANDARD;
        use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
        let body: String = RSA_PKCS8
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let pair = RsaKeyPair::from_pkcs8(&STANDARD.decode(body).unwrap()).unwrap();
        let public: RsaPublicKeyComponents<Vec<u8>> = pair.public().into();
        let jwk = json!({"kty": "RSA", "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e)});
        let jwk = jwk.as_object().unwrap().clone();
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(json!({"alg": "RS256"}).to_string()),
            URL_SAFE_NO_PAD.encode(json!({"sub": "a"}).to_string())
        );
        let mut sig = vec![0; pair.public().modulus_len()];
        pair.sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            input.as_bytes(),
            &mut sig,
        )
        .unwrap();
        let token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&sig));
        assert_eq!(Jws::decode(&token).unwrap().verify(&jwk), Ok(()));
        sig[0] ^= 1;
        let bad = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&sig));
        assert_eq!(
            Jws::decode(&bad).unwrap().verify(&jwk),
            Err(JwsError::Signature)
        );
        // An EC key cannot check an RS256 token.
        let (_, ec) = es256();
        assert!(matches!(
            Jws::decode(&token).unwrap().verify(&ec),
            Err(JwsError::Key(_))
        ));
    }
}
