//! The HTTP runner's settings ([`HttpOptions`]) and the plain routes
//! served next to the MCP endpoint.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{ProtectedResource, TokenValidator};
use crate::dpop::DpopVerifier;
use crate::runner::tls::ServerTls;

/// Settings of the HTTP runner.
#[derive(Clone)]
pub struct HttpOptions {
    pub(super) path: String,
    pub(super) hosts: Option<Option<Vec<String>>>,
    pub(super) origins: Option<Vec<String>>,
    pub(super) max_body: usize,
    pub(super) keep_alive: Duration,
    pub(super) recheck_streams: Duration,
    pub(super) max_connections: usize,
    pub(super) cancel_grace: Duration,
    pub(super) shutdown_grace: Duration,
    pub(super) auth: Option<Arc<Auth>>,
    pub(super) dpop: Arc<DpopVerifier>,
    pub(super) routes: Vec<(String, PlainRoute)>,
    pub(super) apps: Vec<(String, super::app::AppRoute)>,
    pub(super) tls: Option<ServerTls>,
    pub(super) handshake_timeout: Duration,
    pub(super) header_timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) body_timeout: Duration,
    pub(super) write_timeout: Duration,
    pub(super) max_connections_per_peer: Option<usize>,
    pub(super) peer_tls: Option<Arc<rustls::ClientConfig>>,
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

pub(super) struct Auth {
    pub(super) validator: Box<dyn TokenValidator>,
    pub(super) metadata: ProtectedResource,
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
            apps: Vec::new(),
            tls: None,
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_connections_per_peer: None,
            peer_tls: None,
        }
    }
}

impl HttpOptions {
    /// Serves `route` at `path` (GET and HEAD only) next to the MCP
    /// endpoint, for health, readiness and metrics: behind the `Host`
    /// check of every path ([`HttpOptions::allowed_hosts`]), with no
    /// Origin check (a browser page of another origin cannot read the
    /// answer: it carries no CORS header) and no authorization. A later
    /// route at the same path replaces it.
    #[must_use]
    pub fn plain_route(mut self, path: impl Into<String>, route: PlainRoute) -> Self {
        let path = path.into();
        self.routes.retain(|(p, _)| *p != path);
        self.routes.push((path, route));
        self
    }

    /// Serves every path under `prefix` (`prefix` itself and `prefix/…`)
    /// with `route`, which gets the whole request
    /// ([`AppRequest`](super::AppRequest)): behind the `Host` check, a
    /// token in the URL refused, a bearer token checked when one is sent
    /// (the principal handed on), no `Origin` check (the route makes its
    /// own). A later route at the same prefix replaces it.
    #[must_use]
    pub fn app_route(mut self, prefix: impl Into<String>, route: super::app::AppRoute) -> Self {
        let prefix = prefix.into();
        self.apps.retain(|(p, _)| *p != prefix);
        self.apps.push((prefix, route));
        self
    }

    /// Defaults: endpoint `/mcp`, 4 MiB bodies, keep-alive comment every
    /// 15 s, 1 024 connections (the longest idle one evicted for a new
    /// one), request heads within 10 s, bodies within 30 s, kept-alive
    /// connections idle 120 s at most, answers unread 30 s at most,
    /// loopback-only `Host`/`Origin` when bound to loopback.
    pub fn new() -> Self {
        HttpOptions::default()
    }

    /// The MCP endpoint path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Host names (without port) the server answers to, on every path;
    /// `"*"` allows any. By default: `localhost`, `127.0.0.1` and `[::1]`
    /// when bound to loopback, anything otherwise. A `Host` that is not
    /// `host[:port]` is refused with 400 when names are checked.
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

    /// How many connections are served at once (default 1,024). At the
    /// cap a new connection takes the place of the one idle the longest
    /// (not yet past its TLS handshake or its request head, or kept alive
    /// between requests), which is closed; only when every connection has
    /// a request in flight does the next one wait. So sockets that never
    /// send a complete request cannot keep a caller out.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How many connections one peer address may hold at once (IPv4 and
    /// IPv4-mapped IPv6 counted as one). At its cap its own connection idle
    /// the longest makes room; when all of its connections have a request
    /// in flight, a new one is closed unanswered. Default: no cap per
    /// address, since behind a proxy, or on loopback, every caller has
    /// the same one.
    pub fn max_connections_per_peer(mut self, n: usize) -> Self {
        self.max_connections_per_peer = Some(n.max(1));
        self
    }

    /// How long a request head may take to arrive whole, from its first
    /// byte (for a connection's first request, from the connection's
    /// start, after the TLS handshake when there is one); the connection
    /// is closed past it. Default 10 s: clients send a head at once, and
    /// one trickled a line at a time is an attack.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a kept-alive connection may stay silent between requests
    /// before it is closed. Default 120 s: longer than the 90 s common
    /// HTTP clients (hyper-util, reqwest, Go) keep an unused connection,
    /// so they give it up first and never send a request on one being
    /// closed.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a request body may take to arrive whole, from when the
    /// runner starts reading it (after the bearer token is checked); past
    /// it the request gets 408 and the connection is closed. Default 30 s
    /// (raise it for bodies near [`HttpOptions::max_body`] over slow
    /// links).
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long an answer may wait for the client to read any of it (the
    /// socket taking no byte) before the connection is closed, so a
    /// client that stops reading cannot hold a connection busy. Default
    /// 30 s.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout.max(Duration::from_millis(10));
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
