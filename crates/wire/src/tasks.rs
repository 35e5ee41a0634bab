//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! `tools/call` may be answered with a task handle (`resultType: "task"`)
//! that the client polls with `tasks/get`, feeds with `tasks/update` and
//! stops with `tasks/cancel`.
//!
//! One [`Task`] type serves every shape the extension defines: the
//! `CreateTaskResult` (`resultType: "task"`), the `tasks/get` result
//! (`resultType: "complete"`, with the status payload inlined) and the
//! `notifications/tasks` params. Unknown members are kept in `extra`, as
//! everywhere in this crate.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::jsonrpc::ErrorObject;
use crate::types::{ClientCapabilities, JsonObject, ResultType, string_serde};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The `resultType` of a `CreateTaskResult`.
pub const RESULT_TYPE_TASK: &str = "task";

/// `tasks/get`: the task's current state.
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update`: answers to the task's input requests.
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel`: asks the server to stop the task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/result`: the 2025-11-25 experimental tasks' blocking result
/// (removed by the extension).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list`: the 2025-11-25 experimental tasks' listing (removed by the
/// extension).
pub const TASKS_LIST: &str = "tasks/list";
/// `notifications/tasks`: a task's status changed.
pub const NOTIFICATION: &str = "notifications/tasks";
/// `notifications/tasks/status`: the 2025-11-25 status notification.
pub const LEGACY_NOTIFICATION: &str = "notifications/tasks/status";
/// The 2025-11-25 `_meta` key tying a message to its task.
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// Whether `caps` declares the extension (a per-request decision: the
/// server must not answer with a task otherwise).
pub fn declares_tasks(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(EXTENSION_ID))
}

/// The `requiredCapabilities` of a -32021 error for a request that needs
/// the extension.
pub fn required_capabilities() -> Value {
    json!({ "extensions": { EXTENSION_ID: {} } })
}

/// Whether a method is one of the extension's task methods (the ones that
/// carry `params.taskId`).
pub fn is_task_method(method: &str) -> bool {
    matches!(method, TASKS_GET | TASKS_UPDATE | TASKS_CANCEL)
}

impl ResultType {
    /// Whether this is `"task"` (a `CreateTaskResult`).
    pub fn is_task(&self) -> bool {
        matches!(self, ResultType::Other(s) if s == RESULT_TYPE_TASK)
    }

    /// `"task"`.
    pub fn task() -> ResultType {
        ResultType::Other(RESULT_TYPE_TASK.to_owned())
    }
}

/// Where a task is in its life.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// Being processed.
    Working,
    /// Waiting for answers to its `inputRequests`.
    InputRequired,
    /// Finished with a result (tool errors included).
    Completed,
    /// Stopped before it finished.
    Cancelled,
    /// Finished with a JSON-RPC error.
    Failed,
    /// A status we do not know, kept as it came.
    Other(String),
}

impl TaskStatus {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Failed => "failed",
            TaskStatus::Other(s) => s,
        }
    }

    /// Whether the task can no longer change.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Cancelled | TaskStatus::Failed
        )
    }
}

impl From<&str> for TaskStatus {
    fn from(s: &str) -> Self {
        match s {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "cancelled" => TaskStatus::Cancelled,
            "failed" => TaskStatus::Failed,
            other => TaskStatus::Other(other.to_owned()),
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

string_serde!(TaskStatus);

/// A task: the `CreateTaskResult`, the `tasks/get` result (`DetailedTask`)
/// and the `notifications/tasks` params are all this shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The server's identifier for the task (unguessable).
    pub task_id: String,
    /// Where the task is.
    pub status: TaskStatus,
    /// A human-readable word on the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// How long after creation the server keeps the task, in milliseconds;
    /// `null` for unlimited. Always present on the wire.
    #[serde(default)]
    pub ttl_ms: Option<i64>,
    /// How often the server wants to be polled, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// `input_required` only: the outstanding server-to-client requests,
    /// keyed like MRTR `inputRequests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<JsonObject>,
    /// `completed` only: the final result of the original request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// `failed` only: the JSON-RPC error the request ended with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// `"task"` on a `CreateTaskResult`, `"complete"` on a `tasks/get`
    /// result, absent in a notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Task {
    /// A task with the status-specific payloads left out: the seed state a
    /// `CreateTaskResult` carries.
    pub fn summary(&self) -> Task {
        Task {
            input_requests: None,
            result: None,
            error: None,
            ..self.clone()
        }
    }
}

/// Params of `tasks/get` and `tasks/cancel`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `tasks/update`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers to outstanding input requests, keyed like them.
    pub input_responses: JsonObject,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Milliseconds since the Unix epoch as an ISO 8601 UTC timestamp with
/// millisecond precision (`2026-07-28T10:30:00.000Z`).
pub fn iso8601_utc(ms_since_epoch: u64) -> String {
    let secs = ms_since_epoch / 1000;
    let millis = ms_since_epoch % 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_task_result_round_trips_with_unknown_members() {
        let raw = json!({
            "resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:30:00Z",
            "ttlMs": null, "pollIntervalMs": 500, "vendor": {"x": 1}
        });
        let task: Task = serde_json::from_value(raw.clone()).unwrap();
        assert!(task.result_type.as_ref().unwrap().is_task());
        assert_eq!(task.status, TaskStatus::Working);
        assert_eq!(task.ttl_ms, None);
        assert_eq!(task.extra["vendor"], json!({"x": 1}));
        // `ttlMs: null` stays on the wire: the field is required.
        assert_eq!(serde_json::to_value(&task).unwrap(), raw);
    }

    #[test]
    fn statuses_keep_unknown_values_and_know_terminal_ones() {
        let s: TaskStatus = serde_json::from_value(json!("paused")).unwrap();
        assert_eq!(s, TaskStatus::Other("paused".into()));
        assert!(!s.is_terminal());
        assert!(TaskStatus::Failed.is_terminal());
        assert!(!TaskStatus::InputRequired.is_terminal());
        assert_eq!(
            serde_json::to_value(TaskStatus::InputRequired).unwrap(),
            "input_required"
        );
    }

    #[test]
    fn declaring_the_extension_is_read_from_capabilities() {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"extensions": {EXTENSION_ID: {}}})).unwrap();
        assert!(declares_tasks(&caps));
        assert!(!declares_tasks(&ClientCapabilities::default()));
        assert!(is_task_method("tasks/update"));
        assert!(!is_task_method("tasks/list"));
    }

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_utc(1_785_234_600_000), "2026-07-28T10:30:00.000Z");
    }
}
