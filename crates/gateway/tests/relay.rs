//! A server's questions during a tool call, relayed to the gateway's
//! client and answered there; declined with a reason when that client
//! cannot answer.

use serde_json::{Value, json};
use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport};
use switchboard_gateway::{GatewayOptions, relay_input_handler};
use switchboard_server::{Context, Elicitation, InputRequired, Sampling, Server, ToolResult};
use switchboard_wire::CallToolResult;

use crate::util::{front, front_with, mount, serve};

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
                    .elicit(
                        "ok",
                        Elicitation::form(
                            "Deploy to production?",
                            json!({"type": "object", "properties": {"go": {"type": "boolean"}}}),
                        ),
                    )
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

    fn elicit(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        Box::pin(async move {
            assert_eq!(params["message"], "Deploy to production?");
            Ok(json!({"action": "accept", "content": {"go": true}}))
        })
    }

    fn sample(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        Box::pin(async move {
            assert_eq!(params["maxTokens"], 50);
            Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "old pond"},
                "model": "test-model",
                "stopReason": "endTurn"
            }))
        })
    }

    fn roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<Value, InputError>> {
        Box::pin(async { Ok(json!({"roots": [{"uri": "file:///upstream/project"}]})) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_sampling_and_roots_are_relayed_to_a_client_that_declared_them() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _t) = serve(asker()).await;
    let host = mount(&dir, &[("ops", &url)], Some(relay_input_handler(None))).await;
    let front = front(
        &host,
        GatewayOptions::default().assume_yes(true),
        Some(Box::new(Answers)),
    )
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_client_cannot_answer_is_declined_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _t) = serve(asker()).await;
    let host = mount(&dir, &[("ops", &url)], Some(relay_input_handler(None))).await;
    // This client declares nothing.
    let front = front(&host, GatewayOptions::default().assume_yes(true), None).await;
    let r = front
        .client
        .call_tool("mcp__ops__confirm", None)
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    let text = r.joined_text();
    assert!(text.contains("form elicitation"), "{text}");
    assert!(text.contains("did not declare"), "{text}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_a_call_that_is_no_task_is_relayed_to_a_task_declaring_client() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _t) = serve(asker()).await;
    let host = mount(&dir, &[("ops", &url)], Some(relay_input_handler(None))).await;
    // The client follows tasks; the server answers with a question, not a
    // task, and the question is relayed all the same.
    let front = front_with(
        &host,
        GatewayOptions::default().assume_yes(true),
        Some(Box::new(Answers)),
        true,
    )
    .await;
    let r = front
        .client
        .call_tool("mcp__ops__confirm", None)
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    let text = r.joined_text();
    assert!(text.contains(r#"{"go":true}"#), "{text}");
    assert!(text.contains(r#"kept={"step":"asked"}"#), "{text}");
    host.shutdown().await;
}
