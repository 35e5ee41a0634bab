//! Built-in tools: Switchboard's own model-facing tools, served from the
//! host itself under the reserved alias [`ALIAS`] (`switchboard`), so
//! their names are `mcp__switchboard__NAME`.
//!
//! A built-in tool is an ordinary entry of the governed table: listed by
//! [`Host::tools`](crate::Host::tools) (server `switchboard`), callable by
//! [`Host::call`](crate::Host::call) and everything built on it (`switchboard
//! call`, `chat`, `eval`, the gateway), and called through the same request
//! path as a server's tool: the caller's limits, the caller's `principals`
//! rules, the gate (permission rules naming `mcp__switchboard__NAME`, else
//! the tool's own default: [`BuiltinGate`]), one audit line, and the
//! result held to the shared budget. What differs is the last step: the
//! call goes to a handler in this process ([`BuiltinTool::call`]), never to
//! a server, and the handler gets the call's context ([`BuiltinCall`]: the
//! host, the caller's principal and options).
//!
//! Built-ins are registered and unregistered at run time
//! ([`Host::register_builtin`](crate::Host::register_builtin),
//! [`Host::unregister_builtin`](crate::Host::unregister_builtin)); either
//! rebuilds the table, so subscribers ([`Host::subscribe`](crate::Host::subscribe))
//! hear of the change like any other. They are the host's own definitions:
//! never pinned in `switchboard.lock`, never `changed`.
//!
//! A configured server cannot take the alias `switchboard`: the config
//! refuses it, so a server can never stand in for a built-in.

mod results;
mod search;

pub use results::READ_RESULT;
pub(crate) use results::ReadResult;
pub(crate) use search::SearchTools;
pub use search::{DEFAULT_LIMIT, MAX_LIMIT, SEARCH_TOOLS};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use switchboard_wire::shared::{read_lock, write_lock};
use switchboard_wire::{CallToolResult, JsonObject, Tool};

use crate::approver::{ApprovalRequest, BoxFuture};
use crate::audit::Decider;
use crate::core::{CallOptions, Host};
use crate::gate::Verdict;

/// The reserved alias of the built-in tools: their names are
/// `mcp__switchboard__NAME`, and no configured server may use it.
pub const ALIAS: &str = "switchboard";

/// What the gate does with a call of a built-in tool that no permission
/// rule names. A `deny` rule naming the tool always refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuiltinGate {
    /// Runs without asking (a tool that only reads what the host already
    /// shows, such as a tool search); an `ask` rule still asks.
    Allow,
    /// Asks the approver, as for a server's tool; an `allow` rule skips
    /// the question.
    Ask,
    /// The handler asks its own question, about what the call's arguments
    /// name rather than the tool (loading a skill asks about that skill,
    /// bound to its content). Only a `deny` rule naming the tool applies
    /// before the handler; `allow` and `ask` rules on the tool leave the
    /// question to it. Listed as `ask`.
    PerCall,
}

/// One of Switchboard's own tools.
pub trait BuiltinTool: Send + Sync + fmt::Debug {
    /// The definition the model reads: `name` is the name after
    /// `mcp__switchboard__`, with its description and input schema.
    fn definition(&self) -> Tool;

    /// What the gate does when no rule names the tool.
    fn gate(&self) -> BuiltinGate {
        BuiltinGate::Ask
    }

    /// Runs one call that the gate let through. Never fails: a failure is
    /// an `isError` result, or a refusal ([`BuiltinOutcome::denied`]).
    fn call<'a>(&'a self, call: BuiltinCall<'a>) -> BoxFuture<'a, BuiltinOutcome>;
}

/// One call of a built-in tool, as its handler gets it.
#[derive(Debug)]
#[non_exhaustive]
pub struct BuiltinCall<'a> {
    /// The host the call came through (what the handler may look at or
    /// ask for).
    pub host: &'a Host,
    /// The model-facing name (`mcp__switchboard__NAME`).
    pub local_name: &'a str,
    /// The arguments, as the model sent them.
    pub arguments: Option<JsonObject>,
    /// The caller's options: its principal, its approver (for a
    /// [`BuiltinGate::PerCall`] question), the request's options.
    pub options: &'a CallOptions,
}

impl BuiltinCall<'_> {
    /// The authenticated caller, when the call came through a gateway.
    pub fn principal(&self) -> Option<&str> {
        self.options.principal.as_deref()
    }

    /// The string argument `key`.
    ///
    /// # Errors
    /// The text saying it is missing or not a string (for
    /// [`BuiltinOutcome::error`]).
    pub fn string_argument(&self, key: &str) -> Result<&str, String> {
        self.arguments
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("{} needs the string argument {key:?}.", self.local_name))
    }
}

/// The decision a [`BuiltinGate::PerCall`] handler made on its own
/// question, for the audit line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinDecision {
    /// Allow or deny (ask, for a question handed back).
    pub verdict: Verdict,
    /// Who decided.
    pub decided_by: Decider,
    /// Where the deciding rule is written, when a rule decided.
    pub rule: Option<String>,
}

/// How a built-in call ended.
#[derive(Debug)]
pub struct BuiltinOutcome {
    pub(crate) end: BuiltinEnd,
    pub(crate) decision: Option<BuiltinDecision>,
}

// The result is the common end: boxing it would cost every call an
// allocation to save a few hundred bytes on the stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum BuiltinEnd {
    /// The tool's result, `isError` or not.
    Result(CallToolResult),
    /// Refused: the text the model reads.
    Denied(String),
    /// The approver handed the handler's question back.
    Asked(Box<ApprovalRequest>),
}

impl BuiltinOutcome {
    /// The tool's result (outcome `ok`, or `tool_error` for `isError`).
    pub fn result(result: CallToolResult) -> Self {
        BuiltinOutcome {
            end: BuiltinEnd::Result(result),
            decision: None,
        }
    }

    /// An `isError` result saying `text` (outcome `tool_error`).
    pub fn error(text: impl Into<String>) -> Self {
        BuiltinOutcome::result(CallToolResult::error(text.into()))
    }

    /// A refusal by the handler's own question or rules (outcome
    /// `denied`): `text` is what the model reads.
    pub fn denied(text: impl Into<String>) -> Self {
        BuiltinOutcome {
            end: BuiltinEnd::Denied(text.into()),
            decision: None,
        }
    }

    /// The handler's question, handed back by the approver
    /// ([`Approval::Defer`](crate::Approval::Defer)): outcome `asked`, the
    /// question in [`CallReport::approval_needed`](crate::CallReport::approval_needed).
    pub fn asked(request: ApprovalRequest) -> Self {
        BuiltinOutcome {
            end: BuiltinEnd::Asked(Box::new(request)),
            decision: None,
        }
    }

    /// The same outcome, with the decision the handler's own question
    /// came to (recorded in the audit line instead of the tool's gate).
    #[must_use]
    pub fn decided(mut self, decision: BuiltinDecision) -> Self {
        self.decision = Some(decision);
        self
    }
}

/// The registered built-in tools, by name (the part after
/// `mcp__switchboard__`).
#[derive(Debug, Default)]
pub(crate) struct Builtins {
    tools: RwLock<BTreeMap<String, Arc<dyn BuiltinTool>>>,
}

impl Builtins {
    /// Registers `tool` under its definition's name, replacing one of the
    /// same name; the replaced one back.
    pub(crate) fn insert(&self, tool: Arc<dyn BuiltinTool>) -> Option<Arc<dyn BuiltinTool>> {
        let name = tool.definition().name;
        self.write().insert(name, tool)
    }

    /// Unregisters the tool `name`; whether one was registered.
    pub(crate) fn remove(&self, name: &str) -> bool {
        self.write().remove(name).is_some()
    }

    /// The tool registered as `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn BuiltinTool>> {
        self.read().get(name).cloned()
    }

    /// Every registered tool's definition, in name order.
    pub(crate) fn definitions(&self) -> Vec<Tool> {
        self.read().values().map(|t| t.definition()).collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<dyn BuiltinTool>>> {
        read_lock(&self.tools)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<dyn BuiltinTool>>> {
        write_lock(&self.tools)
    }
}
