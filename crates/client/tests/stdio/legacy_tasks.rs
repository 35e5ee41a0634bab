//! 2025-11-25 experimental tasks against a legacy server (the mock's
//! `--legacy-tasks`): a tool that requires a task is called with the `task`
//! parameter and driven to its end (`tasks/get` at `pollInterval`, then
//! `tasks/result`, which carries the server's question); the explicit API
//! gets, lists and cancels tasks.

use serde_json::{Value, json};
use switchboard_client::{ClientError, RequestOptions, ToolCallStart};
use switchboard_wire::JsonObject;

use super::util::*;

fn args(v: Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

#[tokio::test]
async fn a_tool_that_requires_a_task_is_driven_through_tasks_result() {
    let log = log_path();
    let (builder, _t) =
        builder(&["--legacy", "--legacy-tasks", "--log", log.to_str().unwrap()]).await;
    let (client, asked) = answering_tasks(builder).await;
    // The listing says which tools require a task.
    client.list_all_tools().await.unwrap();
    let result = client
        .call_tool("job", args(json!({"work_ms": 60, "ask": true})))
        .await
        .unwrap();
    assert!(
        result
            .joined_text()
            .starts_with("job done: {\"action\":\"accept\""),
        "{}",
        result.joined_text()
    );
    // The question came on the tasks/result request and was asked once.
    assert_eq!(*asked.lock().unwrap(), ["elicitation/create"]);
    let log = read_log(&log);
    let call = &requests(&log, "tools/call")[0];
    assert!(call["params"]["task"]["ttl"].is_u64(), "{call}");
    let result_requests = requests(&log, "tasks/result");
    assert_eq!(result_requests.len(), 1);
    assert_eq!(
        result_requests[0]["params"]["taskId"],
        requests(&log, "tasks/get")[0]["params"]["taskId"]
    );
}

#[tokio::test]
async fn an_optional_task_tool_is_called_plainly_unless_a_task_is_asked_for() {
    let log = log_path();
    let (builder, _t) =
        builder(&["--legacy", "--legacy-tasks", "--log", log.to_str().unwrap()]).await;
    let client = builder.tasks(true).connect().await.unwrap();
    client.list_all_tools().await.unwrap();
    let plain = client.call_tool("maybe_job", None).await.unwrap();
    assert_eq!(plain.joined_text(), "job done at once");
    assert!(
        requests(&read_log(&log), "tools/call")[0]["params"]
            .get("task")
            .is_none()
    );
    // The explicit API asks for one and reads it in the extension's shape.
    let start = client
        .call_tool_start(
            "maybe_job",
            args(json!({"work_ms": 20})),
            &RequestOptions::default(),
        )
        .await
        .unwrap();
    let ToolCallStart::Task(task) = start else {
        panic!("expected a task: {start:?}");
    };
    assert_eq!(task.ttl_ms, Some(60_000));
    assert_eq!(task.poll_interval_ms, Some(20));
    let result = client
        .wait_task(task.clone(), &RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(result.joined_text(), "job done: null");
    let again = client.task_result(&task.task_id).await.unwrap();
    assert_eq!(again.joined_text(), "job done: null");
}

#[tokio::test]
async fn tasks_are_listed_page_by_page_and_cancelled() {
    let (builder, _t) = builder(&["--legacy", "--legacy-tasks"]).await;
    let client = builder.tasks(true).connect().await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let start = client
            .call_tool_start(
                "maybe_job",
                args(json!({"work_ms": 60_000})),
                &RequestOptions::default(),
            )
            .await
            .unwrap();
        let ToolCallStart::Task(task) = start else {
            panic!("expected a task: {start:?}");
        };
        ids.push(task.task_id);
    }
    let first = client.list_tasks(None).await.unwrap();
    assert_eq!(first.tasks.len(), 1);
    let cursor = first.next_cursor.clone().unwrap();
    let second = client.list_tasks(Some(&cursor)).await.unwrap();
    assert_eq!(second.next_cursor, None);
    let listed: Vec<&str> = first
        .tasks
        .iter()
        .chain(&second.tasks)
        .map(|t| t.task_id.as_str())
        .collect();
    assert_eq!(listed, ids);
    assert_eq!(first.tasks[0].status.as_str(), "working");
    client.cancel_task(&ids[0]).await.unwrap();
    assert_eq!(
        client.get_task(&ids[0]).await.unwrap().status.as_str(),
        "cancelled"
    );
    let err = client.task_result(&ids[0]).await.unwrap_err();
    assert_eq!(err.code(), Some(-32603), "{err}");
}

#[tokio::test]
async fn the_legacy_task_methods_are_refused_on_the_modern_wire() {
    let (builder, _t) = builder(&[]).await;
    let client = builder.tasks(true).connect().await.unwrap();
    for err in [
        client.list_tasks(None).await.unwrap_err(),
        client.task_result("t").await.unwrap_err(),
    ] {
        assert!(matches!(err, ClientError::Unsupported { .. }), "{err}");
    }
}
