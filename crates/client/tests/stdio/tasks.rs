//! The tasks extension against the mock server: a `tools/call` answered
//! with a task is polled to its end at the server's interval, input comes
//! through the input handler and `tasks/update`, and the task is cancelled
//! (`tasks/cancel`) when the call is dropped (unless it asked to leave the
//! task running, to follow it again by id) or its deadline passes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{
    Client, ClientConfig, ClientError, RequestOptions, StdioTransport, ToolCallStart,
};
use switchboard_wire::JsonObject;

use super::util::*;

fn args(v: Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

/// A client with the tasks extension over the mock server, which logs
/// every message: the log's path, the client, the transport.
async fn tasks_client() -> (PathBuf, Client, StdioTransport) {
    let (log, builder, t) = logged_builder(&[]).await;
    (log, builder.tasks(true).connect().await.unwrap(), t)
}

/// [`tasks_client`] whose input handler accepts every question, with
/// the methods it was asked.
async fn answering_tasks_client() -> (PathBuf, Client, Arc<Mutex<Vec<String>>>, StdioTransport) {
    let (log, builder, t) = logged_builder(&[]).await;
    let (client, asked) = answering_tasks(builder).await;
    (log, client, asked, t)
}

/// Asserts the log holds `n` `tasks/update` requests, the first
/// accepting the `confirm` question.
fn assert_updates_accept(log: &[Value], n: usize) {
    let updates = requests(log, "tasks/update");
    assert_eq!(updates.len(), n);
    assert_eq!(
        updates[0]["params"]["inputResponses"]["confirm"]["action"],
        "accept"
    );
}

/// Waits until the log holds a request with `method`.
async fn logged(path: &std::path::Path, method: &str) -> bool {
    for _ in 0..500 {
        if !requests(&read_log(path), method).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn the_servers_polling_interval_is_honoured_and_statuses_are_reported() {
    let (log, client, _t) = tasks_client().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = RequestOptions {
        on_notification: Some(Arc::new(move |n: switchboard_wire::Notification| {
            sink.lock().unwrap().push(n);
        })),
        ..RequestOptions::default()
    };
    let result = client
        .call_tool_with(
            "task",
            args(json!({"work_ms": 900, "poll_ms": 300})),
            &options,
        )
        .await
        .unwrap();
    assert_eq!(result.joined_text(), "task done after 0 inputs");
    // The request declared the extension.
    let log = read_log(&log);
    let call = &requests(&log, "tools/call")[0];
    assert!(call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        ["io.modelcontextprotocol/tasks"]
        .is_object());
    // Polling every 300 ms over 900 ms of work: a client that ignored the
    // interval would poll far more often (a slow machine only polls less).
    let polls = requests(&log, "tasks/get").len();
    assert!((1..=5).contains(&polls), "{polls} polls");
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|n| n.method == "notifications/tasks"));
    let statuses: Vec<&str> = seen
        .iter()
        .filter_map(|n| n.params.as_ref()?.get("status")?.as_str())
        .collect();
    assert_eq!(statuses.first(), Some(&"working"));
    assert_eq!(statuses.last(), Some(&"completed"));
}

#[tokio::test]
async fn a_task_that_asks_twice_is_answered_through_the_input_handler() {
    let (log, client, asked, _t) = answering_tasks_client().await;
    let result = client
        .call_tool(
            "task",
            args(json!({"inputs": 2, "work_ms": 50, "poll_ms": 20})),
        )
        .await
        .unwrap();
    assert_eq!(result.joined_text(), "task done after 2 inputs");
    assert_eq!(
        result.structured_content.unwrap()["answers"],
        json!([{"action": "accept", "content": {"ok": true}}, {"action": "accept", "content": {"ok": true}}])
    );
    // Each question asked once, though polls saw it more than once.
    assert_eq!(
        *asked.lock().unwrap(),
        ["elicitation/create", "elicitation/create"]
    );
    let log = read_log(&log);
    assert_updates_accept(&log, 2);
}

#[tokio::test]
async fn dropping_the_call_cancels_the_task() {
    let (log, client, _t) = tasks_client().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call_tool("task", args(json!({"never": true, "poll_ms": 20})))
                .await
        }
    });
    assert!(logged(&log, "tasks/get").await, "the task was never polled");
    call.abort();
    assert!(
        logged(&log, "tasks/cancel").await,
        "no tasks/cancel after the drop"
    );
    let log = read_log(&log);
    let task_id = &requests(&log, "tasks/get")[0]["params"]["taskId"];
    assert_eq!(
        &requests(&log, "tasks/cancel")[0]["params"]["taskId"],
        task_id
    );
}

#[tokio::test]
async fn a_call_that_leaves_its_task_on_drop_can_follow_it_again() {
    let (log, client, _t) = tasks_client().await;
    let leave = RequestOptions {
        leave_task_on_drop: true,
        ..RequestOptions::default()
    };
    let call = tokio::spawn({
        let client = client.clone();
        let leave = leave.clone();
        async move {
            client
                .call_tool_with("task", args(json!({"work_ms": 600, "poll_ms": 20})), &leave)
                .await
        }
    });
    assert!(logged(&log, "tasks/get").await, "the task was never polled");
    call.abort();
    let task_id = requests(&read_log(&log), "tasks/get")[0]["params"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Picked up again by id, and followed to its end; never cancelled.
    let result = client.follow_task_with(&task_id, &leave).await.unwrap();
    assert_eq!(result.joined_text(), "task done after 0 inputs");
    assert!(requests(&read_log(&log), "tasks/cancel").is_empty());
    // An id the server does not know is its -32602.
    let err = client
        .follow_task_with("no-such-task", &leave)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
}

#[tokio::test]
async fn a_task_that_never_finishes_hits_the_task_deadline_and_is_cancelled() {
    let (log, builder, _t) = logged_builder(&[]).await;
    let config = ClientConfig {
        tasks: true,
        task_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    };
    let client = builder.config(config).connect().await.unwrap();
    let err = client
        .call_tool("task", args(json!({"never": true, "poll_ms": 20})))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    // Cancelled before the error came back.
    assert_eq!(requests(&read_log(&log), "tasks/cancel").len(), 1);
}

#[tokio::test]
async fn a_task_that_outlives_its_ttl_fails_the_call() {
    let (builder, _t) = builder(&[]).await;
    let client = builder.tasks(true).connect().await.unwrap();
    let err = client
        .call_tool(
            "task",
            args(json!({"never": true, "poll_ms": 50, "ttl_ms": 200})),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
    assert!(err.to_string().contains("Task not found"), "{err}");
}

#[tokio::test]
async fn without_the_extension_no_task_is_made() {
    let (log, builder, _t) = logged_builder(&[]).await;
    let client = builder.connect().await.unwrap();
    let result = client
        .call_tool("task", args(json!({"work_ms": 10})))
        .await
        .unwrap();
    assert_eq!(result.joined_text(), "done without a task");
    let log = read_log(&log);
    assert!(requests(&log, "tools/call")[0]["params"]["_meta"]
        ["io.modelcontextprotocol/clientCapabilities"]
        .get("extensions")
        .is_none());
}

#[tokio::test]
async fn the_explicit_api_hands_the_task_to_the_caller() {
    let (_log, client, _t) = tasks_client().await;
    let start = client
        .call_tool_start(
            "task",
            args(json!({"never": true})),
            &RequestOptions::default(),
        )
        .await
        .unwrap();
    let ToolCallStart::Task(task) = start else {
        panic!("expected a task: {start:?}");
    };
    assert_eq!(task.status.as_str(), "working");
    let now = client.get_task(&task.task_id).await.unwrap();
    assert_eq!(now.status_message.as_deref(), Some("working on it"));
    client.cancel_task(&task.task_id).await.unwrap();
    let err = client
        .wait_task(task, &RequestOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cancelled"), "{err}");
    // A plain tool is still a plain result.
    let start = client
        .call_tool_start(
            "echo",
            args(json!({"text": "hi"})),
            &RequestOptions::default(),
        )
        .await
        .unwrap();
    assert!(matches!(start, ToolCallStart::Complete(r) if r.joined_text() == "hi"));
}

/// Runs a call that only a status notification can end: the server asks
/// to be polled once an hour. The guard turns a hang into a failure.
async fn notified_call(
    client: &switchboard_client::Client,
    arguments: Value,
) -> switchboard_wire::CallToolResult {
    let call = client.call_tool("task", args(arguments));
    tokio::time::timeout(Duration::from_secs(120), call)
        .await
        .expect("only the next poll, an hour away, could have ended the call")
        .unwrap()
}

/// The `taskIds` the client listened for.
fn listened_task_ids(log: &[Value]) -> Vec<Value> {
    requests(log, "subscriptions/listen")
        .iter()
        .map(|r| r["params"]["notifications"]["taskIds"].clone())
        .collect()
}

const HOUR_MS: u64 = 3_600_000;

#[tokio::test]
async fn a_completion_notification_ends_the_wait_long_before_the_next_poll() {
    let (log, client, _t) = tasks_client().await;
    let result = notified_call(
        &client,
        json!({"notify": true, "work_ms": 50, "poll_ms": HOUR_MS}),
    )
    .await;
    assert_eq!(result.joined_text(), "task done after 0 inputs");
    let log = read_log(&log);
    let gets = requests(&log, "tasks/get");
    // One catch-up poll after the listen was acknowledged (the mock starts
    // the work only then); the completion came by notification alone.
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert_eq!(
        listened_task_ids(&log),
        [json!([gets[0]["params"]["taskId"]])]
    );
    assert!(requests(&log, "tasks/cancel").is_empty());
}

#[tokio::test]
async fn a_completion_notification_without_the_result_is_fetched_at_once() {
    let (log, client, _t) = tasks_client().await;
    let result = notified_call(
        &client,
        json!({"notify": true, "bare": true, "work_ms": 50, "poll_ms": HOUR_MS}),
    )
    .await;
    assert_eq!(result.joined_text(), "task done after 0 inputs");
    // The catch-up poll, then the one the bare notification asked for.
    assert_eq!(requests(&read_log(&log), "tasks/get").len(), 2);
}

#[tokio::test]
async fn a_notified_input_request_is_answered_without_waiting_for_a_poll() {
    let (log, client, asked, _t) = answering_tasks_client().await;
    let result = notified_call(
        &client,
        json!({"notify": true, "inputs": 1, "work_ms": 50, "poll_ms": HOUR_MS}),
    )
    .await;
    assert_eq!(result.joined_text(), "task done after 1 inputs");
    assert_eq!(*asked.lock().unwrap(), ["elicitation/create"]);
    let log = read_log(&log);
    // input_required and the completion both came by notification.
    assert_eq!(requests(&log, "tasks/get").len(), 1);
    assert_updates_accept(&log, 1);
}

#[tokio::test]
async fn with_notifications_off_the_task_is_only_polled() {
    let (log, builder, _t) = logged_builder(&[]).await;
    let client = builder
        .tasks(true)
        .task_notifications(false)
        .connect()
        .await
        .unwrap();
    let result = client
        .call_tool("task", args(json!({"work_ms": 50, "poll_ms": 20})))
        .await
        .unwrap();
    assert_eq!(result.joined_text(), "task done after 0 inputs");
    assert!(listened_task_ids(&read_log(&log)).is_empty());
}
