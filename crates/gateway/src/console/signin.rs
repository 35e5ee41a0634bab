//! Failed console sign-ins limited per peer address: after
//! [`SIGN_IN_FAILURES`] refused tokens (or one-time links) from one
//! address within [`SIGN_IN_WINDOW`] of the first, every sign-in from it
//! is answered 429 with `Retry-After` until the window ends, a good token
//! included (so guessing cannot go on by mixing in a known one). Other
//! addresses are not affected.
//!
//! With `serve --state redis://…` the failures are counted in the shared
//! store, for every replica at once (`state::console`); without one, or
//! while the store cannot be reached, in this gateway's memory (bounded
//! to [`MAX_PEERS`] addresses).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use switchboard_wire::shared::lock;

use crate::state::SharedState;

/// How many failed sign-ins one address may make in [`SIGN_IN_WINDOW`].
pub const SIGN_IN_FAILURES: u32 = 10;

/// The window failed sign-ins are counted in, from the first.
pub const SIGN_IN_WINDOW: Duration = Duration::from_secs(60);

/// How many addresses are counted in memory at once; past it the oldest
/// window makes room.
const MAX_PEERS: usize = 10_000;

/// The failed sign-ins of one gateway's console.
#[derive(Debug)]
pub(crate) struct SignIns {
    store: Option<SharedState>,
    /// By address: the failures and when their window started.
    local: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl SignIns {
    /// Counted in `store` when there is one.
    pub(crate) fn new(store: Option<SharedState>) -> SignIns {
        SignIns {
            store,
            local: Mutex::default(),
        }
    }

    /// How long `peer` must wait before signing in again, when it used up
    /// its failures.
    pub(crate) async fn refused(&self, peer: IpAddr) -> Option<Duration> {
        let peer = peer.to_canonical();
        let (count, left) = match &self.store {
            Some(store) => match store.sign_in_failures(&peer.to_string()).await {
                Ok(counted) => counted,
                Err(why) => {
                    tracing::warn!(%peer, "failed console sign-ins are counted on this replica only: {why}");
                    self.local_count(peer)
                }
            },
            None => self.local_count(peer),
        };
        (count >= SIGN_IN_FAILURES).then(|| left.max(Duration::from_secs(1)))
    }

    /// Counts a failed sign-in from `peer`.
    pub(crate) async fn failed(&self, peer: IpAddr) {
        let peer = peer.to_canonical();
        tracing::info!(%peer, "a console sign-in was refused");
        if let Some(store) = &self.store {
            match store
                .count_sign_in_failure(&peer.to_string(), SIGN_IN_WINDOW)
                .await
            {
                Ok(_) => return,
                Err(why) => {
                    tracing::warn!(%peer, "failed console sign-ins are counted on this replica only: {why}");
                }
            }
        }
        let mut local = self.lock();
        let now = Instant::now();
        if !local.contains_key(&peer) && local.len() >= MAX_PEERS {
            local.retain(|_, (_, start)| now.duration_since(*start) < SIGN_IN_WINDOW);
            if local.len() >= MAX_PEERS {
                if let Some(oldest) = local.iter().min_by_key(|(_, (_, s))| *s).map(|(k, _)| *k) {
                    local.remove(&oldest);
                }
            }
        }
        let entry = local.entry(peer).or_insert((0, now));
        if now.duration_since(entry.1) >= SIGN_IN_WINDOW {
            *entry = (0, now);
        }
        entry.0 = entry.0.saturating_add(1);
    }

    /// The failures counted here for `peer` in its current window, and
    /// how long the window has left.
    fn local_count(&self, peer: IpAddr) -> (u32, Duration) {
        let local = self.lock();
        match local.get(&peer) {
            Some((count, start)) => match SIGN_IN_WINDOW.checked_sub(start.elapsed()) {
                Some(left) if !left.is_zero() => (*count, left),
                _ => (0, Duration::ZERO),
            },
            None => (0, Duration::ZERO),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, (u32, Instant)>> {
        lock(&self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_is_refused_after_its_failures_and_others_are_not() {
        let sign_ins = SignIns::new(None);
        let one: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        for _ in 0..SIGN_IN_FAILURES - 1 {
            sign_ins.failed(one).await;
        }
        assert!(sign_ins.refused(one).await.is_none());
        sign_ins.failed(one).await;
        let wait = sign_ins.refused(one).await.unwrap();
        assert!(wait <= SIGN_IN_WINDOW && wait >= Duration::from_secs(1));
        assert!(sign_ins.refused(other).await.is_none());
        // The same address written as IPv4-mapped IPv6 counts as one.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert!(sign_ins.refused(mapped).await.is_some());
    }
}
