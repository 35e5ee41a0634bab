//! Calls the server turns into tasks (the tasks extension): the same gate
//! and audit as any call, one audit line with the final outcome and the
//! task id, status messages as progress, `taskTimeoutMs` as the deadline
//! of the whole task (the task is then cancelled), and a call left running
//! picked up again (`Host::resume_task`) with its one audit line.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_host::{CallOptions, TaskResumption};

use crate::util::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Mounts the mock `server` as `m`, its `task` tool allowed, with an
/// audit log.
async fn mount_allowing_task(dir: &Dir, server: Value) -> switchboard_host::Host {
    dir.mount(json!({
        "mcpServers": {"m": server},
        "permissions": {"allow": ["mcp__m__task"]},
        "audit": "audit.jsonl",
    }))
    .await
}

/// Call options that hand out the call's [`TaskResumption`] once the
/// server makes it a task.
fn telling_resumption() -> (CallOptions, tokio::sync::oneshot::Receiver<TaskResumption>) {
    let (tx, started) = tokio::sync::oneshot::channel();
    let tx = Mutex::new(Some(tx));
    let mut options = CallOptions::default();
    options.on_task_started = Some(Arc::new(move |r: TaskResumption| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(r);
        }
    }));
    (options, started)
}

/// Calls the mock's `task` with `args`, leaving the task running, and
/// stops following it once it is a task (a gateway restarting): what
/// resumes the call.
async fn left_running(host: &switchboard_host::Host, args: Value) -> TaskResumption {
    let (mut options, started) = telling_resumption();
    options.request.leave_task_on_drop = true;
    let call = tokio::spawn({
        let host = host.clone();
        let args = args.as_object().cloned();
        async move { host.call_detailed("mcp__m__task", args, options).await }
    });
    let resumption = started.await.unwrap();
    call.abort();
    assert!(call.await.is_err());
    resumption
}

/// Resumes the call with default options: the result's text.
async fn resumed_text(host: &switchboard_host::Host, resumption: TaskResumption) -> String {
    let report = host.resume_task(resumption, CallOptions::default()).await;
    text(&report.result)
}

/// How many `tasks/cancel` requests the mock server's log holds.
fn cancels(log: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"tasks/cancel\""))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasked_call_is_audited_once_with_its_task_id_and_reports_status() {
    let dir = Dir::new();
    let host = mount_allowing_task(&dir, stdio(&[])).await;
    let messages = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&messages);
    let options = CallOptions::default().with_progress(move |p| {
        seen.lock().unwrap().push(p.message.unwrap_or_default());
    });
    let args = json!({"work_ms": 300, "poll_ms": 50}).as_object().cloned();
    let report = host.call_detailed("mcp__m__task", args, options).await;
    assert!(text(&report.result).contains("task done after 0 inputs"));
    host.shutdown().await;
    let all = lines(&dir.path("audit.jsonl"));
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["outcome"], "ok");
    assert!(
        all[0]["taskId"].as_str().unwrap().starts_with("mock-task-"),
        "{}",
        all[0]
    );
    let messages = messages.lock().unwrap();
    assert!(
        messages.iter().any(|m| m == "working: working on it"),
        "{messages:?}"
    );
    assert_eq!(messages.last().map(String::as_str), Some("completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_its_task_timeout_is_cancelled_and_reported_as_a_timeout() {
    let dir = Dir::new();
    let log = dir.path_str("requests.jsonl");
    let host = mount_allowing_task(
        &dir,
        json!({"command": mock(), "args": ["--log", log], "taskTimeoutMs": 400}),
    )
    .await;
    let args = json!({"never": true, "poll_ms": 50}).as_object().cloned();
    let report = host
        .call_detailed("mcp__m__task", args, CallOptions::default())
        .await;
    assert!(report.result.is_error());
    assert!(
        text(&report.result).contains("within 400 ms"),
        "{}",
        text(&report.result)
    );
    host.shutdown().await;
    let all = lines(&dir.path("audit.jsonl"));
    assert_eq!(all[0]["outcome"], "timeout");
    assert!(all[0]["taskId"].is_string());
    assert_eq!(cancels(&log), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_left_running_is_resumed_and_audited_once_as_it_started() {
    let dir = Dir::new();
    let log = dir.path_str("requests.jsonl");
    let host = mount_allowing_task(&dir, json!({"command": mock(), "args": ["--log", log]})).await;
    // Whoever followed the call stops (a gateway restarting)...
    let resumption = left_running(&host, json!({"work_ms": 600, "poll_ms": 20})).await;
    assert_eq!(resumption.tool(), "mcp__m__task");
    assert!(resumption.task_id().starts_with("mock-task-"));
    // ...and picks it up again from what it kept (a gateway seals it).
    let kept = serde_json::to_string(&resumption).unwrap();
    let resumption: TaskResumption = serde_json::from_str(&kept).unwrap();
    let result = resumed_text(&host, resumption).await;
    assert!(result.contains("task done after 0 inputs"), "{result}");
    host.shutdown().await;
    // One line, as the call started: its decision, its arguments, its
    // start, the task id; the task was never cancelled.
    let all = lines(&dir.path("audit.jsonl"));
    assert_eq!(all.len(), 1, "{all:?}");
    let line = &all[0];
    assert_eq!(line["outcome"], "ok");
    assert_eq!(line["decision"], "allow");
    assert_eq!(line["decidedBy"], "rule");
    assert_eq!(line["argumentNames"], json!(["work_ms", "poll_ms"]));
    assert!(line["taskId"].as_str().unwrap().starts_with("mock-task-"));
    assert!(line["durationMs"].as_u64().unwrap() >= 500, "{line}");
    assert_eq!(cancels(&log), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_call_whose_tool_is_gone_says_so_and_is_audited() {
    let dir = Dir::new();
    let host = mount_allowing_task(&dir, stdio(&[])).await;
    let resumption: TaskResumption = serde_json::from_value(json!({
        "tool": "mcp__gone__task", "alias": "gone", "originalTool": "task",
        "taskId": "t-1", "decision": {"verdict": "allow", "decidedBy": "rule"},
        "startedMs": 1
    }))
    .unwrap();
    let report = host.resume_task(resumption, CallOptions::default()).await;
    assert!(report.result.is_error());
    assert!(
        text(&report.result).contains("task t-1"),
        "{}",
        text(&report.result)
    );
    host.shutdown().await;
    let all = lines(&dir.path("audit.jsonl"));
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["outcome"], "unknown_tool");
    assert_eq!(all[0]["taskId"], "t-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_concluded_before_the_restart_keeps_its_one_line_when_resumed() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[])},
            "permissions": {"allow": ["mcp__m__task", "mcp__m__echo"]},
            "audit": "audit.jsonl",
        }))
        .await;
    let (options, started) = telling_resumption();
    // The call ends and is audited; other calls follow it.
    let args = json!({"work_ms": 50, "poll_ms": 10}).as_object().cloned();
    let report = host.call_detailed("mcp__m__task", args, options).await;
    assert!(text(&report.result).contains("task done"));
    for i in 0..3 {
        let args = json!({"text": format!("after {i}")}).as_object().cloned();
        host.call("mcp__m__echo", args, CallOptions::default())
            .await;
    }
    let resumption = started.await.unwrap();
    // Picked up again (the server still has the task): the result comes
    // back, and no second line is written for the call.
    let again = resumed_text(&host, resumption).await;
    assert!(again.contains("task done"), "{again}");
    host.shutdown().await;
    let all = lines(&dir.path("audit.jsonl"));
    let tasked: Vec<&Value> = all.iter().filter(|l| l["tool"] == "mcp__m__task").collect();
    assert_eq!(tasked.len(), 1, "{all:#?}");
    assert_eq!(all.len(), 4, "{all:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_call_the_rules_now_deny_is_stopped_and_its_task_cancelled() {
    let dir = Dir::new();
    let log = dir.path_str("requests.jsonl");
    let server = json!({"command": mock(), "args": ["--log", log]});
    let host = mount_allowing_task(&dir, server.clone()).await;
    let resumption = left_running(&host, json!({"never": true, "poll_ms": 20})).await;
    // Meanwhile the user denied the tool.
    let denied = dir.config(json!({
        "mcpServers": {"m": server},
        "permissions": {"deny": ["mcp__m__task"]},
        "audit": "audit.jsonl",
    }));
    host.reload(denied).await;
    let report = host.resume_task(resumption, CallOptions::default()).await;
    assert!(report.result.is_error());
    assert!(
        text(&report.result).contains("deny calling mcp__m__task"),
        "{}",
        text(&report.result)
    );
    host.shutdown().await;
    assert_eq!(cancels(&log), 1);
    let all = lines(&dir.path("audit.jsonl"));
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["outcome"], "denied");
    assert_eq!(all[0]["decision"], "deny");
    assert!(all[0]["taskId"].is_string());
}
