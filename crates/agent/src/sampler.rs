//! A server's `sampling/createMessage`, answered by the agent's own model.
//!
//! The host asks the person first (or takes `--yes`) and only then calls
//! the [`Sampler`]; this adapter turns the request's text messages, system
//! prompt and `maxTokens` into one tool-less [`ModelRequest`] and the
//! model's turn into a `CreateMessageResult`.

use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_client::BoxFuture;
use switchboard_host::Sampler;

use crate::message::{Content, Message, Role};
use crate::model::{DEFAULT_MAX_TOKENS, Model, ModelRequest, StopReason};

/// Answers servers' sampling requests with a [`Model`].
#[derive(Clone)]
pub struct ModelSampler {
    model: Arc<dyn Model>,
}

impl ModelSampler {
    /// A sampler that asks `model`.
    pub fn new(model: Arc<dyn Model>) -> ModelSampler {
        ModelSampler { model }
    }
}

impl fmt::Debug for ModelSampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSampler")
            .field("model", &self.model.name())
            .finish()
    }
}

impl Sampler for ModelSampler {
    fn name(&self) -> String {
        self.model.name()
    }

    fn create_message<'a>(
        &'a self,
        _server: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let request = sampling_request(params)?;
            let mut ignore = |_| {};
            let output = self
                .model
                .turn(&request, &mut ignore)
                .await
                .map_err(|e| format!("the model could not answer: {e}"))?;
            Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": output.text},
                "model": self.model.name(),
                "stopReason": stop_reason(&output.stop),
            }))
        })
    }
}

/// The model request for `sampling/createMessage` params.
///
/// # Errors
/// A sentence naming what the request has that a text model cannot take
/// (no messages, a non-text part, an unknown role).
fn sampling_request(params: &Value) -> Result<ModelRequest, String> {
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or("the request has no messages")?;
    let messages = messages
        .iter()
        .enumerate()
        .map(|(i, m)| sampling_message(m).map_err(|e| format!("message {i}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let max_tokens =
        params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_MAX_TOKENS, |n| {
                u32::try_from(n)
                    .unwrap_or(u32::MAX)
                    .clamp(1, DEFAULT_MAX_TOKENS)
            });
    Ok(ModelRequest {
        system: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        messages,
        tools: Arc::default(),
        max_tokens,
    })
}

fn sampling_message(message: &Value) -> Result<Message, String> {
    let role = match message.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        other => return Err(format!("role {other:?} is neither user nor assistant")),
    };
    // One content block or a list of them (2025-11-25 onwards).
    let parts: Vec<&Value> = match message.get("content") {
        Some(Value::Array(parts)) => parts.iter().collect(),
        Some(part) => vec![part],
        None => Vec::new(),
    };
    let mut content = Vec::with_capacity(parts.len());
    for part in parts {
        match (
            part.get("type").and_then(Value::as_str),
            part.get("text").and_then(Value::as_str),
        ) {
            (Some("text"), Some(text)) => content.push(Content::Text {
                text: text.to_owned(),
            }),
            (kind, _) => {
                return Err(format!(
                    "a {} part, and only text is sent to the model",
                    kind.unwrap_or("untyped")
                ));
            }
        }
    }
    if content.is_empty() {
        return Err("no content".into());
    }
    Ok(Message { role, content })
}

/// The protocol's name for why the model stopped.
fn stop_reason(stop: &StopReason) -> &str {
    match stop {
        StopReason::MaxTokens => "maxTokens",
        StopReason::StopSequence => "stopSequence",
        StopReason::Other(other) => other,
        StopReason::EndTurn | StopReason::ToolUse | StopReason::Refusal => "endTurn",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_messages_system_prompt_and_max_tokens_become_the_request() {
        let request = sampling_request(&json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarize: a b c"}},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
            ],
            "systemPrompt": "Be brief.",
            "maxTokens": 100
        }))
        .unwrap();
        assert_eq!(request.system, "Be brief.");
        assert_eq!(request.max_tokens, 100);
        assert!(request.tools.is_empty());
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[0].role, Role::User);
        assert_eq!(request.messages[1].role, Role::Assistant);
    }

    #[test]
    fn what_a_text_model_cannot_take_is_refused_with_the_reason() {
        for (params, expected) in [
            (json!({}), "no messages"),
            (json!({"messages": []}), "no messages"),
            (
                json!({"messages": [{"role": "user", "content": {"type": "image", "data": "", "mimeType": "image/png"}}]}),
                "message 0: a image part",
            ),
            (
                json!({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]}),
                "neither user nor assistant",
            ),
        ] {
            let e = sampling_request(&params).unwrap_err();
            assert!(e.contains(expected), "{params}: {e}");
        }
    }

    #[test]
    fn max_tokens_is_bounded_by_the_default() {
        let request = sampling_request(&json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
            "maxTokens": 10_000_000u64
        }))
        .unwrap();
        assert_eq!(request.max_tokens, DEFAULT_MAX_TOKENS);
    }
}
