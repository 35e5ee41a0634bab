//! The governed call: the table, the gate, the breaker, the connection and
//! the server, in that order. Each step either hands on or ends the call;
//! the end is one [`CallOutcome`], from which both the audit line and the
//! model's text are derived.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_client::{ClientError, NotificationSink, RequestOptions, TransportError};
use switchboard_oauth::OAuthProvider;
use switchboard_wire::{CallToolResult, ErrorCode, JsonObject, namespaced_tool_name};
use tokio::time::Instant;
use tracing::{error, warn};

use super::{Host, ServerStatus};
use crate::approver::{Approval, ApprovalRequest, Approver, NoApprover};
use crate::audit::{AuditRecord, Decider, Outcome};
use crate::auth;
use crate::breaker::Admission;
use crate::config::{ServerConfig, add_allow_rule};
use crate::gate::{self, Verdict};
use crate::observe::CallEvent;
use crate::permission::{Pattern, Rule, RuleKind};
use crate::pins::PinState;
use crate::reason::Reason;
use crate::sanitize;
use crate::table::{TableEntry, ToolTable};
use crate::task::TaskWatch;
use crate::upstream::{Down, DownCause, Link, Upstream};

/// Options for one [`Host::call`] (and the other requests the host
/// governs).
///
/// What reaches the server's client is [`CallOptions::request`], handed
/// down as it is: a new per-request option is a field of
/// [`RequestOptions`] alone. The host adds to it only what it owns: the
/// timeout when none is given (the config's, per server and tool), and its
/// own sink for the call's notifications in front of
/// [`RequestOptions::on_notification`] (to follow a task the call becomes).
/// The other fields are the host's: who approves, who calls, and what
/// picks a task up again.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// The request as the server's client sends it:
    /// - `timeout`: `None` for the config's (`timeoutMs`, per-tool
    ///   timeouts);
    /// - `on_progress`: the call's progress, and the status messages of a
    ///   task it becomes;
    /// - `on_notification`: every notification about the call (a task's
    ///   `notifications/tasks`, the server's log messages); without it,
    ///   log messages go to the host's log;
    /// - `relay_input` and `resume`: a question of the server (an MRTR
    ///   `input_required`) ends the call with
    ///   [`CallReport::input_required`] instead of going to the mount-time
    ///   input handler, and the answers come with the retry (a front end
    ///   relaying questions to its own client);
    /// - `task_input`, `call_input`: who answers the questions of a task
    ///   the call becomes, or of a legacy (2025-11-25) server during the
    ///   call, instead of the host's input handler;
    /// - `capabilities`: the capabilities of the client the server's
    ///   questions are relayed to; a modern server is told only of the
    ///   questions both it and the host can answer (so it may refuse with
    ///   -32021, in [`CallReport::protocol_error`]);
    /// - `trace`: the W3C trace context the downstream request carries;
    ///   observers see it too ([`CallEvent::trace`]);
    /// - `leave_task_on_drop`: leaves the server's task running when the
    ///   call is dropped before the task ended, for [`Host::resume_task`]
    ///   to pick up later.
    pub request: RequestOptions,
    /// Who answers if the gate asks; without one, questions are denied as
    /// with [`NoApprover`].
    pub approver: Option<Arc<dyn Approver>>,
    /// Who is calling, when the call comes through an authenticated
    /// gateway: its `principals` rules narrow what it may call, its limits
    /// count the call, and the audit line names it.
    pub principal: Option<String>,
    /// Told once the server has made the call a task: what picks the call
    /// up again ([`Host::resume_task`]) if whoever follows it stops first
    /// (a gateway restarting).
    pub on_task_started: Option<Arc<dyn Fn(TaskResumption) + Send + Sync>>,
    /// The server's task to follow instead of calling the tool (set by
    /// [`Host::resume_task`]).
    follow_task: Option<String>,
}

/// What picks a call the server made a task up again after whoever
/// followed it stopped (a gateway restarting): the tool, where it went,
/// the gate's decision, the server's task id and the start of the call's
/// audit line. Handed out through [`CallOptions::on_task_started`],
/// serializable (a gateway seals it into its own task id), and taken back
/// by [`Host::resume_task`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResumption {
    tool: String,
    alias: String,
    original_tool: String,
    task_id: String,
    decision: Decision,
    /// When the call started, in Unix milliseconds.
    started_ms: u64,
    /// The audit line as it stood when the call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record: Option<AuditRecord>,
}

impl TaskResumption {
    /// The model-facing tool name of the call.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The server's task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The server's alias.
    pub fn alias(&self) -> &str {
        &self.alias
    }
}

impl CallOptions {
    /// Options with an approver.
    pub fn approver(approver: impl Approver + 'static) -> Self {
        CallOptions {
            approver: Some(Arc::new(approver)),
            ..CallOptions::default()
        }
    }

    /// The same options, for a call made by `principal`.
    #[must_use]
    pub fn with_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The same options, with a progress sink.
    #[must_use]
    pub fn with_progress(
        mut self,
        sink: impl Fn(switchboard_wire::ProgressParams) + Send + Sync + 'static,
    ) -> Self {
        self.request.on_progress = Some(Arc::new(sink));
        self
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("request", &self.request)
            .field("approver", &self.approver)
            .field("principal", &self.principal)
            .field("on_task_started", &self.on_task_started.is_some())
            .field("follow_task", &self.follow_task)
            .finish()
    }
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
    /// The server's question, when `relay_input` ([`CallOptions::request`]) asked for
    /// it to be handed back (`result` then only says so).
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

/// What one governed call came to. The audit line ([`CallOutcome::record`])
/// and the model's result ([`CallOutcome::into_result`]) are both derived
/// from it, so they cannot disagree.
#[derive(Debug)]
pub(crate) struct CallOutcome {
    /// The server's alias, once the name led to one.
    alias: Option<String>,
    /// The tool's name on the server, once the table gave it.
    original: Option<String>,
    /// The gate's decision, once one was made.
    decision: Option<Decision>,
    /// The task the server turned the call into (the tasks extension).
    task_id: Option<String>,
    /// The question handed back by the approver ([`Approval::Defer`]).
    asked: Option<Box<ApprovalRequest>>,
    /// How the call ended.
    end: End,
}

/// What the gate (and the approver) let through.
enum Gate {
    /// The call may run.
    Pass,
    /// Denied: the text the model reads.
    Refuse(String),
    /// The approver handed the question back.
    Defer(Box<ApprovalRequest>),
}

/// The gate's decision on one call (a question is answered by then).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Decision {
    /// [`Verdict::Allow`] or [`Verdict::Deny`].
    verdict: Verdict,
    /// Who decided.
    decided_by: Decider,
    /// Where the deciding rule is written, when a rule decided.
    rule: Option<String>,
}

/// How a call ended.
// The answered variant is the common one: boxing it would cost every call
// an allocation to save a few hundred bytes on the stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum End {
    /// The server ran the tool: its result (wrapped, within the budget),
    /// `isError` or not.
    Answered(CallToolResult),
    /// The server asked a question, handed back to the caller.
    InputRequired(Box<switchboard_wire::InputRequiredResult>),
    /// The host ended the call: what happened, and what the model reads.
    Stopped {
        /// As in the audit line.
        outcome: Outcome,
        /// For the model: what happened and what it can do.
        text: String,
    },
    /// The server answered with a JSON-RPC error (or its task failed with
    /// one): the error, and the text a model reads.
    Rejected(Box<switchboard_wire::ErrorObject>, String),
}

impl End {
    fn stopped(outcome: Outcome, text: impl Into<String>) -> End {
        End::Stopped {
            outcome,
            text: text.into(),
        }
    }
}

impl CallOutcome {
    /// A call that ended before it reached a server's tools.
    fn unrouted(end: End) -> CallOutcome {
        CallOutcome {
            alias: None,
            original: None,
            decision: None,
            task_id: None,
            asked: None,
            end,
        }
    }

    /// The audit line's outcome.
    pub(crate) fn outcome(&self) -> Outcome {
        match &self.end {
            End::Answered(result) if result.is_error() => Outcome::ToolError,
            End::Answered(_) => Outcome::Ok,
            End::InputRequired(_) => Outcome::InputRequired,
            End::Stopped { outcome, .. } => *outcome,
            End::Rejected(..) => Outcome::ProtocolError,
        }
    }

    /// Who allowed or denied the call ([`Decider::None`] when no one had
    /// to).
    pub(crate) fn decided_by(&self) -> Decider {
        self.decision
            .as_ref()
            .map_or(Decider::None, |d| d.decided_by.clone())
    }

    /// Fills in the audit line: where the call went, the decision, the
    /// outcome and `isError`.
    pub(crate) fn record(&self, record: &mut AuditRecord) {
        record.alias.clone_from(&self.alias);
        record.original_tool.clone_from(&self.original);
        if let Some(decision) = &self.decision {
            record.decision = Some(decision.verdict.as_str().to_owned());
            record.decided_by = decision.decided_by.clone();
            record.rule.clone_from(&decision.rule);
        }
        record.task_id.clone_from(&self.task_id);
        record.outcome = self.outcome();
        record.is_error = match &self.end {
            End::Answered(result) => result.is_error(),
            End::InputRequired(_) => false,
            End::Stopped { .. } | End::Rejected(..) => true,
        };
    }

    /// What an observer hears of the call.
    fn event<'a>(
        &'a self,
        tool: &'a str,
        started: std::time::SystemTime,
        duration: Duration,
        options: &'a CallOptions,
    ) -> CallEvent<'a> {
        CallEvent {
            tool,
            alias: self.alias.as_deref(),
            original_tool: self.original.as_deref(),
            // A rule decides without asking; anyone else was asked.
            gate: self.decision.as_ref().map(|d| match d.decided_by {
                Decider::Rule => d.verdict,
                _ => Verdict::Ask,
            }),
            decision: self.decision.as_ref().map(|d| d.verdict),
            decided_by: self.decided_by(),
            outcome: self.outcome(),
            started,
            duration,
            trace: options.request.trace.as_ref(),
        }
    }

    /// What the model gets: the tool's result, or the host's `isError`
    /// text.
    pub(crate) fn into_result(self) -> CallToolResult {
        match self.end {
            End::Answered(result) => result,
            End::InputRequired(_) => CallToolResult::error(
                "The server asked a question before it can finish this call; it was handed to the caller.",
            ),
            End::Stopped { text, .. } | End::Rejected(_, text) => CallToolResult::error(text),
        }
    }
}

impl Host {
    /// Calls a tool by its model-facing name. Never fails: an unknown tool,
    /// a denial, a server that is down or tripped, a timeout, a transport
    /// failure or a protocol error each becomes an `isError` result saying
    /// what happened and what the model can do. A tool's own `isError`
    /// result passes through. Every result fits the shared budget, and one
    /// audit line is written before this returns (except for a task left
    /// running for a resume (`leave_task_on_drop`), when the
    /// host shuts down under it: the resumed call writes it).
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
        let started_at = std::time::SystemTime::now();
        // Without a log, nothing about the arguments is worked out.
        let record = self
            .inner
            .audit
            .as_ref()
            .map(|_| AuditRecord::for_arguments(local_name, arguments.as_ref()));
        let in_flight = self.inner.audit.as_ref().map(|a| a.call_in_flight());
        // Counts the call as its caller's until it ends.
        let outcome = match self.admit(local_name, &options) {
            Ok(_permit) => {
                self.govern(
                    local_name,
                    arguments,
                    &options,
                    (record.as_ref(), started_at),
                )
                .await
            }
            Err(text) => self.limited(local_name, text),
        };
        let duration = started.elapsed();
        self.conclude(
            local_name,
            (record, in_flight),
            outcome,
            (started_at, duration),
            &options,
        )
        .await
    }

    /// Admits a call of an authenticated caller under its limits (none
    /// without a principal, or when its limits are unset); a call over them
    /// is refused with a text saying which limit and when to try again.
    fn admit(
        &self,
        local_name: &str,
        options: &CallOptions,
    ) -> Result<Option<crate::limits::Permit>, String> {
        match options.principal.as_deref() {
            Some(principal) => self.admit_request(principal, &format!("{local_name} did not run")),
            None => Ok(None),
        }
    }

    /// Admits one request of `principal` under its limits
    /// (`callerLimits`, its own `limits`), counted with its tool calls: a
    /// gateway asks this for a prompt get or a resource read, which reach
    /// a server too. The permit counts it as running until dropped (`None`
    /// when the caller has no limits).
    ///
    /// # Errors
    /// The refusal for the caller, after `refused` (what did not happen,
    /// e.g. "reading mock://a was refused"): which limit, and when to try
    /// again.
    pub fn admit_request(
        &self,
        principal: &str,
        refused: &str,
    ) -> Result<Option<crate::limits::Permit>, String> {
        let limits = self.config_read().limits_for(principal);
        if limits.is_unlimited() {
            return Ok(None);
        }
        self.inner
            .limiter
            .admit(principal, limits, Instant::now())
            .map(Some)
            .map_err(|refusal| refusal.text(principal, refused))
    }

    /// A call its caller's limits refused: it ends here, before the gate,
    /// naming the tool's server when the table knows it.
    fn limited(&self, local_name: &str, text: String) -> CallOutcome {
        let table = self.table();
        let entry = table.get(local_name);
        CallOutcome {
            alias: entry.map(|e| e.alias.clone()),
            original: entry.map(|e| e.tool.name.clone()),
            ..CallOutcome::unrouted(End::stopped(Outcome::Limited, text))
        }
    }

    /// Picks up a call the server made a task, which whoever followed it
    /// stopped following (a gateway that restarted): follows the server's
    /// task to its end as [`Host::call_detailed`] would have (breaker,
    /// budget, `options`' sinks and input handlers), and writes the call's
    /// one audit line, the decision and start as they were, unless the log
    /// already holds it (the earlier process concluded the call before it
    /// stopped). Nobody is asked again (the call was let through when it
    /// started), but rules that deny it now (a caller's access revoked)
    /// stop it: the server's task is cancelled, the result withheld. A tool
    /// that no longer leads to the same server is an `isError` result.
    pub async fn resume_task(
        &self,
        resumption: TaskResumption,
        mut options: CallOptions,
    ) -> CallReport {
        let started_at = std::time::UNIX_EPOCH + Duration::from_millis(resumption.started_ms);
        let record = self.inner.audit.as_ref().map(|_| {
            resumption
                .record
                .clone()
                .unwrap_or_else(|| AuditRecord::for_arguments(&resumption.tool, None))
        });
        let in_flight = self.inner.audit.as_ref().map(|a| a.call_in_flight());
        options.follow_task = Some(resumption.task_id.clone());
        let outcome = self.follow(&resumption, &options).await;
        let duration = started_at.elapsed().unwrap_or_default();
        // The process that started the call may have concluded it before
        // it stopped (the task had ended): then its line stands alone.
        let record = match record {
            Some(record) if self.audited_already(&record, &resumption.task_id).await => None,
            record => record,
        };
        let tool = &resumption.tool;
        self.conclude(
            tool,
            (record, in_flight),
            outcome,
            (started_at, duration),
            &options,
        )
        .await
    }

    /// Whether the audit log already holds the line of the call `record`
    /// began, which became the server's task `task_id`. A log that cannot
    /// be read counts as not holding it: a second line beats none.
    async fn audited_already(&self, record: &AuditRecord, task_id: &str) -> bool {
        let Some(audit) = &self.inner.audit else {
            return false;
        };
        let (path, time, task) = (
            audit.path().to_owned(),
            record.time.clone(),
            task_id.to_owned(),
        );
        let found =
            tokio::task::spawn_blocking(move || crate::audit::holds_task_line(&path, &time, &task))
                .await;
        match found {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                warn!(error = %e, task = %task_id, "could not search the audit log for a resumed call's line");
                false
            }
            Err(e) => {
                warn!(error = %e, task = %task_id, "the audit log search stopped");
                false
            }
        }
    }

    /// Ends a call: its audit line, the observer, and the report. The
    /// call stops counting as in flight once its line is written.
    async fn conclude(
        &self,
        local_name: &str,
        (mut record, in_flight): (Option<AuditRecord>, Option<crate::audit::CallInFlight<'_>>),
        mut outcome: CallOutcome,
        (started_at, duration): (std::time::SystemTime, Duration),
        options: &CallOptions,
    ) -> CallReport {
        // A call following a task it leaves running for a resume, cut off
        // by the host's shutdown, has not ended: whoever resumes it
        // ([`Host::resume_task`]) writes its one line.
        let left_to_resume = options.request.leave_task_on_drop
            && outcome.task_id.is_some()
            && matches!(outcome.end, End::Stopped { .. })
            && self.is_shut_down();
        if left_to_resume {
            record = None;
        }
        if let (Some(audit), Some(record)) = (&self.inner.audit, &mut record) {
            outcome.record(record);
            if record.replica.is_none() {
                record.replica = audit.replica().map(str::to_owned);
            }
            record.principal.clone_from(&options.principal);
            record.duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            if let Err(e) = audit.append_grouped(record).await {
                error!(error = %e, tool = %local_name, "the audit line could not be written");
            }
        }
        drop(in_flight);
        if let Some(observer) = self.inner.observer.as_ref().filter(|_| !left_to_resume) {
            observer.call_ended(&outcome.event(local_name, started_at, duration, options));
        }
        let input_required = match &outcome.end {
            End::InputRequired(asked) => Some(asked.clone()),
            _ => None,
        };
        let protocol_error = match &outcome.end {
            End::Rejected(error, _) => Some(error.clone()),
            _ => None,
        };
        CallReport {
            outcome: outcome.outcome(),
            decided_by: outcome.decided_by(),
            approval_needed: outcome.asked.take(),
            result: outcome.into_result(),
            input_required,
            protocol_error,
        }
    }

    /// Asks the server behind `local_name` to cancel its task `task_id`
    /// (`tasks/cancel`), e.g. when the task was handed on and the one it
    /// was handed to gave up. The call following the task sees it end and
    /// writes its audit line as usual.
    ///
    /// # Errors
    /// [`ClientError`] of the request; [`ClientError::Unsupported`] when the
    /// name leads to no connected server.
    pub async fn cancel_task(&self, local_name: &str, task_id: &str) -> Result<(), ClientError> {
        let link = self
            .table()
            .get(local_name)
            .and_then(|entry| self.server(&entry.alias))
            .and_then(|server| server.live_link());
        match link {
            Some(link) => link.client.cancel_task(task_id).await,
            None => Err(ClientError::Unsupported {
                server: local_name.to_owned(),
                method: switchboard_wire::tasks::TASKS_CANCEL.into(),
                what: "a connected server for this tool".into(),
            }),
        }
    }

    /// The governed call: the table, the gate, then [`Host::run`].
    async fn govern(
        &self,
        local_name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
        (record, started_at): (Option<&AuditRecord>, std::time::SystemTime),
    ) -> CallOutcome {
        if self.is_shut_down() {
            return CallOutcome::unrouted(End::stopped(
                Outcome::Transport,
                "The tool host has shut down; no tool can be called any more.",
            ));
        }
        let table = self.table_for(local_name).await;
        let Some(entry) = table.get(local_name) else {
            return self.not_in_table(local_name, &table);
        };
        let alias = entry.alias.clone();
        let original = entry.tool.name.clone();
        let Some(server) = self.server(&alias) else {
            return CallOutcome {
                alias: Some(alias),
                original: Some(original),
                decision: None,
                task_id: None,
                asked: None,
                end: End::stopped(Outcome::UnknownTool, self.unknown_tool(local_name, &table)),
            };
        };
        let pin = self
            .inner
            .pins
            .state_of(&alias, &entry.tool, &entry.fingerprint);
        let (decision, gate) = self
            .decide(local_name, entry, &pin, arguments.as_ref(), options)
            .await;
        let mut asked = None;
        let (end, task_id) = match gate {
            Gate::Refuse(text) => (End::stopped(Outcome::Denied, text), None),
            Gate::Defer(request) => {
                asked = Some(request);
                let text = format!(
                    "{local_name} needs the user's approval, which has been asked for; the call did not run."
                );
                (End::stopped(Outcome::Asked, text), None)
            }
            Gate::Pass => {
                // First approval pins the definition (changed ones wait
                // for accept).
                if pin == PinState::Unpinned {
                    if let Err(e) = self.inner.pins.pin(&alias, &entry.tool) {
                        warn!(error = %e, tool = %local_name, "could not record the pin");
                    }
                }
                // Task statuses reach the progress sink; the task id, the
                // audit line and whoever wants to resume the call.
                let started = options.on_task_started.clone().map(|tell| {
                    let resumption = TaskResumption {
                        tool: local_name.to_owned(),
                        alias: alias.clone(),
                        original_tool: original.clone(),
                        task_id: String::new(),
                        decision: decision.clone(),
                        started_ms: unix_ms(started_at),
                        record: record.cloned(),
                    };
                    Box::new(move |task_id: &str| {
                        tell(TaskResumption {
                            task_id: task_id.to_owned(),
                            ..resumption
                        });
                    }) as crate::task::OnStarted
                });
                let (notifications, task) = crate::task::watch(&server, options, started);
                let end = self
                    .run(
                        &server,
                        local_name,
                        &original,
                        arguments,
                        options,
                        (notifications, &task),
                    )
                    .await;
                (end, task.task_id())
            }
        };
        CallOutcome {
            alias: Some(alias),
            original: Some(original),
            decision: Some(decision),
            task_id,
            asked,
            end,
        }
    }

    /// A resumed call ([`Host::resume_task`]): the same server, then
    /// [`Host::run`] following its task.
    async fn follow(&self, resumption: &TaskResumption, options: &CallOptions) -> CallOutcome {
        let r = resumption;
        let stopped = |outcome, text: String| CallOutcome {
            alias: Some(r.alias.clone()),
            original: Some(r.original_tool.clone()),
            decision: Some(r.decision.clone()),
            task_id: Some(r.task_id.clone()),
            asked: None,
            end: End::stopped(outcome, text),
        };
        if self.is_shut_down() {
            return stopped(
                Outcome::Transport,
                "The tool host has shut down; no tool can be called any more.".into(),
            );
        }
        let table = self.table();
        let entry = table
            .get(&r.tool)
            .filter(|e| e.alias == r.alias && e.tool.name == r.original_tool);
        let server = entry.and_then(|_| self.server(&r.alias));
        let (Some(entry), Some(server)) = (entry, server) else {
            return stopped(
                Outcome::UnknownTool,
                format!(
                    "{} no longer leads to tool {} of server {}, so its task {} there cannot be followed; \
                     its outcome is unknown. Tell the user.",
                    r.tool, r.original_tool, r.alias, r.task_id
                ),
            );
        };
        // Rules that deny the call now (the caller's access was revoked
        // meanwhile) stop it: the server's task is cancelled and its result
        // is not handed on.
        let pin = self
            .inner
            .pins
            .state_of(&r.alias, &entry.tool, &entry.fingerprint);
        if let Err((decision, text)) = self.refusal(&r.tool, entry, &pin, options) {
            if let Some(link) = server.live_link() {
                if let Err(e) = link.client.cancel_task(&r.task_id).await {
                    warn!(task = %r.task_id, error = %e, "tasks/cancel of a call now denied failed");
                }
            }
            return CallOutcome {
                decision: Some(decision),
                ..stopped(Outcome::Denied, text)
            };
        }
        let (notifications, task) = crate::task::watch(&server, options, None);
        let end = self
            .run(
                &server,
                &r.tool,
                &r.original_tool,
                None,
                options,
                (notifications, &task),
            )
            .await;
        CallOutcome {
            alias: Some(r.alias.clone()),
            original: Some(r.original_tool.clone()),
            decision: Some(r.decision.clone()),
            task_id: Some(r.task_id.clone()),
            asked: None,
            end,
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
            // Boxed, as in `run`: a rare path kept out of every call's future.
            Some(server) if Box::pin(self.relink(&server, false)).await.is_ok() => self.table(),
            _ => table,
        }
    }

    /// The rules' say on a call: the caller's `principals` rules, then the
    /// gate's assessment; a denial is the decision and the text the model
    /// reads.
    fn refusal(
        &self,
        local_name: &str,
        entry: &TableEntry,
        pin: &PinState,
        options: &CallOptions,
    ) -> Result<gate::Assessment, (Decision, String)> {
        if let Some(principal) = options.principal.as_deref() {
            if let Some(rule) = self.principal_refusal(principal, &entry.alias, &entry.tool.name) {
                let why = match &rule {
                    Some((at, pattern)) => format!("rule {pattern} at {at}"),
                    None => format!("no rule at principals.{principal}.allow names it"),
                };
                let text = format!(
                    "The gateway's rules do not let {principal} call {local_name} ({why}). \
                     Do not retry it; if you need it, tell the user why."
                );
                let decision = Decision {
                    verdict: Verdict::Deny,
                    decided_by: Decider::Rule,
                    rule: rule.map(|r| r.0),
                };
                return Err((decision, text));
            }
        }
        let assessment = {
            let config = self.config_read();
            gate::assess(&config.rules, &entry.alias, &entry.tool, pin)
        };
        if assessment.verdict != Verdict::Deny {
            return Ok(assessment);
        }
        let (at, pattern) = assessment.rule.unwrap_or_default();
        let text = format!(
            "The user's permission rules deny calling {local_name} (rule {pattern} at {at}). \
             Do not retry it; if you need it, tell the user why."
        );
        let decision = Decision {
            verdict: Verdict::Deny,
            decided_by: Decider::Rule,
            rule: Some(at).filter(|at| !at.is_empty()),
        };
        Err((decision, text))
    }

    /// The gate, and the approver when the gate asks: the decision, and
    /// whether the call may run. The gate is assessed once per call.
    async fn decide(
        &self,
        local_name: &str,
        entry: &TableEntry,
        pin: &PinState,
        arguments: Option<&JsonObject>,
        options: &CallOptions,
    ) -> (Decision, Gate) {
        let assessment = match self.refusal(local_name, entry, pin, options) {
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
    /// that died), then the call itself with the original name; the call's
    /// notifications (task statuses) go to `notifications`.
    async fn run(
        &self,
        server: &Arc<Upstream>,
        local_name: &str,
        original: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
        (notifications, task): (NotificationSink, &TaskWatch),
    ) -> End {
        let alias = server.alias();
        let admission = server.breaker().admit(Instant::now());
        if let Admission::Refuse { retry_in, reason } = admission {
            return End::stopped(
                Outcome::Breaker,
                format!(
                    "Server {alias} is paused after repeated failures ({}). Calls to its tools are refused for about {} more seconds; \
                     use other tools meanwhile or tell the user.",
                    reason.for_model(alias),
                    retry_in.as_secs().max(1)
                ),
            );
        }

        let link = match server.live_link() {
            Some(link) => link,
            // The rare paths (a reconnection, a task followed) are boxed:
            // their state would otherwise be part of every call's future,
            // which is moved as a whole when it is boxed and spawned.
            None => match Box::pin(self.relink(server, false)).await {
                Ok(link) => link,
                Err(down) => return unreachable(server, local_name, original, &down),
            },
        };

        // The caller's request, with the host's timeout unless it gave one,
        // and the host's notification sink in front of its own.
        let timeout = options
            .request
            .timeout
            .unwrap_or_else(|| self.config_read().call_timeout(alias, original));
        let client_options = switchboard_client::RequestOptions {
            timeout: Some(timeout),
            on_notification: Some(notifications),
            ..options.request.clone()
        };
        let outcome = match &options.follow_task {
            Some(task_id) => Box::pin(link.client.follow_task_with(task_id, &client_options)).await,
            None => {
                link.client
                    .call_tool_with(original, arguments, &client_options)
                    .await
            }
        };
        // A tasked call runs under the task deadline, not the call timeout.
        let timeout = match task.task_id() {
            Some(_) => self.config_read().task_timeout(alias),
            None => timeout,
        };
        match outcome {
            Ok(result) => {
                server.breaker().record(None, Instant::now());
                let tool_name = local_name.to_owned();
                let alias = alias.to_owned();
                End::Answered(self.inner.budget.apply_with(result, move |text| {
                    sanitize::wrap(&alias, Some(&tool_name), &sanitize::strip_invisible(&text))
                }))
            }
            Err(switchboard_client::ClientError::InputRequired { result, .. }) => {
                server.breaker().record(None, Instant::now());
                End::InputRequired(result)
            }
            Err(error) => {
                let end = failure(server, &link, local_name, original, timeout, &error);
                match (error.protocol_error(), end) {
                    (
                        Some(e),
                        End::Stopped {
                            outcome: Outcome::ProtocolError,
                            text,
                        },
                    ) => End::Rejected(Box::new(e.clone()), text),
                    (_, end) => end,
                }
            }
        }
    }

    /// A name that is not in the table. When it carries the `mcp__ALIAS__`
    /// prefix of a configured server that is not up, the answer names that
    /// server and its outage (the longest matching alias wins). This only
    /// explains the failure: a call is routed through the table alone.
    fn not_in_table(&self, local_name: &str, table: &ToolTable) -> CallOutcome {
        let unknown = || {
            CallOutcome::unrouted(End::stopped(
                Outcome::UnknownTool,
                self.unknown_tool(local_name, table),
            ))
        };
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
            ServerStatus::Up => return unknown(),
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
        CallOutcome {
            alias: Some(alias.to_owned()),
            ..CallOutcome::unrouted(end)
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

    /// The allow rule for one tool: its model-facing name, unless that name
    /// carries a collision suffix (then the original name).
    pub(super) fn allow_rule_text(&self, entry: &TableEntry) -> String {
        if entry.local_name == namespaced_tool_name(&entry.alias, &entry.tool.name) {
            entry.local_name.clone()
        } else {
            format!("mcp__{}__{}", entry.alias, entry.tool.name)
        }
    }

    pub(super) fn allow_always(&self, entry: &TableEntry, rule_text: &str) {
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
}

/// A server that could not be reached for an allowed call.
fn unreachable(server: &Upstream, local_name: &str, original: &str, down: &Down) -> End {
    let alias = server.alias();
    if down.cause == DownCause::NeedsLogin {
        return End::stopped(
            Outcome::AuthRequired,
            needs_login_text(&server.config, local_name),
        );
    }
    let original = sanitize::inline_name(original);
    if down.auth_required() {
        return End::stopped(
            Outcome::AuthRequired,
            format!(
                "Server {alias} refused authorization: {}. Its tool {original} could not be called; \
                 tell the user that the server's credentials need attention.",
                down.reason.for_model(alias)
            ),
        );
    }
    server.breaker().record(Some(&down.reason), Instant::now());
    End::stopped(
        Outcome::Transport,
        format!(
            "Server {alias} is not available: {}. Its tool {original} could not be called; \
             use other tools or tell the user.",
            down.reason.for_model(alias)
        ),
    )
}

/// A call the server did not complete: what it means for the server (its
/// breaker, its connection) and for the model.
fn failure(
    server: &Upstream,
    link: &Link,
    local_name: &str,
    original: &str,
    timeout: Duration,
    error: &ClientError,
) -> End {
    let alias = server.alias();
    let now = Instant::now();
    // The server chose this name: shown inline, it must carry no markers.
    let original = &sanitize::inline_name(original);
    // Authorization first: a login that is needed, or a refusal.
    if error.is_auth_failure() {
        // The server answered: it is alive.
        server.breaker().record(None, now);
        if link.auth.as_ref().is_some_and(OAuthProvider::needs_login) {
            server.set_down(Down::needs_login(&server.config));
            return End::stopped(
                Outcome::AuthRequired,
                needs_login_text(&server.config, local_name),
            );
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
        return End::stopped(
            Outcome::AuthRequired,
            format!(
                "Server {alias} refused to authorize the call of {original}: {}. \
                 Tell the user that the server's credentials need attention; do not retry.",
                untrusted(alias, &error.to_string())
            ),
        );
    }
    if error.is_timeout() {
        server.breaker().record(
            Some(&Reason::ours(format!(
                "timed out after {} ms",
                timeout.as_millis()
            ))),
            now,
        );
        return End::stopped(
            Outcome::Timeout,
            format!(
                "{local_name} (tool {original} on server {alias}) did not answer within {} ms and was cancelled. \
                 It may still have had effects. Retry at most once, with smaller input if you can.",
                timeout.as_millis()
            ),
        );
    }
    if let Some(transport) = error.transport_error() {
        let reason = Reason::quoted(transport.to_string());
        server.breaker().record(Some(&reason), now);
        let said = reason.for_model(alias);
        if transport.is_closed() {
            server.set_down(Down::failed(reason));
        }
        return End::stopped(
            Outcome::Transport,
            format!(
                "Server {alias} could not complete the call of {original}: {said}. \
                 Use other tools meanwhile or tell the user."
            ),
        );
    }
    // The server answered: it is alive, whatever it said.
    server.breaker().record(None, now);
    let advice = match error.code().map(ErrorCode::from_code) {
        Some(Some(ErrorCode::InvalidParams)) => {
            "Check the arguments against the tool's input schema and try again."
        }
        Some(Some(ErrorCode::MethodNotFound)) => {
            "The server does not know this method; do not retry."
        }
        Some(_) => "The server failed to handle the call; retrying is unlikely to help.",
        None => "The server's answer was not valid; retrying is unlikely to help.",
    };
    End::stopped(
        Outcome::ProtocolError,
        format!(
            "Server {alias} rejected the call of {original} with a protocol error: {}. {advice}",
            untrusted(alias, &error.to_string())
        ),
    )
}

/// What the model reads when a server needs the user to log in.
fn needs_login_text(config: &ServerConfig, local_name: &str) -> String {
    let alias = &config.alias;
    format!(
        "Upstream {alias} needs the user to log in (OAuth) before its tools, {local_name} among them, can be called. \
         Tell the user to run `{}`; do not retry before they have.",
        auth::server_login_command(config)
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

/// Unix milliseconds of `at`.
fn unix_ms(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
