//! The model side of the loop: one streaming turn of a model (messages and
//! tools in; text deltas, tool calls, usage and a stop reason out).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use switchboard_wire::JsonObject;

use crate::message::{Content, Message, Role};

/// A boxed, sendable future (the one alias of the workspace).
pub use switchboard_wire::BoxFuture;

/// Receives a turn's events as they arrive.
pub type EventFn<'a> = &'a mut (dyn FnMut(ModelEvent) + Send);

/// A tool as a model is told about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The model-facing name (`mcp__alias__tool`: at most 64 characters of
    /// `[A-Za-z0-9_-]`).
    pub name: String,
    /// The description (server text inside provenance markers).
    pub description: String,
    /// The input schema, as the server gave it.
    pub input_schema: JsonObject,
    /// The server it comes from, for people (never sent to the model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// What one model turn is given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far; the last message is the user's (a prompt
    /// or tool results).
    pub messages: Vec<Message>,
    /// The tools, in a stable order (prompt caches depend on it); shared,
    /// since the same list goes out on every turn.
    pub tools: Arc<[ToolSpec]>,
    /// Most tokens the model may write in this turn.
    pub max_tokens: u32,
}

impl ModelRequest {
    /// A request with a system prompt, one user message and no tools.
    pub fn prompt(system: impl Into<String>, user: impl Into<String>) -> ModelRequest {
        ModelRequest {
            system: system.into(),
            messages: vec![Message::user(user)],
            tools: Arc::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

/// The default bound on one turn's output.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The provider's call id (tool results refer to it).
    pub id: String,
    /// The model-facing tool name.
    pub name: String,
    /// The arguments: an object, unless the model wrote something else
    /// (text that is not JSON is kept as a string, and refused by the loop).
    pub arguments: Value,
}

/// Token counts of one turn (or a sum of turns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Input tokens not read from or written to a prompt cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds `other` to this.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// Why a model turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model is done.
    EndTurn,
    /// The model wants its tool calls run.
    ToolUse,
    /// The output bound was reached.
    MaxTokens,
    /// A stop sequence was written.
    StopSequence,
    /// The model declined to answer.
    Refusal,
    /// A reason this crate does not know, as the provider named it.
    Other(String),
}

/// Something that happened during a model turn, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// A piece of the model's text.
    TextDelta(String),
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Token counts (may come more than once; later ones add up).
    Usage(Usage),
    /// The turn ended.
    Stop(StopReason),
}

/// What a model turn produced, collected.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutput {
    /// All text, joined.
    pub text: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts.
    pub usage: Usage,
    /// Why it ended.
    pub stop: StopReason,
}

impl TurnOutput {
    /// The assistant message this output adds to the conversation (`None`
    /// when the model said nothing and called nothing).
    pub fn message(&self) -> Option<Message> {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Content::Text {
                text: self.text.clone(),
            });
        }
        for call in &self.tool_calls {
            content.push(Content::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.arguments.clone(),
            });
        }
        (!content.is_empty()).then_some(Message {
            role: Role::Assistant,
            content,
        })
    }
}

/// Collects a turn's events into a [`TurnOutput`] while passing them on.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    text: String,
    tool_calls: Vec<ToolCall>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl Collector {
    pub(crate) fn emit(&mut self, event: ModelEvent, sink: EventFn<'_>) {
        match &event {
            ModelEvent::TextDelta(t) => self.text.push_str(t),
            ModelEvent::ToolCall(c) => self.tool_calls.push(c.clone()),
            ModelEvent::Usage(u) => self.usage.add(u),
            ModelEvent::Stop(s) => self.stop = Some(s.clone()),
        }
        sink(event);
    }

    pub(crate) fn finish(self) -> TurnOutput {
        let stop = self.stop.unwrap_or(if self.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        TurnOutput {
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
            stop,
        }
    }
}

/// A language model: one streaming turn at a time.
pub trait Model: Send + Sync + fmt::Debug {
    /// `provider:model`, for people and logs.
    fn name(&self) -> String;

    /// Runs one turn: streams its events to `events` as they arrive and
    /// returns them collected.
    ///
    /// # Errors
    /// [`ModelError`] when the provider refuses or fails (after its
    /// retries), or the stream breaks.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request (its connection closes).
    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>>;
}

/// One non-tool completion: runs a single turn of `request` (its tools are
/// ignored by the loop, since nothing runs them) and returns the text, e.g.
/// to answer a server's sampling request with the same model.
///
/// # Errors
/// The [`ModelError`] of the turn.
pub async fn complete(model: &dyn Model, request: &ModelRequest) -> Result<String, ModelError> {
    let mut ignore = |_: ModelEvent| {};
    let output = model.turn(request, &mut ignore).await?;
    Ok(output.text)
}

/// Why a model turn failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model spec or config is not usable (unknown provider, missing
    /// model name, unreadable script).
    #[error("{0}")]
    Spec(String),
    /// No API key in the environment.
    #[error("no API key for {provider}: set {variable}")]
    MissingKey {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// The variable to set.
        variable: &'static str,
    },
    /// The provider refused the key (401/403).
    #[error("{provider} refused the API key (HTTP {status}: {message}); check {variable}")]
    Auth {
        /// The provider.
        provider: &'static str,
        /// 401 or 403.
        status: u16,
        /// What it said.
        message: String,
        /// The variable the key came from.
        variable: &'static str,
    },
    /// The provider does not know the model (404, or a "model not found"
    /// error).
    #[error(
        "{provider} does not know the model {model:?} ({message}); check the name after {provider}:"
    )]
    UnknownModel {
        /// The provider.
        provider: &'static str,
        /// The model asked for.
        model: String,
        /// What it said.
        message: String,
    },
    /// Rate limited or overloaded, and still so after the retries.
    #[error(
        "{provider} is busy (HTTP {status}: {message}), still after {attempts} attempts; try again later"
    )]
    Busy {
        /// The provider.
        provider: &'static str,
        /// The last status (429, 5xx, 529); 200 for an in-stream
        /// `overloaded_error`.
        status: u16,
        /// What it said.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Another refusal (400 and the like): our request or the model's
    /// limits.
    #[error("{provider} refused the request (HTTP {status}: {message})")]
    Refused {
        /// The provider.
        provider: &'static str,
        /// The status.
        status: u16,
        /// What it said.
        message: String,
    },
    /// No answer within the request timeout (or the stream went quiet for
    /// that long).
    #[error("{provider} did not answer within {} s", .after.as_secs())]
    Timeout {
        /// The provider.
        provider: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// The provider could not be reached.
    #[error("cannot reach {provider} at {url}: {message}")]
    Connect {
        /// The provider.
        provider: &'static str,
        /// The URL.
        url: String,
        /// Why.
        message: String,
    },
    /// The stream broke or made no sense (cut mid-event, bad JSON, an
    /// `error` event).
    #[error("{provider}'s stream broke: {message}")]
    Stream {
        /// The provider.
        provider: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The scripted model's script does not match the conversation.
    #[error("script {file}, line {line}: {message}")]
    Script {
        /// The script file.
        file: String,
        /// Its line (1-based; 0 when past the end).
        line: usize,
        /// What does not match.
        message: String,
    },
}
