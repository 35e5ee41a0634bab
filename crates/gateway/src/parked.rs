//! Parked calls: calls waiting in this replica's memory for the retry that
//! answers their question.
//!
//! A legacy (2025-11-25) server asks with a request of its own in the
//! middle of a tool call and waits for the answer on the same connection
//! (`call` relays it). The call cannot be asked again, so it is *parked*:
//! it goes on running, kept here under a random id that the sealed
//! `requestState` names with the replica ([`ParkedAt`]; the state starts
//! with the replica's name, so a retry reaching a peer replica,
//! [`GatewayOptions::peers`], is sent on here; without peers such servers
//! need load-balancer affinity). The retry takes the call back
//! ([`Parking::take`]), for the caller that parked it only.
//!
//! A parked call that gets no retry within its bound
//! ([`GatewayOptions::park_ttl`], the lifetime of the `requestState`) is
//! dropped, which answers its question with a cancel or an error (`call`).
//! At most [`GatewayOptions::park_limit`] calls are parked at once; beyond
//! that [`Parking::park`] gives the call back.
//!
//! [`GatewayOptions::peers`]: crate::GatewayOptions::peers
//! [`GatewayOptions::park_ttl`]: crate::GatewayOptions::park_ttl
//! [`GatewayOptions::park_limit`]: crate::GatewayOptions::park_limit

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_wire::shared::lock;

/// How long a parked call waits for its retry by default: as long as the
/// `requestState` naming it stays good.
pub const PARK_TTL: Duration = crate::APPROVAL_STATE_TTL;
/// How many calls may be parked at once by default.
pub const PARK_LIMIT: usize = 1024;

/// What the sealed state says of a parked call: where it waits.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ParkedAt {
    /// The call's random id in its replica's memory.
    id: String,
    /// The replica holding it.
    replica: String,
}

/// The calls (`T`) parked on this gateway, shared by its tools.
pub(crate) struct Parking<T> {
    inner: Arc<ParkingInner<T>>,
}

struct ParkingInner<T> {
    /// Each call, with the principal that parked it.
    calls: Mutex<HashMap<String, (Option<String>, T)>>,
    /// This gateway's name among replicas.
    replica: String,
    ttl: Duration,
    limit: usize,
}

impl<T: Send + 'static> Parking<T> {
    /// An empty parking for the replica `replica`.
    pub(crate) fn new(replica: String, ttl: Duration, limit: usize) -> Parking<T> {
        Parking {
            inner: Arc::new(ParkingInner {
                calls: Mutex::new(HashMap::new()),
                replica,
                ttl,
                limit,
            }),
        }
    }

    /// How many calls may be parked at once.
    pub(crate) fn limit(&self) -> usize {
        self.inner.limit
    }

    /// How many calls are parked.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Option<String>, T)>> {
        lock(&self.inner.calls)
    }

    /// Parks `call` of `principal` until its retry, or until it lapses
    /// (then it is dropped); `Err` gives the call back when the parking
    /// is full.
    pub(crate) fn park(&self, principal: Option<String>, call: T) -> Result<ParkedAt, T> {
        let id = random_id();
        {
            let mut calls = self.lock();
            if calls.len() >= self.inner.limit {
                return Err(call);
            }
            calls.insert(id.clone(), (principal, call));
        }
        let weak: Weak<ParkingInner<T>> = Arc::downgrade(&self.inner);
        let ttl = self.inner.ttl;
        let lapsing = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            let Some(inner) = weak.upgrade() else { return };
            let lapsed = Parking { inner }.lock().remove(&lapsing);
            if lapsed.is_some() {
                tracing::info!(call = %lapsing, "a parked call got no retry in time; its question is cancelled");
            }
            // Dropped outside the lock.
            drop(lapsed);
        });
        Ok(ParkedAt {
            id,
            replica: self.inner.replica.clone(),
        })
    }

    /// Takes the parked call the state names, for `principal`.
    ///
    /// # Errors
    /// The call is not here (another replica, a restart, lapsed), or
    /// another principal parked it: the text says which.
    pub(crate) fn take(&self, at: &ParkedAt, principal: Option<&str>) -> Result<T, String> {
        let mut calls = self.lock();
        match calls.get(&at.id) {
            None => Err(format!(
                "this retry answers a question asked by a legacy (2025-11-25) server whose call is parked on replica {:?}, \
                 and this gateway ({:?}) does not hold it: it is on another replica, the gateway restarted, or the call \
                 lapsed. Calls to such servers need the retry on the same replica: let the replicas find each other \
                 in a shared store (serve --state) or name them to each other (serve --peer), or give the \
                 client load-balancer affinity; start the call again",
                at.replica, self.inner.replica
            )),
            Some((parker, _)) if parker.as_deref() != principal => Err(
                "this retry answers a question of another caller's call; start the call again"
                    .into(),
            ),
            Some(_) => calls
                .remove(&at.id)
                .map(|(_, call)| call)
                .ok_or_else(|| "the parked call went away".to_owned()),
        }
    }
}

impl<T> Clone for Parking<T> {
    fn clone(&self) -> Self {
        Parking {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Send + 'static> Default for Parking<T> {
    /// A parking with the default bounds (a [`crate::Gateway`] makes its
    /// own, named after its replica).
    fn default() -> Parking<T> {
        Parking::new(String::new(), PARK_TTL, PARK_LIMIT)
    }
}

impl<T> fmt::Debug for Parking<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parking")
            .field("replica", &self.inner.replica)
            .field("ttl", &self.inner.ttl)
            .field("limit", &self.inner.limit)
            .finish_non_exhaustive()
    }
}

/// 128 random bits, hex; a fixed-looking id only if the OS has no
/// randomness (then ids still differ by a counter).
fn random_id() -> String {
    use std::fmt::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        bytes[..8].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    }
    bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_parked_call_lapses_and_is_dropped() {
        let parking = Parking::new("r1".into(), Duration::from_secs(60), 1);
        // A call that says when it is dropped.
        let (call, dropped) = oneshot::channel::<()>();
        let at = parking.park(None, call).ok().unwrap();
        assert_eq!(parking.len(), 1);
        // Full: a second call is given back.
        let (second, _) = oneshot::channel::<()>();
        assert!(parking.park(None, second).is_err());
        // Another principal cannot take it.
        let err = parking.take(&at, Some("mallory")).err().unwrap();
        assert!(err.contains("another caller"), "{err}");
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(parking.len(), 0);
        assert!(dropped.await.is_err(), "the lapsed call was dropped");
        let err = parking.take(&at, None).err().unwrap();
        assert!(
            err.contains("replica \"r1\"") && err.contains("affinity"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn the_caller_that_parked_a_call_takes_it_back() {
        let parking = Parking::<u32>::default();
        let at = parking.park(Some("alice".into()), 7).unwrap();
        assert_eq!(parking.take(&at, Some("alice")), Ok(7));
        assert_eq!(parking.len(), 0);
    }
}
