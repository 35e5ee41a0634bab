//! A task the gateway handed on survives the gateway's restart: the
//! tickets demo server (over HTTP, so it outlives the gateway) runs a long
//! export as a task; the gateway is killed (`SIGKILL`) or stopped
//! (`SIGTERM`) while it follows it, then started again on the same address
//! with the same replica name and state key; the client's next `tasks/get`
//! finds the task still working (the restarted gateway opened its id and
//! follows the downstream task again) and gets the whole export. The call
//! has exactly one audit line, the chain verifies, and the downstream task
//! was never cancelled.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, HttpTransport, RequestOptions, ToolCallStart};
use switchboard_wire::tasks::TaskStatus;

use crate::gateway_util::Running;
use crate::util::{Sandbox, empty_port, spawn_serving};

/// The key the gateway's runs share (tests only).
const STATE_KEY: &str = "fedcba9876543210fedcba9876543210-test-only-key";
/// Tickets added to the demo's three, so the export (0.7 s a ticket)
/// outlasts a restart.
const MORE_TICKETS: usize = 5;

/// Our client of the gateway at `addr`, following tasks.
async fn client(addr: &str) -> Client {
    let transport = HttpTransport::builder("gateway", format!("http://{addr}/mcp"))
        .build()
        .unwrap();
    Client::builder("gateway", transport)
        .timeout(Duration::from_secs(60))
        .tasks(true)
        .connect()
        .await
        .unwrap()
}

/// The audit lines of `path`.
fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Starts an export through the gateway, stops the gateway with `signal`
/// mid-task, starts it again and follows the task to its end.
async fn a_task_outlives_the_gateway(signal: &str) {
    let sb = Sandbox::new();
    // The tickets demo server as a process of its own.
    let (mut downstream, url) =
        spawn_serving(&mut sb.cmd(&["demo-server", "tickets", "--port", "0"]));
    let cfg = sb
        .config(
            json!({"tickets": {"url": url}}),
            json!({"permissions": {"allow": ["mcp__tickets__*"]}, "audit": "${SB_AUDIT}"}),
        )
        .display()
        .to_string();
    let audit = sb.path().join("audit.jsonl").display().to_string();
    let addr = format!("127.0.0.1:{}", empty_port());
    let env = [
        ("SB_AUDIT", audit.as_str()),
        ("SWITCHBOARD_STATE_KEY", STATE_KEY),
    ];
    let args = ["--replica", "a"];
    let mut gateway = Running::start(&sb, &cfg, &addr, &args, &env).await;
    let first = client(&addr).await;
    for i in 0..MORE_TICKETS {
        let args = json!({"title": format!("more {i}"), "priority": "low"});
        let created = first
            .call_tool("mcp__tickets__create_ticket", args.as_object().cloned())
            .await
            .unwrap();
        assert!(!created.is_error(), "{created:?}");
    }
    let ToolCallStart::Task(task) = first
        .call_tool_start(
            "mcp__tickets__export_tickets",
            None,
            &RequestOptions::default(),
        )
        .await
        .unwrap()
    else {
        panic!("the export was not handed on as a task");
    };
    let id = task.task_id.clone();
    assert!(id.starts_with("a."), "{id}");
    // The downstream export is under way.
    let mut seen = String::new();
    for _ in 0..200 {
        let now = first.get_task(&id).await.unwrap();
        seen = now.status_message.unwrap_or_default();
        if seen.contains("exporting ticket 2 of") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.contains("exporting ticket 2 of"), "{seen}");

    let pid = gateway.child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let exited = tokio::task::spawn_blocking(move || {
        let status = gateway.child.wait().unwrap();
        (status, gateway)
    })
    .await
    .unwrap();
    drop(exited);
    drop(first);

    // The same replica, started again on the same address.
    let again = Running::start(&sb, &cfg, &addr, &args, &env).await;
    let second = client(&addr).await;
    let resumed = second.get_task(&id).await.unwrap();
    assert_eq!(resumed.task_id, id);
    assert!(
        matches!(resumed.status, TaskStatus::Working | TaskStatus::Completed),
        "{resumed:?}"
    );
    let result = second
        .wait_task(resumed, &RequestOptions::default())
        .await
        .unwrap();
    let text = result.joined_text();
    assert!(!result.is_error(), "{text}");
    assert!(text.contains("id,priority,open,title"), "{text}");
    let last = format!("T-{},", 3 + MORE_TICKETS);
    assert!(text.contains(&last), "the export ended early: {text}");
    drop(second);
    drop(again);
    let _ = downstream.kill();
    let _ = downstream.wait();

    // One line for the export: allowed by the rule when it started, ok,
    // with the downstream task's id; the chain over both runs verifies.
    let all = lines(&audit);
    let exports: Vec<&Value> = all
        .iter()
        .filter(|l| l["tool"] == "mcp__tickets__export_tickets")
        .collect();
    assert_eq!(exports.len(), 1, "{all:#?}");
    let line = exports[0];
    assert_eq!(line["outcome"], "ok", "{line}");
    assert_eq!(line["decision"], "allow", "{line}");
    assert_eq!(line["decidedBy"], "rule", "{line}");
    assert_eq!(line["replica"], "a", "{line}");
    assert!(line["taskId"].is_string(), "{line}");
    assert_ne!(line["taskId"], id.as_str());
    assert_eq!(all.len(), MORE_TICKETS + 1, "{all:#?}");
    let run = sb.run(&["audit", "verify", &audit]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_survives_the_gateway_being_killed() {
    a_task_outlives_the_gateway("-KILL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_survives_the_gateway_being_stopped() {
    a_task_outlives_the_gateway("-TERM").await;
}
