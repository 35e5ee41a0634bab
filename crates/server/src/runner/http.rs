//! The Streamable HTTP runner, on hyper 1.
//!
//! One endpoint accepting POST (HTTP-S-01); GET and DELETE get 405 (legacy
//! sessions may DELETE themselves, with a token when one is required; an
//! unknown session is 404 then). Each request is checked in this order:
//! `Host`/`Origin` (403), a token in the URL (400), method (405), bearer
//! token (400 malformed, 401, 503), body size (413),
//! JSON-RPC envelope (400), mirrored headers (400 + -32020), scopes (403),
//! then routed. A request whose `_meta` asks for neither progress nor logs is
//! answered inline with `application/json`; otherwise the answer switches
//! to an SSE stream (`X-Accel-Buffering: no`) as soon as the handler sends
//! a notification. Closing that stream cancels the handler (HTTP-S-12).
//! `subscriptions/listen` is always a stream, with keep-alive comments.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use switchboard_wire::header::name_member;
use switchboard_wire::meta::{LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION};
use switchboard_wire::sse::{encode_comment, encode_event};
use switchboard_wire::types::method;
use switchboard_wire::{ErrorCode, ErrorObject, Message, Request, RequestId, version};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::auth::{
    AuthError, AuthRequest, Principal, ProtectedResource, Refusal, TokenValidator, quote,
};
use crate::cancel::Cancellation;
use crate::dispatch::{Incoming, Reply, frame_error, frame_result};
use crate::dpop::{self, DpopError, DpopVerifier, ProofTarget};
use crate::error::{Fault, ServeError};
use crate::fast::{self, ToolCall};
use crate::legacy::Session;
use crate::notify::Subscription;
use crate::runner::body::Body;
use crate::runner::forward;
use crate::runner::headers::{self, Guard, Mirror};
use crate::runner::tls::ServerTls;
use crate::server::Server;
use crate::sink::Sink;

/// How many notifications a handler may queue ahead of a slow client.
const NOTIFICATION_QUEUE: usize = 64;
/// How many SSE frames may wait for the socket.
const FRAME_QUEUE: usize = 16;
/// The answer to a legacy session id that names no session this principal
/// may use.
const UNKNOWN_SESSION: &str = "unknown or expired session; send initialize again";

/// Settings of the HTTP runner.
#[derive(Clone)]
pub struct HttpOptions {
    path: String,
    hosts: Option<Option<Vec<String>>>,
    origins: Option<Vec<String>>,
    max_body: usize,
    keep_alive: Duration,
    recheck_streams: Duration,
    max_connections: usize,
    cancel_grace: Duration,
    shutdown_grace: Duration,
    auth: Option<Arc<Auth>>,
    dpop: Arc<DpopVerifier>,
    routes: Vec<(String, PlainRoute)>,
    tls: Option<ServerTls>,
    handshake_timeout: Duration,
    peer_tls: Option<Arc<rustls::ClientConfig>>,
}

/// The answer of a plain (non-MCP) route: status, content type and body.
#[derive(Debug, Clone)]
pub struct PlainResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

impl PlainResponse {
    /// A response with `status`, `content_type` and `body`.
    pub fn new(status: u16, content_type: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        PlainResponse {
            status,
            content_type: content_type.into(),
            body: body.into(),
        }
    }
}

/// A plain GET route served next to the MCP endpoint, outside its checks
/// and authorization (health, readiness, metrics).
pub type PlainRoute =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = PlainResponse> + Send>> + Send + Sync>;

struct Auth {
    validator: Box<dyn TokenValidator>,
    metadata: ProtectedResource,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("path", &self.path)
            .field("max_body", &self.max_body)
            .field("auth", &self.auth.is_some())
            .field("tls", &self.tls.is_some())
            .field(
                "routes",
                &self
                    .routes
                    .iter()
                    .map(|(p, _)| p.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            hosts: None,
            origins: None,
            max_body: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            recheck_streams: Duration::from_secs(60),
            max_connections: 1024,
            cancel_grace: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
            auth: None,
            dpop: Arc::new(DpopVerifier::new()),
            routes: Vec::new(),
            tls: None,
            handshake_timeout: Duration::from_secs(10),
            peer_tls: None,
        }
    }
}

impl HttpOptions {
    /// Serves `route` at `path` (GET and HEAD only) next to the MCP
    /// endpoint, with no Origin check and no authorization: for health,
    /// readiness and metrics. A later route at the same path replaces it.
    #[must_use]
    pub fn plain_route(mut self, path: impl Into<String>, route: PlainRoute) -> Self {
        let path = path.into();
        self.routes.retain(|(p, _)| *p != path);
        self.routes.push((path, route));
        self
    }

    /// Defaults: endpoint `/mcp`, 4 MiB bodies, keep-alive comment every
    /// 15 s, 1 024 connections, loopback-only `Host`/`Origin` when bound to
    /// loopback.
    pub fn new() -> Self {
        HttpOptions::default()
    }

    /// The MCP endpoint path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Host names (without port) the server answers to; `"*"` allows any.
    /// By default: `localhost`, `127.0.0.1` and `[::1]` when bound to
    /// loopback, anything otherwise.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts = Some(Some(
            hosts
                .into_iter()
                .map(|h| h.into().to_ascii_lowercase())
                .collect(),
        ));
        self
    }

    /// Browser origins (`scheme://host[:port]`) allowed to call; `"*"`
    /// allows any. By default: loopback origins and the server's own host.
    /// A request with another `Origin` gets 403 (HTTP-S-03).
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins = Some(
            origins
                .into_iter()
                .map(|o| o.into().trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        );
        self
    }

    /// The largest request body accepted; larger ones get 413.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// How often an idle SSE stream gets a keep-alive comment.
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every.max(Duration::from_millis(10));
        self
    }

    /// With authorization on: how often the token that opened a
    /// `subscriptions/listen` stream is checked again. A token the
    /// validator now refuses (revoked, expired) ends the stream without a
    /// closing result, so the client reconnects and meets the refusal; a
    /// validator that cannot answer (its issuer unreachable) leaves the
    /// stream open. Default 60 s.
    pub fn recheck_streams(mut self, every: Duration) -> Self {
        self.recheck_streams = every.max(Duration::from_millis(10));
        self
    }

    /// How many connections are served at once.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a cancelled handler may run on to clean up before it is
    /// dropped.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// How long connections may take to finish after shutdown.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How DPoP proofs are checked (RFC 9449): a token bound to a key
    /// (`cnf.jkt`) is accepted only as `Authorization: DPoP` with a valid
    /// proof for this request. Default: [`DpopVerifier::new`] (5-minute
    /// window, bounded replay cache, no nonces).
    pub fn dpop(mut self, verifier: DpopVerifier) -> Self {
        self.dpop = Arc::new(verifier);
        self
    }

    /// Serves HTTPS (HTTP/1.1 over TLS) with `tls`'s certificate and key;
    /// replacing them in `tls` while serving takes effect from the next
    /// connection on.
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// With TLS: how long a client has to finish the handshake; a
    /// connection that takes longer (or sends no TLS at all) is closed.
    /// Default 10 s.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How `https://` replica peers ([`crate::ServerBuilder::replica_peers`])
    /// are verified when requests are sent on to them; without it only
    /// `http://` peers can be reached.
    pub fn peer_tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.peer_tls = Some(config);
        self
    }

    /// Requires a bearer token on every request, checked by `validator`,
    /// and serves the Protected Resource Metadata document.
    pub fn auth(mut self, validator: impl TokenValidator, metadata: ProtectedResource) -> Self {
        self.auth = Some(Arc::new(Auth {
            validator: Box::new(validator),
            metadata,
        }));
        self
    }
}

/// Serves `server` on `listener` until `shutdown` completes, then stops
/// accepting, ends listen streams gracefully and lets connections finish
/// (bounded by the shutdown grace).
///
/// Bind to `127.0.0.1` for local servers (HTTP-S-04).
///
/// # Errors
/// [`ServeError::Io`] when the listener fails for good.
pub async fn serve(
    server: Server,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(|source| ServeError::Io {
        context: "cannot read the listener's address",
        source,
    })?;
    let guard = Guard {
        hosts: options
            .hosts
            .clone()
            .unwrap_or_else(|| Guard::for_bind(&local).hosts),
        origins: options.origins.clone(),
    };
    let peers = forward::Peers::new(options.peer_tls.clone());
    let state = Arc::new(State {
        server: server.clone(),
        guard,
        options,
        peers,
    });
    let permits = Arc::new(Semaphore::new(state.options.max_connections));
    // Every connection task holds a clone; when all are gone, `done` ends.
    let (alive_tx, mut done) = mpsc::channel::<()>(1);
    let stops = Arc::new(Stops::default());
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors and the like: wait and go on.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let alive = alive_tx.clone();
        let (key, stop) = stops.register();
        let stops = Arc::clone(&stops);
        tokio::spawn(async move {
            let mut stop = stop;
            match state.options.tls.as_ref().map(ServerTls::acceptor) {
                None => serve_connection(stream, state, peer, stop).await,
                Some(acceptor) => {
                    let timeout = state.options.handshake_timeout;
                    let handshake = tokio::time::timeout(timeout, acceptor.accept(stream));
                    let tls = tokio::select! {
                        r = handshake => match r {
                            Ok(Ok(tls)) => Some(tls),
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, "TLS handshake failed: {e}");
                                None
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "no TLS handshake within {timeout:?}");
                                None
                            }
                        },
                        _ = &mut stop => None,
                    };
                    if let Some(tls) = tls {
                        serve_connection(tls, state, peer, stop).await;
                    }
                }
            }
            stops.forget(key);
            drop(permit);
            drop(alive);
        });
    }
    server.shutdown();
    stops.stop_all();
    drop(alive_tx);
    let _ = tokio::time::timeout(state.options.shutdown_grace, done.recv()).await;
    Ok(())
}

/// Serves HTTP/1.1 on one accepted connection (plain TCP, or TLS once
/// its handshake is done) until it ends or `stop` asks for a graceful end.
async fn serve_connection<I>(
    io: I,
    state: Arc<State>,
    peer: SocketAddr,
    stop: oneshot::Receiver<()>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(state.handle(req, peer).await) }
    });
    let conn = http1::Builder::new().serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        biased;
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        }
        _ = stop => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Binds `addr` and serves until `shutdown`; a convenience over [`serve`].
///
/// # Errors
/// [`ServeError::Bind`] when the address cannot be bound.
pub async fn bind_and_serve(
    server: Server,
    addr: SocketAddr,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    serve(server, listener, options, shutdown).await
}

/// The shutdown signal of each open connection: a oneshot per connection,
/// whose receiver costs nothing to poll while it waits (a shared flag with
/// a wait list would take a lock on every wake of every connection).
#[derive(Default)]
struct Stops {
    next: AtomicU64,
    senders: Mutex<HashMap<u64, oneshot::Sender<()>>>,
}

impl Stops {
    fn register(&self) -> (u64, oneshot::Receiver<()>) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(key, tx);
        (key, rx)
    }

    fn forget(&self, key: u64) {
        self.lock().remove(&key);
    }

    fn stop_all(&self) {
        for (_, tx) in self.lock().drain() {
            let _ = tx.send(());
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, oneshot::Sender<()>>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct State {
    server: Server,
    guard: Guard,
    options: HttpOptions,
    /// The open connections to the replica's peers.
    peers: forward::Peers,
}

type HttpResponse = Response<Body>;

fn json_response(status: u16, body: Vec<u8>) -> HttpResponse {
    let mut r = Response::new(Body::full(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// An HTTP-level refusal with an id-less JSON-RPC error body.
fn refuse(status: StatusCode, message: &str) -> HttpResponse {
    let error = ErrorObject::new(ErrorCode::InvalidRequest, message);
    json_response(status.as_u16(), frame_error(None, &error))
}

fn fault_response(id: Option<&RequestId>, fault: &Fault) -> HttpResponse {
    json_response(fault.http_status(), frame_error(id, &fault.error))
}

fn sse_response(rx: mpsc::Receiver<Bytes>) -> HttpResponse {
    let mut r = Response::new(Body::Stream(rx));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // HTTP-S-11: no proxy buffering.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

fn sse_frame(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 8);
    encode_event(&mut out, None, None, &String::from_utf8_lossy(message));
    Bytes::from(out)
}

fn keep_alive_frame() -> Bytes {
    let mut out = Vec::with_capacity(4);
    encode_comment(&mut out, "");
    Bytes::from(out)
}

/// Why a request body could not be had.
enum BodyError {
    /// More than the configured maximum.
    TooLarge,
    /// The connection failed while sending it.
    Unreadable,
}

/// Reads a whole request body of at most `limit` bytes. A body that comes
/// in one piece, as small ones do, is kept as it came: no buffer list, no
/// copy.
async fn read_body(body: &mut hyper::body::Incoming, limit: usize) -> Result<Bytes, BodyError> {
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Unreadable)?;
        // Trailers carry nothing a JSON-RPC body needs.
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        total = total.saturating_add(data.len());
        if total > limit {
            return Err(BodyError::TooLarge);
        }
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            None => joined.extend_from_slice(&data),
            Some(f) => {
                joined.reserve(f.len() + data.len());
                joined.extend_from_slice(&f);
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(joined)))
}

/// How much of a refused body, past the limit, is read and thrown away
/// before the 413 goes out, and for how long at most. A connection closed
/// while the client is still sending is reset, and the reset can reach the
/// client before the 413 does: it would see a broken pipe instead of the
/// reason. Bodies declared larger than the limit by more get the 413 at
/// once.
const DISCARD_AT_MOST: usize = 16 * 1024 * 1024;
const DISCARD_FOR: Duration = Duration::from_secs(2);

/// Reads and drops the rest of a refused body (see [`DISCARD_AT_MOST`]).
async fn discard(body: &mut hyper::body::Incoming) {
    let drain = async {
        let mut read = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            read = read.saturating_add(frame.data_ref().map_or(0, Bytes::len));
            if read > DISCARD_AT_MOST {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(DISCARD_FOR, drain).await;
}

/// Cancels a token when dropped: a request whose connection closed before
/// it finished is cancelled.
struct CancelOnDrop(Option<Cancellation>);

impl CancelOnDrop {
    fn new(token: &Cancellation) -> Self {
        CancelOnDrop(Some(token.clone()))
    }

    /// Hands responsibility to someone else.
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.cancel();
        }
    }
}

impl State {
    async fn handle(
        self: Arc<Self>,
        req: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> HttpResponse {
        let path = req.uri().path();
        if path != self.options.path {
            if let Some((_, route)) = self.options.routes.iter().find(|(p, _)| p == path) {
                return plain_route(req.method(), route).await;
            }
            return self.other_path(&req);
        }
        if let Err((status, reason)) = self.guard.check(req.headers()) {
            tracing::warn!(%peer, "refused: {reason}");
            return refuse(
                StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
                reason,
            );
        }
        if let Some(auth) = &self.options.auth {
            // AUTH-C-21 / RFC 6750 §2.3: never a token in the URL, not even
            // next to a good header (AUTH-S-06).
            if has_query_token(req.uri().query()) {
                let error = AuthError::InvalidRequest(
                    "access tokens are not accepted in the URL; send them in the Authorization header".into(),
                );
                return auth_failure(auth, &error, true, None, Some(peer));
            }
        }
        match *req.method() {
            Method::POST => {}
            Method::DELETE => {
                // Ending a session is a request like any other.
                let principal = match &self.options.auth {
                    None => None,
                    Some(auth) => match Box::pin(authenticate(
                        auth,
                        &self.options.dpop,
                        req.method(),
                        req.headers(),
                        peer,
                    ))
                    .await
                    {
                        Ok(p) => Some(p),
                        Err(r) => return r,
                    },
                };
                if let Some((replica, url)) = self.session_holder(req.headers()) {
                    let (head, _) = req.into_parts();
                    return Box::pin(self.send_on(None, &replica, &url, &head, Bytes::new())).await;
                }
                return self.delete(req.headers(), principal.as_ref(), peer);
            }
            _ => {
                let mut r = refuse(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "this MCP endpoint accepts POST only",
                );
                r.headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("POST"));
                return r;
            }
        }
        if let Some(ct) = req.headers().get(CONTENT_TYPE) {
            let json = ct
                .as_bytes()
                .trim_ascii_start()
                .get(..16)
                .is_some_and(|p| p.eq_ignore_ascii_case(b"application/json"));
            if !json {
                return refuse(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "the request body must be application/json",
                );
            }
        }
        let principal = match &self.options.auth {
            None => None,
            Some(auth) => match Box::pin(authenticate(
                auth,
                &self.options.dpop,
                req.method(),
                req.headers(),
                peer,
            ))
            .await
            {
                Ok(p) => Some(Arc::new(p)),
                Err(r) => return r,
            },
        };
        let (parts, mut body) = req.into_parts();
        let limit = self.options.max_body;
        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(declared) = declared.filter(|n| *n > limit as u64) {
            if declared - limit as u64 <= DISCARD_AT_MOST as u64 {
                discard(&mut body).await;
            }
            return too_large(limit);
        }
        let body = match read_body(&mut body, limit).await {
            Ok(b) => b,
            Err(BodyError::TooLarge) => {
                discard(&mut body).await;
                return too_large(limit);
            }
            Err(BodyError::Unreadable) => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read",
                );
            }
        };
        // A legacy session lives in the replica that opened it.
        if let Some((replica, url)) = self.session_holder(&parts.headers) {
            return Box::pin(self.send_on(None, &replica, &url, &parts, body)).await;
        }
        if let Some(call) = fast::tool_call(&body) {
            return self.tool_call(call, &parts.headers, principal).await;
        }
        let message = match Message::from_slice(&body) {
            Ok(m) => m,
            Err(e) => {
                let error = ErrorObject::new(e.code(), e.to_string());
                return json_response(400, frame_error(e.id(), &error));
            }
        };
        match message {
            // Boxed: the general path's future is several times the fast
            // path's, and hyper moves the request future by value.
            Message::Request(request) => {
                if let Some((replica, url)) = self.holder_of(&request, &parts.headers) {
                    let id = Some(&request.id);
                    return Box::pin(self.send_on(id, &replica, &url, &parts, body)).await;
                }
                Box::pin(self.request(request, &parts.headers, principal, peer)).await
            }
            Message::Notification(_) => {
                // HTTP-S-06: accepted, nothing to say.
                status_only(StatusCode::ACCEPTED)
            }
            Message::Response(response) => {
                let session = self.session(&parts.headers, principal.as_deref(), peer);
                if session.is_some_and(|s| s.resolve(response)) {
                    status_only(StatusCode::ACCEPTED)
                } else {
                    refuse(
                        StatusCode::BAD_REQUEST,
                        "a JSON-RPC response here must answer a request this server sent",
                    )
                }
            }
        }
    }

    /// The peer replica holding what the request is about, and its URL:
    /// the task a `tasks/get`, `tasks/update` or `tasks/cancel` names, the
    /// tasks a `subscriptions/listen` follows when one peer holds them all,
    /// or the work a replica-bound `requestState` belongs to. `None` for
    /// anything else, and for a request another replica already sent on.
    fn holder_of(&self, request: &Request, headers: &HeaderMap) -> Option<(String, http::Uri)> {
        use switchboard_wire::tasks::{TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
        let params = request.params.as_ref()?;
        let name = request.method.as_str();
        let id = if [TASKS_GET, TASKS_UPDATE, TASKS_CANCEL].contains(&name) {
            params.get("taskId")
        } else if name == method::SUBSCRIPTIONS_LISTEN {
            return self.listen_holder(params, headers);
        } else {
            params.get("requestState")
        }?;
        self.peer_holding(id.as_str()?, headers)
    }

    /// The peer holding every task a `subscriptions/listen` asks to follow,
    /// when they are all that one peer's: the stream is then the peer's,
    /// which sees those tasks change. A listen naming this replica's tasks,
    /// or several replicas', is answered here (its acknowledgment lists
    /// the tasks this replica reports on; the client polls the others).
    fn listen_holder(&self, params: &Value, headers: &HeaderMap) -> Option<(String, http::Uri)> {
        let ids = params.get("notifications")?.get("taskIds")?.as_array()?;
        let mut holder: Option<(String, http::Uri)> = None;
        for id in ids {
            let (replica, url) = self.peer_holding(id.as_str()?, headers)?;
            match &holder {
                Some((held_by, _)) if *held_by != replica => return None,
                Some(_) => {}
                None => holder = Some((replica, url)),
            }
        }
        holder
    }

    /// The peer replica holding the legacy session the request names, and
    /// its URL; `None` when it is this replica's or names no peer, and for
    /// a request another replica already sent on.
    fn session_holder(&self, headers: &HeaderMap) -> Option<(String, http::Uri)> {
        let id = headers.get(&headers::SESSION_ID)?.to_str().ok()?;
        self.peer_holding(id.trim(), headers)
    }

    /// The peer `id` (`REPLICA.…`) names and its URL, unless another
    /// replica already sent this request on (it is then answered here).
    fn peer_holding(&self, id: &str, headers: &HeaderMap) -> Option<(String, http::Uri)> {
        if headers.contains_key(&forward::FORWARDED_BY) {
            return None;
        }
        let (replica, url) = self.server.inner.tasks.holder(id)?;
        Some((replica.to_owned(), url.clone()))
    }

    /// Sends the request on to `replica` at `url`, which holds its work,
    /// and answers with what it answers; an error saying why when it
    /// cannot be reached.
    async fn send_on(
        &self,
        id: Option<&RequestId>,
        replica: &str,
        url: &http::Uri,
        head: &http::request::Parts,
        body: Bytes,
    ) -> HttpResponse {
        let own = self.server.inner.tasks.origin().unwrap_or_default();
        match self.peers.send(url, own, head, body).await {
            Ok(answer) => answer,
            Err(why) => {
                tracing::warn!(replica, %url, error = %why, "a peer replica could not be reached");
                let fault = Fault::internal(format!(
                    "this request's work lives on replica {replica}, which this replica ({own}) could not reach: {why}"
                ));
                fault_response(id, &fault)
            }
        }
    }

    /// Answers the paths the server does not know.
    fn other_path(&self, req: &http::Request<hyper::body::Incoming>) -> HttpResponse {
        if let Some(auth) = &self.options.auth {
            let path = req.uri().path();
            let well_known = auth.metadata.well_known_path();
            if path == well_known || path == "/.well-known/oauth-protected-resource" {
                if req.method() != Method::GET {
                    return status_only(StatusCode::METHOD_NOT_ALLOWED);
                }
                let doc = serde_json::to_vec(&auth.metadata.document()).unwrap_or_default();
                return json_response(200, doc);
            }
        }
        let mut r = Response::new(Body::full("not found"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        r
    }

    /// The legacy session the request names, if it is live and belongs to
    /// `principal`. A session opened by another principal is `None`, as an
    /// unknown one: its id is not a credential, and the 404 that follows
    /// does not tell whether it exists.
    fn session(
        &self,
        headers: &HeaderMap,
        principal: Option<&Principal>,
        peer: SocketAddr,
    ) -> Option<Arc<Session>> {
        let sessions = self.server.inner.sessions.as_ref()?;
        let id = headers.get(&headers::SESSION_ID)?.to_str().ok()?;
        let session = sessions.get(id.trim())?;
        if !session.belongs_to(principal) {
            // Neither the session id nor the token is logged.
            tracing::debug!(
                %peer,
                subject = principal.map_or("", |p| p.subject.as_str()),
                "refused: the legacy session belongs to another principal; answered as unknown"
            );
            return None;
        }
        Some(session)
    }

    /// A legacy client ending its session: 200, or 404 when the session is
    /// unknown, expired or another principal's; 405 without a session.
    fn delete(
        &self,
        headers: &HeaderMap,
        principal: Option<&Principal>,
        peer: SocketAddr,
    ) -> HttpResponse {
        if let Some(sessions) = &self.server.inner.sessions {
            if headers.contains_key(&headers::SESSION_ID) {
                return match self.session(headers, principal, peer) {
                    Some(session) if sessions.remove(&session.id) => status_only(StatusCode::OK),
                    _ => refuse(StatusCode::NOT_FOUND, UNKNOWN_SESSION),
                };
            }
        }
        let mut r = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "this MCP endpoint accepts POST only",
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        r
    }

    async fn request(
        self: Arc<Self>,
        request: Request,
        headers: &HeaderMap,
        principal: Option<Arc<Principal>>,
        peer: SocketAddr,
    ) -> HttpResponse {
        let legacy_on = self.server.inner.sessions.is_some();
        let header_version = headers
            .get(&headers::VERSION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        let modern_header = header_version.is_some_and(|v| !version::LEGACY_ACCEPTED.contains(&v));
        let modern_meta = request
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(PROTOCOL_VERSION))
            .is_some();
        if legacy_on && !modern_header && !modern_meta {
            // Legacy requests skip the mirrored headers, not the scopes.
            if let Some(r) = self.authorize(&request, principal.as_deref()) {
                return r;
            }
            if request.method == method::INITIALIZE {
                return self.initialize(&request, principal.as_deref());
            }
            if headers.contains_key(&headers::SESSION_ID) {
                return match self.session(headers, principal.as_deref(), peer) {
                    Some(session) => self.route(request, principal, Some(session), None).await,
                    // Legacy rule: an unknown session is 404.
                    None => fault_response(
                        Some(&request.id),
                        &Fault::new(
                            crate::error::FaultKind::MethodNotFound,
                            ErrorObject::new(ErrorCode::InvalidRequest, UNKNOWN_SESSION),
                        ),
                    ),
                };
            }
        }
        let registry = self.server.registry();
        if let Err(fault) = headers::validate(headers, &Mirror::of(&request), &registry) {
            return fault_response(Some(&request.id), &fault);
        }
        drop(registry);
        if let Some(r) = self.authorize(&request, principal.as_deref()) {
            return r;
        }
        let recheck = self.recheck(&request, headers, principal.as_deref());
        self.route(request, principal, None, recheck).await
    }

    /// For a `subscriptions/listen` opened with a token: what is needed to
    /// check the token again while the stream lasts.
    fn recheck(
        &self,
        request: &Request,
        headers: &HeaderMap,
        principal: Option<&Principal>,
    ) -> Option<Recheck> {
        if request.method != method::SUBSCRIPTIONS_LISTEN {
            return None;
        }
        let auth = self.options.auth.as_ref()?;
        let (token, _) = bearer_token(headers).ok()??;
        Some(Recheck {
            auth: Arc::clone(auth),
            token: token.to_owned(),
            subject: principal?.subject.clone(),
            every: self.options.recheck_streams,
        })
    }

    /// Asks the validator whether `principal` may make `request`: the 403
    /// `insufficient_scope` refusal when not.
    fn authorize(&self, request: &Request, principal: Option<&Principal>) -> Option<HttpResponse> {
        let (Some(auth), Some(p)) = (&self.options.auth, principal) else {
            return None;
        };
        let name =
            name_member(&request.method).and_then(|m| request.params.as_ref()?.get(m)?.as_str());
        let ask = AuthRequest {
            method: &request.method,
            name,
        };
        let error = auth.validator.authorize(p, &ask).err()?;
        Some(auth_failure(auth, &error, true, None, None))
    }

    /// Routes a request through the general path.
    async fn route(
        self: Arc<Self>,
        request: Request,
        principal: Option<Arc<Principal>>,
        session: Option<Arc<Session>>,
        recheck: Option<Recheck>,
    ) -> HttpResponse {
        let id = request.id.clone();
        let streams = session.is_some()
            || request.method == method::SUBSCRIPTIONS_LISTEN
            || wants_notifications(request.params.as_ref());
        self.run(
            Routed {
                id,
                streams,
                principal,
                session,
                recheck,
            },
            move |server, incoming| async move { server.dispatch(request, incoming).await },
        )
        .await
    }

    /// A legacy `initialize`: opens a session bound to `principal`.
    fn initialize(&self, request: &Request, principal: Option<&Principal>) -> HttpResponse {
        let owner = principal.map(|p| p.subject.clone());
        match self.server.initialize(request.params.as_ref(), owner) {
            Ok((session, result)) => {
                let id = session.id.clone();
                if let Some(sessions) = &self.server.inner.sessions {
                    sessions.insert(session);
                }
                let mut r = json_response(200, frame_result(&request.id, &result, 0));
                if let Ok(v) = HeaderValue::from_str(&id) {
                    r.headers_mut().insert(headers::SESSION_ID, v);
                }
                r
            }
            Err(f) => fault_response(Some(&request.id), &f),
        }
    }

    /// Routes a validated request and shapes the answer: JSON, or SSE once
    /// something is streamed. `routed.streams` says whether anything may be
    /// sent before the answer; `route` starts the router.
    async fn run<F, Fut>(self: Arc<Self>, routed: Routed, route: F) -> HttpResponse
    where
        F: FnOnce(Server, Incoming) -> Fut,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let Routed {
            id,
            streams,
            principal,
            session,
            recheck,
        } = routed;
        let cancel = Cancellation::new();
        if !streams {
            // The common case: nothing can be streamed, answer inline.
            let guard = CancelOnDrop::new(&cancel);
            let incoming = Incoming {
                principal,
                sink: Sink::Discard,
                cancel,
                session,
            };
            let reply = route(self.server.clone(), incoming).await;
            guard.defuse();
            return self.reply_response(&id, reply, recheck);
        }
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(NOTIFICATION_QUEUE);
        let incoming = Incoming {
            principal,
            sink: Sink::Channel(tx),
            cancel: cancel.clone(),
            session,
        };
        let mut fut = Box::pin(route(self.server.clone(), incoming));
        let guard = CancelOnDrop::new(&cancel);
        let (first, done) = tokio::select! {
            biased;
            reply = &mut fut => {
                match rx.try_recv() {
                    // Notifications queued before the answer: stream them.
                    Ok(first) => (first, Some(reply)),
                    Err(_) => {
                        guard.defuse();
                        return self.reply_response(&id, reply, recheck);
                    }
                }
            }
            Some(first) = rx.recv() => (first, None),
        };
        let (frames_tx, frames_rx) = mpsc::channel::<Bytes>(FRAME_QUEUE);
        let state = Arc::clone(&self);
        guard.defuse();
        tokio::spawn(async move {
            state
                .stream(id, first, done, fut, rx, frames_tx, cancel, recheck)
                .await;
        });
        sse_response(frames_rx)
    }

    /// A `tools/call` read by the fast path: the same header checks and
    /// authorization as any request, then the router's fast entry.
    async fn tool_call(
        self: Arc<Self>,
        call: ToolCall,
        headers: &HeaderMap,
        principal: Option<Arc<Principal>>,
    ) -> HttpResponse {
        let mirror = Mirror {
            method: method::TOOLS_CALL,
            meta_version: Some(&call.meta.protocol_version),
            name: Some(&call.name),
            arguments: call.arguments.as_object(),
        };
        let registry = self.server.registry();
        if let Err(fault) = headers::validate(headers, &mirror, &registry) {
            return fault_response(Some(&call.id), &fault);
        }
        drop(registry);
        if let (Some(auth), Some(p)) = (&self.options.auth, &principal) {
            let ask = AuthRequest {
                method: method::TOOLS_CALL,
                name: Some(&call.name),
            };
            if let Err(e) = auth.validator.authorize(p, &ask) {
                return auth_failure(auth, &e, true, None, None);
            }
        }
        let routed = Routed {
            id: call.id.clone(),
            streams: call.meta.progress_token.is_some() || call.meta.log_level.is_some(),
            principal,
            session: None,
            recheck: None,
        };
        self.run(routed, move |server, incoming| async move {
            server.dispatch_tool_call(call, incoming).await
        })
        .await
    }

    fn reply_response(
        &self,
        id: &RequestId,
        reply: Reply,
        recheck: Option<Recheck>,
    ) -> HttpResponse {
        match reply {
            Reply::Result(bytes) => json_response(200, frame_result(id, &bytes, 0)),
            Reply::Error(fault) => fault_response(Some(id), &fault),
            Reply::Listen(subscription) => {
                let (frames_tx, frames_rx) = mpsc::channel::<Bytes>(FRAME_QUEUE);
                let keep_alive = self.options.keep_alive;
                tokio::spawn(pump(subscription, frames_tx, keep_alive, recheck));
                sse_response(frames_rx)
            }
        }
    }

    /// Drives a streamed request: forwards its notifications as SSE events,
    /// then its answer; stops and cancels the handler if the client closes
    /// the stream.
    #[allow(clippy::too_many_arguments)]
    async fn stream(
        self: Arc<Self>,
        id: RequestId,
        first: Vec<u8>,
        done: Option<Reply>,
        mut fut: std::pin::Pin<Box<impl Future<Output = Reply> + Send>>,
        mut rx: mpsc::Receiver<Vec<u8>>,
        frames: mpsc::Sender<Bytes>,
        cancel: Cancellation,
        recheck: Option<Recheck>,
    ) {
        let _cancel_on_exit = CancelOnDrop::new(&cancel);
        if frames.send(sse_frame(&first)).await.is_err() {
            return self.abandon(fut, cancel).await;
        }
        let reply = match done {
            Some(reply) => reply,
            None => {
                let mut tick = tokio::time::interval(self.options.keep_alive);
                tick.reset();
                loop {
                    tokio::select! {
                        biased;
                        () = frames.closed() => return self.abandon(fut, cancel).await,
                        Some(m) = rx.recv() => {
                            if frames.send(sse_frame(&m)).await.is_err() {
                                return self.abandon(fut, cancel).await;
                            }
                        }
                        reply = &mut fut => break reply,
                        _ = tick.tick() => {
                            if frames.send(keep_alive_frame()).await.is_err() {
                                return self.abandon(fut, cancel).await;
                            }
                        }
                    }
                }
            }
        };
        // Notifications sent before the answer go first.
        while let Ok(m) = rx.try_recv() {
            if frames.send(sse_frame(&m)).await.is_err() {
                return;
            }
        }
        match reply {
            Reply::Result(bytes) => {
                let _ = frames.send(sse_frame(&frame_result(&id, &bytes, 0))).await;
            }
            Reply::Error(fault) => {
                let _ = frames
                    .send(sse_frame(&frame_error(Some(&id), &fault.error)))
                    .await;
            }
            Reply::Listen(subscription) => {
                pump(subscription, frames, self.options.keep_alive, recheck).await;
            }
        }
    }

    /// The client closed the stream: cancel the handler and let it wind
    /// down without sending anything (HTTP-S-12/14).
    async fn abandon(
        &self,
        fut: std::pin::Pin<Box<impl Future<Output = Reply> + Send>>,
        cancel: Cancellation,
    ) {
        cancel.cancel();
        let _ = tokio::time::timeout(self.options.cancel_grace, fut).await;
    }
}

/// What a request is routed with.
struct Routed {
    id: RequestId,
    /// Whether anything may be sent before the answer.
    streams: bool,
    principal: Option<Arc<Principal>>,
    session: Option<Arc<Session>>,
    /// For a listen stream opened with a token: the token, checked again.
    recheck: Option<Recheck>,
}

/// The token a `subscriptions/listen` stream was opened with, checked
/// again while the stream lasts ([`HttpOptions::recheck_streams`]). Kept
/// only here, never handed to a handler.
struct Recheck {
    auth: Arc<Auth>,
    token: String,
    /// Whom the token named when the stream was opened.
    subject: String,
    every: Duration,
}

impl Recheck {
    /// Whether the token no longer admits its caller to this stream:
    /// refused, naming someone else now, or without the scope a listen
    /// needs. A validator that cannot answer now is no refusal.
    async fn refused(&self) -> bool {
        let principal = match self.auth.validator.validate(&self.token).await {
            Ok(p) => p,
            Err(AuthError::Unavailable(_)) => return false,
            Err(_) => return true,
        };
        let ask = AuthRequest {
            method: method::SUBSCRIPTIONS_LISTEN,
            name: None,
        };
        principal.subject != self.subject
            || self.auth.validator.authorize(&principal, &ask).is_err()
    }
}

/// Runs a listen stream on SSE: acknowledgment, notifications, keep-alive
/// comments; a graceful closing result when the server shuts down. With
/// `recheck`, a stream whose token is refused now ends without one.
async fn pump(
    mut subscription: Subscription,
    frames: mpsc::Sender<Bytes>,
    keep_alive: Duration,
    recheck: Option<Recheck>,
) {
    if frames.send(sse_frame(&subscription.ack())).await.is_err() {
        return;
    }
    let mut tick = tokio::time::interval(keep_alive);
    tick.reset();
    let mut recheck_tick = recheck.as_ref().map(|r| {
        let mut t = tokio::time::interval(r.every);
        t.reset();
        t
    });
    let recheck_due = async |t: &mut Option<tokio::time::Interval>| match t {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    };
    loop {
        tokio::select! {
            () = frames.closed() => return,
            () = recheck_due(&mut recheck_tick) => {
                if let Some(r) = &recheck {
                    if r.refused().await {
                        tracing::info!(
                            principal = %r.subject,
                            "a listen stream's token is refused now: the stream is ended"
                        );
                        return;
                    }
                }
            }
            next = subscription.next() => match next {
                Some(m) => {
                    if frames.send(sse_frame(&m)).await.is_err() {
                        return;
                    }
                }
                None => {
                    let _ = frames.send(sse_frame(&subscription.closing())).await;
                    return;
                }
            },
            _ = tick.tick() => {
                if frames.send(keep_alive_frame()).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn status_only(status: StatusCode) -> HttpResponse {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

fn too_large(limit: usize) -> HttpResponse {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the request body exceeds this server's limit of {limit} bytes"),
    )
}

/// Whether the request's `_meta` asks for progress or logs, i.e. whether
/// the answer may have to stream.
fn wants_notifications(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(PROGRESS_TOKEN) || m.contains_key(LOG_LEVEL))
}

/// Checks the request's bearer token: the principal, or the refusal. A
/// DPoP-bound token (`cnf.jkt`) also needs the `DPoP` scheme and a valid
/// proof for this request (RFC 9449 §7).
async fn authenticate(
    auth: &Auth,
    dpop: &DpopVerifier,
    method: &Method,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<Principal, HttpResponse> {
    let (token, dpop_scheme) = match bearer_token(headers) {
        Ok(Some(token)) => token,
        Ok(None) => {
            let error = AuthError::Unauthorized("a bearer token is required".into());
            return Err(unauthorized(auth, headers, &error, false, peer));
        }
        Err(error) => return Err(auth_failure(auth, &error, true, None, Some(peer))),
    };
    // The token itself is never logged, at any level.
    let principal = match auth.validator.validate(token).await {
        Ok(principal) => principal,
        Err(e) => return Err(unauthorized(auth, headers, &e, true, peer)),
    };
    let bound = dpop::bound_key(&principal.claims);
    let refusal =
        |code: &str, why: &str, nonce: Option<String>| dpop_failure(auth, code, why, nonce, peer);
    match (bound, dpop_scheme) {
        (None, false) => {}
        (None, true) => {
            return Err(refusal(
                "invalid_token",
                "the token is not bound to a DPoP key; send it with the Bearer scheme",
                None,
            ));
        }
        (Some(_), false) => {
            return Err(refusal(
                "invalid_token",
                "the token is bound to a DPoP key: send it with the DPoP scheme and a proof",
                None,
            ));
        }
        (Some(jkt), true) => {
            let mut proofs = headers.get_all(DPOP_HEADER).iter();
            let (Some(proof), None) = (proofs.next(), proofs.next()) else {
                return Err(refusal(
                    "invalid_dpop_proof",
                    "exactly one DPoP proof header is required",
                    None,
                ));
            };
            let target = ProofTarget {
                method: method.as_str(),
                url: &auth.metadata.resource,
                access_token: token,
                jkt,
            };
            match dpop.verify(proof.to_str().unwrap_or_default(), &target) {
                Ok(()) => {}
                Err(DpopError::UseNonce(nonce)) => {
                    return Err(refusal(
                        "use_dpop_nonce",
                        "the DPoP proof must carry the server's nonce",
                        Some(nonce),
                    ));
                }
                Err(e) => return Err(refusal("invalid_dpop_proof", &e.to_string(), None)),
            }
        }
    }
    tracing::trace!(%peer, subject = %principal.subject, "authenticated");
    Ok(principal)
}

/// The `DPoP` proof header (RFC 9449 §4.1).
const DPOP_HEADER: HeaderName = HeaderName::from_static("dpop");

/// A 401 for a DPoP failure: `WWW-Authenticate: DPoP error=…`, and the
/// nonce to use in `DPoP-Nonce` (RFC 9449 §7.1, §9).
fn dpop_failure(
    auth: &Auth,
    code: &str,
    description: &str,
    nonce: Option<String>,
    peer: SocketAddr,
) -> HttpResponse {
    tracing::debug!(%peer, "refused: {description}");
    auth.validator.refused(Refusal::InvalidProof);
    let mut r = refuse(
        StatusCode::UNAUTHORIZED,
        &format!("unauthorized: {description}"),
    );
    let challenge = format!(
        "DPoP error=\"{code}\", error_description=\"{}\", algs=\"ES256\", resource_metadata=\"{}\"",
        quote(description),
        quote(&auth.metadata.metadata_url())
    );
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    if let Some(v) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
        r.headers_mut()
            .insert(HeaderName::from_static("dpop-nonce"), v);
    }
    r
}

/// The bearer token of a request. `Ok(None)` when there is none: no
/// `Authorization` header, or another scheme (RFC 6750 §3.1: a 401 without
/// an error code). A header that is not `Bearer <token68>` (RFC 6750
/// §2.1), or more than one, is [`AuthError::InvalidRequest`] (AUTH-S-06).
/// Error descriptions never quote the header.
fn bearer_token(headers: &HeaderMap) -> Result<Option<(&str, bool)>, AuthError> {
    let invalid = |why: &str| Err(AuthError::InvalidRequest(why.to_owned()));
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return invalid("more than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return invalid("the Authorization header is not printable ASCII");
    };
    let value = value.trim_matches([' ', '\t']);
    let (scheme, credentials) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    let dpop = scheme.eq_ignore_ascii_case("dpop");
    if !scheme.eq_ignore_ascii_case("bearer") && !dpop {
        return Ok(None);
    }
    let token = credentials.trim_start_matches([' ', '\t']);
    if token.is_empty() {
        return Err(AuthError::InvalidRequest(format!(
            "the Authorization header names the {} scheme but carries no token",
            if dpop { "DPoP" } else { "Bearer" }
        )));
    }
    if !is_token68(token) {
        return Err(AuthError::InvalidRequest(format!(
            "the Authorization header is not of the form `{} <token68>`",
            if dpop { "DPoP" } else { "Bearer" }
        )));
    }
    Ok(Some((token, dpop)))
}

/// RFC 7235 token68: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_token68(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The refusal of a request without a usable token: the 401's `scope`
/// names what the validator says this request needs, as far as the
/// `Mcp-Method` / `Mcp-Name` headers tell (the body is not read for a
/// caller not yet known), else `scopes_supported` (AUTH-S-03).
fn unauthorized(
    auth: &Auth,
    headers: &HeaderMap,
    error: &AuthError,
    had_token: bool,
    peer: SocketAddr,
) -> HttpResponse {
    let needed = match error {
        AuthError::Unauthorized(_) => {
            let announced = headers::announced(headers);
            let request = announced.as_ref().map(|(method, name)| AuthRequest {
                method,
                name: name.as_deref(),
            });
            auth.validator.scopes_needed(request.as_ref())
        }
        _ => None,
    };
    auth_failure(auth, error, had_token, needed.as_deref(), Some(peer))
}

/// The refusal for `error`: its status, its challenge (naming `needed` on
/// a 401), a JSON-RPC error body; logged with the peer when known.
fn auth_failure(
    auth: &Auth,
    error: &AuthError,
    had_token: bool,
    needed: Option<&[String]>,
    peer: Option<SocketAddr>,
) -> HttpResponse {
    match peer {
        Some(peer) => tracing::debug!(%peer, "refused: {error}"),
        None => tracing::debug!("refused: {error}"),
    }
    auth.validator.refused(Refusal::of(error, had_token));
    let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut r = refuse(status, &error.to_string());
    if let Some(challenge) = auth.metadata.challenge(error, had_token, needed) {
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
    }
    r
}

/// Whether a query string carries an `access_token` parameter.
fn has_query_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}

/// Runs a plain route for a GET or HEAD; anything else is 405.
async fn plain_route(method: &Method, route: &PlainRoute) -> HttpResponse {
    if *method != Method::GET && *method != Method::HEAD {
        let mut r = status_only(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let answer = route().await;
    let mut r = Response::new(Body::full(answer.body));
    *r.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&answer.content_type) {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}
