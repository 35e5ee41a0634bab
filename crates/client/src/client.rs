//! The [`Client`]: one MCP server, reached through one [`Transport`].
//!
//! Everything that is the same for every transport lives here, once:
//! ids, `_meta` on every request, timeouts and cancellation, the era probe
//! and the legacy fallback (`era`), `resultType` checks, the MRTR retry
//! loop (`mrtr`), pagination, and the answers to legacy server requests.
//! The typed requests of resources (`resources`) and of prompts and
//! completion (`prompts`), and the [`ClientBuilder`] (`builder`), have
//! files of their own.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use switchboard_wire::header::{HeaderParam, encode_value, header_params};
use switchboard_wire::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROGRESS_TOKEN};
use switchboard_wire::meta::{PROTOCOL_VERSION, SERVER_INFO, TRACEPARENT, TRACESTATE};
use switchboard_wire::types::{
    CacheHints, ContentBlock, InputRequiredResult, JsonObject, ListToolsResult, ResultHeader,
    ResultType, SubscriptionFilter, Tool, method,
};
use switchboard_wire::{
    CallToolResult, ClientCapabilities, DiscoverResult, Era, ErrorCode, ErrorObject,
    Implementation, InitializeResult, Notification, ProgressParams, Request, RequestId, Response,
    ServerCapabilities, version,
};
use tracing::{debug, warn};

use crate::error::{ClientError, TransportError};
use crate::input::{self, InputContext, InputHandler, InputQuestion};
use crate::options::{ClientConfig, EraPolicy, RequestOptions};
use crate::subscription::Subscription;
use crate::transport::{EventSink, Incoming, NotificationSink, Outgoing, Transport};

mod builder;
mod calls;
mod era;
mod mrtr;
mod prompts;
mod resources;

pub use builder::ClientBuilder;

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
    header_params: Mutex<HashMap<String, Vec<HeaderParam>>>,
    /// `tasks/cancel` requests in flight for abandoned tasks.
    cancels: crate::task::Cancels,
    /// `execution.taskSupport` of the tools last listed (2025-11-25 tasks),
    /// by tool name; kept only when the client follows tasks.
    task_support: Mutex<HashMap<String, String>>,
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
    base: Arc<JsonObject>,
    caller: ClientCapabilities,
    meta: Option<Arc<JsonObject>>,
}

/// The wire in force.
#[derive(Clone)]
struct Session {
    era: Era,
    version: String,
    /// `_meta` keys every request carries (modern: version, capabilities,
    /// client info; legacy: none), built once and shared by every request
    /// ([`Request::with_shared_meta`]), never copied.
    base_meta: Arc<JsonObject>,
}

impl Client {
    /// Starts building a client for the server called `name` (its alias)
    /// reached through `transport`.
    pub fn builder(name: impl Into<String>, transport: impl Transport + 'static) -> ClientBuilder {
        ClientBuilder::from_arc(name, Arc::new(transport))
    }

    /// A client of `transport`, its events routed to it, before the era
    /// probe or handshake ([`ClientBuilder::connect`] makes it, then
    /// connects it).
    fn unconnected(
        name: String,
        transport: Arc<dyn Transport>,
        config: ClientConfig,
        handler: Arc<dyn InputHandler>,
        on_notification: Option<NotificationSink>,
    ) -> Client {
        let mut capabilities = handler.support().capabilities();
        if config.tasks {
            crate::task::declare(&mut capabilities);
        }
        let inner = Arc::new(Inner {
            name,
            transport,
            config,
            handler,
            capabilities,
            on_notification,
            next_id: AtomicI64::new(1),
            session: RwLock::new(Arc::new(Session {
                era: Era::Modern,
                version: version::LATEST.to_owned(),
                base_meta: Arc::default(),
            })),
            description: RwLock::new(None),
            header_params: Mutex::new(HashMap::new()),
            task_support: Mutex::new(HashMap::new()),
            cancels: crate::task::Cancels::default(),
            legacy: AtomicBool::new(false),
            in_flight: calls::InFlight::default(),
            narrowed: Mutex::new(None),
        });
        inner
            .transport
            .set_events(event_sink(Arc::downgrade(&inner)));
        Client { inner }
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

    /// Fetches `server/discover` again (modern), or describes the legacy
    /// session as a `DiscoverResult` (its negotiated version, capabilities
    /// and instructions).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn discover(&self) -> Result<DiscoverResult, ClientError> {
        if self.era() == Era::Legacy {
            let d = self
                .server()
                .ok_or_else(|| self.invalid("initialize", "no session"))?;
            return Ok(DiscoverResult {
                supported_versions: vec![d.protocol_version],
                capabilities: d.capabilities,
                instructions: d.instructions,
                cache: CacheHints::default(),
                header: ResultHeader::default(),
            });
        }
        let result: DiscoverResult = self
            .typed(
                method::DISCOVER,
                JsonObject::new(),
                &RequestOptions::default(),
            )
            .await?;
        self.remember_discover(&result);
        Ok(result)
    }

    /// Checks the server is alive: `ping` for a legacy server,
    /// `server/discover` for a modern one (which has no ping).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn ping(&self) -> Result<(), ClientError> {
        match self.era() {
            Era::Legacy => self
                .send(method::PING, None, &RequestOptions::default())
                .await
                .map(drop),
            Era::Modern => self.discover().await.map(drop),
        }
    }

    /// One page of `tools/list`. `cursor` is echoed unchanged (`""` is a
    /// cursor). When the transport mirrors `x-mcp-header` parameters, tools
    /// with invalid annotations are left out of the page and listed in
    /// [`ToolsPage::dropped`] with the reason (HTTP-C-12/13).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_tools(&self, cursor: Option<&str>) -> Result<ToolsPage, ClientError> {
        let mut page: ListToolsResult = self
            .typed(
                method::TOOLS_LIST,
                cursor_params(cursor),
                &RequestOptions::default(),
            )
            .await?;
        let mut dropped = Vec::new();
        let max = self.inner.config.max_tool_bytes;
        page.tools.retain(|tool| {
            let size = serde_json::to_vec(tool).map_or(usize::MAX, |v| v.len());
            if size <= max {
                return true;
            }
            warn!(server = %self.inner.name, tool = %tool.name, size, "dropping an oversized tool definition");
            dropped.push(Dropped {
                name: tool.name.clone(),
                reason: format!("its definition is {size} bytes, over the limit of {max}"),
            });
            false
        });
        if self.inner.config.tasks {
            let mut support = self
                .inner
                .task_support
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for tool in &page.tools {
                match crate::task::task_support_of(tool) {
                    Some(s) => support.insert(tool.name.clone(), s),
                    None => support.remove(&tool.name),
                };
            }
        }
        if self.inner.transport.mirrors_param_headers() {
            let mut table = self.lock_headers();
            page.tools.retain(|tool| match header_params(&tool.input_schema) {
                Ok(params) => {
                    table.insert(tool.name.clone(), params);
                    true
                }
                Err(e) => {
                    warn!(server = %self.inner.name, tool = %tool.name, error = %e, "dropping a tool with invalid x-mcp-header annotations");
                    table.remove(&tool.name);
                    dropped.push(Dropped {
                        name: tool.name.clone(),
                        reason: format!("invalid x-mcp-header annotation: {e}"),
                    });
                    false
                }
            });
        }
        Ok(ToolsPage { page, dropped })
    }

    /// Every tool, paging until `nextCursor` is absent; tools left out for
    /// invalid `x-mcp-header` annotations are in [`Listing::dropped`].
    ///
    /// # Errors
    /// [`ClientError::InvalidResult`] when the server repeats a cursor or
    /// the page limit is reached; otherwise as for any request.
    pub async fn list_all_tools(&self) -> Result<Listing<Tool>, ClientError> {
        self.list_all(method::TOOLS_LIST, |c| async move {
            let ToolsPage { page, dropped } = self.list_tools(c.as_deref()).await?;
            Ok((page.tools, page.next_cursor, page.cache, dropped))
        })
        .await
    }

    /// Calls a tool by its name on this server. A tool that ran and failed
    /// is `Ok` with `isError: true` (DESIGN item 10); `input_required` is
    /// never returned: the client answers through its [`InputHandler`] and
    /// retries (MRTR).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// [`Client::call_tool`] with options (timeout, progress, …).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let legacy_task = self.legacy_task_wanted(name, false);
        let value = self
            .call_tool_value(name, arguments, options, legacy_task)
            .await?;
        // A task handle (the tasks extension, or a 2025-11-25 task asked
        // for) is driven to its end here.
        let value = if ResultType::of(&value).is_task()
            || (legacy_task && crate::task::is_create_task_result(&value))
        {
            // Boxed: the task path is rare, and its state would otherwise
            // make every call's future (moved as a whole) twice as large.
            Box::pin(self.drive_task_value(value, options)).await?
        } else {
            value
        };
        call_tool_result(value).map_err(|reason| self.invalid(method::TOOLS_CALL, reason))
    }

    /// The raw answer of a `tools/call`: a complete result or a task handle.
    pub(crate) async fn call_tool_value(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
        legacy_task: bool,
    ) -> Result<Value, ClientError> {
        let headers = self.param_headers(name, arguments.as_ref())?;
        // Room for `_meta` and the MRTR members without growing.
        let mut params = JsonObject::with_capacity(5);
        params.insert("name".into(), Value::from(name));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        if legacy_task {
            params.insert("task".into(), self.legacy_task_param());
        }
        // Only a transport that mirrors headers can be refused for them, so
        // only it keeps a copy of the params for the retry.
        let kept = self
            .inner
            .transport
            .mirrors_param_headers()
            .then(|| params.clone());
        let value = match (
            self.request_inner(method::TOOLS_CALL, params, headers, options)
                .await,
            kept,
        ) {
            // --- HTTP: HeaderMismatch recovery (HTTP-C-14) ---
            // The server refused our Mcp-Param-* headers: the tool's schema
            // may have changed. Re-list the tools once and retry with fresh
            // headers; a second refusal is the caller's error (no loop).
            (Err(e), Some(params)) if e.code() == Some(ErrorCode::HeaderMismatch.code()) => {
                warn!(server = %self.inner.name, tool = %name, error = %e, "header mismatch; re-listing tools and retrying once");
                self.list_all_tools().await?;
                let arguments = params.get("arguments").and_then(Value::as_object);
                let headers = self.param_headers(name, arguments)?;
                self.request_inner(method::TOOLS_CALL, params, headers, options)
                    .await?
            }
            // --- end HTTP ---
            (other, _) => other?,
        };
        Ok(value)
    }

    /// Opens a `subscriptions/listen` stream and waits for its
    /// acknowledgement (within the default timeout). Dropping the
    /// [`Subscription`] cancels it.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] for a legacy server; otherwise as for
    /// any request.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        if self.era() == Era::Legacy {
            return Err(ClientError::Unsupported {
                server: self.inner.name.clone(),
                method: method::SUBSCRIPTIONS_LISTEN.into(),
                what: "subscriptions/listen (a legacy server has no listen streams)".into(),
            });
        }
        let mut params = JsonObject::new();
        params.insert(
            "notifications".into(),
            serde_json::to_value(&filter).unwrap_or_else(|_| json!({})),
        );
        let id = self.next_id();
        Subscription::open(self.clone(), id, params, self.inner.config.timeout).await
    }

    /// Sends any request and returns its complete result: `_meta`, timeout,
    /// `resultType` checks and (for tools/call, resources/read, prompts/get)
    /// the MRTR loop apply. For methods the typed calls do not cover.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn request(
        &self,
        method: &str,
        params: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        self.request_inner(method, params.unwrap_or_default(), Vec::new(), options)
            .await
    }

    /// Sends a notification.
    ///
    /// # Errors
    /// [`ClientError::Transport`] when it cannot be sent.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        self.inner
            .transport
            .notify(Notification::new(method, params))
            .await
            .map_err(ClientError::from)
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
        self.inner
            .task_support
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(tool)
            .cloned()
    }

    // ---- internals -------------------------------------------------------

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

    fn lock_headers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<HeaderParam>>> {
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

    /// `Mcp-Param-*` headers for a tool call, when the transport sends them.
    fn param_headers(
        &self,
        tool: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<Vec<(String, String)>, ClientError> {
        if !self.inner.transport.mirrors_param_headers() {
            return Ok(Vec::new());
        }
        let table = self.lock_headers();
        let Some(params) = table.get(tool) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(params.len());
        for p in params {
            match p.value(arguments) {
                Ok(Some(v)) => out.push((p.header_name(), encode_value(&v).into_owned())),
                Ok(None) => {}
                Err(e) => {
                    return Err(ClientError::Unsupported {
                        server: self.inner.name.clone(),
                        method: method::TOOLS_CALL.into(),
                        what: format!("arguments that match the tool's schema ({e})"),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The request with its `_meta`: the session's keys (shared), then the
    /// call's.
    fn build_request(
        &self,
        session: &Session,
        id: RequestId,
        method: &str,
        mut params: JsonObject,
        options: &RequestOptions,
        progress: Option<&RequestId>,
    ) -> Request {
        // Only this request's keys go in `params._meta`: the session's are
        // shared with every request, and the call's keys
        // and the caller's own `_meta` never override them.
        let narrowed = self.narrowed_base(session, options);
        let base = narrowed.as_ref().unwrap_or(&session.base_meta);
        let mut meta = JsonObject::new();
        if let Some(extra) = &options.meta {
            for (k, v) in extra {
                if !base.contains_key(k) {
                    meta.entry(k.as_str()).or_insert_with(|| v.clone());
                }
            }
        }
        if let Some(Value::Object(caller)) = params.remove("_meta") {
            for (k, v) in caller {
                if !base.contains_key(&k) {
                    meta.entry(k).or_insert(v);
                }
            }
        }
        if session.era == Era::Modern {
            if let Some(level) = options.log_level.or(self.inner.config.log_level) {
                meta.insert(
                    LOG_LEVEL.into(),
                    serde_json::to_value(level).unwrap_or(Value::Null),
                );
            }
        }
        // A relayed round's answers; a later round of the client's own
        // MRTR loop carries its own instead. A 2025-11-25 server has no
        // such params.
        if let (Some(resume), Era::Modern) = (&options.resume, session.era) {
            if !params.contains_key("inputResponses") && !params.contains_key("requestState") {
                if let Some(responses) = &resume.input_responses {
                    params.insert("inputResponses".into(), Value::Object(responses.clone()));
                }
                if let Some(state) = &resume.request_state {
                    params.insert("requestState".into(), Value::from(state.as_str()));
                }
            }
        }
        if let Some(trace) = &options.trace {
            meta.insert(TRACEPARENT.into(), Value::from(trace.traceparent.as_str()));
            if let Some(state) = &trace.tracestate {
                meta.insert(TRACESTATE.into(), Value::from(state.as_str()));
            }
        }
        if let Some(token) = progress {
            meta.insert(PROGRESS_TOKEN.into(), token.to_value());
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let request = Request::new(id, method, Some(Value::Object(params)));
        if base.is_empty() {
            request
        } else {
            request.with_shared_meta(Arc::clone(base))
        }
    }

    /// The session's `_meta` declaring only the capabilities that
    /// [`RequestOptions::capabilities`] shares with the client's own;
    /// `None` when that is all of them (or the server is a legacy one).
    fn narrowed_base(
        &self,
        session: &Session,
        options: &RequestOptions,
    ) -> Option<Arc<JsonObject>> {
        let caller = options.capabilities.as_ref()?;
        if session.era != Era::Modern {
            return None;
        }
        let mut last = self
            .inner
            .narrowed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = last.as_ref() {
            if Arc::ptr_eq(&n.base, &session.base_meta) && n.caller == *caller {
                return n.meta.clone();
            }
        }
        let narrowed = self.inner.capabilities.narrowed_to(caller);
        let meta = (narrowed != self.inner.capabilities).then(|| {
            let mut base = (*session.base_meta).clone();
            base.insert(
                CLIENT_CAPABILITIES.into(),
                serde_json::to_value(&narrowed)
                    .unwrap_or_else(|_| Value::Object(JsonObject::new())),
            );
            Arc::new(base)
        });
        *last = Some(Narrowed {
            base: Arc::clone(&session.base_meta),
            caller: caller.clone(),
            meta: meta.clone(),
        });
        meta
    }

    /// One request, one response: the raw result value, or the error.
    async fn send(
        &self,
        method: &str,
        params: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let outgoing = self.prepare(method, params.unwrap_or_default(), Vec::new(), options);
        self.send_prepared(method, outgoing, options).await
    }

    /// Sends a prepared request under the call's timeout.
    async fn send_prepared(
        &self,
        method: &str,
        outgoing: Outgoing,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let timeout = options.timeout.unwrap_or(self.inner.config.timeout);
        // On a legacy session the request counts as in flight, so that the
        // server's questions can be tied to it.
        let _in_flight = self.inner.legacy.load(Ordering::Relaxed).then(|| {
            self.inner
                .in_flight
                .enter(method, options.call_input.clone())
        });
        // Dropping the transport's future on expiry is what cancels the
        // request (notifications/cancelled on stdio, stream close on HTTP).
        let response = tokio::time::timeout(timeout, self.inner.transport.request(outgoing))
            .await
            .map_err(|_| ClientError::Timeout {
                server: self.inner.name.clone(),
                method: method.into(),
                after: timeout,
            })??;
        self.outcome(method, response)
    }

    /// Builds one request: a fresh id, `_meta`, the notification sink.
    /// Kept out of `send_prepared` so its future stays small.
    fn prepare(
        &self,
        method: &str,
        params: JsonObject,
        param_headers: Vec<(String, String)>,
        options: &RequestOptions,
    ) -> Outgoing {
        let session = self.session();
        let id = self.next_id();
        let progress = options.on_progress.as_ref().map(|_| id.clone());
        let request = self.build_request(&session, id, method, params, options, progress.as_ref());
        Outgoing {
            request: Arc::new(request),
            param_headers,
            sink: self.request_sink(options),
        }
    }

    pub(crate) fn outcome(&self, method: &str, response: Response) -> Result<Value, ClientError> {
        response.outcome.map_err(|error| ClientError::Protocol {
            server: self.inner.name.clone(),
            method: method.into(),
            error,
        })
    }

    /// The sink for one request's notifications, when the caller wants them.
    fn request_sink(&self, options: &RequestOptions) -> Option<NotificationSink> {
        if options.on_progress.is_none() && options.on_notification.is_none() {
            return None;
        }
        let progress = options.on_progress.clone();
        let other = options.on_notification.clone();
        let general = self.inner.on_notification.clone();
        let server = self.inner.name.clone();
        Some(Arc::new(move |n: Notification| {
            if n.method == method::PROGRESS {
                if let Some(progress) = &progress {
                    match n.params.map(serde_json::from_value::<ProgressParams>) {
                        Some(Ok(p)) => progress(p),
                        _ => debug!(server = %server, "malformed progress notification dropped"),
                    }
                    return;
                }
            }
            match (&other, &general) {
                (Some(sink), _) | (None, Some(sink)) => sink(n),
                (None, None) => log_notification(&server, &n),
            }
        }))
    }

    /// A request whose complete result parses as `T`.
    async fn typed<T: DeserializeOwned>(
        &self,
        method: &str,
        params: JsonObject,
        options: &RequestOptions,
    ) -> Result<T, ClientError> {
        let value = self
            .request_inner(method, params, Vec::new(), options)
            .await?;
        self.parse(method, value)
    }

    fn parse<T: DeserializeOwned>(&self, method: &str, value: Value) -> Result<T, ClientError> {
        serde_json::from_value(value).map_err(|e| self.invalid(method, e.to_string()))
    }

    /// Pages through a listing until `nextCursor` is absent, refusing a
    /// repeated cursor and stopping at the page limit (PAGE-01…04).
    async fn list_all<T, F, Fut>(
        &self,
        method: &str,
        mut page: F,
    ) -> Result<Listing<T>, ClientError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<
            Output = Result<(Vec<T>, Option<String>, CacheHints, Vec<Dropped>), ClientError>,
        >,
    {
        let mut items = Vec::new();
        let mut dropped = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut cache: Option<CacheHints> = None;
        let mut pages = 0;
        loop {
            if pages == self.inner.config.max_pages {
                return Err(
                    self.invalid(method, format!("listing did not end after {pages} pages"))
                );
            }
            let (mut batch, next, hints, mut left_out) = page(cursor.take()).await?;
            pages += 1;
            items.append(&mut batch);
            let max_items = self.inner.config.max_items;
            if items.len() > max_items {
                return Err(self.invalid(
                    method,
                    format!("the listing has more than {max_items} items"),
                ));
            }
            dropped.append(&mut left_out);
            cache = Some(match cache {
                None => hints,
                Some(c) => CacheHints {
                    ttl_ms: match (c.ttl_ms, hints.ttl_ms) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        _ => None,
                    },
                    cache_scope: c.cache_scope,
                },
            });
            match next {
                None => break,
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(self.invalid(
                            method,
                            format!(
                                "the server repeated cursor {next:?}; the listing would never end"
                            ),
                        ));
                    }
                    cursor = Some(next);
                }
            }
        }
        Ok(Listing {
            items,
            cache: cache.unwrap_or_default(),
            pages,
            dropped,
        })
    }

    /// Builds the `params` of a request the way `send` does, for callers in
    /// this crate that drive the transport themselves (listen).
    pub(crate) fn outgoing(
        &self,
        id: RequestId,
        method: &str,
        params: JsonObject,
        sink: NotificationSink,
    ) -> Outgoing {
        let session = self.session();
        let request = self.build_request(
            &session,
            id,
            method,
            params,
            &RequestOptions::default(),
            None,
        );
        Outgoing {
            request: Arc::new(request),
            param_headers: Vec::new(),
            sink: Some(sink),
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

/// Reads a `CallToolResult` straight from its JSON object.
///
/// The same result `serde_json::from_value` gives (a test checks it), without
/// the buffering serde's `flatten` does: a tool call is the hot path.
pub(crate) fn call_tool_result(value: Value) -> Result<CallToolResult, String> {
    let Value::Object(mut obj) = value else {
        return Err("a tool result must be a JSON object".into());
    };
    let content = match obj.remove("content") {
        None => Vec::new(),
        Some(Value::Array(blocks)) => blocks
            .into_iter()
            .map(|b| match b {
                Value::Object(o) => Ok(ContentBlock::from_object(o)),
                _ => Err("a content block must be an object".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("content must be an array".into()),
    };
    let structured_content = obj.remove("structuredContent");
    let is_error = match obj.remove("isError") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(b),
        Some(_) => return Err("isError must be a boolean".into()),
    };
    let result_type = match obj.remove("resultType") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(ResultType::from(s.as_str())),
        Some(_) => return Err("resultType must be a string".into()),
    };
    let meta = match obj.remove("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err("_meta must be an object".into()),
    };
    Ok(CallToolResult {
        content,
        structured_content,
        is_error,
        header: ResultHeader {
            result_type,
            meta,
            extra: obj,
        },
    })
}

fn cursor_params(cursor: Option<&str>) -> JsonObject {
    let mut params = JsonObject::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), Value::from(cursor));
    }
    params
}

/// The transport's sink for messages no request claimed. It holds the
/// client weakly: the transport must not keep its own client alive.
fn event_sink(inner: Weak<Inner>) -> EventSink {
    Arc::new(move |incoming| {
        let Some(inner) = inner.upgrade() else { return };
        match incoming {
            Incoming::Notification(n) => match &inner.on_notification {
                Some(sink) => sink(n),
                None => log_notification(&inner.name, &n),
            },
            Incoming::Request(request) => {
                // Tied to a call here, on the reader, before a later request
                // can make it ambiguous.
                let call = inner.in_flight.sole_handler();
                let client = Client { inner };
                // The handler may take long (a user answering a form): answer
                // on a task of its own, never on the transport's reader.
                tokio::spawn(async move { client.answer_server_request(request, call).await });
            }
        }
    })
}

impl Client {
    /// Answers a request a legacy server sent (sampling, elicitation, roots,
    /// ping) through the same [`InputHandler`], or through the handler of
    /// the call it was tied to (`call`: that call's method and
    /// [`RequestOptions::call_input`]), within what the client declared. A
    /// modern server must not send requests (WIRE-13) and the client must
    /// not answer one on stdio (STDIO-04), so those are logged and dropped.
    async fn answer_server_request(&self, request: Request, call: Option<calls::TiedCall>) {
        let name = &self.inner.name;
        if self.era() == Era::Modern {
            warn!(server = %name, method = %request.method, "a modern server sent a request; ignored");
            return;
        }
        let support = self.inner.handler.support();
        let outcome = match request.method.as_str() {
            method::PING => Ok(json!({})),
            m if support.covers(m, request.params.as_ref()) => {
                let (method, handler) = match call {
                    Some((method, handler)) => (Some(method), handler),
                    None => (None, Arc::clone(&self.inner.handler)),
                };
                let cx = InputContext {
                    server: name.clone(),
                    method,
                    era: Era::Legacy,
                };
                input::answer(&*handler, cx, m, request.params)
                    .await
                    .map_err(|e| ErrorObject::new(ErrorCode::InternalError, e.0))
            }
            m => Err(ErrorObject::new(
                ErrorCode::MethodNotFound,
                format!("this client does not support {m}"),
            )),
        };
        let response = match outcome {
            Ok(result) => Response::result(request.id, result),
            Err(error) => Response::error(Some(request.id), error),
        };
        if let Err(e) = self.inner.transport.respond(response).await {
            debug!(server = %name, error = %e, "could not answer a server request");
        }
    }
}

/// Logs a notification nobody asked for: `notifications/message` at its
/// level, anything else at debug.
fn log_notification(server: &str, n: &Notification) {
    if n.method == method::MESSAGE {
        let params = n.params.as_ref();
        let level = params
            .and_then(|p| p.get("level"))
            .and_then(Value::as_str)
            .unwrap_or("info");
        let data = params
            .and_then(|p| p.get("data"))
            .cloned()
            .unwrap_or(Value::Null);
        match level {
            "debug" => debug!(server = %server, %data, "server log"),
            "info" | "notice" => tracing::info!(server = %server, %data, "server log"),
            "warning" => warn!(server = %server, %data, "server log"),
            _ => tracing::error!(server = %server, %data, "server log"),
        }
    } else {
        debug!(server = %server, method = %n.method, "notification without a listener");
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

#[cfg(test)]
mod tests {
    use super::*;

    // The hand-written reader agrees with serde on every shape.
    #[test]
    fn call_tool_result_reads_like_serde() {
        let cases = [
            json!({}),
            json!({"content": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}], "isError": true}),
            json!({"content": [{"type": "hologram", "x": 1}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
                   "structuredContent": [1, {"a": null}], "resultType": "complete",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}, "extra": {"k": 1}}),
            json!({"content": [], "isError": null, "_meta": null, "resultType": "task"}),
        ];
        for case in cases {
            let ours = call_tool_result(case.clone()).unwrap();
            let serde: CallToolResult = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(ours, serde, "{case}");
        }
        for bad in [
            json!([]),
            json!({"content": 1}),
            json!({"content": [1]}),
            json!({"isError": "yes"}),
        ] {
            assert!(call_tool_result(bad.clone()).is_err(), "{bad}");
            assert!(
                serde_json::from_value::<CallToolResult>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
