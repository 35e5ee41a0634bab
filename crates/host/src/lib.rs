//! The host layer of Switchboard: many MCP servers mounted into one
//! governed tool table, as a library for the CLI, the gateway and other
//! Rust agents.
//!
//! Load a [`Config`], [`Host::mount`] it, give the model [`Host::tools`] and
//! [`Host::outage_text`], run its calls through [`Host::call`] (which never
//! fails: every failure is an `isError` result the model can read), follow
//! [`Host::subscribe`] for table changes, and [`Host::shutdown`] at the end.
//!
//! # Layout
//! - [`connect`]: reaching one configured server (spawn or HTTP, headers,
//!   OAuth, era probe): what the host mounts with, and what `doctor` and
//!   `inspect` use to look at a server directly.
//! - [`config`]: the config file (Claude / VS Code shapes, `${VAR}`
//!   expansion, lookup order, validation, "allow always" edits).
//! - `permission`: `mcp__alias__tool` patterns and allow/ask/deny rules.
//! - [`gate`]: the verdict for one call (rules, untrusted annotations, pins).
//! - [`approver`]: who answers when the gate asks (prompt, `--yes`, no one).
//! - [`input`]: servers' questions (elicitation, sampling, roots) answered
//!   through a front end's [`Asker`] and [`Sampler`].
//! - [`table`]: namespaced names and the reverse map.
//! - [`catalog`]: prompts, resources and templates of every server under
//!   model-facing names and URIs ([`Host::catalog`]); getting, reading and
//!   completing them ([`Host::get_prompt`], [`Host::read_resource`],
//!   [`Host::complete`]) takes the same governed path as a tool call.
//! - [`sanitize`]: invisible characters, HTML comments, boundary markers.
//! - [`search`]: the tool search index (BM25F, identifiers split, stems,
//!   a thesaurus) behind `tools --search` and
//!   `mcp__switchboard__search_tools`.
//! - [`skills`]: skills served by servers (the Skills extension): the
//!   registry by alias and URI, their status against the lockfile, the
//!   verified-content cache, and the built-in tools that load them.
//! - [`tokens`]: token estimates of tool definitions, and when the table
//!   is deferred ([`ToolSearch`]).
//! - [`pins`]: the `switchboard.lock` rug-pull guard.
//! - [`compat`]: deprecation notes and breaking/compatible change classes.
//! - `budget` (private; [`Budget`] is re-exported): the shared truncation
//!   budget.
//! - `results` (private): results over their budget kept for the session, read
//!   on by `mcp__switchboard__read_result`.
//! - [`builtin`]: Switchboard's own tools (`mcp__switchboard__NAME`),
//!   handlers in the host on the same governed path as servers' tools.
//! - [`audit`]: the hash-chained audit log and its verifier.
//! - `observe` (private; [`CallObserver`], [`CallEvent`] and
//!   [`TraceContext`] are re-exported): the call observer (metrics, traces)
//!   and trace context.
//! - [`audit_stats`]: per-tool calls, error rate and p50/p95 durations
//!   from the audit log.
//! - [`auth`]: OAuth for remote servers (which servers use it, their
//!   `oauth` settings, the per-user token store, "needs login").
//! - `breaker`, `upstream`, `core`: per-server health, connections and the
//!   [`Host`] itself, with the governed request path every request takes
//!   (the caller's limits, the route, the caller's `principals` rules, the
//!   gate, the server, one audit line).
//!
//! Below the host sits `switchboard-client` (one client per server); the
//! host knows nothing of wire details beyond tool definitions and results.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use switchboard_host::{AssumeYes, CallOptions, Config, Host, MountOptions};
//!
//! let config = Config::load(None, || {
//!     Err(switchboard_host::ConfigProblems {
//!         file: "(none)".into(),
//!         problems: Vec::new(),
//!     }
//!     .into())
//! })?;
//! let host = Host::mount(config, MountOptions::default()).await?;
//! for tool in host.tools() {
//!     println!("{}: {}", tool.name, tool.description);
//! }
//! if let Some(outages) = host.outage_text() {
//!     println!("{outages}");
//! }
//! let result = host
//!     .call("mcp__notes__search", None, CallOptions::approver(AssumeYes))
//!     .await;
//! println!("{} (error: {})", result.joined_text(), result.is_error());
//! host.shutdown().await;
//! # Ok(()) }
//! ```

pub mod approver;
pub mod audit;
pub mod audit_stats;
pub mod auth;
mod breaker;
mod budget;
pub mod builtin;
pub mod catalog;
pub mod compat;
pub mod config;
pub mod connect;
mod core;
mod digest;
mod error;
mod form;
mod fsutil;
pub mod gate;
pub mod input;
mod limits;
mod observe;
mod permission;
pub mod pins;
mod reason;
mod results;
pub mod sanitize;
pub mod search;
pub mod secret;
pub mod skills;
pub mod table;
mod task;
pub mod tokens;
mod upstream;

pub use approver::{
    Approval, ApprovalRequest, Approver, AssumeYes, NoApprover, PromptApprover, SkillQuestion,
};
pub use audit::{
    AuditLog, AuditRecord, CallInFlight, Decider, Outcome, Rotation as AuditRotation,
    VerifyProblem, VerifyReport, archives_of as audit_archives, verify as verify_audit,
};
pub use budget::Budget;
pub use builtin::{BuiltinCall, BuiltinDecision, BuiltinGate, BuiltinOutcome, BuiltinTool};
pub use catalog::{Catalog, OfferChange};
pub use config::{
    ApprovalsConfig, Config, ConfigLoader, ConfigOrigin, ConfigProblems, EvalsConfig, Identity,
    IdentityProviderConfig, NewTools, OAuthClientConfig, OAuthSetting, ServerConfig, ServerIdp,
    TransportConfig,
};
pub use core::{
    CHANGED_DEF_NOTICE, CHANGED_NOTICE, CHANGED_TITLE, CallOptions, CallReport, CompletionRef,
    DroppedReport, FoundTool, Host, LoadedTools, ModelTool, MountOptions, Named, OfferError,
    PinReport, ReloadReport, ResourceRef, ServerReport, ServerState, ServerStatus, SkillRef,
    TableChange, TaskResumption, ToolStatus,
};
pub use error::HostError;
pub use form::{Choice, FieldKind, Form, FormField};
pub use gate::Verdict;
pub use input::{
    Asker, ElicitAnswer, Elicitation, ElicitationKind, HostInput, Sampler, SamplingRequest,
};
pub use limits::{CallLimits, LimitsOverride, SharedAdmission, SharedEntry, SharedLimits};
pub use observe::{CallEvent, CallObserver, TraceContext};
pub use permission::{Pattern, PatternError, Rule, RuleKind};
pub use pins::{DefKind, PinState, SkillPinState};
pub use skills::{SkillReport, SkillStatus};
pub use switchboard_client::{ProgressSink, Resume};
pub use tokens::ToolSearch;
