//! OpenAI-compatible Chat Completions: `POST {base}/v1/chat/completions`
//! with `stream: true`, read as server-sent `data:` chunks ending in
//! `[DONE]`. Local runtimes (llama.cpp's server, vLLM, Ollama) speak it
//! too, through `OPENAI_BASE_URL`.

use std::collections::BTreeMap;

use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use switchboard_wire::sse::SseEvent;

use super::anthropic::finish_call;
use super::{Dialect, Failure, ProviderOptions, StreamReader, count, parse_data, provider_model};
use crate::message::{Content, Role};
use crate::model::{Collector, EventFn, ModelError, ModelEvent, ModelRequest, StopReason, Usage};
use crate::schema;

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com";

provider_model! {
    /// A model behind an OpenAI-compatible Chat Completions API.
    pub struct OpenAiModel(Endpoint<OpenAi>);
    /// A model with these options (an empty key sends no
    /// `Authorization`, for local runtimes).
    fn new;
}

impl Dialect for OpenAi {
    type Reader = Reader;

    const PROVIDER: &'static str = "openai";
    const KEY_VARIABLE: &'static str = "OPENAI_API_KEY";
    const PATH: &'static str = "chat/completions";
    const BODY: fn(&str, &ModelRequest) -> Value = body;

    fn headers(&self, options: &ProviderOptions, headers: &mut HeaderMap) {
        if options.api_key.is_empty() {
            return;
        }
        if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", options.api_key)) {
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
    }
}

/// The request body.
pub(crate) fn body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for m in &request.messages {
        match m.role {
            Role::Assistant => {
                let text = m.text();
                let calls: Vec<Value> = m
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        Content::ToolUse { id, name, input } => Some(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments_text(input)},
                        })),
                        _ => None,
                    })
                    .collect();
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
            Role::User => {
                // Tool results are messages of their own, before the text.
                let mut text = String::new();
                for c in &m.content {
                    match c {
                        Content::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            let content = if *is_error {
                                format!("[the tool call failed]\n{content}")
                            } else {
                                content.clone()
                            };
                            messages.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
                        }
                        Content::Text { text: t } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                        Content::ToolUse { .. } => {}
                    }
                }
                if !text.is_empty() {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
        }
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": schema::for_provider(&t.input_schema).0,
                        }
                    })
                })
                .collect(),
        );
    }
    body
}

fn arguments_text(input: &Value) -> String {
    match input {
        Value::Object(_) => input.to_string(),
        _ => "{}".to_owned(),
    }
}

#[derive(Debug, Default)]
struct Pending {
    id: String,
    name: String,
    json: String,
}

/// Reads `chat.completion.chunk`s: text in `choices[0].delta.content`,
/// tool calls assembled by `index` from `delta.tool_calls[]`, the finish
/// reason, usage in the last chunk, and `[DONE]`.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    tools: BTreeMap<u64, Pending>,
    finished: bool,
}

impl Reader {
    fn flush_tools(&mut self, out: &mut Collector, sink: EventFn<'_>) {
        for (_, p) in std::mem::take(&mut self.tools) {
            out.emit(
                ModelEvent::ToolCall(finish_call(p.id, p.name, &p.json)),
                sink,
            );
        }
    }
}

impl StreamReader for Reader {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Collector,
        sink: EventFn<'_>,
    ) -> Result<bool, Failure> {
        const P: &str = "openai";
        if event.data.trim() == "[DONE]" {
            self.flush_tools(out, sink);
            return Ok(true);
        }
        let data = parse_data(P, event)?;
        if let Some(e) = data.get("error") {
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_owned();
            return Err(Failure::Fatal(ModelError::Stream {
                provider: P,
                message,
            }));
        }
        if let Some(choice) = data["choices"].get(0) {
            let delta = &choice["delta"];
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    out.emit(ModelEvent::TextDelta(text.to_owned()), sink);
                }
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    let index = count(call, "index");
                    let p = self.tools.entry(index).or_default();
                    if let Some(id) = call.get("id").and_then(Value::as_str) {
                        p.id.push_str(id);
                    }
                    let f = &call["function"];
                    if let Some(name) = f.get("name").and_then(Value::as_str) {
                        p.name.push_str(name);
                    }
                    if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                        p.json.push_str(args);
                    }
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.flush_tools(out, sink);
                self.finished = true;
                let stop = match reason {
                    "stop" => StopReason::EndTurn,
                    "tool_calls" | "function_call" => StopReason::ToolUse,
                    "length" => StopReason::MaxTokens,
                    "content_filter" => StopReason::Refusal,
                    other => StopReason::Other(other.to_owned()),
                };
                out.emit(ModelEvent::Stop(stop), sink);
            }
        }
        if let Some(u) = data.get("usage").filter(|u| u.is_object()) {
            let cached = count(&u["prompt_tokens_details"], "cached_tokens");
            out.emit(
                ModelEvent::Usage(Usage {
                    input_tokens: count(u, "prompt_tokens").saturating_sub(cached),
                    output_tokens: count(u, "completion_tokens"),
                    cache_read_tokens: cached,
                    cache_write_tokens: 0,
                }),
                sink,
            );
        }
        Ok(false)
    }

    fn may_end_here(&self) -> bool {
        self.finished
    }
}
