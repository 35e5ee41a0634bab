//! How much one caller of an authenticated gateway may call: tool calls
//! per minute and tool calls running at once (`callerLimits`, and a
//! principal's own `limits`). A caller over a limit gets a refusal that
//! says when to try again; the call does not run, nobody is asked and the
//! server never hears of it. Every request on the host's governed path
//! counts: prompt gets, reads and completions with the tool calls.
//! Counted per principal in this process; with [`SharedLimits`] (a
//! gateway's shared store) the calls a minute are counted once for all
//! the replicas, while the calls running at once stay counted by each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_wire::shared::lock;
use tokio::time::Instant;

use crate::approver::BoxFuture;

/// The limits on one caller's tool calls. `None`: no limit of that kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallLimits {
    /// Calls a minute, a minute's worth at once at the most: a caller
    /// that has been quiet may make this many calls in a burst, then one
    /// every `60 / n` seconds.
    pub calls_per_minute: Option<u32>,
    /// Calls running at once (a call that became a task runs until the
    /// task ends).
    pub concurrent_calls: Option<u32>,
}

impl CallLimits {
    /// Whether neither limit is set.
    #[must_use]
    pub fn is_unlimited(&self) -> bool {
        self.calls_per_minute.is_none() && self.concurrent_calls.is_none()
    }
}

/// A principal's own `limits`: a field it gives replaces the one of
/// `callerLimits` (`Some(None)`, written `null`: no limit of that kind for
/// this caller); a field it leaves out keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitsOverride {
    /// Replaces [`CallLimits::calls_per_minute`] when given.
    pub calls_per_minute: Option<Option<u32>>,
    /// Replaces [`CallLimits::concurrent_calls`] when given.
    pub concurrent_calls: Option<Option<u32>>,
}

impl LimitsOverride {
    /// The limits of a caller whose entry this is, over `base`.
    #[must_use]
    pub fn over(&self, base: CallLimits) -> CallLimits {
        CallLimits {
            calls_per_minute: self.calls_per_minute.unwrap_or(base.calls_per_minute),
            concurrent_calls: self.concurrent_calls.unwrap_or(base.concurrent_calls),
        }
    }
}

/// Counts callers' calls a minute for every replica at once (a store they
/// share, e.g. the gateway's `--state`), in place of this process's own
/// count: given to the host at mount (`MountOptions::shared_limits`).
pub trait SharedLimits: Send + Sync + std::fmt::Debug {
    /// Takes one call of `principal`'s `per_minute` (a minute's worth at
    /// once at the most, then one every `60 / per_minute` seconds), or
    /// says when the next one is allowed; counts nothing when refused.
    fn take<'a>(&'a self, principal: &'a str, per_minute: u32) -> BoxFuture<'a, SharedAdmission>;

    /// Enters one of `principal`'s calls running at once across every
    /// replica, `at_once` at the most: a lease, given back with
    /// [`SharedLimits::leave`] when the call ends (and lapsing by itself
    /// when the process holding it dies). The default shares nothing:
    /// this process's own count applies.
    fn enter<'a>(&'a self, principal: &'a str, at_once: u32) -> BoxFuture<'a, SharedEntry> {
        let _ = (principal, at_once);
        Box::pin(std::future::ready(SharedEntry::NotShared))
    }

    /// Gives back a lease [`SharedLimits::enter`] handed out; must not
    /// block (it is called as a call's permit is dropped).
    fn leave(&self, principal: &str, lease: &str) {
        let _ = (principal, lease);
    }
}

/// What [`SharedLimits::enter`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedEntry {
    /// The call is counted as running, under this lease.
    Entered(String),
    /// As many of the caller's calls as allowed run already.
    Full,
    /// The count could not be taken (the store is unreachable), and the
    /// store refuses rather than let the caller through unlimited.
    Unavailable(String),
    /// Calls running at once are not shared: count them here.
    NotShared,
}

/// A lease of [`SharedLimits::enter`], given back when dropped.
pub(crate) struct SharedLease {
    pub(crate) shared: Arc<dyn SharedLimits>,
    pub(crate) principal: String,
    pub(crate) id: String,
}

impl std::fmt::Debug for SharedLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLease")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Drop for SharedLease {
    fn drop(&mut self) {
        self.shared.leave(&self.principal, &self.id);
    }
}

/// What [`SharedLimits::take`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedAdmission {
    /// The call is counted: go on.
    Allowed,
    /// The minute's calls are spent; the next one is allowed after
    /// `retry_in`.
    Refused {
        /// When the next call is allowed.
        retry_in: Duration,
    },
    /// The count could not be taken (the store is unreachable), and the
    /// store refuses rather than let the caller through unlimited: why,
    /// in words.
    Unavailable(String),
}

/// Why a caller's call was refused.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Refusal {
    /// The minute's calls are spent; the next one is allowed after
    /// `retry_in`.
    Rate { per_minute: u32, retry_in: Duration },
    /// As many calls as allowed are running.
    Running { at_once: u32 },
    /// The shared count could not be taken: why.
    Unavailable(String),
}

impl Refusal {
    /// What the model reads: `refused` (what did not happen: "TOOL did
    /// not run"), which limit, and when to try again.
    pub(crate) fn text(&self, principal: &str, refused: &str) -> String {
        match self {
            Refusal::Rate {
                per_minute,
                retry_in,
            } => {
                let seconds = retry_in.as_secs_f64().ceil().max(1.0);
                format!(
                    "{refused}: calls by {principal} are limited to {per_minute} a minute, and \
                     they have all been made. Try again in {seconds} {}.",
                    if seconds > 1.0 { "seconds" } else { "second" }
                )
            }
            Refusal::Running { at_once } => format!(
                "{refused}: {principal} already has {at_once} {} running, the most it may \
                 run at once. Try again when one of them has finished.",
                if *at_once == 1 { "call" } else { "calls" }
            ),
            Refusal::Unavailable(why) => format!(
                "{refused}: calls by {principal} are limited, and the gateway cannot count them \
                 now ({why}), so it refuses them rather than let them through unlimited. Try \
                 again shortly."
            ),
        }
    }
}

/// How many idle callers are kept before the idle ones are forgotten.
const KEPT_CALLERS: usize = 1024;

/// After this long without a call, a caller's minute is whole again: its
/// record can go.
const REFILL_TIME: Duration = Duration::from_secs(60);

/// The callers' counts: each one's bucket of calls and its running calls.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    callers: Mutex<HashMap<String, Caller>>,
}

#[derive(Debug)]
struct Caller {
    /// Calls left in the bucket (fractions refill over time).
    tokens: f64,
    /// The size of the bucket when it was last used (infinite without a
    /// rate limit): a reload that raises the limit adds the difference.
    capacity: f64,
    /// When `tokens` was last brought up to date.
    refilled: Instant,
    /// Calls admitted and not yet ended.
    running: u32,
}

impl Limiter {
    /// Admits a call of `principal` under `limits` at `now`, or says which
    /// limit refuses it (and then counts nothing). The permit counts the
    /// call as running until it is dropped.
    pub(crate) fn admit(
        self: &Arc<Self>,
        principal: &str,
        limits: CallLimits,
        now: Instant,
    ) -> Result<Permit, Refusal> {
        let mut callers = lock(&self.callers);
        if !callers.contains_key(principal) && callers.len() >= KEPT_CALLERS {
            callers.retain(|_, c| c.running > 0 || now.duration_since(c.refilled) < REFILL_TIME);
        }
        let caller = callers
            .entry(principal.to_owned())
            .or_insert_with(|| Caller {
                // Full; without a rate limit, full for any limit a reload
                // brings (the refill caps it).
                tokens: limits.calls_per_minute.map_or(f64::INFINITY, f64::from),
                capacity: limits.calls_per_minute.map_or(f64::INFINITY, f64::from),
                refilled: now,
                running: 0,
            });
        if let Some(at_once) = limits.concurrent_calls {
            if caller.running >= at_once {
                return Err(Refusal::Running { at_once });
            }
        }
        if let Some(per_minute) = limits.calls_per_minute {
            let capacity = f64::from(per_minute);
            if capacity > caller.capacity {
                caller.tokens += capacity - caller.capacity;
            }
            caller.capacity = capacity;
            let per_second = capacity / 60.0;
            let elapsed = now.duration_since(caller.refilled).as_secs_f64();
            caller.tokens = (caller.tokens + elapsed * per_second).min(capacity);
            caller.refilled = now;
            if caller.tokens < 1.0 {
                let retry_in = Duration::from_secs_f64((1.0 - caller.tokens) / per_second);
                return Err(Refusal::Rate {
                    per_minute,
                    retry_in,
                });
            }
            caller.tokens -= 1.0;
        } else {
            caller.tokens = f64::INFINITY;
            caller.capacity = f64::INFINITY;
            caller.refilled = now;
        }
        caller.running += 1;
        Ok(Permit {
            limiter: Arc::clone(self),
            principal: principal.to_owned(),
            lease: None,
        })
    }

    /// Calls of `principal` running now (for tests).
    #[cfg(test)]
    fn running(&self, principal: &str) -> u32 {
        let callers = lock(&self.callers);
        callers.get(principal).map_or(0, |c| c.running)
    }
}

/// A request of a caller counted as running until this is dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    limiter: Arc<Limiter>,
    principal: String,
    /// The call's place among the caller's calls running on every
    /// replica, when a shared store counts them.
    lease: Option<SharedLease>,
}

impl Permit {
    /// The permit, also holding `lease` until it is dropped.
    pub(crate) fn with_lease(mut self, lease: SharedLease) -> Permit {
        self.lease = Some(lease);
        self
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut callers = lock(&self.limiter.callers);
        if let Some(caller) = callers.get_mut(&self.principal) {
            caller.running = caller.running.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_minute(n: u32) -> CallLimits {
        CallLimits {
            calls_per_minute: Some(n),
            concurrent_calls: None,
        }
    }

    #[test]
    fn a_minutes_worth_goes_at_once_then_one_call_per_share_of_the_minute() {
        let limiter = Arc::new(Limiter::default());
        let t0 = Instant::now();
        for _ in 0..6 {
            drop(
                limiter
                    .admit("ci", per_minute(6), t0)
                    .expect("within the burst"),
            );
        }
        let refused = limiter.admit("ci", per_minute(6), t0).unwrap_err();
        let Refusal::Rate { retry_in, .. } = refused else {
            panic!("{refused:?}")
        };
        // Six a minute: the next call is ten seconds away.
        assert!((retry_in.as_secs_f64() - 10.0).abs() < 0.01, "{retry_in:?}");
        let t1 = t0 + Duration::from_secs(9);
        assert!(limiter.admit("ci", per_minute(6), t1).is_err());
        let t2 = t0 + Duration::from_secs(10);
        drop(
            limiter
                .admit("ci", per_minute(6), t2)
                .expect("refilled one"),
        );
        assert!(limiter.admit("ci", per_minute(6), t2).is_err());
        // Another caller has a bucket of its own.
        drop(
            limiter
                .admit("alice", per_minute(6), t2)
                .expect("alice's own"),
        );
    }

    #[test]
    fn a_quiet_caller_gets_no_more_than_one_minutes_worth() {
        let limiter = Arc::new(Limiter::default());
        let t0 = Instant::now();
        drop(limiter.admit("ci", per_minute(2), t0).unwrap());
        let later = t0 + Duration::from_secs(3600);
        drop(limiter.admit("ci", per_minute(2), later).unwrap());
        drop(limiter.admit("ci", per_minute(2), later).unwrap());
        assert!(limiter.admit("ci", per_minute(2), later).is_err());
    }

    #[test]
    fn running_calls_are_counted_until_their_permits_drop() {
        let limiter = Arc::new(Limiter::default());
        let two = CallLimits {
            calls_per_minute: None,
            concurrent_calls: Some(2),
        };
        let now = Instant::now();
        let first = limiter.admit("ci", two, now).unwrap();
        let second = limiter.admit("ci", two, now).unwrap();
        assert_eq!(
            limiter.admit("ci", two, now).unwrap_err(),
            Refusal::Running { at_once: 2 }
        );
        assert_eq!(limiter.running("ci"), 2);
        drop(first);
        let third = limiter.admit("ci", two, now).expect("one ended");
        drop((second, third));
        assert_eq!(limiter.running("ci"), 0);
    }

    #[test]
    fn a_call_refused_for_running_spends_nothing_of_the_minute() {
        let limiter = Arc::new(Limiter::default());
        let both = CallLimits {
            calls_per_minute: Some(2),
            concurrent_calls: Some(1),
        };
        let now = Instant::now();
        let running = limiter.admit("ci", both, now).unwrap();
        for _ in 0..5 {
            assert!(matches!(
                limiter.admit("ci", both, now),
                Err(Refusal::Running { .. })
            ));
        }
        drop(running);
        drop(
            limiter
                .admit("ci", both, now)
                .expect("the second of the minute"),
        );
    }

    #[test]
    fn a_lower_limit_after_a_reload_applies_to_the_calls_left() {
        let limiter = Arc::new(Limiter::default());
        let now = Instant::now();
        drop(limiter.admit("ci", per_minute(100), now).unwrap());
        // The config now says 2 a minute: 99 left becomes 2.
        drop(limiter.admit("ci", per_minute(2), now).unwrap());
        drop(limiter.admit("ci", per_minute(2), now).unwrap());
        assert!(limiter.admit("ci", per_minute(2), now).is_err());
    }

    #[test]
    fn a_higher_limit_after_a_reload_adds_the_difference_at_once() {
        let limiter = Arc::new(Limiter::default());
        let now = Instant::now();
        drop(limiter.admit("ci", per_minute(1), now).unwrap());
        assert!(limiter.admit("ci", per_minute(1), now).is_err());
        for _ in 0..2 {
            drop(limiter.admit("ci", per_minute(3), now).expect("two more"));
        }
        assert!(limiter.admit("ci", per_minute(3), now).is_err());
    }

    #[test]
    fn a_rate_limit_a_reload_brings_starts_with_a_full_minute() {
        let limiter = Arc::new(Limiter::default());
        let now = Instant::now();
        let unlimited = CallLimits::default();
        drop(limiter.admit("ci", unlimited, now).unwrap());
        drop(limiter.admit("ci", per_minute(2), now).unwrap());
        drop(limiter.admit("ci", per_minute(2), now).unwrap());
        assert!(limiter.admit("ci", per_minute(2), now).is_err());
    }

    #[test]
    fn idle_callers_are_forgotten_once_many_are_kept_but_not_busy_ones() {
        let limiter = Arc::new(Limiter::default());
        let t0 = Instant::now();
        let busy = limiter.admit("busy", per_minute(1), t0).unwrap();
        for i in 0..KEPT_CALLERS {
            drop(
                limiter
                    .admit(&format!("caller-{i}"), per_minute(1), t0)
                    .unwrap(),
            );
        }
        let later = t0 + REFILL_TIME;
        drop(limiter.admit("newcomer", per_minute(1), later).unwrap());
        let kept = limiter.callers.lock().unwrap().len();
        assert_eq!(kept, 2, "the busy caller and the newcomer");
        assert_eq!(limiter.running("busy"), 1);
        drop(busy);
    }

    #[test]
    fn a_principals_own_limits_replace_only_what_they_give() {
        let base = CallLimits {
            calls_per_minute: Some(60),
            concurrent_calls: Some(4),
        };
        let own = LimitsOverride {
            calls_per_minute: Some(None),
            concurrent_calls: None,
        };
        assert_eq!(
            own.over(base),
            CallLimits {
                calls_per_minute: None,
                concurrent_calls: Some(4)
            }
        );
        assert_eq!(LimitsOverride::default().over(base), base);
    }
}
