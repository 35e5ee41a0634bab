//! Multi round-trip requests: `input_required`, signed `requestState`
//! (tampered, expired, replayed, cross-request), missing and malformed
//! answers.

use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;

use crate::util::*;

fn elicit_caps() -> Value {
    meta_with(json!({"elicitation": {}}))
}

fn seat_answer() -> Value {
    json!({"seat": {"action": "accept", "content": {"seat": "12A"}}})
}

/// Runs `book` to the round that carries state; returns that state.
async fn state_for_book(http: &Http) -> String {
    let r = http
        .call(
            "tools/call",
            json!({"name": "book", "_meta": elicit_caps()}),
        )
        .await
        .result();
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"]["seat"]["method"], "elicitation/create");
    // No state was asked for in round one, so none is sent.
    assert!(r.get("requestState").is_none());
    let r = http
        .call(
            "tools/call",
            json!({"name": "book", "_meta": elicit_caps(), "inputResponses": seat_answer()}),
        )
        .await
        .result();
    assert_eq!(r["resultType"], "input_required");
    r["requestState"]
        .as_str()
        .expect("state in round two")
        .to_owned()
}

fn retry(state: &str) -> Value {
    json!({
        "name": "book",
        "_meta": elicit_caps(),
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
        "requestState": state
    })
}

// MRTR-08/10/12: the state comes back, verifies, and is single-use.
#[tokio::test]
async fn round_trip_and_replay() {
    let (http, _) = start_default().await;
    let state = state_for_book(&http).await;
    let r = http.call("tools/call", retry(&state)).await.result();
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["content"][0]["text"], "booked seat \"12A\"");
    // Replayed: refused (MRTR-10).
    let r = http.call("tools/call", retry(&state)).await;
    r.assert_invalid_params("already used");
    http.stop().await;
}

// MRTR-07/08: any change to the state is detected.
#[tokio::test]
async fn tampered_state_is_refused() {
    let (http, _) = start_default().await;
    let state = state_for_book(&http).await;
    let mut bytes = state.clone().into_bytes();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    for bad in [
        String::from_utf8(bytes).unwrap(),
        format!("{state}-TAMPERED"),
        "not-a-state".to_owned(),
    ] {
        let r = http.call("tools/call", retry(&bad)).await;
        r.assert_invalid_params("altered");
    }
    // The genuine state still works: nothing was consumed by the attempts.
    let r = http.call("tools/call", retry(&state)).await.result();
    assert_eq!(r["resultType"], "complete");
    http.stop().await;
}

// MRTR-09: state lapses.
#[tokio::test]
async fn expired_state_is_refused() {
    let probe = std::sync::Arc::new(Probe::default());
    let server = builder(probe)
        .request_state_ttl(std::time::Duration::ZERO)
        .build()
        .unwrap();
    let http = start(server, HttpOptions::new()).await;
    let state = state_for_book(&http).await;
    let r = http.call("tools/call", retry(&state)).await;
    r.assert_invalid_params("expired");
    http.stop().await;
}

// MRTR-09/15: state is bound to its request: not another tool, not other
// arguments.
#[tokio::test]
async fn cross_request_state_is_refused() {
    let (http, _) = start_default().await;
    let state = state_for_book(&http).await;
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "requestState": state}),
        )
        .await;
    r.assert_invalid_params("different request");
    let mut other_args = retry(&state);
    other_args["arguments"] = json!({"extra": 1});
    let r = http.call("tools/call", other_args).await;
    r.assert_invalid_params("different arguments");
    http.stop().await;
}

// MRTR-16/17/18: missing answers are asked again, malformed ones are
// -32602, extra ones ignored.
#[tokio::test]
async fn missing_malformed_and_extra_answers() {
    let (http, _) = start_default().await;
    let r = http
        .call("tools/call", json!({"name": "book", "_meta": elicit_caps(), "inputResponses": {"other": {"action": "cancel"}}}))
        .await
        .result();
    assert_eq!(r["resultType"], "input_required");
    assert!(r["inputRequests"].get("seat").is_some());
    let r = http
        .call(
            "tools/call",
            json!({"name": "book", "_meta": elicit_caps(), "inputResponses": {"seat": 12345}}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
    let r = http
        .call(
            "tools/call",
            json!({"name": "book", "_meta": elicit_caps(), "inputResponses": 5}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
    let mut answers = seat_answer();
    answers["unrelated"] = json!({"action": "accept", "content": {"x": 1}});
    let r = http
        .call(
            "tools/call",
            json!({"name": "book", "_meta": elicit_caps(), "inputResponses": answers}),
        )
        .await
        .result();
    assert_eq!(r["resultType"], "input_required");
    assert!(r["requestState"].is_string());
    http.stop().await;
}

// MRTR-05: an input request needs this request's capability.
#[tokio::test]
async fn input_requests_need_declared_capabilities() {
    let (http, _) = start_default().await;
    let r = http.call("tools/call", json!({"name": "book"})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32021);
    assert_eq!(
        r.response()["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
    let r = http
        .call(
            "tools/call",
            json!({"name": "need_sampling", "_meta": meta_with(json!({"sampling": {}}))}),
        )
        .await
        .result();
    assert_eq!(r["inputRequests"]["q"]["method"], "sampling/createMessage");
    let r = http
        .call(
            "tools/call",
            json!({
                "name": "need_sampling",
                "_meta": meta_with(json!({"sampling": {}})),
                "inputResponses": {"q": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}}
            }),
        )
        .await
        .result();
    assert_eq!(r["content"][0]["text"], "model said 4");
    http.stop().await;
}
