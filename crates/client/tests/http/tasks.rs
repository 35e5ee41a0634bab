//! Tasks (extension) end to end over HTTP against our own server framework:
//! with the server asking to be polled once an hour, only the task's status
//! notifications on a `subscriptions/listen` stream can carry the call to
//! its end, through an input request and the completion.

use std::time::Duration;

use serde_json::json;
use switchboard_client::{Client, InputSupport, input_handler_fn};
use switchboard_server::{Elicitation, HandlerError, InputRequired, NoArgs, Server, TaskContext};

use super::framework::serve_server;
use super::util::within;

/// Starts a server whose one task tool asks for a word, then answers with
/// it; polling interval one hour.
async fn start() -> (String, switchboard_testkit::fixtures::Served) {
    let server = Server::builder("tasks-e2e", "1.0.0")
        .task_tool(
            "slow_echo",
            "Asks for a word, then echoes it",
            |_: NoArgs, t: TaskContext| async move {
                let form = Elicitation::form(
                    "Which word?",
                    json!({"type": "object", "properties": {"word": {"type": "string"}}}),
                );
                let answers = t.ask(InputRequired::new().elicit("word", form)).await?;
                let word = answers
                    .raw("word")
                    .and_then(|a| a["content"]["word"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                Ok::<_, HandlerError>(format!("echo: {word}"))
            },
        )
        .task_options(Duration::from_secs(7200), Duration::from_secs(3600))
        .build()
        .unwrap();
    serve_server(server).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_notifications_carry_a_task_through_input_to_its_result() {
    let (url, _stop) = start().await;
    let transport = switchboard_client::HttpTransport::builder("tasks-e2e", &url)
        .remember_era(false)
        .build()
        .unwrap();
    let client = within(
        Client::builder("tasks-e2e", transport)
            .tasks(true)
            .input_handler(input_handler_fn(InputSupport::FORM, |_, q| async move {
                q.answer_from(json!({"action": "accept", "content": {"word": "tide"}}))
            }))
            .connect(),
    )
    .await
    .unwrap();
    // `within` fails the test long before the hourly poll would come.
    let result = within(client.call_tool("slow_echo", None)).await.unwrap();
    assert_eq!(result.joined_text(), "echo: tide");
}
