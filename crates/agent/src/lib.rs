//! The agent layer of Switchboard: a model loop over a host's governed
//! tools, as a library (the `switchboard chat` command and the evals are
//! thin fronts over it).
//!
//! A [`Model`] runs one streaming turn: messages and tools in; text
//! deltas, tool calls, usage and a stop reason out. The [`Agent`] loops:
//! model → tool calls → [`Toolbox`] (the host: gate, approver, budget,
//! audit) → results → model, until the model stops, the turn limit, the
//! loop guard (the same call N times in a row), or a [`CancelToken`]. It
//! reports [`AgentEvent`]s to an [`EventSink`]; rendering is the caller's.
//!
//! # Layout
//! - `model`: the [`Model`] trait and its types; [`complete`] for a
//!   one-shot completion (e.g. to answer a server's sampling request).
//! - `message`: the conversation ([`Message`], [`Content`]).
//! - `provider`: Anthropic Messages and OpenAI-compatible Chat Completions
//!   over hyper, streaming, with retries ([`ProviderOptions`]).
//! - [`schema`]: input schemas made acceptable to providers.
//! - `sampler`: [`ModelSampler`], servers' sampling requests answered by
//!   the same model (after the person approved them).
//! - `script`, `mock`: the scripted and the built-in mock model.
//! - `spec`: [`model_from_spec`] (`anthropic:…`, `openai:…`,
//!   `script:FILE`, `mock`).
//! - `agent`, `toolbox`, `event`, `cancel`, [`prompt`]: the loop; the
//!   toolbox defers a large table (the model gets the always-loaded tools
//!   and `mcp__switchboard__search_tools`, and what it finds from then
//!   on), `window` knows models' context windows.
//! - [`eval`]: evals of tool selection on the same models and tool table.
//!
//! Its place among the layers: above `switchboard-host`, below the CLI;
//! it knows nothing of terminals or transports.
//!
//! # Example
//! ```no_run
//! # async fn run(host: switchboard_host::Host) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use switchboard_agent::{Agent, AgentOptions, CancelToken, EventSink, HostToolbox, model_from_spec};
//!
//! let model = model_from_spec("mock")?;
//! let toolbox = Arc::new(HostToolbox::new(host, None));
//! let mut agent = Agent::new(model, toolbox, AgentOptions::default());
//! let events = EventSink::new(|e| println!("{}", serde_json::to_string(e).unwrap_or_default()));
//! let end = agent.run("What do the notes say about printers?", &events, &CancelToken::new()).await;
//! println!("{:?}: {}", end.stop, end.text);
//! # Ok(()) }
//! ```

mod agent;
mod cancel;
pub mod eval;
mod event;
mod message;
mod mock;
mod model;
pub mod prompt;
mod provider;
mod sampler;
pub mod schema;
mod script;
mod spec;
mod toolbox;
mod window;

pub use agent::{Agent, AgentOptions, TurnEnd};
pub use cancel::CancelToken;
pub use event::{AgentEvent, EventSink, TurnStop};
pub use message::{Content, Message, Role};
pub use mock::MockModel;
pub use model::{
    BoxFuture, DEFAULT_MAX_TOKENS, EventFn, Model, ModelError, ModelEvent, ModelRequest,
    StopReason, ToolCall, ToolSpec, TurnOutput, Usage, complete,
};
pub use provider::anthropic::AnthropicModel;
pub use provider::openai::OpenAiModel;
pub use provider::{ProviderOptions, RetryPolicy};
pub use sampler::ModelSampler;
pub use script::{Expectation, ScriptCall, ScriptTurn, ScriptUsage, ScriptedModel};
pub use spec::{Env, ModelSettings, ProcessEnv, model_from_spec, model_from_spec_with};
pub use toolbox::{HostToolbox, TableView, ToolOutcome, Toolbox, result_text};
pub use window::{DEFAULT_CONTEXT_WINDOW, context_window};
