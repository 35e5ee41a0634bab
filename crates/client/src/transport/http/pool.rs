//! Keep-alive connections to the server's origin, one request at a time
//! each (HTTP/1.1), reused once a response body has been read to its end.
//!
//! Built on hyper's connection API rather than a general-purpose pooled
//! client: a transport talks to one origin, so the pool is one list, a
//! request costs one hand-off to its connection's task, and a response body
//! dropped before its end (a cancelled request) takes its connection with
//! it, which is exactly the cancellation signal Streamable HTTP wants.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{Builder, SendRequest};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::task::AbortHandle;
use tower_service::Service;

use super::conn::Limits;
use super::failure::Failure;
use crate::error::Source;
use crate::net::error_chain;
use switchboard_wire::shared::lock;

/// How long an idle connection is kept; servers close theirs around here.
const IDLE_TIMEOUT: Duration = Duration::from_secs(55);
/// Most idle connections kept.
const MAX_IDLE: usize = 256;

/// The connections of one transport.
pub(crate) struct Pool {
    connector: HttpsConnector<HttpConnector>,
    limits: Limits,
    idle: Mutex<Vec<Idle>>,
    /// The tasks driving the open connections, so `close` can end them.
    tasks: Mutex<Vec<AbortHandle>>,
    closed: AtomicBool,
}

struct Idle {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map(|i| i.len()).unwrap_or(0);
        f.debug_struct("Pool").field("idle", &idle).finish()
    }
}

impl Pool {
    pub(crate) fn new(connector: HttpsConnector<HttpConnector>, limits: Limits) -> Arc<Pool> {
        Arc::new(Pool {
            connector,
            limits,
            idle: Mutex::new(Vec::new()),
            tasks: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// Sends `request` (origin-form URI, `Host` set) to `target`'s origin
    /// on an idle connection, or a new one. A request that never left
    /// because its pooled connection had just closed is sent again on a
    /// new connection.
    ///
    /// # Errors
    /// [`Failure::Connect`] when no connection can be made or the exchange
    /// fails before the response head.
    pub(crate) async fn send(
        self: &Arc<Self>,
        target: &Uri,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<PooledBody>, Failure> {
        loop {
            let (mut sender, fresh) = match self.take_idle().await {
                Some(sender) => (sender, false),
                // Boxed: connecting is rare, and its state is large.
                None => (Box::pin(self.connect(target)).await?, true),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let (parts, body) = response.into_parts();
                    let mut body = PooledBody {
                        body,
                        sender: Some(sender),
                        pool: Arc::downgrade(self),
                    };
                    if body.body.is_end_stream() {
                        body.release();
                    }
                    return Ok(Response::from_parts(parts, body));
                }
                Err(mut e) => match e.take_message() {
                    // Never written: the idle connection had gone away.
                    Some(again) if !fresh => request = again,
                    _ if e.error().is_parse() => {
                        let cause = error_chain(e.error());
                        return Err(Failure::Protocol(if cause.contains("too large") {
                            format!(
                                "response head larger than the {}-byte limit",
                                self.limits.max_header_bytes
                            )
                        } else {
                            format!("the response head is not valid HTTP: {cause}")
                        }));
                    }
                    _ => {
                        return Err(Failure::Connect(
                            error_chain(e.error()),
                            Some(Source::new(e.into_error())),
                        ));
                    }
                },
            }
        }
    }

    /// Ends every open connection: requests on them fail at once.
    pub(crate) fn abort_all(&self) {
        lock(&self.idle).clear();
        for task in std::mem::take(&mut *lock(&self.tasks)) {
            task.abort();
        }
    }

    /// [`Pool::abort_all`], and no new connections.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.abort_all();
    }

    async fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        loop {
            let idle = lock(&self.idle).pop()?;
            let mut sender = idle.sender;
            if sender.is_closed() || idle.since.elapsed() > IDLE_TIMEOUT {
                continue;
            }
            if sender.is_ready() || sender.ready().await.is_ok() {
                return Some(sender);
            }
        }
    }

    fn release(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                sender,
                since: Instant::now(),
            });
        }
    }

    async fn connect(&self, target: &Uri) -> Result<SendRequest<Full<Bytes>>, Failure> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        let authority = target.authority().map_or("", |a| a.as_str()).to_owned();
        let mut connector = self.connector.clone();
        let connecting = async {
            let io = connector.call(target.clone()).await.map_err(|e| {
                Failure::Connect(
                    format!("cannot connect to {authority}: {}", error_chain(&*e)),
                    Some(Source::from(e)),
                )
            })?;
            // hyper's default bound on the number of headers (100) is
            // kept: setting one makes it allocate the index on every parse.
            let mut builder = Builder::new();
            builder
                .max_buf_size(self.limits.max_header_bytes.max(8192))
                .max_header_size(self.limits.max_header_bytes);
            builder.handshake(io).await.map_err(|e| {
                Failure::Connect(
                    format!(
                        "HTTP handshake with {authority} failed: {}",
                        error_chain(&e)
                    ),
                    Some(Source::new(e)),
                )
            })
        };
        let (sender, connection) = tokio::time::timeout(self.limits.connect_timeout, connecting)
            .await
            .map_err(|elapsed| {
                Failure::Connect(
                    format!(
                        "connecting to {authority} took longer than {:?}",
                        self.limits.connect_timeout
                    ),
                    Some(Source::new(elapsed)),
                )
            })??;
        let task = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "HTTP connection ended with an error");
            }
        });
        let mut tasks = lock(&self.tasks);
        if self.closed.load(Ordering::Acquire) {
            task.abort();
            return Err(Failure::Closed);
        }
        tasks.retain(|t| !t.is_finished());
        tasks.push(task.abort_handle());
        Ok(sender)
    }
}

/// A response body that gives its connection back to the pool once read to
/// its end; dropped earlier, it closes the connection.
pub(crate) struct PooledBody {
    body: Incoming,
    sender: Option<SendRequest<Full<Bytes>>>,
    pool: Weak<Pool>,
}

impl PooledBody {
    fn release(&mut self) {
        if let (Some(sender), Some(pool)) = (self.sender.take(), self.pool.upgrade()) {
            pool.release(sender);
        }
    }
}

impl std::fmt::Debug for PooledBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBody")
            .field("pooled", &self.sender.is_some())
            .finish()
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.release(),
            Poll::Ready(Some(Err(_))) => this.sender = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
