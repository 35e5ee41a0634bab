//! The record of answered tool calls by idempotency key: a client that
//! lost an answer (the stream broke, the connection dropped) and calls
//! again with the same key (`_meta` `dev.switchboard/idempotencyKey`,
//! [`switchboard_wire::meta::IDEMPOTENCY_KEY`]) gets the recorded answer
//! instead of a second run.
//!
//! Entries are keyed by caller (the principal's subject; none on stdio),
//! the call (a digest of its tool name and arguments) and the key: one
//! caller's key never answers another caller's call, and a key reused (or
//! guessed) with other arguments is another call.
//! The record is bounded ([`MAX_ENTRIES`], the oldest answered entry goes
//! first) and time-limited ([`TTL`]). A duplicate arriving while the first
//! call still runs waits for its answer; when the first ends without one
//! (it asked for input, failed, or was dropped) the duplicate runs itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use switchboard_wire::shared::lock;
use tokio::sync::watch;

/// How long an answer is kept.
pub(crate) const TTL: Duration = Duration::from_secs(600);

/// How many answers are kept at most.
pub(crate) const MAX_ENTRIES: usize = 4096;

/// `(caller, digest of the tool name and arguments, key)`.
type Key = (Option<String>, [u8; 16], String);

/// An answer: the result object's bytes.
pub(crate) type Answer = Arc<Vec<u8>>;

enum Slot {
    /// The first call runs; its answer comes on the channel (`None` until
    /// then; the sender dropped when it ends without one).
    Running(watch::Receiver<Option<Answer>>),
    /// Answered at `at`.
    Done { answer: Answer, at: Instant },
}

/// The record, shared by every request of one server.
#[derive(Default)]
pub(crate) struct Record {
    slots: Mutex<HashMap<Key, Slot>>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record").finish_non_exhaustive()
    }
}

/// What a call with a key does.
pub(crate) enum Begin {
    /// Answered before: send this.
    Answered(Answer),
    /// First (or again, after a failed first): run it, then
    /// [`Running::finish`].
    Run(Running),
}

/// A call holding its key while it runs; dropped without
/// [`Running::finish`], the key is free again.
pub(crate) struct Running {
    record: Arc<Record>,
    key: Key,
    tx: watch::Sender<Option<Answer>>,
    finished: bool,
}

impl Running {
    /// Records `answer` for the key and hands it to waiting duplicates.
    pub(crate) fn finish(mut self, answer: Vec<u8>) {
        let answer = Arc::new(answer);
        self.record.lock().insert(
            self.key.clone(),
            Slot::Done {
                answer: Arc::clone(&answer),
                at: Instant::now(),
            },
        );
        if self.record.lock().len() > MAX_ENTRIES {
            self.record.evict();
        }
        let _ = self.tx.send(Some(answer));
        self.finished = true;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.finished {
            let mut slots = self.record.lock();
            if matches!(slots.get(&self.key), Some(Slot::Running(_))) {
                slots.remove(&self.key);
            }
        }
    }
}

impl Record {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Slot>> {
        lock(&self.slots)
    }

    /// Starts the call `call` (a digest of its tool name and arguments) by
    /// `caller` with `key`: its recorded answer, or the right to run it
    /// (after waiting for a first call still running).
    pub(crate) async fn begin(
        self: &Arc<Self>,
        caller: Option<&str>,
        call: [u8; 16],
        key: &str,
    ) -> Begin {
        let key: Key = (caller.map(str::to_owned), call, key.to_owned());
        loop {
            let mut waiting = {
                let mut slots = self.lock();
                match slots.get(&key) {
                    Some(Slot::Done { answer, at }) if at.elapsed() < TTL => {
                        return Begin::Answered(Arc::clone(answer));
                    }
                    Some(Slot::Running(rx)) => rx.clone(),
                    _ => {
                        let (tx, rx) = watch::channel(None);
                        slots.insert(key.clone(), Slot::Running(rx));
                        return Begin::Run(Running {
                            record: Arc::clone(self),
                            key,
                            tx,
                            finished: false,
                        });
                    }
                }
            };
            // The first call's answer, or its end without one (then try
            // again: the slot is free).
            if let Ok(answer) = waiting.wait_for(Option::is_some).await {
                if let Some(answer) = answer.as_ref() {
                    return Begin::Answered(Arc::clone(answer));
                }
            }
        }
    }

    /// Drops expired answers, then the oldest ones over [`MAX_ENTRIES`].
    fn evict(&self) {
        let mut slots = self.lock();
        slots.retain(|_, s| !matches!(s, Slot::Done { at, .. } if at.elapsed() >= TTL));
        let over = slots.len().saturating_sub(MAX_ENTRIES);
        if over == 0 {
            return;
        }
        let mut done: Vec<(Instant, Key)> = slots
            .iter()
            .filter_map(|(k, s)| match s {
                Slot::Done { at, .. } => Some((*at, k.clone())),
                Slot::Running(_) => None,
            })
            .collect();
        done.sort();
        for (_, k) in done.into_iter().take(over) {
            slots.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GET: [u8; 16] = [1; 16];
    const PUT: [u8; 16] = [2; 16];

    #[tokio::test]
    async fn a_duplicate_gets_the_recorded_answer_and_other_callers_do_not() {
        let record = Arc::new(Record::default());
        let Begin::Run(first) = record.begin(Some("alice"), GET, "k1").await else {
            panic!("the first call runs")
        };
        // A duplicate while it runs waits for its answer.
        let r = Arc::clone(&record);
        let waiter = tokio::spawn(async move {
            match r.begin(Some("alice"), GET, "k1").await {
                Begin::Answered(a) => a.as_ref().clone(),
                Begin::Run(_) => b"ran again".to_vec(),
            }
        });
        tokio::task::yield_now().await;
        first.finish(b"{\"ok\":1}".to_vec());
        assert_eq!(waiter.await.unwrap(), b"{\"ok\":1}");
        assert!(matches!(
            record.begin(Some("alice"), GET, "k1").await,
            Begin::Answered(a) if a.as_slice() == b"{\"ok\":1}"
        ));
        // Another caller, tool or key is another call.
        assert!(matches!(
            record.begin(Some("bob"), GET, "k1").await,
            Begin::Run(_)
        ));
        assert!(matches!(
            record.begin(Some("alice"), PUT, "k1").await,
            Begin::Run(_)
        ));
        // A call that ended without an answer frees its key.
        let Begin::Run(failed) = record.begin(None, GET, "k2").await else {
            panic!()
        };
        drop(failed);
        assert!(matches!(record.begin(None, GET, "k2").await, Begin::Run(_)));
    }

    #[tokio::test]
    async fn answers_expire_and_the_record_is_bounded() {
        let record = Arc::new(Record::default());
        for i in 0..MAX_ENTRIES + 10 {
            let Begin::Run(r) = record.begin(None, [0; 16], &i.to_string()).await else {
                panic!()
            };
            r.finish(Vec::new());
        }
        assert_eq!(record.lock().len(), MAX_ENTRIES);
        // The oldest went first.
        assert!(matches!(
            record.begin(None, [0; 16], "0").await,
            Begin::Run(_)
        ));
    }
}
