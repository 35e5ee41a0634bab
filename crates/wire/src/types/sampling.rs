//! Sampling: a server asks the client's model for a message
//! (`sampling/createMessage`, a deprecated feature).
//!
//! Messages and content are kept as JSON values: a content member is one
//! block or an array of them, and tool use inside sampling adds block
//! kinds the other features do not have.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

/// One message of a sampling conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// One content block or an array of them, verbatim.
    pub content: Value,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the answer may take (SAMP-07).
    pub max_tokens: u64,
    /// The system prompt, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Tools the model may use (`sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// Other members (`temperature`, `modelPreferences`, …), kept as they
    /// came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageRequestParams {
    /// One user message of text, answered with at most `max_tokens` tokens.
    pub fn prompt(text: impl Into<String>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages: vec![SamplingMessage {
                role: "user".into(),
                content: serde_json::json!({"type": "text", "text": text.into()}),
                extra: JsonObject::new(),
            }],
            max_tokens,
            system_prompt: None,
            tools: None,
            extra: JsonObject::new(),
        }
    }
}

/// The answer to `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// `assistant`, normally.
    pub role: String,
    /// One content block or an array of them, verbatim.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageResult {
    /// The text of the answer: every text block joined with newlines.
    pub fn text(&self) -> String {
        let blocks: Vec<&Value> = match &self.content {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl From<CreateMessageResult> for Value {
    fn from(result: CreateMessageResult) -> Value {
        serde_json::to_value(result).unwrap_or(Value::Null)
    }
}

impl From<CreateMessageRequestParams> for Value {
    fn from(params: CreateMessageRequestParams) -> Value {
        serde_json::to_value(params).unwrap_or(Value::Null)
    }
}
