//! Cross-call state for servers that need it: opaque handles bound to a
//! principal ([`StateHandles`]), and at-most-once use of a `requestState`
//! ([`ReplayGuard`], MRTR-10).
//!
//! Requests are stateless (WIRE-19), so state spanning requests is named by
//! an explicit identifier the client sends back (WIRE-22). A handle is 256
//! random bits, expires, and only works for the principal it was issued to:
//! possessing it is never enough.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::auth::Principal;
use crate::error::HandlerError;
use crate::seal;

/// A store of values named by unguessable handles.
///
/// ```
/// use std::time::Duration;
/// use switchboard_server::{Principal, StateHandles};
///
/// let carts: StateHandles<Vec<String>> = StateHandles::new(Duration::from_secs(600));
/// let alice = Principal::new("alice");
/// let handle = carts.create(Some(&alice), vec!["book".into()]).unwrap();
/// assert_eq!(carts.get(Some(&alice), &handle).unwrap().len(), 1);
/// assert!(carts.get(Some(&Principal::new("mallory")), &handle).is_err());
/// ```
pub struct StateHandles<T> {
    entries: Mutex<HashMap<String, Entry<T>>>,
    ttl: Duration,
    capacity: usize,
}

struct Entry<T> {
    owner: Option<String>,
    expires: Instant,
    value: Arc<T>,
}

impl<T> std::fmt::Debug for StateHandles<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateHandles")
            .field("ttl", &self.ttl)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

const UNKNOWN_HANDLE: &str =
    "unknown or expired handle; create a new one and use it with the same credentials";

impl<T> StateHandles<T> {
    /// A store whose handles live for `ttl` after their last use, holding at
    /// most 100 000 values.
    pub fn new(ttl: Duration) -> Self {
        StateHandles::with_capacity(ttl, 100_000)
    }

    /// A store holding at most `capacity` live values.
    pub fn with_capacity(ttl: Duration, capacity: usize) -> Self {
        StateHandles {
            entries: Mutex::new(HashMap::new()),
            ttl,
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry<T>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `value` for `owner` and returns its new handle.
    ///
    /// # Errors
    /// An error result for the model when the store is full or the system
    /// has no randomness.
    pub fn create(&self, owner: Option<&Principal>, value: T) -> Result<String, HandlerError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| HandlerError::internal(format!("no randomness for a handle: {e}")))?;
        let handle = seal::encode(&bytes);
        let now = Instant::now();
        let mut entries = self.lock();
        if entries.len() >= self.capacity {
            entries.retain(|_, e| e.expires > now);
        }
        if entries.len() >= self.capacity {
            return Err(HandlerError::msg(
                "too many open handles; finish or abandon some and try again",
            ));
        }
        entries.insert(
            handle.clone(),
            Entry {
                owner: owner.map(|p| p.subject.clone()),
                expires: now + self.ttl,
                value: Arc::new(value),
            },
        );
        Ok(handle)
    }

    /// The value named by `handle`, if `caller` owns it and it has not
    /// expired; using it extends its life.
    ///
    /// # Errors
    /// One error for unknown, expired and foreign handles alike, so a
    /// caller learns nothing about handles that are not theirs.
    pub fn get(&self, caller: Option<&Principal>, handle: &str) -> Result<Arc<T>, HandlerError> {
        let now = Instant::now();
        let mut entries = self.lock();
        match entries.get_mut(handle) {
            Some(e) if e.expires > now && owner_matches(&e.owner, caller) => {
                e.expires = now + self.ttl;
                Ok(Arc::clone(&e.value))
            }
            Some(e) if e.expires <= now => {
                entries.remove(handle);
                Err(HandlerError::msg(UNKNOWN_HANDLE))
            }
            _ => Err(HandlerError::msg(UNKNOWN_HANDLE)),
        }
    }

    /// Replaces the value of a handle `caller` owns.
    ///
    /// # Errors
    /// As [`StateHandles::get`].
    pub fn set(
        &self,
        caller: Option<&Principal>,
        handle: &str,
        value: T,
    ) -> Result<(), HandlerError> {
        let now = Instant::now();
        let mut entries = self.lock();
        match entries.get_mut(handle) {
            Some(e) if e.expires > now && owner_matches(&e.owner, caller) => {
                e.value = Arc::new(value);
                e.expires = now + self.ttl;
                Ok(())
            }
            _ => Err(HandlerError::msg(UNKNOWN_HANDLE)),
        }
    }

    /// Removes a handle `caller` owns; returns its value.
    ///
    /// # Errors
    /// As [`StateHandles::get`].
    pub fn remove(&self, caller: Option<&Principal>, handle: &str) -> Result<Arc<T>, HandlerError> {
        let now = Instant::now();
        let mut entries = self.lock();
        match entries.get(handle) {
            Some(e) if e.expires > now && owner_matches(&e.owner, caller) => entries
                .remove(handle)
                .map(|e| e.value)
                .ok_or_else(|| HandlerError::msg(UNKNOWN_HANDLE)),
            _ => Err(HandlerError::msg(UNKNOWN_HANDLE)),
        }
    }

    /// How many live values the store holds.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.lock().values().filter(|e| e.expires > now).count()
    }

    /// Whether the store holds no live value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn owner_matches(owner: &Option<String>, caller: Option<&Principal>) -> bool {
    match (owner, caller) {
        (None, None) => true,
        (Some(o), Some(c)) => *o == c.subject,
        _ => false,
    }
}

/// Remembers which sealed states were used, until they expire, so a state
/// that must be single-use cannot be replayed (MRTR-10).
#[derive(Debug, Default)]
pub(crate) struct ReplayGuard {
    seen: Mutex<HashMap<[u8; 16], u64>>,
}

impl ReplayGuard {
    /// Records a use of `nonce`; `false` if it was used before.
    pub(crate) fn consume(&self, nonce: [u8; 16], expires_at_ms: u64) -> bool {
        let now = seal::now_ms();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() > 4096 {
            seen.retain(|_, exp| *exp > now);
        }
        seen.insert(nonce, expires_at_ms).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_bound_to_their_owner() {
        let store = StateHandles::new(Duration::from_secs(60));
        let alice = Principal::new("alice");
        let h = store.create(Some(&alice), 1).unwrap();
        assert_eq!(h.len(), 43);
        assert_eq!(*store.get(Some(&alice), &h).unwrap(), 1);
        assert!(store.get(None, &h).is_err());
        assert!(store.get(Some(&Principal::new("bob")), &h).is_err());
        store.set(Some(&alice), &h, 2).unwrap();
        assert_eq!(*store.remove(Some(&alice), &h).unwrap(), 2);
        assert!(store.get(Some(&alice), &h).is_err());
    }

    #[test]
    fn handles_expire_and_capacity_is_bounded() {
        let store = StateHandles::with_capacity(Duration::ZERO, 1);
        let h = store.create(None, ()).unwrap();
        assert!(store.get(None, &h).is_err());
        let full = StateHandles::with_capacity(Duration::from_secs(60), 1);
        full.create(None, ()).unwrap();
        assert!(full.create(None, ()).is_err());
    }

    #[test]
    fn replay_guard_allows_one_use() {
        let g = ReplayGuard::default();
        let exp = seal::now_ms() + 60_000;
        assert!(g.consume([1; 16], exp));
        assert!(!g.consume([1; 16], exp));
        assert!(g.consume([2; 16], exp));
    }
}
