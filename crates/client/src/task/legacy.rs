//! The 2025-11-25 experimental tasks, spoken to a legacy server.
//!
//! Under 2025-11-25 a client asks for a task itself: a server that declares
//! `capabilities.tasks.requests.tools.call` runs a `tools/call` carrying a
//! `task` parameter as a task and answers `CreateTaskResult` (`{"task":
//! {…}}`, with `ttl` and `pollInterval` where the extension has `ttlMs` and
//! `pollIntervalMs`). `tasks/get` shows the status only; the result (or the
//! error) comes from `tasks/result`, which blocks until the task ends and
//! carries the server's questions (elicitation, sampling) on its way, so an
//! `input_required` task is answered by calling it. `tasks/list` pages the
//! tasks a server chooses to show.
//!
//! [`Client::call_tool`] asks for a task when the tool requires one
//! (`execution.taskSupport: "required"` in the last listing) and drives it
//! like an extension task; [`Client::call_tool_start`] asks whenever the
//! server can and the tool does not forbid it. Tasks are read into the
//! extension's [`Task`] shape, so the rest of the client sees one kind.

use serde_json::{Value, json};
use switchboard_wire::tasks::{self, Task};
use switchboard_wire::{CallToolResult, Era, JsonObject};

use crate::client::Client;
use crate::error::ClientError;
use crate::options::RequestOptions;

/// One page of a 2025-11-25 `tasks/list`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskList {
    /// The tasks, in the extension's shape.
    pub tasks: Vec<Task>,
    /// The cursor of the next page; absent on the last one.
    pub next_cursor: Option<String>,
}

impl Client {
    /// Whether this client talks to a 2025-11-25 server that runs
    /// `tools/call` as tasks (and declared the extension itself, which
    /// stands for "follow tasks" on either wire).
    pub(crate) fn legacy_task_calls(&self) -> bool {
        self.config().tasks
            && self.era() == Era::Legacy
            && self.server().is_some_and(|d| {
                d.capabilities
                    .extra
                    .get("tasks")
                    .and_then(|t| t.pointer("/requests/tools/call"))
                    .is_some()
            })
    }

    /// Whether a `tools/call` of `tool` is to ask for a task: always when
    /// the caller wants one (`explicit`) and the tool does not forbid it,
    /// else only when the tool requires it.
    pub(crate) fn legacy_task_wanted(&self, tool: &str, explicit: bool) -> bool {
        if !self.legacy_task_calls() {
            return false;
        }
        match self.task_support(tool).as_deref() {
            Some("required") => true,
            Some("forbidden") => false,
            _ => explicit,
        }
    }

    /// `tasks/result` (2025-11-25): the final result of a task, waiting for
    /// it to end and answering the server's questions on the way.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] on the modern wire (the extension has
    /// no `tasks/result`); the task's error as [`ClientError::Protocol`];
    /// otherwise as for any request.
    pub async fn task_result(&self, task_id: &str) -> Result<CallToolResult, ClientError> {
        let value = self
            .task_result_value(task_id, &RequestOptions::default())
            .await?;
        serde_json::from_value(Value::Object(value))
            .map_err(|e| self.invalid(tasks::TASKS_RESULT, e.to_string()))
    }

    /// One page of `tasks/list` (2025-11-25).
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] on the modern wire (the extension has
    /// no `tasks/list`) or when the server does not declare
    /// `capabilities.tasks.list`; otherwise as for any request.
    pub async fn list_tasks(&self, cursor: Option<&str>) -> Result<TaskList, ClientError> {
        let listed = self.era() == Era::Legacy
            && self.server().is_some_and(|d| {
                d.capabilities
                    .extra
                    .get("tasks")
                    .and_then(|t| t.get("list"))
                    .is_some()
            });
        if !listed {
            return Err(self.no_legacy(tasks::TASKS_LIST));
        }
        let mut params = JsonObject::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), Value::from(cursor));
        }
        let value = self
            .request(tasks::TASKS_LIST, Some(params), &RequestOptions::default())
            .await?;
        let next_cursor = value
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let tasks = value
            .get("tasks")
            .and_then(Value::as_array)
            .ok_or_else(|| self.invalid(tasks::TASKS_LIST, "no tasks array"))?
            .iter()
            .map(|t| self.legacy_task(tasks::TASKS_LIST, t.clone()))
            .collect::<Result<_, _>>()?;
        Ok(TaskList { tasks, next_cursor })
    }

    /// The raw final result of a task through `tasks/result`.
    pub(crate) async fn task_result_value(
        &self,
        task_id: &str,
        options: &RequestOptions,
    ) -> Result<JsonObject, ClientError> {
        if self.era() != Era::Legacy {
            return Err(self.no_legacy(tasks::TASKS_RESULT));
        }
        // It blocks until the task ends: the task deadline bounds it, not
        // the per-request one.
        let options = RequestOptions {
            timeout: Some(self.config().task_timeout),
            ..options.clone()
        };
        let value = self
            .request(
                tasks::TASKS_RESULT,
                Some(super::id_params(task_id)),
                &options,
            )
            .await?;
        match value {
            Value::Object(o) => Ok(o),
            _ => Err(self.invalid(tasks::TASKS_RESULT, "the result is not an object")),
        }
    }

    /// A 2025-11-25 task (a `CreateTaskResult`'s `task`, a `tasks/get` or
    /// `tasks/list` entry) in the extension's shape: `ttl` becomes `ttlMs`,
    /// `pollInterval` becomes `pollIntervalMs`.
    pub(crate) fn legacy_task(&self, method: &str, value: Value) -> Result<Task, ClientError> {
        let mut value = match value {
            Value::Object(mut o) => match o.remove("task") {
                // A CreateTaskResult wraps the task.
                Some(Value::Object(task)) => task,
                Some(other) => {
                    return Err(self.invalid(method, format!("malformed task: {other}")));
                }
                None => o,
            },
            other => return Err(self.invalid(method, format!("malformed task: {other}"))),
        };
        for (old, new) in [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")] {
            if let Some(v) = value.remove(old) {
                value.entry(new).or_insert(v);
            }
        }
        value.entry("ttlMs").or_insert(Value::Null);
        serde_json::from_value(Value::Object(value))
            .map_err(|e| self.invalid(method, format!("malformed task: {e}")))
    }

    /// The `task` parameter asking a 2025-11-25 server for a task.
    pub(crate) fn legacy_task_param(&self) -> Value {
        let ttl = u64::try_from(self.config().task_timeout.as_millis()).unwrap_or(u64::MAX);
        json!({ "ttl": ttl })
    }

    fn no_legacy(&self, method: &str) -> ClientError {
        ClientError::Unsupported {
            server: self.name().to_owned(),
            method: method.into(),
            what: format!("{method} (a 2025-11-25 task method the server does not offer)"),
        }
    }
}

/// Whether a tools/call answer is a 2025-11-25 `CreateTaskResult`.
pub(crate) fn is_create_task_result(value: &Value) -> bool {
    value.get("task").is_some_and(Value::is_object) && value.get("content").is_none()
}

/// The tool names listed with an `execution.taskSupport`, read from a tool.
pub(crate) fn task_support_of(tool: &switchboard_wire::Tool) -> Option<String> {
    tool.extra
        .get("execution")
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_task_result_is_told_from_a_tool_result() {
        assert!(is_create_task_result(
            &json!({"task": {"taskId": "t", "status": "working"}})
        ));
        assert!(!is_create_task_result(&json!({"content": [], "task": {}})));
        assert!(!is_create_task_result(&json!({"content": []})));
    }

    #[test]
    fn the_task_support_is_read_from_the_execution_member() {
        let tool: switchboard_wire::Tool = serde_json::from_value(json!({
            "name": "t", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"}
        }))
        .unwrap();
        assert_eq!(task_support_of(&tool).as_deref(), Some("required"));
    }
}
