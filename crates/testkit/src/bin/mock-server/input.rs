//! The MRTR input requests a call asks for, by the capabilities it declared.

use super::*;

/// The input-request keys for the capabilities a request declared.
pub(crate) fn input_keys(caps: &Value) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if caps.get("elicitation").is_some() {
        keys.push("confirm");
    }
    if caps.get("sampling").is_some() {
        keys.push("summary");
    }
    if caps.get("roots").is_some() {
        keys.push("roots");
    }
    keys
}

/// [`input_request`], broken as `--malformed-input` asks: an elicitation's
/// `message` is a number.
pub(crate) fn input_request_as(key: &str, malformed: bool) -> Value {
    let mut request = input_request(key);
    if malformed && key == "confirm" {
        request["params"]["message"] = json!(5);
    }
    request
}

pub(crate) fn input_request(key: &str) -> Value {
    match key {
        "confirm" => json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            // A member no type knows: a relay must pass it on as it is.
            "x-mock-trace": {"asked-by": "mock", "n": 1},
        }}),
        "summary" => json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise."}}],
            "maxTokens": 10,
            "x-mock-trace": {"asked-by": "mock", "n": 2},
        }}),
        _ => json!({"method": "roots/list", "params": {}}),
    }
}
