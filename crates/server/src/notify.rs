//! Change notifications and `subscriptions/listen`.
//!
//! A [`Notifier`] broadcasts changes (tool list changed, resource updated,
//! …) to every open listen stream. Each [`Subscription`] sends the
//! acknowledgment first, then only the kinds its filter opted into, each
//! tagged with `_meta["io.modelcontextprotocol/subscriptionId"]` = the
//! listen request's id with its JSON type (SUB-01…03). Progress and log
//! messages never travel here (SUB-06): they belong to their request.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use switchboard_wire::meta::SUBSCRIPTION_ID;
use switchboard_wire::types::method;
use switchboard_wire::{Message, Notification, RequestId, Response, types::SubscriptionFilter};
use tokio::sync::broadcast;

use crate::cancel::Cancellation;

/// One change, as broadcast to listen streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    ToolsListChanged,
    /// The tool list changed for one caller only (its principal's subject;
    /// `None` for callers without one).
    ToolsListChangedFor(Option<Arc<str>>),
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated(Arc<str>),
    /// A task's state changed (tasks extension): its id and the
    /// `notifications/tasks` params.
    Task(Arc<(String, Value)>),
}

/// How many changes a slow listen stream may fall behind before it is sent
/// a conservative "everything you watch may have changed" instead.
const BACKLOG: usize = 256;

/// Announces changes to every open `subscriptions/listen` stream.
///
/// Cheap to clone; get one from [`Server::notifier`](crate::Server::notifier)
/// or [`Context::notifier`](crate::Context::notifier).
#[derive(Clone, Debug)]
pub struct Notifier {
    tx: broadcast::Sender<Change>,
}

impl Notifier {
    pub(crate) fn new() -> Self {
        Notifier {
            tx: broadcast::channel(BACKLOG).0,
        }
    }

    fn send(&self, change: Change) {
        // No open stream is not an error.
        let _ = self.tx.send(change);
    }

    /// The tool list changed (`notifications/tools/list_changed`).
    pub fn tools_list_changed(&self) {
        self.send(Change::ToolsListChanged);
    }

    /// The tool list changed for one caller only: the listen streams of
    /// `subject` (a principal's subject; `None`: the callers without one)
    /// get `notifications/tools/list_changed`, no one else's.
    pub fn tools_list_changed_for(&self, subject: Option<&str>) {
        self.send(Change::ToolsListChangedFor(subject.map(Arc::from)));
    }

    /// The prompt list changed.
    pub fn prompts_list_changed(&self) {
        self.send(Change::PromptsListChanged);
    }

    /// The resource list changed.
    pub fn resources_list_changed(&self) {
        self.send(Change::ResourcesListChanged);
    }

    /// The resource at `uri` changed (`notifications/resources/updated`).
    pub fn resource_updated(&self, uri: &str) {
        self.send(Change::ResourceUpdated(Arc::from(uri)));
    }

    /// A task changed: streams that asked for its id get
    /// `notifications/tasks` with `task` (its full state).
    pub(crate) fn task_changed(&self, id: &str, task: Value) {
        self.send(Change::Task(Arc::new((id.to_owned(), task))));
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
}

/// What the server can deliver on a listen stream.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Deliverable {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) resource_updates: bool,
}

/// One open listen stream.
#[derive(Debug)]
pub(crate) struct Subscription {
    id: RequestId,
    honoured: SubscriptionFilter,
    rx: broadcast::Receiver<Change>,
    shutdown: Cancellation,
    /// Notifications owed after the stream fell behind.
    pending: VecDeque<Vec<u8>>,
    /// Tasks whose status notifications this stream gets.
    task_ids: Vec<String>,
    /// The subject of the caller that opened it (for changes meant for
    /// one caller).
    subject: Option<Arc<str>>,
}

impl Subscription {
    /// Opens a stream for `filter`, keeping only what can be delivered.
    pub(crate) fn open(
        id: RequestId,
        filter: &SubscriptionFilter,
        can: Deliverable,
        notifier: &Notifier,
        shutdown: Cancellation,
    ) -> Self {
        let yes = |asked: Option<bool>, ok: bool| (asked == Some(true) && ok).then_some(true);
        let honoured = SubscriptionFilter {
            tools_list_changed: yes(filter.tools_list_changed, can.tools),
            prompts_list_changed: yes(filter.prompts_list_changed, can.prompts),
            resources_list_changed: yes(filter.resources_list_changed, can.resources),
            resource_subscriptions: filter
                .resource_subscriptions
                .clone()
                .filter(|uris| can.resource_updates && !uris.is_empty()),
            extra: Map::new(),
        };
        Subscription {
            id,
            honoured,
            rx: notifier.subscribe(),
            shutdown,
            pending: VecDeque::new(),
            task_ids: Vec::new(),
            subject: None,
        }
    }

    /// Opened by the caller `subject` (its principal's).
    pub(crate) fn for_subject(mut self, subject: Option<&str>) -> Self {
        self.subject = subject.map(Arc::from);
        self
    }

    /// Also delivers `notifications/tasks` for these tasks (acknowledged as
    /// `taskIds`).
    pub(crate) fn with_task_ids(mut self, ids: Vec<String>) -> Self {
        if !ids.is_empty() {
            self.honoured
                .extra
                .insert("taskIds".into(), Value::from(ids.clone()));
        }
        self.task_ids = ids;
        self
    }

    /// The listen request's id.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// `notifications/subscriptions/acknowledged`: the first message (SUB-02).
    pub(crate) fn ack(&self) -> Vec<u8> {
        let honoured = serde_json::to_value(&self.honoured).unwrap_or_else(|_| json!({}));
        self.notification(
            method::SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(("notifications", honoured)),
        )
    }

    /// The next notification for this stream; `None` when the server shuts
    /// down (then send [`Subscription::closing`]).
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(m) = self.pending.pop_front() {
                return Some(m);
            }
            let change = tokio::select! {
                biased;
                () = self.shutdown.cancelled() => return None,
                r = self.rx.recv() => r,
            };
            match change {
                Ok(change) => {
                    if let Some(m) = self.render(&change) {
                        return Some(m);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Changes were lost: say everything watched may have
                    // changed rather than stay silent.
                    let mut owed = vec![
                        Change::ToolsListChanged,
                        Change::PromptsListChanged,
                        Change::ResourcesListChanged,
                    ];
                    for uri in self.honoured.resource_subscriptions.iter().flatten() {
                        owed.push(Change::ResourceUpdated(Arc::from(uri.as_str())));
                    }
                    for change in owed {
                        if let Some(m) = self.render(&change) {
                            self.pending.push_back(m);
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The result that ends the stream gracefully (SUB-07).
    pub(crate) fn closing(&self) -> Vec<u8> {
        let mut meta = Map::new();
        meta.insert(SUBSCRIPTION_ID.into(), self.id.to_value());
        let result = json!({"resultType": "complete", "_meta": meta});
        Message::Response(Response::result(self.id.clone(), result)).to_vec()
    }

    /// `notifications/cancelled` for this stream: how stdio says the server
    /// ended it (CANC-05).
    pub(crate) fn cancelled(&self) -> Vec<u8> {
        let params = json!({"requestId": self.id.to_value(), "reason": "server shutting down"});
        Message::Notification(Notification::new(method::CANCELLED, Some(params))).to_vec()
    }

    fn render(&self, change: &Change) -> Option<Vec<u8>> {
        let h = &self.honoured;
        match change {
            Change::ToolsListChanged if h.tools_list_changed == Some(true) => {
                Some(self.notification(method::TOOLS_LIST_CHANGED, None))
            }
            Change::ToolsListChangedFor(subject)
                if h.tools_list_changed == Some(true) && *subject == self.subject =>
            {
                Some(self.notification(method::TOOLS_LIST_CHANGED, None))
            }
            Change::PromptsListChanged if h.prompts_list_changed == Some(true) => {
                Some(self.notification(method::PROMPTS_LIST_CHANGED, None))
            }
            Change::ResourcesListChanged if h.resources_list_changed == Some(true) => {
                Some(self.notification(method::RESOURCES_LIST_CHANGED, None))
            }
            Change::ResourceUpdated(uri)
                if h.resource_subscriptions
                    .as_ref()
                    .is_some_and(|u| u.iter().any(|s| s.as_str() == &**uri)) =>
            {
                Some(self.notification(
                    method::RESOURCES_UPDATED,
                    Some(("uri", Value::from(&**uri))),
                ))
            }
            Change::Task(task) if self.task_ids.contains(&task.0) => {
                let mut params = match &task.1 {
                    Value::Object(o) => o.clone(),
                    _ => Map::new(),
                };
                let mut meta = Map::new();
                meta.insert(SUBSCRIPTION_ID.into(), self.id.to_value());
                params.insert("_meta".into(), Value::Object(meta));
                Some(
                    Message::Notification(Notification::new(
                        switchboard_wire::tasks::NOTIFICATION,
                        Some(Value::Object(params)),
                    ))
                    .to_vec(),
                )
            }
            _ => None,
        }
    }

    fn notification(&self, method: &str, member: Option<(&str, Value)>) -> Vec<u8> {
        let mut meta = Map::new();
        meta.insert(SUBSCRIPTION_ID.into(), self.id.to_value());
        let mut params = Map::new();
        params.insert("_meta".into(), Value::Object(meta));
        if let Some((k, v)) = member {
            params.insert(k.into(), v);
        }
        Message::Notification(Notification::new(method, Some(Value::Object(params)))).to_vec()
    }
}
