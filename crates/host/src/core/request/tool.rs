//! `tools/call` on the governed path: the table routes the model-facing
//! name, then the gate (permission rules, untrusted annotations, pins) and
//! the approver decide, then the breaker, the connection and the server.
//! The model reads every end as a [`CallToolResult`] (the host's own
//! `isError` texts for the ends it chose), with a [`CallReport`] saying
//! what happened.

use std::sync::Arc;

use serde_json::Value;
use switchboard_client::{NotificationSink, RequestOptions};
use switchboard_wire::{CallToolResult, JsonObject, namespaced_tool_name};
use tokio::time::Instant;
use tracing::{info, warn};

use super::failure::{failure, needs_login_text, unreachable};
use super::identity::identity_label;
use super::outcome::{Decision, End, Governed};
use super::resume::TaskResumption;
use super::{CallOptions, Kind, Named, Start, Target};
use crate::approver::{Approval, ApprovalRequest, Approver, NoApprover};
use crate::audit::{Decider, Outcome};
use crate::breaker::Admission;
use crate::config::{Identity, add_allow_rule};
use crate::core::{Host, ServerStatus};
use crate::gate::{self, Verdict};
use crate::permission::{Pattern, Rule, RuleKind};
use crate::pins::PinState;
use crate::table::{TableEntry, ToolTable};
use crate::task::TaskWatch;
use crate::upstream::{Down, Link, Upstream};

/// A call's result with what happened to it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// What the model gets.
    pub result: CallToolResult,
    /// Ok, tool error, denied, timeout, …: as in the audit line.
    pub outcome: Outcome,
    /// Who allowed or denied it.
    pub decided_by: Decider,
    /// The server's question, when `relay_input` ([`CallOptions::request`])
    /// asked for it to be handed back (`result` then only says so).
    pub input_required: Option<Box<switchboard_wire::InputRequiredResult>>,
    /// The gate's question, when the approver handed it back
    /// ([`Approval::Defer`]): the call did not run (outcome
    /// [`Outcome::Asked`]); put it to the user and call again with an
    /// approver holding the answer.
    pub approval_needed: Option<Box<ApprovalRequest>>,
    /// The server's JSON-RPC error, verbatim, when it rejected the call or
    /// the task the call became failed with one (`result` says the same
    /// for a model). A gateway passes a -32021 (a capability its caller
    /// did not declare) on as its own error, and fails a task it handed on
    /// with the error the server's task failed with.
    pub protocol_error: Option<Box<switchboard_wire::ErrorObject>>,
}

impl From<Governed<CallToolResult>> for CallReport {
    fn from(mut governed: Governed<CallToolResult>) -> CallReport {
        let input_required = match &governed.end {
            End::InputRequired(asked) => Some(asked.clone()),
            _ => None,
        };
        let protocol_error = match &governed.end {
            End::Rejected(error, _) => Some(error.clone()),
            _ => None,
        };
        CallReport {
            outcome: governed.outcome(),
            decided_by: governed.decided_by(),
            approval_needed: governed.asked.take(),
            result: model_result(governed.end),
            input_required,
            protocol_error,
        }
    }
}

/// What the model gets: the tool's result, or the host's `isError` text.
fn model_result(end: End<CallToolResult>) -> CallToolResult {
    match end {
        End::Answered(result) => result,
        End::InputRequired(_) => CallToolResult::error(
            "The server asked a question before it can finish this call; it was handed to the caller.",
        ),
        End::Stopped { text, .. } | End::Rejected(_, text) => CallToolResult::error(text),
    }
}

/// What the gate (and the approver) let through.
pub(super) enum Gate {
    /// The call may run.
    Pass,
    /// Denied: the text the model reads.
    Refuse(String),
    /// The approver handed the question back.
    Defer(Box<ApprovalRequest>),
}

/// One `tools/call`: a tool of the table by its model-facing name.
struct CallTool<'a> {
    name: &'a str,
    arguments: Option<JsonObject>,
}

impl Kind for CallTool<'_> {
    type Answer = CallToolResult;
    type Route = Arc<ToolTable>;
    const METHOD: Option<&'static str> = None;
    const OBSERVED: bool = true;

    fn named(&self) -> Named<'_> {
        Named::Tool(self.name)
    }

    fn arguments(&self) -> Option<&JsonObject> {
        self.arguments.as_ref()
    }

    fn refused(&self) -> String {
        format!("{} did not run", self.name)
    }

    fn forbidden(&self, principal: &str, why: &str) -> String {
        forbidden_call(principal, self.name, why)
    }

    async fn route(
        &self,
        host: &Host,
    ) -> Result<(Target, Arc<ToolTable>), Governed<CallToolResult>> {
        if host.is_shut_down() {
            return Err(Governed::unrouted(End::stopped(
                Outcome::Transport,
                "The tool host has shut down; no tool can be called any more.",
            )));
        }
        let table = host.table_for(self.name).await;
        let Some(entry) = table.get(self.name) else {
            return Err(host.not_in_table(self.name, &table));
        };
        let target = Target {
            alias: entry.alias.clone(),
            original: entry.tool.name.clone(),
            by_name: true,
            skill: false,
        };
        Ok((target, table))
    }

    // A future of an `async move` block, not an `async fn`: see
    // `Host::govern`.
    #[allow(clippy::manual_async_fn)]
    fn run(
        self,
        host: &Host,
        (target, table): (Target, Arc<ToolTable>),
        options: &CallOptions,
        (record, started_at): Start<'_>,
    ) -> impl Future<Output = Governed<CallToolResult>> + Send {
        async move {
            let local_name = self.name;
            // A lazy server starts at its first call, before the gate sees
            // the tool: its live definition is the one judged (a change
            // since the pins is flagged as usual).
            let mut table = table;
            if let Some(server) = host.server(&target.alias).filter(|s| s.is_lazy()) {
                if let Err(down) = Box::pin(host.start_lazy(&server)).await {
                    let end = unreachable(&server, local_name, &target.original, &down);
                    return Governed::at(Some(&target), None, end);
                }
                table = host.table();
            }
            let Some(entry) = table.get(local_name) else {
                return host.not_in_table(local_name, &table);
            };
            if let Some(builtin) = host.builtin_of(entry) {
                // Boxed: a rare path kept out of every call's future.
                let call = (local_name, entry, builtin, self.arguments);
                return Box::pin(host.run_builtin(call, &target, options)).await;
            }
            let Some(server) = host.server(&target.alias) else {
                let end = End::stopped(Outcome::UnknownTool, host.unknown_tool(local_name, &table));
                return Governed::at(Some(&target), None, end);
            };
            let new_tools = host.config_read().new_tools;
            let pin = host.pin_of(entry, new_tools);
            let (decision, gate) = host
                .decide(local_name, entry, &pin, self.arguments.as_ref(), options)
                .await;
            let mut asked = None;
            let ran = matches!(gate, Gate::Pass);
            let (end, task_id, retried) = match gate {
                Gate::Refuse(text) => (End::stopped(Outcome::Denied, text), None, false),
                Gate::Defer(request) => {
                    asked = Some(request);
                    let text = format!(
                        "{local_name} needs the user's approval, which has been asked for; the call did not run."
                    );
                    (End::stopped(Outcome::Asked, text), None, false)
                }
                Gate::Pass => {
                    // First approval pins the definition (changed ones wait
                    // for accept).
                    if pin == PinState::Unpinned {
                        if let Err(e) = host.inner.pins.pin(&target.alias, &entry.tool) {
                            warn!(error = %e, tool = %local_name, "could not record the pin");
                        }
                    }
                    // Task statuses reach the progress sink; the task id, the
                    // audit line and whoever wants to resume the call.
                    let started = options.on_task_started.clone().map(|tell| {
                        let resumption = TaskResumption::new(
                            local_name,
                            &target,
                            decision.clone(),
                            started_at,
                            record.cloned(),
                        );
                        Box::new(move |task_id: &str| tell(resumption.with_task(task_id)))
                            as crate::task::OnStarted
                    });
                    let (notifications, task) = crate::task::watch(&server, options, started);
                    let (end, retried) = host
                        .send(
                            &server,
                            (local_name, &target.original),
                            self.arguments,
                            options,
                            (notifications, &task),
                        )
                        .await;
                    (end, task.task_id(), retried)
                }
            };
            let identity = ran
                .then(|| identity_label(&server, options.principal.as_deref()))
                .flatten();
            Governed {
                task_id,
                asked,
                retried,
                identity,
                ..Governed::at(Some(&target), Some(decision), end)
            }
        }
    }
}

/// What the model reads when the caller's `principals` rules refuse a
/// call (`why` names the refusing rule).
pub(super) fn forbidden_call(principal: &str, local_name: &str, why: &str) -> String {
    format!(
        "The gateway's rules do not let {principal} call {local_name} ({why}). \
         Do not retry it; if you need it, tell the user why."
    )
}

impl Host {
    /// Calls a tool by its model-facing name. Never fails: an unknown tool,
    /// a denial, a server that is down or tripped, a timeout, a transport
    /// failure or a protocol error each becomes an `isError` result saying
    /// what happened and what the model can do. A tool's own `isError`
    /// result passes through. Every result fits the shared budget, and one
    /// audit line is written before this returns (except for a task left
    /// running for a resume (`leave_task_on_drop`), when the host shuts
    /// down under it: the resumed call writes it).
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
    // A future of an `async move` block, not an `async fn`: see
    // `Host::govern`.
    #[allow(clippy::manual_async_fn)]
    pub fn call_detailed<'a>(
        &'a self,
        local_name: &'a str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> impl Future<Output = CallReport> + Send + 'a {
        async move {
            let call = CallTool {
                name: local_name,
                arguments,
            };
            self.govern(local_name, call, &options).await.into()
        }
    }

    /// The table to route `local_name` through. When the name is missing
    /// and its server was waiting for a login, which may have been made
    /// since (`switchboard auth login` in another terminal, while a gateway
    /// runs), that server is tried once more first.
    async fn table_for(&self, local_name: &str) -> Arc<ToolTable> {
        let table = self.table();
        if table.get(local_name).is_some() {
            return table;
        }
        let waiting = self
            .server_named_in(local_name)
            .filter(|s| s.state().down.as_ref().is_some_and(Down::auth_required));
        match waiting {
            // Boxed, as in `send`: a rare path kept out of every call's future.
            Some(server) if Box::pin(self.relink(&server, false)).await.is_ok() => self.table(),
            _ => table,
        }
    }

    /// A name that is not in the table. When it carries the `mcp__ALIAS__`
    /// prefix of a configured server that is not up, the answer names that
    /// server and its outage (the longest matching alias wins). This only
    /// explains the failure: a call is routed through the table alone.
    fn not_in_table(&self, local_name: &str, table: &ToolTable) -> Governed<CallToolResult> {
        let unknown = || Governed::unknown(self.unknown_tool(local_name, table));
        let Some(server) = self.server_named_in(local_name) else {
            return unknown();
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
        let end = match status {
            ServerStatus::Up | ServerStatus::NotStarted => return unknown(),
            ServerStatus::Disabled => End::stopped(
                Outcome::UnknownTool,
                format!(
                    "{local_name} would be a tool of server {alias}, which is disabled in the user's configuration. \
                     Use other tools, or tell the user if you need it."
                ),
            ),
            ServerStatus::NeedsLogin => End::stopped(
                Outcome::AuthRequired,
                needs_login_text(&server.config, local_name),
            ),
            ServerStatus::Down if auth_required => End::stopped(
                Outcome::AuthRequired,
                format!(
                    "Server {alias} refused authorization ({reason}), so {local_name} cannot be called. \
                     Tell the user that the server's credentials need attention; do not retry."
                ),
            ),
            ServerStatus::Down => End::stopped(
                Outcome::Transport,
                format!(
                    "Server {alias} is down ({reason}), so {local_name} cannot be called. \
                     Use other tools meanwhile or tell the user; do not retry in a loop."
                ),
            ),
            ServerStatus::Tripped => End::stopped(
                Outcome::Breaker,
                format!(
                    "Server {alias} is paused after repeated failures ({reason}), so {local_name} cannot be called now. \
                     Use other tools meanwhile or tell the user."
                ),
            ),
        };
        Governed {
            alias: Some(alias.to_owned()),
            ..Governed::unrouted(end)
        }
    }

    /// What the model reads for a name that is in no table.
    fn unknown_tool(&self, local_name: &str, table: &ToolTable) -> String {
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
        format!("There is no tool named {local_name:?}.{hint}")
    }

    /// The gate's assessment of a call; a denial is the decision and the
    /// text the model reads.
    pub(super) fn gate_refusal(
        &self,
        local_name: &str,
        entry: &TableEntry,
        pin: &PinState,
    ) -> Result<gate::Assessment, (Decision, String)> {
        let assessment = {
            let config = self.config_read();
            self.assess(&config.rules, entry, pin)
        };
        if assessment.verdict != Verdict::Deny {
            return Ok(assessment);
        }
        let (at, pattern) = assessment.rule.unwrap_or_default();
        let text = format!(
            "The user's permission rules deny calling {local_name} (rule {pattern} at {at}). \
             Do not retry it; if you need it, tell the user why."
        );
        Err((
            Decision::denied_by_rule(Some(at).filter(|at| !at.is_empty())),
            text,
        ))
    }

    /// The gate, and the approver when the gate asks: the decision, and
    /// whether the call may run. The gate is assessed once per call.
    pub(super) async fn decide(
        &self,
        local_name: &str,
        entry: &TableEntry,
        pin: &PinState,
        arguments: Option<&JsonObject>,
        options: &CallOptions,
    ) -> (Decision, Gate) {
        let assessment = match self.gate_refusal(local_name, entry, pin) {
            Ok(assessment) => assessment,
            Err((decision, text)) => return (decision, Gate::Refuse(text)),
        };
        let by_rule = |verdict| Decision {
            verdict,
            decided_by: Decider::Rule,
            rule: assessment.rule.as_ref().map(|r| r.0.clone()),
        };
        // A denial was a refusal: what is left is allow, or ask.
        if assessment.verdict == Verdict::Allow {
            return (by_rule(Verdict::Allow), Gate::Pass);
        }
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
            alias: entry.alias.clone(),
            original_name: entry.tool.name.clone(),
            arguments: args_value_or_empty(arguments),
            reasons: assessment.reasons.clone(),
            diff: assessment.diff.clone(),
            annotations: entry.tool.annotations.clone(),
            suggested_rule: rule_text.clone(),
            config_file: config_file.filter(|_| rule_text_is_persistable(&rule_text)),
            skill: None,
        };
        let approval = approver.approve(&request).await;
        let by_approver = |verdict| Decision {
            verdict,
            decided_by: approver.decider(),
            rule: None,
        };
        match approval {
            Approval::AllowOnce => (by_approver(Verdict::Allow), Gate::Pass),
            Approval::AllowAlways => {
                self.allow_always(entry, &rule_text);
                (by_approver(Verdict::Allow), Gate::Pass)
            }
            Approval::Defer => (by_approver(Verdict::Ask), Gate::Defer(Box::new(request))),
            Approval::Deny(text) => {
                let text = text.unwrap_or_else(|| {
                    format!(
                        "The user declined this call of {local_name}. Do not retry it unless the user asks; \
                         ask them how to proceed or do without it."
                    )
                });
                (by_approver(Verdict::Deny), Gate::Refuse(text))
            }
        }
    }

    /// An allowed call: the breaker, the connection (reconnecting a server
    /// that died), then the call itself with the original name (or the
    /// server's task it became, followed: [`Host::resume_task`]); the
    /// call's notifications (task statuses) go to `notifications`.
    ///
    /// A tool the config's `idempotent` names is sent with an idempotency
    /// key, and sent once more (a fresh request, the same key) when the
    /// connection broke before its answer; the flag says it was.
    pub(super) async fn send(
        &self,
        server: &Arc<Upstream>,
        (local_name, original): (&str, &str),
        arguments: Option<JsonObject>,
        options: &CallOptions,
        (notifications, task): (NotificationSink, &TaskWatch),
    ) -> (End<CallToolResult>, bool) {
        let alias = server.alias();
        let admission = server.breaker().admit(Instant::now());
        if let Admission::Refuse { retry_in, reason } = admission {
            let end = End::stopped(
                Outcome::Breaker,
                format!(
                    "Server {alias} is paused after repeated failures ({}). Calls to its tools are refused for about {} more seconds; \
                     use other tools meanwhile or tell the user.",
                    reason.for_model(alias),
                    retry_in.as_secs().max(1)
                ),
            );
            return (end, false);
        }

        // Counted as running until it ends, for a lazy server's idle stop.
        let _busy = server.busy();
        let mut link = match server.live_link() {
            Some(link) => link,
            // The rare paths (a reconnection, a task followed) are boxed:
            // their state would otherwise be part of every call's future,
            // which is moved as a whole when it is boxed and spawned.
            None => match Box::pin(self.relink(server, false)).await {
                Ok(link) => link,
                Err(down) => return (unreachable(server, local_name, original, &down), false),
            },
        };
        // A server taking each caller's identity gets the call over that
        // identity's own connection, never the mount's.
        let mut identity = None;
        if server.config.identity != Identity::Gateway {
            match Box::pin(self.identity_link(server, Some(&link), options)).await {
                Ok((own, label)) => {
                    link = own;
                    identity = Some(label);
                }
                Err(end) => return (end, false),
            }
        }

        // The caller's request, with the host's timeout unless it gave one,
        // and the host's notification sink in front of its own.
        let timeout = options
            .request
            .timeout
            .unwrap_or_else(|| self.config_read().call_timeout(alias, original));
        let mut client_options = RequestOptions {
            timeout: Some(timeout),
            on_notification: Some(notifications),
            ..options.request.clone()
        };
        // Local policy, never the server's `idempotentHint`, says whether a
        // call may be sent twice.
        let idempotent = options.follow_task.is_none()
            && self
                .config_read()
                .idempotent
                .iter()
                .any(|p| p.matches(alias, original));
        let again = idempotent.then(|| arguments.clone());
        if idempotent && client_options.idempotency_key.is_none() {
            client_options.idempotency_key = Some(fresh_idempotency_key());
        }
        let mut outcome = match &options.follow_task {
            Some(task_id) => Box::pin(link.client.follow_task_with(task_id, &client_options)).await,
            // Boxed: the client's call is the deepest future of every
            // governed call; held inline, each caller up the stack (the
            // run, the governance, the gateway's driver) would carry and
            // move its whole state. Boxed here it is written once.
            None => {
                Box::pin(
                    link.client
                        .call_tool_with(original, arguments, &client_options),
                )
                .await
            }
        };
        let mut retried = false;
        if let (Some(arguments), Err(error)) = (again, &outcome) {
            if broke_before_answer(error) {
                // Boxed: a rare path kept out of every call's future.
                let resent =
                    Box::pin(self.resend(server, original, arguments, (&client_options, options)));
                match resent.await {
                    Ok((l, second)) => {
                        info!(server = %alias, tool = %local_name, error = %error, "the connection broke before the answer; sent once more with the same idempotency key");
                        link = l;
                        outcome = second;
                        retried = true;
                    }
                    Err(down) => {
                        warn!(server = %alias, tool = %local_name, reason = %down.reason, "could not reconnect to retry an idempotent call");
                    }
                }
            }
        }
        // A tasked call runs under the task deadline, not the call timeout.
        let timeout = match task.task_id() {
            Some(_) => self.config_read().task_timeout(alias),
            None => timeout,
        };
        let end = match outcome {
            Ok(result) => {
                server.breaker().record(None, Instant::now());
                let names = (alias, local_name, original);
                End::Answered(self.fit_result(result, names, options.principal.as_deref()))
            }
            Err(switchboard_client::ClientError::InputRequired { result, .. }) => {
                server.breaker().record(None, Instant::now());
                End::InputRequired(result)
            }
            Err(error) => {
                if error.is_auth_failure() {
                    // The server refused the identity's token: the next
                    // call makes a new one.
                    if let Some(label) = &identity {
                        server.identity_links.forget(label);
                    }
                }
                let end = failure(server, &link, (local_name, original), timeout, &error);
                match (error.protocol_error(), end) {
                    (
                        Some(e),
                        End::Stopped {
                            outcome: Outcome::ProtocolError,
                            text,
                            ..
                        },
                    ) => End::Rejected(Box::new(e.clone()), text),
                    (_, end) => end,
                }
            }
        };
        (end, retried)
    }

    /// The second sending of an idempotent call whose connection broke:
    /// on the live connection, or a new one (a process that died is
    /// started again).
    async fn resend(
        &self,
        server: &Arc<Upstream>,
        original: &str,
        arguments: Option<JsonObject>,
        (client_options, options): (&RequestOptions, &CallOptions),
    ) -> Result<
        (
            Link,
            Result<CallToolResult, switchboard_client::ClientError>,
        ),
        Down,
    > {
        let mut link = match server.live_link() {
            Some(link) => link,
            None => self.relink(server, false).await?,
        };
        if server.config.identity != Identity::Gateway {
            // The broken connection was the identity's own: a new one.
            if let Some(label) = identity_label(server, options.principal.as_deref()) {
                server.identity_links.forget(&label);
            }
            link = match self.identity_link::<()>(server, Some(&link), options).await {
                Ok((own, _)) => own,
                Err(_) => {
                    return Err(Down::failed(
                        crate::upstream::summary::NOT_STARTED,
                        crate::reason::Reason::ours(
                            "the connection carrying the caller's identity could not be made again",
                        ),
                    ));
                }
            };
        }
        let outcome = link
            .client
            .call_tool_with(original, arguments, client_options)
            .await;
        Ok((link, outcome))
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
        // The definition the user just approved becomes the pin (a
        // built-in is the host's own: nothing to pin).
        if self.builtin_of(entry).is_none() {
            if let Err(e) = self.inner.pins.pin(&entry.alias, &entry.tool) {
                warn!(error = %e, "could not record the pin");
            }
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

/// Whether a call failed because its connection broke before the answer
/// came (a stream cut, a connection reset or refused, a process gone): the
/// server may or may not have run it.
fn broke_before_answer(error: &switchboard_client::ClientError) -> bool {
    use switchboard_client::{ClientError, TransportError};
    matches!(
        error,
        ClientError::Transport(TransportError::Exchange { .. } | TransportError::Closed { .. })
    )
}

/// A key no other call of this host (or of an earlier run of it) uses:
/// the process, the time it started, and a counter.
fn fresh_idempotency_key() -> String {
    static STARTED: std::sync::LazyLock<u128> = std::sync::LazyLock::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    });
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("sb-{:x}-{:x}-{n:x}", std::process::id(), *STARTED)
}
