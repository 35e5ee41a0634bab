//! The [`Host`] itself: many servers, one governed tool table.
//!
//! - `mod.rs`: the [`Host`] handle, what it reports (tools, servers,
//!   outages, pins) and its errors.
//! - `list`: the model's tool list (no denied tools, approved
//!   definitions only), the full list for people, live server states.
//! - `mount`: mounting, reconnecting, rebuilding the table, shutting down.
//! - `request`: the governed request path every request takes (tool
//!   calls, prompt gets, reads, completions): the caller's limits, the
//!   route, the caller's rules, the kind's gate, the server, one audit
//!   line.
//! - `principal`: callers' `principals` rules, asked by the request path
//!   and by the lists a gateway shows each caller.
//! - `reload`: a new config applied to the running host (servers added,
//!   dropped or replaced; rules and the rest swapped in).
//! - `catalog_sync`: the catalog of prompts, resources and templates kept
//!   in step with the servers (listed, then followed).
//! - `background`: refreshers, `list_changed` listeners and the token-store
//!   watcher.

use std::sync::{Arc, Mutex, RwLock};

use serde::Serialize;
use switchboard_wire::shared::read_lock;
use switchboard_wire::{JsonObject, Tool, ToolAnnotations};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::audit::AuditLog;
use crate::breaker::BreakerStatus;
use crate::budget::Budget;
use crate::config::Config;
use crate::connect::ConnectOptions;
pub(crate) use crate::error::HostError;
use crate::gate::Verdict;
use crate::permission::Pattern;
use crate::pins::{DefKind, PinState, Pins};
use crate::reason::Reason;
use crate::sanitize;
use crate::table::{DroppedTool, TableEntry, ToolTable};
use crate::upstream::{Down, DownCause, Upstream, dropped_of};

mod background;
mod builtin;
mod catalog_sync;
mod lazy;
mod list;
mod mount;
mod offered_text;
mod paging;
mod principal;
mod reload;
mod request;
mod search;
pub(crate) mod skills;

pub use catalog_sync::CHANGED_DEF_NOTICE;
pub use list::{CHANGED_NOTICE, CHANGED_TITLE, ServerState};
pub use mount::MountOptions;
pub use reload::ReloadReport;
pub(crate) use request::identity::IdentityLinks;
pub use request::{
    CallOptions, CallReport, CompletionRef, Named, OfferError, ResourceRef, SkillRef,
    TaskResumption,
};
pub use search::{FoundTool, LoadedTools};

/// A tool as the model sees it, plus where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTool {
    /// The model-facing name.
    pub name: String,
    /// The description the model reads (`[from alias]` + bounded text).
    pub description: String,
    /// The input schema the model reads.
    pub input_schema: JsonObject,
    /// The output schema, as the server sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// The server's alias.
    pub server: String,
    /// The tool's name on the server.
    pub original_name: String,
    /// The server's display title, cleaned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The server's annotations (untrusted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// The server marks the tool deprecated (`_meta`
    /// `dev.switchboard/deprecated`): its replacement and removal date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<switchboard_wire::types::Deprecation>,
    /// Gate, pin and server state.
    pub status: ToolStatus,
}

/// Where a tool stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStatus {
    /// What the gate would do before asking anyone.
    pub gate: Verdict,
    /// `unpinned`, `pinned`, `new` or `changed`.
    pub pin: &'static str,
    /// The server's state: `up`, `down`, `tripped`, `needs_login` or
    /// `disabled`.
    pub server: ServerStatus,
}

/// A server's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    /// Connected (or reachable), breaker closed.
    Up,
    /// Not connected: failed to start, or gone since.
    Down,
    /// The breaker is open after repeated failures.
    Tripped,
    /// `enabled: false` in the config.
    Disabled,
    /// The server wants an OAuth login and no one could log in from here:
    /// run `switchboard auth login ALIAS`.
    NeedsLogin,
    /// A lazy server that is not running: its first call starts it.
    NotStarted,
}

impl ServerStatus {
    /// `up`, `down`, `tripped`, `disabled` or `needs login`, for people.
    pub fn as_words(self) -> &'static str {
        match self {
            ServerStatus::Up => "up",
            ServerStatus::Down => "down",
            ServerStatus::Tripped => "tripped",
            ServerStatus::Disabled => "disabled",
            ServerStatus::NeedsLogin => "needs login",
            ServerStatus::NotStarted => "not started",
        }
    }
}

/// A server, as `switchboard servers` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerReport {
    /// The alias.
    pub alias: String,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// Up, down, tripped or disabled.
    pub status: ServerStatus,
    /// Why it is down or tripped, for people. It can quote the server (an
    /// HTTP body, stderr lines, a JSON-RPC error message): invisible
    /// characters are removed, but nothing marks the quote, so it is not
    /// for a model; [`Host::outage_text`] is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether it is down for want of authorization: it needs an OAuth
    /// login, refused the credentials (401/403), or authorizing failed.
    pub auth_required: bool,
    /// Whether it starts at its first call and stops when idle.
    pub lazy: bool,
    /// Whether its process (or connection) is up now.
    pub running: bool,
    /// Tools it contributes to the table.
    pub tools: usize,
    /// Tools left out, and why.
    pub dropped: Vec<DroppedReport>,
    /// Its last stderr lines (stdio).
    pub stderr_tail: Vec<String>,
    /// Non-JSON stdout lines skipped (stdio).
    pub junk_lines: u64,
    /// The protocol version spoken, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The name the server gives itself: shown, never trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_reported_name: Option<String>,
}

/// A tool left out of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedReport {
    /// Its name on the server.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// How the table changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableChange {
    /// Names that appeared.
    pub added: Vec<String>,
    /// Names that went away.
    pub removed: Vec<String>,
    /// Names whose definition changed.
    pub changed: Vec<String>,
}

/// A tool's pin, as `switchboard pins list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinReport {
    /// What is pinned: `tool`, `prompt` or `resourceTemplate`.
    pub kind: &'static str,
    /// The model-facing name (a template: its `uriTemplate` on the
    /// server).
    pub name: String,
    /// The server's alias.
    pub server: String,
    /// The tool's or prompt's name on the server (a template: its
    /// `uriTemplate`).
    pub original_name: String,
    /// Unpinned, pinned, new, changed with its diff, or removed.
    pub state: PinState,
    /// For a changed or removed tool: breaking or compatible, and why.
    pub change: Option<crate::compat::ChangeClass>,
}

/// Many MCP servers mounted into one governed tool table.
///
/// Cheap to clone; clones share everything.
#[derive(Clone, Debug)]
pub struct Host {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: RwLock<Config>,
    /// The mounted servers, in config order; replaced whole by a reload.
    servers: RwLock<Arc<Vec<Arc<Upstream>>>>,
    table: RwLock<Arc<ToolTable>>,
    /// Tools the last table build left out (listing-level drops).
    dropped: RwLock<Vec<DroppedTool>>,
    pins: Pins,
    audit: Option<AuditLog>,
    /// Hears of every ended call.
    observer: Option<Arc<dyn crate::observe::CallObserver>>,
    budget: Budget,
    connect: ConnectOptions,
    changes: broadcast::Sender<TableChange>,
    /// Switchboard's own tools, `mcp__switchboard__NAME`.
    builtins: crate::builtin::Builtins,
    /// Skills of every server that serves them.
    skills: skills::Skills,
    /// Results over their budget, kept for the session.
    results: crate::results::ResultStore,
    /// The tool search index, rebuilt after table changes.
    search: Mutex<search::SearchCache>,
    /// Prompts, resources and templates beyond the tools.
    offers: catalog_sync::Offers,
    /// Authenticated callers' counts against their limits.
    limiter: Arc<crate::limits::Limiter>,
    /// The calls a minute counted for every replica, when shared.
    shared_limits: Option<Arc<dyn crate::limits::SharedLimits>>,
    /// Serialises table rebuilds.
    rebuild: Mutex<()>,
    /// Refreshers and listeners, stopped at shutdown or drop.
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    shut_down: std::sync::atomic::AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self.tasks.get_mut().map(std::mem::take).unwrap_or_default() {
            task.abort();
        }
    }
}

impl Host {
    /// The servers, in config order, with their state.
    pub fn servers(&self) -> Vec<ServerReport> {
        let table = self.table();
        let dropped = self
            .inner
            .dropped
            .read()
            .map(|d| d.clone())
            .unwrap_or_default();
        self.upstreams()
            .iter()
            .map(|s| {
                let status = self.status_of(s);
                let reason = self.reason(s, status).map(|r| r.plain());
                let state = s.state();
                let description = state.description.clone();
                let auth_required = matches!(status, ServerStatus::Down | ServerStatus::NeedsLogin)
                    && state.down.as_ref().is_some_and(Down::auth_required);
                drop(state);
                ServerReport {
                    alias: s.alias().to_owned(),
                    transport: s.config.transport.kind(),
                    status,
                    reason,
                    auth_required,
                    lazy: s.is_lazy(),
                    running: s.live_link().is_some(),
                    tools: table.of(s.alias()).count(),
                    dropped: dropped_of(&dropped, s.alias())
                        .map(|d| DroppedReport {
                            name: d.name.clone(),
                            reason: d.reason.clone(),
                        })
                        .collect(),
                    stderr_tail: s.stderr_tail(),
                    junk_lines: s.junk_lines(),
                    protocol_version: description.as_ref().map(|d| d.protocol_version.clone()),
                    self_reported_name: description
                        .and_then(|d| d.server_info)
                        .map(|i| sanitize::clean_description(&i.name)),
                }
            })
            .collect()
    }

    /// Outages in plain words, for the model's system prompt (and the
    /// user); `None` when every enabled server is up. What a reason quotes
    /// from a server (an HTTP body, stderr lines, an error message) is
    /// inside boundary markers naming the server, cleaned of invisible
    /// characters (DESIGN.md item 8); the host's own words are outside.
    pub fn outage_text(&self) -> Option<String> {
        self.outages(|s, status| {
            Some(
                self.reason(s, status)
                    .map(|r| r.for_model(s.alias()))
                    .unwrap_or_default(),
            )
        })
    }

    /// [`Host::outage_text`] for a gateway's caller: only the servers
    /// `principal` may reach ([`Host::principal_may_reach`]; every server
    /// for `None`, a caller that did not authenticate), each reason only
    /// the kind of outage in fixed words ([`Host::status_for`]), never what
    /// the server printed or answered.
    pub fn outage_text_for(&self, principal: Option<&str>) -> Option<String> {
        self.outages(|s, status| {
            principal
                .is_none_or(|p| self.principal_may_reach(p, s.alias()))
                .then(|| self.caller_reason(s, status).unwrap_or_default())
        })
    }

    /// The outage lines, one per server that is out and that `reason`
    /// (its reason in words) does not leave out by answering `None`.
    fn outages(
        &self,
        reason: impl Fn(&Upstream, ServerStatus) -> Option<String>,
    ) -> Option<String> {
        let mut lines = Vec::new();
        let table = self.table();
        for s in self.upstreams().iter() {
            let status = self.status_of(s);
            if matches!(status, ServerStatus::Up | ServerStatus::Disabled) {
                continue;
            }
            let alias = s.alias();
            let Some(reason) = reason(s, status) else {
                continue;
            };
            let has_tools = table.of(s.alias()).next().is_some();
            match status {
                ServerStatus::Up | ServerStatus::Disabled | ServerStatus::NotStarted => {}
                ServerStatus::Down if s.state().down.as_ref().is_some_and(Down::auth_required) => {
                    lines.push(format!(
                        "- {alias} refused authorization ({reason}); its tools cannot be called until the user fixes its credentials."
                    ));
                }
                ServerStatus::Down if has_tools => lines.push(format!(
                    "- {alias} is down ({reason}); calls to its tools will fail until it is back."
                )),
                ServerStatus::Down => lines.push(format!(
                    "- {alias} is down ({reason}); its tools are not available."
                )),
                ServerStatus::NeedsLogin => lines.push(format!(
                    "- {alias} {reason}. Its tools are not available until the user has logged in; tell the user so."
                )),
                ServerStatus::Tripped => lines.push(format!(
                    "- {alias} is paused after repeated failures ({reason}); calls to its tools are refused until then."
                )),
            }
        }
        if lines.is_empty() {
            return None;
        }
        Some(format!(
            "Some tool servers are unavailable. Do not retry their tools in a loop; use other tools or tell the user.\n{}",
            lines.join("\n")
        ))
    }

    /// Receives a [`TableChange`] whenever the table changes (a server's
    /// `list_changed`, a refresh after `ttlMs`, a reconnect).
    pub fn subscribe(&self) -> broadcast::Receiver<TableChange> {
        self.inner.changes.subscribe()
    }

    /// The configuration in force (rules include ones added by "allow
    /// always" answers).
    pub fn config(&self) -> Config {
        self.config_read().clone()
    }

    /// The shared result budget, for an agent's own local tools.
    pub fn budget(&self) -> Budget {
        self.inner.budget
    }

    /// The pin state of every server's tool in the table (built-in tools
    /// are the host's own and carry no pins), then of every prompt and
    /// resource template servers offer.
    pub fn pins(&self) -> Vec<PinReport> {
        let mut pins: Vec<PinReport> = self
            .table()
            .entries()
            .iter()
            .filter(|e| e.alias != crate::builtin::ALIAS)
            .map(|e| PinReport {
                kind: "tool",
                name: e.local_name.clone(),
                server: e.alias.clone(),
                original_name: e.tool.name.clone(),
                state: self.inner.pins.state_of(&e.alias, &e.tool, &e.fingerprint),
                change: self.inner.pins.change_of(&e.alias, &e.tool),
            })
            .collect();
        // Pinned tools a server that lists for real no longer serves: a
        // breaking change for whoever relied on them.
        let table = self.table();
        for server in self.upstreams().iter() {
            let listed = {
                let state = server.state();
                state.ever_up && !state.from_pins
            };
            if !listed {
                continue;
            }
            let alias = server.alias();
            for name in self.inner.pins.pinned_names(alias) {
                if table.of(alias).any(|e| e.tool.name == name) {
                    continue;
                }
                pins.push(PinReport {
                    kind: "tool",
                    name: switchboard_wire::namespaced_tool_name(alias, &name),
                    server: alias.to_owned(),
                    original_name: name,
                    state: PinState::Removed,
                    change: Some(crate::compat::ChangeClass::removed()),
                });
            }
        }
        for (alias, kind, key, state) in self.offer_pins() {
            pins.push(PinReport {
                kind: kind.as_str(),
                name: offer_pin_name(&alias, kind, &key),
                server: alias,
                original_name: key,
                state,
                change: None,
            });
        }
        pins
    }

    /// Accepts the current definition of a tool (`mcp__alias__tool`, its
    /// model-facing name), of a prompt (the same form), of a resource
    /// template (its `uriTemplate`), or of everything a server offers (its
    /// alias).
    ///
    /// # Returns
    /// The model-facing names accepted (templates: their `uriTemplate`).
    ///
    /// # Errors
    /// [`HostError::NoMatch`] when nothing matches; [`HostError::PinsIo`] when
    /// the lockfile cannot be written.
    pub fn accept_pins(&self, target: &str) -> Result<Vec<String>, HostError> {
        let table = self.table();
        let pattern = Pattern::parse(target).ok();
        let chosen: Vec<&TableEntry> = table
            .entries()
            .iter()
            .filter(|e| e.alias != crate::builtin::ALIAS)
            .filter(|e| {
                e.local_name == target
                    || e.alias == target
                    || pattern
                        .as_ref()
                        .is_some_and(|p| p.matches(&e.alias, &e.tool.name))
            })
            .collect();
        let offered = self.accept_offer_pins(|alias, kind, key| {
            alias == target
                || offer_pin_name(alias, kind, key) == target
                || (kind == DefKind::Prompt
                    && pattern.as_ref().is_some_and(|p| p.matches(alias, key)))
        })?;
        if chosen.is_empty() && offered.is_empty() {
            return Err(HostError::NoMatch(target.to_owned()));
        }
        let pairs: Vec<(&str, &Tool)> =
            chosen.iter().map(|e| (e.alias.as_str(), &e.tool)).collect();
        if !pairs.is_empty() {
            self.inner.pins.pin_all(&pairs)?;
        }
        let mut accepted: Vec<String> = chosen.iter().map(|e| e.local_name.clone()).collect();
        let offered: Vec<String> = offered
            .iter()
            .map(|(alias, kind, key)| offer_pin_name(alias, *kind, key))
            .collect();
        // What the model reads of them changed (no "changed since" notice).
        if !accepted.is_empty() {
            let _ = self.inner.changes.send(TableChange {
                changed: accepted.clone(),
                ..TableChange::default()
            });
        }
        accepted.extend(offered);
        Ok(accepted)
    }

    /// Whether `principal` is marked `"console": true` in the config
    /// (read under the config's lock, without cloning the config).
    pub fn is_console_principal(&self, principal: &str) -> bool {
        self.config_read().console_principals.contains(principal)
    }

    /// The config's `approvals` section (the console's webhook and how
    /// long a call waits for a decision), without cloning the config.
    pub fn approvals_config(&self) -> crate::ApprovalsConfig {
        self.config_read().approvals.clone()
    }

    /// [`Host::accept_pins`] done by a person named `by` (a console
    /// principal): the same, then one audit line per name accepted, with
    /// method `PINS_ACCEPT_METHOD`, decided by a person,
    /// outcome `ok` and `by` as its `principal`, so the log says who
    /// accepted what. `audit stats` does not count these lines as calls.
    ///
    /// # Errors
    /// As [`Host::accept_pins`]; an audit line that cannot be written is
    /// logged, the acceptance stands.
    pub fn accept_pins_by(&self, target: &str, by: &str) -> Result<Vec<String>, HostError> {
        let accepted = self.accept_pins(target)?;
        if let Some(audit) = &self.inner.audit {
            for name in &accepted {
                let mut record = crate::audit::AuditRecord::new(name, None);
                record.method = Some(crate::audit::PINS_ACCEPT_METHOD.to_owned());
                record.decision = Some("allow".to_owned());
                record.decided_by = crate::audit::Decider::Human;
                record.outcome = crate::audit::Outcome::Ok;
                record.principal = Some(by.to_owned());
                record.replica = audit.replica().map(str::to_owned);
                if let Err(e) = audit.append(&record) {
                    tracing::error!(error = %e, tool = %name, "the audit line of an acceptance could not be written");
                }
            }
        }
        Ok(accepted)
    }

    fn is_shut_down(&self) -> bool {
        self.inner
            .shut_down
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    fn table(&self) -> Arc<ToolTable> {
        self.inner
            .table
            .read()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    fn config_read(&self) -> std::sync::RwLockReadGuard<'_, Config> {
        read_lock(&self.inner.config)
    }

    /// The mounted servers now (a reload replaces the list whole).
    fn upstreams(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.inner
            .servers
            .read()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Whether a call of `local_name` may bring questions from its server
    /// while it runs (a 2025-11-25 server's elicitation or sampling
    /// requests, which go to the call's `call_input` handler). Only a tool
    /// whose server is connected now and speaks 2026-07-28 cannot: such a
    /// server must not send requests (WIRE-13), and the client drops any
    /// it sends. An unknown tool, or a server not connected yet, may.
    pub fn may_ask_during_call(&self, local_name: &str) -> bool {
        let table = self.table();
        let Some(server) = table.get(local_name).and_then(|e| self.server(&e.alias)) else {
            return true;
        };
        let state = server.state();
        !matches!(&state.link, Some(link)
            if !link.is_dead() && link.client.era() == switchboard_wire::Era::Modern)
    }

    fn server(&self, alias: &str) -> Option<Arc<Upstream>> {
        self.upstreams()
            .iter()
            .find(|s| s.alias() == alias)
            .cloned()
    }

    fn server_status(&self, alias: &str) -> ServerStatus {
        match self.server(alias) {
            Some(server) => self.status_of(&server),
            None => ServerStatus::Down,
        }
    }

    fn status_of(&self, server: &Upstream) -> ServerStatus {
        if !server.config.enabled {
            return ServerStatus::Disabled;
        }
        if let BreakerStatus::Tripped { .. } = server.breaker().status(Instant::now()) {
            return ServerStatus::Tripped;
        }
        if server.live_link().is_some() {
            return ServerStatus::Up;
        }
        if server.is_lazy() && server.state().down.is_none() {
            return ServerStatus::NotStarted;
        }
        match server.state().down.as_ref().map(|d| d.cause) {
            Some(DownCause::NeedsLogin) => ServerStatus::NeedsLogin,
            _ => ServerStatus::Down,
        }
    }

    fn reason(&self, server: &Upstream, status: ServerStatus) -> Option<Reason> {
        match status {
            ServerStatus::Up | ServerStatus::NotStarted => None,
            ServerStatus::Disabled => Some(Reason::ours("disabled in the config")),
            ServerStatus::Down | ServerStatus::NeedsLogin => Some(
                server
                    .state()
                    .down
                    .as_ref()
                    .map_or_else(|| Reason::ours("not connected"), |d| d.reason.clone()),
            ),
            ServerStatus::Tripped => match server.breaker().status(Instant::now()) {
                BreakerStatus::Tripped { retry_in, reason } if retry_in.is_zero() => {
                    Some(reason.then_ours("; a probe call is due"))
                }
                BreakerStatus::Tripped { retry_in, reason } => Some(reason.then_ours(format!(
                    "; calls resume in about {} s",
                    retry_in.as_secs().max(1)
                ))),
                BreakerStatus::Closed => None,
            },
        }
    }

    /// Why a server is not up, for a gateway's caller: the kind of outage
    /// in fixed words ([`Down::for_callers`]), and for a paused server when
    /// calls resume; nothing quoted from the server, nothing from the
    /// config.
    fn caller_reason(&self, server: &Upstream, status: ServerStatus) -> Option<String> {
        match status {
            ServerStatus::Up | ServerStatus::NotStarted => None,
            ServerStatus::Disabled => Some("disabled in the config".to_owned()),
            ServerStatus::Down | ServerStatus::NeedsLogin => Some(
                server
                    .state()
                    .down
                    .as_ref()
                    .map_or("not connected", Down::for_callers)
                    .to_owned(),
            ),
            ServerStatus::Tripped => match server.breaker().status(Instant::now()) {
                BreakerStatus::Tripped { retry_in, .. } if retry_in.is_zero() => {
                    Some("repeated failures; a probe call is due".to_owned())
                }
                BreakerStatus::Tripped { retry_in, .. } => Some(format!(
                    "repeated failures; calls resume in about {} s",
                    retry_in.as_secs().max(1)
                )),
                BreakerStatus::Closed => None,
            },
        }
    }

    /// The configured server whose `mcp__ALIAS__` prefix `local_name`
    /// carries (the longest matching alias wins). Only to explain a
    /// failure or retry a waiting server: calls are routed through the
    /// table alone.
    fn server_named_in(&self, local_name: &str) -> Option<Arc<Upstream>> {
        let rest = local_name.strip_prefix(switchboard_wire::naming::PREFIX)?;
        self.upstreams()
            .iter()
            .filter(|s| {
                rest.strip_prefix(s.alias())
                    .is_some_and(|tail| tail.starts_with(switchboard_wire::naming::SEPARATOR))
            })
            .max_by_key(|s| s.alias().len())
            .cloned()
    }
}

/// The name `pins list` and `pins accept` give a prompt (namespaced like a
/// tool) or a resource template (its `uriTemplate` on the server).
fn offer_pin_name(alias: &str, kind: DefKind, key: &str) -> String {
    match kind {
        DefKind::Prompt => switchboard_wire::namespaced_tool_name(alias, key),
        DefKind::ResourceTemplate => key.to_owned(),
    }
}
