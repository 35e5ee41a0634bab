//! The audit file's exclusive lock, kept between lines.
//!
//! Taking and dropping the `flock` and checking the file's length around
//! every line costs three system calls, about 5 µs of a proxied call at one
//! connection (`bench/gateway.sh`). A log writing lines back to back keeps
//! the lock instead: while lines keep coming at most [`IDLE`] apart, and
//! never longer than [`LONGEST`] at a stretch, so another process writing
//! to the same file waits no longer than that. While the lock is held
//! nobody else can have appended, so the end of the chain is known without
//! looking.
//!
//! A thread of the log's own drops the lock once the log goes quiet. It is
//! not a runtime task on purpose: a runtime thread blocked on the same
//! file's lock (a second log on the file in the same process) cannot keep
//! it from running.

use std::sync::{Mutex, Weak};
use std::thread::Thread;
use std::time::{Duration, Instant};

use fs4::fs_std::FileExt;
use switchboard_wire::shared::lock;

use super::WriterState;

/// The lock is dropped once no line came for this long.
pub(super) const IDLE: Duration = Duration::from_millis(10);
/// The longest the lock is kept at a stretch, however busy the log.
pub(super) const LONGEST: Duration = Duration::from_millis(100);

/// The lock kept since `since`; the last line under it written at `last`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held {
    since: Instant,
    last: Instant,
}

impl Held {
    /// When the lock is to be dropped, if no line comes meanwhile.
    fn due(self) -> Instant {
        (self.last + IDLE).min(self.since + LONGEST)
    }
}

impl WriterState {
    /// Whether the lock is kept from an earlier line.
    pub(super) fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// After a line written under the lock at `now`: keeps the lock, unless
    /// it was kept for [`LONGEST`] already. Returns whether the lock was
    /// newly kept (the releaser has to be told).
    pub(super) fn keep(&mut self, now: Instant) -> bool {
        match &mut self.held {
            Some(held) if now >= held.since + LONGEST => {
                self.release();
                false
            }
            Some(held) => {
                held.last = now;
                false
            }
            None => {
                self.held = Some(Held {
                    since: now,
                    last: now,
                });
                true
            }
        }
    }

    /// Drops the lock.
    pub(super) fn release(&mut self) {
        self.held = None;
        let _ = FileExt::unlock(&self.file);
    }

    /// Drops the lock when it is due; otherwise says how long until it is.
    fn release_if_due(&mut self, now: Instant) -> Option<Duration> {
        let due = self.held?.due();
        if now >= due {
            self.release();
            return None;
        }
        Some(due - now)
    }
}

/// Starts the thread that drops `state`'s lock when it is due. `None` when
/// no thread can be started (the log then drops the lock after each write).
pub(super) fn start_releaser(state: Weak<Mutex<WriterState>>) -> Option<Thread> {
    let releaser = std::thread::Builder::new()
        .name("audit-lock".into())
        .spawn(move || {
            // Ends once the log is gone (its drop wakes this thread).
            while let Some(state) = state.upgrade() {
                let wait = lock(&state).release_if_due(Instant::now());
                drop(state);
                match wait {
                    Some(wait) => std::thread::park_timeout(wait),
                    None => std::thread::park(),
                }
            }
        });
    releaser.ok().map(|handle| handle.thread().clone())
}
