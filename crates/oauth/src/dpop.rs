//! DPoP (RFC 9449): the client's proof-of-possession key and the proofs it
//! signs with it.
//!
//! One ES256 key pair per server login, created when the authorization
//! server advertises `dpop_signing_alg_values_supported` and kept with the
//! tokens bound to it (as PKCS#8 inside a [`Secret`], so it never reaches
//! `Debug` output or a log line). Every token request and every request to
//! the resource server carries a fresh proof: a JWT with `typ: dpop+jwt`,
//! the public key as `jwk`, and the claims `jti`, `htm`, `htu` (the URL
//! without query and fragment), `iat`, `ath` (the access token's SHA-256,
//! towards the resource server) and `nonce` once a server has supplied one.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::json;

use super::error::OAuthError;
use super::secret::{Secret, random_b64, s256};
use super::token::now_secs;

/// The error code with which a server asks for a nonce (RFC 9449 §8, §9).
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// A DPoP key pair (P-256).
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: Secret,
    /// The public key as a JWK (members in RFC 7638 order).
    jwk: serde_json::Value,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new random key pair.
    pub(crate) fn generate() -> Result<DpopKey, OAuthError> {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| OAuthError::Key("cannot generate a DPoP key".into()))?;
        DpopKey::from_der(der.as_ref())
    }

    /// The key kept in the token store ([`DpopKey::stored`]).
    pub(crate) fn from_stored(stored: &Secret) -> Result<DpopKey, OAuthError> {
        let der = URL_SAFE_NO_PAD
            .decode(stored.expose())
            .map_err(|_| OAuthError::Key("the stored DPoP key is not base64url".into()))?;
        DpopKey::from_der(&der)
    }

    fn from_der(der: &[u8]) -> Result<DpopKey, OAuthError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|_| OAuthError::Key("the DPoP key is not a P-256 PKCS#8 key".into()))?;
        let point = pair.public_key().as_ref();
        // Uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
        if point.len() != 65 || point[0] != 4 {
            return Err(OAuthError::Key(
                "the DPoP public key is not an uncompressed P-256 point".into(),
            ));
        }
        let jwk = json!({
            "crv": "P-256",
            "kty": "EC",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(DpopKey {
            pair,
            pkcs8: Secret::new(URL_SAFE_NO_PAD.encode(der)),
            jwk,
        })
    }

    /// The private key as stored (PKCS#8, base64url).
    pub(crate) fn stored(&self) -> Secret {
        self.pkcs8.clone()
    }

    /// The JWK SHA-256 thumbprint (RFC 7638): the `cnf.jkt` of tokens
    /// bound to this key.
    pub(crate) fn thumbprint(&self) -> String {
        // serde_json keeps members sorted, which is RFC 7638's order.
        s256(&self.jwk.to_string())
    }

    /// A fresh proof for `htm` `url`; `access_token` adds `ath`, `nonce`
    /// the server-supplied nonce.
    pub(crate) fn proof(
        &self,
        htm: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, OAuthError> {
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk });
        let mut claims = json!({
            "jti": random_b64(16).map_err(OAuthError::Key)?,
            "htm": htm,
            "htu": htu(url),
            "iat": now_secs(),
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(s256(token));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| OAuthError::Key("DPoP signing failed".into()))?;
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// `htu`: the request URL without query and fragment (RFC 9449 §4.2).
pub(crate) fn htu(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use serde_json::Value;

    use super::*;

    fn part(jwt: &str, i: usize) -> Value {
        let bytes = URL_SAFE_NO_PAD
            .decode(jwt.split('.').nth(i).unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    // A proof verifies with its own jwk, carries the RFC 9449 claims, and
    // every proof has its own jti.
    #[test]
    fn proofs_verify_and_carry_the_claims() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://rs.example/mcp?x=1#f",
                Some("tok"),
                Some("n1"),
            )
            .unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none());
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://rs.example/mcp");
        assert_eq!(claims["ath"], s256("tok"));
        assert_eq!(claims["nonce"], "n1");
        let (input, sig) = proof.rsplit_once('.').unwrap();
        let mut point = vec![4u8];
        for c in ["x", "y"] {
            point.extend(
                URL_SAFE_NO_PAD
                    .decode(header["jwk"][c].as_str().unwrap())
                    .unwrap(),
            );
        }
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .unwrap();
        let again = key
            .proof("POST", "https://rs.example/mcp", None, None)
            .unwrap();
        assert_ne!(part(&again, 1)["jti"], claims["jti"]);
        assert!(part(&again, 1).get("ath").is_none());
    }

    // The stored form round-trips to the same key; Debug shows no key.
    #[test]
    fn stored_key_round_trips_and_stays_secret() {
        let key = DpopKey::generate().unwrap();
        let back = DpopKey::from_stored(&key.stored()).unwrap();
        assert_eq!(back.thumbprint(), key.thumbprint());
        let shown = format!("{key:?}");
        assert!(!shown.contains(key.stored().expose()), "{shown}");
        assert!(DpopKey::from_stored(&Secret::new("bm90IGEga2V5")).is_err());
    }

    // RFC 7638 §3.1's example thumbprint procedure on a known P-256 JWK.
    #[test]
    fn thumbprint_uses_the_required_members_in_order() {
        let key = DpopKey::generate().unwrap();
        let jwk = &key.jwk;
        let expected = s256(&format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        ));
        assert_eq!(key.thumbprint(), expected);
    }
}
