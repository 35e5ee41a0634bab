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
//! | `--malformed-input` | every elicitation it asks (the `ask` tool's rounds, the legacy `sample` tool's request) has a number for its `message`: params that do not fit `elicitation/create` |
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
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use switchboard_wire::meta::{
    CLIENT_CAPABILITIES, PROGRESS_TOKEN, PROTOCOL_VERSION, SERVER_INFO, SUBSCRIPTION_ID,
};
use switchboard_wire::shared::lock;
use switchboard_wire::{Message, Notification, Request, RequestId, Response, version};

mod input;
mod io;
mod legacy;
mod modern;
mod tasks;
mod tools;

use input::{input_keys, input_request, input_request_as};
use tasks::{LegacyTask, MockTask};

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
    /// Elicitations asked with params that do not fit the type.
    malformed_input: bool,
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
            "--malformed-input" => o.malformed_input = true,
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

fn rpc_error(code: i64, message: impl Into<String>) -> switchboard_wire::ErrorObject {
    switchboard_wire::ErrorObject {
        code,
        message: message.into(),
        data: None,
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
