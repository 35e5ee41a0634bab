//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the
//! client side.
//!
//! A server may answer a `tools/call` with a task handle (`resultType:
//! "task"`) when the request declared the extension
//! ([`crate::ClientBuilder::tasks`]). [`Client::call_tool`] then drives the
//! task to its end, so the caller sees a plain result: it polls `tasks/get`
//! at the server's `pollIntervalMs` (never faster; backing off up to
//! [`crate::ClientConfig::max_poll_interval`] when the server names no
//! interval), listens for the task's `notifications/tasks` meanwhile (a
//! `subscriptions/listen` with `notifications.taskIds`, see
//! [`crate::ClientConfig::task_notifications`]: a notified change ends the
//! wait at once, and one without the payload its status needs is fetched
//! with `tasks/get`), answers `input_required` statuses through the same
//! [`crate::InputHandler`] as MRTR with `tasks/update` (each request once),
//! reports every status change to the call's `on_notification` sink as a
//! `notifications/tasks` notification, and sends `tasks/cancel` when the
//! call is dropped or the task outlives
//! [`crate::ClientConfig::task_timeout`]. [`Client::call_tool_start`] hands
//! the task to the caller instead, with [`Client::get_task`],
//! [`Client::update_task`], [`Client::cancel_task`] and
//! [`Client::wait_task`] to manage it.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_wire::shared::lock;
use switchboard_wire::tasks::{self, Task, TaskStatus};
use switchboard_wire::types::method;
use switchboard_wire::{
    CallToolResult, ClientCapabilities, InputRequiredResult, JsonObject, Notification,
    types::ResultHeader,
};
use tokio::time::Instant;
use tracing::debug;

use crate::client::{Answered, Client};
use crate::error::{ClientError, TransportError};
use crate::options::RequestOptions;

mod legacy;
mod watch;

pub use legacy::TaskList;
pub(crate) use legacy::{is_create_task_result, task_support_of};
use watch::{Heard, Watch};

/// The first wait when the server suggests no polling interval.
const FIRST_POLL: Duration = Duration::from_millis(250);
/// The shortest wait between two polls, whatever the server says.
const MIN_POLL: Duration = Duration::from_millis(10);

/// Adds the extension to the capabilities a client declares.
pub(crate) fn declare(caps: &mut ClientCapabilities) {
    caps.extensions
        .get_or_insert_with(JsonObject::new)
        .insert(tasks::EXTENSION_ID.into(), json!({}));
}

/// What a `tools/call` answered: its result, or a task to follow.
// Built once per call and matched at once: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolCallStart {
    /// The call finished synchronously.
    Complete(CallToolResult),
    /// The server created a task; follow it with [`Client::get_task`] or
    /// [`Client::wait_task`].
    Task(Task),
}

/// Sends `tasks/cancel` for a task whose driver is dropped before the task
/// ended (the caller gave up, or a deadline above us passed).
struct CancelOnDrop {
    client: Client,
    task_id: Option<String>,
    /// Whether dropping cancels ([`RequestOptions::leave_task_on_drop`]).
    on_drop: bool,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.task_id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.task_id.take().filter(|_| self.on_drop) else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            let sent = runtime.spawn(async move {
                if let Err(e) = client.cancel_task(&id).await {
                    debug!(server = %client.name(), task = %id, error = %e, "tasks/cancel failed");
                }
            });
            self.client.cancels().push(sent);
        }
    }
}

/// The `tasks/cancel` requests sent for abandoned tasks, which
/// [`Client::close`] waits for (briefly) so a caller that gives up and
/// exits still cancels its tasks.
#[derive(Debug, Default)]
pub(crate) struct Cancels {
    sent: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Cancels {
    fn push(&self, handle: tokio::task::JoinHandle<()>) {
        let mut sent = lock(&self.sent);
        sent.retain(|h| !h.is_finished());
        sent.push(handle);
    }

    /// Waits up to two seconds for the cancels in flight.
    pub(crate) async fn finish(&self) {
        let sent = std::mem::take(&mut *lock(&self.sent));
        if sent.is_empty() {
            return;
        }
        let all = async {
            for h in sent {
                let _ = h.await;
            }
        };
        let _ = tokio::time::timeout(CLOSE_WAIT, all).await;
    }
}

/// How long closing waits for `tasks/cancel` requests in flight.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

impl Client {
    /// Whether a `"task"` result is acceptable for `method`: only for
    /// `tools/call`, and only when this client declared the extension.
    pub(crate) fn accepts_task(&self, method: &str) -> bool {
        method == method::TOOLS_CALL && tasks::declares_tasks(self.client_capabilities())
    }

    /// Calls a tool and hands back either its result or, when the server
    /// made it a task, the task itself, for the caller to follow.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn call_tool_start(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<ToolCallStart, ClientError> {
        let legacy_task = self.legacy_task_wanted(name, true);
        let value = match self
            .call_tool_value(name, arguments, options, legacy_task)
            .await?
        {
            Answered::Complete(result) => return Ok(ToolCallStart::Complete(result)),
            Answered::Value(value) => value,
        };
        if switchboard_wire::types::ResultType::of(&value).is_task()
            || (legacy_task && is_create_task_result(&value))
        {
            return self
                .parse_task(method::TOOLS_CALL, value)
                .map(ToolCallStart::Task);
        }
        serde_json::from_value(value)
            .map(ToolCallStart::Complete)
            .map_err(|e| self.invalid(method::TOOLS_CALL, e.to_string()))
    }

    /// `tasks/get`: the task's current state, with its result, error or
    /// input requests inlined.
    ///
    /// # Errors
    /// [`ClientError`] as for any request; -32602 from the server for an
    /// unknown or expired task.
    pub async fn get_task(&self, task_id: &str) -> Result<Task, ClientError> {
        self.get_task_with(task_id, &RequestOptions::default())
            .await
    }

    async fn get_task_with(
        &self,
        task_id: &str,
        options: &RequestOptions,
    ) -> Result<Task, ClientError> {
        let value = self
            .request(tasks::TASKS_GET, Some(id_params(task_id)), options)
            .await?;
        self.parse_task(tasks::TASKS_GET, value)
    }

    /// `tasks/update`: answers to the task's outstanding input requests.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn update_task(
        &self,
        task_id: &str,
        input_responses: JsonObject,
    ) -> Result<(), ClientError> {
        let mut params = id_params(task_id);
        params.insert("inputResponses".into(), Value::Object(input_responses));
        self.request(
            tasks::TASKS_UPDATE,
            Some(params),
            &RequestOptions::default(),
        )
        .await
        .map(drop)
    }

    /// `tasks/cancel`: asks the server to stop the task (it may still end
    /// otherwise).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), ClientError> {
        self.request(
            tasks::TASKS_CANCEL,
            Some(id_params(task_id)),
            &RequestOptions::default(),
        )
        .await
        .map(drop)
    }

    /// Picks up the server's task `task_id` (one this client's server made
    /// of an earlier call, e.g. before the caller restarted) and follows it
    /// to its end as [`Client::call_tool_with`] does, under `options`.
    ///
    /// # Errors
    /// As [`Client::wait_task`]; -32602 from the server for a task it does
    /// not know (any more).
    pub async fn follow_task_with(
        &self,
        task_id: &str,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let task = self.get_task_with(task_id, options).await?;
        let value = self.drive(task, options).await?;
        CallToolResult::from_value(Value::Object(value))
            .map(|result| self.trimmed(result))
            .map_err(|reason| self.invalid(method::TOOLS_CALL, reason))
    }

    /// Follows a task to its end, as [`Client::call_tool`] does: polling,
    /// input, status reports, cancellation when dropped or out of time.
    ///
    /// # Errors
    /// [`ClientError::Protocol`] for a `failed` task (its error),
    /// [`TransportError::CancelledByServer`] for a `cancelled` one,
    /// [`ClientError::Timeout`] past the task deadline, and any error of the
    /// requests on the way.
    pub async fn wait_task(
        &self,
        task: Task,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let value = self.drive(task, options).await?;
        serde_json::from_value(Value::Object(value))
            .map(|result| self.trimmed(result))
            .map_err(|e| self.invalid(method::TOOLS_CALL, e.to_string()))
    }

    /// [`Client::wait_task`] for a raw `CreateTaskResult`: the raw final
    /// result.
    pub(crate) async fn drive_task_value(
        &self,
        value: Value,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let task = self.parse_task(method::TOOLS_CALL, value)?;
        self.drive(task, options).await.map(Value::Object)
    }

    fn parse_task(&self, method: &str, value: Value) -> Result<Task, ClientError> {
        if self.era() == switchboard_wire::Era::Legacy {
            return self.legacy_task(method, value);
        }
        serde_json::from_value(value)
            .map_err(|e| self.invalid(method, format!("malformed task: {e}")))
    }

    async fn drive(&self, task: Task, options: &RequestOptions) -> Result<JsonObject, ClientError> {
        let mut guard = CancelOnDrop {
            client: self.clone(),
            task_id: Some(task.task_id.clone()),
            on_drop: !options.leave_task_on_drop,
        };
        let deadline = Instant::now() + self.config().task_timeout;
        match tokio::time::timeout_at(deadline, self.follow(task, options)).await {
            Ok(Ok(result)) => {
                guard.disarm();
                Ok(result)
            }
            // A failed or cancelled task needs no cancel; a failed request
            // on the way leaves the task running: the guard cancels it.
            Ok(Err((e, ended))) => {
                if ended {
                    guard.disarm();
                }
                Err(e)
            }
            Err(_) => {
                // Out of time: cancel now, while we still can, then report.
                if let Some(id) = guard.task_id.take() {
                    if let Err(e) = self.cancel_task(&id).await {
                        debug!(server = %self.name(), task = %id, error = %e, "tasks/cancel failed");
                    }
                }
                Err(ClientError::Timeout {
                    server: self.name().to_owned(),
                    method: method::TOOLS_CALL.into(),
                    after: self.config().task_timeout,
                })
            }
        }
    }

    /// The polling loop. The error's flag says whether the task ended.
    async fn follow(
        &self,
        mut task: Task,
        options: &RequestOptions,
    ) -> Result<JsonObject, (ClientError, bool)> {
        let poll_options = RequestOptions {
            timeout: options.timeout,
            trace: options.trace.clone(),
            meta: options.meta.clone(),
            capabilities: options.capabilities.clone(),
            // A 2025-11-25 task's questions come during `tasks/result`:
            // they belong to the call.
            call_input: options.call_input.clone(),
            ..RequestOptions::default()
        };
        let mut backoff = FIRST_POLL;
        let mut watch = if task.status.is_terminal() {
            Watch::Off
        } else {
            Watch::start(self, &task.task_id)
        };
        let mut reported: Option<(TaskStatus, Option<String>)> = None;
        // Input requests answered, by key, with the request they answered:
        // the same request seen again on a later poll is not asked twice.
        let mut answered: HashMap<String, Value> = HashMap::new();
        loop {
            let now = (task.status.clone(), task.status_message.clone());
            if reported.as_ref() != Some(&now) {
                report(options, &task);
                reported = Some(now);
            }
            // 2025-11-25: the result or error comes from `tasks/result`,
            // which also carries the server's questions, so it is called
            // once the task ends or asks.
            let asks_or_ended = matches!(
                task.status,
                TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired
            );
            if asks_or_ended && task.result.is_none() && self.era() == switchboard_wire::Era::Legacy
            {
                return self
                    .task_result_value(&task.task_id, &poll_options)
                    .await
                    .map_err(|e| {
                        let ended = matches!(e, ClientError::Protocol { .. });
                        (e, ended)
                    });
            }
            match task.status {
                TaskStatus::Completed => {
                    return task.result.ok_or_else(|| {
                        (
                            self.invalid(tasks::TASKS_GET, "a completed task without a result"),
                            true,
                        )
                    });
                }
                TaskStatus::Failed => {
                    let error = task.error.unwrap_or_else(|| {
                        switchboard_wire::ErrorObject::new(
                            switchboard_wire::ErrorCode::InternalError,
                            task.status_message
                                .unwrap_or_else(|| "the task failed".into()),
                        )
                    });
                    return Err((
                        ClientError::Protocol {
                            server: self.name().to_owned(),
                            method: method::TOOLS_CALL.into(),
                            error,
                        },
                        true,
                    ));
                }
                TaskStatus::Cancelled => {
                    return Err((
                        ClientError::Transport(TransportError::CancelledByServer {
                            server: self.name().to_owned(),
                            id: task.task_id,
                            reason: task
                                .status_message
                                .unwrap_or_else(|| "the task was cancelled".into()),
                        }),
                        true,
                    ));
                }
                TaskStatus::InputRequired => {
                    self.answer_task_inputs(&task, options, &mut answered)
                        .await
                        .map_err(|e| (e, false))?;
                }
                TaskStatus::Working | TaskStatus::Other(_) => {}
            }
            // Never faster than the server asks; our own backoff when it
            // names no interval.
            let wait = match task.poll_interval_ms.and_then(|ms| u64::try_from(ms).ok()) {
                Some(ms) => Duration::from_millis(ms).max(MIN_POLL),
                None => {
                    let wait = backoff;
                    backoff = (backoff * 2).min(self.config().max_poll_interval.max(MIN_POLL));
                    wait
                }
            };
            // Poll when the wait is over, or at once when the watch says
            // something changed that it cannot show; a notification with
            // the complete state replaces the poll.
            let heard = tokio::select! {
                () = tokio::time::sleep(wait) => None,
                heard = watch.next(&task.task_id) => match heard {
                    Heard::Task(notified) => Some(*notified),
                    Heard::Refresh => None,
                },
            };
            task = match heard {
                Some(notified) => notified,
                None => self
                    .get_task_with(&task.task_id, &poll_options)
                    .await
                    .map_err(|e| (e, false))?,
            };
        }
    }

    /// Answers the input requests of an `input_required` task not answered
    /// before, through the client's input handler, with one `tasks/update`.
    async fn answer_task_inputs(
        &self,
        task: &Task,
        options: &RequestOptions,
        answered: &mut HashMap<String, Value>,
    ) -> Result<(), ClientError> {
        let fresh: JsonObject = task
            .input_requests
            .iter()
            .flatten()
            .filter(|(k, v)| answered.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let required = InputRequiredResult {
            input_requests: Some(fresh.clone()),
            request_state: None,
            header: ResultHeader::complete(),
        };
        let answered_by = match &options.task_input {
            Some(handler) => {
                self.answer_inputs_with(&**handler, tasks::TASKS_UPDATE, &required)
                    .await?
            }
            None => self.answer_inputs(tasks::TASKS_UPDATE, &required).await?,
        };
        let Some(responses) = answered_by else {
            return Ok(());
        };
        self.update_task(&task.task_id, responses).await?;
        answered.extend(fresh);
        Ok(())
    }
}

fn id_params(task_id: &str) -> JsonObject {
    let mut params = JsonObject::new();
    params.insert("taskId".into(), Value::from(task_id));
    params
}

/// Hands a status change to the call's notification sink as the
/// `notifications/tasks` the server would send.
fn report(options: &RequestOptions, task: &Task) {
    if let Some(sink) = &options.on_notification {
        let params = serde_json::to_value(task.summary()).ok();
        sink(Notification::new(tasks::NOTIFICATION, params));
    }
}
