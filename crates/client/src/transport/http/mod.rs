//! Streamable HTTP: every message its own POST to the MCP endpoint, the
//! answer a JSON body or an SSE stream scoped to that request
//! (transports/streamable-http).
//!
//! [`HttpTransport`] speaks three wires, chosen per server:
//! - **modern** (2026-07-28): stateless POSTs with `MCP-Protocol-Version`,
//!   `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` mirroring the body;
//! - **legacy Streamable HTTP** (2025-11-25 and earlier): entered when the
//!   `Client` sends `initialize`; the `Mcp-Session-Id` the server assigns is
//!   sent on every later request and ended with a DELETE on close; a
//!   response stream that drops after an event id is resumed with GET and
//!   `Last-Event-ID`, as that revision says; server requests (sampling,
//!   elicitation) reach the `Client` through [`crate::Transport::set_events`];
//! - **HTTP+SSE** (2024-11-05, deprecated): when the `initialize` POST is
//!   refused with 400/404/405, a GET to the URL that yields an `endpoint`
//!   event; requests are POSTed there and answered on the GET stream.
//!
//! The wire a server spoke is remembered per endpoint for the life of the
//! process ([`remembered_era`]), so later transports to it skip the probe.
//!
//! Cancellation is dropping the request future: the response stream closes
//! and no `notifications/cancelled` is sent (CANC-03).

mod auth;
mod conn;
mod era;
mod failure;
// Public for the fuzz target (`switchboard-fuzzing`); not an API.
#[doc(hidden)]
pub mod h1;
mod legacy;
mod pool;
mod response;
mod sse_transport;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri};
use serde_json::Value;
use switchboard_wire::header as h;
use switchboard_wire::{Era, Message, Notification, Response, meta};

pub use auth::{
    AuthChallenge, AuthProvider, AuthProviderError, AuthRetry, MAX_AUTH_RETRIES,
    StaticAuthorization,
};
pub use era::{forget_era, remembered_era};

use self::conn::{Http, Limits, Outbound};
use self::era::WireKind;
use self::failure::Failure;
use self::legacy::LegacySession;
use self::response::{BodyKind, EventStream, Routing};
use self::sse_transport::SseSession;
use crate::error::TransportError;
use crate::transport::{BoxFuture, EventSink, Incoming, Outgoing, ToolAnswer, Transport};

/// Default bound on a JSON response body and on one SSE event: 16 MiB.
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;
/// Default bound on a response head (status line and headers): 64 KiB.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;

/// Default of [`HttpTransportBuilder::max_in_flight`].
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// The MCP header names, made once at compile time.
pub(crate) use h::names::{
    METHOD as MCP_METHOD, NAME as MCP_NAME, PROTOCOL_VERSION as MCP_PROTOCOL_VERSION,
    SESSION_ID as MCP_SESSION_ID,
};

/// Runs `$work` unless the transport is closed; a failure after `close`
/// (which aborts every connection, so in-flight exchanges end at once) is
/// reported as the close.
macro_rules! unless_closed {
    ($inner:expr, $work:expr) => {{
        let inner = $inner;
        let result = if inner.closed.load(Ordering::Acquire) {
            Err(Failure::Closed)
        } else {
            $work.await
        };
        result.map_err(|f| {
            if inner.closed.load(Ordering::Acquire) {
                Failure::Closed
            } else {
                f
            }
            .into_transport(&inner.server)
        })
    }};
}

/// Builds an [`HttpTransport`].
#[derive(Debug)]
pub struct HttpTransportBuilder {
    server: String,
    url: String,
    headers: Vec<(String, String)>,
    auth: Option<Arc<dyn AuthProvider>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    max_body: usize,
    max_header_bytes: usize,
    connect_timeout: Duration,
    drain_grace: Duration,
    remember_era: bool,
    max_in_flight: usize,
}

impl HttpTransportBuilder {
    /// Adds a header to every HTTP request, e.g. `Authorization: Bearer …`
    /// from configuration. The value is taken as given (variable expansion
    /// is the host's job). The protocol's own headers (`Content-Type`,
    /// `Accept`, `MCP-Protocol-Version`, `Mcp-*`) cannot be overridden.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Consults `provider` for the `Authorization` header of every request
    /// and on every 401/403 (the OAuth layer plugs in here).
    pub fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Uses this TLS configuration instead of the default (Mozilla and
    /// platform roots, ring).
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Bounds a JSON response body and a single SSE event (default
    /// [`DEFAULT_MAX_BODY`]).
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body = limit;
        self
    }

    /// Bounds the requests this transport has in flight at once, and so
    /// its connections (default [`DEFAULT_MAX_IN_FLIGHT`]); more wait for
    /// a slot, within their own timeout. An open `subscriptions/listen`
    /// stream holds a slot.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Bounds a response head (default [`DEFAULT_MAX_HEADER_BYTES`]; at
    /// least 8 KiB).
    pub fn max_header_bytes(mut self, limit: usize) -> Self {
        self.max_header_bytes = limit;
        self
    }

    /// Bounds the TCP and TLS connect (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a response stream is still read after its response, for
    /// notifications the server sends after it (default 2 s).
    pub fn drain_grace(mut self, grace: Duration) -> Self {
        self.drain_grace = grace;
        self
    }

    /// Whether the era found for this endpoint is remembered for later
    /// transports (default `true`).
    pub fn remember_era(mut self, remember: bool) -> Self {
        self.remember_era = remember;
        self
    }

    /// Builds the transport. No connection is made until the first request.
    ///
    /// # Errors
    /// [`TransportError::Spawn`] for a URL that is not `http`/`https` with
    /// a host, or a header that is not valid.
    pub fn build(self) -> Result<HttpTransport, TransportError> {
        let server = self.server;
        let bad = |cause: String| TransportError::spawn(server.clone(), cause, None);
        let endpoint: Uri = self
            .url
            .parse()
            .map_err(|e| bad(format!("invalid URL {:?}: {e}", self.url)))?;
        match endpoint.scheme_str() {
            Some("http" | "https") if endpoint.host().is_some() => {}
            _ => {
                return Err(bad(format!(
                    "URL {:?} is not an http:// or https:// URL with a host",
                    self.url
                )));
            }
        }
        let mut custom = HeaderMap::new();
        for (name, value) in self.headers {
            let header = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| bad(format!("{name:?} is not a valid header name")))?;
            if is_protocol_header(&header) {
                return Err(bad(format!(
                    "header {name:?} is set by the transport and cannot be configured"
                )));
            }
            let mut value = HeaderValue::from_str(value.trim())
                .map_err(|_| bad(format!("the value of header {name:?} is not valid")))?;
            if header == http::header::AUTHORIZATION || header == http::header::COOKIE {
                value.set_sensitive(true);
            }
            custom.append(header, value);
        }
        let limits = Limits {
            max_body: self.max_body,
            max_header_bytes: self.max_header_bytes,
            connect_timeout: self.connect_timeout,
        };
        let http = Http::new(&endpoint, self.tls, custom, self.auth, limits)
            .map_err(|f| f.into_transport(&server))?;
        let key = era::endpoint_key(&endpoint);
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                server,
                endpoint,
                key,
                http,
                drain_grace: self.drain_grace,
                remember: self.remember_era,
                wire: RwLock::new(Wire::Modern),
                events: Arc::new(RwLock::new(None)),
                closed: AtomicBool::new(false),
                remembered_modern: AtomicBool::new(false),
                in_flight: tokio::sync::Semaphore::new(self.max_in_flight),
            }),
        })
    }
}

/// The Streamable HTTP transport; see the [module docs](self).
///
/// Cheap to clone: clones share the connection pool and the session.
#[derive(Clone, Debug)]
pub struct HttpTransport {
    inner: Arc<Inner>,
}

struct Inner {
    /// The server's alias, for messages.
    server: String,
    /// The MCP endpoint.
    endpoint: Uri,
    /// The endpoint as the era memory knows it.
    key: String,
    http: Http,
    drain_grace: Duration,
    remember: bool,
    /// Which wire this transport speaks now.
    wire: RwLock<Wire>,
    /// Where messages that belong to no request go.
    events: Events,
    /// Set by `close`: new exchanges are refused, failed ones report it.
    closed: AtomicBool,
    /// Whether the era memory already knows this endpoint is modern.
    remembered_modern: AtomicBool,
    /// Slots for requests in flight (and so connections): 10,000 calls at
    /// once must not mean 10,000 connects at once.
    in_flight: tokio::sync::Semaphore,
}

impl Inner {
    /// GETs the endpoint for an event stream with `headers` (plus the
    /// `Accept` this needs). `what` says what the GET was for, in errors.
    async fn get_event_stream(
        &self,
        mut headers: HeaderMap,
        what: &str,
    ) -> Result<conn::HttpResponse, Failure> {
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let out = Outbound {
            method: Method::GET,
            uri: self.endpoint.clone(),
            headers,
            body: Bytes::new(),
            rpc_method: None,
        };
        let answer = self.http.send(out).await?;
        if !answer.status().is_success() {
            return Err(Failure::Protocol(format!(
                "GET {what} answered HTTP {}",
                answer.status().as_u16()
            )));
        }
        if response::body_kind(&answer)? != BodyKind::EventStream {
            return Err(Failure::Protocol(format!(
                "GET {what} did not answer with an event stream"
            )));
        }
        Ok(answer)
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("server", &self.server)
            .field("endpoint", &self.endpoint)
            .field("wire", &*read(&self.wire))
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

/// The shared slot holding the `Client`'s event sink.
pub(crate) type Events = Arc<RwLock<Option<EventSink>>>;

#[derive(Clone, Debug)]
enum Wire {
    /// 2026-07-28 (also before anything is known).
    Modern,
    /// 2025-11-25 Streamable HTTP, after `initialize`.
    Legacy(Arc<LegacySession>),
    /// 2024-11-05 HTTP+SSE.
    HttpSse(Arc<SseSession>),
}

impl HttpTransport {
    /// Starts building a transport to the MCP endpoint at `url`; `server`
    /// is the alias used in messages.
    pub fn builder(server: impl Into<String>, url: impl Into<String>) -> HttpTransportBuilder {
        HttpTransportBuilder {
            server: server.into(),
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            tls: None,
            max_body: DEFAULT_MAX_BODY,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            connect_timeout: Duration::from_secs(10),
            drain_grace: Duration::from_secs(2),
            remember_era: true,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }

    /// The MCP endpoint URL.
    pub fn url(&self) -> String {
        self.inner.endpoint.to_string()
    }

    /// The era this transport speaks now, or, before it has spoken, the era
    /// remembered for its endpoint (VER-07).
    pub fn era(&self) -> Option<Era> {
        match &*read(&self.inner.wire) {
            Wire::Legacy(_) | Wire::HttpSse(_) => Some(Era::Legacy),
            Wire::Modern => remembered_era(&self.url()),
        }
    }

    /// Whether the deprecated HTTP+SSE transport is in use.
    pub fn is_http_sse(&self) -> bool {
        matches!(&*read(&self.inner.wire), Wire::HttpSse(_))
    }

    /// The legacy session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        match &*read(&self.inner.wire) {
            Wire::Legacy(s) => s.session_id(),
            _ => None,
        }
    }
}

impl Transport for HttpTransport {
    fn request(&self, outgoing: Outgoing) -> BoxFuture<'_, Result<Response, TransportError>> {
        Box::pin(async move {
            let inner = &*self.inner;
            let _slot = inner.in_flight.acquire().await.ok();
            let id = outgoing.request.id.clone();
            let answer = unless_closed!(inner, inner.request(outgoing, false))?;
            Ok(answer.into_response(id))
        })
    }

    fn call_tool(&self, outgoing: Outgoing) -> BoxFuture<'_, Result<ToolAnswer, TransportError>> {
        Box::pin(async move {
            let inner = &*self.inner;
            let _slot = inner.in_flight.acquire().await.ok();
            unless_closed!(inner, inner.request(outgoing, true))
        })
    }

    fn notify(&self, notification: Notification) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let inner = &*self.inner;
            let message = Message::Notification(notification);
            unless_closed!(inner, inner.post_one_way(message))
        })
    }

    fn respond(&self, response: Response) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let inner = &*self.inner;
            let message = Message::Response(response);
            unless_closed!(inner, inner.post_one_way(message))
        })
    }

    fn set_events(&self, sink: EventSink) {
        *self.inner.events.write().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    fn mirrors_param_headers(&self) -> bool {
        true
    }

    fn era_hint(&self) -> Option<Era> {
        self.inner
            .remember
            .then(|| remembered_era(&self.url()))
            .flatten()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let inner = &self.inner;
            if inner.closed.swap(true, Ordering::AcqRel) {
                return;
            }
            // Every exchange in flight ends now, with the close as its cause.
            inner.http.abort_connections();
            let wire = std::mem::replace(
                &mut *inner.wire.write().unwrap_or_else(|e| e.into_inner()),
                Wire::Modern,
            );
            match wire {
                Wire::Legacy(session) => session.terminate(inner).await,
                Wire::HttpSse(session) => session.shut_down(),
                Wire::Modern => {}
            }
            inner.http.close();
        })
    }
}

impl Inner {
    fn wire(&self) -> Wire {
        read(&self.wire).clone()
    }

    fn set_wire(&self, wire: Wire) {
        *self.wire.write().unwrap_or_else(|e| e.into_inner()) = wire;
    }

    fn remember(&self, kind: WireKind) {
        if !self.remember {
            return;
        }
        // Every modern answer says "modern": note it once, not per request.
        if kind == WireKind::Modern && self.remembered_modern.swap(true, Ordering::Relaxed) {
            return;
        }
        era::remember(&self.key, kind);
    }

    /// One request on whichever wire the server speaks. `tool`: a
    /// `tools/call` whose complete result may be read straight into its
    /// type (modern JSON bodies only).
    async fn request(&self, outgoing: Outgoing, tool: bool) -> Result<ToolAnswer, Failure> {
        let is_initialize = outgoing.request.method == switchboard_wire::types::method::INITIALIZE;
        // Only the modern path lives in this future; the others are boxed,
        // so the hot path does not carry (and move) their state.
        let response = match (is_initialize, self.wire()) {
            (false, Wire::Modern) => return self.modern(outgoing, tool).await,
            (false, Wire::Legacy(session)) => Box::pin(session.request(self, outgoing)).await,
            (_, Wire::HttpSse(session)) if session.is_alive() => {
                Box::pin(session.request(self, outgoing)).await
            }
            (false, Wire::HttpSse(session)) => Err(session.dead_failure()),
            (true, _) => Box::pin(self.initialize(outgoing)).await,
        };
        response.map(ToolAnswer::Response)
    }

    /// One modern request: POST, then the JSON body or the event stream.
    async fn modern(&self, outgoing: Outgoing, tool: bool) -> Result<ToolAnswer, Failure> {
        let Outgoing {
            request,
            param_headers,
            sink,
            leave_out_meta,
        } = outgoing;
        let make = || self.modern_post(&request, &param_headers);
        let response = self.http.send_made(&make).await?;
        let routing = Routing {
            server: &self.server,
            sink: sink.as_ref(),
            on_request: None,
        };
        let status = response.status();
        if !status.is_success() {
            return response::error_status(response, Some(&request.id))
                .await
                .map(ToolAnswer::Response);
        }
        if status == http::StatusCode::ACCEPTED || status == http::StatusCode::NO_CONTENT {
            return Err(Failure::Protocol(format!(
                "HTTP {} to request {} ({}): a request needs a JSON or SSE response",
                status.as_u16(),
                request.id,
                request.method
            )));
        }
        let max = self.http.limits.max_body;
        let answer = match response::body_kind(&response)? {
            BodyKind::Json if tool => {
                response::read_json_tool(response, &request.id, max, &routing, leave_out_meta)
                    .await?
            }
            BodyKind::Json => ToolAnswer::Response(
                response::read_json(response, &request.id, max, &routing).await?,
            ),
            // Boxed: the stream reader's state is large, and a JSON answer
            // should not carry it.
            BodyKind::EventStream => {
                Box::pin(async {
                    let mut stream = EventStream::new(response.into_body(), max);
                    let answer = stream.response_for(&request.id, &routing).await?;
                    stream
                        .drain(self.server.clone(), sink.clone(), self.drain_grace)
                        .await;
                    Ok::<_, Failure>(ToolAnswer::Response(answer))
                })
                .await?
            }
        };
        self.remember(WireKind::Modern);
        Ok(answer)
    }

    /// The legacy handshake: `initialize` as a POST, and when that is
    /// refused the way an HTTP+SSE server refuses it, the GET probe.
    async fn initialize(&self, outgoing: Outgoing) -> Result<Response, Failure> {
        // A new handshake replaces whatever session there was.
        match self.wire() {
            Wire::Legacy(old) => old.terminate(self).await,
            Wire::HttpSse(old) => old.shut_down(),
            Wire::Modern => {}
        }
        self.set_wire(Wire::Modern);
        if era::remembered(&self.key) == Some(WireKind::HttpSse) {
            match self.open_http_sse().await {
                Ok(session) => return session.request(self, outgoing).await,
                Err(e) => {
                    tracing::info!(server = %self.server, error = ?e, "remembered HTTP+SSE endpoint did not answer as one; probing again");
                    era::forget_key(&self.key);
                }
            }
        }
        let first = match LegacySession::initialize(self, outgoing.clone()).await {
            Ok((session, response)) => {
                if let Some(session) = session {
                    self.set_wire(Wire::Legacy(Arc::new(session)));
                    self.remember(WireKind::Legacy);
                }
                return Ok(response);
            }
            Err(e) => e,
        };
        let refused = matches!(&first, Failure::Status(s) if matches!(s.status, 400 | 404 | 405));
        if !refused {
            return Err(first);
        }
        match self.open_http_sse().await {
            Ok(session) => session.request(self, outgoing).await,
            Err(probe) => {
                tracing::debug!(server = %self.server, error = ?probe, "HTTP+SSE probe failed");
                Err(first)
            }
        }
    }

    async fn open_http_sse(&self) -> Result<Arc<SseSession>, Failure> {
        let session = Arc::new(SseSession::open(self).await?);
        self.set_wire(Wire::HttpSse(session.clone()));
        self.remember(WireKind::HttpSse);
        Ok(session)
    }

    /// Posts a notification or a response, in whichever wire is current.
    async fn post_one_way(&self, message: Message) -> Result<(), Failure> {
        match self.wire() {
            Wire::HttpSse(session) => session.post_one_way(self, &message).await,
            Wire::Legacy(session) => session.post_one_way(self, &message).await,
            Wire::Modern => {
                if matches!(message, Message::Response(_)) {
                    return Err(Failure::Invalid(
                        "a modern server sends no requests, so there is nothing to answer".into(),
                    ));
                }
                let (method, params, mut headers) = one_way_parts(&message)?;
                if let Some(version) = body_version(params) {
                    headers.insert(MCP_PROTOCOL_VERSION, version_value(version)?);
                }
                let out = self.post(headers, &message, method);
                let response = self.http.send(out).await?;
                accept_one_way(response).await
            }
        }
    }

    /// The POST of a modern request: its body and its `Mcp-*` headers.
    fn modern_post(
        &self,
        request: &switchboard_wire::Request,
        param_headers: &[(String, String)],
    ) -> Result<Outbound, Failure> {
        let mut headers = request_headers(&request.method, request.params.as_ref())?;
        if let Some(version) = request.meta(meta::PROTOCOL_VERSION).and_then(Value::as_str) {
            headers.insert(MCP_PROTOCOL_VERSION, version_value(version)?);
        }
        for (name, value) in param_headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Failure::Invalid(format!("{name:?} is not a valid header name")))?;
            headers.insert(name, header_value(value)?);
        }
        Ok(self.post(headers, request, self.rpc_method(&request.method)))
    }

    /// The JSON-RPC method as the authorization hook sees it; only kept
    /// when there is a hook.
    fn rpc_method(&self, method: &str) -> Option<String> {
        self.http.auth.as_ref().map(|_| method.to_owned())
    }

    /// A POST of `body` to the endpoint.
    fn post(&self, headers: HeaderMap, body: &impl Body, rpc_method: Option<String>) -> Outbound {
        self.post_to(self.endpoint.clone(), headers, body, rpc_method)
    }

    fn post_to(
        &self,
        uri: Uri,
        headers: HeaderMap,
        body: &impl Body,
        rpc_method: Option<String>,
    ) -> Outbound {
        let mut bytes = Vec::with_capacity(512);
        body.write_json(&mut bytes);
        Outbound {
            method: Method::POST,
            uri,
            headers,
            body: Bytes::from(bytes),
            rpc_method,
        }
    }
}

/// Delivers a message that belongs to no request to the event sink.
pub(crate) fn emit(events: &Events, server: &str, incoming: Incoming) {
    let sink = read(events).clone();
    match sink {
        Some(sink) => sink(incoming),
        None => tracing::debug!(
            server,
            ?incoming,
            "no event sink installed; message dropped"
        ),
    }
}

/// Checks the answer to a notification or response POST: any 2xx.
async fn accept_one_way(response: conn::HttpResponse) -> Result<(), Failure> {
    if response.status().is_success() {
        // A 202 has no body; reading it to the end frees the connection.
        let _ = response::read_limited(response.into_body(), 64 * 1024).await;
        return Ok(());
    }
    match response::error_status(response, None).await {
        Ok(Response {
            outcome: Err(error),
            ..
        }) => Err(Failure::Protocol(format!(
            "the server refused the message: {error}"
        ))),
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A one-way message's method (a notification's; none for a response),
/// its params, and the headers it is posted with ([`request_headers`]).
fn one_way_parts(
    message: &Message,
) -> Result<(Option<String>, Option<&Value>, HeaderMap), Failure> {
    let method = message.method().map(str::to_owned);
    let params = match message {
        Message::Notification(n) => n.params.as_ref(),
        _ => None,
    };
    let headers = request_headers(method.as_deref().unwrap_or(""), params)?;
    Ok((method, params, headers))
}

/// `Content-Type`, `Accept`, `Mcp-Method` and `Mcp-Name` for a message.
fn request_headers(method: &str, params: Option<&Value>) -> Result<HeaderMap, Failure> {
    let mut headers = HeaderMap::with_capacity(8);
    headers.insert(CONTENT_TYPE, JSON);
    headers.insert(ACCEPT, ACCEPT_BOTH);
    if !method.is_empty() {
        headers.insert(MCP_METHOD, method_value(method)?);
    }
    if let Some(member) = h::name_member(method) {
        if let Some(name) = params.and_then(|p| p.get(member)).and_then(Value::as_str) {
            headers.insert(MCP_NAME, header_value(&h::encode_value(name))?);
        }
    }
    Ok(headers)
}

/// The `_meta` protocol version of a message's params.
fn body_version(params: Option<&Value>) -> Option<&str> {
    params?
        .get(meta::META)?
        .get(meta::PROTOCOL_VERSION)?
        .as_str()
}

/// The header value of a method name: static for the methods we send, so
/// the hot path does not allocate.
fn method_value(method: &str) -> Result<HeaderValue, Failure> {
    use switchboard_wire::types::method as m;
    const KNOWN: &[&str] = &[
        m::DISCOVER,
        m::TOOLS_LIST,
        m::TOOLS_CALL,
        m::RESOURCES_LIST,
        m::RESOURCES_TEMPLATES_LIST,
        m::RESOURCES_READ,
        m::PROMPTS_LIST,
        m::PROMPTS_GET,
        m::COMPLETE,
        m::SUBSCRIPTIONS_LISTEN,
        m::INITIALIZE,
        m::INITIALIZED,
        m::PING,
        m::CANCELLED,
    ];
    match KNOWN.iter().find(|k| **k == method) {
        Some(k) => Ok(HeaderValue::from_static(k)),
        None => header_value(method),
    }
}

/// `MCP-Protocol-Version`: static for the version we speak.
fn version_value(version: &str) -> Result<HeaderValue, Failure> {
    if version == switchboard_wire::version::LATEST {
        Ok(HeaderValue::from_static(switchboard_wire::version::LATEST))
    } else {
        header_value(version)
    }
}

fn header_value(value: &str) -> Result<HeaderValue, Failure> {
    HeaderValue::from_str(value)
        .map_err(|_| Failure::Invalid(format!("{value:?} cannot be sent as a header value")))
}

/// Headers the transport owns.
fn is_protocol_header(name: &HeaderName) -> bool {
    let n = name.as_str();
    name == CONTENT_TYPE
        || name == ACCEPT
        || name == http::header::CONTENT_LENGTH
        || name == http::header::HOST
        || name == http::header::TRANSFER_ENCODING
        || n == h::PROTOCOL_VERSION
        || n == h::SESSION_ID
        || n.starts_with("mcp-")
        || n == "last-event-id"
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

/// A JSON-RPC message this transport POSTs, written as compact JSON.
pub(crate) trait Body {
    /// Appends the compact JSON to `out`.
    fn write_json(&self, out: &mut Vec<u8>);
}

impl Body for switchboard_wire::Request {
    fn write_json(&self, out: &mut Vec<u8>) {
        switchboard_wire::Request::write_json(self, out);
    }
}

impl Body for Message {
    fn write_json(&self, out: &mut Vec<u8>) {
        self.write_to(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // HTTP-C-06, HTTP-C-09: Mcp-Name mirrors params.name / params.uri, encoded.
    #[test]
    fn standard_headers_mirror_the_body() {
        let h = request_headers("tools/call", Some(&json!({"name": "héllo"}))).unwrap();
        assert_eq!(h[h::METHOD], "tools/call");
        assert_eq!(h[h::NAME], "=?base64?aMOpbGxv?=");
        let h =
            request_headers("resources/read", Some(&json!({"uri": "file:///a%20b?x=1"}))).unwrap();
        assert_eq!(h[h::NAME], "file:///a%20b?x=1");
        let h = request_headers("tools/list", Some(&json!({"name": "x"}))).unwrap();
        assert!(h.get(h::NAME).is_none());
        assert_eq!(h[ACCEPT], "application/json, text/event-stream");
    }

    #[test]
    fn protocol_headers_cannot_be_configured() {
        for name in [
            "content-type",
            "MCP-Protocol-Version",
            "Mcp-Method",
            "mcp-param-x",
            "Mcp-Session-Id",
        ] {
            let err = HttpTransport::builder("s", "http://127.0.0.1:1/mcp")
                .header(name, "x")
                .build()
                .unwrap_err();
            assert!(err.to_string().contains("cannot be configured"), "{err}");
        }
        assert!(
            HttpTransport::builder("s", "http://127.0.0.1:1/mcp")
                .header("Authorization", "Bearer t")
                .header("X-Api-Key", "k")
                .build()
                .is_ok()
        );
        assert!(
            HttpTransport::builder("s", "ftp://x/mcp")
                .build()
                .unwrap_err()
                .to_string()
                .contains("not an http")
        );
    }
}
