//! The connections one runner holds, and who gets a place when they are
//! all taken (issue 36: 1,100 idle sockets locked an authenticated caller
//! out for a minute).
//!
//! A connection is *busy* from the moment hyper hands its request to the
//! runner (the head is complete) until the answer's body is done, and
//! *idle* otherwise: not yet past the TLS handshake, not yet past its first
//! head, trickling a head, or kept alive between requests. At the cap
//! ([`HttpOptions::max_connections`]) a new connection takes the place of
//! the one that has been idle the longest, which is closed at once; only
//! when every connection is busy does the accept loop wait. So sockets that
//! never send a complete head cannot keep out one that does: the newcomer
//! is served, and an attacker's oldest socket goes. With
//! [`HttpOptions::max_connections_per_peer`], one address holds at most
//! that many: at its cap its own longest-idle connection makes room, or,
//! when all of its connections are busy, the new one is closed unanswered.
//!
//! The state a request changes (busy, idle, the time it went idle) is in
//! atomics on the connection's [`Slot`]; the table's lock is taken only to
//! open, close or evict a connection. Each connection learns of a stop or
//! an eviction through a oneshot of its own, which costs nothing to poll
//! while it waits.
//!
//! [`HttpOptions::max_connections`]: super::HttpOptions::max_connections
//! [`HttpOptions::max_connections_per_peer`]: super::HttpOptions::max_connections_per_peer

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::runner::body::Body;

/// [`Slot::state`]: a request is in flight.
const BUSY: u8 = 1;
/// [`Slot::state`]: the connection was evicted (it is being closed).
const EVICTED: u8 = 2;

/// What a connection is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signal {
    /// The server shuts down: finish the request in flight, then close.
    Stop,
    /// Another connection took this one's place: close now.
    Evict,
}

/// One open connection, as the table, its I/O and its requests see it.
#[derive(Debug)]
pub(super) struct Slot {
    /// The table's key.
    id: u64,
    /// The peer's address, for the per-peer cap.
    peer: IpAddr,
    /// [`BUSY`] and [`EVICTED`] bits.
    state: AtomicU8,
    /// When the connection last went idle (accepted, or its last answer
    /// done), in milliseconds from the table's epoch: the eviction order,
    /// and the start of the keep-alive idle timeout.
    idle_since: AtomicU64,
    /// How many answers are done: a new value tells the connection's I/O
    /// that a new idle period began.
    answers: AtomicU64,
    /// Where the table's epoch and waiting accept loop are.
    room: Arc<Room>,
}

/// What the accept loop and the connections share outside the table's
/// lock.
#[derive(Debug)]
struct Room {
    /// The instant `idle_since` counts from.
    epoch: Instant,
    /// Whether the accept loop waits for a connection to end or go idle.
    waiting: AtomicBool,
    /// Wakes the waiting accept loop.
    freed: Notify,
}

impl Room {
    /// Milliseconds from the epoch to now.
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Tells a waiting accept loop that a place may be free.
    fn wake(&self) {
        if self.waiting.load(Ordering::Acquire) {
            self.freed.notify_one();
        }
    }
}

impl Slot {
    /// Whether a request is in flight.
    pub(super) fn is_busy(&self) -> bool {
        self.state.load(Ordering::Acquire) & BUSY != 0
    }

    /// When the connection last went idle.
    pub(super) fn idle_since(&self) -> Instant {
        let ms = self.idle_since.load(Ordering::Acquire);
        self.room.epoch + std::time::Duration::from_millis(ms)
    }

    /// How many answers are done so far.
    pub(super) fn answers(&self) -> u64 {
        self.answers.load(Ordering::Acquire)
    }

    /// Marks a request in flight until the returned guard is dropped (with
    /// the answer's body, [`Answer`]).
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        self.state.fetch_or(BUSY, Ordering::AcqRel);
        Busy(Arc::clone(self))
    }
}

/// A request in flight on a connection: the connection cannot be evicted
/// while this lives.
#[derive(Debug)]
pub(super) struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        let slot = &self.0;
        slot.idle_since.store(slot.room.now(), Ordering::Release);
        slot.answers.fetch_add(1, Ordering::AcqRel);
        slot.state.fetch_and(!BUSY, Ordering::AcqRel);
        slot.room.wake();
    }
}

/// A response body that keeps its connection busy until it is done:
/// hyper drops it once the last byte is written (or the client is gone).
#[derive(Debug)]
pub(super) struct Answer {
    body: Body,
    _busy: Busy,
}

impl Answer {
    pub(super) fn new(body: Body, busy: Busy) -> Answer {
        Answer { body, _busy: busy }
    }
}

impl http_body::Body for Answer {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The open connections of one runner.
#[derive(Debug)]
pub(super) struct Conns {
    table: Mutex<Table>,
    room: Arc<Room>,
    /// At most this many connections at once.
    max: usize,
    /// At most this many from one address.
    per_peer: Option<usize>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: HashMap<u64, Entry>,
    /// Open connections per address (kept with a per-peer cap only).
    per_peer: HashMap<IpAddr, usize>,
}

#[derive(Debug)]
struct Entry {
    slot: Arc<Slot>,
    signal: oneshot::Sender<Signal>,
}

/// Whether a new connection may be served.
pub(super) enum Admission {
    /// Served: its slot, and where its stop or eviction comes.
    In(Arc<Slot>, oneshot::Receiver<Signal>),
    /// Its address holds all the connections it may, each busy.
    PeerFull,
}

impl Conns {
    pub(super) fn new(max: usize, per_peer: Option<usize>) -> Conns {
        Conns {
            table: Mutex::new(Table::default()),
            room: Arc::new(Room {
                epoch: Instant::now(),
                waiting: AtomicBool::new(false),
                freed: Notify::new(),
            }),
            max: max.max(1),
            per_peer,
        }
    }

    /// A place for a new connection from `peer`: at once when there is
    /// room or an idle connection to evict for it; otherwise once one
    /// ends or goes idle. Cancel safe.
    pub(super) async fn admit(&self, peer: IpAddr) -> Admission {
        loop {
            let freed = self.room.freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so a place freed meanwhile wakes
            // this wait rather than being missed.
            freed.as_mut().enable();
            self.room.waiting.store(true, Ordering::Release);
            if let Some(admission) = self.try_admit(peer) {
                self.room.waiting.store(false, Ordering::Release);
                return admission;
            }
            freed.await;
        }
    }

    /// [`Conns::admit`] without waiting: `None` when every connection is
    /// busy.
    fn try_admit(&self, peer: IpAddr) -> Option<Admission> {
        let peer = peer.to_canonical();
        let mut table = self.lock();
        if let Some(cap) = self.per_peer {
            if table.per_peer.get(&peer).copied().unwrap_or(0) >= cap
                && !table.evict_oldest_idle(Some(peer))
            {
                return Some(Admission::PeerFull);
            }
        }
        if table.open.len() >= self.max && !table.evict_oldest_idle(None) {
            return None;
        }
        let id = table.next;
        table.next += 1;
        let slot = Arc::new(Slot {
            id,
            peer,
            state: AtomicU8::new(0),
            idle_since: AtomicU64::new(self.room.now()),
            answers: AtomicU64::new(0),
            room: Arc::clone(&self.room),
        });
        let (signal, rx) = oneshot::channel();
        table.open.insert(
            id,
            Entry {
                slot: Arc::clone(&slot),
                signal,
            },
        );
        if self.per_peer.is_some() {
            *table.per_peer.entry(peer).or_default() += 1;
        }
        Some(Admission::In(slot, rx))
    }

    /// Forgets a connection that ended (unless it was evicted already).
    pub(super) fn release(&self, slot: &Slot) {
        let mut table = self.lock();
        if table.open.remove(&slot.id).is_some() {
            table.forget_peer(slot.peer);
        }
        drop(table);
        self.room.wake();
    }

    /// Asks every connection to finish its request and close.
    pub(super) fn stop_all(&self) {
        let mut table = self.lock();
        table.per_peer.clear();
        for (_, entry) in table.open.drain() {
            let _ = entry.signal.send(Signal::Stop);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        switchboard_wire::shared::lock(&self.table)
    }
}

impl Table {
    /// Evicts the connection (of `peer`, when given) idle the longest:
    /// whether there was one.
    fn evict_oldest_idle(&mut self, peer: Option<IpAddr>) -> bool {
        // A connection seen idle may turn busy before it is marked: then
        // the next oldest is tried.
        loop {
            let oldest = self
                .open
                .values()
                .filter(|e| peer.is_none_or(|p| e.slot.peer == p))
                .filter(|e| e.slot.state.load(Ordering::Acquire) == 0)
                // Among equals, the one opened first.
                .min_by_key(|e| (e.slot.idle_since.load(Ordering::Acquire), e.slot.id))
                .map(|e| e.slot.id);
            let Some(id) = oldest else {
                return false;
            };
            let Some(entry) = self.open.get(&id) else {
                return false;
            };
            let marked = entry
                .slot
                .state
                .compare_exchange(0, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            if !marked {
                continue;
            }
            if let Some(entry) = self.open.remove(&id) {
                tracing::debug!(
                    peer = %entry.slot.peer,
                    "connection evicted: idle the longest while the connection cap was reached"
                );
                self.forget_peer(entry.slot.peer);
                let _ = entry.signal.send(Signal::Evict);
            }
            return true;
        }
    }

    fn forget_peer(&mut self, peer: IpAddr) {
        if let Some(n) = self.per_peer.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted(conns: &Conns, peer: &str) -> (Arc<Slot>, oneshot::Receiver<Signal>) {
        match conns.try_admit(peer.parse().unwrap()) {
            Some(Admission::In(slot, rx)) => (slot, rx),
            Some(Admission::PeerFull) => panic!("peer full"),
            None => panic!("no room"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_longest_idle_connection_makes_room() {
        let conns = Conns::new(2, None);
        let (first, mut first_rx) = admitted(&conns, "10.0.0.1");
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        let (second, mut second_rx) = admitted(&conns, "10.0.0.2");
        let (_third, _) = admitted(&conns, "10.0.0.3");
        assert_eq!(first_rx.try_recv(), Ok(Signal::Evict));
        assert!(second_rx.try_recv().is_err(), "the newer one stays");
        // A busy connection is never evicted; with all busy, no room.
        let _busy = second.busy();
        let (_fourth, _) = admitted(&conns, "10.0.0.4");
        assert!(second_rx.try_recv().is_err());
        assert_eq!(conns.lock().open.len(), 2);
        drop(first);
    }

    #[tokio::test(start_paused = true)]
    async fn with_every_connection_busy_admission_waits_for_one_to_go_idle() {
        let conns = Arc::new(Conns::new(1, None));
        let (slot, _rx) = admitted(&conns, "10.0.0.1");
        let busy = slot.busy();
        assert!(conns.try_admit("10.0.0.2".parse().unwrap()).is_none());
        let waiting = tokio::spawn({
            let conns = Arc::clone(&conns);
            async move {
                matches!(
                    conns.admit("10.0.0.2".parse().unwrap()).await,
                    Admission::In(..)
                )
            }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(busy);
        assert!(waiting.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_at_its_cap_evicts_its_own_idle_connection_or_is_refused() {
        let conns = Conns::new(100, Some(2));
        let (a1, mut a1_rx) = admitted(&conns, "10.0.0.1");
        let (a2, _a2_rx) = admitted(&conns, "::ffff:10.0.0.1");
        let (_b, mut b_rx) = admitted(&conns, "10.0.0.2");
        let (a3, _a3_rx) = admitted(&conns, "10.0.0.1");
        assert_eq!(a1_rx.try_recv(), Ok(Signal::Evict));
        assert!(b_rx.try_recv().is_err(), "another peer's connection stays");
        // Both of its connections busy: the peer's next one is refused,
        // though the table has room.
        let _busy2 = a2.busy();
        let _busy3 = a3.busy();
        assert!(matches!(
            conns.try_admit("10.0.0.1".parse().unwrap()),
            Some(Admission::PeerFull)
        ));
        assert!(matches!(
            conns.try_admit("10.0.0.3".parse().unwrap()),
            Some(Admission::In(..))
        ));
        drop(a1);
    }
}
