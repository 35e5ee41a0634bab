//! The audit log: one hash-chained line per call, written before the call
//! returns; `audit verify` finds an edited and a deleted line.

use serde_json::{Value, json};
use switchboard_host::{AssumeYes, CallOptions, verify_audit};

use crate::util::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_line_per_call_and_verify_detects_tampering() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[])},
            "permissions": {"allow": ["mcp__m__echo"], "deny": ["mcp__m__crash"]},
            "audit": "audit.jsonl",
        }))
        .await;
    let audit = dir.path("audit.jsonl");
    let secret = json!({"text": "my password is hunter2", "n": 1})
        .as_object()
        .cloned();
    host.call("mcp__m__echo", secret.clone(), CallOptions::default())
        .await;
    // Written before the call returned.
    assert_eq!(lines(&audit).len(), 1);
    host.call("mcp__m__fail", None, CallOptions::approver(AssumeYes))
        .await;
    host.call("mcp__m__crash", None, CallOptions::approver(AssumeYes))
        .await;
    host.call("mcp__m__nope", None, CallOptions::default())
        .await;
    host.call("mcp__m__error", None, CallOptions::default())
        .await;
    host.shutdown().await;

    let all = lines(&audit);
    assert_eq!(all.len(), 5);
    let first = &all[0];
    assert_eq!(first["seq"], 1);
    assert_eq!(first["alias"], "m");
    assert_eq!(first["tool"], "mcp__m__echo");
    assert_eq!(first["originalTool"], "echo");
    assert_eq!(first["argumentNames"], json!(["text", "n"]));
    assert_eq!(first["argumentsSha256"].as_str().unwrap().len(), 64);
    assert_eq!(first["decision"], "allow");
    assert_eq!(first["decidedBy"], "rule");
    assert_eq!(first["rule"], "permissions.allow[0]");
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["isError"], false);
    assert!(first["durationMs"].is_u64());
    assert!(first["time"].as_str().unwrap().ends_with('Z'));
    // Argument values are never written.
    assert!(!std::fs::read_to_string(&audit).unwrap().contains("hunter2"));
    let outcomes: Vec<(&str, &str)> = all
        .iter()
        .map(|l| {
            (
                l["outcome"].as_str().unwrap(),
                l["decidedBy"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("ok", "rule"),
            ("tool_error", "--yes"),
            ("denied", "rule"),
            ("unknown_tool", "none"),
            ("denied", "no-approver"),
        ]
    );
    // The last call had no approver: asked, denied, never sent.
    assert_eq!(all[4]["decision"], "deny");

    let report = verify_audit(&audit).unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.lines, 5);

    // Edit one line: verify names it.
    let original = std::fs::read_to_string(&audit).unwrap();
    let edited = original.replacen("\"outcome\":\"denied\"", "\"outcome\":\"ok\"", 1);
    std::fs::write(&audit, &edited).unwrap();
    let report = verify_audit(&audit).unwrap();
    assert!(!report.is_intact());
    assert_eq!(report.problems[0].line, 3, "{:?}", report.problems);
    assert!(
        report.problems[0].what.contains("edited"),
        "{:?}",
        report.problems
    );

    // Delete one line: verify names where the chain breaks.
    let kept: Vec<&str> = original
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, l)| l)
        .collect();
    std::fs::write(&audit, kept.join("\n") + "\n").unwrap();
    let report = verify_audit(&audit).unwrap();
    assert!(!report.is_intact());
    assert_eq!(report.problems[0].line, 2, "{:?}", report.problems);
    assert!(
        report.problems.iter().any(|p| p.what.contains("missing")),
        "{:?}",
        report.problems
    );
}

/// Many concurrent calls: every one gets its line, in one unbroken chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_line_is_lost_under_load() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({"mcpServers": {"m": stdio(&[])}, "permissions": {"allow": ["mcp__m"]}, "audit": "a.jsonl"}))
        .await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..100 {
        let host = host.clone();
        calls.spawn(async move {
            host.call(
                "mcp__m__echo",
                json!({"text": i.to_string()}).as_object().cloned(),
                CallOptions::default(),
            )
            .await
        });
    }
    while let Some(r) = calls.join_next().await {
        assert!(!r.unwrap().is_error());
    }
    let report = verify_audit(&dir.path("a.jsonl")).unwrap();
    assert_eq!(report.lines, 100);
    assert!(report.is_intact(), "{:?}", report.problems);
    host.shutdown().await;
}
