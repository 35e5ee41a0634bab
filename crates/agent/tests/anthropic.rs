//! The Anthropic adapter against a local server speaking the Messages
//! API's event stream byte for byte.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_agent::{
    AnthropicModel, Content, Message, Model, ModelError, ModelEvent, ModelRequest, ProviderOptions,
    RetryPolicy, Role, StopReason, ToolSpec,
};

use crate::util::{Reply, Server, event};

fn model(url: &str) -> AnthropicModel {
    let mut o = ProviderOptions::new("claude-test", "sk-ant-secret", url);
    o.retry = RetryPolicy {
        retries: 2,
        base: Duration::from_millis(1),
        max: Duration::from_millis(50),
    };
    o.timeout = Duration::from_secs(20);
    AnthropicModel::new(o).unwrap()
}

fn request() -> ModelRequest {
    let mut r = ModelRequest::prompt("be brief", "find the printer note");
    let mut tools = Vec::new();
    for name in ["mcp__a__one", "mcp__b__two"] {
        tools.push(ToolSpec {
            name: name.into(),
            description: "[from a] does things".into(),
            input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}})
                .as_object()
                .unwrap()
                .clone(),
            server: Some("a".into()),
        });
    }
    r.tools = tools.into();
    r
}

fn start(input: u64) -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": input, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7, "output_tokens": 1}}}),
    )
}

fn text_block(index: u64, parts: &[&str]) -> Vec<String> {
    let mut out = vec![event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )];
    for p in parts {
        out.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}),
        ));
    }
    out.push(event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
    out
}

fn tool_block(index: u64, id: &str, name: &str, json_parts: &[&str]) -> Vec<String> {
    let mut out = vec![event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )];
    for p in json_parts {
        out.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
        ));
    }
    out.push(event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
    out
}

fn finish(reason: &str, output: u64) -> Vec<String> {
    vec![
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": output}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

fn tool_turn() -> Vec<String> {
    let mut s = vec![
        start(20),
        "event: ping\ndata: {\"type\": \"ping\"}\n\n".into(),
    ];
    s.extend(text_block(0, &["Let me ", "look."]));
    // The arguments arrive in many small pieces, split mid-token.
    s.extend(tool_block(
        1,
        "toolu_1",
        "mcp__a__one",
        &["", "{\"q\"", ": \"pri", "nter", " on fl", "oor 3\"", "}"],
    ));
    s.extend(finish("tool_use", 42));
    s
}

#[tokio::test]
async fn a_tool_call_split_across_many_deltas() {
    // The whole stream also arrives cut at awkward byte offsets.
    let joined: String = tool_turn().concat();
    let bytes = joined.as_bytes();
    let pieces: Vec<String> = bytes
        .chunks(37)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    assert_eq!(
        pieces.concat(),
        joined,
        "the test splits on char boundaries"
    );
    let server = Server::start(vec![Reply::sse(pieces)]).await;
    let m = model(&server.url);
    let mut events = Vec::new();
    let out = m.turn(&request(), &mut |e| events.push(e)).await.unwrap();
    assert_eq!(out.text, "Let me look.");
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].id, "toolu_1");
    assert_eq!(
        out.tool_calls[0].arguments,
        json!({"q": "printer on floor 3"})
    );
    assert_eq!(out.stop, StopReason::ToolUse);
    assert_eq!(out.usage.input_tokens, 20);
    assert_eq!(out.usage.output_tokens, 42);
    assert_eq!(out.usage.cache_read_tokens, 100);
    assert_eq!(out.usage.cache_write_tokens, 7);
    // Text streamed before the call.
    assert!(matches!(&events[1], ModelEvent::TextDelta(t) if t == "Let me "));
    // The request, as the API wants it.
    let seen = &server.requests()[0];
    assert!(
        seen.head.starts_with("POST /v1/messages HTTP/1.1"),
        "{}",
        seen.head
    );
    assert_eq!(seen.header("x-api-key").as_deref(), Some("sk-ant-secret"));
    assert_eq!(
        seen.header("anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    let b = &seen.body;
    assert_eq!(b["model"], "claude-test");
    assert_eq!(b["stream"], true);
    assert_eq!(b["system"][0]["text"], "be brief");
    assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(b["tools"][0]["name"], "mcp__a__one");
    assert!(b["tools"][0].get("cache_control").is_none());
    assert_eq!(b["tools"][1]["cache_control"]["type"], "ephemeral");
    assert_eq!(b["messages"][0]["role"], "user");
}

#[tokio::test]
async fn two_parallel_tool_calls_and_results_as_tool_result_blocks() {
    let mut s = vec![start(5)];
    s.extend(tool_block(
        0,
        "toolu_a",
        "mcp__a__one",
        &["{\"q\":", "\"x\"}"],
    ));
    s.extend(tool_block(1, "toolu_b", "mcp__b__two", &["{}"]));
    s.extend(finish("tool_use", 9));
    let mut s2 = vec![start(9)];
    s2.extend(text_block(0, &["done"]));
    s2.extend(finish("end_turn", 1));
    let server = Server::start(vec![Reply::sse(s), Reply::sse(s2)]).await;
    let m = model(&server.url);
    let mut req = request();
    let out = m.turn(&req, &mut |_| {}).await.unwrap();
    let ids: Vec<&str> = out.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["toolu_a", "toolu_b"]);
    assert_eq!(out.tool_calls[1].arguments, json!({}));
    req.messages.push(out.message().unwrap());
    req.messages.push(Message {
        role: Role::User,
        content: vec![
            Content::ToolResult {
                tool_use_id: "toolu_a".into(),
                content: "found".into(),
                is_error: false,
            },
            Content::ToolResult {
                tool_use_id: "toolu_b".into(),
                content: "server b is down".into(),
                is_error: true,
            },
        ],
    });
    let out = m.turn(&req, &mut |_| {}).await.unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(out.stop, StopReason::EndTurn);
    let body = &server.requests()[1].body;
    let assistant = &body["messages"][1];
    assert_eq!(assistant["content"][0]["type"], "tool_use");
    assert_eq!(assistant["content"][0]["input"], json!({"q": "x"}));
    let results = &body["messages"][2]["content"];
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_a");
    assert_eq!(results[1]["is_error"], true);
}

fn simple_turn(text: &str) -> Reply {
    let mut s = vec![start(3)];
    s.extend(text_block(0, &[text]));
    s.extend(finish("end_turn", 2));
    Reply::sse(s)
}

#[tokio::test]
async fn a_429_then_success() {
    let server = Server::start(vec![
        Reply::status(
            429,
            "retry-after: 0\r\n",
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ),
        simple_turn("ok"),
    ])
    .await;
    let out = model(&server.url)
        .turn(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out.text, "ok");
    assert_eq!(server.requests().len(), 2);
}

/// A `retry-after` given as an HTTP date is honoured: a date already past
/// means retry at once. The policy's own backoff is ten minutes, so a
/// client ignoring the date would miss the bounded wait below.
#[tokio::test]
async fn a_429_with_retry_after_as_an_http_date() {
    let past = httpdate::fmt_http_date(std::time::SystemTime::now() - Duration::from_secs(60));
    let server = Server::start(vec![
        Reply::status(
            429,
            &format!("retry-after: {past}\r\n"),
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ),
        simple_turn("ok"),
    ])
    .await;
    let mut o = ProviderOptions::new("claude-test", "sk-ant-secret", &server.url);
    o.retry = RetryPolicy {
        retries: 1,
        base: Duration::from_secs(600),
        max: Duration::from_secs(600),
    };
    let model = AnthropicModel::new(o).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), model.turn(&request(), &mut |_| {}))
        .await
        .expect("the HTTP-date retry-after was not honoured")
        .unwrap();
    assert_eq!(out.text, "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_529_overloaded_then_success_and_an_overload_inside_the_stream() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let in_stream = Reply::sse(vec![
        start(1),
        event("error", &serde_json::from_str::<Value>(overloaded).unwrap()),
    ]);
    let server = Server::start(vec![
        Reply::status(529, "", overloaded),
        in_stream,
        simple_turn("finally"),
    ])
    .await;
    let out = model(&server.url)
        .turn(&request(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out.text, "finally");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn still_overloaded_after_the_retries_is_busy() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = Server::start(vec![Reply::status(529, "", overloaded); 3]).await;
    let e = model(&server.url)
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ModelError::Busy {
                status: 529,
                attempts: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("Overloaded"), "{e}");
}

#[tokio::test]
async fn a_stream_cut_mid_event_is_an_error() {
    let mut s = vec![start(3)];
    s.extend(text_block(0, &["partial"]));
    s.push("event: message_delta\ndata: {\"type\": \"mess".into());
    let server = Server::start(vec![Reply::sse(s)]).await;
    let mut events = Vec::new();
    let e = model(&server.url)
        .turn(&request(), &mut |e| events.push(e))
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Stream { .. }), "{e:?}");
    assert!(e.to_string().contains("middle of an event"), "{e}");
    // What had arrived was passed on; nothing was retried after it.
    assert!(events.contains(&ModelEvent::TextDelta("partial".into())));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_that_stops_between_events_is_an_error_too() {
    let mut s = vec![start(3)];
    s.extend(text_block(0, &["partial"]));
    let server = Server::start(vec![Reply::sse(s)]).await;
    let e = model(&server.url)
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("before the turn was complete"),
        "{e}"
    );
}

#[tokio::test]
async fn a_401_names_the_variable_and_not_the_key() {
    let server = Server::start(vec![Reply::status(
        401,
        "",
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
    .await;
    let e = model(&server.url)
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Auth { status: 401, .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
    assert!(text.contains("invalid x-api-key"), "{text}");
    assert!(!text.contains("sk-ant-secret"), "{text}");
    assert!(!format!("{e:?}").contains("sk-ant-secret"));
    // Not retried.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unknown_model_says_so() {
    let server = Server::start(vec![Reply::status(
        404,
        "",
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-test"}}"#,
    )])
    .await;
    let e = model(&server.url)
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::UnknownModel { .. }), "{e:?}");
    assert!(e.to_string().contains("\"claude-test\""), "{e}");
}

#[tokio::test]
async fn no_answer_within_the_timeout() {
    let server = Server::start(vec![Reply::Hang]).await;
    let mut o = ProviderOptions::new("claude-test", "k", &server.url);
    o.timeout = Duration::from_millis(200);
    let e = AnthropicModel::new(o)
        .unwrap()
        .turn(&request(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Timeout { .. }), "{e:?}");
}

#[tokio::test]
async fn an_unreachable_provider_names_the_url() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let e = model(&url).turn(&request(), &mut |_| {}).await.unwrap_err();
    assert!(matches!(e, ModelError::Connect { .. }), "{e:?}");
    assert!(e.to_string().contains(&url), "{e}");
}

#[tokio::test]
async fn a_top_level_one_of_schema_is_sent_as_an_object() {
    let server = Server::start(vec![simple_turn("ok")]).await;
    let mut req = request();
    let mut tools = req.tools.to_vec();
    tools[0].input_schema = json!({"oneOf": [{"type": "object", "properties": {"a": {}}}, {"type": "object", "properties": {"b": {}}}]})
        .as_object()
        .unwrap()
        .clone();
    req.tools = tools.into();
    model(&server.url).turn(&req, &mut |_| {}).await.unwrap();
    let schema = &server.requests()[0].body["tools"][0]["input_schema"];
    assert_eq!(schema["type"], "object");
    assert!(schema.get("oneOf").is_none());
    assert!(schema["properties"].get("a").is_some() && schema["properties"].get("b").is_some());
}
