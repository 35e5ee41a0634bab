//! `mock-server`: a stdio MCP server for tests, written straight on the
//! wire crate and std so it can misbehave at byte level.
//!
//! It speaks 2026-07-28 (or, with `--legacy`, only 2025-11-25) on stdin and
//! stdout, one JSON-RPC message per line, and logs to stderr. Each request is
//! handled on a thread of its own, so slow tools do not block others.
//!
//! # Flags
//! Flags come from the command line, then from the `MOCK_SERVER_FLAGS`
//! environment variable (split on whitespace), so a test can change the
//! behaviour without changing the command. Started by a host, the server
//! sees that variable only when its entry passes it (`env`, or
//! `envPassthrough`): stdio servers get a scrubbed environment.
//!
//! | flag | effect |
//! |---|---|
//! | `--name NAME` | `serverInfo.name` (default `mock`) |
//! | `--byte-writes` | write every message one byte at a time, flushing after each |
//! | `--chatty` | before every response: a `notifications/message`, a `tools/list_changed` without subscription, progress for an unknown token; after it: progress for the request's own (now finished) token |
//! | `--junk` | write junk lines (non-JSON text, a JSON array, a bare number, a blank line) at start-up and before every response |
//! | `--delay-ms N` | answer every request N ms late |
//! | `--jitter-ms N` | answer every request after a random 0..N ms more, so concurrent requests are answered in random order (the soak) |
//! | `--startup-delay-ms N` | sleep N ms before reading stdin |
//! | `--ignore-cancel` | answer requests even after the client cancelled them (a late response) |
//! | `--page-size N` | page `tools/list` N at a time (default 2; 0 = one page). The second page's cursor is the empty string `""`; later ones are `"2"`, `"3"`, …; a bad cursor gets -32602 |
//! | `--extra-tools N` | add N filler tools (`filler_0`, …) to the listing (default 3) |
//! | `--repeat-cursor` | `tools/list` returns `nextCursor: "again"` forever |
//! | `--versions A,B` | modern versions served (default `2026-07-28`); others get -32022 |
//! | `--legacy` | speak only 2025-11-25: `initialize` handshake, no `_meta` needed, `ping`, server→client requests from the `sample` tool |
//! | `--legacy-tasks` | with `--legacy`: 2025-11-25 experimental tasks: `capabilities.tasks` (`list`, `cancel`, `requests.tools.call`), the tools `job` (`execution.taskSupport: "required"`) and `maybe_job` (`"optional"`), `tasks/get`, `tasks/result`, `tasks/list` (one task a page), `tasks/cancel` (see the tools table) |
//! | `--discover-reply KIND` | legacy only: answer `server/discover` with `method-not-found` (default), `invalid-params`, `parse-error` (-32700 without id) or `silent` (no answer) |
//! | `--listen-end KIND` | how `subscriptions/listen` ends: `open` (default; until the client cancels), `cancel` (server sends `notifications/cancelled`), `result` (server sends the listen result) |
//! | `--log PATH` | append every line received on stdin to PATH (tests read it to check ids, `_meta`, cancellations) |
//! | `--grandchild` | start a grandchild process (`mock-server --sleep-forever`, stdio closed) in the same process group; `pids` reports it |
//! | `--ignore-eof` | keep running after stdin closes (tests SIGTERM escalation) |
//! | `--ignore-sigterm` | ignore SIGTERM (tests SIGKILL escalation) |
//! | `--sleep-forever` | do nothing but sleep (the grandchild mode) |
//! | `--tools-file PATH` | list the tools of PATH (a JSON array of tool definitions, re-read on every `tools/list`) instead of the built-in ones; calling a listed tool that is not built in answers `"<name> ran"` with `structuredContent` `{"tool", "arguments"}` |
//! | `--offers-file PATH` | list `prompts` and `resourceTemplates` of PATH (a JSON object with either array, re-read on every listing) instead of the built-in ones |
//! | `--watch-tools` | with `--tools-file`: when the file changes, send `notifications/tools/list_changed` on every open listen stream that asked for it (and, in legacy mode, unsolicited) |
//! | `--tools-ttl-ms N` | the `ttlMs` of every `tools/list` page (default 30000 minus the page's number) |
//! | `--startup-log PATH` | append `start <unix µs>` when the process starts and `ready <unix µs>` after `--startup-delay-ms` (tests count overlapping start-ups) |
//!
//! # Tools
//! `tools/call` arguments choose the behaviour:
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `echo` | `text?` | text = `text`; `structuredContent` = `{"id": <request id>, "params": <params as received>}` |
//! | `sleep` | `ms` | answers after `ms` (never, if cancelled meanwhile) |
//! | `never` | — | never answers |
//! | `crash` | `code?` (3), `lines?` (2) | writes `lines` stderr lines, then exits with `code` mid-request |
//! | `big` | `bytes?` (10 MiB) | one text block of `bytes` × `x` |
//! | `lines` | `count?` (2000), `width?` (100) | one text block of `count` lines `line N é ---…`, each `width` characters with its newline (the last, without one, padded to `width`): 200,000 characters by default, a two-byte character on every line. Not listed (list it with `--tools-file`) |
//! | `progress` | `steps?` (3) | `steps` progress notifications for the request's token, then a result |
//! | `ask` | `rounds?` (2) | MRTR: `input_required` `rounds` times (one input request per capability the request declared, and a `requestState` with awkward characters), checks the retry echoes the state exactly and answers every key, then completes with the last `inputResponses` |
//! | `fail` | — | a tool error (`isError: true`) |
//! | `error` | — | JSON-RPC error -32602 with `data` |
//! | `weird` | — | a result with an unknown `resultType` |
//! | `hostile` | `kind`, `size?`, `idLast?` | instead of an answer: `long-line` writes one answer line with `size` (100,000,000) `x` in its text, its `id` first (last with `idLast`); `deep` answers with arrays nested `size` (100,000) deep (the `id` last with `idLast`); `bad-json` answers with a syntax error after the `id`; `both` answers with `result` and `error`; `unsolicited` first answers three requests never sent, then answers properly |
//! | `pids` | — | `structuredContent` = `{"pid": …, "grandchild": …}` |
//! | `task` | `work_ms?` (200), `never?`, `poll_ms?`, `inputs?` (0), `ttl_ms?`, `fail?` | with the tasks extension declared: a task handle (`resultType: "task"`, `pollIntervalMs` = `poll_ms` when given, `ttlMs` = `ttl_ms`). The task asks `inputs` times for input (`inputRequests.confirm`, a new message each round) through `tasks/update`, then works `work_ms` (forever with `never`) and completes with the answers (with `fail`: fails, `error` -32603 "the mock task failed"); after `ttl_ms` it is gone (-32602). `tasks/cancel` marks it cancelled. Without the extension: works `work_ms` inside the call |
//! | `task` with `notify: true` (and `bare?`) | as `task`, but driven by its listen stream: it stays `working` until a `subscriptions/listen` named it in `taskIds` and a `tasks/get` followed; then each step (an input request, the completion) comes `work_ms` later (and `work_ms` after each `tasks/update`) and is announced by a `notifications/tasks` on that stream with the full task (the completion without `result` with `bare`) |
//! | `job`, `maybe_job` | `work_ms?` (100), `ask?` | `--legacy-tasks` only. With a `task` param: `{"task": {…}}` (`ttl`, `pollInterval` 20); the task works `work_ms`, then with `ask` goes `input_required` until `tasks/result` has asked `elicitation/create` (with the `related-task` `_meta`) and got the answer, then completes with `"job done: <answer>"` (`tasks/result` waits for the end). Without: `job` is -32601, `maybe_job` answers `"job done at once"` |
//! | `gather` | `count?` (2), `index?` (0), `timeout_ms?` (30000) | not listed (list it with `--tools-file`): waits until `count` calls of `gather` are in flight at once, then answers `"gathered <index>"` only after every call with a higher `index` has answered (the last call first, so a client that keeps its own order must reorder); when the calls do not all arrive within `timeout_ms`, a tool error saying how many were in flight. One group at a time: the count starts again once a group has answered |
//! | `sample` | — | legacy only: sends `roots/list`, `sampling/createMessage`, `elicitation/create` (those declared in `initialize`) and `ping` to the client, returns the answers |
//!
//! Resources (`mock://a`, `mock://b`, `mock://ask` with MRTR), one template,
//! one prompt (`greet`), completion and `subscriptions/listen` are served too.
//!
//! Run: `cargo run -p switchboard-testkit --bin mock-server -- --chatty`, then
//! paste:
//! ```text
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! ```

// A test tool that must print to stdout and stderr by design.
#![allow(clippy::print_stderr)]

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use switchboard_wire::meta::{
    CLIENT_CAPABILITIES, PROGRESS_TOKEN, PROTOCOL_VERSION, SERVER_INFO, SUBSCRIPTION_ID,
};
use switchboard_wire::{Message, Notification, Request, RequestId, Response, version};

const SUPPORTED_LEGACY: &str = version::LEGACY;

#[derive(Clone, Debug, Default)]
struct Opts {
    name: String,
    byte_writes: bool,
    chatty: bool,
    junk: bool,
    delay_ms: u64,
    jitter_ms: u64,
    ignore_cancel: bool,
    startup_delay_ms: u64,
    page_size: usize,
    extra_tools: usize,
    repeat_cursor: bool,
    versions: Vec<String>,
    legacy: bool,
    legacy_tasks: bool,
    discover_reply: String,
    listen_end: String,
    log: Option<String>,
    grandchild: bool,
    ignore_eof: bool,
    ignore_sigterm: bool,
    sleep_forever: bool,
    tools_file: Option<String>,
    offers_file: Option<String>,
    watch_tools: bool,
    startup_log: Option<String>,
    /// `{"skills": [entries], "files": {uri: text}}`, read again on every
    /// request: the Skills extension is declared and served from it as it
    /// stands (entries and bytes as given, matching or not).
    skills_file: Option<String>,
    tools_ttl_ms: Option<i64>,
}

fn parse_opts() -> anyhow::Result<Opts> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Ok(extra) = std::env::var("MOCK_SERVER_FLAGS") {
        args.extend(extra.split_whitespace().map(str::to_owned));
    }
    let mut o = Opts {
        name: "mock".into(),
        page_size: 2,
        extra_tools: 3,
        versions: vec![version::LATEST.into()],
        discover_reply: "method-not-found".into(),
        listen_end: "open".into(),
        ..Opts::default()
    };
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--name" => o.name = value()?,
            "--byte-writes" => o.byte_writes = true,
            "--chatty" => o.chatty = true,
            "--junk" => o.junk = true,
            "--delay-ms" => o.delay_ms = value()?.parse()?,
            "--jitter-ms" => o.jitter_ms = value()?.parse()?,
            "--ignore-cancel" => o.ignore_cancel = true,
            "--startup-delay-ms" => o.startup_delay_ms = value()?.parse()?,
            "--page-size" => o.page_size = value()?.parse()?,
            "--extra-tools" => o.extra_tools = value()?.parse()?,
            "--repeat-cursor" => o.repeat_cursor = true,
            "--versions" => o.versions = value()?.split(',').map(str::to_owned).collect(),
            "--legacy" => o.legacy = true,
            "--legacy-tasks" => o.legacy_tasks = true,
            "--discover-reply" => o.discover_reply = value()?,
            "--listen-end" => o.listen_end = value()?,
            "--log" => o.log = Some(value()?),
            "--grandchild" => o.grandchild = true,
            "--ignore-eof" => o.ignore_eof = true,
            "--ignore-sigterm" => o.ignore_sigterm = true,
            "--sleep-forever" => o.sleep_forever = true,
            "--tools-file" => o.tools_file = Some(value()?),
            "--offers-file" => o.offers_file = Some(value()?),
            "--skills-file" => o.skills_file = Some(value()?),
            "--watch-tools" => o.watch_tools = true,
            "--startup-log" => o.startup_log = Some(value()?),
            "--tools-ttl-ms" => o.tools_ttl_ms = Some(value()?.parse()?),
            other => bail!("unknown flag {other} (see the mock-server docs)"),
        }
    }
    Ok(o)
}

fn main() -> anyhow::Result<()> {
    let opts = parse_opts()?;
    if opts.ignore_sigterm {
        ignore_sigterm();
    }
    if opts.sleep_forever {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let grandchild = if opts.grandchild {
        Some(start_grandchild(&opts)?)
    } else {
        None
    };
    let log = match &opts.log {
        Some(path) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening log {path}"))?,
        ),
        None => None,
    };
    startup_log(&opts, "start");
    if opts.startup_delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(opts.startup_delay_ms));
    }
    startup_log(&opts, "ready");
    let server = Arc::new(Server {
        opts,
        out: Mutex::new(std::io::stdout()),
        log: Mutex::new(log),
        cancelled: Mutex::new(HashSet::new()),
        waiting: Mutex::new(HashMap::new()),
        initialized: AtomicBool::new(false),
        client_caps: Mutex::new(Value::Null),
        next_id: AtomicU64::new(1),
        grandchild,
        active: AtomicU64::new(0),
        listeners: Mutex::new(Vec::new()),
        tasks: Mutex::new(HashMap::new()),
        legacy_tasks: Mutex::new(Vec::new()),
        gathering: Mutex::new((0, 0)),
        gathered: Condvar::new(),
    });
    if server.opts.watch_tools {
        let s = server.clone();
        std::thread::spawn(move || s.watch_tools());
    }
    {
        let s = server.clone();
        std::thread::spawn(move || s.task_notifier());
    }
    eprintln!(
        "mock-server {} ready (pid {})",
        server.opts.name,
        std::process::id()
    );
    if server.opts.junk {
        server.junk();
    }
    let stdin = std::io::stdin();
    let mut reader = BufReader::new(stdin.lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        server.record(&line);
        let text = trim_line(&line);
        if text.is_empty() {
            continue;
        }
        match Message::from_slice(text) {
            Ok(Message::Request(req)) => {
                let s = server.clone();
                s.active.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    s.handle(req);
                    s.active.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Ok(Message::Notification(n)) => server.notification(n),
            Ok(Message::Response(r)) => server.client_response(r),
            Err(e) => {
                eprintln!("mock-server: unreadable line: {e}");
                server.send(&Message::Response(Response::error(
                    e.id().cloned(),
                    switchboard_wire::ErrorObject::new(e.code(), e.to_string()),
                )));
            }
        }
    }
    eprintln!("mock-server {}: stdin closed", server.opts.name);
    // Let requests already read finish (briefly), then exit (STDIO-12).
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    while server.active.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    if server.opts.ignore_eof {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    Ok(())
}

/// Appends `<event> <unix µs>` to the start-up log, if one was asked for.
fn startup_log(opts: &Opts, event: &str) {
    let Some(path) = &opts.startup_log else {
        return;
    };
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(f, "{event} {micros}");
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &line[..end]
}

// Ignoring SIGTERM needs one libc call; the test tool opts out of the
// workspace's unsafe ban for it.
#[allow(unsafe_code)]
fn ignore_sigterm() {
    // SAFETY: SIG_IGN is a valid disposition; no handler code runs.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

fn start_grandchild(opts: &Opts) -> anyhow::Result<u32> {
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--sleep-forever")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if opts.ignore_sigterm {
        cmd.arg("--ignore-sigterm");
    }
    // The grandchild stays in our process group on purpose: the client must
    // kill the whole group. Its handle is dropped without waiting.
    #[allow(clippy::disallowed_methods)]
    let child = cmd.spawn()?;
    let pid = child.id();
    eprintln!("mock-server: grandchild pid {pid}");
    Ok(pid)
}

struct Server {
    opts: Opts,
    out: Mutex<std::io::Stdout>,
    log: Mutex<Option<File>>,
    /// Ids (as JSON text) the client cancelled.
    cancelled: Mutex<HashSet<String>>,
    /// Legacy: our requests to the client awaiting answers, by id text.
    waiting: Mutex<HashMap<String, mpsc::Sender<Response>>>,
    initialized: AtomicBool,
    /// Legacy: the capabilities the client declared in `initialize`.
    client_caps: Mutex<Value>,
    next_id: AtomicU64,
    grandchild: Option<u32>,
    /// Requests being handled.
    active: AtomicU64,
    /// Ids of open listen streams that asked for `toolsListChanged`.
    listeners: Mutex<Vec<Value>>,
    /// Tasks of the `task` tool, by id.
    tasks: Mutex<HashMap<String, MockTask>>,
    /// `--legacy-tasks`: 2025-11-25 tasks, in creation order.
    legacy_tasks: Mutex<Vec<(String, LegacyTask)>>,
    /// The `gather` tool's group: calls arrived, calls answered.
    gathering: Mutex<(u64, u64)>,
    /// Woken at each arrival and answer of a `gather` call.
    gathered: Condvar,
}

/// A 2025-11-25 task of `job` / `maybe_job`.
struct LegacyTask {
    created: std::time::Instant,
    work: Duration,
    ask: bool,
    answer: Option<Value>,
    cancelled: bool,
}

impl LegacyTask {
    fn status(&self) -> &'static str {
        if self.cancelled {
            "cancelled"
        } else if self.created.elapsed() < self.work {
            "working"
        } else if self.ask && self.answer.is_none() {
            "input_required"
        } else {
            "completed"
        }
    }

    fn view(&self, id: &str) -> Value {
        json!({
            "taskId": id,
            "status": self.status(),
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:30:00Z",
            "ttl": 60_000,
            "pollInterval": 20,
        })
    }
}

/// A task of the `task` tool.
struct MockTask {
    created: std::time::Instant,
    /// When the work (after the last input) started.
    working_since: std::time::Instant,
    work: Option<Duration>,
    poll_ms: Option<u64>,
    ttl_ms: Option<u64>,
    inputs_left: u64,
    round: u64,
    answers: Vec<Value>,
    cancelled: bool,
    /// `fail`: the task ends `failed`, not `completed`.
    fail: bool,
    /// `notify`: the task is driven by its listen stream, not by time.
    notify: Option<NotifyTask>,
}

/// A `notify` task: it stays `working` until a listen stream asked for it
/// and a `tasks/get` came after that; then each step (an input request,
/// the completion) happens `work_ms` later and is announced only by a
/// `notifications/tasks` on that stream.
#[derive(Default)]
struct NotifyTask {
    /// Announce the completion without its `result`.
    bare: bool,
    /// The listen stream that asked for the task (its subscription id).
    listen: Option<Value>,
    /// Whether the first step has been scheduled.
    started: bool,
    /// When the next step happens.
    due: Option<std::time::Instant>,
    /// Whether the task asks for input (`Some(false)`: completed).
    asking: Option<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn rpc_error(code: i64, message: impl Into<String>) -> switchboard_wire::ErrorObject {
    switchboard_wire::ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

impl Server {
    fn record(&self, line: &[u8]) {
        if let Some(f) = lock(&self.log).as_mut() {
            let _ = f.write_all(line);
            if !line.ends_with(b"\n") {
                let _ = f.write_all(b"\n");
            }
            let _ = f.flush();
        }
    }

    fn write_raw(&self, out: &mut std::io::Stdout, bytes: &[u8]) {
        if self.opts.byte_writes {
            for b in bytes {
                let _ = out.write_all(std::slice::from_ref(b));
                let _ = out.flush();
            }
        } else {
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }

    /// The `hostile` tool: writes what `args.kind` names instead of a
    /// proper answer (see the table in the module docs).
    fn hostile(
        &self,
        req: &Request,
        args: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let kind = args.get("kind").and_then(Value::as_str).unwrap_or("");
        let count = |d: u64| {
            usize::try_from(args.get("size").and_then(Value::as_u64).unwrap_or(d)).unwrap_or(0)
        };
        let id = req.id.to_value().to_string();
        let id_last = args.get("idLast").and_then(Value::as_bool).unwrap_or(false);
        // Where the id goes: among the first members, or after the result.
        let (id_first, id_end) = if id_last {
            (String::new(), format!(r#","id":{id}}}"#))
        } else {
            (format!(r#""id":{id},"#), "}".to_owned())
        };
        let mut out = lock(&self.out);
        match kind {
            "long-line" => {
                let start = format!(
                    r#"{{"jsonrpc":"2.0",{id_first}"result":{{"content":[{{"type":"text","text":""#
                );
                self.write_raw(&mut out, start.as_bytes());
                let chunk = vec![b'x'; 1 << 20];
                let mut left = count(100_000_000);
                while left > 0 {
                    let n = left.min(chunk.len());
                    self.write_raw(&mut out, &chunk[..n]);
                    left -= n;
                }
                self.write_raw(&mut out, format!(r#""}}]}}{id_end}"#).as_bytes());
                self.write_raw(&mut out, b"\n");
                None
            }
            "deep" => {
                let depth = count(100_000);
                let mut line = format!(
                    r#"{{"jsonrpc":"2.0",{id_first}"result":{{"content":[],"structuredContent":{{"deep":"#
                );
                line.push_str(&"[".repeat(depth));
                line.push_str(&"]".repeat(depth));
                line.push_str(&format!("}}}}{id_end}\n"));
                self.write_raw(&mut out, line.as_bytes());
                None
            }
            "bad-json" => {
                let line =
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[}}}}"#) + "\n";
                self.write_raw(&mut out, line.as_bytes());
                None
            }
            "both" => {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}},"error":{{"code":-32603,"message":"and an error"}}}}"#
                ) + "\n";
                self.write_raw(&mut out, line.as_bytes());
                None
            }
            "unsolicited" => {
                for ghost in ["987654321", r#""ghost""#, "-1"] {
                    let line = format!(
                        r#"{{"jsonrpc":"2.0","id":{ghost},"result":{{"content":[{{"type":"text","text":"ghost"}}]}}}}"#
                    ) + "\n";
                    self.write_raw(&mut out, line.as_bytes());
                }
                drop(out);
                Some(Ok(self.complete(
                    json!({"content": [{"type": "text", "text": "the real answer"}]}),
                )))
            }
            _ => {
                drop(out);
                Some(Err(switchboard_wire::ErrorObject::new(
                    switchboard_wire::ErrorCode::InvalidParams,
                    format!("unknown hostile kind {kind:?}"),
                )))
            }
        }
    }

    fn send(&self, message: &Message) {
        let line = message.to_line();
        let mut out = lock(&self.out);
        self.write_raw(&mut out, &line);
    }

    fn junk(&self) {
        let mut out = lock(&self.out);
        for junk in [
            &b"this is not JSON, just noise on stdout\n"[..],
            b"[1,2,3]\n",
            b"42\n",
            b"\n",
            b"{\"jsonrpc\":\"2.0\"}\n",
        ] {
            self.write_raw(&mut out, junk);
        }
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(&Message::Notification(Notification::new(
            method,
            Some(params),
        )));
    }

    fn is_cancelled(&self, id: &RequestId) -> bool {
        !self.opts.ignore_cancel && lock(&self.cancelled).contains(&id.to_value().to_string())
    }

    /// Sends the response, with the configured noise around it.
    fn respond(
        &self,
        id: RequestId,
        outcome: Result<Value, switchboard_wire::ErrorObject>,
        token: Option<&Value>,
    ) {
        if self.is_cancelled(&id) {
            eprintln!("mock-server: not answering cancelled request {id}");
            return;
        }
        if self.opts.junk {
            self.junk();
        }
        if self.opts.chatty {
            self.notify(
                "notifications/message",
                json!({"level": "info", "logger": "mock", "data": "about to answer"}),
            );
            self.notify("notifications/tools/list_changed", json!({}));
            self.notify(
                "notifications/progress",
                json!({"progressToken": "nobody-has-this-token", "progress": 1}),
            );
        }
        let response = match outcome {
            Ok(result) => Response::result(id, result),
            Err(error) => Response::error(Some(id), error),
        };
        self.send(&Message::Response(response));
        if self.opts.chatty {
            if let Some(token) = token {
                self.notify(
                    "notifications/progress",
                    json!({"progressToken": token, "progress": 99, "message": "late"}),
                );
            }
        }
    }

    fn notification(&self, n: Notification) {
        match n.method.as_str() {
            "notifications/cancelled" => {
                if let Some(id) = n.params.as_ref().and_then(|p| p.get("requestId")) {
                    eprintln!("mock-server: client cancelled {id}");
                    lock(&self.cancelled).insert(id.to_string());
                }
            }
            "notifications/initialized" => self.initialized.store(true, Ordering::SeqCst),
            _ => {}
        }
    }

    fn client_response(&self, r: Response) {
        let Some(id) = &r.id else { return };
        let waiter = lock(&self.waiting).remove(&id.to_value().to_string());
        if let Some(tx) = waiter {
            let _ = tx.send(r);
        }
    }

    fn handle(&self, req: Request) {
        if self.opts.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(self.opts.delay_ms));
        }
        if self.opts.jitter_ms > 0 {
            std::thread::sleep(Duration::from_millis(random_below(self.opts.jitter_ms)));
        }
        let params = req.params.clone().unwrap_or_else(|| json!({}));
        let token = params
            .get("_meta")
            .and_then(|m| m.get(PROGRESS_TOKEN))
            .cloned();
        let outcome = if self.opts.legacy {
            self.legacy(&req, &params)
        } else {
            self.modern(&req, &params)
        };
        if let Some(outcome) = outcome {
            self.respond(req.id, outcome, token.as_ref());
        }
    }

    fn server_info(&self) -> Value {
        json!({"name": self.opts.name, "version": "0.0.1"})
    }

    fn complete(&self, mut result: Value) -> Value {
        if let Value::Object(o) = &mut result {
            o.entry("resultType").or_insert_with(|| json!("complete"));
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = meta {
                m.insert(SERVER_INFO.into(), self.server_info());
            }
        }
        result
    }

    /// A modern request; `None` means "do not answer".
    fn modern(
        &self,
        req: &Request,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let meta = params.get("_meta");
        let version = meta
            .and_then(|m| m.get(PROTOCOL_VERSION))
            .and_then(Value::as_str);
        let caps = meta.and_then(|m| m.get(CLIENT_CAPABILITIES));
        let (Some(version), Some(caps)) = (version, caps.filter(|c| c.is_object())) else {
            return Some(Err(rpc_error(
                -32602,
                "params._meta must carry protocolVersion and clientCapabilities",
            )));
        };
        if !self.opts.versions.iter().any(|v| v == version) {
            return Some(Err(rpc_error(-32022, "unsupported protocol version")
                .with_data(
                    json!({"supported": self.opts.versions, "requested": version}),
                )));
        }
        let caps = caps.clone();
        if let Some(answer) = self.skills_request(&req.method, params) {
            return Some(answer.map(|r| self.complete(r)));
        }
        Some(match req.method.as_str() {
            "server/discover" => Ok(self.complete(json!({
                "supportedVersions": self.opts.versions,
                "capabilities": {
                    "tools": {"listChanged": true},
                    "resources": {"subscribe": true, "listChanged": true},
                    "prompts": {},
                    "completions": {},
                    "extensions": self.skills_extension(),
                },
                "instructions": "A mock server for tests.",
                "ttlMs": 60000,
                "cacheScope": "public",
            }))),
            "tools/list" => self.tools_list(params).map(|r| self.complete(r)),
            "tools/call" => return self.tools_call(req, params, &caps),
            "resources/list" => Ok(self.complete(json!({
                "resources": [
                    {"uri": "mock://a", "name": "a", "mimeType": "text/plain"},
                    {"uri": "mock://b", "name": "b"},
                    {"uri": "mock://ask", "name": "ask"},
                ],
                "ttlMs": 1000, "cacheScope": "private",
            }))),
            "resources/templates/list" => Ok(self.complete(json!({
                "resourceTemplates": self.file_offers("resourceTemplates").unwrap_or_else(
                    || json!([{"uriTemplate": "mock://item/{id}", "name": "item"}])
                ),
                "ttlMs": 0, "cacheScope": "public",
            }))),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                match uri {
                    "mock://ask" => self.ask(req, params, &caps, |done| {
                        json!({"contents": [{"uri": "mock://ask", "text": done.to_string()}], "ttlMs": 0, "cacheScope": "private"})
                    }),
                    u if u.starts_with("mock://") => Ok(self.complete(json!({
                        "contents": [{"uri": u, "mimeType": "text/plain", "text": format!("contents of {u}")}],
                        "ttlMs": 5000, "cacheScope": "public",
                    }))),
                    u => Err(rpc_error(-32602, format!("unknown resource {u}")).with_data(json!({"uri": u}))),
                }
            }
            "prompts/list" => Ok(self.complete(json!({
                "prompts": self.file_offers("prompts").unwrap_or_else(
                    || json!([{"name": "greet", "arguments": [{"name": "who", "required": true}]}])
                ),
                "ttlMs": 1000, "cacheScope": "public",
            }))),
            "prompts/get" => {
                let who = params
                    .pointer("/arguments/who")
                    .and_then(Value::as_str)
                    .unwrap_or("world");
                Ok(self.complete(json!({
                    "description": "a greeting",
                    "messages": [{"role": "user", "content": {"type": "text", "text": format!("hello {who}")}}],
                })))
            }
            "completion/complete" => {
                let prefix = params
                    .pointer("/argument/value")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let values: Vec<String> = ["alice", "albert", "bob"]
                    .iter()
                    .filter(|v| v.starts_with(prefix))
                    .map(|v| (*v).to_owned())
                    .collect();
                Ok(self.complete(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})))
            }
            "subscriptions/listen" => return self.listen(req, params),
            "tasks/get" | "tasks/update" | "tasks/cancel" => self
                .task_method(&req.method, params)
                .map(|r| self.complete(r)),
            other => Err(rpc_error(-32601, format!("method not found: {other}"))),
        })
    }

    /// The `key` list (`prompts`, `resourceTemplates`) of `--offers-file`,
    /// if given.
    fn file_offers(&self, key: &str) -> Option<Value> {
        let path = self.opts.offers_file.as_ref()?;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let offers: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Some(offers.get(key).cloned().unwrap_or_else(|| json!([])))
    }

    /// The tools of `--tools-file`, if given.
    fn file_tools(&self) -> Option<Vec<Value>> {
        let path = self.opts.tools_file.as_ref()?;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(tools)) => Some(tools),
            _ => {
                eprintln!("mock-server: {path} is not a JSON array of tools");
                Some(Vec::new())
            }
        }
    }

    /// `--watch-tools`: tells listeners when the tools file changes.
    fn watch_tools(&self) {
        let Some(path) = self.opts.tools_file.clone() else {
            return;
        };
        let mut last = std::fs::read(&path).unwrap_or_default();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = std::fs::read(&path).unwrap_or_default();
            if now == last {
                continue;
            }
            last = now;
            let ids = lock(&self.listeners).clone();
            for id in ids {
                self.notify(
                    "notifications/tools/list_changed",
                    json!({"_meta": {SUBSCRIPTION_ID: id}}),
                );
            }
            if self.opts.legacy {
                self.notify("notifications/tools/list_changed", json!({}));
            }
        }
    }

    fn tool_names(&self) -> Vec<Value> {
        if let Some(tools) = self.file_tools() {
            return tools;
        }
        let mut tools = vec![
            json!({"name": "echo", "description": "echoes", "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "$defs": {"t": {"type": "string"}}, "properties": {"text": {"$ref": "#/$defs/t"}}, "x-unknown-keyword": [1, 2]}}),
        ];
        for name in [
            "sleep", "never", "crash", "big", "progress", "ask", "fail", "error", "weird", "pids",
            "task",
        ] {
            tools.push(json!({"name": name, "description": format!("the {name} tool"), "inputSchema": {"type": "object"}}));
        }
        for i in 0..self.opts.extra_tools {
            tools.push(json!({"name": format!("filler_{i}"), "inputSchema": {"type": "object"}}));
        }
        tools
    }

    /// The `extensions` capability: the Skills extension with
    /// `--skills-file`, nothing otherwise.
    fn skills_extension(&self) -> Value {
        match self.opts.skills_file {
            Some(_) => json!({"io.modelcontextprotocol/skills": {}}),
            None => json!({}),
        }
    }

    /// `skills/list`, `skills/get` and `resources/read` of a skill file,
    /// from `--skills-file` as it stands now; `None` for other requests.
    fn skills_request(
        &self,
        method: &str,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let path = self.opts.skills_file.as_ref()?;
        let data: Value = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
        match method {
            "skills/list" => Some(Ok(json!({
                "skills": data["skills"].clone(),
                "ttlMs": 0, "cacheScope": "public",
            }))),
            "skills/get" => Some(
                data["skills"]
                    .as_array()
                    .and_then(|all| all.iter().find(|s| s["uri"] == uri))
                    .map(|skill| json!({"skill": skill, "ttlMs": 0, "cacheScope": "public"}))
                    .ok_or_else(|| rpc_error(-32602, format!("no skill is served at {uri}"))),
            ),
            "resources/read" => data["files"].get(uri).map(|text| {
                Ok(json!({
                    "contents": [{"uri": uri, "text": text}],
                    "ttlMs": 0, "cacheScope": "public",
                }))
            }),
            _ => None,
        }
    }

    fn tools_list(&self, params: &Value) -> Result<Value, switchboard_wire::ErrorObject> {
        let tools = self.tool_names();
        let cursor = params.get("cursor").and_then(Value::as_str);
        if self.opts.repeat_cursor {
            let page: Vec<Value> = tools.into_iter().take(1).collect();
            return Ok(
                json!({"tools": page, "nextCursor": "again", "ttlMs": 0, "cacheScope": "public"}),
            );
        }
        let size = if self.opts.page_size == 0 {
            tools.len().max(1)
        } else {
            self.opts.page_size
        };
        let pages = tools.len().div_ceil(size).max(1);
        let page = match cursor {
            None => 0,
            Some("") => 1,
            Some(c) => match c.parse::<usize>() {
                Ok(p) if p >= 2 && p < pages => p,
                _ => return Err(rpc_error(-32602, format!("invalid cursor {c:?}"))),
            },
        };
        if page >= pages {
            return Err(rpc_error(-32602, "invalid cursor"));
        }
        let items: Vec<Value> = tools.into_iter().skip(page * size).take(size).collect();
        let ttl = self.opts.tools_ttl_ms.unwrap_or(30000 - page as i64);
        let mut result = json!({"tools": items, "ttlMs": ttl, "cacheScope": "public"});
        if page + 1 < pages {
            let next = if page + 1 == 1 {
                String::new()
            } else {
                (page + 1).to_string()
            };
            result["nextCursor"] = json!(next);
        }
        Ok(result)
    }

    fn tools_call(
        &self,
        req: &Request,
        params: &Value,
        caps: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let num = |k: &str, d: u64| args.get(k).and_then(Value::as_u64).unwrap_or(d);
        Some(Ok(self.complete(match name {
            "echo" => json!({
                "content": [{"type": "text", "text": args.get("text").and_then(Value::as_str).unwrap_or("echo")}],
                "structuredContent": {"id": req.id.to_value(), "params": params},
            }),
            "sleep" => {
                let ms = num("ms", 1000);
                let deadline = std::time::Instant::now() + Duration::from_millis(ms);
                while std::time::Instant::now() < deadline {
                    if self.is_cancelled(&req.id) {
                        return None;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                json!({"content": [{"type": "text", "text": format!("slept {ms} ms")}]})
            }
            "never" => return None,
            "gather" => {
                let (count, index) = (num("count", 2), num("index", 0));
                match self.gather(count, index, Duration::from_millis(num("timeout_ms", 30_000))) {
                    Ok(()) => json!({"content": [{"type": "text", "text": format!("gathered {index}")}]}),
                    Err(seen) => json!({
                        "content": [{"type": "text", "text": format!("only {seen} of {count} gather calls were in flight at once")}],
                        "isError": true,
                    }),
                }
            }
            "crash" => {
                for i in 0..num("lines", 2) {
                    eprintln!("mock-server: crash line {i}");
                }
                eprintln!("mock-server: exiting mid-request");
                std::process::exit(i32::try_from(num("code", 3)).unwrap_or(3));
            }
            "big" => {
                let bytes = usize::try_from(num("bytes", 10 * 1024 * 1024)).unwrap_or(0);
                json!({"content": [{"type": "text", "text": "x".repeat(bytes)}]})
            }
            "lines" => {
                let count = num("count", 2000);
                let width = usize::try_from(num("width", 100)).unwrap_or(100).max(20);
                // Each line `width` characters with its newline; the last,
                // without one, is padded to `width`: `count × width` in all.
                let text: Vec<String> = (1..=count)
                    .map(|i| {
                        let head = format!("line {i} é ");
                        let newline = usize::from(i < count);
                        let pad = width.saturating_sub(head.chars().count() + newline);
                        format!("{head}{}", "-".repeat(pad))
                    })
                    .collect();
                json!({"content": [{"type": "text", "text": text.join("\n")}]})
            }
            "progress" => {
                let steps = num("steps", 3);
                if let Some(token) = params.pointer("/_meta/progressToken") {
                    for i in 1..=steps {
                        self.notify(
                            "notifications/progress",
                            json!({"progressToken": token, "progress": i, "total": steps, "message": format!("step {i}")}),
                        );
                    }
                }
                json!({"content": [{"type": "text", "text": format!("{steps} steps done")}]})
            }
            "ask" => {
                return Some(self.ask(req, params, caps, |done| {
                    json!({"content": [{"type": "text", "text": "done"}], "structuredContent": done})
                }));
            }
            "fail" => json!({"content": [{"type": "text", "text": "the tool failed"}], "isError": true}),
            "error" => {
                return Some(Err(rpc_error(-32602, "bad arguments for the error tool").with_data(json!({"field": "x"}))));
            }
            "weird" => json!({"content": [], "resultType": "mystery"}),
            "hostile" => return self.hostile(req, &args),
            "task" => return self.start_task(req, &args, caps),
            "pids" => json!({"content": [], "structuredContent": {"pid": std::process::id(), "grandchild": self.grandchild}}),
            n if n.starts_with("filler_") => json!({"content": [{"type": "text", "text": n}]}),
            n if self
                .file_tools()
                .is_some_and(|tools| tools.iter().any(|t| t.get("name") == Some(&json!(n)))) =>
            {
                json!({
                    "content": [{"type": "text", "text": format!("{n} ran")}],
                    "structuredContent": {"tool": n, "arguments": args},
                })
            }
            other => return Some(Err(rpc_error(-32602, format!("unknown tool {other}")))),
        })))
    }

    /// The `gather` tool: waits (at most `wait`) until `count` calls are in
    /// flight, then until every call with a higher `index` has answered.
    /// `Err` holds how many calls had arrived when the wait ran out.
    fn gather(&self, count: u64, index: u64, wait: Duration) -> Result<(), u64> {
        let deadline = std::time::Instant::now() + wait;
        let mut group = lock(&self.gathering);
        group.0 += 1;
        self.gathered.notify_all();
        // The last call answers first: call `index` goes once the
        // `count - 1 - index` calls above it have.
        let turn = count.saturating_sub(1).saturating_sub(index);
        while group.0 < count || group.1 < turn {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                let seen = group.0;
                return Err(seen);
            }
            group = self
                .gathered
                .wait_timeout(group, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        group.1 += 1;
        if group.1 >= count {
            *group = (0, 0);
        }
        self.gathered.notify_all();
        Ok(())
    }

    /// The `task` tool: a task handle when the extension is declared.
    fn start_task(
        &self,
        req: &Request,
        args: &Value,
        caps: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let num = |k: &str| args.get(k).and_then(Value::as_u64);
        let never = args.get("never").and_then(Value::as_bool) == Some(true);
        let work = (!never).then(|| Duration::from_millis(num("work_ms").unwrap_or(200)));
        let declared = caps
            .pointer("/extensions")
            .and_then(|e| e.get(switchboard_wire::tasks::EXTENSION_ID))
            .is_some();
        if !declared {
            let work = work?;
            std::thread::sleep(work);
            if self.is_cancelled(&req.id) {
                return None;
            }
            return Some(Ok(self.complete(
                json!({"content": [{"type": "text", "text": "done without a task"}]}),
            )));
        }
        let id = format!("mock-task-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        let now = std::time::Instant::now();
        let task = MockTask {
            created: now,
            working_since: now,
            work,
            poll_ms: num("poll_ms"),
            ttl_ms: num("ttl_ms"),
            inputs_left: num("inputs").unwrap_or(0),
            round: 1,
            answers: Vec::new(),
            cancelled: false,
            fail: args.get("fail").and_then(Value::as_bool) == Some(true),
            notify: (args.get("notify").and_then(Value::as_bool) == Some(true)).then(|| {
                NotifyTask {
                    bare: args.get("bare").and_then(Value::as_bool) == Some(true),
                    ..NotifyTask::default()
                }
            }),
        };
        let mut view = Self::task_view(&id, &task);
        view["resultType"] = json!("task");
        for k in ["inputRequests", "result"] {
            if let Value::Object(o) = &mut view {
                o.remove(k);
            }
        }
        lock(&self.tasks).insert(id, task);
        Some(Ok(self.complete(view)))
    }

    /// Takes the due steps of `notify` tasks and announces each on the
    /// task's listen stream.
    fn task_notifier(&self) {
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let now = std::time::Instant::now();
            let mut announce = Vec::new();
            for (id, t) in lock(&self.tasks).iter_mut() {
                let inputs_left = t.inputs_left;
                let Some(n) = t.notify.as_mut() else { continue };
                if t.cancelled || n.due.is_none_or(|due| due > now) {
                    continue;
                }
                n.due = None;
                n.asking = Some(inputs_left > 0);
                let (bare, listen) = (n.bare, n.listen.clone());
                let mut view = Self::task_view(id, t);
                if bare {
                    if let Value::Object(o) = &mut view {
                        o.remove("result");
                    }
                }
                view["_meta"] = json!({SUBSCRIPTION_ID: listen});
                announce.push(view);
            }
            for view in announce {
                self.notify("notifications/tasks", view);
            }
        }
    }

    /// `job` / `maybe_job` (2025-11-25 tasks).
    fn legacy_job(
        &self,
        name: &str,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        if params.get("task").is_none() {
            return if name == "job" {
                Err(rpc_error(-32601, "job must be called as a task"))
            } else {
                Ok(json!({"content": [{"type": "text", "text": "job done at once"}]}))
            };
        }
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let task = LegacyTask {
            created: std::time::Instant::now(),
            work: Duration::from_millis(args.get("work_ms").and_then(Value::as_u64).unwrap_or(100)),
            ask: args.get("ask").and_then(Value::as_bool) == Some(true),
            answer: None,
            cancelled: false,
        };
        let id = format!(
            "legacy-task-{}",
            self.next_id.fetch_add(1, Ordering::SeqCst)
        );
        let view = task.view(&id);
        lock(&self.legacy_tasks).push((id, task));
        Ok(json!({ "task": view }))
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25).
    fn legacy_task_method(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        if method == "tasks/list" {
            let tasks = lock(&self.legacy_tasks);
            let at = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.parse::<usize>().ok())
                .unwrap_or(0);
            let page: Vec<Value> = tasks
                .iter()
                .skip(at)
                .take(1)
                .map(|(id, t)| t.view(id))
                .collect();
            let mut out = json!({ "tasks": page });
            if at + 1 < tasks.len() {
                out["nextCursor"] = json!((at + 1).to_string());
            }
            return Ok(out);
        }
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let with = |f: &mut dyn FnMut(&mut LegacyTask) -> Value| {
            let mut tasks = lock(&self.legacy_tasks);
            tasks
                .iter_mut()
                .find(|(i, _)| *i == id)
                .map(|(_, t)| f(t))
                .ok_or_else(|| rpc_error(-32602, "Failed to retrieve task: Task not found"))
        };
        match method {
            "tasks/get" => with(&mut |t| t.view(&id)),
            "tasks/cancel" => with(&mut |t| {
                t.cancelled = true;
                t.view(&id)
            }),
            _ => loop {
                // tasks/result: wait for the end, asking on the way.
                let status = with(&mut |t| json!(t.status()))?;
                match status.as_str() {
                    Some("completed") => {
                        let answer = with(&mut |t| t.answer.clone().unwrap_or(Value::Null))?;
                        return Ok(json!({
                            "content": [{"type": "text", "text": format!("job done: {answer}")}],
                            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}},
                        }));
                    }
                    Some("cancelled") => return Err(rpc_error(-32603, "the task was cancelled")),
                    Some("input_required") => {
                        let ask_id = format!("srv-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
                        let (tx, rx) = mpsc::channel();
                        lock(&self.waiting).insert(json!(ask_id).to_string(), tx);
                        let mut ask = input_request("confirm")["params"].clone();
                        ask["_meta"] =
                            json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
                        self.send(&Message::Request(Request::new(
                            ask_id.as_str(),
                            "elicitation/create",
                            Some(ask),
                        )));
                        let answer = match rx.recv_timeout(Duration::from_secs(10)) {
                            Ok(Response { outcome: Ok(v), .. }) => v,
                            _ => json!("no answer"),
                        };
                        with(&mut |t| {
                            t.answer = Some(answer.clone());
                            Value::Null
                        })?;
                    }
                    _ => std::thread::sleep(Duration::from_millis(10)),
                }
            },
        }
    }

    /// A task as `tasks/get` shows it.
    fn task_view(id: &str, t: &MockTask) -> Value {
        let mut v = json!({
            "taskId": id,
            "createdAt": "2026-07-28T10:30:00Z",
            "lastUpdatedAt": "2026-07-28T10:30:00Z",
            "ttlMs": t.ttl_ms,
        });
        if let Some(ms) = t.poll_ms {
            v["pollIntervalMs"] = json!(ms);
        }
        let asking = t.notify.as_ref().map(|n| n.asking);
        if t.cancelled {
            v["status"] = json!("cancelled");
        } else if asking == Some(None) {
            v["status"] = json!("working");
            v["statusMessage"] = json!("working on it");
        } else if t.inputs_left > 0 && asking != Some(Some(false)) {
            v["status"] = json!("input_required");
            v["statusMessage"] = json!(format!("waiting for answer {}", t.round));
            let mut request = input_request("confirm");
            request["params"]["message"] = json!(format!("Proceed with step {}?", t.round));
            v["inputRequests"] = json!({"confirm": request});
        } else if t.fail && t.work.is_some_and(|w| t.working_since.elapsed() >= w) {
            v["status"] = json!("failed");
            v["error"] = json!({"code": -32603, "message": "the mock task failed"});
        } else if asking.is_some() || t.work.is_some_and(|w| t.working_since.elapsed() >= w) {
            v["status"] = json!("completed");
            v["result"] = json!({
                "content": [{"type": "text", "text": format!("task done after {} inputs", t.answers.len())}],
                "structuredContent": {"answers": t.answers},
                "isError": false,
            });
        } else {
            v["status"] = json!("working");
            v["statusMessage"] = json!("working on it");
        }
        v
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` for the `task` tool.
    fn task_method(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        let mut tasks = lock(&self.tasks);
        let expired = tasks.get(id).is_some_and(|t| {
            t.ttl_ms
                .is_some_and(|ttl| t.created.elapsed() >= Duration::from_millis(ttl))
        });
        if expired {
            tasks.remove(id);
        }
        let Some(task) = tasks.get_mut(id) else {
            return Err(rpc_error(-32602, "Failed to retrieve task: Task not found"));
        };
        let work = task.work;
        if let Some(n) = task.notify.as_mut() {
            // The first poll after a listener arrived starts the work; an
            // answer starts the next step.
            let step = match method {
                "tasks/get" => n.listen.is_some() && !n.started,
                "tasks/update" => {
                    n.asking == Some(true)
                        && task.inputs_left > 0
                        && params.pointer("/inputResponses/confirm").is_some()
                }
                _ => false,
            };
            if step {
                n.started = true;
                n.asking = None;
                n.due = work.map(|w| std::time::Instant::now() + w);
            }
        }
        match method {
            "tasks/get" => Ok(Self::task_view(id, task)),
            "tasks/update" => {
                if let Some(answer) = params.pointer("/inputResponses/confirm") {
                    if task.inputs_left > 0 && !task.cancelled {
                        task.answers.push(answer.clone());
                        task.inputs_left -= 1;
                        task.round += 1;
                        task.working_since = std::time::Instant::now();
                    }
                }
                Ok(json!({}))
            }
            _ => {
                eprintln!("mock-server: task {id} cancelled");
                task.cancelled = true;
                Ok(json!({}))
            }
        }
    }

    /// The `requestState` for a round; awkward characters on purpose, so a
    /// client that re-encodes it is caught.
    fn state(round: u64) -> String {
        format!("round={round};opaque=\u{e9}\u{2028}\"\\/{{}}\u{1F600}")
    }

    /// MRTR: `input_required` until the requested number of rounds passed.
    fn ask(
        &self,
        req: &Request,
        params: &Value,
        caps: &Value,
        finish: impl FnOnce(Value) -> Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        let rounds = params
            .pointer("/arguments/rounds")
            .and_then(Value::as_u64)
            .unwrap_or(2);
        let keys = input_keys(caps);
        let round = match params.get("requestState") {
            None => 0,
            Some(Value::String(s)) => match (1..=rounds).find(|r| *s == Self::state(*r)) {
                Some(r) => r,
                None => return Err(rpc_error(-32602, "requestState was altered")),
            },
            Some(_) => return Err(rpc_error(-32602, "requestState must be a string")),
        };
        let responses = params.get("inputResponses");
        if round > 0 {
            for key in &keys {
                if responses.and_then(|r| r.get(*key)).is_none() {
                    return Err(rpc_error(-32602, format!("missing input response {key}")));
                }
            }
        } else if responses.is_some() {
            return Err(rpc_error(-32602, "inputResponses without requestState"));
        }
        if round >= rounds {
            return Ok(self.complete(finish(json!({
                "id": req.id.to_value(),
                "rounds": round,
                "inputResponses": responses,
            }))));
        }
        let mut requests = Map::new();
        for key in keys {
            requests.insert(key.into(), input_request(key));
        }
        let mut result =
            json!({"resultType": "input_required", "requestState": Self::state(round + 1)});
        if !requests.is_empty() {
            result["inputRequests"] = Value::Object(requests);
        }
        Ok(self.complete(result))
    }

    fn listen(
        &self,
        req: &Request,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let id = req.id.to_value();
        let filter = params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        // Honour everything but resourcesListChanged, so clients see a subset.
        let mut acked = filter.clone();
        if let Value::Object(o) = &mut acked {
            o.remove("resourcesListChanged");
        }
        // Tasks are registered before the acknowledgement: the client may
        // poll as soon as it has it.
        for task_id in filter
            .get("taskIds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut tasks = lock(&self.tasks);
            let notify = task_id
                .as_str()
                .and_then(|t| tasks.get_mut(t))
                .and_then(|t| t.notify.as_mut());
            if let Some(n) = notify {
                n.listen = Some(id.clone());
            }
        }
        self.notify(
            "notifications/subscriptions/acknowledged",
            json!({"_meta": {SUBSCRIPTION_ID: id}, "notifications": acked}),
        );
        // A notification for a subscription nobody opened: to be ignored.
        self.notify(
            "notifications/tools/list_changed",
            json!({"_meta": {SUBSCRIPTION_ID: 987_654_321}}),
        );
        if filter.get("toolsListChanged") == Some(&json!(true)) {
            self.notify(
                "notifications/tools/list_changed",
                json!({"_meta": {SUBSCRIPTION_ID: id}}),
            );
            if self.opts.listen_end == "open" {
                lock(&self.listeners).push(id.clone());
            }
        }
        if let Some(uris) = filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
        {
            for uri in uris {
                self.notify(
                    "notifications/resources/updated",
                    json!({"_meta": {SUBSCRIPTION_ID: id}, "uri": uri}),
                );
            }
        }
        match self.opts.listen_end.as_str() {
            "cancel" => {
                self.notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "server shutting down"}),
                );
                None
            }
            "result" => Some(Ok(
                json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}),
            )),
            _ => None,
        }
    }

    /// A legacy (2025-11-25) request.
    fn legacy(
        &self,
        req: &Request,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let initialized = self.initialized.load(Ordering::SeqCst);
        Some(match req.method.as_str() {
            "server/discover" => match self.opts.discover_reply.as_str() {
                "silent" => return None,
                "invalid-params" => Err(rpc_error(-32602, "invalid params")),
                "parse-error" => {
                    self.send(&Message::Response(Response::error(
                        None,
                        rpc_error(-32700, "parse error"),
                    )));
                    return None;
                }
                _ => Err(rpc_error(-32601, "method not found: server/discover")),
            },
            "initialize" => {
                let requested = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                *lock(&self.client_caps) =
                    params.get("capabilities").cloned().unwrap_or(Value::Null);
                eprintln!("mock-server: initialize asked for {requested}");
                let mut capabilities = json!({"tools": {"listChanged": true}});
                if self.opts.legacy_tasks {
                    capabilities["tasks"] =
                        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
                }
                Ok(json!({
                    "protocolVersion": SUPPORTED_LEGACY,
                    "capabilities": capabilities,
                    "serverInfo": self.server_info(),
                    "instructions": "legacy mock",
                }))
            }
            "ping" => Ok(json!({})),
            _ if !initialized => Err(rpc_error(-32002, "server not initialized")),
            "tools/list" => {
                let mut tools = vec![
                    json!({"name": "echo", "inputSchema": {"type": "object"}}),
                    json!({"name": "sample", "inputSchema": {"type": "object"}}),
                ];
                if self.opts.legacy_tasks {
                    for (name, support) in [("job", "required"), ("maybe_job", "optional")] {
                        tools.push(json!({"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": support}}));
                    }
                }
                Ok(json!({ "tools": tools }))
            }
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
                if self.opts.legacy_tasks =>
            {
                self.legacy_task_method(&req.method, params)
            }
            "tools/call" => match params.get("name").and_then(Value::as_str) {
                Some(name @ ("job" | "maybe_job")) if self.opts.legacy_tasks => {
                    self.legacy_job(name, params)
                }
                Some("echo") => Ok(json!({
                    "content": [{"type": "text", "text": "legacy echo"}],
                    "structuredContent": {"id": req.id.to_value(), "params": params},
                })),
                Some("sample") => Ok(self.sample()),
                _ => Err(rpc_error(-32602, "unknown tool")),
            },
            other => Err(rpc_error(-32601, format!("method not found: {other}"))),
        })
    }

    /// Legacy: asks the client through server→client requests during a call.
    fn sample(&self) -> Value {
        let caps = lock(&self.client_caps).clone();
        let mut asks = vec![("ping", json!({}))];
        if caps.get("roots").is_some() {
            asks.push(("roots/list", json!({})));
        }
        if caps.get("sampling").is_some() {
            asks.push((
                "sampling/createMessage",
                input_request("summary")["params"].clone(),
            ));
        }
        if caps.get("elicitation").is_some() {
            asks.push((
                "elicitation/create",
                input_request("confirm")["params"].clone(),
            ));
        }
        let mut answers = Map::new();
        for (method, params) in asks {
            let id = format!("srv-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
            let (tx, rx) = mpsc::channel();
            lock(&self.waiting).insert(json!(id).to_string(), tx);
            self.send(&Message::Request(Request::new(
                id.as_str(),
                method,
                Some(params),
            )));
            let answer = match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Response { outcome: Ok(v), .. }) => v,
                Ok(Response {
                    outcome: Err(e), ..
                }) => json!({"error": e}),
                Err(_) => json!("no answer"),
            };
            answers.insert(method.into(), answer);
        }
        json!({"content": [{"type": "text", "text": Value::Object(answers.clone()).to_string()}], "structuredContent": answers})
    }
}

/// The input-request keys for the capabilities a request declared.
fn input_keys(caps: &Value) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if caps.get("elicitation").is_some() {
        keys.push("confirm");
    }
    if caps.get("sampling").is_some() {
        keys.push("summary");
    }
    if caps.get("roots").is_some() {
        keys.push("roots");
    }
    keys
}

fn input_request(key: &str) -> Value {
    match key {
        "confirm" => json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        }}),
        "summary" => json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise."}}],
            "maxTokens": 10,
        }}),
        _ => json!({"method": "roots/list", "params": {}}),
    }
}

/// A random number in `0..n` (`n > 0`): std's per-instance random hasher
/// keys, enough for jitter.
fn random_below(n: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n
}
