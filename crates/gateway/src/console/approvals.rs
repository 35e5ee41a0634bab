//! Approvals decided in the console: when the gate asks about a call and
//! the caller's client can open a URL (URL elicitation) but cannot show a
//! form, the question becomes a link to `/console/approve/ID`.
//!
//! The ID is 256 random bits, and what it stands for is kept here, bound
//! to the call: the tool, the sha256 of its canonical arguments (the
//! audit log's digest), the caller, an expiry ([`APPROVAL_TTL`]). A
//! console principal approves once or denies it in the browser (a POST
//! with the session's CSRF token); the call's retry — whose sealed
//! `requestState` names the ID — then redeems the decision, once: the
//! entry is gone afterwards, so a replayed link or retry finds nothing.
//! A forged ID finds nothing either. The pending approvals live in this
//! gateway's memory, so the retry must reach the replica that asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_host::{ApprovalRequest, AuditRecord};

/// How long an approval link stays good: the gateway's approval
/// `requestState` lapses then too.
pub(crate) const APPROVAL_TTL: Duration = crate::APPROVAL_STATE_TTL;

/// How many approvals may wait for a person at once; past it the one
/// closest to its expiry makes room.
pub const MAX_PENDING_APPROVALS: usize = 1024;

/// A call waiting for a person.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The tool's model-facing name.
    pub(crate) tool: String,
    /// Its server.
    pub(crate) server: String,
    /// The exact arguments.
    pub(crate) arguments: Value,
    /// The sha256 of the canonical arguments.
    pub(crate) digest: String,
    /// Who called (`None`: an unauthenticated caller).
    pub(crate) caller: Option<String>,
    /// Why the gate asks.
    pub(crate) reasons: Vec<String>,
    /// The definition's diff, when it changed since approval.
    pub(crate) diff: Option<String>,
    /// The decision, once made: approved or not, and by whom.
    pub(crate) decision: Option<(bool, String)>,
    expires: Instant,
}

impl Pending {
    /// Seconds left before the link lapses.
    pub(crate) fn seconds_left(&self) -> u64 {
        self.expires
            .saturating_duration_since(Instant::now())
            .as_secs()
    }
}

/// What a call's retry finds for its approval ID.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Redeemed {
    /// Approved once, by this console principal.
    Approved(String),
    /// Denied, by this console principal.
    Denied(String),
    /// Nobody has decided yet.
    Waiting,
    /// No such approval for this call (forged, used, lapsed, or bound to
    /// another tool, arguments or caller).
    Invalid,
}

/// The approvals waiting for a person, shared by the console and the
/// gateway's tool calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct Approvals {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The console's origin (`http://host:port`), known once serving.
    base: OnceLock<String>,
    pending: Mutex<HashMap<String, Pending>>,
}

/// The digest the audit log records for `arguments` (no arguments
/// counted as `{}`, as the retry sends them).
pub(crate) fn digest(tool: &str, arguments: &Value) -> String {
    let empty = Value::Object(serde_json::Map::new());
    let arguments = if arguments.is_null() {
        &empty
    } else {
        arguments
    };
    AuditRecord::new(tool, Some(arguments)).arguments_sha256
}

impl Approvals {
    /// Says where the console is served (its origin), for the links.
    pub(crate) fn set_base(&self, origin: String) {
        let _ = self.inner.base.set(origin);
    }

    /// Whether links can be made (the console is being served).
    pub(crate) fn is_serving(&self) -> bool {
        self.inner.base.get().is_some()
    }

    /// A new pending approval for the gate's `request` by `caller`: its
    /// ID and link; `None` while the console is not served.
    pub(crate) fn open(
        &self,
        request: &ApprovalRequest,
        caller: Option<&str>,
    ) -> Option<(String, String)> {
        self.open_for(Pending {
            tool: request.local_name.clone(),
            server: request.alias.clone(),
            digest: digest(&request.local_name, &request.arguments),
            arguments: request.arguments.clone(),
            caller: caller.map(str::to_owned),
            reasons: request.reasons.clone(),
            diff: request.diff.clone(),
            decision: None,
            expires: Instant::now() + APPROVAL_TTL,
        })
    }

    fn open_for(&self, pending: Pending) -> Option<(String, String)> {
        let base = self.inner.base.get()?;
        let id = super::session::random_hex()?;
        let mut map = self.lock();
        let now = Instant::now();
        map.retain(|_, p| p.expires > now);
        if map.len() >= MAX_PENDING_APPROVALS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, p)| p.expires)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(id.clone(), pending);
        Some((id.clone(), format!("{base}/console/approve/{id}")))
    }

    /// The link of approval `id`.
    pub(crate) fn link(&self, id: &str) -> Option<String> {
        Some(format!("{}/console/approve/{id}", self.inner.base.get()?))
    }

    /// The live approval `id`.
    pub(crate) fn get(&self, id: &str) -> Option<Pending> {
        let map = self.lock();
        map.get(id).filter(|p| p.expires > Instant::now()).cloned()
    }

    /// The approvals still waiting for a decision, soonest to lapse
    /// first.
    pub(crate) fn waiting(&self) -> Vec<(String, Pending)> {
        let now = Instant::now();
        let mut out: Vec<(String, Pending)> = self
            .lock()
            .iter()
            .filter(|(_, p)| p.expires > now && p.decision.is_none())
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        out.sort_by_key(|(_, p)| p.expires);
        out
    }

    /// Records `by`'s decision on approval `id`: once only.
    ///
    /// # Errors
    /// Why not: no such live approval, or it was decided already.
    pub(crate) fn decide(
        &self,
        id: &str,
        approve: bool,
        by: &str,
    ) -> Result<Pending, &'static str> {
        let mut map = self.lock();
        let Some(p) = map.get_mut(id).filter(|p| p.expires > Instant::now()) else {
            return Err(
                "This approval link is not valid: it was used, it lapsed, or it never existed.",
            );
        };
        if p.decision.is_some() {
            return Err("This call was decided already.");
        }
        p.decision = Some((approve, by.to_owned()));
        Ok(p.clone())
    }

    /// The decision on approval `id` for the retry of a call of `tool`
    /// with arguments `digest` by `caller`: a decision is handed out once
    /// (the entry is removed); anything not bound to this very call is
    /// [`Redeemed::Invalid`].
    pub(crate) fn redeem(
        &self,
        id: &str,
        tool: &str,
        digest: &str,
        caller: Option<&str>,
    ) -> Redeemed {
        let mut map = self.lock();
        let Some(p) = map.get(id).filter(|p| p.expires > Instant::now()) else {
            map.remove(id);
            return Redeemed::Invalid;
        };
        if p.tool != tool || p.digest != digest || p.caller.as_deref() != caller {
            return Redeemed::Invalid;
        }
        let Some((approved, by)) = p.decision.clone() else {
            return Redeemed::Waiting;
        };
        map.remove(id);
        if approved {
            Redeemed::Approved(by)
        } else {
            Redeemed::Denied(by)
        }
    }

    /// Drops approval `id` (its call stopped waiting).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> Pending {
        Pending {
            tool: "mcp__notes__search".into(),
            server: "notes".into(),
            arguments: json!({"query": "x"}),
            digest: digest("mcp__notes__search", &json!({"query": "x"})),
            caller: Some("bot".into()),
            reasons: Vec::new(),
            diff: None,
            decision: None,
            expires: Instant::now() + APPROVAL_TTL,
        }
    }

    #[test]
    fn a_decision_is_redeemed_once_by_the_very_call_it_was_made_for() {
        let approvals = Approvals::default();
        assert!(
            approvals.open_for(request()).is_none(),
            "no link before serving"
        );
        approvals.set_base("http://127.0.0.1:1".into());
        let (id, link) = approvals.open_for(request()).unwrap();
        assert!(link.ends_with(&format!("/console/approve/{id}")));
        let d = digest("mcp__notes__search", &json!({"query": "x"}));
        assert_eq!(
            approvals.redeem(&id, "mcp__notes__search", &d, Some("bot")),
            Redeemed::Waiting
        );
        approvals.decide(&id, true, "alice").unwrap();
        assert!(
            approvals.decide(&id, false, "alice").is_err(),
            "decided once"
        );
        // Another tool, other arguments, another caller: not this call.
        assert_eq!(
            approvals.redeem(&id, "mcp__notes__read_note", &d, Some("bot")),
            Redeemed::Invalid
        );
        let other = digest("mcp__notes__search", &json!({"query": "y"}));
        assert_eq!(
            approvals.redeem(&id, "mcp__notes__search", &other, Some("bot")),
            Redeemed::Invalid
        );
        assert_eq!(
            approvals.redeem(&id, "mcp__notes__search", &d, Some("eve")),
            Redeemed::Invalid
        );
        assert_eq!(
            approvals.redeem(&id, "mcp__notes__search", &d, Some("bot")),
            Redeemed::Approved("alice".into())
        );
        // Used: a replay finds nothing.
        assert_eq!(
            approvals.redeem(&id, "mcp__notes__search", &d, Some("bot")),
            Redeemed::Invalid
        );
        assert!(approvals.get(&id).is_none());
        assert_eq!(
            approvals.redeem("forged", "mcp__notes__search", &d, Some("bot")),
            Redeemed::Invalid
        );
    }
}
