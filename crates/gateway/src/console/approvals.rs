//! Approvals decided in the console: when the gate asks about a call and
//! the caller's client can open a URL (URL elicitation) but cannot show a
//! form, the question becomes a link to `/console/approve/ID`.
//!
//! The ID describes the call itself and cannot be forged: the tool, its
//! server, the exact arguments and the sha256 of their canonical form
//! (the audit log's digest), the caller, the reasons, an expiry
//! ([`APPROVAL_TTL`]) and a random nonce, as base64url JSON followed by
//! its HMAC-SHA256 under a key derived from the gateway's state key
//! (`serve --state-key`; a random key per process without one). So every
//! replica sharing the key can show and decide any replica's approval,
//! and a tampered or forged link is refused by all of them.
//!
//! A console principal approves once or denies it in the browser (a POST
//! with the session's CSRF token): the decision is kept under the nonce
//! (with `serve --state redis://…` in the shared store, with the link's
//! expiry, for whichever replica holds the call; without a store, in
//! this gateway's memory), decided once. The call's retry — whose sealed
//! `requestState` names the ID — redeems it once: through the replay
//! ledger's set-if-absent with a store, by removing it from memory
//! without; a replayed link or retry finds nothing.
//!
//! The Approvals page lists the calls waiting for a person: with a store,
//! every replica's (each approval is listed there when opened and taken
//! off when decided, redeemed, given up or lapsed), so any replica's
//! console shows every waiting call; without one, this gateway's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use switchboard_host::{ApprovalRequest, AuditRecord};
use switchboard_server::UseLedger as _;
use switchboard_wire::shared::lock;
use switchboard_wire::shared::unix_millis;

use crate::state::SharedState;

/// How long an approval link stays good: the gateway's approval
/// `requestState` lapses then too.
pub(crate) const APPROVAL_TTL: Duration = crate::APPROVAL_STATE_TTL;

/// How many approvals opened here are remembered at once (for the
/// Approvals page and the decisions kept without a store); past it the
/// one closest to its expiry makes room.
pub const MAX_PENDING_APPROVALS: usize = 1024;

/// What `refused` says of a link that is not (or no longer) good.
const NOT_VALID: &str =
    "This approval link is not valid: it was used, it lapsed, or it never existed.";

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
    /// The definition's diff, when it changed since approval (known to
    /// the replica that asked only: it stays out of the link).
    pub(crate) diff: Option<String>,
    /// The decision, once made: approved or not, and by whom.
    pub(crate) decision: Option<(bool, String)>,
    /// When the link lapses (Unix milliseconds).
    expires_ms: u64,
    /// The link's nonce (hex): the key of its decision.
    nonce: String,
}

impl Pending {
    /// Seconds left before the link lapses.
    pub(crate) fn seconds_left(&self) -> u64 {
        self.expires_ms.saturating_sub(unix_millis()) / 1000
    }

    fn live(&self) -> bool {
        self.expires_ms > unix_millis()
    }
}

/// What the link carries, sealed.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Tool.
    t: String,
    /// Server.
    s: String,
    /// Arguments.
    a: Value,
    /// Their digest.
    d: String,
    /// Caller.
    c: Option<String>,
    /// Reasons.
    r: Vec<String>,
    /// Expiry, Unix milliseconds.
    e: u64,
    /// Nonce, hex.
    n: String,
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
    /// The shared store could not be asked or could not record the use:
    /// refused rather than risk a replay.
    Unavailable(String),
}

/// The approvals waiting for a person, shared by the console and the
/// gateway's tool calls.
#[derive(Debug, Clone)]
pub(crate) struct Approvals {
    inner: Arc<Inner>,
}

struct Inner {
    /// The console's origin (`http://host:port`), known once serving.
    base: OnceLock<String>,
    /// The links' MAC key.
    key: [u8; 32],
    /// The replicas' shared store, if any.
    store: Option<SharedState>,
    /// The approvals opened here (and, without a store, every decision),
    /// by nonce.
    pending: Mutex<HashMap<String, Pending>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("store", &self.store.is_some())
            .finish_non_exhaustive()
    }
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

/// Whether link `id` lapsed (or is no link), read without checking its
/// seal: only to clear the store's list of what can no longer be used.
fn lapsed(id: &str) -> bool {
    id.split_once('.')
        .and_then(|(body, _)| URL_SAFE_NO_PAD.decode(body).ok())
        .and_then(|body| serde_json::from_slice::<Sealed>(&body).ok())
        .is_none_or(|sealed| sealed.e <= unix_millis())
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; the fallback cannot happen.
    Hmac::<Sha256>::new_from_slice(key)
        .unwrap_or_else(|_| <Hmac<Sha256> as Mac>::new(&Default::default()))
}

/// A decision as kept in the store: `1 BY` (approved) or `0 BY`.
fn decision_text(approve: bool, by: &str) -> String {
    format!("{} {by}", u8::from(approve))
}

fn decision_of(text: &str) -> Option<(bool, String)> {
    let (flag, by) = text.split_once(' ')?;
    Some((flag == "1", by.to_owned()))
}

impl Approvals {
    /// The approvals of a gateway whose state key is `state_key` (the
    /// links' key is derived from it; a random one without it) and whose
    /// replicas share `store`.
    ///
    /// # Errors
    /// The system has no randomness for a key.
    pub(crate) fn new(
        state_key: Option<&[u8]>,
        store: Option<SharedState>,
    ) -> Result<Approvals, String> {
        let key = match state_key {
            Some(master) => {
                let mut m = mac(master);
                m.update(b"switchboard console approval link");
                m.finalize().into_bytes().into()
            }
            None => {
                let mut k = [0u8; 32];
                getrandom::fill(&mut k).map_err(|e| format!("no randomness for a key: {e}"))?;
                k
            }
        };
        Ok(Approvals {
            inner: Arc::new(Inner {
                base: OnceLock::new(),
                key,
                store,
                pending: Mutex::default(),
            }),
        })
    }

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
    pub(crate) async fn open(
        &self,
        request: &ApprovalRequest,
        caller: Option<&str>,
    ) -> Option<(String, String)> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).ok()?;
        let pending = Pending {
            tool: request.local_name.clone(),
            server: request.alias.clone(),
            digest: digest(&request.local_name, &request.arguments),
            arguments: request.arguments.clone(),
            caller: caller.map(str::to_owned),
            reasons: request.reasons.clone(),
            diff: request.diff.clone(),
            decision: None,
            expires_ms: unix_millis()
                + u64::try_from(APPROVAL_TTL.as_millis()).unwrap_or(u64::MAX / 2),
            nonce: crate::trace::hex(&nonce),
        };
        let (id, link) = self.open_for(pending.clone())?;
        if let Some(store) = &self.inner.store {
            // Listed for every replica's console; without the store, this
            // replica's page still lists it.
            let entry = serde_json::json!({"id": id, "diff": pending.diff}).to_string();
            if let Err(why) = store
                .add_waiting(&pending.nonce, &entry, APPROVAL_TTL)
                .await
            {
                tracing::warn!(tool = %pending.tool, "the waiting call is listed on this replica's console only: {why}");
            }
        }
        Some((id, link))
    }

    fn open_for(&self, pending: Pending) -> Option<(String, String)> {
        let base = self.inner.base.get()?;
        let id = self.seal(&pending)?;
        let mut map = self.lock();
        map.retain(|_, p| p.live());
        if map.len() >= MAX_PENDING_APPROVALS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, p)| p.expires_ms)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(pending.nonce.clone(), pending);
        Some((id.clone(), format!("{base}/console/approve/{id}")))
    }

    /// The link's ID for `p`: its sealed description.
    fn seal(&self, p: &Pending) -> Option<String> {
        let body = serde_json::to_vec(&Sealed {
            t: p.tool.clone(),
            s: p.server.clone(),
            a: p.arguments.clone(),
            d: p.digest.clone(),
            c: p.caller.clone(),
            r: p.reasons.clone(),
            e: p.expires_ms,
            n: p.nonce.clone(),
        })
        .ok()?;
        let body = URL_SAFE_NO_PAD.encode(body);
        let mut m = mac(&self.inner.key);
        m.update(body.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
        Some(format!("{body}.{tag}"))
    }

    /// The call link `id` describes, if its seal holds and it is live
    /// (the diff and decision as known here).
    fn unseal(&self, id: &str) -> Option<Pending> {
        let (body, tag) = id.split_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let mut m = mac(&self.inner.key);
        m.update(body.as_bytes());
        // Compared in constant time.
        m.verify_slice(&tag).ok()?;
        let sealed: Sealed = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()?;
        let local = self.lock().get(&sealed.n).cloned();
        let p = Pending {
            tool: sealed.t,
            server: sealed.s,
            arguments: sealed.a,
            digest: sealed.d,
            caller: sealed.c,
            reasons: sealed.r,
            diff: local.as_ref().and_then(|l| l.diff.clone()),
            decision: local.and_then(|l| l.decision),
            expires_ms: sealed.e,
            nonce: sealed.n,
        };
        p.live().then_some(p)
    }

    /// The link of approval `id`.
    pub(crate) fn link(&self, id: &str) -> Option<String> {
        Some(format!("{}/console/approve/{id}", self.inner.base.get()?))
    }

    /// The live approval `id`, with its decision if one was made (on any
    /// replica, with a store).
    ///
    /// # Errors
    /// The shared store could not be asked.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<Pending>, String> {
        let Some(mut p) = self.unseal(id) else {
            return Ok(None);
        };
        if let Some(store) = &self.inner.store {
            p.decision = store
                .decision(&p.nonce)
                .await?
                .as_deref()
                .and_then(decision_of);
        } else if !self.lock().contains_key(&p.nonce) {
            // Without a store, a link this gateway no longer holds was
            // redeemed already.
            return Ok(None);
        }
        Ok(Some(p))
    }

    /// The approvals still waiting for a decision, soonest to lapse
    /// first, with their IDs: every replica's with a store, else the ones
    /// opened here. With a store that cannot be read, the ones opened
    /// here, and the sentence saying why.
    pub(crate) async fn waiting(&self) -> (Vec<(String, Pending)>, Option<String>) {
        let (mut out, note) = match &self.inner.store {
            Some(store) => match store.waiting().await {
                Ok(entries) => (self.listed(store, entries).await, None),
                Err(why) => (
                    self.waiting_here(),
                    Some(format!(
                        "Only the calls waiting on this replica are listed: {why}"
                    )),
                ),
            },
            None => (self.waiting_here(), None),
        };
        out.sort_by_key(|(_, p)| p.expires_ms);
        (out, note)
    }

    /// The approvals opened here still waiting.
    fn waiting_here(&self) -> Vec<(String, Pending)> {
        self.lock()
            .values()
            .filter(|p| p.live() && p.decision.is_none())
            .filter_map(|p| Some((self.seal(p)?, p.clone())))
            .collect()
    }

    /// The store's waiting list read: its live entries, the rest (lapsed,
    /// or not sealed with this key) taken off it.
    async fn listed(
        &self,
        store: &SharedState,
        entries: Vec<(String, String)>,
    ) -> Vec<(String, Pending)> {
        let mut out = Vec::new();
        let mut stale = Vec::new();
        for (nonce, entry) in &entries {
            let entry: Value = serde_json::from_str(entry).unwrap_or(Value::Null);
            let found = entry["id"]
                .as_str()
                .and_then(|id| Some((id.to_owned(), self.unseal(id)?)))
                .filter(|(_, p)| p.nonce == *nonce && p.decision.is_none());
            match found {
                Some((id, mut p)) => {
                    if p.diff.is_none() {
                        p.diff = entry["diff"].as_str().map(str::to_owned);
                    }
                    out.push((id, p));
                }
                // Another gateway's (sealed with another key) and live:
                // left alone.
                None if entry["id"].as_str().is_some_and(|id| !lapsed(id)) => {}
                None => stale.push(nonce.as_str()),
            }
        }
        if let Err(why) = store.drop_waiting(&stale).await {
            tracing::debug!("lapsed approvals stay listed in the store for now: {why}");
        }
        out
    }

    /// Records `by`'s decision on approval `id`: once only.
    ///
    /// # Errors
    /// Why not: no such live approval, it was decided already, or the
    /// shared store could not record it.
    pub(crate) async fn decide(
        &self,
        id: &str,
        approve: bool,
        by: &str,
    ) -> Result<Pending, String> {
        let Some(mut p) = self.unseal(id) else {
            return Err(NOT_VALID.into());
        };
        if let Some(store) = &self.inner.store {
            let ttl = Duration::from_millis(p.expires_ms.saturating_sub(unix_millis()));
            if !store
                .record_decision(&p.nonce, &decision_text(approve, by), ttl)
                .await?
            {
                return Err("This call was decided already.".into());
            }
            if let Some(local) = self.lock().get_mut(&p.nonce) {
                local.decision = Some((approve, by.to_owned()));
            }
        } else {
            let mut map = self.lock();
            let Some(local) = map.get_mut(&p.nonce) else {
                return Err(NOT_VALID.into());
            };
            if local.decision.is_some() {
                return Err("This call was decided already.".into());
            }
            local.decision = Some((approve, by.to_owned()));
        }
        p.decision = Some((approve, by.to_owned()));
        Ok(p)
    }

    /// The decision on approval `id` for the retry of a call of `tool`
    /// with arguments `digest` by `caller`: a decision is handed out once;
    /// anything not bound to this very call is [`Redeemed::Invalid`].
    pub(crate) async fn redeem(
        &self,
        id: &str,
        tool: &str,
        digest: &str,
        caller: Option<&str>,
    ) -> Redeemed {
        let Some(p) = self.unseal(id) else {
            return Redeemed::Invalid;
        };
        if p.tool != tool || p.digest != digest || p.caller.as_deref() != caller {
            return Redeemed::Invalid;
        }
        let decision = if let Some(store) = &self.inner.store {
            let decision = match store.decision(&p.nonce).await {
                Ok(d) => d.as_deref().and_then(decision_of),
                Err(why) => return Redeemed::Unavailable(why),
            };
            let Some(decision) = decision else {
                return Redeemed::Waiting;
            };
            // Once across the replicas: the replay ledger's set-if-absent.
            let mut nonce = [0u8; 16];
            for (i, b) in nonce.iter_mut().enumerate() {
                *b = p
                    .nonce
                    .get(2 * i..2 * i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .unwrap_or(0);
            }
            match store.record(nonce, p.expires_ms).await {
                Ok(true) => {}
                Ok(false) => return Redeemed::Invalid,
                Err(why) => return Redeemed::Unavailable(why),
            }
            self.lock().remove(&p.nonce);
            let _ = store.drop_waiting(&[&p.nonce]).await;
            decision
        } else {
            let mut map = self.lock();
            let Some(local) = map.get(&p.nonce) else {
                return Redeemed::Invalid;
            };
            let Some(decision) = local.decision.clone() else {
                return Redeemed::Waiting;
            };
            map.remove(&p.nonce);
            decision
        };
        match decision {
            (true, by) => Redeemed::Approved(by),
            (false, by) => Redeemed::Denied(by),
        }
    }

    /// Drops approval `id` (its call stopped waiting), from the store's
    /// waiting list too.
    pub(crate) async fn forget(&self, id: &str) {
        let Some(p) = self.unseal(id) else { return };
        self.lock().remove(&p.nonce);
        if let Some(store) = &self.inner.store {
            if let Err(why) = store.drop_waiting(&[&p.nonce]).await {
                tracing::debug!(tool = %p.tool, "a call that stopped waiting stays listed until it lapses: {why}");
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        lock(&self.inner.pending)
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
            expires_ms: unix_millis() + 60_000,
            nonce: "00112233445566778899aabbccddeeff".into(),
        }
    }

    #[tokio::test]
    async fn a_decision_is_redeemed_once_by_the_very_call_it_was_made_for() {
        let approvals = Approvals::new(Some(b"key"), None).unwrap();
        assert!(
            approvals.open_for(request()).is_none(),
            "no link before serving"
        );
        approvals.set_base("http://127.0.0.1:1".into());
        let (id, link) = approvals.open_for(request()).unwrap();
        assert!(link.ends_with(&format!("/console/approve/{id}")));
        let d = digest("mcp__notes__search", &json!({"query": "x"}));
        assert_eq!(
            approvals
                .redeem(&id, "mcp__notes__search", &d, Some("bot"))
                .await,
            Redeemed::Waiting
        );
        approvals.decide(&id, true, "alice").await.unwrap();
        assert!(
            approvals.decide(&id, false, "alice").await.is_err(),
            "decided once"
        );
        // Another tool, other arguments, another caller: not this call.
        assert_eq!(
            approvals
                .redeem(&id, "mcp__notes__read_note", &d, Some("bot"))
                .await,
            Redeemed::Invalid
        );
        let other = digest("mcp__notes__search", &json!({"query": "y"}));
        assert_eq!(
            approvals
                .redeem(&id, "mcp__notes__search", &other, Some("bot"))
                .await,
            Redeemed::Invalid
        );
        assert_eq!(
            approvals
                .redeem(&id, "mcp__notes__search", &d, Some("eve"))
                .await,
            Redeemed::Invalid
        );
        assert_eq!(
            approvals
                .redeem(&id, "mcp__notes__search", &d, Some("bot"))
                .await,
            Redeemed::Approved("alice".into())
        );
        // Used: a replay finds nothing.
        assert_eq!(
            approvals
                .redeem(&id, "mcp__notes__search", &d, Some("bot"))
                .await,
            Redeemed::Invalid
        );
        assert!(approvals.get(&id).await.unwrap().is_none());
        assert_eq!(
            approvals
                .redeem("forged", "mcp__notes__search", &d, Some("bot"))
                .await,
            Redeemed::Invalid
        );
    }

    #[tokio::test]
    async fn a_tampered_or_foreign_link_is_refused() {
        let approvals = Approvals::new(Some(b"key"), None).unwrap();
        approvals.set_base("http://127.0.0.1:1".into());
        let (id, _) = approvals.open_for(request()).unwrap();
        assert!(approvals.get(&id).await.unwrap().is_some());
        // The same call for another caller, sealed by hand with no key.
        let (body, tag) = id.split_once('.').unwrap();
        let mut sealed: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
        sealed["c"] = json!("eve");
        let forged_body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&sealed).unwrap());
        let forged = format!("{forged_body}.{tag}");
        assert!(approvals.get(&forged).await.unwrap().is_none());
        assert!(approvals.decide(&forged, true, "alice").await.is_err());
        let d = digest("mcp__notes__search", &json!({"query": "x"}));
        assert_eq!(
            approvals
                .redeem(&forged, "mcp__notes__search", &d, Some("eve"))
                .await,
            Redeemed::Invalid
        );
        // Sealed under another state key: refused too.
        let other = Approvals::new(Some(b"another key"), None).unwrap();
        assert!(other.get(&id).await.unwrap().is_none());
        // A lapsed link.
        let mut lapsed = request();
        lapsed.expires_ms = unix_millis() - 1;
        lapsed.nonce = "ff".repeat(16);
        let (old, _) = approvals.open_for(lapsed).unwrap();
        assert!(approvals.get(&old).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn only_lapsed_links_and_garbage_are_cleared_from_the_stores_list() {
        // Sealed under another key: not this gateway's to read, but its
        // expiry tells whether it can still be used.
        let other = Approvals::new(Some(b"another key"), None).unwrap();
        other.set_base("http://127.0.0.1:1".into());
        let (live, _) = other.open_for(request()).unwrap();
        assert!(!lapsed(&live));
        let mut old = request();
        old.expires_ms = unix_millis() - 1;
        old.nonce = "ee".repeat(16);
        let (old, _) = other.open_for(old).unwrap();
        assert!(lapsed(&old));
        assert!(lapsed("not a link"));
        // Without a store, the waiting list is this gateway's.
        let (waiting, note) = other.waiting().await;
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].0, live);
        assert!(note.is_none());
    }

    #[tokio::test]
    async fn two_replicas_with_one_state_key_read_each_others_links() {
        let a = Approvals::new(Some(b"shared"), None).unwrap();
        let b = Approvals::new(Some(b"shared"), None).unwrap();
        a.set_base("http://127.0.0.1:1".into());
        let (id, _) = a.open_for(request()).unwrap();
        let p = b.unseal(&id).expect("B opens A's link");
        assert_eq!(p.tool, "mcp__notes__search");
        assert_eq!(p.arguments, json!({"query": "x"}));
        assert_eq!(p.caller.as_deref(), Some("bot"));
    }
}
