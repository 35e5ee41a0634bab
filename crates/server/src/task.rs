//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the
//! server side: task-capable tools, the task store, and `tasks/get`,
//! `tasks/update`, `tasks/cancel`.
//!
//! A tool becomes task-capable by answering [`Outcome::Task`] with the work
//! to run ([`TaskWork`]), or by being registered with
//! [`ServerBuilder::task_tool`], whose handler always runs as a task. When
//! the request declared the extension, the framework creates the task
//! (an unguessable id bound to the caller's principal), answers the call at
//! once with `resultType: "task"` and runs the work in the background; the
//! client polls `tasks/get`. Without the extension an optional task runs to
//! its end inside the call, and a required one is refused with -32021.
//!
//! The work gets a [`TaskContext`]: set a status message, ask the client
//! for input (the task goes `input_required` until `tasks/update` brings
//! every answer), notice cancellation. A finished task keeps its result
//! until its TTL (counted from creation) runs out; `tasks/cancel` stops the
//! work and marks the task `cancelled`. Another principal's task id is
//! answered exactly like an unknown one.
//!
//! A [resumable](TaskWork::resumable) task's id carries the application's
//! note, sealed under the server's key; a server restarted with the same
//! key and a [`ServerBuilder::task_resumer`] picks the task up again when
//! its owner next asks about it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use switchboard_wire::shared::lock;
use switchboard_wire::tasks::{self, Task, TaskStatus};
use switchboard_wire::{
    CallToolResult, ClientCapabilities, ErrorCode, ErrorObject, JsonObject, RequestMeta,
    types::ResultType,
};
use tokio::sync::oneshot;

use crate::auth::{BoxFuture, Principal};
use crate::cancel::Cancellation;
use crate::context::Context;
use crate::dispatch::Incoming;
use crate::error::{Fault, HandlerError};
use crate::input::InputResponses;
use crate::outcome::{InputRequired, Outcome};
use crate::server::{Server, ServerBuilder};
use crate::tool::{IntoToolResult, ToolOutcome, ToolSpec, failure_result};
use switchboard_wire::shared::unix_millis as now_ms;

/// How long a task is kept by default, counted from its creation.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// The polling interval suggested by default.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Most live tasks a server keeps.
const CAPACITY: usize = 10_000;

const NOT_FOUND: &str = "Failed to retrieve task: Task not found";

/// Whether a tool may, or must, run as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSupport {
    /// A task when the client declares the extension, a plain call
    /// otherwise.
    Optional,
    /// Only as a task: a client without the extension gets -32021.
    Required,
}

impl TaskSupport {
    fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

impl ToolSpec {
    /// Declares the tool task-capable (`execution.taskSupport` in its
    /// listing). With [`TaskSupport::Required`], a call from a client that
    /// did not declare the tasks extension is refused with -32021 before
    /// the handler runs.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.tool.extra.insert(
            "execution".into(),
            json!({ "taskSupport": support.as_str() }),
        );
        self
    }
}

/// Reads a tool's declared task support.
pub(crate) fn support_of(def: &switchboard_wire::Tool) -> Option<TaskSupport> {
    match def.extra.get("execution")?.get("taskSupport")?.as_str()? {
        "optional" => Some(TaskSupport::Optional),
        "required" => Some(TaskSupport::Required),
        _ => None,
    }
}

type Work = Box<dyn FnOnce(TaskContext) -> BoxFuture<'static, ToolRun> + Send>;
type ToolRun = Result<CallToolResult, HandlerError>;

/// The work of a task, handed to the framework in [`Outcome::Task`].
/// Clones share the one piece of work, which runs at most once.
#[derive(Clone)]
pub struct TaskWork {
    work: Arc<Mutex<Option<Work>>>,
    /// What resumes the task after a restart ([`TaskWork::resumable`]).
    note: Option<Value>,
}

impl std::fmt::Debug for TaskWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskWork").finish_non_exhaustive()
    }
}

impl TaskWork {
    /// Work that runs `f` with the task's context; what it returns is the
    /// task's result (anything a tool handler may return, except an
    /// `InputRequired`: a task asks with [`TaskContext::ask`]).
    pub fn new<F, Fut, R>(f: F) -> Self
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        TaskWork::boxed(Box::new(move |task| {
            let fut = f(task);
            Box::pin(async move {
                match fut.await.into_tool_result()? {
                    Outcome::Complete(r) => Ok(r),
                    _ => Err(HandlerError::internal(
                        "a task cannot answer input_required; ask with TaskContext::ask",
                    )),
                }
            })
        }))
    }

    fn boxed(work: Work) -> Self {
        TaskWork {
            work: Arc::new(Mutex::new(Some(work))),
            note: None,
        }
    }

    /// Makes the task resumable: `note` (what the application needs to
    /// pick the work up again) is sealed into the task's id, encrypted
    /// under the server's key ([`ServerBuilder::signing_key`]) and bound to
    /// the caller. A server that no longer holds the task (it was
    /// restarted under the same [`ServerBuilder::task_origin`], or, with
    /// none, any server sharing the key) and that has a
    /// [`ServerBuilder::task_resumer`] hands the note to it when the client
    /// next asks about the task, and runs the work it gets back under the
    /// same id, until the task's TTL (counted from its first creation)
    /// runs out.
    pub fn resumable(mut self, note: Value) -> Self {
        self.note = Some(note);
        self
    }

    /// Runs the work; a clone whose work already ran fails.
    fn run(self, task: TaskContext) -> BoxFuture<'static, ToolRun> {
        let work = lock(&self.work).take();
        match work {
            Some(work) => work(task),
            None => Box::pin(async { Err(HandlerError::internal("this task's work already ran")) }),
        }
    }
}

impl<T> Outcome<T> {
    /// Answers with a task running `f` (see [`TaskWork::new`]).
    pub fn task<F, Fut, R>(f: F) -> Self
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        Outcome::Task(TaskWork::new(f))
    }
}

/// What a task's work can do besides returning its result.
pub struct TaskContext {
    entry: Option<Arc<TaskEntry>>,
    cancel: Cancellation,
    meta: Arc<RequestMeta>,
    principal: Option<Arc<Principal>>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task_id())
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    /// The task's id; `None` when the work runs inside the call (the
    /// client did not declare the extension).
    pub fn task_id(&self) -> Option<&str> {
        self.entry.as_ref().map(|e| e.id.as_str())
    }

    /// The authenticated caller who created the task, if any.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    /// The capabilities the creating request declared.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.meta.client_capabilities
    }

    /// Sets the task's `statusMessage` (shown to the user or model by the
    /// client). Does nothing when the work runs inside the call.
    pub fn set_status(&self, message: impl Into<String>) {
        if let Some(entry) = &self.entry {
            let mut s = entry.lock();
            if !s.status.is_terminal() {
                s.message = Some(message.into());
                s.updated_ms = now_ms();
                drop(s);
                entry.changed();
            }
        }
    }

    /// The task's cancellation, to check where the context itself cannot
    /// go. It fires when the client cancels the task or its TTL runs out,
    /// not when the server shuts down (the work is stopped then without
    /// it): so work stopped uncancelled was stopped by a shutdown.
    pub fn cancellation(&self) -> Cancellation {
        self.cancel.clone()
    }

    /// Whether the task was cancelled (`tasks/cancel`, the call dropped,
    /// the server shutting down).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes once the task is cancelled. The framework also stops the
    /// work itself; this is for work that wants to clean up first.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Asks the client for input: the task goes `input_required` with these
    /// requests until `tasks/update` has answered every one (answers may
    /// come a few at a time), then back to `working`.
    ///
    /// # Errors
    /// -32021 when the creating request did not declare a capability the
    /// requests need; an error when the work runs inside the call (no task
    /// to ask through) or the task is cancelled while waiting.
    pub async fn ask(&self, ask: InputRequired) -> Result<InputResponses, HandlerError> {
        if let Some(missing) = ask.missing_capabilities(&self.meta.client_capabilities) {
            return Err(HandlerError::missing_capability(missing));
        }
        let Some(entry) = &self.entry else {
            return Err(HandlerError::missing_capability(
                tasks::required_capabilities(),
            ));
        };
        if ask.requests.is_empty() {
            return Ok(InputResponses::new(None));
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut s = entry.lock();
            s.pending = ask.requests;
            s.answers = JsonObject::new();
            s.waiter = Some(tx);
            s.status = TaskStatus::InputRequired;
            s.updated_ms = now_ms();
        }
        entry.changed();
        tokio::select! {
            answers = rx => answers
                .map(|a| InputResponses::new(Some(a)))
                .map_err(|_| HandlerError::internal("the task was stopped while waiting for input")),
            () = self.cancel.cancelled() => Err(HandlerError::internal("the task was cancelled")),
        }
    }
}

/// One task.
struct TaskEntry {
    id: String,
    owner: Option<String>,
    created: Instant,
    created_at: String,
    ttl: Duration,
    poll_interval: Duration,
    cancel: Cancellation,
    state: Mutex<State>,
    /// Where status changes go (`notifications/tasks` on listen streams).
    notifier: crate::notify::Notifier,
}

struct State {
    status: TaskStatus,
    message: Option<String>,
    updated_ms: u64,
    /// Outstanding input requests: (key, method, params).
    pending: Vec<(String, String, Value)>,
    /// Answers received for the current question.
    answers: JsonObject,
    waiter: Option<oneshot::Sender<JsonObject>>,
    result: Option<JsonObject>,
    error: Option<ErrorObject>,
}

impl TaskEntry {
    /// Tells listen streams watching this task its new state.
    fn changed(&self) {
        let task = self.snapshot(true);
        if let Ok(value) = serde_json::to_value(&task) {
            self.notifier.task_changed(&self.id, value);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.created) >= self.ttl
    }

    /// The task as `tasks/get` shows it.
    fn snapshot(&self, detailed: bool) -> Task {
        let s = self.lock();
        let input_requests = (detailed && s.status == TaskStatus::InputRequired).then(|| {
            s.pending
                .iter()
                .map(|(k, m, p)| (k.clone(), json!({"method": m, "params": p})))
                .collect()
        });
        Task {
            task_id: self.id.clone(),
            status: s.status.clone(),
            status_message: s.message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: tasks::iso8601_utc(s.updated_ms),
            ttl_ms: Some(millis(self.ttl)),
            poll_interval_ms: Some(millis(self.poll_interval)),
            input_requests,
            result: if detailed { s.result.clone() } else { None },
            error: if detailed { s.error.clone() } else { None },
            result_type: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// Ends the task, unless it already ended.
    fn finish(&self, status: TaskStatus, result: Option<JsonObject>, error: Option<ErrorObject>) {
        let mut s = self.lock();
        if s.status.is_terminal() {
            return;
        }
        if status == TaskStatus::Failed {
            s.message = error.as_ref().map(|e| e.message.clone());
        } else if status == TaskStatus::Cancelled {
            s.message = Some("cancelled".into());
        }
        s.status = status;
        s.result = result;
        s.error = error;
        s.pending.clear();
        s.waiter = None;
        s.updated_ms = now_ms();
        drop(s);
        self.changed();
    }
}

/// The tasks of one server.
pub(crate) struct TaskStore {
    tasks: Mutex<HashMap<String, Arc<TaskEntry>>>,
    ttl: Duration,
    poll_interval: Duration,
    origin: Option<String>,
    peers: HashMap<String, http::Uri>,
    directory: Option<Arc<dyn ReplicaDirectory>>,
    resumer: Option<Resumer>,
}

/// Where a replica is, as a [`ReplicaDirectory`] knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicaLocation {
    /// Registered and alive, its MCP endpoint at this URL.
    At(http::Uri),
    /// Not registered (any more): the replica is gone, and the work it
    /// held in memory with it.
    Gone,
    /// The directory cannot tell now (its store is unreachable).
    Unknown,
}

/// Where the other replicas behind the same URL are, found at run time
/// (a registry the replicas keep in a shared store) instead of the fixed
/// list of [`ServerBuilder::replica_peers`]. Asked on every request whose
/// work lives in another replica, so it answers from memory.
pub trait ReplicaDirectory: Send + Sync + 'static {
    /// Where the replica named `name` (a task id's origin) is.
    fn locate(&self, name: &str) -> ReplicaLocation;
}

/// What picks up a resumable task this server does not hold
/// ([`ServerBuilder::task_resumer`]).
#[derive(Clone)]
pub(crate) struct Resumer(Arc<ResumeFn>);

type ResumeFn = dyn Fn(Value, Option<&Principal>) -> Option<TaskWork> + Send + Sync;

impl std::fmt::Debug for Resumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resumer(..)")
    }
}

/// Task settings of a server.
#[derive(Clone, Debug)]
pub(crate) struct TaskOptions {
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    /// This server's name among replicas, leading its task ids.
    pub(crate) origin: Option<String>,
    /// The other replicas by name, each with the URL of its MCP endpoint.
    pub(crate) peers: HashMap<String, http::Uri>,
    /// Where other replicas are found at run time.
    pub(crate) directory: Option<Arc<dyn ReplicaDirectory>>,
    /// What resumes a task this server does not hold.
    pub(crate) resumer: Option<Resumer>,
}

impl std::fmt::Debug for dyn ReplicaDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplicaDirectory(..)")
    }
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            ttl: DEFAULT_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
            origin: None,
            peers: HashMap::new(),
            directory: None,
            resumer: None,
        }
    }
}

impl TaskStore {
    pub(crate) fn new(options: TaskOptions) -> Self {
        TaskStore {
            tasks: Mutex::new(HashMap::new()),
            ttl: options.ttl,
            poll_interval: options.poll_interval,
            origin: options.origin,
            peers: options.peers,
            directory: options.directory,
            resumer: options.resumer,
        }
    }

    /// The replica holding `id` (a task id, a replica-bound
    /// `requestState` or a legacy session id: `ORIGIN.…`) and the URL it
    /// is reached at, when it names another replica than this one among
    /// its peers.
    pub(crate) fn holder(&self, id: &str) -> Option<(String, http::Uri)> {
        let own = self.origin.as_deref()?;
        let (origin, _) = id.split_once('.')?;
        if origin == own || origin.is_empty() {
            return None;
        }
        if let Some(url) = self.peers.get(origin) {
            return Some((origin.to_owned(), url.clone()));
        }
        match self.directory.as_ref()?.locate(origin) {
            ReplicaLocation::At(url) => Some((origin.to_owned(), url)),
            ReplicaLocation::Gone | ReplicaLocation::Unknown => None,
        }
    }

    /// Whether the directory says the replica `id` names is gone.
    fn origin_gone(&self, origin: &str) -> bool {
        !self.peers.contains_key(origin)
            && self
                .directory
                .as_ref()
                .is_some_and(|d| d.locate(origin) == ReplicaLocation::Gone)
    }

    /// This server's name among replicas, if it has one.
    pub(crate) fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<TaskEntry>>> {
        lock(&self.tasks)
    }

    /// Drops expired tasks, stopping any still running.
    fn purge(map: &mut HashMap<String, Arc<TaskEntry>>, now: Instant) {
        map.retain(|_, e| {
            let keep = !e.expired(now);
            if !keep {
                e.cancel.cancel();
            }
            keep
        });
    }

    /// An unguessable id for a new task: 256 random bits, or, for a
    /// resumable task, its sealed note; after this server's name among
    /// replicas, if it has one.
    fn new_id(
        &self,
        keys: &crate::seal::Keys,
        owner: Option<&Principal>,
        created_ms: u64,
        note: Option<&Value>,
    ) -> String {
        let unguessable = match note {
            Some(note) => keys.seal_task(
                owner.map(|p| p.subject.as_str()),
                created_ms,
                self.ttl,
                note,
            ),
            None => crate::seal::encode(&keys.random()),
        };
        match &self.origin {
            Some(origin) => format!("{origin}.{unguessable}"),
            None => unguessable,
        }
    }

    /// Adds the task `id`, created `age` ago (at `created_ms`), or hands
    /// back the one already under that id (a resumed task asked about
    /// twice at once is resumed once): the entry, and whether it is new.
    fn insert(
        &self,
        id: String,
        owner: Option<&Principal>,
        (age, created_ms): (Duration, u64),
        notifier: &crate::notify::Notifier,
    ) -> Result<(Arc<TaskEntry>, bool), Fault> {
        let now = Instant::now();
        let mut map = self.lock();
        if let Some(existing) = map.get(&id) {
            return Ok((Arc::clone(existing), false));
        }
        if map.len() >= CAPACITY {
            Self::purge(&mut map, now);
        }
        if map.len() >= CAPACITY {
            return Err(Fault::internal(
                "too many live tasks; try again when some have finished",
            ));
        }
        let entry = Arc::new(TaskEntry {
            id: id.clone(),
            owner: owner.map(|p| p.subject.clone()),
            created: now.checked_sub(age).unwrap_or(now),
            created_at: tasks::iso8601_utc(created_ms),
            ttl: self.ttl,
            poll_interval: self.poll_interval,
            cancel: Cancellation::new(),
            notifier: notifier.clone(),
            state: Mutex::new(State {
                status: TaskStatus::Working,
                message: None,
                updated_ms: now_ms(),
                pending: Vec::new(),
                answers: JsonObject::new(),
                waiter: None,
                result: None,
                error: None,
            }),
        });
        map.insert(id, Arc::clone(&entry));
        Ok((entry, true))
    }

    /// The task `id` if `caller` owns it and it has not expired. Unknown,
    /// expired and foreign ids are one error (-32602).
    fn get(&self, caller: Option<&Principal>, id: &str) -> Result<Arc<TaskEntry>, Fault> {
        let now = Instant::now();
        let mut map = self.lock();
        match map.get(id) {
            Some(e) if e.expired(now) => {
                e.cancel.cancel();
                map.remove(id);
                Err(Fault::invalid_params(NOT_FOUND))
            }
            Some(e) if e.owner.as_deref() == caller.map(|p| p.subject.as_str()) => {
                Ok(Arc::clone(e))
            }
            _ => Err(self.not_found(id)),
        }
    }

    /// The error for an id this store does not hold: the plain one, or,
    /// when the id names another replica as its origin, one saying that
    /// the task lives there.
    fn not_found(&self, id: &str) -> Fault {
        match (self.origin.as_deref(), id.split_once('.')) {
            (Some(own), Some((origin, _)))
                if !origin.is_empty() && origin != own && self.origin_gone(origin) =>
            {
                Fault::invalid_params(format!(
                    "{NOT_FOUND}: the id says replica {origin} started it, and replica {origin} is gone \
                     (it no longer renews its registration in the shared store), so the task it held in \
                     memory ended with it; start the call again"
                ))
            }
            (Some(own), Some((origin, _))) if !origin.is_empty() && origin != own => {
                Fault::invalid_params(format!(
                    "{NOT_FOUND} on this replica ({own}): the id says replica {origin} started it, and a task \
                 lives in the memory of the replica that started it; let the replicas find each other in a \
                 shared store (serve --state) or name them to each other as peers (serve --peer), have the load balancer send tasks/* requests to the replica named \
                 before the first '.' of their Mcp-Name header, or give this client affinity to one replica"
                ))
            }
            _ => Fault::invalid_params(NOT_FOUND),
        }
    }
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// What a finished run becomes: a tool failure is a `completed` task with
/// an `isError` result; a protocol error is a `failed` task.
fn settle(entry: &TaskEntry, run: ToolRun) {
    let run = run.or_else(|e| match e.into_parts() {
        Ok(message) => Ok(failure_result(message)),
        Err(obj) => Err(obj),
    });
    match run {
        Ok(mut result) => {
            result.header.result_type = Some(ResultType::Complete);
            if let Some(meta) = &mut result.header.meta {
                meta.remove(tasks::RELATED_TASK_META);
            }
            let value = match serde_json::to_value(&result) {
                Ok(Value::Object(o)) => o,
                _ => JsonObject::new(),
            };
            entry.finish(TaskStatus::Completed, Some(value), None);
        }
        Err(obj) => entry.finish(TaskStatus::Failed, None, Some(obj)),
    }
}

/// A tool's work, once its handler answered [`Outcome::Task`].
pub(crate) enum Started {
    /// The `CreateTaskResult` to answer with.
    Created(Vec<u8>),
    /// The work ran inside the call (no extension declared).
    Ran(Box<ToolRun>),
}

impl Server {
    /// Refuses a required-task tool to a client without the extension.
    pub(crate) fn check_task_support(
        &self,
        def: &switchboard_wire::Tool,
        caps: &ClientCapabilities,
    ) -> Result<(), Fault> {
        if support_of(def) == Some(TaskSupport::Required) && !tasks::declares_tasks(caps) {
            return Err(Fault::from_rpc(ErrorObject::missing_capability(
                tasks::required_capabilities(),
            )));
        }
        Ok(())
    }

    /// Creates the task and starts its work, or runs the work inside the
    /// call when the request did not declare the extension.
    pub(crate) async fn start_task(
        &self,
        work: TaskWork,
        meta: Arc<RequestMeta>,
        principal: Option<Arc<Principal>>,
        call_cancel: Cancellation,
    ) -> Result<Started, Fault> {
        if !tasks::declares_tasks(&meta.client_capabilities) {
            let cx = TaskContext {
                entry: None,
                cancel: call_cancel,
                meta,
                principal,
            };
            return Ok(Started::Ran(Box::new(work.run(cx).await)));
        }
        let tasks = &self.inner.tasks;
        let created_ms = now_ms();
        let id = tasks.new_id(
            &self.inner.keys,
            principal.as_deref(),
            created_ms,
            work.note.as_ref(),
        );
        let (entry, _) = tasks.insert(
            id,
            principal.as_deref(),
            (Duration::ZERO, created_ms),
            self.notifier(),
        )?;
        self.run_task(&entry, work, meta, principal);
        let mut created = entry.snapshot(false);
        created.result_type = Some(ResultType::task());
        Ok(Started::Created(self.task_bytes(&created)))
    }

    /// Runs a task's work in the background until it ends, is cancelled or
    /// the server shuts down.
    fn run_task(
        &self,
        entry: &Arc<TaskEntry>,
        work: TaskWork,
        meta: Arc<RequestMeta>,
        principal: Option<Arc<Principal>>,
    ) {
        let cx = TaskContext {
            entry: Some(Arc::clone(entry)),
            cancel: entry.cancel.clone(),
            meta,
            principal,
        };
        let shutdown = self.inner.shutdown.clone();
        let runner = Arc::clone(entry);
        tokio::spawn(async move {
            // The work runs in its own task so a panic fails the task
            // instead of leaving it working forever.
            let mut handle = tokio::spawn(work.run(cx));
            tokio::select! {
                joined = &mut handle => match joined {
                    Ok(run) => settle(&runner, run),
                    Err(e) => runner.finish(
                        TaskStatus::Failed,
                        None,
                        Some(ErrorObject::new(
                            ErrorCode::InternalError,
                            format!("the task's work stopped unexpectedly: {e}"),
                        )),
                    ),
                },
                () = runner.cancel.cancelled() => {
                    handle.abort();
                    runner.finish(TaskStatus::Cancelled, None, None);
                }
                () = shutdown.cancelled() => {
                    handle.abort();
                    runner.finish(TaskStatus::Cancelled, None, None);
                }
            }
        });
    }

    /// The caller's task `id`: one this server holds, or a resumable one
    /// it picks up again ([`TaskWork::resumable`]). Unknown, expired,
    /// foreign and altered ids are one error (-32602).
    fn task_entry(
        &self,
        id: &str,
        meta: &RequestMeta,
        incoming: &Incoming,
    ) -> Result<Arc<TaskEntry>, Fault> {
        let caller = incoming.principal.as_deref();
        let tasks = &self.inner.tasks;
        let missing = match tasks.get(caller, id) {
            Ok(entry) => return Ok(entry),
            Err(missing) => missing,
        };
        let Some(resumer) = &tasks.resumer else {
            return Err(missing);
        };
        // Only this replica's ids (or, without a name, unnamed ones).
        let sealed = match (tasks.origin(), id.split_once('.')) {
            (Some(own), Some((origin, sealed))) if origin == own => sealed,
            (None, None) => id,
            _ => return Err(missing),
        };
        let Some(opened) = self
            .inner
            .keys
            .open_task(sealed, caller.map(|p| p.subject.as_str()))
        else {
            return Err(missing);
        };
        let Some(work) = (resumer.0)(opened.note, caller) else {
            return Err(missing);
        };
        let age = Duration::from_millis(now_ms().saturating_sub(opened.created_ms));
        let (entry, new) = tasks.insert(
            id.to_owned(),
            caller,
            (age, opened.created_ms),
            self.notifier(),
        )?;
        if new {
            tracing::info!(task = %id, "resuming a task this server no longer held");
            let mut meta = meta.clone();
            // The resumed work is not part of this request's trace, nor
            // does it report progress on it.
            meta.traceparent = None;
            meta.tracestate = None;
            meta.progress_token = None;
            self.run_task(&entry, work, Arc::new(meta), incoming.principal.clone());
        }
        Ok(entry)
    }

    /// A task as a result, with the `serverInfo` `_meta`.
    fn task_bytes(&self, task: &Task) -> Vec<u8> {
        self.finish_result(serde_json::to_vec(task).unwrap_or_else(|_| b"{}".to_vec()))
    }

    /// The `taskIds` of a listen filter this server will report on: the
    /// caller's own live tasks (others are left out of the acknowledgment
    /// like unknown ones).
    pub(crate) fn listen_task_ids(
        &self,
        filter: &switchboard_wire::types::SubscriptionFilter,
        meta: &RequestMeta,
        incoming: &Incoming,
    ) -> Result<Vec<String>, Fault> {
        let Some(asked) = filter.extra.get("taskIds") else {
            return Ok(Vec::new());
        };
        let Some(asked) = asked.as_array() else {
            return Err(Fault::invalid_params(
                "taskIds must be an array of task ids",
            ));
        };
        if !tasks::declares_tasks(&meta.client_capabilities) {
            return Err(Fault::from_rpc(ErrorObject::missing_capability(
                tasks::required_capabilities(),
            )));
        }
        Ok(asked
            .iter()
            .filter_map(Value::as_str)
            .filter(|id| self.task_entry(id, meta, incoming).is_ok())
            .map(str::to_owned)
            .collect())
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    pub(crate) fn task_request(
        &self,
        method: &str,
        params: Option<Value>,
        meta: &RequestMeta,
        incoming: &Incoming,
    ) -> Result<Vec<u8>, Fault> {
        let declared = self
            .inner
            .capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(tasks::EXTENSION_ID));
        if !declared {
            return Err(Fault::method_not_found(method));
        }
        if !tasks::declares_tasks(&meta.client_capabilities) {
            return Err(Fault::from_rpc(ErrorObject::missing_capability(
                tasks::required_capabilities(),
            )));
        }
        let params = params.unwrap_or(Value::Null);
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(Fault::invalid_params(format!(
                "{method} params need a \"taskId\" string"
            )));
        };
        let entry = self.task_entry(id, meta, incoming)?;
        match method {
            tasks::TASKS_GET => {
                let mut task = entry.snapshot(true);
                task.result_type = Some(ResultType::Complete);
                Ok(self.task_bytes(&task))
            }
            tasks::TASKS_UPDATE => {
                let Some(responses) = params.get("inputResponses").and_then(Value::as_object)
                else {
                    return Err(Fault::invalid_params(
                        "tasks/update params need an \"inputResponses\" object",
                    ));
                };
                let mut s = entry.lock();
                for (key, answer) in responses {
                    // Keys not outstanding are ignored (already answered,
                    // never asked, superseded).
                    if let Some(i) = s.pending.iter().position(|(k, _, _)| k == key) {
                        s.pending.remove(i);
                        s.answers.insert(key.clone(), answer.clone());
                    }
                }
                if s.pending.is_empty() && s.status == TaskStatus::InputRequired {
                    let answers = std::mem::take(&mut s.answers);
                    if let Some(waiter) = s.waiter.take() {
                        let _ = waiter.send(answers);
                    }
                    s.status = TaskStatus::Working;
                    s.updated_ms = now_ms();
                    drop(s);
                    entry.changed();
                } else {
                    drop(s);
                }
                Ok(self.finish_result(b"{\"resultType\":\"complete\"}".to_vec()))
            }
            _ => {
                // Cancelling a finished task is acknowledged like any other.
                tracing::info!(task = %entry.id, "tasks/cancel: the client cancelled the task");
                entry.cancel.cancel();
                Ok(self.finish_result(b"{\"resultType\":\"complete\"}".to_vec()))
            }
        }
    }
}

/// Tool handlers that run as tasks: `async fn(args, TaskContext)`.
pub trait TaskHandler<A>: Send + Sync + 'static {
    /// Runs the work.
    fn run(&self, args: A, task: TaskContext) -> BoxFuture<'static, ToolRun>;
}

impl<F, A, Fut, R> TaskHandler<A> for F
where
    F: Fn(A, TaskContext) -> Fut + Send + Sync + 'static,
    A: Send + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult,
{
    fn run(&self, args: A, task: TaskContext) -> BoxFuture<'static, ToolRun> {
        let fut = self(args, task);
        Box::pin(async move {
            match fut.await.into_tool_result()? {
                Outcome::Complete(r) => Ok(r),
                _ => Err(HandlerError::internal(
                    "a task cannot answer input_required; ask with TaskContext::ask",
                )),
            }
        })
    }
}

impl ServerBuilder {
    /// Registers a tool that runs as a task ([`TaskSupport::Optional`]):
    /// `handler(args, task)` runs in the background when the client
    /// declared the tasks extension, inside the call otherwise. Declares
    /// the extension in the server's capabilities.
    pub fn task_tool<A, H>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        H: TaskHandler<A>,
    {
        self.task_tool_spec(
            ToolSpec::new(name)
                .description(description)
                .task_support(TaskSupport::Optional),
            handler,
        )
    }

    /// Registers a task tool described by `spec` (give it
    /// [`ToolSpec::task_support`]; optional when it has none).
    pub fn task_tool_spec<A, H>(self, spec: ToolSpec, handler: H) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        H: TaskHandler<A>,
    {
        let spec = if support_of(&spec.tool).is_some() {
            spec
        } else {
            spec.task_support(TaskSupport::Optional)
        };
        let handler = Arc::new(handler);
        self.tasks().tool_spec(spec, move |args: A, _ctx: Context| {
            let handler = Arc::clone(&handler);
            async move {
                Ok::<ToolOutcome, HandlerError>(Outcome::Task(TaskWork::boxed(Box::new(
                    move |task| handler.run(args, task),
                ))))
            }
        })
    }

    /// What picks up a [resumable](TaskWork::resumable) task this server
    /// does not hold: given the task's note and its owner, the work that
    /// goes on with it (`None`: the task is answered as unknown). It runs
    /// when a client asks about the task (`tasks/get`, `tasks/update`,
    /// `tasks/cancel`, or a listen for it), on the replica its id names
    /// (or, with no [`ServerBuilder::task_origin`], on any server sharing
    /// the key), and at most once per id while the work runs. Give the
    /// server a key ([`ServerBuilder::signing_key`]): with a random one per
    /// process a restarted server cannot open its old ids.
    pub fn task_resumer(
        mut self,
        resumer: impl Fn(Value, Option<&Principal>) -> Option<TaskWork> + Send + Sync + 'static,
    ) -> Self {
        self.task_options.resumer = Some(Resumer(Arc::new(resumer)));
        self
    }

    /// Declares the tasks extension (done by [`ServerBuilder::task_tool`];
    /// call it for tools that answer [`Outcome::Task`] themselves).
    pub fn tasks(self) -> Self {
        self.extension(tasks::EXTENSION_ID, json!({}))
    }

    /// How long tasks are kept, counted from creation (default 10
    /// minutes), and the polling interval suggested to clients (default
    /// 500 ms).
    pub fn task_options(mut self, ttl: Duration, poll_interval: Duration) -> Self {
        self.task_options.ttl = ttl;
        self.task_options.poll_interval = poll_interval;
        self
    }

    /// Names this server among replicas behind one URL: its task ids, its
    /// legacy session ids and the `requestState`s it binds to itself start
    /// with `name` (at most 64 characters; any but ASCII letters, digits,
    /// `-` and `_` become `-`) and a `.`, so another replica can send their
    /// requests on to it ([`ServerBuilder::replica_peers`]), or at least
    /// say which replica holds a task rather than only "not found".
    pub fn task_origin(mut self, name: &str) -> Self {
        let origin = origin_name(name);
        self.task_options.origin = (!origin.is_empty()).then_some(origin);
        self
    }

    /// Finds the other replicas behind the same URL at run time through
    /// `directory` (a registry in a shared store), besides any fixed
    /// [`ServerBuilder::replica_peers`]: a request whose work lives in a
    /// replica the directory locates is sent on to it, and one whose
    /// replica the directory says is gone is answered with an error
    /// saying so. Needs a [`ServerBuilder::task_origin`].
    #[must_use]
    pub fn replica_directory(mut self, directory: Arc<dyn ReplicaDirectory>) -> Self {
        self.task_options.directory = Some(directory);
        self
    }

    /// The other replicas behind the same URL, each by its name (as given
    /// to their [`ServerBuilder::task_origin`]) with the URL of its MCP
    /// endpoint, reachable from this one. Over HTTP, a request whose work
    /// lives in one of them is sent on to it (once: a request already
    /// sent on is answered here): a `tasks/get`, `tasks/update` or
    /// `tasks/cancel` for a task whose id names it, a retry whose
    /// `requestState` it made [bound to itself](crate::InputRequired::bound_to_this_replica),
    /// and a request (or `DELETE`) of a legacy (2025-11-25) session it
    /// opened (session ids also start with the replica's name).
    /// So a plain round-robin balancer needs no rule. `https` URLs need
    /// the HTTP runner's [`HttpOptions::peer_tls`](crate::http::HttpOptions::peer_tls)
    /// (without it such a request gets an error naming the peer).
    ///
    /// # Errors
    /// [`BuildError::Config`](crate::BuildError::Config) naming the peer
    /// whose URL is not an absolute `http` or `https` URL. (Building a
    /// server with peers but no [`ServerBuilder::task_origin`] fails too.)
    pub fn replica_peers<'a>(
        mut self,
        peers: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, crate::BuildError> {
        for (name, url) in peers {
            let uri: http::Uri = url.parse().map_err(|e| {
                crate::BuildError::Config(format!("peer {name}: {url} is not a URL: {e}"))
            })?;
            if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
                return Err(crate::BuildError::Config(format!(
                    "peer {name}: {url} must be an http:// or https:// URL of the replica's MCP endpoint"
                )));
            }
            self.task_options.peers.insert(origin_name(name), uri);
        }
        Ok(self)
    }
}

/// A replica's name as it leads task ids (and as a
/// [`ReplicaDirectory`] is asked for it): at most 64 characters, any but
/// ASCII letters, digits, `-` and `_` made `-`.
pub fn origin_name(name: &str) -> String {
    name.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // A host name with dots and spaces still names the replica, readably,
    // and never adds the `.` that separates the origin from the random part.
    #[test]
    fn a_task_origin_is_made_safe_and_leads_the_id() {
        let builder = crate::Server::builder("s", "1").task_origin("ip-10.ec2 internal");
        let store = TaskStore::new(builder.task_options.clone());
        let keys = crate::seal::Keys::new(None).unwrap();
        let id = store.new_id(&keys, None, now_ms(), None);
        let (task, _) = store
            .insert(
                id,
                None,
                (Duration::ZERO, now_ms()),
                &crate::notify::Notifier::new(),
            )
            .unwrap();
        let (origin, random) = task.id.split_once('.').unwrap();
        assert_eq!(origin, "ip-10-ec2-internal");
        assert_eq!(random.len(), 43, "{}", task.id);
        let other = TaskStore::new(TaskOptions {
            origin: Some("b".into()),
            ..TaskOptions::default()
        });
        let Err(err) = other.get(None, &task.id) else {
            panic!("another replica found the task");
        };
        assert!(
            format!("{err:?}").contains("replica ip-10-ec2-internal"),
            "{err:?}"
        );
        let plain = TaskStore::new(TaskOptions::default());
        let Err(err) = plain.get(None, &task.id) else {
            panic!("a server without the task found it");
        };
        assert!(!format!("{err:?}").contains("replica"), "{err:?}");
    }
}
