//! Built-in tools (`mcp__switchboard__NAME`): ordinary entries of the
//! governed table, registered and unregistered at run time, called through
//! the same path as a server's tools (limits, principals rules, gate,
//! budget, audit), handled in the host without any server process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use switchboard_host::BoxFuture;
use switchboard_host::Decider;
use switchboard_host::{
    Approval, AssumeYes, BuiltinCall, BuiltinDecision, BuiltinGate, BuiltinOutcome, BuiltinTool,
    CallOptions, NoApprover, Outcome, Verdict,
};
use switchboard_wire::{CallToolResult, Tool};

use crate::util::*;

/// A built-in that says who called it and what it was given, counting
/// its calls.
#[derive(Debug)]
struct Echo {
    name: &'static str,
    gate: BuiltinGate,
    calls: Arc<AtomicUsize>,
    /// Text repeated to make a long result (the budget test).
    repeat: usize,
}

impl Echo {
    fn new(name: &'static str, gate: BuiltinGate) -> Echo {
        Echo {
            name,
            gate,
            calls: Arc::default(),
            repeat: 0,
        }
    }
}

impl BuiltinTool for Echo {
    fn definition(&self) -> Tool {
        Tool::new(
            self.name,
            "Says who called it.",
            json!({"type": "object"}).as_object().unwrap().clone(),
        )
    }

    fn gate(&self) -> BuiltinGate {
        self.gate
    }

    fn call<'a>(&'a self, call: BuiltinCall<'a>) -> BoxFuture<'a, BuiltinOutcome> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let principal = call.principal().unwrap_or("nobody").to_owned();
        let args = Value::Object(call.arguments.clone().unwrap_or_default());
        let long = "x".repeat(self.repeat);
        let per_call = self.gate == BuiltinGate::PerCall;
        Box::pin(async move {
            if per_call {
                // Its own question, about what the arguments name.
                if args["what"] == "forbidden" {
                    return BuiltinOutcome::denied("that one is not allowed").decided(
                        BuiltinDecision {
                            verdict: Verdict::Deny,
                            decided_by: Decider::Rule,
                            rule: Some("own rule".into()),
                        },
                    );
                }
            }
            BuiltinOutcome::result(CallToolResult::text(format!(
                "called by {principal} with {args}{long}"
            )))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_is_listed_called_audited_and_follows_the_table_changes() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[])},
            "audit": "audit.jsonl",
            "budgetChars": 200,
        }))
        .await;
    let mut changes = host.subscribe();
    let echo = Echo::new("echo", BuiltinGate::Allow);
    let calls = echo.calls.clone();
    host.register_builtin(Arc::new(echo));
    let change = changes.recv().await.unwrap();
    assert_eq!(change.added, ["mcp__switchboard__echo"]);

    // Listed like any tool, under the reserved alias, always up.
    let listed = host.tools();
    let tool = listed
        .iter()
        .find(|t| t.name == "mcp__switchboard__echo")
        .expect("listed");
    assert_eq!(tool.server, "switchboard");
    assert_eq!(tool.original_name, "echo");
    assert_eq!(tool.status.gate, Verdict::Allow);
    assert_eq!(tool.status.pin, "pinned");
    assert_eq!(tool.status.server, switchboard_host::ServerStatus::Up);
    assert!(
        tool.description.starts_with("[from switchboard]"),
        "{}",
        tool.description
    );
    // Built-ins carry no pins: `pins` leaves them out, accept finds nothing.
    assert!(host.pins().iter().all(|p| p.server != "switchboard"));
    assert!(host.accept_pins("mcp__switchboard__echo").is_err());

    // Called through the governed path: the handler gets the caller.
    let report = host
        .call_detailed(
            "mcp__switchboard__echo",
            json!({"q": 1}).as_object().cloned(),
            CallOptions::default().with_principal("alice"),
        )
        .await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert!(
        report
            .result
            .joined_text()
            .contains("called by alice with {\"q\":1}"),
        "{}",
        report.result.joined_text()
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let lines = audit_lines(&dir.path("audit.jsonl"));
    let last = lines.last().unwrap();
    assert_eq!(last["tool"], "mcp__switchboard__echo");
    assert_eq!(last["alias"], "switchboard");
    assert_eq!(last["originalTool"], "echo");
    assert_eq!(last["principal"], "alice");
    assert_eq!(last["outcome"], "ok");

    // Its results are held to the shared budget.
    let mut long = Echo::new("long", BuiltinGate::Allow);
    long.repeat = 5_000;
    host.register_builtin(Arc::new(long));
    let change = changes.recv().await.unwrap();
    assert_eq!(change.added, ["mcp__switchboard__long"]);
    let r = host
        .call("mcp__switchboard__long", None, CallOptions::default())
        .await;
    let shown = r.joined_text();
    assert!(shown.len() < 1_000, "{}", shown.len());
    assert!(
        shown.contains("cut") || shown.contains("truncated"),
        "{shown}"
    );

    // Unregistered: gone from the table, subscribers told, calls unknown.
    assert!(host.unregister_builtin("echo"));
    assert!(!host.unregister_builtin("echo"));
    let change = changes.recv().await.unwrap();
    assert_eq!(change.removed, ["mcp__switchboard__echo"]);
    assert!(
        host.tools()
            .iter()
            .all(|t| t.name != "mcp__switchboard__echo")
    );
    let report = host
        .call_detailed("mcp__switchboard__echo", None, CallOptions::default())
        .await;
    assert_eq!(report.outcome, Outcome::UnknownTool);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    host.shutdown().await;
}

fn audit_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_meets_the_gate_with_its_own_default_and_the_rules() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[])},
            "permissions": {
                "deny": ["mcp__switchboard__banned"],
                "allow": ["mcp__switchboard__allowed"],
                "ask": ["mcp__switchboard__reader"],
            },
            "audit": "audit.jsonl",
        }))
        .await;
    let asking = Echo::new("asking", BuiltinGate::Ask);
    let asking_calls = asking.calls.clone();
    let banned = Echo::new("banned", BuiltinGate::Allow);
    let banned_calls = banned.calls.clone();
    for tool in [
        asking,
        banned,
        Echo::new("allowed", BuiltinGate::Ask),
        Echo::new("reader", BuiltinGate::Allow),
        Echo::new("per_call", BuiltinGate::PerCall),
    ] {
        host.register_builtin(Arc::new(tool));
    }
    let verdict = |name: &str| {
        host.tools()
            .into_iter()
            .find(|t| t.name == name)
            .map(|t| t.status.gate)
    };
    assert_eq!(verdict("mcp__switchboard__asking"), Some(Verdict::Ask));
    assert_eq!(verdict("mcp__switchboard__allowed"), Some(Verdict::Allow));
    assert_eq!(verdict("mcp__switchboard__reader"), Some(Verdict::Ask));
    // A handler asking its own question is listed as asking.
    assert_eq!(verdict("mcp__switchboard__per_call"), Some(Verdict::Ask));
    // Denied: not offered to the model, refused by name.
    assert_eq!(verdict("mcp__switchboard__banned"), None);
    let report = host
        .call_detailed(
            "mcp__switchboard__banned",
            None,
            CallOptions::approver(AssumeYes),
        )
        .await;
    assert_eq!(report.outcome, Outcome::Denied);
    assert!(
        report
            .result
            .joined_text()
            .contains("mcp__switchboard__banned"),
        "{}",
        report.result.joined_text()
    );
    assert_eq!(banned_calls.load(Ordering::SeqCst), 0);

    // Asked by default: no one to ask denies; the approver is asked.
    let report = host
        .call_detailed(
            "mcp__switchboard__asking",
            None,
            CallOptions::approver(NoApprover),
        )
        .await;
    assert_eq!(report.outcome, Outcome::Denied);
    assert_eq!(asking_calls.load(Ordering::SeqCst), 0);
    let recorder = Recorder::new(Approval::AllowOnce);
    let report = host
        .call_detailed(
            "mcp__switchboard__asking",
            None,
            CallOptions::approver(recorder.clone()),
        )
        .await;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(recorder.questions()[0].alias, "switchboard");
    assert_eq!(recorder.questions()[0].original_name, "asking");
    assert_eq!(asking_calls.load(Ordering::SeqCst), 1);
    // Deferred: the question comes back, nothing ran.
    let report = host
        .call_detailed(
            "mcp__switchboard__asking",
            None,
            CallOptions::approver(Recorder::new(Approval::Defer)),
        )
        .await;
    assert_eq!(report.outcome, Outcome::Asked);
    assert!(report.approval_needed.is_some());
    assert_eq!(asking_calls.load(Ordering::SeqCst), 1);

    // An allow rule skips the default question; an ask rule asks even a
    // tool allowed by default.
    let r = host
        .call_detailed("mcp__switchboard__allowed", None, CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::Ok);
    let r = host
        .call_detailed("mcp__switchboard__reader", None, CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::Denied);

    // A per-call handler decides itself: no question at the tool level,
    // and its decision is the audit line's.
    let r = host
        .call_detailed(
            "mcp__switchboard__per_call",
            json!({"what": "fine"}).as_object().cloned(),
            CallOptions::default(),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{}", r.result.joined_text());
    let r = host
        .call_detailed(
            "mcp__switchboard__per_call",
            json!({"what": "forbidden"}).as_object().cloned(),
            CallOptions::approver(AssumeYes),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Denied);
    assert_eq!(r.result.joined_text(), "that one is not allowed");
    let lines = audit_lines(&dir.path("audit.jsonl"));
    let last = lines.last().unwrap();
    assert_eq!(last["decision"], "deny");
    assert_eq!(last["rule"], "own rule");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_principals_rules_and_limits_apply_to_builtins() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[])},
            "principals": {
                "bob": {"allow": ["mcp__m"]},
                "carol": {"allow": ["mcp__switchboard__echo"], "limits": {"callsPerMinute": 1}},
            },
        }))
        .await;
    let echo = Echo::new("echo", BuiltinGate::Allow);
    let calls = echo.calls.clone();
    host.register_builtin(Arc::new(echo));
    assert!(!host.principal_may_call("bob", "mcp__switchboard__echo"));
    assert!(host.principal_may_call("carol", "mcp__switchboard__echo"));
    let r = host
        .call_detailed(
            "mcp__switchboard__echo",
            None,
            CallOptions::default().with_principal("bob"),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Denied);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let carol = || CallOptions::default().with_principal("carol");
    let r = host
        .call_detailed("mcp__switchboard__echo", None, carol())
        .await;
    assert_eq!(r.outcome, Outcome::Ok);
    let r = host
        .call_detailed("mcp__switchboard__echo", None, carol())
        .await;
    assert_eq!(r.outcome, Outcome::Limited);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    host.shutdown().await;
}
