//! Console sessions: a random id kept server-side (the cookie carries
//! only the id), the principal it belongs to, its CSRF token and its
//! expiry. Bounded: past [`MAX_SESSIONS`] the session closest to its
//! expiry makes room.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq as _;

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
    expires: Instant,
}

/// The live sessions, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions(Mutex<HashMap<String, Session>>);

impl Sessions {
    /// A new session for `principal`: its id and CSRF token.
    pub(crate) fn open(&self, principal: &str) -> Option<(String, Session)> {
        let id = random_hex()?;
        let session = Session {
            principal: principal.to_owned(),
            csrf: random_hex()?,
            expires: Instant::now() + SESSION_TTL,
        };
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(id).filter(|s| s.expires > Instant::now()).cloned()
    }

    /// Ends the session `id`.
    pub(crate) fn close(&self, id: &str) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.remove(id);
    }
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

/// The `Set-Cookie` value of session `id`: `HttpOnly`, `SameSite=Strict`,
/// scoped to `/console`, `Secure` under TLS.
pub(crate) fn set_cookie(id: &str, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!(
        "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        SESSION_TTL.as_secs()
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
        let (id, session) = sessions.open("alice").unwrap();
        assert_eq!(sessions.get(&id).unwrap().principal, "alice");
        assert_ne!(id, session.csrf);
        assert!(sessions.get("nope").is_none());
        sessions.close(&id);
        assert!(sessions.get(&id).is_none());
    }

    #[test]
    fn the_cookie_is_strict_and_secure_under_tls() {
        let plain = set_cookie("abc", false);
        assert!(
            plain.starts_with("switchboard_console=abc; Path=/console; HttpOnly; SameSite=Strict")
        );
        assert!(!plain.contains("Secure"));
        assert!(set_cookie("abc", true).ends_with("; Secure"));
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
