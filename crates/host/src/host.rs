//! The host: many servers, one governed tool table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use switchboard_client::oauth::OAuthProvider;
use switchboard_client::{ClientError, InputHandler, ProgressSink, TransportError};
use switchboard_wire::{
    CallToolResult, Implementation, JsonObject, Tool, ToolAnnotations, namespaced_tool_name,
};
use tokio::sync::broadcast;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use crate::approver::{Approval, ApprovalRequest, Approver, NoApprover};
use crate::audit::{AuditError, AuditLog, AuditRecord, Decider, Outcome};
use crate::auth::{self, TokenStore, UserAgent};
use crate::breaker::{Admission, BreakerStatus};
use crate::budget::Budget;
use crate::config::{Config, ConfigEditError, add_allow_rule};
use crate::gate::{self, Verdict};
use crate::permission::{Pattern, Rule, RuleKind};
use crate::pins::{PinState, Pins, PinsError};
use crate::reason::Reason;
use crate::sanitize;
use crate::server::{ConnectOptions, Down, DownCause, Link, Server, dropped_of};
use crate::table::{DroppedTool, ServerTools, TableEntry, ToolTable};

/// How many table changes a slow subscriber may fall behind before it
/// misses some (it then sees `Lagged` and should re-read the table).
const CHANGE_BUFFER: usize = 64;

/// How often the token store is looked at for a login made by another
/// process (a stat of one file).
const LOGIN_POLL: Duration = Duration::from_secs(2);

/// Options for [`Host::mount`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MountOptions {
    /// Who the host is to servers (`clientInfo`); the client's default
    /// when `None`.
    pub client_info: Option<Implementation>,
    /// Answers servers' input requests (elicitation, sampling, roots); none
    /// when `None`, and the client declares no such capability.
    pub input_handler: Option<Arc<dyn InputHandler>>,
    /// Time a stdio server gets after stdin closes (and again after
    /// `SIGTERM`) before it is killed at shutdown.
    pub shutdown_grace: Duration,
    /// Where OAuth logins of remote servers are read (and refreshed tokens
    /// saved): by default the per-user store `switchboard auth login`
    /// writes ([`auth::default_token_store`]); `None` keeps tokens in
    /// memory only. The host watches the file: when another process saves
    /// a login, servers waiting for one are connected again.
    pub token_store: Option<TokenStore>,
    /// Who logs in when a remote server wants an OAuth login. `None` (the
    /// default): no one; the server is reported as
    /// [`ServerStatus::NeedsLogin`] until `switchboard auth login ALIAS`
    /// has been run. With one (e.g. a `LoopbackUserAgent`), the host starts
    /// the login itself; a login at mount must then finish within the
    /// server's start-up timeout, and one started by a call within the
    /// call's timeout.
    pub oauth_user_agent: Option<Arc<dyn UserAgent>>,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            client_info: None,
            input_handler: None,
            shutdown_grace: Duration::from_secs(2),
            token_store: auth::default_token_store().ok(),
            oauth_user_agent: None,
        }
    }
}

/// Options for one [`Host::call`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Who answers if the gate asks; without one, questions are denied as
    /// with [`NoApprover`].
    pub approver: Option<Arc<dyn Approver>>,
    /// Receives the call's progress notifications.
    pub progress: Option<ProgressSink>,
}

impl CallOptions {
    /// Options with an approver.
    pub fn approver(approver: impl Approver + 'static) -> Self {
        CallOptions {
            approver: Some(Arc::new(approver)),
            progress: None,
        }
    }

    /// The same options, with a progress sink.
    pub fn with_progress(
        mut self,
        sink: impl Fn(switchboard_wire::ProgressParams) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("approver", &self.approver)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

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
    /// Gate, pin and server state.
    pub status: ToolStatus,
}

/// Where a tool stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStatus {
    /// What the gate would do before asking anyone.
    pub gate: Verdict,
    /// `unpinned`, `pinned` or `changed`.
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

/// A call's result with what happened to it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// What the model gets.
    pub result: CallToolResult,
    /// Ok, tool error, denied, timeout, …: as in the audit line.
    pub outcome: Outcome,
    /// Who allowed or denied it.
    pub decided_by: Decider,
}

/// A tool's pin, as `switchboard pins list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinReport {
    /// The model-facing name.
    pub name: String,
    /// The server's alias.
    pub server: String,
    /// The tool's name on the server.
    pub original_name: String,
    /// Unpinned, pinned, or changed with its diff.
    pub state: PinState,
}

/// What can go wrong in the host's own operations (never in [`Host::call`],
/// which turns every failure into a result).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The lockfile cannot be read or written.
    #[error(transparent)]
    Pins(#[from] PinsError),
    /// The audit log cannot be opened.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The config file cannot be updated.
    #[error(transparent)]
    ConfigEdit(#[from] ConfigEditError),
    /// `pins accept` named nothing that is mounted.
    #[error(
        "no mounted tool or server matches {0:?}; name a tool (mcp__alias__tool) or a server alias"
    )]
    NoMatch(String),
    /// No server has this alias.
    #[error("no server is configured as {0:?}")]
    UnknownServer(String),
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
    servers: Vec<Arc<Server>>,
    table: RwLock<Arc<ToolTable>>,
    /// Tools the last table build left out (listing-level drops).
    dropped: RwLock<Vec<DroppedTool>>,
    pins: Pins,
    audit: Option<AuditLog>,
    budget: Budget,
    connect: ConnectOptions,
    changes: broadcast::Sender<TableChange>,
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
    /// Mounts every enabled server of `config`, in parallel: start-up takes
    /// as long as the slowest server, not the sum. A server that fails to
    /// start, times out or errors is recorded with its reason; the others
    /// mount.
    ///
    /// # Errors
    /// [`HostError`] only for the host's own files: a damaged lockfile or
    /// an audit log that cannot be opened.
    pub async fn mount(config: Config, options: MountOptions) -> Result<Host, HostError> {
        let pins = match &config.lockfile {
            Some(path) => Pins::open(path)?,
            None => Pins::in_memory(),
        };
        let audit = config.audit.as_deref().map(AuditLog::open).transpose()?;
        let uses_oauth = config
            .servers
            .iter()
            .any(|s| s.enabled && auth::oauth_config(s).is_ok());
        // Taken before any server connects, so a login saved meanwhile is
        // noticed.
        let store_seen = match (&options.token_store, uses_oauth) {
            (Some(store), true) => Some((store.path().to_owned(), store_stamp(store.path()).await)),
            (None, true) => {
                debug!("no token store: OAuth logins last for this process only");
                None
            }
            _ => None,
        };
        let servers: Vec<Arc<Server>> = config
            .servers
            .iter()
            .map(|s| {
                let startup = config.startup_timeout(&s.alias);
                let call = s.timeout.unwrap_or(config.timeouts.call);
                let mut s = s.clone();
                s.task_timeout = Some(config.task_timeout(&s.alias));
                Arc::new(Server::new(s, startup, call, config.breaker))
            })
            .collect();
        let inner = Arc::new(Inner {
            budget: Budget::new(config.budget_chars),
            config: RwLock::new(config),
            servers,
            table: RwLock::new(Arc::new(ToolTable::default())),
            dropped: RwLock::new(Vec::new()),
            pins,
            audit,
            connect: ConnectOptions {
                client_info: options.client_info,
                input: options.input_handler,
                shutdown_grace: options.shutdown_grace,
                token_store: options.token_store,
                user_agent: options.oauth_user_agent,
            },
            changes: broadcast::channel(CHANGE_BUFFER).0,
            rebuild: Mutex::new(()),
            tasks: Mutex::new(Vec::new()),
            shut_down: std::sync::atomic::AtomicBool::new(false),
        });

        let mut starts = JoinSet::new();
        for server in inner.servers.iter().filter(|s| s.config.enabled) {
            let server = server.clone();
            let connect = inner.connect.clone();
            starts.spawn(async move {
                let result = server.connect(&connect).await;
                (server, result)
            });
        }
        while let Some(joined) = starts.join_next().await {
            let Ok((server, result)) = joined else {
                continue;
            };
            match result {
                Ok((link, listing)) => {
                    info!(server = %server.alias(), tools = listing.items.len(), "mounted");
                    server.set_up(link, listing);
                }
                Err(down) => {
                    warn!(server = %server.alias(), reason = %down.reason, "server is down");
                    server.set_down(down);
                }
            }
        }
        let host = Host { inner };
        host.rebuild_table();
        for server in &host.inner.servers {
            host.start_refresher(server);
            host.start_listener(server);
        }
        if let Some((path, seen)) = store_seen {
            let task = tokio::spawn(login_watcher(Arc::downgrade(&host.inner), path, seen));
            host.tasks().push(task.abort_handle());
        }
        Ok(host)
    }

    /// The tools the model sees, in name order.
    ///
    /// Servers whose listing's `ttlMs` has passed are refreshed in the
    /// background; [`Host::subscribe`] reports the result.
    pub fn tools(&self) -> Vec<ModelTool> {
        self.wake_stale();
        let table = self.table();
        let config = self.config_read();
        table
            .entries()
            .iter()
            .map(|e| {
                let pin = self.inner.pins.state_of(&e.alias, &e.tool, &e.fingerprint);
                let gate = gate::assess(&config.rules, &e.alias, &e.tool, &pin).verdict;
                ModelTool {
                    name: e.local_name.clone(),
                    description: match pin {
                        PinState::Changed { .. } => format!(
                            "[changed since the user approved it: the user will be asked before it runs] {}",
                            e.description
                        ),
                        _ => e.description.clone(),
                    },
                    input_schema: e.input_schema.clone(),
                    output_schema: e.tool.output_schema.clone(),
                    server: e.alias.clone(),
                    original_name: e.tool.name.clone(),
                    title: e
                        .tool
                        .title
                        .as_deref()
                        .map(sanitize::clean_description),
                    annotations: e.tool.annotations.clone(),
                    status: ToolStatus {
                        gate,
                        pin: pin.as_str(),
                        server: self.server_status(&e.alias),
                    },
                }
            })
            .collect()
    }

    /// The servers, in config order, with their state.
    pub fn servers(&self) -> Vec<ServerReport> {
        let table = self.table();
        let dropped = self
            .inner
            .dropped
            .read()
            .map(|d| d.clone())
            .unwrap_or_default();
        self.inner
            .servers
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
        let mut lines = Vec::new();
        let table = self.table();
        for s in &self.inner.servers {
            let status = self.status_of(s);
            let alias = s.alias();
            let reason = self
                .reason(s, status)
                .map(|r| r.for_model(alias))
                .unwrap_or_default();
            let has_tools = table.of(s.alias()).next().is_some();
            match status {
                ServerStatus::Up | ServerStatus::Disabled => {}
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

    /// The pin state of every tool in the table.
    pub fn pins(&self) -> Vec<PinReport> {
        self.table()
            .entries()
            .iter()
            .map(|e| PinReport {
                name: e.local_name.clone(),
                server: e.alias.clone(),
                original_name: e.tool.name.clone(),
                state: self.inner.pins.state_of(&e.alias, &e.tool, &e.fingerprint),
            })
            .collect()
    }

    /// Accepts the current definition of a tool (`mcp__alias__tool`, its
    /// model-facing name) or of every tool of a server (its alias).
    ///
    /// # Returns
    /// The model-facing names accepted.
    ///
    /// # Errors
    /// [`HostError::NoMatch`] when nothing matches; [`HostError::Pins`] when
    /// the lockfile cannot be written.
    pub fn accept_pins(&self, target: &str) -> Result<Vec<String>, HostError> {
        let table = self.table();
        let pattern = Pattern::parse(target).ok();
        let chosen: Vec<&TableEntry> = table
            .entries()
            .iter()
            .filter(|e| {
                e.local_name == target
                    || e.alias == target
                    || pattern
                        .as_ref()
                        .is_some_and(|p| p.matches(&e.alias, &e.tool.name))
            })
            .collect();
        if chosen.is_empty() {
            return Err(HostError::NoMatch(target.to_owned()));
        }
        let pairs: Vec<(&str, &Tool)> =
            chosen.iter().map(|e| (e.alias.as_str(), &e.tool)).collect();
        self.inner.pins.pin_all(&pairs)?;
        Ok(chosen.iter().map(|e| e.local_name.clone()).collect())
    }

    /// Tries to (re)connect a server now, e.g. one that was down at mount.
    ///
    /// # Errors
    /// [`HostError::UnknownServer`] for an alias not in the config; a
    /// failure to connect is not an error: see [`Host::servers`].
    pub async fn reconnect(&self, alias: &str) -> Result<(), HostError> {
        let server = self
            .server(alias)
            .ok_or_else(|| HostError::UnknownServer(alias.to_owned()))?;
        let _ = self.relink(&server, true).await;
        Ok(())
    }

    /// Calls a tool by its model-facing name. Never fails: an unknown tool,
    /// a denial, a server that is down or tripped, a timeout, a transport
    /// failure or a protocol error each becomes an `isError` result saying
    /// what happened and what the model can do. A tool's own `isError`
    /// result passes through. Every result fits the shared budget, and one
    /// audit line is written before this returns.
    pub async fn call(
        &self,
        local_name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> CallToolResult {
        self.call_detailed(local_name, arguments, options)
            .await
            .result
    }

    /// [`Host::call`], also saying what happened (the audit line's
    /// outcome and decider), e.g. for a CLI's exit code.
    pub async fn call_detailed(
        &self,
        local_name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> CallReport {
        let started = Instant::now();
        // Without a log, nothing about the arguments is worked out.
        let mut record = match &self.inner.audit {
            Some(_) => AuditRecord::for_arguments(local_name, arguments.as_ref()),
            None => AuditRecord::untimed(local_name),
        };
        let result = self
            .call_inner(local_name, arguments, &options, &mut record)
            .await;
        record.is_error = result.is_error();
        record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(audit) = &self.inner.audit {
            if let Err(e) = audit.append(&record) {
                error!(error = %e, tool = %local_name, "the audit line could not be written");
            }
        }
        CallReport {
            result,
            outcome: record.outcome,
            decided_by: record.decided_by,
        }
    }

    async fn call_inner(
        &self,
        local_name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
        record: &mut AuditRecord,
    ) -> CallToolResult {
        if self.is_shut_down() {
            record.outcome = Outcome::Transport;
            return host_error("The tool host has shut down; no tool can be called any more.");
        }
        let mut table = self.table();
        if table.get(local_name).is_none() {
            // A server that was waiting for a login may have got one since
            // (`switchboard auth login` in another terminal, while a
            // gateway runs): it is tried once more before the call fails.
            let waiting = self
                .server_named_in(local_name)
                .filter(|s| s.state().down.as_ref().is_some_and(Down::auth_required));
            if let Some(server) = waiting {
                if self.relink(&server, false).await.is_ok() {
                    table = self.table();
                }
            }
        }
        let Some(entry) = table.get(local_name) else {
            return self.not_in_table(local_name, &table, record);
        };
        let alias = entry.alias.clone();
        let original = entry.tool.name.clone();
        record.alias = Some(alias.clone());
        record.original_tool = Some(original.clone());
        let Some(server) = self.server(&alias) else {
            record.outcome = Outcome::UnknownTool;
            return self.unknown_tool(local_name, &table);
        };

        // The gate.
        let pin = self
            .inner
            .pins
            .state_of(&alias, &entry.tool, &entry.fingerprint);
        let assessment = {
            let config = self.config_read();
            gate::assess(&config.rules, &alias, &entry.tool, &pin)
        };
        match assessment.verdict {
            Verdict::Deny => {
                record.decision = Some("deny".into());
                record.decided_by = Decider::Rule;
                record.rule = assessment.rule.as_ref().map(|r| r.0.clone());
                record.outcome = Outcome::Denied;
                let (at, pattern) = assessment.rule.unwrap_or_default();
                return host_error(&format!(
                    "The user's permission rules deny calling {local_name} (rule {pattern} at {at}). \
                     Do not retry it; if you need it, tell the user why."
                ));
            }
            Verdict::Allow => {
                record.decision = Some("allow".into());
                record.decided_by = Decider::Rule;
                record.rule = assessment.rule.as_ref().map(|r| r.0.clone());
            }
            Verdict::Ask => {
                let approver: Arc<dyn Approver> = options
                    .approver
                    .clone()
                    .unwrap_or_else(|| Arc::new(NoApprover));
                let rule_text = self.allow_rule_text(entry);
                let config_file = {
                    let config = self.config_read();
                    config.origin.path().map(|p| p.display().to_string())
                };
                let request = ApprovalRequest {
                    local_name: local_name.to_owned(),
                    alias: alias.clone(),
                    original_name: original.clone(),
                    arguments: args_value_or_empty(arguments.as_ref()),
                    reasons: assessment.reasons.clone(),
                    diff: assessment.diff.clone(),
                    annotations: entry.tool.annotations.clone(),
                    suggested_rule: rule_text.clone(),
                    config_file: config_file.filter(|_| rule_text_is_persistable(&rule_text)),
                };
                let approval = approver.approve(&request).await;
                record.decided_by = approver.decider();
                match approval {
                    Approval::AllowOnce => record.decision = Some("allow".into()),
                    Approval::AllowAlways => {
                        record.decision = Some("allow".into());
                        self.allow_always(entry, &rule_text);
                    }
                    Approval::Deny(text) => {
                        record.decision = Some("deny".into());
                        record.outcome = Outcome::Denied;
                        return host_error(&text.unwrap_or_else(|| {
                            format!(
                                "The user declined this call of {local_name}. Do not retry it unless the user asks; \
                                 ask them how to proceed or do without it."
                            )
                        }));
                    }
                }
            }
        }
        // First approval pins the definition (changed ones wait for accept).
        if pin == PinState::Unpinned {
            if let Err(e) = self.inner.pins.pin(&alias, &entry.tool) {
                warn!(error = %e, tool = %local_name, "could not record the pin");
            }
        }

        // The breaker.
        let admission = server.breaker().admit(Instant::now());
        if let Admission::Refuse { retry_in, reason } = admission {
            record.outcome = Outcome::Breaker;
            return host_error(&format!(
                "Server {alias} is paused after repeated failures ({}). Calls to its tools are refused for about {} more seconds; \
                 use other tools meanwhile or tell the user.",
                reason.for_model(&alias),
                retry_in.as_secs().max(1)
            ));
        }

        // The connection (reconnecting a server that died).
        let link = match server.live_link() {
            Some(link) => link,
            None => match self.relink(&server, false).await {
                Ok(link) => link,
                Err(down) if down.cause == DownCause::NeedsLogin => {
                    record.outcome = Outcome::AuthRequired;
                    return host_error(&needs_login_text(&alias, local_name));
                }
                Err(down) if down.auth_required() => {
                    record.outcome = Outcome::AuthRequired;
                    let original = sanitize::inline_name(&original);
                    return host_error(&format!(
                        "Server {alias} refused authorization: {}. Its tool {original} could not be called; \
                         tell the user that the server's credentials need attention.",
                        down.reason.for_model(&alias)
                    ));
                }
                Err(down) => {
                    server.breaker().record(Some(&down.reason), Instant::now());
                    record.outcome = Outcome::Transport;
                    let original = sanitize::inline_name(&original);
                    return host_error(&format!(
                        "Server {alias} is not available: {}. Its tool {original} could not be called; \
                         use other tools or tell the user.",
                        down.reason.for_model(&alias)
                    ));
                }
            },
        };

        // The call, with the original name.
        let timeout = self.config_read().call_timeout(&alias, &original);
        let mut client_options = switchboard_client::CallOptions::timeout(timeout);
        client_options.on_progress = options.progress.clone();
        let (sink, task) = crate::task::watch(&server, options.progress.clone());
        client_options.on_notification = Some(sink);
        let outcome = link
            .client
            .call_tool_with(&original, arguments, &client_options)
            .await;
        record.task_id = task.task_id();
        // A tasked call runs under the task deadline, not the call timeout.
        let timeout = match &record.task_id {
            Some(_) => self.config_read().task_timeout(&alias),
            None => timeout,
        };
        let result = match outcome {
            Ok(result) => {
                server.breaker().record(None, Instant::now());
                record.outcome = if result.is_error() {
                    Outcome::ToolError
                } else {
                    Outcome::Ok
                };
                let tool_name = local_name.to_owned();
                let alias_for_wrap = alias.clone();
                return self.inner.budget.apply_with(result, move |text| {
                    sanitize::wrap(
                        &alias_for_wrap,
                        Some(&tool_name),
                        &sanitize::strip_invisible(&text),
                    )
                });
            }
            Err(e) => e,
        };
        self.failure(
            &server, &link, local_name, &original, timeout, result, record,
        )
    }

    // One argument per thing the message names; grouping them would only
    // move the list elsewhere.
    #[allow(clippy::too_many_arguments)]
    fn failure(
        &self,
        server: &Arc<Server>,
        link: &Link,
        local_name: &str,
        original: &str,
        timeout: Duration,
        error: ClientError,
        record: &mut AuditRecord,
    ) -> CallToolResult {
        let alias = server.alias();
        let now = Instant::now();
        // The server chose this name: shown inline, it must carry no markers.
        let original = &sanitize::inline_name(original);
        // Authorization first: a login that is needed, or a refusal.
        if error.is_auth_failure() {
            record.outcome = Outcome::AuthRequired;
            // The server answered: it is alive.
            server.breaker().record(None, now);
            if link.auth.as_ref().is_some_and(OAuthProvider::needs_login) {
                server.set_down(Down::needs_login(alias));
                return host_error(&needs_login_text(alias, local_name));
            }
            // A 403 may be about this one tool; anything else about them all.
            let status = error
                .transport_error()
                .and_then(TransportError::http_status);
            if status != Some(403) {
                server.set_down(Down {
                    reason: Reason::quoted(error.to_string()),
                    cause: DownCause::Unauthorized,
                });
            }
            return host_error(&format!(
                "Server {alias} refused to authorize the call of {original}: {}. \
                 Tell the user that the server's credentials need attention; do not retry.",
                untrusted(alias, &error.to_string())
            ));
        }
        if error.is_timeout() {
            record.outcome = Outcome::Timeout;
            server.breaker().record(
                Some(&Reason::ours(format!(
                    "timed out after {} ms",
                    timeout.as_millis()
                ))),
                now,
            );
            return host_error(&format!(
                "{local_name} (tool {original} on server {alias}) did not answer within {} ms and was cancelled. \
                 It may still have had effects. Retry at most once, with smaller input if you can.",
                timeout.as_millis()
            ));
        }
        if let Some(transport) = error.transport_error() {
            record.outcome = Outcome::Transport;
            let reason = Reason::quoted(transport.to_string());
            server.breaker().record(Some(&reason), now);
            let said = reason.for_model(alias);
            if transport.is_closed() {
                server.set_down(Down::failed(reason));
            }
            return host_error(&format!(
                "Server {alias} could not complete the call of {original}: {said}. \
                 Use other tools meanwhile or tell the user."
            ));
        }
        // The server answered: it is alive, whatever it said.
        server.breaker().record(None, now);
        record.outcome = Outcome::ProtocolError;
        let advice = match error.code() {
            Some(-32602) => "Check the arguments against the tool's input schema and try again.",
            Some(-32601) => "The server does not know this method; do not retry.",
            Some(_) => "The server failed to handle the call; retrying is unlikely to help.",
            None => "The server's answer was not valid; retrying is unlikely to help.",
        };
        host_error(&format!(
            "Server {alias} rejected the call of {original} with a protocol error: {}. {advice}",
            untrusted(alias, &error.to_string())
        ))
    }

    /// Stops every server (stdio: close stdin, wait, SIGTERM, SIGKILL to
    /// the whole process group) and every background task. Calls after
    /// this return an `isError` result.
    pub async fn shutdown(&self) {
        self.inner
            .shut_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let tasks = self
            .inner
            .tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in tasks {
            task.abort();
        }
        let mut closing = JoinSet::new();
        for server in &self.inner.servers {
            let link = server.state().link.take();
            if let Some(link) = link {
                closing.spawn(async move { link.client.close().await });
            }
        }
        while closing.join_next().await.is_some() {}
        debug!("host shut down");
    }

    // ---- internals -------------------------------------------------------

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
        self.inner
            .config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn server(&self, alias: &str) -> Option<Arc<Server>> {
        self.inner
            .servers
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

    fn status_of(&self, server: &Server) -> ServerStatus {
        if !server.config.enabled {
            return ServerStatus::Disabled;
        }
        if let BreakerStatus::Tripped { .. } = server.breaker().status(Instant::now()) {
            return ServerStatus::Tripped;
        }
        if server.live_link().is_some() {
            return ServerStatus::Up;
        }
        match server.state().down.as_ref().map(|d| d.cause) {
            Some(DownCause::NeedsLogin) => ServerStatus::NeedsLogin,
            _ => ServerStatus::Down,
        }
    }

    fn reason(&self, server: &Server, status: ServerStatus) -> Option<Reason> {
        match status {
            ServerStatus::Up => None,
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

    /// A name that is not in the table. When it carries the `mcp__ALIAS__`
    /// prefix of a configured server that is not up, the answer names that
    /// server and its outage (the longest matching alias wins). This only
    /// explains the failure: a call is routed through the table alone.
    fn not_in_table(
        &self,
        local_name: &str,
        table: &ToolTable,
        record: &mut AuditRecord,
    ) -> CallToolResult {
        let Some(server) = self.server_named_in(local_name) else {
            record.outcome = Outcome::UnknownTool;
            return self.unknown_tool(local_name, table);
        };
        let alias = server.alias();
        let status = self.status_of(&server);
        let reason = self
            .reason(&server, status)
            .map(|r| r.for_model(alias))
            .unwrap_or_default();
        let auth_required = server
            .state()
            .down
            .as_ref()
            .is_some_and(Down::auth_required);
        let (outcome, text) = match status {
            ServerStatus::Up => {
                record.outcome = Outcome::UnknownTool;
                return self.unknown_tool(local_name, table);
            }
            ServerStatus::Disabled => (
                Outcome::UnknownTool,
                format!(
                    "{local_name} would be a tool of server {alias}, which is disabled in the user's configuration. \
                     Use other tools, or tell the user if you need it."
                ),
            ),
            ServerStatus::NeedsLogin => {
                (Outcome::AuthRequired, needs_login_text(alias, local_name))
            }
            ServerStatus::Down if auth_required => (
                Outcome::AuthRequired,
                format!(
                    "Server {alias} refused authorization ({}), so {local_name} cannot be called. \
                     Tell the user that the server's credentials need attention; do not retry.",
                    reason
                ),
            ),
            ServerStatus::Down => (
                Outcome::Transport,
                format!(
                    "Server {alias} is down ({}), so {local_name} cannot be called. \
                     Use other tools meanwhile or tell the user; do not retry in a loop.",
                    reason
                ),
            ),
            ServerStatus::Tripped => (
                Outcome::Breaker,
                format!(
                    "Server {alias} is paused after repeated failures ({}), so {local_name} cannot be called now. \
                     Use other tools meanwhile or tell the user.",
                    reason
                ),
            ),
        };
        record.alias = Some(alias.to_owned());
        record.outcome = outcome;
        host_error(&text)
    }

    /// The configured server whose `mcp__ALIAS__` prefix `local_name`
    /// carries (the longest matching alias wins). Only to explain a
    /// failure or retry a waiting server: calls are routed through the
    /// table alone.
    fn server_named_in(&self, local_name: &str) -> Option<Arc<Server>> {
        let rest = local_name.strip_prefix(switchboard_wire::naming::PREFIX)?;
        self.inner
            .servers
            .iter()
            .filter(|s| {
                rest.strip_prefix(s.alias())
                    .is_some_and(|tail| tail.starts_with(switchboard_wire::naming::SEPARATOR))
            })
            .max_by_key(|s| s.alias().len())
            .cloned()
    }

    fn unknown_tool(&self, local_name: &str, table: &ToolTable) -> CallToolResult {
        let names: Vec<&str> = table
            .entries()
            .iter()
            .map(|e| e.local_name.as_str())
            .collect();
        let hint = match crate::config::did_you_mean(local_name, &names) {
            Some(n) => format!(" Did you mean {n}?"),
            None if names.is_empty() => " No tools are available right now.".into(),
            None => " Use one of the tools in your tool list.".into(),
        };
        host_error(&format!("There is no tool named {local_name:?}.{hint}"))
    }

    /// The allow rule for one tool: its model-facing name, unless that name
    /// carries a collision suffix (then the original name).
    fn allow_rule_text(&self, entry: &TableEntry) -> String {
        if entry.local_name == namespaced_tool_name(&entry.alias, &entry.tool.name) {
            entry.local_name.clone()
        } else {
            format!("mcp__{}__{}", entry.alias, entry.tool.name)
        }
    }

    fn allow_always(&self, entry: &TableEntry, rule_text: &str) {
        // The definition the user just approved becomes the pin.
        if let Err(e) = self.inner.pins.pin(&entry.alias, &entry.tool) {
            warn!(error = %e, "could not record the pin");
        }
        // Only a rule naming exactly this tool is ever added.
        let Some(pattern) = Pattern::parse(rule_text).ok().filter(Pattern::is_exact) else {
            return;
        };
        let path = self
            .config_read()
            .origin
            .path()
            .map(std::path::Path::to_path_buf);
        if let Some(path) = path {
            if let Err(e) = add_allow_rule(&path, rule_text) {
                warn!(error = %e, "could not write the allow rule; it holds for this session only");
            }
        }
        if let Ok(mut config) = self.inner.config.write() {
            config.rules.push(Rule {
                kind: RuleKind::Allow,
                pattern,
                source: "permissions.allow (added by allow always)".into(),
            });
        }
    }

    /// Reconnects a server whose connection is gone. `force` reconnects
    /// even a server that is up.
    async fn relink(&self, server: &Arc<Server>, force: bool) -> Result<Link, Down> {
        let _guard = server.connecting.lock().await;
        if !force {
            if let Some(link) = server.live_link() {
                return Ok(link);
            }
        }
        if self.is_shut_down() {
            return Err(Down::failed(Reason::ours("the host has shut down")));
        }
        match server.connect(&self.inner.connect).await {
            Ok((link, listing)) => {
                info!(server = %server.alias(), "reconnected");
                let old = server.state().link.take();
                if let Some(old) = old {
                    old.client.close().await;
                }
                server.set_up(link.clone(), listing);
                self.rebuild_table();
                self.start_listener(server);
                Ok(link)
            }
            Err(down) => {
                server.set_down(down.clone());
                Err(down)
            }
        }
    }

    fn wake_stale(&self) {
        let now = Instant::now();
        for server in &self.inner.servers {
            if server.is_stale(now) {
                server.refresh.notify_one();
            }
        }
    }

    /// Builds the table from every server's tools and tells subscribers
    /// what changed.
    fn rebuild_table(&self) {
        let _guard = self
            .inner
            .rebuild
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let snapshots: Vec<(String, Vec<Tool>, bool)> = self
            .inner
            .servers
            .iter()
            .filter(|s| s.config.enabled)
            .filter_map(|s| {
                let state = s.state();
                state.ever_up.then(|| {
                    (
                        s.alias().to_owned(),
                        state.tools.clone(),
                        !matches!(
                            s.config.transport,
                            crate::config::TransportConfig::Stdio { .. }
                        ),
                    )
                })
            })
            .collect();
        let inputs: Vec<ServerTools<'_>> = snapshots
            .iter()
            .map(|(alias, tools, http)| ServerTools {
                alias,
                tools,
                check_headers: *http,
            })
            .collect();
        let (table, mut dropped) = ToolTable::build(&inputs);
        for server in &self.inner.servers {
            dropped.extend(server.state().header_drops.iter().cloned());
        }
        let old = self.table();
        let change = diff_tables(&old, &table);
        if let Ok(mut t) = self.inner.table.write() {
            *t = Arc::new(table);
        }
        if let Ok(mut d) = self.inner.dropped.write() {
            *d = dropped;
        }
        if change != TableChange::default() {
            let _ = self.inner.changes.send(change);
        }
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<tokio::task::AbortHandle>> {
        let mut tasks = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tasks.retain(|t| !t.is_finished());
        tasks
    }

    /// Starts a server's refresher: one task for the life of the host.
    fn start_refresher(&self, server: &Arc<Server>) {
        if !server.config.enabled || self.is_shut_down() {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let srv = server.clone();
        let task = tokio::spawn(refresher(weak, srv));
        self.tasks().push(task.abort_handle());
    }

    /// Starts a listener on the server's current connection when it offers
    /// list-changed notifications (modern servers; legacy ones send them
    /// unsolicited, and the client hands them to the refresher).
    fn start_listener(&self, server: &Arc<Server>) {
        if self.is_shut_down() {
            return;
        }
        let Some(link) = server.live_link() else {
            return;
        };
        let offers = server
            .state()
            .description
            .as_ref()
            .and_then(|d| d.capabilities.tools.as_ref())
            .and_then(|t| t.list_changed)
            == Some(true);
        if offers && link.client.era() == switchboard_wire::Era::Modern {
            let task = tokio::spawn(listener(link.client.clone(), Arc::downgrade(server)));
            self.tasks().push(task.abort_handle());
        }
    }
}

/// When the token store changes (`switchboard auth login` in another
/// process, while a gateway runs), retries every server that is down for
/// want of authorization; one that comes up joins the table and
/// subscribers hear of its tools.
async fn login_watcher(host: Weak<Inner>, path: PathBuf, mut seen: Option<StoreStamp>) {
    loop {
        tokio::time::sleep(LOGIN_POLL).await;
        let now = store_stamp(&path).await;
        if now == seen {
            continue;
        }
        seen = now;
        let Some(inner) = host.upgrade() else {
            return;
        };
        let host = Host { inner };
        let waiting: Vec<Arc<Server>> = host
            .inner
            .servers
            .iter()
            .filter(|s| s.config.enabled && s.live_link().is_none())
            .filter(|s| s.state().down.as_ref().is_some_and(Down::auth_required))
            .cloned()
            .collect();
        for server in waiting {
            match host.relink(&server, false).await {
                Ok(_) => {
                    info!(server = %server.alias(), "authorized with a login from the token store")
                }
                Err(down) => {
                    debug!(server = %server.alias(), reason = %down.reason, "still not authorized")
                }
            }
        }
    }
}

/// When and how big the token store file is; `None` while it does not
/// exist.
type StoreStamp = (std::time::SystemTime, u64);

async fn store_stamp(path: &Path) -> Option<StoreStamp> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Refreshes a server's tools whenever woken (list_changed, stale TTL).
async fn refresher(host: Weak<Inner>, server: Arc<Server>) {
    let alias = server.alias().to_owned();
    loop {
        server.refresh.notified().await;
        let Some(inner) = host.upgrade() else {
            return;
        };
        let host = Host { inner };
        let Some(link) = server.live_link() else {
            continue;
        };
        match link.client.list_all_tools().await {
            Ok(listing) => {
                debug!(server = %alias, tools = listing.items.len(), "refreshed the tool list");
                server.set_tools(listing);
                host.rebuild_table();
            }
            Err(e) => warn!(server = %alias, error = %e, "refreshing the tool list failed"),
        }
    }
}

/// Keeps a `subscriptions/listen` stream open for `tools/list_changed`,
/// re-opening it (and refreshing, in case a change was missed) when it
/// drops.
async fn listener(client: switchboard_client::Client, server: Weak<Server>) {
    let filter = switchboard_wire::SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let mut backoff = Duration::from_millis(500);
    let mut first = true;
    loop {
        match client.listen(filter.clone()).await {
            Ok(mut sub) => {
                backoff = Duration::from_millis(500);
                if !first {
                    if let Some(s) = server.upgrade() {
                        s.refresh.notify_one();
                    }
                }
                first = false;
                while let Some(n) = sub.next().await {
                    if n.method == switchboard_wire::types::method::TOOLS_LIST_CHANGED {
                        match server.upgrade() {
                            Some(s) => s.refresh.notify_one(),
                            None => return,
                        }
                    }
                }
            }
            Err(e) if e.is_closed() => return,
            Err(e) if e.code() == Some(-32601) => {
                debug!(error = %e, "the server offers no listen stream; relying on unsolicited notifications");
                return;
            }
            Err(e) => debug!(error = %e, "opening the listen stream failed"),
        }
        if server.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(60));
    }
}

fn diff_tables(old: &ToolTable, new: &ToolTable) -> TableChange {
    let old_names: BTreeMap<&str, &TableEntry> = old
        .entries()
        .iter()
        .map(|e| (e.local_name.as_str(), e))
        .collect();
    let new_names: BTreeSet<&str> = new
        .entries()
        .iter()
        .map(|e| e.local_name.as_str())
        .collect();
    let mut change = TableChange::default();
    for e in new.entries() {
        match old_names.get(e.local_name.as_str()) {
            None => change.added.push(e.local_name.clone()),
            Some(o) if o.tool != e.tool || o.alias != e.alias => {
                change.changed.push(e.local_name.clone());
            }
            Some(_) => {}
        }
    }
    for name in old_names.keys() {
        if !new_names.contains(name) {
            change.removed.push((*name).to_owned());
        }
    }
    change
}

fn host_error(text: &str) -> CallToolResult {
    CallToolResult::error(text)
}

/// What the model reads when a server needs the user to log in.
fn needs_login_text(alias: &str, local_name: &str) -> String {
    format!(
        "Server {alias} needs the user to log in (OAuth) before its tools, {local_name} among them, can be called. \
         Tell the user to run `{}`; do not retry before they have.",
        auth::login_command(alias)
    )
}

/// Server-supplied text (an outage reason quoting stderr or an HTTP body)
/// inside boundary markers.
fn untrusted(alias: &str, text: &str) -> String {
    sanitize::wrap(alias, None, &sanitize::strip_invisible(text))
}

fn args_value_or_empty(arguments: Option<&JsonObject>) -> Value {
    arguments.map_or_else(
        || Value::Object(JsonObject::new()),
        |a| Value::Object(a.clone()),
    )
}

fn rule_text_is_persistable(rule: &str) -> bool {
    Pattern::parse(rule).is_ok_and(|p| p.is_exact())
}
