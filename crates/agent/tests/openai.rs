//! The OpenAI-compatible adapter against a local server speaking Chat
//! Completions' event stream byte for byte.

use std::time::Duration;

use serde_json::json;
use switchboard_agent::{
    Content, Message, Model, ModelError, ModelRequest, OpenAiModel, ProviderOptions, RetryPolicy,
    Role, StopReason, ToolSpec,
};

use crate::util::{Reply, Server, data};

fn model(url: &str, key: &str) -> OpenAiModel {
    let mut o = ProviderOptions::new("gpt-test", key, url);
    o.retry = RetryPolicy {
        retries: 2,
        base: Duration::from_millis(1),
        max: Duration::from_millis(50),
    };
    OpenAiModel::new(o).unwrap()
}

fn request() -> ModelRequest {
    let mut r = ModelRequest::prompt("be brief", "find it");
    r.tools = vec![ToolSpec {
        name: "mcp__a__one".into(),
        description: "[from a] one".into(),
        input_schema: json!({"type": "object"}).as_object().unwrap().clone(),
        server: None,
    }]
    .into();
    r
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    data(
        &json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
    )
}

fn usage(prompt: u64, completion: u64, cached: u64) -> String {
    data(
        &json!({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "prompt_tokens_details": {"cached_tokens": cached}}})
            .to_string(),
    )
}

#[tokio::test]
async fn text_and_a_tool_call_split_across_many_deltas() {
    let mut s = vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Look"}), None),
        chunk(json!({"content": "ing."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "mcp__a__one", "arguments": ""}}]}),
            None,
        ),
    ];
    for piece in ["{\"q", "\": \"prin", "ter\"", "}"] {
        s.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    s.push(chunk(json!({}), Some("tool_calls")));
    s.push(usage(30, 12, 10));
    s.push(data("[DONE]"));
    let server = Server::start(vec![Reply::sse(s)]).await;
    let out = model(&server.url, "sk-openai-secret")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out.text, "Looking.");
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].id, "call_1");
    assert_eq!(out.tool_calls[0].arguments, json!({"q": "printer"}));
    assert_eq!(out.stop, StopReason::ToolUse);
    assert_eq!(out.usage.input_tokens, 20);
    assert_eq!(out.usage.cache_read_tokens, 10);
    assert_eq!(out.usage.output_tokens, 12);
    let seen = &server.requests()[0];
    assert!(
        seen.head.starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{}",
        seen.head
    );
    assert_eq!(
        seen.header("authorization").as_deref(),
        Some("Bearer sk-openai-secret")
    );
    let b = &seen.body;
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"]["include_usage"], true);
    assert_eq!(
        b["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["function"]["name"], "mcp__a__one");
    assert_eq!(b["tools"][0]["function"]["parameters"]["type"], "object");
}

#[tokio::test]
async fn two_parallel_tool_calls_assembled_by_index_and_results_as_tool_messages() {
    let s = vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "mcp__a__one", "arguments": "{\"x\""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "mcp__a__one", "arguments": "{\"x\": 2"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}, {"index": 1, "function": {"arguments": "}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        data("[DONE]"),
    ];
    let s2 = vec![
        chunk(json!({"content": "both done"}), None),
        chunk(json!({}), Some("stop")),
        data("[DONE]"),
    ];
    let server = Server::start(vec![Reply::sse(s), Reply::sse(s2)]).await;
    let m = model(&server.url, "k");
    let mut req = request();
    let out = m.turn(&req, &mut |_| {}).await.unwrap();
    assert_eq!(out.tool_calls.len(), 2);
    assert_eq!(out.tool_calls[0].arguments, json!({"x": 1}));
    assert_eq!(out.tool_calls[1].id, "call_b");
    assert_eq!(out.tool_calls[1].arguments, json!({"x": 2}));
    req.messages.push(out.message().unwrap());
    req.messages.push(Message {
        role: Role::User,
        content: vec![
            Content::ToolResult {
                tool_use_id: "call_a".into(),
                content: "one".into(),
                is_error: false,
            },
            Content::ToolResult {
                tool_use_id: "call_b".into(),
                content: "denied".into(),
                is_error: true,
            },
        ],
    });
    let out = m.turn(&req, &mut |_| {}).await.unwrap();
    assert_eq!(out.text, "both done");
    assert_eq!(out.stop, StopReason::EndTurn);
    let msgs = &server.requests()[1].body["messages"];
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(
        msgs[2]["tool_calls"][0]["function"]["arguments"],
        "{\"x\":1}"
    );
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "one"})
    );
    assert_eq!(msgs[4]["role"], "tool");
    assert!(msgs[4]["content"].as_str().unwrap().contains("failed"));
}

#[tokio::test]
async fn a_429_then_success() {
    let server = Server::start(vec![
        Reply::status(
            429,
            "retry-after-ms: 1\r\n",
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        ),
        Reply::status(503, "", "upstream unavailable"),
        Reply::sse(vec![
            chunk(json!({"content": "ok"}), Some("stop")),
            data("[DONE]"),
        ]),
    ])
    .await;
    let out = model(&server.url, "k")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out.text, "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_stream_cut_mid_event_is_an_error() {
    let s = vec![
        chunk(json!({"content": "half"}), None),
        "data: {\"id\": \"c1\", \"choi".to_owned(),
    ];
    let server = Server::start(vec![Reply::sse(s)]).await;
    let e = model(&server.url, "k")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Stream { .. }), "{e:?}");
}

#[tokio::test]
async fn a_401_names_the_variable() {
    let server = Server::start(vec![Reply::status(
        401,
        "",
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )])
    .await;
    let e = model(&server.url, "sk-openai-secret")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ModelError::Auth { .. }), "{e:?}");
    assert!(text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("sk-openai-secret"), "{text}");
}

#[tokio::test]
async fn an_unknown_model_says_so() {
    let server = Server::start(vec![Reply::status(
        404,
        "",
        r#"{"error":{"message":"The model `gpt-test` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
    )])
    .await;
    let e = model(&server.url, "k")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::UnknownModel { .. }), "{e:?}");
}

#[tokio::test]
async fn a_local_runtime_gets_no_authorization_and_a_base_ending_in_v1() {
    let server = Server::start(vec![Reply::sse(vec![
        chunk(json!({"content": "hi"}), Some("stop")),
        // Some local servers end without [DONE]; a finished turn is kept.
    ])])
    .await;
    let out = model(&format!("{}/v1", server.url), "")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out.text, "hi");
    let seen = &server.requests()[0];
    assert!(
        seen.head.starts_with("POST /v1/chat/completions "),
        "{}",
        seen.head
    );
    assert_eq!(seen.header("authorization"), None);
}

#[tokio::test]
async fn an_error_inside_the_stream() {
    let server = Server::start(vec![Reply::sse(vec![data(
        r#"{"error":{"message":"context length exceeded"}}"#,
    )])])
    .await;
    let e = model(&server.url, "k")
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("context length exceeded"), "{e}");
}
