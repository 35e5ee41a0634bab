//! The host layer of Switchboard: many MCP servers mounted into one
//! governed tool table, as a library for the CLI, the gateway and other
//! Rust agents.
//!
//! Load a [`Config`], [`Host::mount`] it, give the model [`Host::tools`] and
//! [`Host::outage_text`], run its calls through [`Host::call`] (which never
//! fails: every failure is an `isError` result the model can read), follow
//! [`Host::subscribe`] for table changes, and [`Host::shutdown`] at the end.
//!
//! # Public surface
//! Every module is private; this root names what an embedder uses, so
//! the layout inside can change without breaking one. By task:
//! - build a host from config: [`Config`] and its parts ([`ServerConfig`],
//!   [`TransportConfig`], [`Rule`], [`LimitsOverride`]…, problems as
//!   [`ConfigProblems`]), [`Host::mount`] with [`MountOptions`], one
//!   error type [`HostError`]; the file format is [`config_format`];
//! - call: [`CallOptions`] for tools, prompts, resources, completions and
//!   skills, with [`Catalog`] naming what the servers offer;
//! - approve and answer: [`Approver`] (with [`AssumeYes`],
//!   [`PromptApprover`], [`NoApprover`]), servers' questions through
//!   [`Asker`] and [`Sampler`] in a [`HostInput`], the gate's [`Verdict`];
//! - audit and observe: [`AuditLog`], [`verify_audit`], [`audit_stats`],
//!   [`CallObserver`];
//! - pins, search and skills reports: [`Pins`], [`Host::search_tools`]
//!   over a [`SearchIndex`], [`SkillReport`];
//! - Switchboard's own tools: [`BuiltinTool`] and the names under
//!   [`BUILTIN_ALIAS`];
//! - what a front end shows or does beside the host (the CLI's `doctor`,
//!   `inspect`, `auth`, `tools`): [`connect`] one server directly, the
//!   OAuth helpers ([`oauth_config`], [`login_command`], [`TokenStore`]),
//!   the model's view of a tool ([`model_view`], [`tool_tokens`],
//!   [`wrap_untrusted`]).
//!
//! Inside, the request path runs through `core` (the [`Host`], the
//! caller's limits, the route, the caller's `principals` rules, the gate,
//! the server, one audit line); `upstream` and `breaker` hold each
//! server's connection and health; `permission`, `gate`, `pins`, `budget`,
//! `sanitize`, `table`, `catalog`, `search`, `skills` and `audit` are the
//! pieces the path calls. Below the host sits `switchboard-client` (one
//! client per server).
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

mod approver;
mod audit;
mod audit_stats;
mod auth;
mod breaker;
mod budget;
mod builtin;
mod catalog;
mod compat;
mod config;
mod connect;
mod core;
mod digest;
mod error;
mod form;
mod fsutil;
mod gate;
mod input;
mod limits;
mod observe;
mod permission;
mod pins;
mod reason;
mod results;
mod sanitize;
mod search;
mod secret;
mod skills;
mod table;
mod task;
mod tokens;
mod upstream;

#[doc = include_str!("config/format.md")]
pub mod config_format {}

// Building a host from config.
pub use budget::Budget;
pub use config::{
    ApprovalsConfig, AssertionConfig, BreakerConfig, Config, ConfigLoader, ConfigOrigin,
    ConfigProblem, ConfigProblems, EvalsConfig, Identity, IdentityProviderConfig, ModelConfig,
    NewTools, OAuthClientConfig, OAuthSetting, ProblemKind, ServerConfig, ServerIdp, SkillsConfig,
    Timeouts, ToolSettings, TransportConfig,
};
pub use core::{
    DroppedReport, Host, MountOptions, ReloadReport, ServerReport, ServerState, ServerStatus,
    TableChange, ToolStatus,
};
pub use error::HostError;
pub use limits::{CallLimits, LimitsOverride, SharedAdmission, SharedEntry, SharedLimits};
pub use permission::{Pattern, PatternError, Rule, RuleKind};
pub use secret::{ConfigValue, SecretError, SecretRef};
pub use tokens::ToolSearch;

// Calling tools, prompts, resources and completions.
pub use catalog::{
    Catalog, OfferChange, OfferedPrompt, OfferedResource, OfferedTemplate, ServerOffer,
};
pub use core::{
    CallOptions, CallReport, CompletionRef, ModelTool, Named, OfferError, ResourceRef, SkillRef,
    TaskResumption,
};
pub use switchboard_client::{ProgressSink, Resume};

// Approvals and servers' questions.
pub use approver::{
    Approval, ApprovalRequest, Approver, AssumeYes, NoApprover, PromptApprover, SkillQuestion,
};
pub use form::{Choice, FieldKind, Form, FormField};
pub use gate::{Assessment, Verdict, assess as assess_tool};
pub use input::{
    Asker, ElicitAnswer, Elicitation, ElicitationKind, HostInput, Sampler, SamplingRequest,
    root as root_of, sampled_text,
};
pub use switchboard_wire::BoxFuture;

// Audit and observation.
pub use audit::{
    AuditLog, AuditRecord, CallInFlight, Decider, Outcome, Rotation as AuditRotation,
    VerifyProblem, VerifyReport, archives_of as audit_archives, verify as verify_audit,
};
pub use audit_stats::{
    AuditStats, Figures, PrincipalStats, SkippedLine, ToolStats, stats as audit_stats,
    stats_of_file as audit_stats_of_file, stats_of_files as audit_stats_of_files,
};
pub use observe::{CallEvent, CallObserver, TraceContext};

// Pins, search and skills.
pub use core::{
    CHANGED_DEF_NOTICE, CHANGED_NOTICE, CHANGED_TITLE, FoundTool, LoadedTools, PinReport,
};
pub use pins::{DefKind, PinState, Pins, SkillPinState};
pub use search::evaluation::{CatalogueTool, QueryCase};
pub use search::{Document as SearchDocument, FieldWeights, Hit as SearchHit, SearchIndex};
pub use skills::cache::encode as skill_cache_name;
pub use skills::{ALLOWED_TOOLS_IGNORED, SkillReport, SkillStatus, skill_id};

// Switchboard's own tools.
pub use builtin::{
    ALIAS as BUILTIN_ALIAS, BuiltinCall, BuiltinDecision, BuiltinGate, BuiltinOutcome, BuiltinTool,
    DEFAULT_LIMIT as SEARCH_TOOLS_DEFAULT_LIMIT, MAX_LIMIT as SEARCH_TOOLS_MAX_LIMIT, READ_RESULT,
    SEARCH_TOOLS,
};

// Beside the host: one server reached directly, OAuth logins, the
// model's view of a tool.
pub use auth::{
    NoOAuth, TokenStore, default_token_store, idp_login_config, login_command, needs_login_reason,
    oauth_config, principal_login_command,
};
pub use compat::{ChangeClass, deprecation_note};
pub use connect::{ConnectError, ConnectOptions, Connection, connect, stdio_config};
pub use sanitize::{
    CLOSE_TAG, HIDDEN_NOTICE, OPEN_TAG, Shown, is_invisible, model_description, show_arguments,
    show_invisible, wrap as wrap_untrusted,
};
pub use table::{
    DescriptionLimits, DroppedTool, Listed, ServerTools, TableEntry, ToolTable, model_view,
};
pub use tokens::{estimate as estimate_tokens, tool_tokens};
