//! Calls the server turned into tasks (the tasks extension): the client
//! follows the task to its end and reports each status change as a
//! `notifications/tasks`; the host remembers the task id for the audit line
//! and shows status messages on the call's progress sink.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_client::{NotificationSink, ProgressSink};
use switchboard_wire::shared::lock;
use switchboard_wire::tasks;
use switchboard_wire::types::method;
use switchboard_wire::{JsonObject, Notification, RequestId, types::ProgressParams};
use tracing::debug;

use crate::core::CallOptions;
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
        lock(&self.id).clone()
    }
}

/// A per-call notification sink, in front of the caller's own
/// ([`RequestOptions::on_notification`](switchboard_client::RequestOptions::on_notification)),
/// which gets every notification after it: task statuses are recorded
/// (the first id also goes to `on_started`) and their messages go to the
/// call's progress sink (the status count as the position);
/// `tools/list_changed` wakes the server's refresher as the server-wide
/// sink would; without a sink of the caller's, anything else is logged.
pub(crate) fn watch(
    server: &Arc<Upstream>,
    options: &CallOptions,
    on_started: Option<OnStarted>,
) -> (NotificationSink, TaskWatch) {
    let on_started = Mutex::new(on_started);
    let progress: Option<ProgressSink> = options.request.on_progress.clone();
    let caller = options.request.on_notification.clone();
    let watch = TaskWatch::default();
    let seen = watch.clone();
    let server = Arc::downgrade(server);
    // Owned by the sink: nothing else reads it.
    let count = Mutex::new(0u64);
    let sink: NotificationSink = Arc::new(move |n: Notification| {
        match n.method.as_str() {
            tasks::NOTIFICATION => {
                let params = n.params.as_ref();
                if let Some(id) = params.and_then(|p| p.get("taskId")).and_then(Value::as_str) {
                    *lock(&seen.id) = Some(id.to_owned());
                    let started = lock(&on_started).take();
                    if let Some(started) = started {
                        started(id);
                    }
                    if let Some(progress) = &progress {
                        progress(status_progress(id, params, &count));
                    }
                }
            }
            method::TOOLS_LIST_CHANGED => {
                if let Some(server) = server.upgrade() {
                    server.refresh.notify_one();
                }
            }
            other if caller.is_none() => debug!(method = other, "notification during a call"),
            _ => {}
        }
        if let Some(caller) = &caller {
            caller(n);
        }
    });
    (sink, watch)
}

/// A task's status change as the call's progress: the status (and its
/// message), the count of changes as the position.
fn status_progress(id: &str, params: Option<&Value>, count: &Mutex<u64>) -> ProgressParams {
    let field = |name: &str| params.and_then(|p| p.get(name)).and_then(Value::as_str);
    let status = field("status").unwrap_or("");
    let message = match field("statusMessage") {
        Some(m) => format!("{status}: {m}"),
        None => status.to_owned(),
    };
    let step = {
        let mut c = lock(count);
        *c += 1;
        *c
    };
    #[allow(clippy::cast_precision_loss)]
    ProgressParams {
        progress_token: RequestId::from(id),
        progress: step as f64,
        total: None,
        message: Some(message),
        extra: JsonObject::new(),
    }
}
