//! The stdio transport: the server is a child process speaking
//! newline-delimited JSON-RPC on its stdin and stdout.
//!
//! Four tasks per server, each owning one thing:
//! - the **reader** owns stdout: it frames lines ([`LineFramer`]), skips and
//!   counts lines that are not JSON-RPC (failing at once the request an
//!   unparseable or over-long answer names: [`scan::response_id`]),
//!   completes requests by id, drops late responses, and routes
//!   notifications (progress by token, listen-stream notifications by
//!   subscription id, a log message to the only request in flight when
//!   there is just one, the rest to the event sink);
//! - the **stderr** task logs each line with the server's name (never as an
//!   error; STDIO-06) and keeps the last few for diagnostics;
//! - the **writer** runs in two cases: when several requests are in flight
//!   (callers then queue their lines and the writer sends everything queued
//!   in this scheduler tick in one write), and when the pipe is full (it
//!   waits until the server reads, then writes the rest). A request alone
//!   in flight is written straight to the pipe by its caller, with no task
//!   hop;
//! - the **supervisor** owns the child: it notices the exit, and on
//!   shutdown closes stdin, waits, then sends `SIGTERM` and `SIGKILL` to the
//!   process group (STDIO-11).
//!
//! When the server goes away, every pending request fails at once with the
//! exit status and the last stderr lines (DESIGN item 3).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_wire::framing::DEFAULT_MAX_LINE;
use switchboard_wire::meta::{META, PROGRESS_TOKEN, SUBSCRIPTION_ID};
use switchboard_wire::scan;
use switchboard_wire::types::method;
use switchboard_wire::{LineFramer, Message, Notification, Request, RequestId, Response};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, oneshot, watch};
use tracing::{debug, info, warn};

use crate::error::{Source, TransportError};
use crate::pending::{Entry, Pending};
use crate::transport::sandbox::{self, Confinement, Environment, Leftovers, Sandbox, SandboxStop};
use crate::transport::spawn::{forget_group, group_alive, signal_group, spawn_server};
use crate::transport::{BoxFuture, EventSink, Incoming, Outgoing, Transport};
use switchboard_wire::shared::lock;

/// How to start a stdio server.
///
/// `Debug` shows the names of [`StdioConfig::env`], never their values.
#[derive(Clone)]
pub struct StdioConfig {
    /// The server's name (alias): tags its stderr lines and every error.
    pub name: String,
    /// The program to run.
    pub command: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to the environment [`StdioConfig::environment`]
    /// selects (they win over the host's).
    pub env: Vec<(OsString, OsString)>,
    /// Which of the host's variables the server gets: all of them by
    /// default; [`Environment::Scrubbed`] keeps a short list.
    pub environment: Environment,
    /// How the server is confined: not at all by default (see
    /// [`Sandbox`]).
    pub sandbox: Sandbox,
    /// The working directory; the client's when `None`.
    pub cwd: Option<PathBuf>,
    /// The longest stdout line accepted; longer ones are skipped with an
    /// error that names the size (default 64 MiB), and the request one
    /// answers fails at once when its first 64 KiB name it.
    pub max_line: usize,
    /// How many stderr lines to keep for [`StdioTransport::stderr_tail`]
    /// and for error causes.
    pub stderr_lines: usize,
    /// Shutdown: how long to wait after closing stdin before `SIGTERM`, and
    /// after `SIGTERM` before `SIGKILL`.
    pub shutdown_grace: Duration,
}

impl StdioConfig {
    /// Runs `command` for the server called `name`, with defaults.
    pub fn new(name: impl Into<String>, command: impl Into<OsString>) -> Self {
        StdioConfig {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            environment: Environment::Inherit,
            sandbox: Sandbox::none(),
            cwd: None,
            max_line: DEFAULT_MAX_LINE,
            stderr_lines: 50,
            shutdown_grace: Duration::from_secs(2),
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets which of the host's variables the server gets.
    pub fn environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// Sets how the server is confined.
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// What the server would be allowed to do, worked out without starting
    /// it (nothing is created): `doctor` shows it.
    pub fn plan(&self) -> Confinement {
        sandbox::plan(
            &self.sandbox,
            &self.environment,
            &self.env,
            &self.command,
            self.cwd.as_deref(),
        )
    }
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values of the environment may be credentials: names only.
        let env: Vec<_> = self.env.iter().map(|(k, _)| k).collect();
        f.debug_struct("StdioConfig")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env)
            .field("environment", &self.environment)
            .field("sandbox", &self.sandbox)
            .field("cwd", &self.cwd)
            .field("max_line", &self.max_line)
            .field("stderr_lines", &self.stderr_lines)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish()
    }
}

/// A running stdio server. Cheap to clone; the server is shut down when
/// the last clone is dropped or [`Transport::close`] is called.
#[derive(Clone)]
pub struct StdioTransport {
    shared: Arc<Shared>,
    life: Arc<Life>,
}

/// Lines of stderr longer than this are cut when kept.
const STDERR_MAX_LINE: usize = 16 * 1024;
/// How many stderr lines an error cause quotes.
const CAUSE_STDERR_LINES: usize = 5;
/// After stdout ends, how long to wait for the exit status and the end of
/// stderr so the failure can name them.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);
/// After the process exits, how long the reader may take to deliver what
/// the server wrote before pending requests are failed anyway (a
/// grandchild may hold stdout open).
const DRAIN_WAIT: Duration = Duration::from_secs(1);

struct Shared {
    name: String,
    pid: Option<u32>,
    pending: Mutex<Pending>,
    writer: Mutex<Writer>,
    /// Wakes the writer task when the pipe was full.
    wake_writer: Notify,
    events: RwLock<Option<EventSink>>,
    stderr_tail: Mutex<VecDeque<String>>,
    stderr_cap: usize,
    junk_lines: AtomicU64,
    exit: watch::Sender<Option<ExitStatus>>,
    stdout_done: watch::Sender<bool>,
    stderr_done: watch::Sender<bool>,
    /// Set when stdin is closed (shutdown), to stop the writer.
    stdin_closed: watch::Sender<bool>,
    /// Set when the supervisor has finished (the process is gone).
    finished: watch::Sender<bool>,
    /// What the server may do (its sandbox as applied), to explain an
    /// exit the sandbox caused.
    confinement: Confinement,
    /// The sandbox's temp dir and cgroup, removed once the process group
    /// is gone.
    leftovers: Mutex<Option<Leftovers>>,
}

/// Bytes on their way to the server's stdin.
struct Writer {
    pipe: Option<Arc<pipe::Sender>>,
    buf: Vec<u8>,
    /// How much of `buf` is already written.
    written: usize,
    /// The pipe was full: the writer task owns the flush until it drains.
    busy: bool,
}

/// Shuts the server down when the last handle goes.
struct Life {
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
}

impl StdioTransport {
    /// Starts the server.
    ///
    /// Must be called inside a tokio runtime with I/O enabled.
    ///
    /// # Errors
    /// [`TransportError::Spawn`] when the process cannot be started.
    pub async fn spawn(config: StdioConfig) -> Result<StdioTransport, TransportError> {
        let spawn_error = |cause: String, source: Option<io::Error>| {
            TransportError::spawn(config.name.clone(), cause, source.map(Source::new))
        };
        let mut prepared = sandbox::prepare(
            &config.name,
            &config.sandbox,
            &config.environment,
            &config.env,
            &config.command,
            config.cwd.as_deref(),
        )
        .map_err(|why| spawn_stop(&config.name, why))?;
        let mut command = Command::new(&config.command);
        command.args(&config.args);
        command.env_clear();
        command.envs(prepared.env.drain(..));
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        let spawned = spawn_server(command, &mut prepared).await;
        if let Err(why) = prepared.after_spawn(spawned.as_ref().map(|_| ())) {
            return Err(spawn_stop(&config.name, why));
        }
        let mut child = spawned.map_err(|e| {
            spawn_error(
                format!("{}: {e}", config.command.to_string_lossy()),
                Some(e),
            )
        })?;
        if prepared.confinement.missing().is_some() || !config.sandbox.is_none() {
            debug!(server = %config.name, confinement = %prepared.confinement, "sandbox");
        }
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(
                "the child's standard streams are missing".into(),
                None,
            ));
        };
        let stdin = stdin
            .into_owned_fd()
            .and_then(pipe::Sender::from_owned_fd)
            .map_err(|e| spawn_error(format!("cannot use the child's stdin: {e}"), Some(e)))?;
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            pid: child.id(),
            pending: Mutex::new(Pending::default()),
            writer: Mutex::new(Writer {
                pipe: Some(Arc::new(stdin)),
                buf: Vec::with_capacity(4096),
                written: 0,
                busy: false,
            }),
            wake_writer: Notify::new(),
            events: RwLock::new(None),
            stderr_tail: Mutex::new(VecDeque::with_capacity(config.stderr_lines)),
            stderr_cap: config.stderr_lines,
            junk_lines: AtomicU64::new(0),
            exit: watch::Sender::new(None),
            stdout_done: watch::Sender::new(false),
            stderr_done: watch::Sender::new(false),
            stdin_closed: watch::Sender::new(false),
            finished: watch::Sender::new(false),
            confinement: prepared.confinement.clone(),
            leftovers: Mutex::new(Some(std::mem::take(&mut prepared.leftovers))),
        });
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        tokio::spawn(read_loop(shared.clone(), stdout, config.max_line));
        tokio::spawn(stderr_loop(shared.clone(), stderr));
        tokio::spawn(write_loop(shared.clone()));
        tokio::spawn(supervise(
            shared.clone(),
            child,
            shutdown_rx,
            config.shutdown_grace,
        ));
        debug!(server = %shared.name, pid = ?shared.pid, "started stdio server");
        Ok(StdioTransport {
            shared,
            life: Arc::new(Life {
                shutdown: Mutex::new(Some(shutdown_tx)),
            }),
        })
    }

    /// The server's name (alias).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The server's process id (also its process group id).
    pub fn pid(&self) -> Option<u32> {
        self.shared.pid
    }

    /// What the server may do: its environment's names, paths, network,
    /// limits and the sandbox mechanisms in force.
    pub fn confinement(&self) -> &Confinement {
        &self.shared.confinement
    }

    /// The last stderr lines, oldest first.
    pub fn stderr_tail(&self) -> Vec<String> {
        lock(&self.shared.stderr_tail).iter().cloned().collect()
    }

    /// How many stdout lines were skipped because they were not JSON-RPC
    /// messages (or were too long).
    pub fn junk_lines(&self) -> u64 {
        self.shared.junk_lines.load(Ordering::Relaxed)
    }

    /// The exit status, once the process has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.shared.exit.borrow()
    }

    /// How many requests await their response.
    pub fn in_flight(&self) -> usize {
        lock(&self.shared.pending).len()
    }

    /// Why the transport is closed, once it is.
    pub fn closed(&self) -> Option<TransportError> {
        lock(&self.shared.pending).closed().cloned()
    }
}

impl Transport for StdioTransport {
    fn request(&self, outgoing: Outgoing) -> BoxFuture<'_, Result<Response, TransportError>> {
        Box::pin(async move {
            let shared = &*self.shared;
            let id = outgoing.request.id.clone();
            let (tx, rx) = oneshot::channel();
            lock(&shared.pending).insert(
                &shared.name,
                id.clone(),
                Entry {
                    tx,
                    sink: outgoing.sink,
                    progress_token: progress_token(&outgoing.request),
                    listen: outgoing.request.method == method::SUBSCRIPTIONS_LISTEN,
                },
            )?;
            let mut guard = CancelOnDrop {
                shared,
                id: Some(id),
            };
            shared.send(&*outgoing.request);
            let outcome = rx.await;
            // Whoever completed the entry took it out of the table: nothing
            // is left to cancel.
            guard.id = None;
            match outcome {
                Ok(result) => result,
                Err(_) => Err(shared.closed_error("the transport was dropped")),
            }
        })
    }

    fn notify(&self, notification: Notification) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared
                .send_checked(&Message::Notification(notification))
        })
    }

    fn respond(&self, response: Response) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move { self.shared.send_checked(&Message::Response(response)) })
    }

    fn set_events(&self, sink: EventSink) {
        if let Ok(mut events) = self.shared.events.write() {
            *events = Some(sink);
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.life.shut_down();
            let mut finished = self.shared.finished.subscribe();
            let _ = finished.wait_for(|done| *done).await;
        })
    }
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("name", &self.shared.name)
            .field("pid", &self.shared.pid)
            .finish_non_exhaustive()
    }
}

impl Life {
    fn shut_down(&self) {
        if let Some(tx) = lock(&self.shutdown).take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Sends `notifications/cancelled` if the request is dropped before its
/// response arrives (STDIO-08, CANC-02).
struct CancelOnDrop<'a> {
    shared: &'a Shared,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let still_running = lock(&self.shared.pending).remove(&id).is_some();
        if still_running {
            debug!(server = %self.shared.name, %id, "request abandoned; cancelling");
            let cancel = Notification::new(
                method::CANCELLED,
                Some(json!({ "requestId": id.to_value(), "reason": "cancelled by the client" })),
            );
            self.shared.send(&Message::Notification(cancel));
        }
    }
}

fn progress_token(request: &Request) -> Option<RequestId> {
    request
        .params
        .as_ref()?
        .get(META)?
        .get(PROGRESS_TOKEN)
        .and_then(RequestId::from_value)
}

impl Shared {
    fn closed_error(&self, cause: &str) -> TransportError {
        lock(&self.pending)
            .closed()
            .cloned()
            .unwrap_or_else(|| TransportError::closed(self.name.clone(), cause))
    }

    /// Writes one message, failing when the transport is closed.
    fn send_checked(&self, message: &Message) -> Result<(), TransportError> {
        if let Some(cause) = lock(&self.pending).closed() {
            return Err(cause.clone());
        }
        if self.send(message) {
            Ok(())
        } else {
            Err(self.closed_error("stdin is closed"))
        }
    }

    /// Queues one message and writes as much as the pipe takes now; the
    /// writer task finishes the rest. `false` when stdin is closed.
    ///
    /// A write error (the server closed stdin or died) is not reported to
    /// the caller: the reader sees the end of stdout and fails every pending
    /// request with the real cause (exit status, stderr).
    fn send<M: Serialize + ?Sized>(&self, message: &M) -> bool {
        // Alone in flight, write at once: no task hop on the way out. With
        // other requests in flight, their callers are likely queueing
        // messages in this same scheduler tick: the writer task then sends
        // them in one write, so the server wakes once per batch instead of
        // once per message.
        let batch = lock(&self.pending).len() > 1;
        let mut w = lock(&self.writer);
        let Some(pipe) = w.pipe.clone() else {
            return false;
        };
        // Serialising JSON values into a Vec cannot fail: every map key is
        // a string and the writer is infallible.
        let _ = serde_json::to_writer(&mut w.buf, message);
        w.buf.push(b'\n');
        if w.busy {
            return true;
        }
        if batch {
            w.busy = true;
            self.wake_writer.notify_one();
        } else {
            self.flush(&mut w, &pipe);
        }
        true
    }

    /// Writes the buffer until it is empty or the pipe is full.
    fn flush(&self, w: &mut Writer, pipe: &pipe::Sender) {
        while w.written < w.buf.len() {
            match pipe.try_write(&w.buf[w.written..]) {
                Ok(n) => w.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    w.busy = true;
                    self.wake_writer.notify_one();
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    debug!(server = %self.name, error = %e, "writing to the server failed");
                    w.pipe = None;
                    break;
                }
            }
        }
        w.buf.clear();
        w.written = 0;
        w.busy = false;
    }

    /// Closes the server's stdin (its signal to exit; STDIO-11 step 1).
    fn close_stdin(&self) {
        lock(&self.writer).pipe = None;
        self.stdin_closed.send_replace(true);
    }

    fn fail_all(&self, cause: TransportError) {
        lock(&self.pending).fail_all(cause);
    }

    fn emit(&self, incoming: Incoming) {
        let sink = self.events.read().ok().and_then(|e| e.clone());
        match sink {
            Some(sink) => sink(incoming),
            None => debug!(server = %self.name, ?incoming, "no listener for a server message"),
        }
    }

    /// Handles one stdout line.
    fn dispatch(&self, line: &[u8]) {
        match Message::from_slice(line) {
            Ok(Message::Response(response)) => self.complete(response),
            Ok(Message::Notification(n)) => self.route(n),
            Ok(Message::Request(request)) => self.emit(Incoming::Request(request)),
            Err(e) => {
                self.junk_lines.fetch_add(1, Ordering::Relaxed);
                warn!(server = %self.name, error = %e, line = %preview(line), "skipped a stdout line that is not a JSON-RPC message");
                // A malformed answer to a request in flight fails that
                // request now, with the reason, rather than at its timeout.
                // Where the parser could not read the id (too deep, broken
                // JSON), the scan can.
                let id = e.response_id().cloned().or_else(|| scan::response_id(line));
                if let Some(id) = id {
                    self.fail(&id, format!("the server's response is malformed: {e}"));
                }
            }
        }
    }

    /// Handles the start of a stdout line that is over `max_line`: the
    /// request it answers, when the start names one, fails now.
    fn refused(&self, head: &[u8], max_line: usize) {
        match scan::response_id(head) {
            Some(id) => self.fail(
                &id,
                format!(
                    "the server's answer was over {} (StdioConfig::max_line) and was skipped",
                    size_text(max_line)
                ),
            ),
            None => {
                debug!(server = %self.name, head = %preview(head), "an over-long stdout line names no request in its start");
            }
        }
    }

    /// Fails the request `id` now with `cause`, if it is still pending.
    fn fail(&self, id: &RequestId, cause: String) {
        let entry = lock(&self.pending).remove(id);
        if let Some(entry) = entry {
            let _ = entry.tx.send(Err(TransportError::Exchange {
                server: self.name.clone(),
                cause,
                source: None,
            }));
        }
    }

    fn complete(&self, response: Response) {
        let Some(id) = &response.id else {
            warn!(server = %self.name, ?response.outcome, "the server sent an error about a request it could not read");
            return;
        };
        let entry = lock(&self.pending).remove(id);
        match entry {
            Some(entry) => {
                let _ = entry.tx.send(Ok(response));
            }
            // Late (after a timeout or cancel) or unknown: dropped silently
            // (DESIGN item 2, CANC-08).
            None => debug!(server = %self.name, %id, "dropped a response nobody waits for"),
        }
    }

    /// Routes a notification to the request it belongs to, or to the event
    /// sink.
    fn route(&self, n: Notification) {
        let params = n.params.as_ref();
        if n.method == method::PROGRESS {
            let sink = params
                .and_then(|p| p.get("progressToken"))
                .and_then(RequestId::from_value)
                .and_then(|token| lock(&self.pending).sink_for_token(&token));
            match sink {
                Some(sink) => sink(n),
                // Progress for a finished or unknown request (PROG-04).
                None => debug!(server = %self.name, "dropped progress for no active request"),
            }
            return;
        }
        if n.method == method::CANCELLED {
            let id = params
                .and_then(|p| p.get("requestId"))
                .and_then(RequestId::from_value);
            let entry = id.as_ref().and_then(|id| lock(&self.pending).remove(id));
            if let (Some(id), Some(entry)) = (id, entry) {
                // The server ends a listen stream (CANC-05).
                let reason = params
                    .and_then(|p| p.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given")
                    .to_owned();
                if let Some(sink) = &entry.sink {
                    sink(n);
                }
                let _ = entry.tx.send(Err(TransportError::CancelledByServer {
                    server: self.name.clone(),
                    id: id.to_string(),
                    reason,
                }));
            } else {
                debug!(server = %self.name, "ignored a cancellation for no active request");
            }
            return;
        }
        if n.method == method::MESSAGE {
            // A log message names no request: it is about the one in
            // flight, when there is one (a listen stream never carries
            // them; with several requests it stays unclaimed).
            let sink = lock(&self.pending).sole_request_sink();
            if let Some(sink) = sink {
                sink(n);
                return;
            }
        }
        let subscription = params
            .and_then(|p| p.get(META))
            .and_then(|m| m.get(SUBSCRIPTION_ID))
            .and_then(RequestId::from_value);
        if let Some(sub) = subscription {
            // Listen-stream notifications go by subscription id (STDIO-07).
            let sink = lock(&self.pending).sink(&sub);
            match sink {
                Some(sink) => sink(n),
                None => {
                    debug!(server = %self.name, subscription = %sub, "dropped a notification for no active subscription");
                }
            }
            return;
        }
        self.emit(Incoming::Notification(n));
    }

    fn push_stderr(&self, line: String) {
        let mut tail = lock(&self.stderr_tail);
        if self.stderr_cap == 0 {
            return;
        }
        if tail.len() == self.stderr_cap {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    /// Why the server is gone, with exit status and last stderr lines.
    fn exit_cause(&self, what: &str, source: Option<io::Error>) -> TransportError {
        let mut cause = what.to_owned();
        let status = *self.exit.borrow();
        if let Some(status) = status {
            cause.push_str(&format!(" ({status})"));
        }
        let tail = lock(&self.stderr_tail);
        let lines: Vec<String> = tail.iter().cloned().collect();
        let mut source = source.map(Source::new);
        if let Some(why) = self.confinement.explain_exit(status, &lines) {
            cause.push_str("; ");
            cause.push_str(&why);
            source = source.or_else(|| Some(Source::new(SandboxStop::new(why))));
        }
        if !tail.is_empty() {
            let skip = tail.len().saturating_sub(CAUSE_STDERR_LINES);
            let lines: Vec<&str> = tail.iter().skip(skip).map(String::as_str).collect();
            cause.push_str("; last stderr: ");
            cause.push_str(&lines.join(" | "));
        }
        TransportError::Closed {
            server: self.name.clone(),
            cause,
            source,
        }
    }
}

/// A start the sandbox refused: `why` is also the error's typed source, so
/// callers can tell it from a failed spawn ([`TransportError::sandbox_stop`]).
fn spawn_stop(name: &str, why: String) -> TransportError {
    TransportError::spawn(
        name.to_owned(),
        why.clone(),
        Some(Source::new(SandboxStop::new(why))),
    )
}

/// A byte count as the limits are written: `64 MiB`, `16 KiB`, `1000 bytes`.
fn size_text(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    match bytes {
        0 => "0 bytes".to_owned(),
        b if b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// At most 200 bytes of a line, for logs.
fn preview(line: &[u8]) -> String {
    let cut = line.len().min(200);
    let mut s = String::from_utf8_lossy(&line[..cut]).into_owned();
    if cut < line.len() {
        s.push('…');
    }
    s
}

/// What the framer made of the bytes so far.
enum Framed<'a> {
    /// A complete line.
    Line(&'a [u8]),
    /// A line was over the bound and skipped (reported at its end).
    TooLong(String),
    /// The start of a line found over the bound (reported as soon as the
    /// framer knows, possibly long before the line ends).
    Refusing(Vec<u8>),
}

async fn read_chunks(
    mut stream: impl AsyncRead + Unpin,
    framer: &mut LineFramer,
    mut on_line: impl FnMut(Framed<'_>),
) -> Option<io::Error> {
    let error = loop {
        // Read straight into the framer's buffer: no copy through one of
        // our own.
        match stream.read(framer.spare()).await {
            Ok(0) => break None,
            Ok(n) => {
                framer.filled(n);
                loop {
                    let more = match framer.next_line() {
                        Ok(Some(line)) => {
                            on_line(Framed::Line(line));
                            true
                        }
                        Ok(None) => false,
                        Err(e) => {
                            on_line(Framed::TooLong(e.to_string()));
                            true
                        }
                    };
                    if let Some(head) = framer.take_refused_head() {
                        on_line(Framed::Refusing(head));
                    }
                    if !more {
                        break;
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Some(e),
        }
    };
    match framer.finish() {
        Ok(Some(line)) => on_line(Framed::Line(line)),
        Ok(None) => {}
        Err(e) => on_line(Framed::TooLong(e.to_string())),
    }
    if let Some(head) = framer.take_refused_head() {
        on_line(Framed::Refusing(head));
    }
    error
}

async fn read_loop(shared: Arc<Shared>, stdout: impl AsyncRead + Unpin, max_line: usize) {
    let mut framer = LineFramer::with_max_line(max_line);
    let error = read_chunks(stdout, &mut framer, |line| match line {
        Framed::Line(line) => shared.dispatch(line),
        Framed::TooLong(e) => {
            shared.junk_lines.fetch_add(1, Ordering::Relaxed);
            warn!(server = %shared.name, error = %e, "skipped a stdout line");
        }
        Framed::Refusing(head) => shared.refused(&head, max_line),
    })
    .await;
    shared.stdout_done.send_replace(true);
    // Name the exit status and the last stderr lines in the failure.
    let mut exit = shared.exit.subscribe();
    let mut stderr = shared.stderr_done.subscribe();
    let _ = tokio::time::timeout(EXIT_REPORT_WAIT, async {
        let _ = exit.wait_for(Option::is_some).await;
        let _ = stderr.wait_for(|done| *done).await;
    })
    .await;
    let what = match &error {
        Some(e) => format!("reading the server's stdout failed: {e}"),
        None if shared.exit.borrow().is_some() => "the server exited".to_owned(),
        None => "the server closed its stdout".to_owned(),
    };
    shared.fail_all(shared.exit_cause(&what, error));
}

async fn stderr_loop(shared: Arc<Shared>, stderr: impl AsyncRead + Unpin) {
    let mut framer = LineFramer::with_max_line(STDERR_MAX_LINE);
    let name = shared.name.clone();
    read_chunks(stderr, &mut framer, |line| {
        let text = match line {
            Framed::Line(line) => String::from_utf8_lossy(line).into_owned(),
            Framed::TooLong(e) => format!("<{e}>"),
            // The line is logged (cut) when it ends.
            Framed::Refusing(_) => return,
        };
        // The server's log, tagged with its name; never an error signal.
        info!(target: "switchboard::server", server = %name, "{text}");
        shared.push_stderr(text);
    })
    .await;
    shared.stderr_done.send_replace(true);
}

async fn write_loop(shared: Arc<Shared>) {
    let mut closed = shared.stdin_closed.subscribe();
    loop {
        tokio::select! {
            _ = shared.wake_writer.notified() => {}
            _ = closed.wait_for(|c| *c) => return,
        }
        // Let the tasks that are ready now queue their messages too.
        tokio::task::yield_now().await;
        loop {
            let pipe = {
                let mut w = lock(&shared.writer);
                let Some(pipe) = w.pipe.clone() else { return };
                if !w.busy {
                    break;
                }
                w.busy = false;
                shared.flush(&mut w, &pipe);
                if !w.busy {
                    break;
                }
                pipe
            };
            // The pipe is full: wait for the server to read.
            tokio::select! {
                ready = pipe.writable() => if ready.is_err() { return },
                _ = closed.wait_for(|c| *c) => return,
            }
        }
    }
}

/// Kills the process group if the supervisor is dropped before it
/// finished (the runtime shut down under it).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.0.take() {
            signal_group(pgid, libc::SIGKILL);
            forget_group(pgid);
        }
    }
}

async fn supervise(
    shared: Arc<Shared>,
    mut child: Child,
    mut shutdown: oneshot::Receiver<()>,
    grace: Duration,
) {
    let pgid = child.id();
    let mut guard = GroupGuard(pgid);
    let record = |status: io::Result<ExitStatus>| {
        if let Ok(status) = status {
            debug!(server = %shared.name, %status, "server exited");
            shared.exit.send_replace(Some(status));
        }
    };
    let by_client = tokio::select! {
        status = child.wait() => {
            record(status);
            false
        }
        // A send or a dropped sender: either way the client is done with it.
        _ = &mut shutdown => true,
    };
    if by_client {
        shared.fail_all(TransportError::closed(
            shared.name.clone(),
            "the client closed the connection",
        ));
        shared.close_stdin();
        let status = match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                debug!(server = %shared.name, "no exit after stdin closed; SIGTERM");
                #[cfg(unix)]
                if let Some(pgid) = pgid {
                    signal_group(pgid, libc::SIGTERM);
                }
                match tokio::time::timeout(grace, child.wait()).await {
                    Ok(status) => status,
                    Err(_) => {
                        debug!(server = %shared.name, "no exit after SIGTERM; SIGKILL");
                        #[cfg(unix)]
                        if let Some(pgid) = pgid {
                            signal_group(pgid, libc::SIGKILL);
                        }
                        let _ = child.start_kill();
                        child.wait().await
                    }
                }
            }
        };
        record(status);
    } else {
        let mut stdout_done = shared.stdout_done.subscribe();
        if tokio::time::timeout(DRAIN_WAIT, stdout_done.wait_for(|d| *d))
            .await
            .is_err()
        {
            // Something else holds stdout open; the server itself is gone.
            shared.fail_all(shared.exit_cause("the server exited", None));
        }
        shared.close_stdin();
    }
    // Whatever the server left behind in its group goes too.
    #[cfg(unix)]
    if let Some(pgid) = pgid {
        if group_alive(pgid) {
            signal_group(pgid, libc::SIGTERM);
            let deadline = tokio::time::Instant::now() + grace;
            while group_alive(pgid) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            signal_group(pgid, libc::SIGKILL);
        }
        forget_group(pgid);
    }
    guard.0 = None;
    // The group is gone: its temp dir and cgroup can go too.
    *lock(&shared.leftovers) = None;
    shared.finished.send_replace(true);
}
