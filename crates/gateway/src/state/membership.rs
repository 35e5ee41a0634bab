//! The replicas' registry in the shared store: each replica registers its
//! name and the URL its peers reach it at, renewed every [`HEARTBEAT`]
//! with an expiry of [`REPLICA_TTL`], so a replica that stops (killed,
//! cut off) drops out by itself. Each replica reads the registry at the
//! same beat and keeps it in memory, where the server framework's
//! [`ReplicaDirectory`] hook asks it where the replica a task id, a
//! parked call's `requestState` or a legacy session names is: requests
//! for another replica's work are sent on there without any `--peer`
//! flag, and a replica that was registered and is no more is said to be
//! gone.
//!
//! Keys: `switchboard:replica:NAME` → its URL (expiring), and the set
//! `switchboard:replicas` of names (a name whose key expired is removed
//! from it by the next replica that reads it).

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::time::Duration;

use switchboard_server::{ReplicaDirectory, ReplicaLocation};
use switchboard_wire::shared::{read_lock, write_lock};

use super::resp::Reply;
use super::{HEARTBEAT, Operation, PREFIX, SharedState};

/// How long a replica stays registered without renewing: three beats.
pub const REPLICA_TTL: Duration = Duration::from_secs(6);

/// This replica's registration and what it knows of the others.
#[derive(Debug)]
pub struct Membership {
    state: SharedState,
    /// This replica's name (as task ids start with it).
    name: String,
    /// The URL its peers reach its MCP endpoint at, once known.
    url: RwLock<Option<String>>,
    /// The live replicas (this one excluded), by name.
    replicas: RwLock<HashMap<String, http::Uri>>,
    /// Every replica seen registered since this one started: one of them
    /// missing now is gone (one never seen may just be new).
    seen: RwLock<HashSet<String>>,
}

impl Membership {
    /// The registration of the replica `name` (made as task ids lead with
    /// it) in `state`; nothing is written before [`Membership::beat`].
    pub(crate) fn new(state: SharedState, name: &str) -> Membership {
        Membership {
            state,
            name: switchboard_server::origin_name(name),
            url: RwLock::new(None),
            replicas: RwLock::new(HashMap::new()),
            seen: RwLock::new(HashSet::new()),
        }
    }

    /// Sets the URL peers reach this replica at.
    pub(crate) fn set_url(&self, url: String) {
        *write_lock(&self.url) = Some(url);
    }

    /// The live replicas other than this one, by name, with their URLs.
    #[must_use]
    pub fn replicas(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = read_lock(&self.replicas)
            .iter()
            .map(|(n, u)| (n.clone(), u.to_string()))
            .collect();
        all.sort();
        all
    }

    fn key(name: &str) -> String {
        format!("{PREFIX}replica:{name}")
    }

    /// Renews this replica's registration and reads the others': two
    /// round trips (a third when expired names are cleared away).
    ///
    /// # Errors
    /// Why the store could not be used (the registry read before is
    /// kept).
    pub(crate) async fn beat(&self) -> Result<(), String> {
        let url = read_lock(&self.url).clone();
        let set = format!("{PREFIX}replicas");
        let own_key = Self::key(&self.name);
        let ttl = REPLICA_TTL.as_millis().to_string();
        let mut commands: Vec<Vec<&[u8]>> = Vec::new();
        if let Some(url) = &url {
            commands.push(vec![
                b"SET",
                own_key.as_bytes(),
                url.as_bytes(),
                b"PX",
                ttl.as_bytes(),
            ]);
            commands.push(vec![b"SADD", set.as_bytes(), self.name.as_bytes()]);
        }
        commands.push(vec![b"SMEMBERS", set.as_bytes()]);
        let replies = self.state.run(Operation::Membership, &commands).await?;
        let names: Vec<String> = match replies.last() {
            Some(Reply::Array(Some(items))) => items
                .iter()
                .filter_map(|r| match r {
                    Reply::Bulk(Some(b)) => String::from_utf8(b.clone()).ok(),
                    _ => None,
                })
                .filter(|n| *n != self.name)
                .collect(),
            other => return Err(self.state.odd(Operation::Membership, other)),
        };
        let mut live = HashMap::new();
        if !names.is_empty() {
            let keys: Vec<String> = names.iter().map(|n| Self::key(n)).collect();
            let mut mget: Vec<&[u8]> = vec![b"MGET"];
            mget.extend(keys.iter().map(String::as_bytes));
            let replies = self.state.run(Operation::Membership, &[mget]).await?;
            let Some(Reply::Array(Some(urls))) = replies.first() else {
                return Err(self.state.odd(Operation::Membership, replies.first()));
            };
            let mut expired: Vec<&str> = Vec::new();
            for (name, url) in names.iter().zip(urls) {
                let parsed = match url {
                    Reply::Bulk(Some(b)) => std::str::from_utf8(b)
                        .ok()
                        .and_then(|u| u.parse::<http::Uri>().ok()),
                    _ => None,
                };
                match parsed {
                    Some(uri) => {
                        live.insert(name.clone(), uri);
                    }
                    None => expired.push(name),
                }
            }
            if !expired.is_empty() {
                let mut srem: Vec<&[u8]> = vec![b"SREM", set.as_bytes()];
                srem.extend(expired.iter().map(|n| n.as_bytes()));
                let _ = self.state.run(Operation::Membership, &[srem]).await;
            }
        }
        let mut seen = write_lock(&self.seen);
        let mut replicas = write_lock(&self.replicas);
        for gone in replicas.keys().filter(|n| !live.contains_key(*n)) {
            tracing::warn!(replica = %gone, "a replica left the shared store's registry (its registration expired): requests for its tasks are answered saying it is gone");
        }
        for name in live.keys().filter(|n| !replicas.contains_key(*n)) {
            tracing::info!(replica = %name, "a replica joined the shared store's registry");
        }
        seen.extend(live.keys().cloned());
        *replicas = live;
        Ok(())
    }

    /// Beats every [`HEARTBEAT`] until the returned task is aborted.
    pub(crate) fn run(self: &std::sync::Arc<Self>) -> tokio::task::JoinHandle<()> {
        let membership = std::sync::Arc::clone(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(HEARTBEAT);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let _ = membership.beat().await;
            }
        })
    }

    /// Removes this replica's registration (a clean stop): the others
    /// drop it at their next beat rather than after [`REPLICA_TTL`].
    pub(crate) async fn leave(&self) {
        let set = format!("{PREFIX}replicas");
        let own_key = Self::key(&self.name);
        let _ = self
            .state
            .run(
                Operation::Membership,
                &[
                    vec![b"DEL", own_key.as_bytes()],
                    vec![b"SREM", set.as_bytes(), self.name.as_bytes()],
                ],
            )
            .await;
    }
}

impl ReplicaDirectory for Membership {
    fn locate(&self, name: &str) -> ReplicaLocation {
        if let Some(url) = read_lock(&self.replicas).get(name) {
            return ReplicaLocation::At(url.clone());
        }
        let seen = read_lock(&self.seen).contains(name);
        if seen && self.state.is_up() {
            ReplicaLocation::Gone
        } else {
            ReplicaLocation::Unknown
        }
    }
}
