//! Round trips and helpers of the MCP types.

use serde::{Deserialize, Serialize};

use super::*;
use serde_json::json;

fn caps(v: Value) -> ClientCapabilities {
    serde_json::from_value(v).unwrap()
}

#[test]
fn narrowing_keeps_only_the_questions_both_sides_answer() {
    let own = caps(json!({
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}},
        "roots": {"listChanged": true},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }));
    // `{}` elicitation is form only; no roots; sampling without tools.
    let caller = caps(json!({"elicitation": {}, "sampling": {}}));
    let narrowed = serde_json::to_value(own.narrowed_to(&caller)).unwrap();
    assert_eq!(
        narrowed,
        json!({
            "elicitation": {"form": {}},
            "sampling": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        })
    );
    // A caller that answers nothing leaves only what is not a question.
    let bare = serde_json::to_value(own.narrowed_to(&ClientCapabilities::default())).unwrap();
    assert_eq!(
        bare,
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    // Nothing is added that the client itself does not declare.
    let form_only = caps(json!({"elicitation": {"form": {}}}));
    let wide = caps(json!({"elicitation": {"url": {}, "form": {}}, "roots": {}}));
    assert_eq!(form_only.narrowed_to(&wide), form_only);
    let url_only = caps(json!({"elicitation": {"url": {}}}));
    assert!(!url_only.narrowed_to(&caller).supports_elicitation_form());
    assert_eq!(url_only.narrowed_to(&caller).elicitation, None);
}

fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(v: Value) -> Value {
    let t: T = serde_json::from_value(v).unwrap();
    serde_json::to_value(&t).unwrap()
}

// JSCH-05: schemas come back verbatim: no $ref followed, no keyword dropped.
#[test]
fn tool_schema_survives_byte_for_byte() {
    let text = r##"{"name":"t","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"http://127.0.0.1:1/remote.json"}},"additionalProperties":false,"x-mcp-header":"X","unevaluatedProperties":false},"outputSchema":{"type":"array"},"annotations":{"readOnlyHint":true,"x-vendor":1},"futureField":{"k":[1,2]}}"##;
    let tool: Tool = serde_json::from_str(text).unwrap();
    let back = serde_json::to_string(&tool).unwrap();
    let a: Value = serde_json::from_str(text).unwrap();
    let b: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(a, b);
    // Key order of the schema is kept too.
    assert!(back.contains(r##""inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs""##));
}

#[test]
fn results_keep_unknown_members() {
    let v = json!({"tools":[],"nextCursor":"","ttlMs":5,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"extra":true});
    assert_eq!(round_trip::<ListToolsResult>(v.clone()), v);
    let v = json!({"content":[{"type":"text","text":"hi","annotations":{"priority":1}},{"type":"hologram","x":1},{"type":"resource","resource":{"uri":"a://b","text":"t"}}],"isError":true,"resultType":"complete","z":1});
    assert_eq!(round_trip::<CallToolResult>(v.clone()), v);
    let v = json!({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"future":{}},"ttlMs":0,"cacheScope":"public","resultType":"complete"});
    assert_eq!(round_trip::<DiscoverResult>(v.clone()), v);
}

// WIRE-09: absent resultType is complete; unknown ones are kept as such.
#[test]
fn result_type_classification() {
    assert_eq!(ResultType::of(&json!({})), ResultType::Complete);
    assert_eq!(
        ResultType::of(&json!({"resultType":"input_required"})),
        ResultType::InputRequired
    );
    assert_eq!(
        ResultType::of(&json!({"resultType":"task"})),
        ResultType::Other("task".into())
    );
}

#[test]
fn elicitation_capability_defaults_to_form() {
    let caps: ClientCapabilities = serde_json::from_value(json!({"elicitation":{}})).unwrap();
    assert!(caps.supports_elicitation_form());
    assert!(!caps.supports_elicitation_url());
    let caps: ClientCapabilities =
        serde_json::from_value(json!({"elicitation":{"url":{}}})).unwrap();
    assert!(!caps.supports_elicitation_form());
    assert!(caps.supports_elicitation_url());
}

#[test]
fn malformed_core_blocks_are_kept_whole() {
    let v = json!({"type":"text","text":5});
    let b: ContentBlock = serde_json::from_value(v.clone()).unwrap();
    assert!(matches!(b, ContentBlock::Other(_)));
    assert_eq!(serde_json::to_value(&b).unwrap(), v);
}

// ELIC-04, ELIC-07: both modes and every action read and written again
// unchanged, unknown members kept.
#[test]
fn elicitation_params_and_answers_round_trip() {
    let form = json!({"message": "Which?", "requestedSchema": {"type": "object"}, "x-extra": 1});
    let p: ElicitRequestParams = serde_json::from_value(form.clone()).unwrap();
    assert!(!p.is_url());
    assert_eq!(serde_json::to_value(&p).unwrap(), form);
    let url =
        serde_json::to_value(ElicitRequestParams::url("Log in", "https://a.example/")).unwrap();
    assert_eq!(
        url,
        json!({"mode": "url", "message": "Log in", "url": "https://a.example/"})
    );
    let answer = json!({"action": "accept", "content": {"n": 3}});
    let r: ElicitResult = serde_json::from_value(answer.clone()).unwrap();
    assert_eq!(r.content_as::<JsonObject>().unwrap().unwrap()["n"], 3);
    assert!(r.content_as::<String>().is_err());
    assert_eq!(Value::from(r), answer);
    assert_eq!(
        Value::from(ElicitResult::new(ElicitAction::Decline)),
        json!({"action": "decline"})
    );
    assert!(serde_json::from_value::<ElicitResult>(json!({"action": "maybe"})).is_err());
}

// SAMP-07: the request's params and the answer round-trip; the answer's
// text joins its text blocks.
#[test]
fn sampling_params_and_answers_round_trip() {
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Sum up"}}],
        "maxTokens": 50, "systemPrompt": "Be brief", "temperature": 0.5
    });
    let p: CreateMessageRequestParams = serde_json::from_value(params.clone()).unwrap();
    assert_eq!(
        (p.max_tokens, p.system_prompt.as_deref()),
        (50, Some("Be brief"))
    );
    assert_eq!(serde_json::to_value(&p).unwrap(), params);
    let answer = json!({"role": "assistant", "model": "m", "stopReason": "endTurn",
        "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "image/png"}, {"type": "text", "text": "b"}]});
    let r: CreateMessageResult = serde_json::from_value(answer.clone()).unwrap();
    assert_eq!(r.text(), "a\nb");
    assert_eq!(Value::from(r), answer);
}

// ROOT-03: the roots answer keeps what it does not know, in the roots and
// around them.
#[test]
fn roots_answer_round_trips() {
    let answer =
        json!({"roots": [{"uri": "file:///a", "name": "a", "x-kind": "repo"}], "_meta": {"k": 1}});
    assert_eq!(round_trip::<ListRootsResult>(answer.clone()), answer);
    assert!(serde_json::from_value::<ListRootsResult>(json!({"roots": 5})).is_err());
}

// The hand-written reader agrees with serde on every shape.
#[test]
fn call_tool_result_from_value_reads_like_serde() {
    let cases = [
        json!({}),
        json!({"content": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}], "isError": true}),
        json!({"content": [{"type": "hologram", "x": 1}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
                   "structuredContent": [1, {"a": null}], "resultType": "complete",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}, "extra": {"k": 1}}),
        json!({"content": [], "isError": null, "_meta": null, "resultType": "task"}),
    ];
    for case in cases {
        let ours = CallToolResult::from_value(case.clone()).unwrap();
        let serde: CallToolResult = serde_json::from_value(case.clone()).unwrap();
        assert_eq!(ours, serde, "{case}");
    }
    for bad in [
        json!([]),
        json!({"content": 1}),
        json!({"content": [1]}),
        json!({"isError": "yes"}),
    ] {
        assert!(CallToolResult::from_value(bad.clone()).is_err(), "{bad}");
        assert!(
            serde_json::from_value::<CallToolResult>(bad.clone()).is_err(),
            "{bad}"
        );
    }
}
