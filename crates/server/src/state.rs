//! Cross-call state for servers that need it: opaque handles bound to a
//! principal ([`StateHandles`]), and at-most-once use of a `requestState`
//! ([`ReplayGuard`], MRTR-10), recorded for replicas in a shared
//! [`UseLedger`] (a file here, or a store a gateway brings).
//!
//! Requests are stateless (WIRE-19), so state spanning requests is named by
//! an explicit identifier the client sends back (WIRE-22). A handle is 256
//! random bits, expires, and only works for the principal it was issued to:
//! possessing it is never enough.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fs4::fs_std::FileExt;
use switchboard_wire::shared::lock;

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
        lock(&self.entries)
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

/// Where the replicas behind one URL record each single-use state they
/// accept, so that a state accepted by one is refused by all the others:
/// a file they share ([`crate::ServerBuilder::replay_ledger`]), or a store
/// of one's own ([`crate::ServerBuilder::use_ledger`], e.g. a gateway's
/// Redis).
pub trait UseLedger: Send + Sync + std::fmt::Debug {
    /// Records the use of the state named `nonce`, valid until
    /// `expires_at_ms` (Unix milliseconds), atomically for every replica:
    /// `Ok(true)` for its first use, `Ok(false)` when it was recorded
    /// before, `Err(why)` when the use could not be recorded (the state is
    /// then refused rather than risk a replay).
    fn record(
        &self,
        nonce: [u8; 16],
        expires_at_ms: u64,
    ) -> crate::auth::BoxFuture<'_, Result<bool, String>>;
}

/// Remembers which sealed states were used, until they expire, so a state
/// that must be single-use cannot be replayed (MRTR-10). With a shared
/// [`UseLedger`] (a file every replica opens, or a store) replicas behind
/// one URL refuse a state any of them has accepted.
#[derive(Debug, Default)]
pub(crate) struct ReplayGuard {
    seen: Mutex<HashMap<[u8; 16], u64>>,
    ledger: Option<Arc<dyn UseLedger>>,
}

/// What [`ReplayGuard::consume`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StateUse {
    /// The first use: go on.
    First,
    /// Used before (here, or by another server sharing the ledger).
    Again,
    /// The shared ledger could not be read or written, so the use could
    /// not be recorded; refused rather than risk a replay.
    Unrecorded(String),
}

impl ReplayGuard {
    /// A guard whose uses are also recorded in the file at `path`, shared
    /// with every other server that opens it.
    pub(crate) fn with_ledger(path: &Path) -> std::io::Result<ReplayGuard> {
        Ok(ReplayGuard::shared(Arc::new(Ledger::open(path)?)))
    }

    /// A guard whose uses are also recorded in `ledger`.
    pub(crate) fn shared(ledger: Arc<dyn UseLedger>) -> ReplayGuard {
        ReplayGuard {
            seen: Mutex::default(),
            ledger: Some(ledger),
        }
    }

    /// Records a use of `nonce`, a state valid until `expires_at_ms`, here
    /// and in the shared ledger (whose file work runs on the blocking
    /// pool, never on the caller's thread).
    pub(crate) async fn consume(&self, nonce: [u8; 16], expires_at_ms: u64) -> StateUse {
        let now = seal::now_ms();
        {
            let mut seen = lock(&self.seen);
            if seen.len() > 4096 {
                seen.retain(|_, exp| *exp > now);
            }
            if seen.contains_key(&nonce) {
                return StateUse::Again;
            }
        }
        if let Some(ledger) = &self.ledger {
            match ledger.record(nonce, expires_at_ms).await {
                Ok(true) => {}
                Ok(false) => return StateUse::Again,
                Err(why) => return StateUse::Unrecorded(why),
            }
        }
        let mut seen = lock(&self.seen);
        match seen.insert(nonce, expires_at_ms) {
            None => StateUse::First,
            Some(_) => StateUse::Again,
        }
    }
}

/// The shared record of used states: one line per use, `NONCE EXPIRES_MS`
/// (the nonce in hex), read and appended under an exclusive lock of the
/// file beside it (`PATH.lock`), and rewritten without the expired lines
/// once they are most of it. A rewrite goes to `PATH.tmp`, is synced and
/// then renamed over the ledger, so a crash at any point leaves either the
/// old ledger or the new one whole, never one missing live lines.
#[derive(Debug, Clone)]
struct Ledger {
    path: PathBuf,
    /// `PATH.lock`, held open: every server locks it around its read and
    /// write of the ledger (the ledger itself is replaced when rewritten,
    /// so it cannot carry the lock).
    lock: Arc<Mutex<File>>,
}

/// Lines in the ledger before expired ones are dropped.
const LEDGER_COMPACT_AT: usize = 256;

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Opens `path` for reading and writing, created (owner-only) if missing.
fn open_private(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    options.create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options.open(path)
}

impl UseLedger for Ledger {
    fn record(
        &self,
        nonce: [u8; 16],
        expires_at_ms: u64,
    ) -> crate::auth::BoxFuture<'_, Result<bool, String>> {
        Box::pin(async move {
            let shared = self.clone();
            let now = seal::now_ms();
            tokio::task::spawn_blocking(move || shared.record_now(&nonce, expires_at_ms, now))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
                .map_err(|e| format!("the replay ledger {}: {e}", self.path.display()))
        })
    }
}

impl Ledger {
    fn open(path: &Path) -> std::io::Result<Ledger> {
        let lock = open_private(
            &beside(path, ".lock"),
            OpenOptions::new().read(true).write(true).truncate(false),
        )?;
        // The ledger must be writable from the start, not at the first use.
        open_private(path, OpenOptions::new().append(true))?;
        Ok(Ledger {
            path: path.to_owned(),
            lock: Arc::new(Mutex::new(lock)),
        })
    }

    /// Records `nonce`; `false` when a live line already names it.
    fn record_now(&self, nonce: &[u8; 16], expires_at_ms: u64, now: u64) -> std::io::Result<bool> {
        // The mutex orders this process's threads; the file lock, other
        // processes (a lock is held per open file, not per thread).
        let lock = lock(&self.lock);
        FileExt::lock_exclusive(&*lock)?;
        let recorded = self.record_locked(nonce, expires_at_ms, now);
        let _ = FileExt::unlock(&*lock);
        recorded
    }

    fn record_locked(
        &self,
        nonce: &[u8; 16],
        expires_at_ms: u64,
        now: u64,
    ) -> std::io::Result<bool> {
        let mut file = open_private(&self.path, OpenOptions::new().read(true).append(true))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        // Anything that is not a line of ours counts as expired.
        let text = String::from_utf8_lossy(&bytes);
        let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let is_live = |line: &str| {
            line.split_once(' ')
                .and_then(|(_, exp)| exp.parse::<u64>().ok())
                .is_some_and(|exp| exp > now)
        };
        let lines = text.lines().count();
        let live: Vec<&str> = text.lines().filter(|l| is_live(l)).collect();
        if live
            .iter()
            .any(|l| l.split_once(' ').is_some_and(|(n, _)| n == hex))
        {
            return Ok(false);
        }
        let entry = format!("{hex} {expires_at_ms}\n");
        if lines >= LEDGER_COMPACT_AT && live.len() * 2 < lines {
            let mut out: String = live.iter().flat_map(|l| [*l, "\n"]).collect();
            out.push_str(&entry);
            let tmp = beside(&self.path, ".tmp");
            let mut rewritten = open_private(&tmp, OpenOptions::new().write(true).truncate(true))?;
            rewritten.write_all(out.as_bytes())?;
            rewritten.sync_data()?;
            std::fs::rename(&tmp, &self.path)?;
        } else {
            // A line torn by a crash is ended first, so this one stays whole.
            let torn = !text.is_empty() && !text.ends_with('\n');
            file.write_all(format!("{}{entry}", if torn { "\n" } else { "" }).as_bytes())?;
        }
        Ok(true)
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

    #[tokio::test]
    async fn replay_guard_allows_one_use() {
        let g = ReplayGuard::default();
        let exp = seal::now_ms() + 60_000;
        assert_eq!(g.consume([1; 16], exp).await, StateUse::First);
        assert_eq!(g.consume([1; 16], exp).await, StateUse::Again);
        assert_eq!(g.consume([2; 16], exp).await, StateUse::First);
    }

    // MRTR-10 across replicas: two guards on one ledger file (as two
    // processes would open it) accept a state once between them.
    #[tokio::test]
    async fn a_shared_ledger_allows_one_use_across_guards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("used");
        let (a, b) = (
            ReplayGuard::with_ledger(&path).unwrap(),
            ReplayGuard::with_ledger(&path).unwrap(),
        );
        let exp = seal::now_ms() + 60_000;
        assert_eq!(a.consume([7; 16], exp).await, StateUse::First);
        assert_eq!(b.consume([7; 16], exp).await, StateUse::Again);
        assert_eq!(a.consume([7; 16], exp).await, StateUse::Again);
        assert_eq!(b.consume([8; 16], exp).await, StateUse::First);
        assert_eq!(a.consume([8; 16], exp).await, StateUse::Again);
        // A torn last line (a crash mid-write), even one that is not
        // UTF-8, does not swallow the next.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"0123\xff").unwrap();
        assert_eq!(a.consume([9; 16], exp).await, StateUse::First);
        assert_eq!(b.consume([9; 16], exp).await, StateUse::Again);
    }

    // While another replica holds the ledger's lock, a use waits for it on
    // the blocking pool: the runtime's own thread goes on serving.
    #[tokio::test(flavor = "current_thread")]
    async fn a_ledger_locked_elsewhere_does_not_stall_the_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("used");
        let g = ReplayGuard::with_ledger(&path).unwrap();
        let other = File::open(beside(&path, ".lock")).unwrap();
        FileExt::lock_exclusive(&other).unwrap();
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            FileExt::unlock(&other).unwrap();
        });
        let exp = seal::now_ms() + 60_000;
        let mut ticks = 0;
        let mut using = std::pin::pin!(g.consume([5; 16], exp));
        let used = loop {
            tokio::select! {
                used = &mut using => break used,
                () = tokio::time::sleep(Duration::from_millis(20)) => ticks += 1,
            }
        };
        holder.join().unwrap();
        assert_eq!(used, StateUse::First);
        // Blocked on the lock, this thread would have ticked once at most.
        assert!(ticks >= 10, "the runtime ticked {ticks} times in 600 ms");
    }

    /// Records `count` uses of distinct states that have already expired
    /// (nonces 0, 1, …).
    async fn use_expired(g: &ReplayGuard, count: usize) {
        let past = seal::now_ms() - 1;
        for i in 0..count {
            let mut nonce = [0u8; 16];
            nonce[..8].copy_from_slice(&(i as u64).to_le_bytes());
            assert_eq!(g.consume(nonce, past).await, StateUse::First);
        }
    }

    #[tokio::test]
    async fn the_ledger_drops_expired_lines_once_they_are_most_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("used");
        let g = ReplayGuard::with_ledger(&path).unwrap();
        use_expired(&g, LEDGER_COMPACT_AT).await;
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().lines().count(),
            LEDGER_COMPACT_AT
        );
        let live = seal::now_ms() + 60_000;
        assert_eq!(g.consume([0xee; 16], live).await, StateUse::First);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        // The rewrite replaced the file whole: nothing is left beside it.
        assert!(!beside(&path, ".tmp").exists());
        // An expired line no longer blocks its nonce in another guard.
        let other = ReplayGuard::with_ledger(&path).unwrap();
        assert_eq!(other.consume([0u8; 16], live).await, StateUse::First);
        assert_eq!(other.consume([0xee; 16], live).await, StateUse::Again);
    }

    // A crash in the middle of a rewrite leaves the old ledger and a
    // partial `.tmp`: the ledger still holds every use, and the next
    // rewrite starts the `.tmp` afresh.
    #[tokio::test]
    async fn a_rewrite_cut_short_loses_no_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("used");
        let g = ReplayGuard::with_ledger(&path).unwrap();
        let live = seal::now_ms() + 60_000;
        assert_eq!(g.consume([0xaa; 16], live).await, StateUse::First);
        std::fs::write(beside(&path, ".tmp"), "half a rewri").unwrap();
        let other = ReplayGuard::with_ledger(&path).unwrap();
        assert_eq!(other.consume([0xaa; 16], live).await, StateUse::Again);
        // With the live line, the file reaches the rewrite threshold.
        use_expired(&g, LEDGER_COMPACT_AT - 1).await;
        assert_eq!(g.consume([0xbb; 16], live).await, StateUse::First);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains("half"), "{text}");
        assert_eq!(other.consume([0xaa; 16], live).await, StateUse::Again);
        assert_eq!(other.consume([0xbb; 16], live).await, StateUse::Again);
    }

    #[tokio::test]
    async fn an_unwritable_ledger_refuses_the_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("used");
        let g = ReplayGuard::with_ledger(&path).unwrap();
        // The ledger becomes something that cannot be opened as a file.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let exp = seal::now_ms() + 60_000;
        let StateUse::Unrecorded(why) = g.consume([3; 16], exp).await else {
            panic!("an unwritable ledger accepted the use");
        };
        assert!(why.contains(&path.display().to_string()), "{why}");
    }
}
