//! What the loop reports, in order, for a front end to render (the CLI
//! prints them; `--json` writes one per line).

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::model::Usage;

/// Something that happened in a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A piece of the model's text, as it streams.
    Text {
        /// The text.
        text: String,
    },
    /// The model called a tool; it runs next.
    ToolCall {
        /// The call id.
        id: String,
        /// The model-facing tool name.
        name: String,
        /// The server's alias, when the tool is known.
        #[serde(skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// The arguments, exactly.
        arguments: Value,
    },
    /// The gate asked and got an answer.
    Approval {
        /// The call id.
        id: String,
        /// The model-facing tool name.
        name: String,
        /// The server's alias.
        server: String,
        /// The arguments shown.
        arguments: Value,
        /// `allow_once`, `allow_always` or `deny`.
        decision: String,
    },
    /// A progress notification of a running call.
    Progress {
        /// The call id.
        id: String,
        /// Progress so far.
        progress: f64,
        /// The total, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// The server's message.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A call finished.
    ToolResult {
        /// The call id.
        id: String,
        /// The model-facing tool name.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// What happened (`ok`, `tool_error`, `denied`, `transport`,
        /// `cancelled`, `loop_guard`, …).
        outcome: String,
        /// The text the model gets.
        text: String,
    },
    /// Token counts of the whole turn (every model call of it).
    Usage {
        /// The counts.
        #[serde(flatten)]
        usage: Usage,
        /// Model calls made.
        model_calls: u32,
    },
    /// The model failed; the turn ends.
    Error {
        /// Why.
        message: String,
    },
    /// The turn ended.
    Done {
        /// Why.
        stop: TurnStop,
        /// A sentence for the user when the loop, not the model, ended it.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStop {
    /// The model answered.
    EndTurn,
    /// The model ran out of output tokens.
    MaxTokens,
    /// The turn limit was reached.
    TurnLimit,
    /// The same call was made too many times in a row.
    LoopGuard,
    /// The user cancelled.
    Cancelled,
    /// The model failed.
    Error,
}

/// Where events go. Cheap to clone.
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(&AgentEvent) + Send + Sync>);

impl EventSink {
    /// A sink calling `f` for every event.
    pub fn new(f: impl Fn(&AgentEvent) + Send + Sync + 'static) -> EventSink {
        EventSink(Arc::new(f))
    }

    /// A sink dropping every event.
    pub fn none() -> EventSink {
        EventSink::new(|_| {})
    }

    /// Passes on one event.
    pub fn emit(&self, event: &AgentEvent) {
        (self.0)(event);
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventSink")
    }
}
