//! The soak: many concurrent `tools/call` through one `Host` to servers over
//! stdio (the testkit's mock server answering in random order after random
//! delays) and over HTTP (the notes and tickets demos, in this process).
//! Ignored by default; `bench/soak.sh N` runs both tests with N calls
//! (`SWITCHBOARD_SOAK_CALLS`, default 10,000) and CI runs them reduced.
//!
//! - `soak_steady`: every call answered and checked against its request,
//!   peak RSS reported, file descriptors, runtime tasks and child
//!   processes counted before and after.
//! - `soak_with_kills`: the same with short timeouts, the breaker, and the
//!   stdio server killed with `SIGKILL` at random moments: every call ends
//!   (a result or `isError`), successful answers still match their
//!   requests, the audit log has one line per call and verifies, and no
//!   child process remains.

#![allow(clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_host::{CallOptions, Host, verify_audit};
use switchboard_wire::CallToolResult;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::util::*;

fn calls() -> usize {
    std::env::var("SWITCHBOARD_SOAK_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

/// File descriptors this process holds.
fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// Peak resident set size (`VmHWM`) in MiB.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Live (not zombie) descendants of this process: pid → command line.
fn descendants() -> BTreeMap<u32, String> {
    let mut parent = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        if state != "Z" {
            parent.insert(pid, ppid);
        }
    }
    let me = std::process::id();
    let mut found = BTreeSet::from([me]);
    loop {
        let before = found.len();
        for (pid, ppid) in &parent {
            if found.contains(ppid) {
                found.insert(*pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.remove(&me);
    found.retain(|pid| !is_watchdog(*pid, parent.get(pid).copied().unwrap_or(0)));
    found
        .into_iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            (pid, cmd)
        })
        .collect()
}

/// Whether `pid` is the stdio transport's one watchdog process (a shell
/// that kills the servers' process groups if this process dies): a child of
/// ours running the watchdog script. It lives as long as this process, so
/// it is not a leftover.
fn is_watchdog(pid: u32, parent: u32) -> bool {
    parent == std::process::id()
        && std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("kill -KILL -"))
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Waits up to 10 s for `f` to hold.
async fn settle(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    f()
}

/// A demo server over HTTP in this process, stopped when dropped.
struct Served {
    url: String,
    _stop: oneshot::Sender<()>,
}

async fn serve(server: switchboard_server::Server) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(switchboard_server::http::serve(
        server,
        listener,
        switchboard_server::http::HttpOptions::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    Served { url, _stop: stop }
}

/// One call of the soak: the namespaced tool, its arguments, and what its
/// answer must contain to be the answer to this request.
struct Planned {
    tool: &'static str,
    arguments: Value,
    expect: String,
}

fn plan(i: usize) -> Planned {
    let notes: Vec<_> = switchboard_demo::notes::notes()
        .iter()
        .filter(|n| n.body.len() < 2000)
        .collect();
    let tickets = switchboard_demo::tickets::seed();
    match i % 3 {
        0 => Planned {
            tool: "mcp__m__echo",
            arguments: json!({"text": format!("call {i}")}),
            expect: format!("call {i}"),
        },
        1 => {
            let n = notes[i % notes.len()];
            Planned {
                tool: "mcp__notes__read_note",
                arguments: json!({"id": n.id}),
                expect: n.body.chars().take(40).collect(),
            }
        }
        _ => {
            let t = &tickets[i % tickets.len()];
            Planned {
                tool: "mcp__tickets__get_ticket",
                arguments: json!({"id": t.id}),
                expect: t.title.clone(),
            }
        }
    }
}

/// Whether `result` answers `planned` (and, for the mock's echo, carries
/// exactly the arguments sent).
fn answers(planned: &Planned, result: &CallToolResult) -> bool {
    if !text(result).contains(&planned.expect) {
        return false;
    }
    if planned.tool == "mcp__m__echo" {
        let sent = result
            .structured_content
            .as_ref()
            .and_then(|s| s.get("params"))
            .and_then(|p| p.get("arguments"));
        return sent == Some(&planned.arguments);
    }
    true
}

#[derive(Default)]
struct Tally {
    /// Each `isError` text (its start, per tool), counted.
    why: std::sync::Mutex<BTreeMap<String, usize>>,
    ok: AtomicUsize,
    errors: AtomicUsize,
    lost: AtomicUsize,
    mismatched: AtomicUsize,
}

/// Runs `n` concurrent calls, the i-th starting after `i/n` of `spread`;
/// a call that has not ended after `limit` counts as lost.
async fn run_calls(host: &Host, n: usize, spread: Duration, limit: Duration) -> Arc<Tally> {
    let tally = Arc::new(Tally::default());
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let host = host.clone();
        let tally = tally.clone();
        let start = spread.mul_f64(i as f64 / n as f64);
        set.spawn(async move {
            tokio::time::sleep(start).await;
            let planned = plan(i);
            let arguments = planned.arguments.as_object().cloned();
            let call = host.call(planned.tool, arguments, CallOptions::default());
            match tokio::time::timeout(limit, call).await {
                Err(_) => {
                    tally.lost.fetch_add(1, Ordering::Relaxed);
                }
                Ok(r) if r.is_error() => {
                    tally.errors.fetch_add(1, Ordering::Relaxed);
                    let why: String = text(&r).chars().skip(60).take(240).collect();
                    let key = format!("{}: {why}", planned.tool);
                    *tally.why.lock().unwrap().entry(key).or_default() += 1;
                }
                Ok(r) if answers(&planned, &r) => {
                    tally.ok.fetch_add(1, Ordering::Relaxed);
                }
                Ok(r) => {
                    eprintln!(
                        "mismatch: {} {} -> {}",
                        planned.tool,
                        planned.arguments,
                        text(&r)
                    );
                    tally.mismatched.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while let Some(joined) = set.join_next().await {
        if joined.is_err() {
            tally.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
    tally
}

struct Census {
    fds: usize,
    tasks: usize,
}

fn census() -> Census {
    Census {
        fds: fds(),
        tasks: alive_tasks(),
    }
}

async fn with_servers<F, Fut>(body: F)
where
    F: FnOnce(Dir, String, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let notes = serve(switchboard_demo::notes::server().unwrap()).await;
    let tickets = serve(switchboard_demo::tickets::server().unwrap()).await;
    // Warm-up: the first spawn starts what lives as long as the process
    // (the spawner thread and its one watchdog process, with its pipe), so
    // the counts before and after compare like with like.
    let dir = Dir::new();
    dir.mount(json!({"mcpServers": {"m": stdio(&[])}}))
        .await
        .shutdown()
        .await;
    body(dir, notes.url.clone(), tickets.url.clone()).await;
}

/// The soak's config: the mock server `m` as `mock` says, the two demos
/// over HTTP, all allowed, audited to `audit`.
fn soak_config(mock: Value, notes: &str, tickets: &str, audit: &std::path::Path) -> Value {
    json!({
        "mcpServers": {
            "m": mock,
            "notes": {"type": "http", "url": notes},
            "tickets": {"type": "http", "url": tickets},
        },
        "permissions": {"allow": ["mcp__m", "mcp__notes", "mcp__tickets"]},
        "audit": audit.display().to_string(),
    })
}

/// Shuts the host down and waits for its children, descriptors and tasks
/// to go: whether the children went, the census after, the children left.
async fn wind_down(host: Host, before: &Census) -> (bool, Census, BTreeMap<u32, String>) {
    host.shutdown().await;
    drop(host);
    let children_gone = settle(|| descendants().is_empty()).await;
    settle(|| {
        let now = census();
        now.fds <= before.fds && now.tasks <= before.tasks
    })
    .await;
    (children_gone, census(), descendants())
}

/// Asserts the audit log verifies and has one line for each of `n` calls.
fn assert_one_intact_line_per_call(audit: &std::path::Path, n: usize) {
    let verified = verify_audit(audit).unwrap();
    assert!(verified.is_intact(), "{:?}", verified.problems);
    assert_eq!(verified.lines, n, "one audit line per call");
}

/// The line the soak prints, and whether it is a pass.
#[allow(clippy::too_many_arguments)]
fn report(
    name: &str,
    n: usize,
    tally: &Tally,
    before: &Census,
    after: &Census,
    children: usize,
    elapsed: Duration,
) -> bool {
    let lost = tally.lost.load(Ordering::Relaxed);
    let mismatched = tally.mismatched.load(Ordering::Relaxed);
    eprintln!(
        "SOAK {name}: {n} calls, {lost} lost, {mismatched} mismatched, peak RSS {} MiB, \
         fds before/after {}/{}, tasks before/after {}/{}, children after: {children} \
         ({} ok, {} isError, {:.1} s)",
        peak_rss_mib(),
        before.fds,
        after.fds,
        before.tasks,
        after.tasks,
        tally.ok.load(Ordering::Relaxed),
        tally.errors.load(Ordering::Relaxed),
        elapsed.as_secs_f64(),
    );
    for (why, n) in tally.why.lock().unwrap().iter() {
        eprintln!("  isError ×{n}: {why}");
    }
    lost == 0
        && mismatched == 0
        && after.fds <= before.fds
        && after.tasks <= before.tasks
        && children == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the soak: run by bench/soak.sh"]
async fn soak_steady() {
    with_servers(|dir, notes, tickets| async move {
        let n = calls();
        let before = census();
        let audit = dir.path("audit.jsonl");
        let mock = stdio(&["--jitter-ms", "50", "--extra-tools", "0"]);
        let host = dir.mount(soak_config(mock, &notes, &tickets, &audit)).await;
        let started = Instant::now();
        let tally = run_calls(&host, n, Duration::ZERO, Duration::from_secs(300)).await;
        let elapsed = started.elapsed();
        let (children_gone, after, children) = wind_down(host, &before).await;
        let pass = report(
            "steady",
            n,
            &tally,
            &before,
            &after,
            children.len(),
            elapsed,
        );
        assert!(children_gone, "children left: {children:?}");
        assert_eq!(tally.errors.load(Ordering::Relaxed), 0, "no call may fail");
        assert_one_intact_line_per_call(&audit, n);
        assert!(pass, "the soak failed (see the SOAK line)");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the soak: run by bench/soak.sh"]
async fn soak_with_kills() {
    with_servers(|dir, notes, tickets| async move {
        let n = calls();
        let before = census();
        let audit = dir.path("audit.jsonl");
        let mut mock = stdio(&["--jitter-ms", "50", "--extra-tools", "0"]);
        mock["timeoutMs"] = json!(3000);
        let mut config = soak_config(mock, &notes, &tickets, &audit);
        config["breaker"] = json!({"failures": 5, "cooldownMs": 300});
        let host = dir.mount(config).await;
        // The killer: SIGKILL the mock server at random moments while the
        // calls run.
        let done = Arc::new(AtomicBool::new(false));
        let kills = Arc::new(AtomicUsize::new(0));
        let killer = {
            let (done, kills) = (done.clone(), kills.clone());
            tokio::spawn(async move {
                let mut seed = u64::from(std::process::id()) | 1;
                while !done.load(Ordering::Relaxed) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    tokio::time::sleep(Duration::from_millis(100 + seed % 400)).await;
                    for (pid, cmd) in descendants() {
                        if cmd.contains("mock-server") && !done.load(Ordering::Relaxed) {
                            let _ = std::process::Command::new("kill")
                                .args(["-KILL", &pid.to_string()])
                                .status();
                            kills.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        };
        // Calls spread over a few seconds (a millisecond per call, at
        // least 3 s), so the kills land while calls are in flight.
        let spread = Duration::from_millis(u64::try_from(n).unwrap_or(u64::MAX).max(3000));
        let started = Instant::now();
        let tally = run_calls(&host, n, spread, Duration::from_secs(300)).await;
        let elapsed = started.elapsed();
        done.store(true, Ordering::Relaxed);
        let _ = killer.await;
        let (children_gone, after, children) = wind_down(host, &before).await;
        eprintln!(
            "SOAK kills: {} SIGKILLs sent",
            kills.load(Ordering::Relaxed)
        );
        let pass = report("kills", n, &tally, &before, &after, children.len(), elapsed);
        assert!(children_gone, "children left: {children:?}");
        assert_one_intact_line_per_call(&audit, n);
        assert!(pass, "the soak failed (see the SOAK line)");
    })
    .await;
}
