//! The fourteen checks. Each returns what it saw: `Ok` to pass, `Err` to
//! fail.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_client::RequestOptions;
use switchboard_demo::{notes, tickets};
use switchboard_host::BoxFuture;
use switchboard_host::Connection;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, AssumeYes, CallOptions, Config, ConfigOrigin, Host,
    MountOptions, Outcome, ServerConfig, ServerStatus, Verdict,
};
use switchboard_wire::meta::{CLIENT_CAPABILITIES, PROGRESS_TOKEN, PROTOCOL_VERSION};
use switchboard_wire::shared::lock;
use switchboard_wire::{CallToolResult, ErrorCode, JsonObject, header, version};

use super::raw::{self, marked_processes};
use super::{Env, Seen};
use crate::connect;
use crate::out;
use crate::session::client_info;

/// Time a request of a check may take when nothing is wrong.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment variable that marks every process of check 14.
const MARK: &str = "SWITCHBOARD_SELFTEST_MARK";

// ---- 1, 2: notes over stdio -------------------------------------------------

pub(super) async fn long_note_whole(env: &Env) -> Seen {
    let c = connect_stdio(env, "notes", "notes").await?;
    let result = c
        .client
        .call_tool(
            "read_note",
            Some(object(json!({"id": notes::LONG_NOTE_ID}))),
        )
        .await;
    c.client.close().await;
    let text = result
        .map_err(|e| format!("read_note failed: {e}"))?
        .joined_text();
    let want = notes::long_note();
    if text == want {
        Ok(format!(
            "{} characters ({} bytes) in one result, identical to the note",
            text.chars().count(),
            text.len()
        ))
    } else {
        let same = text
            .chars()
            .zip(want.chars())
            .take_while(|(a, b)| a == b)
            .count();
        Err(format!(
            "got {} characters, want {}; they differ from character {same}",
            text.chars().count(),
            want.chars().count()
        ))
    }
}

pub(super) async fn paging(env: &Env) -> Seen {
    // The client's own paging (`list_all_tools`, as the host mounts
    // servers), so a regression there fails this check.
    let c = connect_stdio(env, "notes", "notes").await?;
    let result = c.client.list_all_tools().await;
    c.client.close().await;
    let listing = result.map_err(|e| format!("listing the tools failed: {e}"))?;
    let mut all: Vec<&str> = listing.items.iter().map(|t| t.name.as_str()).collect();
    let seen = format!(
        "{} tools in {} pages: {}",
        all.len(),
        listing.pages,
        all.join(", ")
    );
    all.sort_unstable();
    if listing.pages == 2 && all == ["list_notes", "read_note", "search"] {
        Ok(seen)
    } else {
        Err(seen)
    }
}

// ---- 3, 9: tickets on the wire ------------------------------------------

pub(super) async fn progress_then_response(env: &Env) -> Seen {
    // Through the client's HTTP transport (the one the host uses), which
    // decodes the event stream: its progress reaches the call's sink, then
    // the call ends with the id-matched response.
    let c = connect_tickets(env).await?;
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = events.clone();
    let options = RequestOptions::default().with_progress(move |_| {
        lock(&sink).push("progress".to_owned());
    });
    let result = c
        .client
        .call_tool_with(
            "search",
            Some(object(json!({"query": "printer"}))),
            &options,
        )
        .await;
    c.client.close().await;
    let mut kinds = std::mem::take(&mut *lock(&events));
    match result {
        Ok(r) if !r.is_error() => kinds.push("response".to_owned()),
        Ok(r) => kinds.push(format!("tool error ({})", one_line(&r))),
        Err(e) => kinds.push(format!("failure ({e})")),
    }
    let seen = format!("events in order: {}", kinds.join(", "));
    if kinds == ["progress", "response"] {
        Ok(seen)
    } else {
        Err(seen)
    }
}

pub(super) async fn header_mismatch(env: &Env) -> Seen {
    let body = tools_call_body("selftest-9", "get_ticket", json!({"id": "T-1"}), None);
    let control = raw::post(
        env.tickets.addr(),
        "/mcp",
        &mcp_headers("tools/call", "get_ticket"),
        &body,
    )
    .await?;
    if control.status != 200 {
        return Err(format!(
            "even matching headers were refused: HTTP {}",
            control.status
        ));
    }
    let bad = raw::post(
        env.tickets.addr(),
        "/mcp",
        &mcp_headers("tools/call", "search"),
        &body,
    )
    .await?;
    let code = serde_json::from_slice::<Value>(&bad.body)
        .ok()
        .and_then(|v| v["error"]["code"].as_i64());
    let seen = format!(
        "matching headers: HTTP 200; Mcp-Name \"search\" with body name \"get_ticket\": HTTP {}, error {}",
        bad.status,
        code.map_or_else(|| "none".into(), |c| c.to_string())
    );
    if bad.status == 400 && code == Some(ErrorCode::HeaderMismatch.code()) {
        Ok(seen)
    } else {
        Err(seen)
    }
}

fn tools_call_body(id: &str, name: &str, arguments: Value, progress: Option<&str>) -> String {
    let mut meta = json!({
        PROTOCOL_VERSION: version::LATEST,
        CLIENT_CAPABILITIES: {},
    });
    if let Some(token) = progress {
        meta[PROGRESS_TOKEN] = json!(token);
    }
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    })
    .to_string()
}

fn mcp_headers(method: &str, name: &str) -> Vec<(&'static str, String)> {
    vec![
        (header::PROTOCOL_VERSION, version::LATEST.to_owned()),
        (header::METHOD, method.to_owned()),
        (header::NAME, header::encode_value(name).into_owned()),
    ]
}

// ---- 4–7, 10: the demo through the host ---------------------------------

pub(super) async fn colliding_search(env: &Env) -> Seen {
    let host = demo_host(env).await?;
    let tools = host.tools();
    host.shutdown().await;
    let found: Vec<String> = tools
        .iter()
        .filter(|t| t.original_name == "search")
        .map(|t| format!("{} → {} on {}", t.name, t.original_name, t.server))
        .collect();
    let ok = ["notes", "tickets"].iter().all(|alias| {
        tools.iter().any(|t| {
            t.name == format!("mcp__{alias}__search")
                && t.server == *alias
                && t.original_name == "search"
        })
    });
    if ok {
        Ok(found.join("; "))
    } else {
        Err(format!(
            "table: {}",
            tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

pub(super) async fn original_name_sent(env: &Env) -> Seen {
    let host = demo_host(env).await?;
    let report = host
        .call_detailed(
            "mcp__tickets__search",
            Some(object(json!({"query": "vpn"}))),
            CallOptions::approver(AssumeYes),
        )
        .await;
    host.shutdown().await;
    if report.outcome != Outcome::Ok {
        return Err(format!(
            "the call failed ({:?}): {}",
            report.outcome,
            one_line(&report.result)
        ));
    }
    // The server knows only "search": the namespaced name is unknown to it.
    let c = connect_tickets(env).await?;
    let direct = c.client.call_tool("mcp__tickets__search", None).await;
    c.client.close().await;
    match direct {
        Err(e) if e.code() == Some(ErrorCode::InvalidParams.code()) => Ok(format!(
            "tickets answered mcp__tickets__search ({}); asked directly for that name it answers -32602, so it received \"search\"",
            one_line(&report.result)
        )),
        Err(e) => Err(format!("the direct call failed unexpectedly: {e}")),
        Ok(_) => Err("tickets also answers the namespaced name, so this proves nothing".into()),
    }
}

pub(super) async fn read_only_still_gated(env: &Env) -> Seen {
    let host = demo_host(env).await?;
    let gate = host
        .tools()
        .into_iter()
        .find(|t| t.name == "mcp__notes__search")
        .map(|t| t.status.gate);
    let recorder = Arc::new(Recorder::default());
    let mut options = CallOptions::default();
    options.approver = Some(recorder.clone());
    let report = host
        .call_detailed(
            "mcp__notes__search",
            Some(object(json!({"query": "printer"}))),
            options,
        )
        .await;
    host.shutdown().await;
    let asked = recorder.asked();
    let read_only = asked
        .first()
        .and_then(|r| r.annotations.as_ref())
        .and_then(|a| a.read_only_hint);
    let seen = format!(
        "gate {}, asked {} time(s) (readOnlyHint {}), answer no → {:?}, isError {}",
        gate.map_or("missing", Verdict::as_str),
        asked.len(),
        read_only.map_or_else(|| "absent".to_owned(), |b| b.to_string()),
        report.outcome,
        report.result.is_error()
    );
    if gate == Some(Verdict::Ask)
        && asked.len() == 1
        && read_only == Some(true)
        && report.outcome == Outcome::Denied
        && report.result.is_error()
    {
        Ok(seen)
    } else {
        Err(seen)
    }
}

pub(super) async fn budget_cut(env: &Env) -> Seen {
    let host = demo_host(env).await?;
    let seen = paged_note(&host).await;
    host.shutdown().await;
    seen
}

/// The long note over the budget: its head and tail within the budget,
/// a note with a handle, and the rest read back through
/// `mcp__switchboard__read_result` until the note is whole again.
async fn paged_note(host: &Host) -> Seen {
    let result = host
        .call(
            "mcp__notes__read_note",
            Some(object(json!({"id": notes::LONG_NOTE_ID}))),
            CallOptions::approver(AssumeYes),
        )
        .await;
    let budget = host.budget().chars();
    let note = notes::long_note();
    let texts: Vec<&str> = result.content.iter().filter_map(|b| b.as_text()).collect();
    let [head, _gap, tail, line] = texts.as_slice() else {
        return Err(format!(
            "{} text blocks, want the head, the gap, the tail and one line",
            texts.len()
        ));
    };
    let (head, tail) = (inside_markers(head).to_owned(), inside_markers(tail));
    let (head_chars, tail_chars) = (head.chars().count(), tail.chars().count());
    if budget != 8_000 || head_chars + tail_chars > budget {
        return Err(format!(
            "{head_chars} + {tail_chars} characters shown, over the budget of {budget}"
        ));
    }
    if !note.starts_with(&head) || !note.ends_with(&tail) || line.contains('\n') {
        return Err(format!(
            "not the note's head and tail, then one line: {line}"
        ));
    }
    let Some(handle) = line
        .split("\"handle\": \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
    else {
        return Err(format!("no handle in the note: {line}"));
    };
    // Read on from the end of the head until the result says it ended.
    let mut whole = head.clone();
    let mut pages = 0;
    loop {
        let offset = whole.chars().count();
        let page = host
            .call(
                "mcp__switchboard__read_result",
                Some(object(json!({"handle": handle, "offset": offset}))),
                CallOptions::approver(AssumeYes),
            )
            .await;
        pages += 1;
        let texts: Vec<&str> = page.content.iter().filter_map(|b| b.as_text()).collect();
        let [said, body] = texts.as_slice() else {
            return Err(format!("read_result at {offset}: {page:?}"));
        };
        whole.push_str(inside_markers(body));
        if said.contains("that is the end") || pages > 20 {
            break;
        }
    }
    let seen = format!(
        "{head_chars} + {tail_chars} of {} characters shown, a handle, the rest read back in {pages} page(s)",
        note.chars().count()
    );
    if whole == note { Ok(seen) } else { Err(seen) }
}

/// The server's text of one wrapped block, exactly: between the line of
/// the opening marker and the closing one.
fn inside_markers(block: &str) -> &str {
    let start = block.find(">\n").map_or(0, |i| i + 2);
    let end = block.rfind("\n</untrusted-text>").unwrap_or(block.len());
    block.get(start..end).unwrap_or_default()
}

pub(super) async fn non_ascii_name(env: &Env) -> Seen {
    let host = demo_host(env).await?;
    let entry = host
        .tools()
        .into_iter()
        .find(|t| t.original_name == tickets::NON_ASCII_TOOL);
    let Some(entry) = entry else {
        host.shutdown().await;
        return Err(format!(
            "no tool maps back to {:?}",
            tickets::NON_ASCII_TOOL
        ));
    };
    let result = host
        .call(&entry.name, None, CallOptions::approver(AssumeYes))
        .await;
    host.shutdown().await;
    let text = one_line(&result);
    let seen = format!(
        "{} → {:?} over HTTP (Mcp-Name {}) → {text}",
        entry.name,
        entry.original_name,
        header::encode_value(&entry.original_name)
    );
    if !result.is_error() && text.starts_with(&format!("{}:", tickets::NON_ASCII_TOOL)) {
        Ok(seen)
    } else {
        Err(seen)
    }
}

// ---- 8: an outage ---------------------------------------------------------

pub(super) async fn outage(env: &Env) -> Seen {
    let port = crate::demo_env::empty_port().map_err(|e| format!("no free port: {e}"))?;
    let host = mount(vec![
        notes_entry(env),
        ServerConfig::http("tickets", format!("http://127.0.0.1:{port}/mcp")),
    ])
    .await?;
    let servers = host.servers();
    let notes_call = host
        .call(
            "mcp__notes__list_notes",
            None,
            CallOptions::approver(AssumeYes),
        )
        .await;
    let tickets_call = host
        .call(
            "mcp__tickets__search",
            Some(object(json!({"query": "printer"}))),
            CallOptions::approver(AssumeYes),
        )
        .await;
    let outages = host.outage_text().unwrap_or_default();
    host.shutdown().await;
    let status = |alias: &str| servers.iter().find(|s| s.alias == alias);
    let notes_up = status("notes").is_some_and(|s| s.status == ServerStatus::Up);
    let tickets = status("tickets");
    let reason = tickets.and_then(|s| s.reason.clone()).unwrap_or_default();
    let seen = format!(
        "notes {} (list_notes {}), tickets {} ({reason}), mcp__tickets__search → {}",
        status("notes").map_or("missing", |s| crate::cmd::servers::status_word(s.status)),
        if notes_call.is_error() {
            "failed"
        } else {
            "answered"
        },
        tickets.map_or("missing", |s| crate::cmd::servers::status_word(s.status)),
        if tickets_call.is_error() {
            "isError"
        } else {
            "a result"
        },
    );
    if notes_up
        && !notes_call.is_error()
        && tickets.is_some_and(|s| s.status == ServerStatus::Down)
        && !reason.is_empty()
        && tickets_call.is_error()
        && outages.contains("tickets")
    {
        Ok(seen)
    } else {
        Err(seen)
    }
}

// ---- 11: protocol error vs tool error -----------------------------------

pub(super) async fn protocol_vs_tool_error(env: &Env) -> Seen {
    let c = connect_tickets(env).await?;
    let unknown = c.client.call_tool("no_such_tool", None).await;
    let failure = c
        .client
        .call_tool("get_ticket", Some(object(json!({"id": "T-999"}))))
        .await;
    c.client.close().await;
    let unknown_seen = match &unknown {
        Ok(r) => format!("a result (isError {})", r.is_error()),
        Err(e) => match e.code() {
            Some(code) => format!("JSON-RPC error {code}"),
            None => format!("a failure without a code: {e}"),
        },
    };
    let failure_seen = match &failure {
        Ok(r) if r.is_error() => format!("isError result: {}", one_line(r)),
        Ok(_) => "a successful result".into(),
        Err(e) => format!("a protocol error: {e}"),
    };
    let seen = format!("unknown tool → {unknown_seen}; get_ticket T-999 → {failure_seen}");
    let protocol = matches!(&unknown, Err(e) if e.code() == Some(ErrorCode::InvalidParams.code()));
    let tool_error = matches!(&failure, Ok(r) if r.is_error());
    if protocol && tool_error {
        Ok(seen)
    } else {
        Err(seen)
    }
}

// ---- 12, 13: hangs and deaths -------------------------------------------

pub(super) async fn hang_times_out(env: &Env) -> Seen {
    let mut faulty = faulty_entry(env);
    faulty
        .tool_timeouts
        .insert("hang".into(), Duration::from_millis(2_000));
    let host = mount(vec![faulty]).await?;
    let hanging = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call("mcp__faulty__hang", None, CallOptions::approver(AssumeYes))
                .await
        })
    };
    let echo = host
        .call(
            "mcp__faulty__echo",
            Some(object(json!({"text": "still here"}))),
            CallOptions::approver(AssumeYes),
        )
        .await;
    let hang_pending_during_echo = !hanging.is_finished();
    let hang = hanging.await;
    let after = host
        .call(
            "mcp__faulty__echo",
            Some(object(json!({"text": "after"}))),
            CallOptions::approver(AssumeYes),
        )
        .await;
    host.shutdown().await;
    let hang = hang.map_err(|e| format!("the hanging call's task failed: {e}"))?;
    let seen = format!(
        "echo → {:?} while hang was {}; hang → {}{}; echo afterwards → {:?}",
        one_line(&echo),
        if hang_pending_during_echo {
            "pending"
        } else {
            "already over"
        },
        if hang.is_error() { "isError: " } else { "" },
        out::clip(&one_line(&hang), 90),
        one_line(&after)
    );
    if !echo.is_error()
        && one_line(&echo) == "still here"
        && hang_pending_during_echo
        && hang.is_error()
        && one_line(&hang).contains("2000 ms")
        && one_line(&after) == "after"
    {
        Ok(seen)
    } else {
        Err(seen)
    }
}

pub(super) async fn death_fails_pending(env: &Env) -> Seen {
    let c = connect_stdio(env, "faulty", "faulty").await?;
    let Some(stdio) = c.stdio.clone() else {
        return Err("no stdio transport".into());
    };
    let long = Duration::from_secs(60);
    let mut pending = Vec::new();
    for _ in 0..3 {
        let client = c.client.clone();
        pending.push(tokio::spawn(async move {
            let r = client
                .call_tool_with("hang", None, &RequestOptions::timeout(long))
                .await;
            (r, Instant::now())
        }));
    }
    let waited = Instant::now();
    while stdio.in_flight() < 3 {
        if waited.elapsed() > REQUEST_TIMEOUT {
            return Err(format!(
                "only {} calls reached the server",
                stdio.in_flight()
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let died = Instant::now();
    let die = c.client.call_tool("die", None).await;
    let mut failures = Vec::new();
    let mut latest = Duration::ZERO;
    for task in pending {
        match task.await {
            Ok((Err(e), at)) if !e.is_timeout() => {
                latest = latest.max(at.saturating_duration_since(died));
                failures.push(e.to_string());
            }
            Ok((Err(e), _)) => return Err(format!("a pending call timed out instead: {e}")),
            Ok((Ok(_), _)) => return Err("a pending call got a result from a dead server".into()),
            Err(e) => return Err(format!("a call's task failed: {e}")),
        }
    }
    c.client.close().await;
    let seen = format!(
        "3 pending calls (60 s timeout) failed {} ms after `die`, with: {}",
        latest.as_millis(),
        failures.first().map_or("", String::as_str)
    );
    // "At once": well before any timeout; the cause names the exit.
    if die.is_err()
        && latest < Duration::from_secs(20)
        && failures
            .iter()
            .all(|f| f.contains("closed") || f.contains("exit"))
    {
        Ok(seen)
    } else {
        Err(seen)
    }
}

// ---- 14: no orphans --------------------------------------------------------

pub(super) async fn no_orphans(env: &Env) -> Seen {
    if !std::path::Path::new("/proc/self/environ").exists() {
        return Err("this check reads /proc, which this system lacks".into());
    }
    let config = env.dir.path().join("orphans.json");
    // The mark reaches the servers only when passed through: their
    // environment is scrubbed.
    let text = json!({
        "defaults": {"envPassthrough": [MARK]},
        "mcpServers": {
            "notes": {"command": env.exe.to_string_lossy(), "args": ["demo-server", "notes"]},
            "faulty": {"command": env.exe.to_string_lossy(), "args": ["demo-server", "faulty"]},
        },
    })
    .to_string();
    std::fs::write(&config, text).map_err(|e| format!("cannot write {}: {e}", config.display()))?;

    // A clean exit: `switchboard servers` mounts both, prints, shuts down.
    let mark = format!("{}-{}", std::process::id(), nanos());
    let output = {
        let exe = env.exe.clone();
        let config = config.clone();
        let mark = mark.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(exe)
                .arg("--config")
                .arg(config)
                .args(["--json", "servers"])
                .env(MARK, mark)
                .env_remove("RUST_LOG")
                .stdin(std::process::Stdio::null())
                .output()
        })
        .await
        .map_err(|e| format!("the child's task failed: {e}"))?
        .map_err(|e| format!("cannot run switchboard: {e}"))?
    };
    let left: Vec<_> = marked_processes(MARK, &mark)
        .into_iter()
        .filter(|p| !p.is_watchdog())
        .collect();
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let up = listed
        .as_array()
        .map_or(0, |a| a.iter().filter(|s| s["status"] == "up").count());
    if !output.status.success() || up != 2 {
        return Err(format!(
            "`switchboard servers` did not mount both servers ({up} up, {}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if !left.is_empty() {
        return Err(format!(
            "after a clean exit, still running: {}",
            describe(&left)
        ));
    }
    let watchdog_gone = wait_gone(&mark, Duration::from_secs(10)).await;
    if !watchdog_gone.is_empty() {
        return Err(format!(
            "after a clean exit, still running 10 s later: {}",
            describe(&watchdog_gone)
        ));
    }

    // A host killed with SIGKILL: its servers must die with it.
    let mark = format!("{}-{}", std::process::id(), nanos());
    // The process under test is this binary acting as the host; the server
    // processes it starts go through the client's spawn helper.
    #[allow(clippy::disallowed_methods)]
    let child = std::process::Command::new(&env.exe)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--stdio"])
        .env(MARK, &mark)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut child = child.map_err(|e| format!("cannot start switchboard serve: {e}"))?;
    let started = Instant::now();
    let servers = loop {
        let servers: Vec<_> = marked_processes(MARK, &mark)
            .into_iter()
            .filter(|p| p.cmdline.contains("demo-server"))
            .collect();
        if servers.len() == 2 {
            break servers;
        }
        if started.elapsed() > REQUEST_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the gateway started {} of 2 servers",
                servers.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let host_pid = child.id();
    child
        .kill()
        .map_err(|e| format!("cannot kill the host: {e}"))?;
    let _ = child.wait();
    let killed = Instant::now();
    let left = wait_gone(&mark, Duration::from_secs(10)).await;
    if !left.is_empty() {
        return Err(format!(
            "10 s after the host (pid {host_pid}) was killed, still running: {}",
            describe(&left)
        ));
    }
    Ok(format!(
        "clean exit: both servers gone when it returned; SIGKILL of the host: servers {} gone within {} ms",
        servers
            .iter()
            .map(|p| p.pid.to_string())
            .collect::<Vec<_>>()
            .join(" and "),
        killed.elapsed().as_millis()
    ))
}

/// Waits up to `limit` for every process carrying `mark` to be gone;
/// returns those still there.
async fn wait_gone(mark: &str, limit: Duration) -> Vec<raw::Proc> {
    let start = Instant::now();
    loop {
        let left = marked_processes(MARK, mark);
        if left.is_empty() || start.elapsed() > limit {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn describe(procs: &[raw::Proc]) -> String {
    procs
        .iter()
        .map(|p| format!("pid {} ({})", p.pid, out::clip(&p.cmdline, 60)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

// ---- helpers -----------------------------------------------------------------

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The result's text without markers, on one line.
fn one_line(result: &CallToolResult) -> String {
    out::without_markers(&result.joined_text())
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn notes_entry(env: &Env) -> ServerConfig {
    ServerConfig::stdio("notes", env.exe.to_string_lossy(), ["demo-server", "notes"])
}

fn faulty_entry(env: &Env) -> ServerConfig {
    ServerConfig::stdio(
        "faulty",
        env.exe.to_string_lossy(),
        ["demo-server", "faulty"],
    )
}

/// A host with no permission rules (every call is asked about).
async fn mount(servers: Vec<ServerConfig>) -> Result<Host, String> {
    let mut config = Config::new(ConfigOrigin::Inline);
    config.servers = servers;
    let mut options = MountOptions::default();
    options.client_info = Some(client_info());
    // The self-test needs no logins and reads none of the user's.
    options.token_store = None;
    Host::mount(config, options)
        .await
        .map_err(|e| format!("cannot mount: {e}"))
}

/// notes over stdio and tickets over HTTP, both required up.
async fn demo_host(env: &Env) -> Result<Host, String> {
    let host = mount(vec![
        notes_entry(env),
        ServerConfig::http("tickets", env.tickets.url()),
    ])
    .await?;
    let down: Vec<String> = host
        .servers()
        .into_iter()
        .filter(|s| s.status != ServerStatus::Up)
        .map(|s| format!("{} is down: {}", s.alias, s.reason.unwrap_or_default()))
        .collect();
    if down.is_empty() {
        Ok(host)
    } else {
        host.shutdown().await;
        Err(down.join("; "))
    }
}

async fn connect_stdio(env: &Env, alias: &str, which: &str) -> Result<Connection, String> {
    let server = ServerConfig::stdio(alias, env.exe.to_string_lossy(), ["demo-server", which]);
    connect::connect(&server, REQUEST_TIMEOUT)
        .await
        .map_err(|e| format!("cannot start {which}: {e}"))
}

async fn connect_tickets(env: &Env) -> Result<Connection, String> {
    let server = connect::http_server_without_oauth("tickets", &env.tickets.url());
    connect::connect(&server, REQUEST_TIMEOUT)
        .await
        .map_err(|e| format!("cannot reach tickets: {e}"))
}

/// An approver that records each question and says no.
#[derive(Debug, Default)]
struct Recorder {
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Recorder {
    fn asked(&self) -> Vec<ApprovalRequest> {
        lock(&self.asked).clone()
    }
}

impl Approver for Recorder {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        lock(&self.asked).push(request.clone());
        Box::pin(async { Approval::Deny(None) })
    }
}
