//! Console sessions: a random id kept server-side (the cookie carries
//! only the id), the principal it belongs to, the credential it was
//! signed in with, its CSRF token and its expiry. Bounded: past
//! [`MAX_SESSIONS`] the session closest to its expiry makes room.
//!
//! A session stands for its credential: the token signed in with is kept
//! here (redacted in every `Debug`, never in the cookie) and checked
//! again by the gateway's validator on every request, so a token taken
//! out of the tokens file, or an OAuth access token that expired or was
//! revoked, ends the session at its next request; and a session never
//! outlives the access token's `exp`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq as _;
use switchboard_server::PresentedToken;
use switchboard_wire::JsonObject;
use switchboard_wire::shared::lock;

/// How long a console session lasts from sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);

/// How many console sessions are kept at once.
pub const MAX_SESSIONS: usize = 1024;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "switchboard_console";

/// One signed-in person.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The principal signed in.
    pub(crate) principal: String,
    /// The token every state-changing form must carry.
    pub(crate) csrf: String,
    /// The token signed in with, checked again on every request; `None`
    /// for the one-time sign-in of `switchboard console`.
    pub(crate) credential: Option<PresentedToken>,
    expires: Instant,
}

/// The live sessions, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions(Mutex<HashMap<String, Session>>);

impl Sessions {
    /// A new session for `principal`, signed in with `credential`,
    /// lasting `lifetime` (see [`lifetime`]): its id and what it stands
    /// for.
    pub(crate) fn open(
        &self,
        principal: &str,
        credential: Option<PresentedToken>,
        lifetime: Duration,
    ) -> Option<(String, Session)> {
        let id = random_hex()?;
        let session = Session {
            principal: principal.to_owned(),
            csrf: random_hex()?,
            credential,
            expires: Instant::now() + lifetime.min(SESSION_TTL),
        };
        let mut map = lock(&self.0);
        let now = Instant::now();
        map.retain(|_, s| s.expires > now);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(id.clone(), session.clone());
        Some((id, session))
    }

    /// The session with id `id`, when it is live.
    pub(crate) fn get(&self, id: &str) -> Option<Session> {
        let map = lock(&self.0);
        map.get(id).filter(|s| s.expires > Instant::now()).cloned()
    }

    /// Ends the session `id`.
    pub(crate) fn close(&self, id: &str) {
        let mut map = lock(&self.0);
        map.remove(id);
    }
}

/// How long a session signed in with a token whose claims are `claims`
/// may last: [`SESSION_TTL`], or less when the token expires sooner (its
/// `exp`, Unix seconds).
pub(crate) fn lifetime(claims: &JsonObject) -> Duration {
    let Some(exp) = claims.get("exp").and_then(serde_json::Value::as_f64) else {
        return SESSION_TTL;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    Duration::try_from_secs_f64(exp - now)
        .unwrap_or(Duration::ZERO)
        .min(SESSION_TTL)
}

/// Whether `given` is `expected`, compared in constant time.
pub(crate) fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

/// 32 random bytes in hex, or `None` when the system has no randomness
/// (then no session is made rather than a guessable one).
pub(crate) fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(crate::trace::hex(&bytes))
}

/// The session id in a request's `Cookie` header(s).
pub(crate) fn cookie_of(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE).then(|| value.trim().to_owned())
        })
}

/// The `Set-Cookie` value of session `id` lasting `lifetime`: `HttpOnly`,
/// `SameSite=Strict`, scoped to `/console`, `Secure` under TLS.
pub(crate) fn set_cookie(id: &str, lifetime: Duration, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!(
        "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        lifetime.min(SESSION_TTL).as_secs()
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub(crate) fn clear_cookie(tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_id_until_closed() {
        let sessions = Sessions::default();
        let token = Some(PresentedToken::new("secret-token"));
        let (id, session) = sessions.open("alice", token, SESSION_TTL).unwrap();
        assert!(!format!("{session:?}").contains("secret-token"));
        assert_eq!(sessions.get(&id).unwrap().principal, "alice");
        assert_ne!(id, session.csrf);
        assert!(sessions.get("nope").is_none());
        sessions.close(&id);
        assert!(sessions.get(&id).is_none());
    }

    #[test]
    fn a_session_never_outlives_its_access_token() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = |exp: serde_json::Value| {
            let mut c = JsonObject::new();
            c.insert("exp".into(), exp);
            c
        };
        assert_eq!(lifetime(&JsonObject::new()), SESSION_TTL);
        assert!(lifetime(&claims(serde_json::json!(now + 60))) <= Duration::from_secs(60));
        assert!(lifetime(&claims(serde_json::json!(now + 60))) > Duration::from_secs(30));
        assert_eq!(
            lifetime(&claims(serde_json::json!(now + 86_400))),
            SESSION_TTL
        );
        assert_eq!(
            lifetime(&claims(serde_json::json!(now - 5))),
            Duration::ZERO
        );
        // An access token that expired: its session is gone at once.
        let sessions = Sessions::default();
        let expired = lifetime(&claims(serde_json::json!(now - 5)));
        let (id, _) = sessions.open("alice", None, expired).unwrap();
        assert!(sessions.get(&id).is_none());
    }

    #[test]
    fn the_cookie_is_strict_and_secure_under_tls() {
        let plain = set_cookie("abc", SESSION_TTL, false);
        assert!(
            plain.starts_with("switchboard_console=abc; Path=/console; HttpOnly; SameSite=Strict")
        );
        assert!(plain.contains("Max-Age=28800"), "{plain}");
        assert!(!plain.contains("Secure"));
        assert!(set_cookie("abc", SESSION_TTL, true).ends_with("; Secure"));
        assert!(set_cookie("abc", Duration::from_secs(90), false).contains("Max-Age=90"));
        assert!(clear_cookie(true).contains("Max-Age=0"));
    }

    #[test]
    fn the_session_id_is_read_among_other_cookies() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::COOKIE,
            http::HeaderValue::from_static("a=1; switchboard_console=xyz; b=2"),
        );
        assert_eq!(cookie_of(&headers).as_deref(), Some("xyz"));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
    }
}
