//! The [`Client`]: one MCP server, reached through one [`Transport`].
//!
//! Everything that is the same for every transport lives here, once:
//! ids, `_meta` on every request, timeouts and cancellation, the era probe
//! and the legacy fallback (`era`), `resultType` checks, the MRTR retry
//! loop (`mrtr`), pagination, and the answers to legacy server requests.
//!
//! # Layout
//! - this file: the client, its shared state and accessors;
//! - `builder`: [`ClientBuilder`] and the connection (the era probe);
//! - `methods`: the typed API, one method per MCP request;
//! - `send`: the path every request takes (ids, `_meta`, headers, the
//!   narrowed capabilities, notification sinks, pagination);
//! - `incoming`: what the server sends unasked (notifications, a legacy
//!   server's requests);
//! - `era`, `mrtr`, `calls`: the era probe and legacy fallback, the MRTR
//!   retry loop, calls tied to their server requests.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use switchboard_wire::header::{HeaderParam, encode_value, header_params};
use switchboard_wire::meta::{
    CLIENT_CAPABILITIES, CLIENT_INFO, IDEMPOTENCY_KEY, LOG_LEVEL, PROGRESS_TOKEN,
};
use switchboard_wire::meta::{PROTOCOL_VERSION, SERVER_INFO, TRACEPARENT, TRACESTATE};
use switchboard_wire::shared::lock;
use switchboard_wire::types::{
    CacheHints, CompleteResult, GetPromptResult, InputRequiredResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, ResultHeader, ResultType, SubscriptionFilter,
    Tool, method,
};
use switchboard_wire::{
    CallToolResult, ClientCapabilities, Era, ErrorCode, ErrorObject, Implementation, Notification,
    Request, RequestId, Response, ServerCapabilities, SharedMeta,
    types::{DiscoverResult, InitializeResult, ProgressParams},
    version,
};
use tracing::{debug, warn};

use crate::error::{ClientError, TransportError};
use crate::input::{InputAnswer, InputContext, InputHandler, InputQuestion, NoInput};
use crate::options::{ClientConfig, EraPolicy, RequestOptions};
use crate::subscription::Subscription;
use crate::transport::{
    BoxFuture, EventSink, Incoming, NotificationSink, Outgoing, ToolAnswer, Transport,
};

mod builder;
mod calls;
mod era;
mod incoming;
mod methods;
mod mrtr;
mod send;
pub(crate) mod skills;

use incoming::{event_sink, log_notification};

/// A map by tool name, looked up on every call: foldhash, several times
/// cheaper than SipHash for short names, in its `quality` flavour since
/// the names are the server's, which may choose them to collide.
type ToolMap<V> = HashMap<String, V, foldhash::quality::RandomState>;

/// A connection to one MCP server.
///
/// Cheap to clone; clones share the connection. Built with
/// [`Client::builder`], which probes the server's era before returning.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use switchboard_client::{Client, StdioConfig, StdioTransport};
///
/// let transport = StdioTransport::spawn(StdioConfig::new("notes", "notes-server")).await?;
/// let client = Client::builder("notes", transport).connect().await?;
/// let tools = client.list_all_tools().await?;
/// let result = client.call_tool(&tools.items[0].name, None).await?;
/// println!("{} (tool error: {})", result.joined_text(), result.is_error());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

/// Builds a [`Client`].
pub struct ClientBuilder {
    name: String,
    transport: Arc<dyn Transport>,
    config: ClientConfig,
    handler: Arc<dyn InputHandler>,
    on_notification: Option<NotificationSink>,
}

/// The items of every page of a listing, with what the pages said about
/// caching.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing<T> {
    /// Every item, in server order.
    pub items: Vec<T>,
    /// The shortest `ttlMs` of the pages (absent if any page lacked one) and
    /// the first page's `cacheScope` (the same on every page; CACHE-08).
    pub cache: CacheHints,
    /// How many pages were fetched.
    pub pages: usize,
    /// Items the client left out, and why (tools with invalid
    /// `x-mcp-header` annotations; HTTP-C-12).
    pub dropped: Vec<Dropped>,
}

/// An item a listing left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// Its name on the server.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// One page of `tools/list`, with the tools the client left out of it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolsPage {
    /// The page, without the dropped tools.
    pub page: ListToolsResult,
    /// Tools left out, and why.
    pub dropped: Vec<Dropped>,
}

/// What the client learned about the server when it connected.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerDescription {
    /// The server's era.
    pub era: Era,
    /// The protocol version spoken to it.
    pub protocol_version: String,
    /// Its capabilities.
    pub capabilities: ServerCapabilities,
    /// Who it says it is (self-asserted; WIRE-18).
    pub server_info: Option<Implementation>,
    /// Its instructions for the model.
    pub instructions: Option<String>,
}

struct Inner {
    /// The server's name (alias), for errors and logs.
    name: String,
    transport: Arc<dyn Transport>,
    config: ClientConfig,
    handler: Arc<dyn InputHandler>,
    /// Capabilities derived from the handler, declared on every request.
    capabilities: ClientCapabilities,
    on_notification: Option<NotificationSink>,
    next_id: AtomicI64,
    /// The era and version in force, and the `_meta` every request carries.
    session: RwLock<Arc<Session>>,
    /// What the server said when the client connected.
    description: RwLock<Option<ServerDescription>>,
    /// `x-mcp-header` parameters of the tools last listed, by tool name;
    /// only kept when the transport mirrors them into headers.
    header_params: Mutex<ToolMap<Vec<HeaderParam>>>,
    /// `tasks/cancel` requests in flight for abandoned tasks.
    cancels: crate::task::Cancels,
    /// `execution.taskSupport` of the tools last listed (2025-11-25 tasks),
    /// by tool name; kept only when the client follows tasks.
    task_support: Mutex<ToolMap<String>>,
    /// Whether the session is legacy (2025-11-25): only then are requests
    /// in flight tracked, to tie the server's requests to a call.
    legacy: AtomicBool,
    /// The requests in flight on a legacy session.
    in_flight: calls::InFlight,
    /// The last narrowed `_meta` ([`Client::narrowed_base`]): the session's
    /// `_meta` it was made from, the capabilities it was narrowed to, and
    /// the result. A gateway's callers mostly declare the same.
    narrowed: Mutex<Option<Narrowed>>,
}

/// One narrowed session `_meta`, kept for the next request like it
/// (`None`: the caller's capabilities narrow nothing).
struct Narrowed {
    base: Arc<SharedMeta>,
    caller: ClientCapabilities,
    meta: Option<Arc<SharedMeta>>,
}

/// A request's answer: the result's JSON, or a complete tool result the
/// transport read straight into its type.
pub(crate) enum Answered {
    Value(Value),
    Complete(CallToolResult),
}

impl Answered {
    /// The result's JSON (a typed result converted back).
    fn into_value(self) -> Value {
        match self {
            Answered::Value(value) => value,
            Answered::Complete(result) => crate::transport::result_value(result),
        }
    }
}

/// The wire in force.
#[derive(Clone)]
struct Session {
    era: Era,
    version: String,
    /// `_meta` keys every request carries (modern: version, capabilities,
    /// client info; legacy: none), built once and shared by every request
    /// ([`Request::with_shared_meta`]), never copied.
    base_meta: Arc<SharedMeta>,
}

impl Client {
    /// Starts building a client for the server called `name` (its alias)
    /// reached through `transport`.
    pub fn builder(name: impl Into<String>, transport: impl Transport + 'static) -> ClientBuilder {
        ClientBuilder::from_arc(name, Arc::new(transport))
    }

    /// The server's name (alias).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The era of the server, as found when connecting (VER-07).
    pub fn era(&self) -> Era {
        self.session().era
    }

    /// The protocol version spoken to the server.
    pub fn protocol_version(&self) -> String {
        self.session().version.clone()
    }

    /// What the server said about itself when the client connected.
    pub fn server(&self) -> Option<ServerDescription> {
        self.inner
            .description
            .read()
            .ok()
            .and_then(|d| d.as_ref().cloned())
    }

    /// The capabilities this client declares on every request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The transport underneath.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.inner.transport
    }

    /// Closes the connection (stdio: close stdin, wait, SIGTERM, SIGKILL).
    /// Pending requests fail with a closed error.
    pub async fn close(&self) {
        // Cancels of abandoned tasks go out before the connection closes.
        self.inner.cancels.finish().await;
        self.inner.transport.close().await;
    }

    pub(crate) fn cancels(&self) -> &crate::task::Cancels {
        &self.inner.cancels
    }

    /// The `execution.taskSupport` of a listed tool (2025-11-25 tasks).
    pub(crate) fn task_support(&self, tool: &str) -> Option<String> {
        lock(&self.inner.task_support).get(tool).cloned()
    }

    fn session(&self) -> Arc<Session> {
        match self.inner.session.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_session(&self, session: Session) {
        self.inner
            .legacy
            .store(session.era == Era::Legacy, Ordering::Relaxed);
        let session = Arc::new(session);
        match self.inner.session.write() {
            Ok(mut s) => *s = session,
            Err(poisoned) => *poisoned.into_inner() = session,
        }
    }

    fn lock_headers(&self) -> std::sync::MutexGuard<'_, ToolMap<Vec<HeaderParam>>> {
        match self.inner.header_params.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn server_name(&self) -> &str {
        &self.inner.name
    }

    pub(crate) fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    pub(crate) fn invalid(&self, method: &str, reason: impl Into<String>) -> ClientError {
        ClientError::InvalidResult {
            server: self.inner.name.clone(),
            method: method.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.inner.name)
            .field("era", &self.era())
            .field("transport", &self.inner.transport)
            .finish_non_exhaustive()
    }
}

/// Helpers the subscription module shares.
pub(crate) fn transport_of(client: &Client) -> Arc<dyn Transport> {
    client.inner.transport.clone()
}

/// A closed-transport error naming this client's server.
pub(crate) fn closed(client: &Client, cause: impl Into<String>) -> ClientError {
    ClientError::Transport(TransportError::Closed {
        server: client.inner.name.clone(),
        cause: cause.into(),
        source: None,
    })
}
