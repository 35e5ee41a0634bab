//! Following a task's status notifications (`notifications/tasks` on a
//! `subscriptions/listen` stream with `notifications.taskIds`), so the
//! polling loop hears of a change at once instead of at its next poll.
//!
//! The stream is opened beside the polling, never in front of it: a server
//! that is slow to acknowledge, refuses the filter or leaves the task out
//! of its acknowledgement costs nothing but the listen request, and the
//! loop keeps polling at the server's interval whatever happens here.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use switchboard_wire::tasks::{self, Task, TaskStatus};
use switchboard_wire::types::SubscriptionFilter;
use tracing::debug;

use crate::client::Client;
use crate::error::ClientError;
use crate::subscription::Subscription;

/// What the watch has to say to the polling loop.
#[derive(Debug)]
pub(super) enum Heard {
    /// A notification with the task's complete state.
    Task(Box<Task>),
    /// Something may have changed that the watch cannot show: the stream
    /// was just acknowledged (a change before that went unseen), it ended
    /// or was re-opened, or a notification lacked the payload its status
    /// needs. The loop fetches the task with `tasks/get` now.
    Refresh,
}

type Opening = Pin<Box<dyn Future<Output = Result<Subscription, ClientError>> + Send>>;

/// The listen stream of one task, from its opening to its end.
pub(super) enum Watch {
    /// The listen request is on its way.
    Opening(Opening),
    /// Acknowledged for the task (boxed: a subscription is large, and a
    /// watch lives once per task).
    Open(Box<Subscription>),
    /// Nothing to hear: not wanted, refused, or ended.
    Off,
}

impl Watch {
    /// Starts listening for `task_id` when the client wants notifications
    /// and the server can send them (a modern one).
    pub(super) fn start(client: &Client, task_id: &str) -> Watch {
        if !client.config().task_notifications || client.era() == switchboard_wire::Era::Legacy {
            return Watch::Off;
        }
        let mut filter = SubscriptionFilter::default();
        filter
            .extra
            .insert("taskIds".into(), Value::from(vec![Value::from(task_id)]));
        let client = client.clone();
        Watch::Opening(Box::pin(async move { client.listen(filter).await }))
    }

    /// The next thing heard about `task_id`; pending forever once the watch
    /// is off.
    ///
    /// # Cancel safety
    /// Cancel safe: the opening future and the subscription keep their
    /// state between calls.
    pub(super) async fn next(&mut self, task_id: &str) -> Heard {
        loop {
            match self {
                Watch::Off => return std::future::pending().await,
                Watch::Opening(opening) => match opening.as_mut().await {
                    Ok(sub) if acknowledges(sub.acknowledged(), task_id) => {
                        *self = Watch::Open(Box::new(sub));
                        return Heard::Refresh;
                    }
                    Ok(_) => {
                        debug!(task = %task_id, "the server left the task out of its listen acknowledgement; polling only");
                        // It may have ended before the listen arrived.
                        *self = Watch::Off;
                        return Heard::Refresh;
                    }
                    Err(e) => {
                        debug!(task = %task_id, error = %e, "listening for task notifications failed; polling only");
                        *self = Watch::Off;
                    }
                },
                Watch::Open(sub) => {
                    let Some(n) = sub.next().await else {
                        *self = Watch::Off;
                        return Heard::Refresh;
                    };
                    if n.method != tasks::NOTIFICATION {
                        continue;
                    }
                    let Some(params) = n.params else { continue };
                    if params.get("taskId").and_then(Value::as_str) != Some(task_id) {
                        continue;
                    }
                    return match serde_json::from_value::<Task>(params) {
                        Ok(task) if complete(&task) => Heard::Task(Box::new(task)),
                        _ => Heard::Refresh,
                    };
                }
            }
        }
    }
}

/// Whether the acknowledged filter names the task.
fn acknowledges(filter: &SubscriptionFilter, task_id: &str) -> bool {
    filter
        .extra
        .get("taskIds")
        .and_then(Value::as_array)
        .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(task_id)))
}

/// Whether a notified task carries what its status needs (the result of a
/// completed task, the error of a failed one, the requests of one waiting
/// for input); one that does not is fetched instead.
fn complete(task: &Task) -> bool {
    match task.status {
        TaskStatus::Completed => task.result.is_some(),
        TaskStatus::Failed => task.error.is_some(),
        TaskStatus::InputRequired => task.input_requests.is_some(),
        _ => true,
    }
}
