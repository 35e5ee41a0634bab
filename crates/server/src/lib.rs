//! The server layer of Switchboard: a framework for writing MCP 2026-07-28
//! servers in Rust, with a stdio runner and a Streamable HTTP runner.
//!
//! Registering a tool is writing an async function: its argument type
//! (`Deserialize + JsonSchema`) gives the input schema, arguments are
//! validated against it (JSON Schema 2020-12, local `$ref` only), and what
//! it returns becomes the result. The framework does the protocol: per
//! request `_meta` and version checks, pagination with signed cursors,
//! multi round-trip requests with signed `requestState`, progress, logs,
//! cancellation, `subscriptions/listen`, caching hints, `serverInfo`, and
//! legacy 2025-11-25 clients (`initialize`, sessions) on the same endpoint.
//!
//! # Layout
//! - [`Server`], [`ServerBuilder`]: what the server offers and its options.
//! - [`ToolSpec`], [`PromptSpec`], [`ResourceSpec`], [`TemplateSpec`]:
//!   descriptions; handlers are plain async functions ([`ToolHandler`], …).
//! - [`Context`]: the request's `_meta`, principal, progress, logs,
//!   cancellation, MRTR answers and state.
//! - [`Outcome`], [`InputRequired`], [`Elicitation`], [`Sampling`]: asking
//!   the client for input (MRTR).
//! - [`Notifier`]: list-changed and resource-updated notifications.
//! - [`StateHandles`]: cross-call state bound to a principal.
//! - [`TaskContext`], [`TaskWork`], [`TaskSupport`]: tools that run as
//!   tasks (the `io.modelcontextprotocol/tasks` extension).
//! - [`SkillSpec`], [`ServerBuilder::skills_dir`]: Agent Skills served
//!   from code or from a directory (the `io.modelcontextprotocol/skills`
//!   extension: `skills/list`, `skills/get`, `resources/directory/read`,
//!   and every skill file readable with `resources/read`).
//! - [`Principal`], [`TokenValidator`], [`ClaimsValidator`],
//!   [`ProtectedResource`]: bearer-token authentication on HTTP (OAuth 2.1
//!   resource server).
//! - [`stdio`], [`http`]: the runners.
//!
//! Its place among the layers: it uses `switchboard-wire` for messages,
//! framing, SSE and header codecs, and knows nothing of the host.
//!
//! # Example
//! ```no_run
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use switchboard_server::{Context, HandlerError, Server};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// First term.
//!     a: i64,
//!     /// Second term.
//!     b: i64,
//! }
//!
//! async fn add(args: Add, ctx: Context) -> Result<String, HandlerError> {
//!     ctx.progress(1.0, Some(1.0), None).await;
//!     let sum = args.a.checked_add(args.b).ok_or_else(|| HandlerError::msg("the sum overflows; use smaller numbers"))?;
//!     Ok(sum.to_string())
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("calculator", "1.0.0")
//!     .tool("add", "Adds two integers", add)
//!     .build()?;
//! switchboard_server::stdio::serve(server).await?;
//! # Ok(()) }
//! ```

mod auth;
mod cancel;
mod completion;
mod context;
mod dispatch;
mod dpop;
mod error;
mod fast;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod idempotency;
mod input;
pub mod jws;
pub mod jwt;
mod legacy;
mod notify;
mod outcome;
mod prompt;
mod resource;
mod runner;
mod schema;
mod seal;
mod server;
mod sink;
mod skill;
mod state;
mod task;
mod tool;
mod uri_template;

pub use auth::{
    AuthError, AuthRequest, BoxFuture, ClaimsValidator, PresentedToken, Principal,
    ProtectedResource, Refusal, TokenValidator,
};
pub use cancel::Cancellation;
pub use completion::{CompleteRequest, CompletionHandler, CompletionRef, IntoCompletion};
pub use context::Context;
pub use dpop::{DpopError, DpopVerifier, ProofTarget};
pub use error::{BuildError, HandlerError, ServeError};
pub use input::InputResponses;
pub use notify::Notifier;
pub use outcome::{Elicitation, InputRequired, Outcome, Sampling};
pub use prompt::{
    IntoPromptResult, PromptHandler, PromptOutcome, PromptResult, PromptSpec, assistant, user,
};
pub use resource::{
    IntoReadResult, ReadOutcome, ReadResult, ResourceHandler, ResourceSpec, TemplateHandler,
    TemplateSpec, blob_contents, text_contents,
};
pub use server::{OfferFilter, Offered, Server, ServerBuilder, ToolFilter};
pub use skill::{SkillSpec, SkillsRelay};
pub use state::{StateHandles, UseLedger};
pub use task::{
    ReplicaDirectory, ReplicaLocation, TaskContext, TaskHandler, TaskSupport, TaskWork, origin_name,
};
pub use tool::{
    IntoToolResult, Json, NoArgs, ToolHandler, ToolOutcome, ToolResult, ToolSpec,
    any_object_schema, markers,
};
pub use uri_template::{TemplateMatch, UriTemplate};

/// The stdio runner: newline-delimited JSON-RPC on stdin/stdout.
pub mod stdio {
    pub use crate::runner::stdio::{StdioOptions, serve, serve_io, serve_with};
}

/// The Streamable HTTP runner.
pub mod http {
    pub use crate::runner::http::{
        AppBody, AppRequest, AppResponse, AppRoute, HttpOptions, PlainResponse, PlainRoute,
        bind_and_serve, serve,
    };
    pub use crate::runner::tls::{ServerTls, TlsError};
}

/// Re-exports of the wire types handlers use most.
pub use switchboard_wire::{
    CallToolResult, ContentBlock, CreateMessageResult, ElicitAction, ElicitResult, GetPromptResult,
    Implementation, LoggingLevel, PromptMessage, ReadResourceResult, ResourceContents,
    ToolAnnotations, types::CacheScope,
};
