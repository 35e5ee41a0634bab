//! The stdio runner: newline-delimited JSON-RPC over stdin/stdout (or any
//! pair of blocking byte streams).
//!
//! A dedicated thread reads and frames stdin (the wire crate's
//! [`LineFramer`]). Each request is started right there and its future
//! polled once: most answers are ready at once and are written without any
//! hand-off between threads (a plain `tools/call` does not even become a
//! future of its own then: only its handler's is polled). A request that
//! has to wait is moved onto the tokio runtime and registered for
//! `notifications/cancelled`. Only this runner writes stdout,
//! whole lines only (STDIO-01/02); logs go to stderr through `tracing`.
//!
//! What the reader thread answers is framed straight into the lines it
//! holds and written once it has handled all the input it has (before it
//! waits for more), so a burst of pipelined requests costs one write; what
//! tasks on the runtime send is written at once, after anything the reader
//! still holds.
//!
//! At end of input the runner lets in-flight requests finish (bounded by
//! a grace period), cancels the rest, and returns (STDIO-12).

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use switchboard_wire::meta::PROTOCOL_VERSION;
use switchboard_wire::types::method;
use switchboard_wire::{
    ErrorCode, ErrorObject, FrameError, LineFramer, Message, Notification, Request, RequestId,
    types::CancelledParams,
};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::cancel::Cancellation;
use crate::dispatch::{
    CallStart, FRAME_OVERHEAD, Incoming, Reply, RunningCall, append_result_frame, frame_error,
    frame_result,
};
use crate::error::ServeError;
use crate::fast;
use crate::legacy::Session;
use crate::notify::Subscription;
use crate::server::Server;
use crate::sink::{LineSink, Sink};
use switchboard_wire::shared::lock;

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
        writer: Mutex::new(Output {
            stream: Box::new(writer),
            held: Vec::new(),
        }),
        broken: AtomicBool::new(false),
        in_flight: Mutex::new(HashMap::new()),
        in_flight_ids: AtomicUsize::new(0),
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

/// Above this many held bytes the reader thread writes without waiting
/// for the end of its input.
const HOLD_LIMIT: usize = 64 * 1024;

thread_local! {
    /// Whether this thread is the stdin reader, whose answers are held
    /// until it has handled all the input it has.
    static ON_READER: Cell<bool> = const { Cell::new(false) };
}

/// stdout, and the lines the reader thread holds for it.
struct Output {
    stream: Box<dyn Write + Send>,
    held: Vec<u8>,
}

impl Output {
    /// Writes the held lines, then `line` (may be empty).
    fn write_through(&mut self, line: &[u8]) -> io::Result<()> {
        if !self.held.is_empty() {
            self.held.extend_from_slice(line);
            let result = self.stream.write_all(&self.held);
            self.held.clear();
            result?;
        } else if !line.is_empty() {
            self.stream.write_all(line)?;
        } else {
            return Ok(());
        }
        self.stream.flush()
    }
}

struct Shared {
    server: Server,
    writer: Mutex<Output>,
    /// The output stream failed: the client is gone.
    broken: AtomicBool,
    /// Requests that are waiting, by id, for `notifications/cancelled`.
    in_flight: Mutex<HashMap<RequestId, Cancellation>>,
    /// How many ids `in_flight` holds, kept beside it under its lock: the
    /// reader checks a new request's id against the map only when it is
    /// not empty (most requests answer at once and are never in it).
    in_flight_ids: AtomicUsize,
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

impl LineSink for Shared {
    fn write_line(&self, mut message: Vec<u8>) -> bool {
        if self.broken.load(Ordering::Relaxed) {
            return false;
        }
        message.push(b'\n');
        let mut out = lock(&self.writer);
        if ON_READER.get() && out.held.len() + message.len() <= HOLD_LIMIT {
            out.held.extend_from_slice(&message);
            return true;
        }
        let ok = out.write_through(&message).is_ok();
        drop(out);
        self.check_written(ok)
    }
}

impl Shared {
    /// Writes the answer `result` to request `id`. On the reader thread it
    /// is framed straight into the lines held for stdout: no buffer of its
    /// own, no copy.
    fn write_result(&self, id: &RequestId, result: &[u8]) -> bool {
        if ON_READER.get() {
            if self.broken.load(Ordering::Relaxed) {
                return false;
            }
            let mut out = lock(&self.writer);
            // Ids are short; a long one only makes the estimate err on the
            // side of writing at once.
            if out.held.len() + FRAME_OVERHEAD + 24 + result.len() < HOLD_LIMIT {
                append_result_frame(&mut out.held, id, result);
                out.held.push(b'\n');
                return true;
            }
        }
        self.write_line(frame_result(id, result, 1))
    }

    /// Writes what the reader thread holds.
    fn write_held(&self) -> bool {
        let ok = lock(&self.writer).write_through(&[]).is_ok();
        self.check_written(ok)
    }

    fn check_written(&self, ok: bool) -> bool {
        if !ok && !self.broken.swap(true, Ordering::Relaxed) {
            tracing::warn!("stdout is closed; answers can no longer be delivered");
        }
        ok
    }

    fn read_loop<R: Read>(self: &Arc<Self>, mut reader: R) -> Result<(), ServeError> {
        let _runtime = self.handle.enter();
        ON_READER.set(true);
        let mut framer = LineFramer::with_max_line(self.options.max_line);
        loop {
            // Nothing is held while waiting for input.
            self.write_held();
            match framer.read_from(&mut reader) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ServeError::Io {
                        context: "cannot read stdin",
                        source,
                    });
                }
            }
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
        self.write_held();
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
            if self.refuse_pending_id(&id) {
                return;
            }
            let cancel = Cancellation::new();
            let incoming = self.incoming(&cancel, None);
            return match self.server.start_tool_call(call, incoming) {
                CallStart::Done(reply) => self.respond(id, reply, cancel),
                // One that waits keeps its call past this line's buffer.
                CallStart::Running(running) => {
                    self.drive(id, running, cancel, RunningCall::into_owned);
                }
            };
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
                    self.write_result(&request.id, &result);
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
        if self.refuse_pending_id(&id) {
            return;
        }
        let cancel = Cancellation::new();
        let incoming = self.incoming(&cancel, session);
        self.drive(
            id,
            Box::pin(route(self.server.clone(), incoming)),
            cancel,
            |f| f,
        );
    }

    /// JSON-RPC ids are unique among requests in flight: a second request
    /// under a pending id is refused (its answer names the id, which is all
    /// JSON-RPC allows) and never run, so the first keeps its cancellation.
    fn refuse_pending_id(&self, id: &RequestId) -> bool {
        // Reading the count takes no lock. A zero read while another
        // thread adds an id orders this check before that addition, as
        // the lock could have done too.
        if self.in_flight_ids.load(Ordering::Acquire) == 0
            || !lock(&self.in_flight).contains_key(id)
        {
            return false;
        }
        tracing::warn!(%id, "refusing a request whose id is already in flight");
        let error = ErrorObject::new(
            ErrorCode::InvalidRequest,
            format!(
                "request id {id} is already in flight; ids must be unique among pending requests"
            ),
        );
        self.write_line(frame_error(Some(id), &error));
        true
    }

    /// What the router knows of a request on this stream.
    fn incoming(
        self: &Arc<Self>,
        cancel: &Cancellation,
        session: Option<Arc<Session>>,
    ) -> Incoming {
        let shared: Arc<dyn LineSink> = Arc::<Shared>::clone(self);
        Incoming {
            principal: None,
            sink: Sink::Lines(shared),
            cancel: cancel.clone(),
            session,
        }
    }

    /// Polls a request's future once, here on the reader thread, and
    /// answers it, or moves it onto the runtime if it has to wait.
    fn drive<Fut, Owned>(
        self: &Arc<Self>,
        id: RequestId,
        mut fut: Fut,
        cancel: Cancellation,
        own: impl FnOnce(Fut) -> Owned,
    ) where
        Fut: Future<Output = Reply> + Unpin,
        Owned: Future<Output = Reply> + Unpin + Send + 'static,
    {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match Pin::new(&mut fut).poll(&mut cx) {
            Poll::Ready(reply) => self.respond(id, reply, cancel),
            // What it borrowed from the line is owned before it waits.
            Poll::Pending => self.spawn(id, own(fut), cancel),
        }
    }

    fn spawn<Fut>(self: &Arc<Self>, id: RequestId, mut fut: Fut, cancel: Cancellation)
    where
        Fut: Future<Output = Reply> + Unpin + Send + 'static,
    {
        self.admit();
        self.track(&id, &cancel);
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
                self.write_result(&id, &bytes);
            }
            Reply::Error(fault) => {
                self.write_line(frame_error(Some(&id), &fault.error));
            }
            Reply::Listen(subscription) => self.pump(*subscription, cancel),
        }
    }

    /// Runs a listen stream: acknowledgment first, then its notifications,
    /// until the client cancels it or the server shuts down.
    fn pump(self: &Arc<Self>, mut subscription: Subscription, cancel: Cancellation) {
        let id = subscription.id().clone();
        self.admit();
        self.track(&id, &cancel);
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
            self.in_flight_ids.store(map.len(), Ordering::Release);
        }
    }

    /// Keeps a request that has to wait, by id, for cancellation.
    fn track(&self, id: &RequestId, cancel: &Cancellation) {
        let mut map = lock(&self.in_flight);
        map.insert(id.clone(), cancel.clone());
        self.in_flight_ids.store(map.len(), Ordering::Release);
    }

    /// Waits for room under the in-flight limit, then counts one more.
    fn admit(&self) {
        let mut running = lock(&self.running);
        if *running >= self.options.max_in_flight {
            // The reader waits here: nothing it holds may wait with it.
            drop(running);
            self.write_held();
            running = lock(&self.running);
        }
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

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use serde_json::json;

    use super::*;
    use crate::Context;

    /// A stdout that records each write it is given.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            lock(&self.0).push(buf.to_vec());
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Recorder {
        fn lines(&self) -> Vec<Value> {
            lock(&self.0)
                .concat()
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect()
        }
    }

    fn call(id: usize, tool: &str, meta: Value) -> String {
        let params = json!({"name": tool, "arguments": {}, "_meta": meta});
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
        )
    }

    fn meta() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    }

    fn server() -> Server {
        Server::builder("t", "1")
            .tool("now", "Answers at once", |_: Context| async { "now" })
            .tool(
                "later",
                "Reports progress, then answers after a wait",
                |ctx: Context| async move {
                    ctx.progress(1.0, None, Some("started")).await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    "later"
                },
            )
            .build()
            .unwrap()
    }

    // A burst of pipelined requests read in one piece is answered in one
    // write, every answer complete and on its own line (STDIO-01/02).
    #[tokio::test]
    async fn a_burst_read_at_once_is_answered_in_one_write() {
        let input: String = (0..50).map(|i| call(i, "now", meta())).collect();
        let out = Recorder::default();
        serve_io(
            server(),
            Cursor::new(input),
            out.clone(),
            StdioOptions::new(),
        )
        .await
        .unwrap();
        assert_eq!(lock(&out.0).len(), 1, "one write for the burst");
        let ids: Vec<u64> = out
            .lines()
            .iter()
            .map(|m| m["id"].as_u64().unwrap())
            .collect();
        assert_eq!(ids, (0..50).collect::<Vec<_>>());
    }

    // An answer too long to hold is written at once, after what the reader
    // held, and the answers still come whole and in order (STDIO-01/02).
    #[tokio::test]
    async fn an_answer_too_long_to_hold_keeps_its_place() {
        let big = "x".repeat(HOLD_LIMIT + 1);
        let expected = big.clone();
        let server = Server::builder("t", "1")
            .tool("now", "Answers at once", |_: Context| async { "now" })
            .tool(
                "big",
                "Answers with more than the runner holds",
                move |_: Context| {
                    let big = big.clone();
                    async move { big }
                },
            )
            .build()
            .unwrap();
        let input = call(0, "now", meta()) + &call(1, "big", meta()) + &call(2, "now", meta());
        let out = Recorder::default();
        serve_io(server, Cursor::new(input), out.clone(), StdioOptions::new())
            .await
            .unwrap();
        let lines = out.lines();
        let ids: Vec<u64> = lines.iter().map(|m| m["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, [0, 1, 2]);
        assert_eq!(lines[1]["result"]["content"][0]["text"], expected.as_str());
        assert_eq!(lines[2]["result"]["content"][0]["text"], "now");
    }

    // What the reader holds is written before anything a task sends, so a
    // request's progress still comes before its answer (PROG-04) when the
    // answer is sent while the reader holds the progress.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn held_lines_go_before_what_tasks_send() {
        let out = Recorder::default();
        let seen = out.clone();
        let server = Server::builder("t", "1")
            .tool(
                "later",
                "Reports progress, then answers after a wait",
                |ctx: Context| async move {
                    ctx.progress(1.0, None, Some("started")).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    "later"
                },
            )
            .tool(
                "busy",
                "Holds the reader until something was written",
                move |_: Context| {
                    // Runs on the reader thread, before the first await: the
                    // reader holds the progress line meanwhile.
                    let deadline = std::time::Instant::now() + Duration::from_secs(30);
                    while lock(&seen.0).is_empty() && std::time::Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    async { "busy" }
                },
            )
            .build()
            .unwrap();
        let mut progress_meta = meta();
        progress_meta["progressToken"] = json!("p");
        let input = call(1, "later", progress_meta) + &call(2, "busy", meta());
        serve_io(server, Cursor::new(input), out.clone(), StdioOptions::new())
            .await
            .unwrap();
        let kinds: Vec<String> = out
            .lines()
            .iter()
            .map(|m| match m.get("method") {
                Some(method) => method.as_str().unwrap().to_owned(),
                None => format!("answer {}", m["id"]),
            })
            .collect();
        assert_eq!(kinds, ["notifications/progress", "answer 1", "answer 2"]);
    }
}
