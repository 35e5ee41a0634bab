//! Calls the server turned into tasks (the tasks extension): the client
//! follows the task to its end and reports each status change as a
//! `notifications/tasks`; the host remembers the task id for the audit line
//! and shows status messages on the call's progress sink.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use switchboard_client::{NotificationSink, ProgressSink};
use switchboard_wire::tasks;
use switchboard_wire::types::method;
use switchboard_wire::{JsonObject, Notification, ProgressParams, RequestId};
use tracing::debug;

use crate::host::CallOptions;
use crate::upstream::Upstream;

/// Told the task's id when the call first turns out to be a task.
pub(crate) type OnStarted = Box<dyn FnOnce(&str) + Send>;

/// What one call learned about its task.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskWatch {
    id: Arc<Mutex<Option<String>>>,
}

impl TaskWatch {
    /// The task's id, when the call became a task.
    pub(crate) fn task_id(&self) -> Option<String> {
        self.id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A per-call notification sink: task statuses are recorded (the first
/// id also goes to `on_started`), handed to the call's `on_task` and their
/// messages go to the call's progress sink (the status count as the
/// position); log messages go to the call's `on_log`;
/// `tools/list_changed` wakes the server's refresher as the server-wide
/// sink would; anything else is logged.
pub(crate) fn watch(
    server: &Arc<Upstream>,
    options: &CallOptions,
    on_started: Option<OnStarted>,
) -> (NotificationSink, TaskWatch) {
    let on_started = Mutex::new(on_started);
    let progress: Option<ProgressSink> = options.progress.clone();
    let on_task = options.on_task.clone();
    let on_log = options.on_log.clone();
    let watch = TaskWatch::default();
    let seen = watch.clone();
    let server = Arc::downgrade(server);
    let count = Arc::new(Mutex::new(0u64));
    let sink: NotificationSink = Arc::new(move |n: Notification| match n.method.as_str() {
        tasks::NOTIFICATION => {
            if let Some(on_task) = &on_task {
                on_task(n.clone());
            }
            let params = n.params.unwrap_or(Value::Null);
            let Some(id) = params.get("taskId").and_then(Value::as_str) else {
                return;
            };
            *seen.id.lock().unwrap_or_else(PoisonError::into_inner) = Some(id.to_owned());
            let started = on_started
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(started) = started {
                started(id);
            }
            let Some(progress) = &progress else {
                return;
            };
            let status = params.get("status").and_then(Value::as_str).unwrap_or("");
            let message = match params.get("statusMessage").and_then(Value::as_str) {
                Some(m) => format!("{status}: {m}"),
                None => status.to_owned(),
            };
            let step = {
                let mut c = count.lock().unwrap_or_else(PoisonError::into_inner);
                *c += 1;
                *c
            };
            #[allow(clippy::cast_precision_loss)]
            progress(ProgressParams {
                progress_token: RequestId::from(id),
                progress: step as f64,
                total: None,
                message: Some(message),
                extra: JsonObject::new(),
            });
        }
        method::MESSAGE if on_log.is_some() => {
            if let Some(on_log) = &on_log {
                on_log(n);
            }
        }
        method::TOOLS_LIST_CHANGED => {
            if let Some(server) = server.upgrade() {
                server.refresh.notify_one();
            }
        }
        other => debug!(method = other, "notification during a call"),
    });
    (sink, watch)
}
