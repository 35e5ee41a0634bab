//! The conversation: messages of the user and the assistant, made of text,
//! tool calls and tool results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person, and the tool results given back to the model.
    User,
    /// The model.
    Assistant,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call the model made.
    ToolUse {
        /// The provider's call id.
        id: String,
        /// The model-facing tool name.
        name: String,
        /// The arguments (an object, unless the model wrote something else).
        input: Value,
    },
    /// The result of a tool call, given back to the model.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The result as text (server text inside boundary markers).
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Vec<Content>,
}

impl Message {
    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![Content::Text { text: text.into() }],
        }
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Content::Text { text: text.into() }],
        }
    }

    /// The text parts joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let Content::Text { text } = c {
                out.push_str(text);
            }
        }
        out
    }
}
