//! Switchboard's MCP client layer: reach one MCP server, speak 2026-07-28
//! to it (or 2025-11-25 when it is a legacy server), and hand back typed
//! results.
//!
//! It sits on the `wire` crate (messages, framing, `_meta`, error codes) and
//! below the host, which mounts many clients. It knows nothing of policy or
//! of other servers.
//!
//! # Layout
//! - [`transport`]: the [`Transport`] trait (one request to its one
//!   response), the stdio transport ([`StdioTransport`]) and its process
//!   handling; the Streamable HTTP transport lives beside it.
//! - [`Client`] (`client`): ids, `_meta` on every request, timeouts and
//!   cancellation, the era probe and legacy fallback, `resultType` checks,
//!   MRTR, pagination.
//! - [`InputHandler`] (`input`): answers elicitation, sampling and roots
//!   requests; the client declares exactly what it supports.
//! - [`Subscription`] (`subscription`): a `subscriptions/listen` stream.
//! - `client::skills`: the Skills extension: [`Client::list_skills`],
//!   [`Client::get_skill`], [`Client::read_directory`] and verified skill
//!   files ([`Client::fetch_skill_file`], [`SkillFetchError`]).
//! - `task`: the tasks extension: a `tools/call` answered with a task is
//!   polled to its end ([`Client::call_tool`]) or handed to the caller
//!   ([`Client::call_tool_start`], [`ToolCallStart`]).
//! - [`ClientError`] / [`TransportError`] (`error`): what can go wrong.
//! - [`net`]: the TLS set-up and error-chain text the HTTP transport shares
//!   with the OAuth client.
//!
//! OAuth 2.1 is not here: the `switchboard-oauth` crate implements the HTTP
//! transport's [`AuthProvider`] hook on top of this crate's public API.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> Result<(), switchboard_client::ClientError> {
//! use switchboard_client::{RequestOptions, Client, StdioConfig, StdioTransport};
//! use std::time::Duration;
//!
//! let transport =
//!     StdioTransport::spawn(StdioConfig::new("files", "files-server").arg("--root").arg(".")).await?;
//! let client = Client::builder("files", transport)
//!     .timeout(Duration::from_secs(30))
//!     .connect()
//!     .await?;
//! println!("{} speaks {}", client.name(), client.protocol_version());
//! for tool in client.list_all_tools().await?.items {
//!     println!("- {}", tool.name);
//! }
//! let result = client
//!     .call_tool_with("read", None, &RequestOptions::timeout(Duration::from_secs(5)))
//!     .await?;
//! println!("{}", result.joined_text());
//! client.close().await;
//! # Ok(()) }
//! ```

// Errors are the cold path: a few hundred bytes moved on failure cost less
// than an allocation per error, and the variants stay matchable.
#![allow(clippy::result_large_err)]

mod client;
pub mod error;
mod input;
#[cfg(feature = "http")]
pub mod net;
mod options;
mod pending;
mod subscription;
mod task;
pub mod transport;

pub use client::skills::SkillFetchError;
pub use client::{Client, ClientBuilder, Dropped, Listing, ServerDescription, ToolsPage};
pub use error::{ClientError, Source, TransportError};
pub use input::{
    InputAnswer, InputContext, InputError, InputHandler, InputHandlerFn, InputQuestion,
    InputSupport, NoInput, input_handler_fn,
};
/// The TLS configuration HTTP clients of the workspace share (ring; webpki
/// and platform roots), built once per process.
#[cfg(feature = "http")]
pub use net::default_tls;
pub use options::{
    ClientConfig, DEFAULT_MAX_ITEMS, DEFAULT_MAX_TOOL_BYTES, EraPolicy, ProgressSink,
    RequestOptions, Resume, TraceContext,
};
pub use subscription::{Subscription, SubscriptionEnd};
pub use task::{TaskList, ToolCallStart};
#[cfg(feature = "http")]
pub use transport::http::{
    AuthChallenge, AuthProvider, AuthProviderError, AuthRetry, HttpTransport, HttpTransportBuilder,
    StaticAuthorization,
};
pub use transport::sandbox::{
    Confinement, Environment, FsAccess, Mechanism, MechanismState, Sandbox, SandboxStop,
};
pub use transport::stdio::{StdioConfig, StdioTransport};
pub use transport::{
    BoxFuture, EventSink, Incoming, NotificationSink, Outgoing, ToolAnswer, Transport,
};
