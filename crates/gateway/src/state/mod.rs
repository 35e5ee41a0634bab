//! The store replicas share (`serve --state redis://…`): what must hold
//! across every replica behind one URL, kept in Redis (or Valkey) rather
//! than in each process or a shared file.
//!
//! - Replay ledger: an answered approval's `requestState` is redeemed
//!   once across all replicas: `SET switchboard:used:NONCE 1 NX PX TTL`,
//!   atomic in the store, expiring with the state ([`UseLedger`]).
//! - Console approvals (`console`): the calls waiting for a person,
//!   listed by every replica's console, and a decision made on any
//!   replica's console kept under the approval link's nonce (decided
//!   once) for the replica holding the call; failed console sign-ins
//!   counted per peer address.
//! - Callers' limits: a caller's calls a minute are counted once for all
//!   replicas by one server-side script (GCRA: a minute's worth at once,
//!   then one every `60 / n` seconds, as the in-process count), run by
//!   its SHA in one round trip per limited call ([`SharedLimits`]).
//!
//! Failure is explicit: with the store unreachable, an answered approval
//! is refused (its single use cannot be recorded), a limited caller is
//! refused too unless [`StateFail::Open`] lets it through, everything else
//! goes on; the client reconnects by itself at the next use, and a
//! heartbeat ([`SharedState::heartbeat`]) keeps [`SharedState::is_up`]
//! (`/readyz`, `switchboard_state_up`) current when nothing is used.

mod console;
mod membership;
mod redis;
mod resp;

pub use membership::{Membership, REPLICA_TTL};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha1::{Digest, Sha1};
use switchboard_host::BoxFuture;
use switchboard_host::{SharedAdmission, SharedLimits};
use switchboard_server::UseLedger;
use switchboard_wire::shared::lock;

use redis::{Client, StoreError, Target};
use resp::Reply;

/// How often the heartbeat checks the store.
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// Every key the gateway writes starts with this.
const PREFIX: &str = "switchboard:";

/// The calls-a-minute count (GCRA). `KEYS[1]`: the caller's key;
/// `ARGV[1]`: its calls a minute. The key holds the caller's theoretical
/// arrival time in milliseconds of the store's clock (one clock for every
/// replica); a call is allowed when it is at most a minute ahead of now.
/// Returns `{1, 0}` when the call is counted, `{0, MS}` when the next one
/// is allowed in MS milliseconds.
const RATE_SCRIPT: &str = r"
local per_minute = tonumber(ARGV[1])
local period = 60000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = period / per_minute
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local after = tat + interval
local allowed_at = after - period
if allowed_at > now then
  return {0, math.ceil(allowed_at - now)}
end
redis.call('SET', KEYS[1], string.format('%.3f', after), 'PX', math.ceil(after - now) + 1)
return {1, 0}
";

/// Calls running at once. `KEYS[1]`: the caller's sorted set of leases
/// (member: the lease, score: when it lapses, in ms of the store's
/// clock); `ARGV[1]`: how many may run; `ARGV[2]`: the new lease;
/// `ARGV[3]`: its life in ms. Lapsed leases (of a replica that died) are
/// dropped first. Returns 1 when entered, 0 when full.
const ENTER_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
";

/// Renews leases still held: `KEYS`: their sets, `ARGV[1]`: their life
/// in ms, `ARGV[2..]`: the leases, in the order of `KEYS`. A lease that
/// lapsed meanwhile is not brought back (`XX`).
const RENEW_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local life = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now + life, ARGV[i + 1])
  redis.call('PEXPIRE', key, life)
end
return 1
";

/// How long a running call's lease lives without renewal: the replica
/// holding it renews it every [`HEARTBEAT`]; one that dies lets it lapse.
const LEASE_LIFE: Duration = Duration::from_secs(6);

/// What a limited caller gets while the store cannot be reached
/// (`serve --state-fail`). Approvals are refused either way: their
/// single use cannot be given up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateFail {
    /// Refused, with a message saying the limits cannot be counted.
    #[default]
    Closed,
    /// Let through, uncounted (a warning is logged each time).
    Open,
}

/// Why the store's settings are not usable.
#[derive(Debug, thiserror::Error)]
#[error("--state: {0}")]
pub struct StateError(String);

/// What the store is used for, as errors are counted
/// (`switchboard_state_errors_total{operation}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// Recording an approval's single use.
    Replay,
    /// Counting a limited call.
    Limit,
    /// The heartbeat.
    Ping,
    /// The replicas' registry.
    Membership,
    /// The console's waiting approvals and sign-in failures.
    Console,
}

impl Operation {
    const ALL: [Operation; 5] = [
        Operation::Replay,
        Operation::Limit,
        Operation::Ping,
        Operation::Membership,
        Operation::Console,
    ];

    /// The metric's label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Operation::Replay => "replay",
            Operation::Limit => "limit",
            Operation::Ping => "ping",
            Operation::Membership => "membership",
            Operation::Console => "console",
        }
    }
}

/// The store replicas share: cheap to clone (one client underneath).
#[derive(Clone, Debug)]
pub struct SharedState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: Client,
    fail: StateFail,
    /// Whether the last round trip succeeded.
    up: AtomicBool,
    /// Errors by [`Operation`] (in [`Operation::ALL`]'s order).
    errors: [AtomicU64; 5],
    /// The rate script's SHA1 (hex), sent with `EVALSHA`.
    rate_sha: String,
    /// Whether the store said so last time (logged once per change).
    said_down: Mutex<bool>,
    /// The leases of calls running here (lease → its set), renewed
    /// with the heartbeat.
    leases: Mutex<std::collections::HashMap<String, String>>,
    /// Makes each lease of this process unique.
    next_lease: AtomicU64,
}

impl SharedState {
    /// The store at `url` (`redis://[USER:PASS@]HOST:PORT/DB`, or
    /// `rediss://` for TLS), with limited callers treated as `fail` says
    /// while it is unreachable. Nothing is opened yet: see
    /// [`SharedState::check`].
    ///
    /// # Errors
    /// [`StateError`] when the URL is not one, or TLS cannot be set up.
    pub fn new(url: &str, fail: StateFail) -> Result<SharedState, StateError> {
        SharedState::with_tls(url, fail, None)
    }

    /// [`SharedState::new`], a `rediss://` store verified with `tls`
    /// (e.g. trusting a private CA only) rather than the roots every
    /// server the gateway reaches is verified with.
    ///
    /// # Errors
    /// As [`SharedState::new`].
    pub fn with_tls(
        url: &str,
        fail: StateFail,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<SharedState, StateError> {
        let target = Target::parse(url).map_err(StateError)?;
        let client = Client::new(target, tls).map_err(StateError)?;
        let rate_sha = Sha1::digest(RATE_SCRIPT.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(SharedState {
            inner: Arc::new(Inner {
                client,
                fail,
                up: AtomicBool::new(false),
                errors: Default::default(),
                rate_sha,
                said_down: Mutex::new(false),
                leases: Mutex::new(std::collections::HashMap::new()),
                next_lease: AtomicU64::new(0),
            }),
        })
    }

    /// The store's URL, without its credentials.
    #[must_use]
    pub fn url(&self) -> String {
        self.inner.client.target().to_string()
    }

    /// Whether the store answered the last time it was used.
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.inner.up.load(Ordering::Relaxed)
    }

    /// How many uses of the store for `operation` failed.
    pub(crate) fn errors(&self, operation: Operation) -> u64 {
        let i = Operation::ALL
            .iter()
            .position(|o| *o == operation)
            .unwrap_or(0);
        self.inner.errors[i].load(Ordering::Relaxed)
    }

    /// Asks the store whether it answers (`PING`).
    ///
    /// # Errors
    /// Why it does not, in words naming the store.
    pub async fn check(&self) -> Result<(), String> {
        self.run(Operation::Ping, &[vec![b"PING"]]).await.map(drop)
    }

    /// Checks the store every [`HEARTBEAT`] until the returned task is
    /// aborted, so that its state (and the connections) are current when
    /// no call uses it.
    #[must_use]
    pub fn heartbeat(&self) -> tokio::task::JoinHandle<()> {
        let state = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(HEARTBEAT);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let _ = state.check().await;
                state.renew_leases().await;
            }
        })
    }

    /// One round trip for `operation`, its outcome recorded (up or down,
    /// errors counted, a change of state logged once).
    pub(crate) async fn run(
        &self,
        operation: Operation,
        commands: &[Vec<&[u8]>],
    ) -> Result<Vec<Reply>, String> {
        let ran = self.inner.client.run(commands).await;
        self.inner.up.store(ran.is_ok(), Ordering::Relaxed);
        let mut said_down = lock(&self.inner.said_down);
        match ran {
            Ok(replies) => {
                if std::mem::take(&mut *said_down) {
                    tracing::info!(store = %self.url(), "the shared store answers again");
                }
                Ok(replies)
            }
            Err(e) => {
                if let Some(i) = Operation::ALL.iter().position(|o| *o == operation) {
                    self.inner.errors[i].fetch_add(1, Ordering::Relaxed);
                }
                let why = self.unreachable(&e);
                if !std::mem::replace(&mut *said_down, true) {
                    tracing::warn!("{why}");
                }
                Err(why)
            }
        }
    }

    /// The sentence for a store that could not be used.
    fn unreachable(&self, e: &StoreError) -> String {
        format!("the shared store {} cannot be reached: {e}", self.url())
    }

    /// `SET switchboard:used:NONCE 1 NX PX TTL`: whether this is the
    /// state's first use.
    async fn record_use(&self, nonce: [u8; 16], expires_at_ms: u64) -> Result<bool, String> {
        let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let key = format!("{PREFIX}used:{hex}");
        let now = u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis(),
        )
        .unwrap_or(u64::MAX);
        // Kept at least as long as the state is good (a second for the
        // replicas' clocks to differ).
        let ttl = (expires_at_ms.saturating_sub(now) + 1000).to_string();
        let replies = self
            .run(
                Operation::Replay,
                &[vec![
                    b"SET",
                    key.as_bytes(),
                    b"1",
                    b"NX",
                    b"PX",
                    ttl.as_bytes(),
                ]],
            )
            .await?;
        match replies.first() {
            Some(Reply::Simple(ok)) if ok == "OK" => Ok(true),
            Some(Reply::Bulk(None)) => Ok(false),
            other => Err(self.odd(Operation::Replay, other)),
        }
    }

    /// One call of `principal` counted against `per_minute`: `Ok(None)`
    /// when allowed, `Ok(Some(wait))` when the minute's calls are spent.
    async fn count_call(
        &self,
        principal: &str,
        per_minute: u32,
    ) -> Result<Option<Duration>, String> {
        let key = format!("{PREFIX}calls:{principal}");
        let n = per_minute.to_string();
        let sha = self.inner.rate_sha.as_bytes();
        let mut replies = self
            .run(
                Operation::Limit,
                &[vec![b"EVALSHA", sha, b"1", key.as_bytes(), n.as_bytes()]],
            )
            .await?;
        // The store restarted (or never saw the script): sent whole once,
        // which caches it there again.
        if matches!(replies.first(), Some(Reply::Error(e)) if e.starts_with("NOSCRIPT")) {
            replies = self
                .run(
                    Operation::Limit,
                    &[vec![
                        b"EVAL",
                        RATE_SCRIPT.as_bytes(),
                        b"1",
                        key.as_bytes(),
                        n.as_bytes(),
                    ]],
                )
                .await?;
        }
        match replies.first() {
            Some(Reply::Array(Some(items))) => match items.as_slice() {
                [Reply::Integer(1), _] => Ok(None),
                [Reply::Integer(0), Reply::Integer(ms)] => {
                    Ok(Some(Duration::from_millis(u64::try_from(*ms).unwrap_or(0))))
                }
                _ => Err(self.odd(Operation::Limit, replies.first())),
            },
            other => Err(self.odd(Operation::Limit, other)),
        }
    }

    /// A reply the store should not have given (an error reply above
    /// all): counted as an error of `operation`, and said.
    pub(crate) fn odd(&self, operation: Operation, reply: Option<&Reply>) -> String {
        if let Some(i) = Operation::ALL.iter().position(|o| *o == operation) {
            self.inner.errors[i].fetch_add(1, Ordering::Relaxed);
        }
        let what = match reply {
            Some(Reply::Error(e)) => e.clone(),
            other => format!("an unexpected reply {other:?}"),
        };
        let why = format!("the shared store {} answered: {what}", self.url());
        tracing::warn!("{why}");
        why
    }
}

impl SharedState {
    /// One of `principal`'s `at_once` calls running at once entered:
    /// `Ok(Some(lease))`, or `Ok(None)` when they all run already.
    async fn enter_call(&self, principal: &str, at_once: u32) -> Result<Option<String>, String> {
        let key = format!("{PREFIX}running:{principal}");
        let n = self.inner.next_lease.fetch_add(1, Ordering::Relaxed);
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| format!("no randomness for a lease: {e}"))?;
        let lease = format!(
            "{}-{n}-{}",
            std::process::id(),
            random
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let (max, life) = (at_once.to_string(), LEASE_LIFE.as_millis().to_string());
        let replies = self
            .run(
                Operation::Limit,
                &[vec![
                    b"EVAL",
                    ENTER_SCRIPT.as_bytes(),
                    b"1",
                    key.as_bytes(),
                    max.as_bytes(),
                    lease.as_bytes(),
                    life.as_bytes(),
                ]],
            )
            .await?;
        match replies.first() {
            Some(Reply::Integer(1)) => {
                lock(&self.inner.leases).insert(lease.clone(), key);
                Ok(Some(lease))
            }
            Some(Reply::Integer(0)) => Ok(None),
            other => Err(self.odd(Operation::Limit, other)),
        }
    }

    /// Renews every lease held here (one round trip), so calls longer
    /// than [`LEASE_LIFE`] keep their place.
    async fn renew_leases(&self) {
        let held: Vec<(String, String)> = lock(&self.inner.leases)
            .iter()
            .map(|(lease, key)| (lease.clone(), key.clone()))
            .collect();
        if held.is_empty() {
            return;
        }
        let count = held.len().to_string();
        let life = LEASE_LIFE.as_millis().to_string();
        let mut command: Vec<&[u8]> = vec![b"EVAL", RENEW_SCRIPT.as_bytes(), count.as_bytes()];
        command.extend(held.iter().map(|(_, key)| key.as_bytes()));
        command.push(life.as_bytes());
        command.extend(held.iter().map(|(lease, _)| lease.as_bytes()));
        let _ = self.run(Operation::Limit, &[command]).await;
    }
}

impl UseLedger for SharedState {
    fn record(
        &self,
        nonce: [u8; 16],
        expires_at_ms: u64,
    ) -> switchboard_server::BoxFuture<'_, Result<bool, String>> {
        Box::pin(self.record_use(nonce, expires_at_ms))
    }
}

impl SharedLimits for SharedState {
    fn take<'a>(&'a self, principal: &'a str, per_minute: u32) -> BoxFuture<'a, SharedAdmission> {
        Box::pin(async move {
            match self.count_call(principal, per_minute).await {
                Ok(None) => SharedAdmission::Allowed,
                Ok(Some(retry_in)) => SharedAdmission::Refused { retry_in },
                Err(why) if self.inner.fail == StateFail::Open => {
                    tracing::warn!(
                        principal,
                        "a limited call let through uncounted (--state-fail open): {why}"
                    );
                    SharedAdmission::Allowed
                }
                Err(why) => SharedAdmission::Unavailable(why),
            }
        })
    }

    fn enter<'a>(
        &'a self,
        principal: &'a str,
        at_once: u32,
    ) -> BoxFuture<'a, switchboard_host::SharedEntry> {
        use switchboard_host::SharedEntry;
        Box::pin(async move {
            match self.enter_call(principal, at_once).await {
                Ok(Some(lease)) => SharedEntry::Entered(lease),
                Ok(None) => SharedEntry::Full,
                Err(why) if self.inner.fail == StateFail::Open => {
                    tracing::warn!(
                        principal,
                        "a limited call let through uncounted (--state-fail open): {why}"
                    );
                    SharedEntry::NotShared
                }
                Err(why) => SharedEntry::Unavailable(why),
            }
        })
    }

    fn leave(&self, principal: &str, lease: &str) {
        let key = lock(&self.inner.leases).remove(lease);
        let Some(key) = key else { return };
        let (state, lease) = (self.clone(), lease.to_owned());
        let _ = principal;
        // Given back off the call's path; a lease that cannot be given
        // back lapses by itself within LEASE_LIFE.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = state
                    .run(
                        Operation::Limit,
                        &[vec![b"ZREM", key.as_bytes(), lease.as_bytes()]],
                    )
                    .await;
            });
        }
    }
}
