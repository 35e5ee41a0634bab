//! A typed tool's arguments read straight from the request's text (no JSON
//! tree) when its schema can be checked there, and every other case
//! answered exactly as when they are parsed first: refusals of the schema,
//! arguments that do not read as the handler's type, handlers taking JSON,
//! and an `input_required` answer bound to the arguments (MRTR-08).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;
use switchboard_server::{
    CallToolResult, Context, Elicitation, InputRequired, Server, ToolResult, ToolSpec,
};

use crate::util::*;

#[derive(Deserialize, JsonSchema)]
struct Say {
    text: String,
    times: Option<u8>,
}

#[derive(Deserialize, JsonSchema)]
struct Named {
    n: String,
}

#[derive(Deserialize, JsonSchema)]
struct Seat {
    seat: String,
}

/// Reserves a seat once the caller confirms: the first round asks, with
/// state, and the second answers.
async fn reserve(args: Seat, ctx: Context) -> ToolResult {
    if ctx.state::<Value>()?.is_some() {
        ctx.consume_state().await?;
        return Ok(CallToolResult::text(format!("reserved {}", args.seat)).into());
    }
    Ok(InputRequired::new()
        .elicit(
            "confirm",
            Elicitation::form(
                "Confirm?",
                json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
            ),
        )
        .state(json!({"asked": true}))
        .into())
}

fn server() -> Server {
    Server::builder("typed", "1")
        .tool("say", "Repeats a text", |a: Say| async move {
            a.text.repeat(usize::from(a.times.unwrap_or(1)))
        })
        // The schema says integer, the type a string: the schema admits
        // what the type cannot read.
        .tool_spec(
            ToolSpec::new("mismatch").input_schema(json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            })),
            |a: Named| async move { a.n },
        )
        .tool_spec(
            ToolSpec::new("json").input_schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string"}}
            })),
            |a: Value| async move { a.to_string() },
        )
        .tool("reserve", "Reserves a seat after confirming", reserve)
        .build()
        .unwrap()
}

/// The text of a tool's answer, and whether it is an error.
async fn call(http: &Http, name: &str, arguments: Value) -> (String, bool) {
    let r = http
        .call("tools/call", json!({"name": name, "arguments": arguments}))
        .await
        .result();
    assert_eq!(r["resultType"], "complete", "{r}");
    (
        r["content"][0]["text"].as_str().unwrap().to_owned(),
        r["isError"] == true,
    )
}

#[tokio::test]
async fn typed_arguments_are_read_from_the_text_as_from_json() {
    let http = start(server(), HttpOptions::new()).await;
    for (arguments, answer) in [
        (json!({"text": "ab", "times": 2}), "abab"),
        (json!({"text": "ab"}), "ab"),
        (json!({"times": null, "text": "a\n\"b\""}), "a\n\"b\""),
        (json!({"text": "é", "times": 3}), "ééé"),
        // A member the schema does not name: parsed, and ignored by the type.
        (json!({"text": "ab", "extra": {"x": [1, 2]}}), "ab"),
    ] {
        assert_eq!(
            call(&http, "say", arguments.clone()).await,
            (answer.to_owned(), false),
            "{arguments}"
        );
    }
    // A handler taking JSON gets the arguments as they were sent.
    let (text, error) = call(&http, "json", json!({"text": "x", "n": 1})).await;
    assert_eq!((text.as_str(), error), (r#"{"text":"x","n":1}"#, false));
    http.stop().await;
}

// TOOL-08: arguments the schema refuses are the tool's error, worded by the
// validator, whichever way the call was read.
#[tokio::test]
async fn what_the_schema_or_the_type_refuses_is_worded_as_before() {
    let http = start(server(), HttpOptions::new()).await;
    let (text, error) = call(&http, "say", json!({"text": "ab", "times": 300})).await;
    assert!(
        error && text.contains("300 is greater than the maximum of 255"),
        "{text}"
    );
    let (text, error) = call(&http, "say", json!({"times": 1})).await;
    assert!(
        error && text.contains("\"text\" is a required property"),
        "{text}"
    );
    let (text, error) = call(&http, "say", json!({"text": 5})).await;
    assert!(
        error && text.contains("5 is not of type \"string\""),
        "{text}"
    );
    // `2.0` is an integer to the schema, but not a `u8` to serde.
    let (text, error) = call(&http, "say", json!({"text": "ab", "times": 2.0})).await;
    assert!(error, "{text}");
    assert_eq!(
        text,
        "The arguments could not be read: invalid type: floating point `2.0`, expected u8. \
         Fix the arguments and call the tool again."
    );
    // The schema admits it, the type does not: the error is the one read
    // from JSON, with no position in a text the model never saw.
    let (text, error) = call(&http, "mismatch", json!({"n": 1})).await;
    assert!(error, "{text}");
    assert_eq!(
        text,
        "The arguments could not be read: invalid type: integer `1`, expected a string. \
         Fix the arguments and call the tool again."
    );
    // The type reads it, the schema refuses it: the schema decides.
    let (text, error) = call(&http, "mismatch", json!({"n": "1"})).await;
    assert!(
        error && text.contains("\"1\" is not of type \"integer\""),
        "{text}"
    );
    http.stop().await;
}

// MRTR-08: a state handed out in the first round (read from the text) is
// bound to those arguments: the same ones are accepted in the second round,
// others refused.
#[tokio::test]
async fn a_state_from_text_arguments_is_bound_to_them() {
    let http = start(server(), HttpOptions::new()).await;
    let caps = meta_with(json!({"elicitation": {}}));
    let round_one = http
        .call(
            "tools/call",
            json!({"name": "reserve", "arguments": {"seat": "12A"}, "_meta": caps}),
        )
        .await
        .result();
    assert_eq!(round_one["resultType"], "input_required", "{round_one}");
    let state = round_one["requestState"].as_str().unwrap().to_owned();
    let retry = |seat: &str| {
        json!({
            "name": "reserve",
            "arguments": {"seat": seat},
            "_meta": caps,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            "requestState": state
        })
    };
    http.call("tools/call", retry("13B"))
        .await
        .assert_invalid_params("different arguments");
    let r = http.call("tools/call", retry("12A")).await.result();
    assert_eq!(r["content"][0]["text"], "reserved 12A", "{r}");
    http.stop().await;
}
