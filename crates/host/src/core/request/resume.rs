//! A tool call's task picked up again: what picks it up
//! ([`TaskResumption`], handed out when the server makes the call a task),
//! following it to its end on the governed path's last steps
//! ([`Host::resume_task`]), and cancelling it ([`Host::cancel_task`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use switchboard_client::ClientError;
use switchboard_wire::CallToolResult;
use tracing::warn;

use super::outcome::{Decision, End, Governed};
use super::tool::forbidden_call;
use super::{CallOptions, CallReport, Target};
use crate::audit::{AuditRecord, Outcome};
use crate::core::Host;

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

    /// What resumes the call of `tool` at `target`, once its task id is
    /// known ([`TaskResumption::with_task`]).
    pub(super) fn new(
        tool: &str,
        target: &Target,
        decision: Decision,
        started_at: SystemTime,
        record: Option<AuditRecord>,
    ) -> TaskResumption {
        TaskResumption {
            tool: tool.to_owned(),
            alias: target.alias.clone(),
            original_tool: target.original.clone(),
            task_id: String::new(),
            decision,
            started_ms: unix_ms(started_at),
            record,
        }
    }

    /// The same, for the server's task `task_id`.
    pub(super) fn with_task(&self, task_id: &str) -> TaskResumption {
        TaskResumption {
            task_id: task_id.to_owned(),
            ..self.clone()
        }
    }
}

impl Host {
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
        let governed = self.follow(&resumption, &options).await;
        let duration = started_at.elapsed().unwrap_or_default();
        // The process that started the call may have concluded it before
        // it stopped (the task had ended): then its line stands alone.
        let record = match record {
            Some(record) if self.audited_already(&record, &resumption.task_id).await => None,
            record => record,
        };
        let span = (started_at, duration);
        self.conclude(
            &resumption.tool,
            true,
            (record, in_flight),
            governed,
            span,
            &options,
        )
        .await
        .into()
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

    /// A resumed call: the same server, the rules as they stand now, then
    /// the server's task followed ([`Host::send`]).
    async fn follow(
        &self,
        resumption: &TaskResumption,
        options: &CallOptions,
    ) -> Governed<CallToolResult> {
        let r = resumption;
        let stopped = |outcome, text: String| Governed {
            alias: Some(r.alias.clone()),
            original: Some(r.original_tool.clone()),
            decision: Some(r.decision.clone()),
            task_id: Some(r.task_id.clone()),
            asked: None,
            end: End::stopped(outcome, text),
            retried: false,
            identity: None,
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
        let target = Target {
            alias: r.alias.clone(),
            original: r.original_tool.clone(),
            by_name: true,
            skill: false,
        };
        let forbidden = options.principal.as_deref().and_then(|principal| {
            self.principal_refusal(principal, &target)
                .map(|(decision, why)| (decision, forbidden_call(principal, &r.tool, &why)))
        });
        let refused = forbidden.map(Err).unwrap_or_else(|| {
            let new_tools = self.config_read().new_tools;
            let pin = self.pin_of(entry, new_tools);
            self.gate_refusal(&r.tool, entry, &pin).map(|_| ())
        });
        if let Err((decision, text)) = refused {
            if let Some(link) = server.live_link() {
                if let Err(e) = link.client.cancel_task(&r.task_id).await {
                    warn!(task = %r.task_id, error = %e, "tasks/cancel of a call now denied failed");
                }
            }
            return Governed {
                decision: Some(decision),
                ..stopped(Outcome::Denied, text)
            };
        }
        let (notifications, task) = crate::task::watch(&server, options, None);
        let (end, retried) = self
            .send(
                &server,
                (&r.tool, &r.original_tool),
                None,
                options,
                (notifications, &task),
            )
            .await;
        Governed {
            alias: Some(r.alias.clone()),
            original: Some(r.original_tool.clone()),
            decision: Some(r.decision.clone()),
            task_id: Some(r.task_id.clone()),
            asked: None,
            end,
            retried,
            identity: self
                .server(&r.alias)
                .and_then(|s| super::identity::identity_label(&s, options.principal.as_deref())),
        }
    }
}

/// Unix milliseconds of `at`.
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
