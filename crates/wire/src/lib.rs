//! The wire layer of Switchboard: what MCP 2026-07-28 looks like on the
//! wire, with no I/O.
//!
//! Everything here is pure: bytes and JSON in, messages and bytes out. The
//! `client` and `server` crates own the sockets, processes and tasks; this
//! crate owns the rules they share, so each rule is written once.
//!
//! # Layout
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope ([`Message`], [`RequestId`]).
//! - [`error_code`]: the error codes MCP defines ([`ErrorCode`]).
//! - [`meta`]: `_meta` keys and the per-request metadata ([`RequestMeta`]).
//! - [`types`]: MCP result, params and content types, unknown members
//!   kept; the ones every embedder uses are re-exported here too.
//! - [`version`]: protocol revisions and eras.
//! - [`framing`]: newline framing for stdio ([`LineFramer`]).
//! - [`cursor`]: the in-place reader of the hot paths' messages.
//! - [`scan`]: the id of an answer too long or too deep to parse
//!   ([`scan::response_id`]).
//! - [`sse`]: the `text/event-stream` decoder and encoder ([`SseDecoder`]).
//! - [`header`]: HTTP header mirroring, the `=?base64?…?=` codec and
//!   `x-mcp-header`.
//! - [`naming`]: namespaced tool names ([`namespaced_tool_name`]).
//! - [`tasks`]: the tasks extension (`io.modelcontextprotocol/tasks`):
//!   [`tasks::Task`], its statuses and the `tasks/*` params.
//! - [`skills`]: the Skills extension (`io.modelcontextprotocol/skills`):
//!   [`Skill`] entries, `sha256:` digests and the checks a host makes on
//!   skill content before using it ([`SkillError`]).
//! - [`frontmatter`]: the YAML frontmatter of a `SKILL.md`, as JSON.
//! - [`shared`]: [`BoxFuture`], a poison-tolerant [`shared::lock`] and the
//!   Unix clock, for every crate above.
//!
//! # Example
//! ```
//! use switchboard_wire::{Message, Request, RequestMeta, version};
//!
//! let mut params = Some(serde_json::json!({ "name": "search" }));
//! RequestMeta::new(version::LATEST).apply(&mut params);
//! let line = Message::from(Request::new(1, "tools/call", params)).to_line();
//! let back = Message::from_slice(&line[..line.len() - 1]).unwrap();
//! assert_eq!(back.method(), Some("tools/call"));
//! ```

pub mod cursor;
pub mod error_code;
pub mod framing;
pub mod frontmatter;
pub mod header;
pub mod json_text;
pub mod jsonrpc;
pub mod meta;
pub mod naming;
pub mod percent;
pub mod scan;
pub mod shared;
pub mod skills;
pub mod sse;
pub mod tasks;
pub mod types;
pub mod version;

pub use error_code::{ErrorCode, UnsupportedVersionData};
pub use framing::{FrameError, LineFramer};
pub use jsonrpc::{
    ErrorObject, Message, MessageError, Notification, Request, RequestId, Response, SharedMeta,
};
pub use meta::{LoggingLevel, MetaError, RequestMeta};
pub use naming::{is_valid_alias, namespaced_tool_name};
pub use shared::BoxFuture;
pub use skills::{
    GetSkillResult, ListSkillsResult, ReadDirectoryResult, Sha256Digest, Skill, SkillError,
    SkillResource, SkillResources, SkillsCapability,
};
pub use sse::{SseDecoder, SseEvent};
/// The MCP types an embedder meets on every call: what a server offers,
/// what a call returns, what a server asks of the client, and the
/// capabilities and identity exchanged at start. Everything else (list
/// params, cache hints, notifications' params, …) is under [`types`].
pub use types::{
    CallToolResult, ClientCapabilities, CompleteResult, Completion, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, GetPromptResult, Implementation, InputRequiredResult, JsonObject,
    ListRootsResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Root, ServerCapabilities, Tool, ToolAnnotations,
};
pub use version::Era;
