//! What the console keeps in the shared store, so that every replica's
//! console sees the same thing:
//!
//! - Waiting approvals: the hash `switchboard:approvals:waiting`, one
//!   field per call waiting for a person (the approval link's nonce →
//!   the sealed link ID and the changed definition's diff, as JSON). A
//!   field is removed when the call is decided, redeemed or stops
//!   waiting; one that lapsed is removed by the next replica listing
//!   them, and the hash itself expires with the newest approval (every
//!   approval lives as long), so nothing outlives the gateways.
//! - Decisions: `switchboard:approval:NONCE` → `1 BY` or `0 BY`, set once
//!   (`NX`) with the link's expiry, for whichever replica holds the call.
//! - Failed sign-ins: `switchboard:signin:ADDRESS`, a count in a fixed
//!   window ([`SIGN_IN_SCRIPT`]).

use std::time::Duration;

use super::resp::Reply;
use super::{Operation, PREFIX, SharedState};

/// Counts one failed sign-in. `KEYS[1]`: the peer address's key;
/// `ARGV[1]`: the window in ms. The window starts with the first
/// failure (the key's expiry set with it, atomically, so no count is
/// left without one). Returns `{count, ms left in the window}`.
const SIGN_IN_SCRIPT: &str = r"
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}
";

fn waiting_key() -> String {
    format!("{PREFIX}approvals:waiting")
}

fn decision_key(nonce: &str) -> String {
    format!("{PREFIX}approval:{nonce}")
}

fn sign_in_key(peer: &str) -> String {
    format!("{PREFIX}signin:{peer}")
}

/// A second more than `ttl`, for the replicas' clocks to differ, in ms.
fn with_margin(ttl: Duration) -> String {
    (ttl.as_millis() + 1000).to_string()
}

impl SharedState {
    /// Lists the approval `nonce` as waiting (`entry`: what the console
    /// shows of it) for `ttl`.
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn add_waiting(
        &self,
        nonce: &str,
        entry: &str,
        ttl: Duration,
    ) -> Result<(), String> {
        let key = waiting_key();
        let ttl = with_margin(ttl);
        let replies = self
            .run(
                Operation::Console,
                &[
                    vec![b"HSET", key.as_bytes(), nonce.as_bytes(), entry.as_bytes()],
                    vec![b"PEXPIRE", key.as_bytes(), ttl.as_bytes()],
                ],
            )
            .await?;
        match replies.first() {
            Some(Reply::Integer(_)) => Ok(()),
            other => Err(self.odd(Operation::Console, other)),
        }
    }

    /// Every approval listed as waiting, by nonce (lapsed ones included:
    /// the caller tells, and drops them with [`SharedState::drop_waiting`]).
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn waiting(&self) -> Result<Vec<(String, String)>, String> {
        let key = waiting_key();
        let replies = self
            .run(Operation::Console, &[vec![b"HGETALL", key.as_bytes()]])
            .await?;
        let Some(Reply::Array(Some(items))) = replies.first() else {
            return Err(self.odd(Operation::Console, replies.first()));
        };
        let text = |r: &Reply| match r {
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        };
        Ok(items
            .chunks_exact(2)
            .filter_map(|pair| Some((text(&pair[0])?, text(&pair[1])?)))
            .collect())
    }

    /// Takes the approvals `nonces` off the waiting list.
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn drop_waiting(&self, nonces: &[&str]) -> Result<(), String> {
        if nonces.is_empty() {
            return Ok(());
        }
        let key = waiting_key();
        let mut command: Vec<&[u8]> = vec![b"HDEL", key.as_bytes()];
        command.extend(nonces.iter().map(|n| n.as_bytes()));
        self.run(Operation::Console, &[command]).await.map(drop)
    }

    /// Records a console decision on approval `nonce` for every replica
    /// and takes it off the waiting list (one round trip); `Ok(false)`
    /// when a decision was recorded before.
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn record_decision(
        &self,
        nonce: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<bool, String> {
        let key = decision_key(nonce);
        let waiting = waiting_key();
        let ttl = with_margin(ttl);
        let replies = self
            .run(
                Operation::Replay,
                &[
                    vec![
                        b"SET",
                        key.as_bytes(),
                        value.as_bytes(),
                        b"NX",
                        b"PX",
                        ttl.as_bytes(),
                    ],
                    // Decided now or before: no longer waiting either way.
                    vec![b"HDEL", waiting.as_bytes(), nonce.as_bytes()],
                ],
            )
            .await?;
        match replies.first() {
            Some(Reply::Simple(ok)) if ok == "OK" => Ok(true),
            Some(Reply::Bulk(None)) => Ok(false),
            other => Err(self.odd(Operation::Replay, other)),
        }
    }

    /// The decision recorded on approval `nonce` by any replica, if any.
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn decision(&self, nonce: &str) -> Result<Option<String>, String> {
        let key = decision_key(nonce);
        let replies = self
            .run(Operation::Replay, &[vec![b"GET", key.as_bytes()]])
            .await?;
        match replies.first() {
            Some(Reply::Bulk(None)) => Ok(None),
            Some(Reply::Bulk(Some(v))) => Ok(Some(String::from_utf8_lossy(v).into_owned())),
            other => Err(self.odd(Operation::Replay, other)),
        }
    }

    /// The failed sign-ins from `peer` in the current window, and how
    /// long the window has left.
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn sign_in_failures(&self, peer: &str) -> Result<(u32, Duration), String> {
        let key = sign_in_key(peer);
        let replies = self
            .run(
                Operation::Console,
                &[vec![b"GET", key.as_bytes()], vec![b"PTTL", key.as_bytes()]],
            )
            .await?;
        let count = match replies.first() {
            Some(Reply::Bulk(None)) => 0,
            Some(Reply::Bulk(Some(v))) => std::str::from_utf8(v)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(u32::MAX),
            other => return Err(self.odd(Operation::Console, other)),
        };
        let left = match replies.get(1) {
            Some(Reply::Integer(ms)) => Duration::from_millis(u64::try_from(*ms).unwrap_or(0)),
            other => return Err(self.odd(Operation::Console, other)),
        };
        Ok((count, left))
    }

    /// Counts one failed sign-in from `peer` in a window of `window`: the
    /// count so far and how long the window has left.
    ///
    /// # Errors
    /// Why the store could not be used.
    pub(crate) async fn count_sign_in_failure(
        &self,
        peer: &str,
        window: Duration,
    ) -> Result<(u32, Duration), String> {
        let key = sign_in_key(peer);
        let window = window.as_millis().to_string();
        let replies = self
            .run(
                Operation::Console,
                &[vec![
                    b"EVAL",
                    SIGN_IN_SCRIPT.as_bytes(),
                    b"1",
                    key.as_bytes(),
                    window.as_bytes(),
                ]],
            )
            .await?;
        match replies.first() {
            Some(Reply::Array(Some(items))) => match items.as_slice() {
                [Reply::Integer(n), Reply::Integer(ms)] => Ok((
                    u32::try_from(*n).unwrap_or(u32::MAX),
                    Duration::from_millis(u64::try_from(*ms).unwrap_or(0)),
                )),
                _ => Err(self.odd(Operation::Console, replies.first())),
            },
            other => Err(self.odd(Operation::Console, other)),
        }
    }
}
