//! The Anthropic Messages API: `POST {base}/v1/messages` with `stream:
//! true`, read as server-sent events.

use std::collections::BTreeMap;

use http::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use switchboard_wire::sse::SseEvent;

use super::{Dialect, Failure, ProviderOptions, StreamReader, count, parse_data, provider_model};
use crate::message::{Content, Role};
use crate::model::{
    Collector, EventFn, ModelError, ModelEvent, ModelRequest, StopReason, ToolCall, Usage,
};
use crate::schema;

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent.
pub(crate) const API_VERSION: &str = "2023-06-01";

provider_model! {
    /// A model behind the Anthropic Messages API.
    pub struct AnthropicModel(Endpoint<Anthropic>);
    /// A model with these options.
    fn new;
}

impl Dialect for Anthropic {
    type Reader = Reader;

    const PROVIDER: &'static str = "anthropic";
    const KEY_VARIABLE: &'static str = "ANTHROPIC_API_KEY";
    const PATH: &'static str = "messages";
    const BODY: fn(&str, &ModelRequest) -> Value = body;

    fn headers(&self, options: &ProviderOptions, headers: &mut HeaderMap) {
        if let Ok(mut key) = HeaderValue::from_str(&options.api_key) {
            key.set_sensitive(true);
            headers.insert("x-api-key", key);
        }
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
    }
}

/// The request body. The system prompt and the tool list carry
/// `cache_control`, so a long conversation re-reads them from the cache.
pub(crate) fn body(model: &str, request: &ModelRequest) -> Value {
    let cache = json!({"type": "ephemeral"});
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": schema::for_provider(&t.input_schema).0,
            })
        })
        .collect();
    if let Some(Value::Object(last)) = tools.last_mut() {
        last.insert("cache_control".into(), cache.clone());
    }
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .content
                .iter()
                .map(|c| match c {
                    Content::Text { text } => json!({"type": "text", "text": text}),
                    Content::ToolUse { id, name, input } => {
                        // The API wants an object; anything else the model
                        // wrote was refused by the loop and goes back empty.
                        let input = if input.is_object() {
                            input.clone()
                        } else {
                            json!({})
                        };
                        json!({"type": "tool_use", "id": id, "name": name, "input": input})
                    }
                    Content::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } => json!({
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": content,
                        "is_error": is_error,
                    }),
                })
                .collect();
            json!({
                "role": match m.role { Role::User => "user", Role::Assistant => "assistant" },
                "content": content,
            })
        })
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = json!([{"type": "text", "text": request.system, "cache_control": cache}]);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

/// A tool call being assembled from `input_json_delta`s.
#[derive(Debug)]
struct Pending {
    id: String,
    name: String,
    json: String,
}

/// Reads `message_start`, `content_block_*`, `message_delta`,
/// `message_stop`, `ping` and `error`.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// Tool-use blocks by index.
    tools: BTreeMap<u64, Pending>,
    started: bool,
}

impl StreamReader for Reader {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Collector,
        sink: EventFn<'_>,
    ) -> Result<bool, Failure> {
        const P: &str = "anthropic";
        if event.event == "ping" {
            return Ok(false);
        }
        let data = parse_data(P, event)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                self.started = true;
                // Output tokens are counted (cumulatively) by message_delta.
                let usage = Usage {
                    output_tokens: 0,
                    ..usage_of(&data["message"]["usage"])
                };
                out.emit(ModelEvent::Usage(usage), sink);
            }
            "content_block_start" => {
                let index = count(&data, "index");
                let block = &data["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        self.tools.insert(
                            index,
                            Pending {
                                id: str_of(block, "id"),
                                name: str_of(block, "name"),
                                json: String::new(),
                            },
                        );
                    }
                    Some("text") => {
                        let text = str_of(block, "text");
                        if !text.is_empty() {
                            out.emit(ModelEvent::TextDelta(text), sink);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = count(&data, "index");
                let delta = &data["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        out.emit(ModelEvent::TextDelta(str_of(delta, "text")), sink);
                    }
                    Some("input_json_delta") => {
                        if let Some(p) = self.tools.get_mut(&index) {
                            p.json
                                .push_str(delta["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    // Thinking and signatures are not part of the answer.
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = count(&data, "index");
                if let Some(p) = self.tools.remove(&index) {
                    out.emit(
                        ModelEvent::ToolCall(finish_call(p.id, p.name, &p.json)),
                        sink,
                    );
                }
            }
            "message_delta" => {
                if let Some(reason) = data["delta"].get("stop_reason").and_then(Value::as_str) {
                    out.emit(ModelEvent::Stop(stop_reason(reason)), sink);
                }
                if data.get("usage").is_some() {
                    // Output tokens are cumulative here; input counts came
                    // with message_start.
                    let u = &data["usage"];
                    out.emit(
                        ModelEvent::Usage(Usage {
                            output_tokens: count(u, "output_tokens"),
                            ..Usage::default()
                        }),
                        sink,
                    );
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let e = &data["error"];
                let error_type = str_of(e, "type");
                let message = str_of(e, "message");
                if matches!(
                    error_type.as_str(),
                    "overloaded_error" | "rate_limit_error" | "api_error"
                ) {
                    return Err(Failure::Retry {
                        status: 200,
                        message: format!("{error_type}: {message}"),
                        after: None,
                    });
                }
                return Err(Failure::Fatal(ModelError::Stream {
                    provider: P,
                    message: format!("{error_type}: {message}"),
                }));
            }
            _ => {}
        }
        Ok(false)
    }
}

fn usage_of(u: &Value) -> Usage {
    Usage {
        input_tokens: count(u, "input_tokens"),
        output_tokens: count(u, "output_tokens"),
        cache_read_tokens: count(u, "cache_read_input_tokens"),
        cache_write_tokens: count(u, "cache_creation_input_tokens"),
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A finished tool call: the assembled JSON, `{}` for none, the raw text
/// as a string when it is not JSON (the loop refuses it with a message).
pub(crate) fn finish_call(id: String, name: String, json: &str) -> ToolCall {
    let arguments = if json.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned()))
    };
    ToolCall {
        id,
        name,
        arguments,
    }
}
