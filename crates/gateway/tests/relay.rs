//! A server's questions during a tool call, relayed to the gateway's
//! client and answered there; declined with a reason when that client
//! cannot answer.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_client::{
    BoxFuture, ClientError, InputAnswer, InputContext, InputError, InputHandler, InputQuestion,
    InputSupport, RequestOptions, Resume,
};
use switchboard_gateway::{GatewayOptions, relay_input_handler};
use switchboard_server::{
    Context, Elicitation, HandlerError, InputRequired, NoArgs, PromptOutcome, PromptSpec, Sampling,
    Server, TaskContext, ToolResult, user,
};
use switchboard_wire::{
    CallToolResult, ContentBlock, GetPromptResult, LoggingLevel, Notification, types::ResultHeader,
};

use switchboard_testkit::fixtures::{FormAnswers, RoundAnswers};
use switchboard_testutil::{Artifacts, built};

use crate::util::{Front, front, front_with, mount, mount_servers, serve};

/// The question the asker's `confirm` tool and picky's `brief` prompt put:
/// a yes or no `go`.
fn deploy_form() -> Elicitation {
    Elicitation::form(
        "Deploy to production?",
        json!({"type": "object", "properties": {"go": {"type": "boolean"}}}),
    )
}

/// A server whose tools each ask one question, and answer with what they
/// got back (and the state they kept across the round trip).
fn asker() -> Server {
    Server::builder("asker", "1.0.0")
        .tool(
            "confirm",
            "Asks the user first",
            |ctx: Context| async move {
                let answer = ctx.input().elicitation("ok")?;
                let result: ToolResult = match answer {
                    None => Ok(InputRequired::new()
                        .elicit("ok", deploy_form())
                        .state(json!({"step": "asked"}))
                        .into()),
                    Some(a) => {
                        let kept: Option<Value> = ctx.state()?;
                        Ok(CallToolResult::text(format!(
                            "{:?} {} kept={}",
                            a.action,
                            Value::Object(a.content.clone().unwrap_or_default()),
                            kept.unwrap_or(Value::Null)
                        ))
                        .into())
                    }
                };
                result
            },
        )
        .tool("write", "Asks the model", |ctx: Context| async move {
            let result: ToolResult = match ctx.input().sampling("s")? {
                None => Ok(InputRequired::new()
                    .sample("s", Sampling::prompt("Write a haiku", 50))
                    .into()),
                Some(m) => Ok(CallToolResult::text(format!("sampled: {}", m.text())).into()),
            };
            result
        })
        .tool("where", "Asks for the roots", |ctx: Context| async move {
            let result: ToolResult = match ctx.input().roots("r")? {
                None => Ok(InputRequired::new().list_roots("r").into()),
                Some(roots) => {
                    let uris: Vec<String> = roots.into_iter().map(|r| r.uri).collect();
                    Ok(CallToolResult::text(format!("roots: {}", uris.join(","))).into())
                }
            };
            result
        })
        .build()
        .unwrap()
}

/// The upstream user and model: answers everything.
#[derive(Debug)]
struct Answers;

impl InputHandler for Answers {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_form: true,
            sampling: true,
            roots: true,
            ..InputSupport::NONE
        }
    }

    fn answer(
        &self,
        _cx: InputContext,
        q: InputQuestion,
    ) -> BoxFuture<'_, Result<InputAnswer, InputError>> {
        let params = q.params();
        let answer = match q {
            InputQuestion::Elicit(_) => {
                assert_eq!(params["message"], "Deploy to production?");
                json!({"action": "accept", "content": {"go": true}})
            }
            InputQuestion::Sample(_) => {
                assert_eq!(params["maxTokens"], 50);
                json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "old pond"},
                    "model": "test-model",
                    "stopReason": "endTurn"
                })
            }
            InputQuestion::Roots => json!({"roots": [{"uri": "file:///upstream/project"}]}),
        };
        Box::pin(async move { q.answer_from(answer) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_sampling_and_roots_are_relayed_to_a_client_that_declared_them() {
    let (_dir, _server, host, front) =
        behind_a_gateway(asker(), Some(Box::new(Answers)), false).await;
    let c = &front.client;

    let r = c.call_tool("mcp__ops__confirm", None).await.unwrap();
    assert!(!r.is_error(), "{r:?}");
    let text = r.joined_text();
    assert!(text.contains("Accept"), "{text}");
    assert!(text.contains(r#"{"go":true}"#), "{text}");
    // The server's own state came back through the gateway's.
    assert!(text.contains(r#"kept={"step":"asked"}"#), "{text}");

    let r = c.call_tool("mcp__ops__write", None).await.unwrap();
    assert!(r.joined_text().contains("sampled: old pond"), "{r:?}");

    let r = c.call_tool("mcp__ops__where", None).await.unwrap();
    assert!(
        r.joined_text().contains("roots: file:///upstream/project"),
        "{r:?}"
    );
    host.shutdown().await;
}

/// Calls `tool` with no arguments through the gateway's client.
async fn call(front: &Front, tool: &str) -> Result<CallToolResult, ClientError> {
    front.client.call_tool(tool, None).await
}

/// [`call`] with `options`.
async fn call_with(
    front: &Front,
    tool: &str,
    options: &RequestOptions,
) -> Result<CallToolResult, ClientError> {
    front.client.call_tool_with(tool, None, options).await
}

/// Gets `prompt` with no arguments through the gateway's client.
async fn get_prompt(front: &Front, prompt: &str) -> Result<GetPromptResult, ClientError> {
    front.client.get_prompt(prompt, None).await
}

/// Options sending `answers` as `inputResponses` with no `requestState`.
fn up_front(answers: &Value) -> RequestOptions {
    RequestOptions {
        resume: Some(Resume {
            input_responses: answers.as_object().cloned(),
            request_state: None,
        }),
        ..RequestOptions::default()
    }
}

// MRTR lets a client answer before it is asked: answers sent with no
// requestState go down as they came, and the server, finding its answer,
// completes in one round (keys it did not ask for are its to ignore).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_sent_up_front_reach_the_server_as_they_came() {
    // Through the plain path and, for a client declaring tasks, the tasks
    // path (the asker answers at once, so no task is made).
    for tasks in [false, true] {
        // No input handler: a question put to this client would fail the call.
        let (_dir, _server, host, front) = behind_a_gateway(asker(), None, tasks).await;
        let answers = json!({
            "ok": {"action": "accept", "content": {"go": true}},
            "unasked": {"action": "accept", "content": {"x": 1}}
        });
        let r = front
            .client
            .call_tool_with("mcp__ops__confirm", None, &up_front(&answers))
            .await
            .unwrap();
        let text = r.joined_text();
        assert!(!r.is_error(), "{r:?}");
        assert!(text.contains(r#"Accept {"go":true} kept=null"#), "{text}");
        // An answer the server finds malformed: its -32602, as it came.
        let err = front
            .client
            .call_tool_with("mcp__ops__confirm", None, &up_front(&json!({"ok": 12345})))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(-32602), "tasks {tasks}: {err}");
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_client_cannot_answer_gets_the_servers_missing_capability_error() {
    // This client declares nothing, so neither does the downstream
    // request: the server refuses to ask (-32021) and the client gets that
    // refusal, as it would from the server itself.
    let (_dir, _server, host, front) = behind_a_gateway(asker(), None, false).await;
    let err = call(&front, "mcp__ops__confirm").await.unwrap_err();
    let error = err.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error.code, -32021, "{err}");
    assert_eq!(
        error.data.as_ref().unwrap()["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_a_call_that_is_no_task_is_relayed_to_a_task_declaring_client() {
    // The client follows tasks; the server answers with a question, not a
    // task, and the question is relayed all the same.
    let (_dir, _server, host, front) =
        behind_a_gateway(asker(), Some(Box::new(Answers)), true).await;
    let r = call(&front, "mcp__ops__confirm").await.unwrap();
    assert!(!r.is_error(), "{r:?}");
    let text = r.joined_text();
    assert!(text.contains(r#"{"go":true}"#), "{text}");
    assert!(text.contains(r#"kept={"step":"asked"}"#), "{text}");
    host.shutdown().await;
}

/// A 1×1 PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// A server with a prompt that asks the user a question first, a tool
/// saying which questions its request declared it can answer, a tool that
/// returns an image, one that logs, a task asking two questions at once,
/// and a tool that needs sampling.
fn picky() -> Server {
    Server::builder("picky", "1.0.0")
        .prompt_spec(
            PromptSpec::new("brief"),
            |_args: Value, ctx: Context| async move {
                let outcome: Result<PromptOutcome, HandlerError> =
                    match ctx.input().elicitation("ok")? {
                        None => Ok(InputRequired::new().elicit("ok", deploy_form()).into()),
                        Some(a) => Ok(PromptOutcome::Complete(GetPromptResult {
                            description: None,
                            messages: vec![user(ContentBlock::text(format!(
                                "answered {}",
                                Value::Object(a.content.unwrap_or_default())
                            )))],
                            header: ResultHeader::complete(),
                        })),
                    };
                outcome
            },
        )
        .tool(
            "declared",
            "Says what the request declared",
            |ctx: Context| async move {
                let caps = ctx.client_capabilities();
                let result: ToolResult = Ok(CallToolResult::text(format!(
                    "form={} sampling={} roots={}",
                    caps.supports_elicitation_form(),
                    caps.supports_sampling(),
                    caps.supports_roots()
                ))
                .into());
                result
            },
        )
        .tool("snapshot", "Returns an image", || async {
            let result: ToolResult = Ok(CallToolResult {
                content: vec![
                    ContentBlock::text("the dashboard"),
                    ContentBlock::image(PNG_BASE64, "image/png"),
                ],
                ..CallToolResult::text("")
            }
            .into());
            result
        })
        .tool("chatty", "Logs while it works", |ctx: Context| async move {
            ctx.info("warming up").await;
            let result: ToolResult =
                Ok(CallToolResult::text(format!("asked for logs at {:?}", ctx.log_level())).into());
            result
        })
        .task_tool(
            "pair",
            "As a task, asks two questions at once",
            |_: NoArgs, task: TaskContext| async move {
                let form = || {
                    Elicitation::form(
                        "Go?",
                        json!({"type": "object", "properties": {"go": {"type": "boolean"}}}),
                    )
                };
                let answers = task
                    .ask(
                        InputRequired::new()
                            .elicit("first", form())
                            .elicit("second", form()),
                    )
                    .await?;
                let go = |key: &str| -> Result<Value, HandlerError> {
                    Ok(answers
                        .elicitation(key)?
                        .and_then(|a| a.content)
                        .map_or(Value::Null, Value::Object))
                };
                Ok::<_, HandlerError>(format!("first={} second={}", go("first")?, go("second")?))
            },
        )
        .tool(
            "needs_sampling",
            "Needs sampling",
            |ctx: Context| async move {
                ctx.require_sampling()?;
                let result: ToolResult = Ok(CallToolResult::text("could sample").into());
                result
            },
        )
        .build()
        .unwrap()
}

/// `server` served, mounted as `ops` (its questions relayed) by a host
/// behind a gateway (every call allowed), and a client of that gateway
/// answering with `input` (declaring the tasks extension when `tasks`).
async fn behind_a_gateway(
    server: Server,
    input: Option<Box<dyn InputHandler>>,
    tasks: bool,
) -> (
    tempfile::TempDir,
    switchboard_testkit::fixtures::Served,
    switchboard_host::Host,
    crate::util::Front,
) {
    let dir = tempfile::tempdir().unwrap();
    let (url, server) = serve(server).await;
    let host = mount(&dir, &[("ops", &url)], Some(relay_input_handler(None))).await;
    let front = allowing_front(&host, input, tasks).await;
    (dir, server, host, front)
}

/// A client of a gateway in front of `host` that allows every call,
/// answering with `input` (declaring the tasks extension when `tasks`).
async fn allowing_front(
    host: &switchboard_host::Host,
    input: Option<Box<dyn InputHandler>>,
    tasks: bool,
) -> Front {
    front_with(
        host,
        GatewayOptions::default().assume_yes(true),
        input,
        tasks,
    )
    .await
}

/// An upstream client that answers form elicitation only, with
/// `{"go": true}`.
fn form_only() -> Option<Box<dyn InputHandler>> {
    Some(Box::new(FormAnswers::new(json!({"go": true}))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_during_prompts_get_is_relayed_and_answered() {
    let (_dir, _server, host, front) = behind_a_gateway(picky(), form_only(), false).await;
    let got = get_prompt(&front, "mcp__ops__brief").await.unwrap();
    assert_eq!(
        got.messages[0].content,
        // Inside the boundary markers, as every prompt text through the
        // gateway.
        ContentBlock::text(
            "<untrusted-text source=\"ops\">\nanswered {\"go\":true}\n</untrusted-text>"
        )
    );
    // A client that cannot answer: the server refuses to ask (-32021),
    // and the client gets that refusal.
    let silent = allowing_front(&host, None, false).await;
    let err = get_prompt(&silent, "mcp__ops__brief").await.unwrap_err();
    assert_eq!(err.code(), Some(-32021), "{err}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hears_only_the_questions_the_upstream_client_can_answer() {
    let (_dir, _server, host, front) = behind_a_gateway(picky(), form_only(), false).await;
    let c = &front.client;
    // The gateway's host declares sampling and roots too; the downstream
    // request declares only what the upstream client can answer.
    let r = c.call_tool("mcp__ops__declared", None).await.unwrap();
    assert!(
        r.joined_text()
            .contains("form=true sampling=false roots=false"),
        "{r:?}"
    );
    // Another caller, another narrowing (the client keeps the last one;
    // it must not serve it to a caller that declared something else).
    let bare = allowing_front(&host, None, false).await;
    let r = call(&bare, "mcp__ops__declared").await.unwrap();
    assert!(
        r.joined_text()
            .contains("form=false sampling=false roots=false"),
        "{r:?}"
    );
    let r = c.call_tool("mcp__ops__declared", None).await.unwrap();
    assert!(r.joined_text().contains("form=true"), "{r:?}");
    // The server's -32021 refusal is about the upstream client: it gets
    // the error itself, not a tool result.
    let err = c
        .call_tool("mcp__ops__needs_sampling", None)
        .await
        .unwrap_err();
    let error = err.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error.code, -32021, "{err}");
    assert_eq!(
        error.data.as_ref().unwrap()["requiredCapabilities"],
        json!({"sampling": {}})
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_within_the_media_allowance_reaches_the_upstream_client_unchanged() {
    let (_dir, _server, host, front) = behind_a_gateway(picky(), None, false).await;
    let r = call(&front, "mcp__ops__snapshot").await.unwrap();
    assert_eq!(r.content.len(), 2, "{r:?}");
    assert!(r.joined_text().contains("the dashboard"), "{r:?}");
    assert_eq!(r.content[1], ContentBlock::image(PNG_BASE64, "image/png"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_log_messages_reach_a_client_that_asked_for_them() {
    let (_dir, _server, host, front) = behind_a_gateway(picky(), None, false).await;
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let options = RequestOptions {
        log_level: Some(LoggingLevel::Info),
        on_notification: Some(Arc::new(move |n: Notification| {
            sink.lock().unwrap().push(n);
        })),
        ..RequestOptions::default()
    };
    let r = call_with(&front, "mcp__ops__chatty", &options)
        .await
        .unwrap();
    // The level went down with the call, and the message came back up.
    assert!(r.joined_text().contains("Some(Info)"), "{r:?}");
    let heard = heard.lock().unwrap().clone();
    let logs: Vec<&Notification> = heard
        .iter()
        .filter(|n| n.method == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1, "{heard:?}");
    let params = logs[0].params.as_ref().unwrap();
    assert_eq!(params["level"], "info");
    assert_eq!(params["data"], "warming up");
    // A client that asked for no logs: the server is not asked either.
    let r = call(&front, "mcp__ops__chatty").await.unwrap();
    assert!(r.joined_text().contains("asked for logs at None"), "{r:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_questions_asked_together_reach_the_upstream_client_together() {
    // An upstream client that answers forms a round at once.
    let rounds = RoundAnswers::new(json!({"go": true}));
    // The client follows tasks: it gets the gateway's task and its
    // questions.
    let (_dir, _server, host, front) =
        behind_a_gateway(picky(), Some(Box::new(rounds.clone())), true).await;
    let r = call(&front, "mcp__ops__pair").await.unwrap();
    assert!(
        r.joined_text()
            .contains(r#"first={"go":true} second={"go":true}"#),
        "{r:?}"
    );
    let sizes: Vec<usize> = rounds.rounds().iter().map(Vec::len).collect();
    assert_eq!(sizes, [2], "one round of both questions");
    host.shutdown().await;
}

// Progress sent just before the answer reaches the client before the
// answer, every time: the gateway drains what is queued first. Over stdio
// the progress lines and the answer are often read in one go, which is
// when a select between them could take the answer first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_progress_step_reaches_the_client_before_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let mock = built("switchboard-testkit", Artifacts::Bins).join("mock-server");
    let mut servers = serde_json::Map::new();
    servers.insert("m".into(), json!({"command": mock}));
    let host = mount_servers(&dir, servers, None, json!({"allow": ["mcp__m__progress"]})).await;
    let front = front(&host, GatewayOptions::default(), None).await;
    for round in 0..100 {
        let steps = Arc::new(Mutex::new(Vec::new()));
        let sink = steps.clone();
        let options = RequestOptions::default().with_progress(move |p| {
            sink.lock().unwrap().push(p.progress);
        });
        let r = call_with(&front, "mcp__m__progress", &options)
            .await
            .unwrap();
        assert!(r.joined_text().contains("3 steps done"), "{r:?}");
        assert_eq!(*steps.lock().unwrap(), [1.0, 2.0, 3.0], "round {round}");
    }
    host.shutdown().await;
}
