//! A circuit breaker per server.
//!
//! After `failures` consecutive transport failures or timeouts the server is
//! `tripped`: calls are refused at once (with the reason and the time left)
//! for `cooldown`. Then one call is let through as a probe; its success
//! closes the breaker, its failure trips it again for another cool-down.
//! Tool errors and protocol errors prove the server is alive: they reset the
//! count.

use std::time::Duration;

use tokio::time::Instant;

use crate::config::BreakerConfig;
use crate::reason::Reason;

/// What the breaker says about a call about to be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Go ahead.
    Go,
    /// Go ahead as the probe after a cool-down.
    Probe,
    /// Refused: the breaker is open.
    Refuse {
        /// Time until the next probe.
        retry_in: Duration,
        /// Why it tripped.
        reason: Reason,
    },
}

/// The breaker's state as shown to users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BreakerStatus {
    /// Calls go through.
    Closed,
    /// Calls are refused.
    Tripped {
        /// Time until the next probe (zero when a probe is due or running).
        retry_in: Duration,
        /// Why it tripped.
        reason: Reason,
    },
}

#[derive(Debug, Clone)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant, reason: Reason },
    Probing { since: Instant, reason: Reason },
}

/// One server's breaker.
#[derive(Debug, Clone)]
pub(crate) struct Breaker {
    config: BreakerConfig,
    state: State,
}

impl Breaker {
    pub(crate) fn new(config: BreakerConfig) -> Breaker {
        Breaker {
            config,
            state: State::Closed { failures: 0 },
        }
    }

    /// Asks whether a call may go now.
    pub(crate) fn admit(&mut self, now: Instant) -> Admission {
        match &self.state {
            State::Closed { .. } => Admission::Go,
            State::Open { until, reason } if now >= *until => {
                self.state = State::Probing {
                    since: now,
                    reason: reason.clone(),
                };
                Admission::Probe
            }
            State::Open { until, reason } => Admission::Refuse {
                retry_in: *until - now,
                reason: reason.clone(),
            },
            // A probe that never reported back (its caller went away) must
            // not hold the breaker shut forever: after a cool-down, another.
            State::Probing { since, reason } if now >= *since + self.config.cooldown => {
                self.state = State::Probing {
                    since: now,
                    reason: reason.clone(),
                };
                Admission::Probe
            }
            State::Probing { reason, .. } => Admission::Refuse {
                retry_in: Duration::ZERO,
                reason: reason.clone(),
            },
        }
    }

    /// Records how an admitted call went: `Some(reason)` for a transport
    /// failure or timeout, `None` for any answer from the server.
    pub(crate) fn record(&mut self, failure: Option<&Reason>, now: Instant) {
        let Some(reason) = failure else {
            self.state = State::Closed { failures: 0 };
            return;
        };
        let failures = match &self.state {
            State::Closed { failures } => failures + 1,
            // A failed probe trips again at once.
            State::Open { .. } | State::Probing { .. } => self.config.failures,
        };
        self.state = if failures >= self.config.failures {
            State::Open {
                until: now + self.config.cooldown,
                reason: Reason::ours(format!("{failures} consecutive failures, the last: "))
                    .then(reason),
            }
        } else {
            State::Closed { failures }
        };
    }

    pub(crate) fn status(&self, now: Instant) -> BreakerStatus {
        match &self.state {
            State::Closed { .. } => BreakerStatus::Closed,
            State::Open { until, reason } => BreakerStatus::Tripped {
                retry_in: until.saturating_duration_since(now),
                reason: reason.clone(),
            },
            State::Probing { reason, .. } => BreakerStatus::Tripped {
                retry_in: Duration::ZERO,
                reason: reason.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> Breaker {
        Breaker::new(BreakerConfig {
            failures: 3,
            cooldown: Duration::from_secs(10),
        })
    }

    #[test]
    fn trips_after_n_consecutive_failures_only() {
        let now = Instant::now();
        let mut b = breaker();
        b.record(Some(&Reason::ours("timeout")), now);
        b.record(Some(&Reason::ours("timeout")), now);
        b.record(None, now); // an answer resets the count
        b.record(Some(&Reason::ours("timeout")), now);
        b.record(Some(&Reason::ours("timeout")), now);
        assert_eq!(b.admit(now), Admission::Go);
        b.record(Some(&Reason::ours("timeout")), now);
        match b.admit(now + Duration::from_secs(4)) {
            Admission::Refuse { retry_in, reason } => {
                assert_eq!(retry_in, Duration::from_secs(6));
                assert!(
                    reason.plain().contains("3 consecutive failures"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn probe_after_cooldown_closes_or_trips_again() {
        let t0 = Instant::now();
        let mut b = breaker();
        for _ in 0..3 {
            b.record(Some(&Reason::ours("closed")), t0);
        }
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(b.admit(t1), Admission::Probe);
        // Only one probe at a time.
        assert!(matches!(b.admit(t1), Admission::Refuse { .. }));
        b.record(Some(&Reason::ours("closed")), t1);
        assert!(matches!(
            b.admit(t1 + Duration::from_secs(9)),
            Admission::Refuse { .. }
        ));
        let t2 = t1 + Duration::from_secs(10);
        assert_eq!(b.admit(t2), Admission::Probe);
        b.record(None, t2);
        assert_eq!(b.status(t2), BreakerStatus::Closed);
        assert_eq!(b.admit(t2), Admission::Go);
    }

    #[test]
    fn an_abandoned_probe_does_not_wedge_the_breaker() {
        let t0 = Instant::now();
        let mut b = breaker();
        for _ in 0..3 {
            b.record(Some(&Reason::ours("x")), t0);
        }
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(b.admit(t1), Admission::Probe);
        // The probe's caller never reports; a cool-down later, a new probe.
        assert_eq!(b.admit(t1 + Duration::from_secs(10)), Admission::Probe);
    }
}
