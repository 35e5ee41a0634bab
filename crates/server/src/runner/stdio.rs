//! The stdio runner: newline-delimited JSON-RPC over stdin/stdout (or any
//! pair of blocking byte streams).
//!
//! A dedicated thread reads and frames stdin (the wire crate's
//! [`LineFramer`]). Each request's future is polled once right there: most
//! answers are ready at once and are written without any hand-off between
//! threads. A request that has to wait is moved onto the tokio runtime and
//! registered for `notifications/cancelled`. Only this runner writes stdout,
//! one complete message per write (STDIO-01/02); logs go to stderr through
//! `tracing`. At end of input the runner lets in-flight requests finish
//! (bounded by a grace period), cancels the rest, and returns (STDIO-12).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use switchboard_wire::meta::PROTOCOL_VERSION;
use switchboard_wire::types::method;
use switchboard_wire::{
    CancelledParams, ErrorCode, ErrorObject, FrameError, LineFramer, Message, Notification,
    Request, RequestId,
};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::cancel::Cancellation;
use crate::dispatch::{Incoming, Reply, frame_error, frame_result};
use crate::error::ServeError;
use crate::fast;
use crate::legacy::Session;
use crate::notify::Subscription;
use crate::server::Server;
use crate::sink::{LineSink, Sink};

/// Settings of the stdio runner.
#[derive(Clone, Debug)]
pub struct StdioOptions {
    max_line: usize,
    shutdown_grace: Duration,
    max_in_flight: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_line: 16 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(5),
            max_in_flight: 10_000,
        }
    }
}

impl StdioOptions {
    /// Default settings: 16 MiB lines, 5 s grace at end of input, 10 000
    /// requests in flight.
    pub fn new() -> Self {
        StdioOptions::default()
    }

    /// The longest message accepted; longer ones are answered with an error
    /// and skipped.
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes.max(1);
        self
    }

    /// How long requests still running at end of input may take before
    /// they are cancelled.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How many requests may run at once; reading pauses beyond that.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }
}

/// Serves `server` on this process's stdin and stdout until stdin ends.
///
/// # Errors
/// [`ServeError::Io`] when stdin cannot be read.
pub async fn serve(server: Server) -> Result<(), ServeError> {
    serve_with(server, StdioOptions::default()).await
}

/// [`serve`] with settings.
///
/// # Errors
/// [`ServeError::Io`] when stdin cannot be read.
pub async fn serve_with(server: Server, options: StdioOptions) -> Result<(), ServeError> {
    serve_io(server, io::stdin(), StdoutLines, options).await
}

/// Serves `server` on any blocking byte streams (a pipe, a socket, …) with
/// the stdio framing.
///
/// # Errors
/// [`ServeError::Io`] when `reader` fails.
pub async fn serve_io<R, W>(
    server: Server,
    reader: R,
    writer: W,
    options: StdioOptions,
) -> Result<(), ServeError>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let shared = Arc::new(Shared {
        server,
        writer: Mutex::new(Box::new(writer)),
        broken: AtomicBool::new(false),
        in_flight: Mutex::new(HashMap::new()),
        running: Mutex::new(0),
        idle: Condvar::new(),
        session: Mutex::new(None),
        eof: Cancellation::new(),
        options,
        handle: Handle::current(),
    });
    let (done_tx, done_rx) = oneshot::channel();
    let reader_shared = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("mcp-stdio-reader".into())
        .spawn(move || {
            let r = reader_shared.read_loop(reader);
            let _ = done_tx.send(r);
        })
        .map_err(|source| ServeError::Io {
            context: "cannot start the stdin reader thread",
            source,
        })?;
    let result = done_rx.await.unwrap_or(Ok(()));
    shared.drain().await;
    result
}

/// Process stdout, written one whole message at a time.
struct StdoutLines;

impl Write for StdoutLines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = io::stdout().lock();
        out.write_all(buf)?;
        out.flush()?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().lock().flush()
    }
}

struct Shared {
    server: Server,
    writer: Mutex<Box<dyn Write + Send>>,
    /// The output stream failed: the client is gone.
    broken: AtomicBool,
    /// Requests that are waiting, by id, for `notifications/cancelled`.
    in_flight: Mutex<HashMap<RequestId, Cancellation>>,
    /// How many requests were moved onto the runtime and are unfinished.
    running: Mutex<usize>,
    idle: Condvar,
    /// The legacy session, once a legacy client sent `initialize`.
    session: Mutex<Option<Arc<Session>>>,
    /// Fires at end of input: listen streams end with it.
    eof: Cancellation,
    options: StdioOptions,
    handle: Handle,
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LineSink for Shared {
    fn write_line(&self, mut message: Vec<u8>) -> bool {
        if self.broken.load(Ordering::Relaxed) {
            return false;
        }
        message.push(b'\n');
        let mut w = lock(&self.writer);
        let ok = w.write_all(&message).and_then(|()| w.flush()).is_ok();
        if !ok {
            self.broken.store(true, Ordering::Relaxed);
            tracing::warn!("stdout is closed; answers can no longer be delivered");
        }
        ok
    }
}

impl Shared {
    fn read_loop<R: Read>(self: &Arc<Self>, mut reader: R) -> Result<(), ServeError> {
        let _runtime = self.handle.enter();
        let mut framer = LineFramer::with_max_line(self.options.max_line);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ServeError::Io {
                        context: "cannot read stdin",
                        source,
                    });
                }
            };
            framer.push(&buf[..n]);
            loop {
                match framer.next_line() {
                    Ok(Some(line)) => self.on_line(line),
                    Ok(None) => break,
                    Err(e) => self.on_frame_error(&e),
                }
            }
        }
        match framer.finish() {
            Ok(Some(line)) => self.on_line(line),
            Ok(None) => {}
            Err(e) => self.on_frame_error(&e),
        }
        Ok(())
    }

    fn on_frame_error(&self, e: &FrameError) {
        tracing::warn!("skipping a message: {e}");
        let error = ErrorObject::new(ErrorCode::InvalidRequest, e.to_string());
        self.write_line(frame_error(None, &error));
    }

    fn on_line(self: &Arc<Self>, line: &[u8]) {
        if let Some(call) = fast::tool_call(line) {
            let id = call.id.clone();
            return self.start(id, None, move |server, incoming| async move {
                server.dispatch_tool_call(call, incoming).await
            });
        }
        match Message::from_slice(line) {
            Ok(Message::Request(request)) => self.on_request(request),
            Ok(Message::Notification(n)) => self.on_notification(&n),
            Ok(Message::Response(response)) => {
                let session = lock(&self.session).clone();
                let resolved = session.is_some_and(|s| s.resolve(response));
                if !resolved {
                    tracing::debug!("ignoring a response that answers no request of ours");
                }
            }
            Err(e) => {
                tracing::warn!("skipping an unreadable message: {e}");
                let error = ErrorObject::new(e.code(), e.to_string());
                self.write_line(frame_error(e.id(), &error));
            }
        }
    }

    fn on_notification(&self, n: &Notification) {
        if n.method != method::CANCELLED {
            return;
        }
        // CANC-10: malformed or unknown cancellations are ignored.
        let Some(params) = n
            .params
            .clone()
            .and_then(|p| serde_json::from_value::<CancelledParams>(p).ok())
        else {
            return;
        };
        if let Some(token) = lock(&self.in_flight).get(&params.request_id) {
            tracing::debug!(
                id = %params.request_id,
                reason = params.reason.as_deref().unwrap_or(""),
                "request cancelled by the client"
            );
            token.cancel();
        }
    }

    fn on_request(self: &Arc<Self>, request: Request) {
        let modern = has_modern_meta(request.params.as_ref());
        if request.method == method::INITIALIZE && !modern && self.server.inner.options.legacy {
            match self.server.initialize(request.params.as_ref(), None) {
                Ok((session, result)) => {
                    *lock(&self.session) = Some(session);
                    self.write_line(frame_result(&request.id, &result, 1));
                }
                Err(f) => {
                    self.write_line(frame_error(Some(&request.id), &f.error));
                }
            }
            return;
        }
        let session = if modern {
            None
        } else {
            lock(&self.session).clone()
        };
        let id = request.id.clone();
        self.start(id, session, move |server, incoming| async move {
            server.dispatch(request, incoming).await
        });
    }

    /// Starts a request: polls it once here, and moves it onto the runtime
    /// only if it has to wait.
    fn start<F, Fut>(self: &Arc<Self>, id: RequestId, session: Option<Arc<Session>>, route: F)
    where
        F: FnOnce(Server, Incoming) -> Fut,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let cancel = Cancellation::new();
        let shared: Arc<dyn LineSink> = Arc::<Shared>::clone(self);
        let incoming = Incoming {
            principal: None,
            sink: Sink::Lines(shared),
            cancel: cancel.clone(),
            session,
        };
        let mut fut = Box::pin(route(self.server.clone(), incoming));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(reply) => self.respond(id, reply, cancel),
            Poll::Pending => self.spawn(id, fut, cancel),
        }
    }

    fn spawn(
        self: &Arc<Self>,
        id: RequestId,
        mut fut: Pin<Box<impl Future<Output = Reply> + Send + 'static>>,
        cancel: Cancellation,
    ) {
        self.admit();
        lock(&self.in_flight).insert(id.clone(), cancel.clone());
        let shared = Arc::clone(self);
        self.handle.spawn(async move {
            let reply = tokio::select! {
                r = &mut fut => Some(r),
                () = cancel.cancelled() => None,
            };
            match reply {
                Some(reply) if !cancel.is_cancelled() => {
                    shared.forget(&id, &cancel);
                    shared.respond(id, reply, cancel);
                }
                Some(_) => shared.forget(&id, &cancel),
                None => {
                    shared.forget(&id, &cancel);
                    // STDIO-10: nothing more is sent; the handler gets a
                    // moment to see the cancellation and clean up.
                    let _ = tokio::time::timeout(shared.options.shutdown_grace, fut).await;
                }
            }
            shared.release();
        });
    }

    fn respond(self: &Arc<Self>, id: RequestId, reply: Reply, cancel: Cancellation) {
        match reply {
            Reply::Result(bytes) => {
                self.write_line(frame_result(&id, &bytes, 1));
            }
            Reply::Error(fault) => {
                self.write_line(frame_error(Some(&id), &fault.error));
            }
            Reply::Listen(subscription) => self.pump(subscription, cancel),
        }
    }

    /// Runs a listen stream: acknowledgment first, then its notifications,
    /// until the client cancels it or the server shuts down.
    fn pump(self: &Arc<Self>, mut subscription: Subscription, cancel: Cancellation) {
        let id = subscription.id().clone();
        self.admit();
        lock(&self.in_flight).insert(id.clone(), cancel.clone());
        let shared = Arc::clone(self);
        self.handle.spawn(async move {
            shared.write_line(subscription.ack());
            loop {
                // Cancellation first: once the client cancelled, nothing
                // more is sent for this stream (STDIO-10).
                let next = tokio::select! {
                    biased;
                    () = cancel.cancelled() => break,
                    () = shared.eof.cancelled() => break,
                    n = subscription.next() => n,
                };
                match next {
                    Some(message) => {
                        if cancel.is_cancelled() || !shared.write_line(message) {
                            break;
                        }
                    }
                    None => {
                        // The server ends it: say so (SUB-07, CANC-05).
                        shared.write_line(subscription.closing());
                        shared.write_line(subscription.cancelled());
                        break;
                    }
                }
            }
            shared.forget(&id, &cancel);
            shared.release();
        });
    }

    fn forget(&self, id: &RequestId, token: &Cancellation) {
        let mut map = lock(&self.in_flight);
        // A reused id may belong to a newer request now.
        if map.get(id).is_some_and(|t| t.same(token)) {
            map.remove(id);
        }
    }

    /// Waits for room under the in-flight limit, then counts one more.
    fn admit(&self) {
        let mut running = lock(&self.running);
        while *running >= self.options.max_in_flight {
            running = self
                .idle
                .wait(running)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *running += 1;
    }

    fn release(&self) {
        let mut running = lock(&self.running);
        *running = running.saturating_sub(1);
        self.idle.notify_all();
    }

    /// At end of input: let running requests finish within the grace
    /// period, then cancel what is left.
    async fn drain(self: &Arc<Self>) {
        // Listen streams never finish by themselves.
        self.eof.cancel();
        let deadline = tokio::time::Instant::now() + self.options.shutdown_grace;
        while *lock(&self.running) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for token in lock(&self.in_flight).values() {
            token.cancel();
        }
    }
}

/// Whether params carry a modern `_meta` (and so are not part of a legacy
/// session).
fn has_modern_meta(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION))
        .is_some()
}
