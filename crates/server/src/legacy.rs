//! Serving legacy (2025-11-25 and earlier) clients: the `initialize`
//! handshake, sessions, `ping`, `logging/setLevel`, `resources/subscribe`,
//! and server-to-client requests.
//!
//! A legacy session holds what a modern request carries in its `_meta`: the
//! negotiated version, the client's capabilities and identity, and the log
//! level set with `logging/setLevel`. Handlers are the same for both eras:
//! when a handler answers `input_required` to a legacy client, the framework
//! sends each input request to the client as a JSON-RPC request on the
//! response stream, waits for the answers, and calls the handler again with
//! them, the way a modern client would retry.
//!
//! Over HTTP with a token validator, a session belongs to the principal
//! whose token opened it: its id is not a credential, and another
//! principal presenting it is answered as if it did not exist.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use switchboard_wire::meta::PROGRESS_TOKEN;
use switchboard_wire::{
    ClientCapabilities, ErrorObject, Implementation, LoggingLevel, Message, Request, RequestId,
    RequestMeta, Response, types::InitializeResult, version,
};
use tokio::sync::oneshot;

use crate::auth::Principal;
use crate::error::Fault;
use crate::seal;
use crate::server::Server;
use crate::sink::Sink;
use switchboard_wire::shared::lock;

/// Sessions idle longer than this are forgotten.
const IDLE_TTL: Duration = Duration::from_secs(3600);
/// At most this many sessions are kept; the least recently used go first.
const MAX_SESSIONS: usize = 10_000;

type Answer = Result<Value, ErrorObject>;

/// One legacy client's session.
pub(crate) struct Session {
    pub(crate) id: String,
    /// The subject of the principal that opened the session; `None` when
    /// the server does not authenticate (and on stdio).
    owner: Option<String>,
    pub(crate) version: String,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    log_level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<HashSet<String>>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    last_used: Mutex<Instant>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Whether `principal` may use this session: the one that opened it
    /// (the same subject), or nobody's when the session has no owner.
    pub(crate) fn belongs_to(&self, principal: Option<&Principal>) -> bool {
        self.owner.as_deref() == principal.map(|p| p.subject.as_str())
    }

    /// The `_meta` a modern request would have carried: the session's
    /// version, capabilities, identity and log level, plus the request's own
    /// progress token.
    pub(crate) fn meta(&self, params: Option<&Value>) -> RequestMeta {
        *lock(&self.last_used) = Instant::now();
        let mut meta =
            RequestMeta::new(self.version.clone()).capabilities(self.capabilities.clone());
        meta.client_info = self.client_info.clone();
        meta.log_level = *lock(&self.log_level);
        meta.progress_token = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(PROGRESS_TOKEN))
            .and_then(RequestId::from_value);
        meta
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        lock(&self.subscriptions).insert(uri.to_owned());
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    /// Sends a request to the client on `sink` and waits for its answer.
    pub(crate) async fn ask(
        &self,
        sink: &Sink,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Answer, Fault> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let message = Message::Request(Request::new(id, method, Some(params))).to_vec();
        if !sink.send(message).await {
            lock(&self.pending).remove(&id);
            return Err(Fault::internal(format!(
                "cannot send {method} to the client: the response stream is closed"
            )));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(Fault::internal(format!(
                "the session ended before the client answered {method}"
            ))),
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(Fault::internal(format!(
                    "the client did not answer {method} within {} s",
                    timeout.as_secs()
                )))
            }
        }
    }

    /// Hands a client's response to the request waiting for it; `false` if
    /// nothing waits for that id.
    pub(crate) fn resolve(&self, response: Response) -> bool {
        let Some(RequestId::Number(id)) = response.id else {
            return false;
        };
        match lock(&self.pending).remove(&id) {
            Some(tx) => tx.send(response.outcome).is_ok(),
            None => false,
        }
    }
}

/// The sessions of an HTTP server (stdio has one implicit session).
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    pub(crate) fn new() -> Self {
        Sessions {
            map: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let map = lock(&self.map);
        let s = map.get(id)?;
        let fresh = lock(&s.last_used).elapsed() < IDLE_TTL;
        fresh.then(|| Arc::clone(s))
    }

    pub(crate) fn insert(&self, session: Arc<Session>) {
        let mut map = lock(&self.map);
        if map.len() >= MAX_SESSIONS {
            map.retain(|_, s| lock(&s.last_used).elapsed() < IDLE_TTL);
        }
        if map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, s)| *lock(&s.last_used))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                map.remove(&k);
            }
        }
        map.insert(session.id.clone(), session);
    }

    pub(crate) fn remove(&self, id: &str) -> bool {
        lock(&self.map).remove(id).is_some()
    }
}

impl Server {
    /// Handles a legacy `initialize`: negotiates the version and opens a
    /// session for `principal` (its owner is the principal's subject, when
    /// authenticated). Returns the session and the result object.
    pub(crate) fn initialize(
        &self,
        params: Option<&Value>,
        principal: Option<&crate::Principal>,
    ) -> Result<(Arc<Session>, Vec<u8>), Fault> {
        let owner = principal.map(|p| p.subject.clone());
        let p = params
            .and_then(Value::as_object)
            .ok_or_else(|| Fault::invalid_params("initialize needs params"))?;
        let requested = p
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Fault::invalid_params("initialize params need a protocolVersion string")
            })?;
        let capabilities = match p.get("capabilities") {
            None => ClientCapabilities::default(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| Fault::invalid_params(format!("invalid capabilities: {e}")))?,
        };
        let client_info = p
            .get("clientInfo")
            .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok());
        let negotiated = if version::LEGACY_ACCEPTED.contains(&requested) {
            requested
        } else {
            version::LEGACY
        };
        let random = seal::encode(&self.inner.keys.random()[..24]);
        // `REPLICA.RANDOM` among replicas: a peer sends the session's
        // requests on to this one.
        let id = match self.inner.tasks.origin() {
            Some(origin) => format!("{origin}.{random}"),
            None => random,
        };
        let session = Arc::new(Session {
            id,
            owner,
            version: negotiated.to_owned(),
            capabilities,
            client_info,
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            last_used: Mutex::new(Instant::now()),
        });
        let result = InitializeResult {
            protocol_version: negotiated.to_owned(),
            capabilities: self.legacy_capabilities(),
            server_info: self.inner.info.clone(),
            instructions: self.instructions_now(principal),
            extra: Map::new(),
        };
        let bytes = serde_json::to_vec(&result).unwrap_or_else(|_| b"{}".to_vec());
        Ok((session, bytes))
    }

    /// The capabilities as a legacy client understands them: `logging` is
    /// always there (legacy clients call `logging/setLevel` freely).
    fn legacy_capabilities(&self) -> switchboard_wire::ServerCapabilities {
        let mut caps = self.inner.capabilities.clone();
        caps.logging.get_or_insert_with(Map::new);
        caps.extensions = None;
        caps
    }

    /// The error a modern-only path gives `initialize` (VER-08): it names
    /// the versions this server speaks.
    pub(crate) fn initialize_not_supported(&self) -> Fault {
        let mut supported: Vec<&str> = version::MODERN_SUPPORTED.to_vec();
        if self.inner.options.legacy {
            supported.extend_from_slice(version::LEGACY_ACCEPTED);
        }
        let mut f = Fault::method_not_found("initialize");
        f.error.message = format!(
            "initialize is not part of protocol {}; send requests with per-request _meta instead (this server supports: {})",
            version::LATEST,
            supported.join(", ")
        );
        f.error.data = Some(json!({ "supported": supported }));
        f
    }
}
