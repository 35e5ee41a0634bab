//! Calls never throw: every failure is an `isError` result the model can
//! read; tool errors pass through; one budget for every result.

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard_host::{AssumeYes, Budget, CallOptions, Outcome, ServerStatus};
use switchboard_wire::{CallToolResult, ContentBlock};

use crate::util::*;

fn yes() -> CallOptions {
    CallOptions::approver(AssumeYes)
}

fn args(v: serde_json::Value) -> Option<switchboard_wire::JsonObject> {
    v.as_object().cloned()
}

/// The server text of a wrapped result block (between the markers).
fn inner(block: &str) -> &str {
    let start = block.find(">\n").unwrap() + 2;
    let end = block.rfind("\n</untrusted-text>").unwrap();
    &block[start..end]
}

fn check_cut(result: &CallToolResult, kept: usize, total: usize) {
    assert!(!result.is_error());
    // The head, the gap in one line, the tail, the note with the handle.
    assert_eq!(result.content.len(), 4, "{result:?}");
    let text = |i: usize| result.content[i].as_text().unwrap();
    for body in [text(0), text(2)] {
        assert!(
            body.starts_with("<untrusted-text source="),
            "{}",
            &body[..80]
        );
    }
    let shown = inner(text(0)).chars().count() + inner(text(2)).chars().count();
    assert_eq!(shown, kept);
    assert_eq!(text(1).lines().count(), 1);
    assert!(
        text(1).contains(&format!("{} characters not shown here", total - kept)),
        "{}",
        text(1)
    );
    let note = text(3);
    assert_eq!(note.lines().count(), 1);
    assert!(
        note.contains(&format!("this result has {total} characters")),
        "{note}"
    );
}

/// The same budget cuts results of a stdio server, of an HTTP server and
/// of the agent's own local tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_budget_for_local_and_remote_results() {
    let http = HttpServer::start(vec![tool("big", "Big output.")]).await;
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"local": stdio(&[]), "remote": {"type": "http", "url": http.url}},
            "budgetChars": 8000,
        }))
        .await;
    let r = host
        .call("mcp__local__big", args(json!({"bytes": 20000})), yes())
        .await;
    check_cut(&r, 8000, 20000);
    let r = host
        .call("mcp__remote__big", args(json!({"chars": 9000})), yes())
        .await;
    check_cut(&r, 8000, 9000);
    // Under the budget nothing is cut and no line is added.
    let r = host
        .call("mcp__local__big", args(json!({"bytes": 10})), yes())
        .await;
    assert_eq!(r.content.len(), 1);
    assert_eq!(inner(r.content[0].as_text().unwrap()), "x".repeat(10));
    // An agent's local tool goes through the same budget.
    let budget: Budget = host.budget();
    assert_eq!(budget.chars(), 8000);
    let local = budget.apply(CallToolResult::text("z".repeat(8005)));
    assert_eq!(local.content[0].as_text().unwrap().len(), 8000);
    assert!(local.content[1].as_text().unwrap().contains("5 of 8005"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_become_results_the_model_can_read() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({"mcpServers": {"m": stdio(&[])}, "permissions": {"allow": ["mcp__m"]}}))
        .await;
    // A tool error passes through verbatim (inside the boundary).
    let r = host
        .call("mcp__m__fail", None, CallOptions::default())
        .await;
    assert!(r.is_error());
    assert_eq!(inner(r.content[0].as_text().unwrap()), "the tool failed");
    // A protocol error says so, and what to do.
    let r = host
        .call("mcp__m__error", None, CallOptions::default())
        .await;
    assert!(r.is_error());
    let t = text(&r);
    assert!(
        t.contains("protocol error") && t.contains("-32602") && t.contains("input schema"),
        "{t}"
    );
    // An unknown tool suggests the closest name.
    let r = host
        .call("mcp__m__ecko", None, CallOptions::default())
        .await;
    assert!(r.is_error());
    assert!(
        text(&r).contains("Did you mean mcp__m__echo?"),
        "{}",
        text(&r)
    );
    // input_required is never handed over as a finished result: the client
    // runs the MRTR rounds and the model gets the completed answer.
    let r = host.call("mcp__m__ask", None, CallOptions::default()).await;
    assert!(!r.is_error(), "{}", text(&r));
    assert_eq!(inner(r.content[0].as_text().unwrap()), "done");
    // What happened is told apart for callers (a CLI's exit code).
    for (name, want) in [
        ("mcp__m__echo", Outcome::Ok),
        ("mcp__m__fail", Outcome::ToolError),
        ("mcp__m__error", Outcome::ProtocolError),
        ("mcp__m__nope", Outcome::UnknownTool),
    ] {
        let report = host.call_detailed(name, None, CallOptions::default()).await;
        assert_eq!(report.outcome, want, "{name}");
    }
    // An unknown resultType is a protocol problem, not a result.
    let r = host
        .call("mcp__m__weird", None, CallOptions::default())
        .await;
    assert!(r.is_error(), "{}", text(&r));
    host.shutdown().await;
}

/// Per-tool timeout, else per-server, else the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_per_tool_then_server_then_default() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {
                "a": {"command": mock(), "timeoutMs": 400, "toolTimeouts": {"sleep": 150}},
                "b": stdio(&[]),
            },
            "timeoutMs": 250,
            "permissions": {"allow": ["mcp__a", "mcp__b"]},
        }))
        .await;
    let cases = [
        ("mcp__a__sleep", json!({"ms": 20000}), "150 ms"),
        ("mcp__a__never", json!({}), "400 ms"),
        ("mcp__b__never", json!({}), "250 ms"),
    ];
    for (name, a, want) in cases {
        let r = host.call(name, args(a), CallOptions::default()).await;
        assert!(r.is_error());
        let t = text(&r);
        assert!(
            t.contains(want) && t.contains("did not answer"),
            "{name}: {t}"
        );
    }
    // A timed-out call does not block the server's other calls.
    let r = host
        .call(
            "mcp__a__echo",
            args(json!({"text": "still here"})),
            CallOptions::default(),
        )
        .await;
    assert!(text(&r).contains("still here"));
    host.shutdown().await;
}

/// A server that dies mid-call: the call becomes a result with the cause,
/// the server is shown down with its last stderr lines, and the next call
/// starts it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_reported_and_restarted() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({"mcpServers": {"m": stdio(&[])}, "permissions": {"allow": ["mcp__m"]}}))
        .await;
    let r = host
        .call(
            "mcp__m__crash",
            args(json!({"code": 7, "lines": 2})),
            CallOptions::default(),
        )
        .await;
    assert!(r.is_error());
    assert!(text(&r).contains("could not complete"), "{}", text(&r));
    let s = host.servers().remove(0);
    assert_eq!(s.status, ServerStatus::Down);
    assert!(
        s.stderr_tail.iter().any(|l| l.contains("crash line")),
        "{s:?}"
    );
    assert!(host.outage_text().unwrap().contains("- m is down"));
    // The tools stay listed, and the next call brings the server back.
    assert!(!host.tools().is_empty());
    let r = host
        .call(
            "mcp__m__echo",
            args(json!({"text": "back"})),
            CallOptions::default(),
        )
        .await;
    assert!(!r.is_error(), "{}", text(&r));
    assert!(text(&r).contains("back"));
    assert_eq!(host.servers()[0].status, ServerStatus::Up);
    host.shutdown().await;
    // After shutdown calls still return results.
    let r = host
        .call("mcp__m__echo", None, CallOptions::default())
        .await;
    assert!(r.is_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_sink() {
    let dir = Dir::new();
    let host = dir.mount(json!({"mcpServers": {"m": stdio(&[])}})).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let r = host
        .call(
            "mcp__m__progress",
            args(json!({"steps": 3})),
            yes().with_progress(move |p| sink.lock().unwrap().push(p.progress)),
        )
        .await;
    assert!(!r.is_error(), "{}", text(&r));
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    assert!(matches!(r.content[0], ContentBlock::Text { .. }));
    host.shutdown().await;
}
