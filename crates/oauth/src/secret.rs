//! Values that must never reach a log line, an error message or `Debug`
//! output, and the randomness and digests PKCE and `state` need.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

/// A token, client secret, authorization code or PKCE verifier. `Debug`
/// prints `<redacted>`; there is no `Display`, so it cannot end up in a
/// message by accident. [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret(value.to_owned())
    }
}

/// `len` random bytes, base64url without padding.
pub(crate) fn random_b64(len: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; len];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system random number generator failed".to_owned())?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The PKCE pair: a 43-character verifier from 32 random bytes, and its
/// S256 challenge (RFC 7636 §4.1-4.2).
pub(crate) struct Pkce {
    /// Sent to the token endpoint.
    pub(crate) verifier: Secret,
    /// Sent to the authorization endpoint.
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn generate() -> Result<Pkce, String> {
        let verifier = random_b64(32)?;
        let challenge = s256(&verifier);
        Ok(Pkce {
            verifier: Secret(verifier),
            challenge,
        })
    }
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

/// `BASE64URL(SHA256(ASCII(verifier)))`.
pub(crate) fn s256(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(&s)), "Some(<redacted>)");
        assert_eq!(s.expose(), "hunter2");
    }

    // RFC 7636 Appendix B.
    #[test]
    fn s256_matches_the_rfc_example() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn pkce_pairs_are_fresh_and_well_formed() {
        let a = Pkce::generate().unwrap();
        let b = Pkce::generate().unwrap();
        assert_ne!(a.verifier, b.verifier);
        let v = a.verifier.expose();
        assert_eq!(v.len(), 43);
        assert!(
            v.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_eq!(a.challenge, s256(v));
        assert!(!format!("{a:?}").contains(v));
    }
}
