//! Tasks through the gateway (the tasks extension).
//!
//! For an upstream client that declared the extension, a call the
//! downstream server turns into a task is answered upstream with a task of
//! the gateway's own (the server framework's: unguessable, bound to the
//! upstream principal, so another principal's id or a made-up one is
//! answered like an unknown task). Behind that id the governed call goes on
//! following the downstream task (host: gate, breaker, budget, one audit
//! line with the downstream task id), and:
//!
//! - every downstream status change becomes the upstream task's status
//!   message, so upstream `tasks/get` and listen streams follow it;
//! - a downstream `input_required` is put to the upstream client as the
//!   upstream task's `input_required` (a round's requests together, under
//!   keys unique over the task, so the upstream client may answer some and
//!   then the rest); its `tasks/update` answers go down as `tasks/update`;
//! - an upstream `tasks/cancel` goes down as `tasks/cancel`; the call
//!   following the downstream task sees it end and writes its audit line;
//! - the final result (or the host's `isError` text) completes the
//!   upstream task; a downstream task that failed with an error fails the
//!   upstream one with the same error.
//!
//! A call the downstream server answers at once stays a plain result (a
//! question on it is relayed as on any call: `relay`, `parked`); a legacy
//! (2025-11-25) task's questions, asked while its result is awaited, go to
//! the upstream task like a modern task's. A client without the extension
//! gets the final result as before.
//!
//! With a signing key that outlives the process, the upstream task is
//! resumable: its id carries (sealed, encrypted) the host's
//! [`TaskResumption`], a gateway that stops leaves the downstream task
//! running (the host's call is stopped unconcluded), and the gateway
//! started again under the same replica name picks the call up at the
//! client's next request about the task ([`resumer`]), writing its one
//! audit line when it ends.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_client::{
    BoxFuture, InputAnswer, InputContext, InputError, InputHandler, InputQuestion, InputSupport,
};
use switchboard_host::{CallOptions, CallReport, Host, TaskResumption};
use switchboard_server::{
    CallToolResult, Cancellation, Context, HandlerError, InputRequired, Outcome, Principal,
    TaskContext, TaskWork, ToolResult,
};
use switchboard_wire::shared::lock;
use switchboard_wire::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ListRootsResult,
};
use switchboard_wire::{ClientCapabilities, JsonObject, Notification};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::call::{CallParking, Running};
use crate::console::Approvals;
use crate::question::{Question, questions};
use crate::relay;
use crate::telemetry::Telemetry;

/// Told of the host's call once it ends (for an upstream task: when the
/// downstream task ends), e.g. to write the upstream span.
pub(crate) type OnEnd = Box<dyn FnOnce(&CallReport) + Send>;

/// How many status changes may wait for the upstream task; older ones are
/// dropped (only the latest status message matters).
const STATUS_QUEUE: usize = 16;
/// How many input requests may wait for the upstream client (the client
/// following the downstream task asks one at a time).
const INPUT_QUEUE: usize = 4;

/// Runs a governed call for an upstream that declared the extension: a
/// plain result when the downstream server answers at once, a task of the
/// gateway's own when it makes the call a task. With `resumable`, that
/// task's id carries what picks the call up again after a restart
/// ([`resumer`]), and stopping the gateway leaves the downstream task
/// running for it. The gate's question is put as on any call (MRTR,
/// before any task exists): `console`, for a client that opens URLs but
/// shows no forms, makes it the console's link.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call(
    host: &Host,
    name: &str,
    arguments: Option<JsonObject>,
    mut options: CallOptions,
    ctx: &Context,
    parking: &CallParking,
    on_end: OnEnd,
    resumable: bool,
    console: Option<&Approvals>,
) -> ToolResult {
    // The upstream client's answers went down with the call.
    let answered = options.request.resume.is_some();
    let (started_tx, started_rx) = oneshot::channel::<TaskResumption>();
    let started = Mutex::new(Some(started_tx));
    options.on_task_started = Some(Arc::new(move |resumption| {
        if let Some(tx) = lock(&started).take() {
            let _ = tx.send(resumption);
        }
    }));
    options.request.leave_task_on_drop = resumable;
    let (relay, mut questions) = Channels::attach(&mut options, ctx.client_capabilities());
    let mut call = tokio::spawn({
        let host = host.clone();
        let name = name.to_owned();
        async move {
            let report = host.call_detailed(&name, arguments, options).await;
            on_end(&report);
            report
        }
    });
    tokio::select! {
        // Answered at once (or stopped by the host): a plain result.
        report = &mut call => {
            // The gate's question, handed back: put to the upstream user
            // like any call's.
            if let Ok(CallReport { approval_needed: Some(request), .. }) = &report {
                let caller = ctx.principal().map(|p| p.subject.as_str());
                return Ok(crate::approval::question(name, request, caller, console).await.into());
            }
            // A modern server's question on a call that is no task:
            // relayed like any call's.
            if let Ok(CallReport { input_required: Some(asked), .. }) = &report {
                return match relay::ask(name, asked, ctx.client_capabilities()) {
                    Ok(question) => Ok(question.into()),
                    Err(why) => Ok(CallToolResult::error(why).into()),
                };
            }
            if let Some(refusal) = report.as_ref().ok().and_then(|r| relay::refusal(r, answered)) {
                return Err(refusal);
            }
            Ok(finished(report).into())
        }
        // A legacy server asks during a call that is no task: the call is
        // parked like any call's.
        Some(question) = questions.recv() => {
            Running::spawned(call, questions).ask(question, ctx, name, parking)
        }
        // The downstream server made it a task: so does the gateway.
        Ok(resumption) = started_rx => {
            let note = resumable.then(|| resume_note(&resumption)).flatten();
            let following = Following::new(host, &resumption, call, note.is_some());
            let work = relay.hand_on(following, questions);
            Ok(Outcome::Task(match note {
                Some(note) => work.resumable(note),
                None => work,
            }))
        }
    }
}

/// The longest note (JSON) sealed into a task id: the id travels in the
/// `Mcp-Name` header of every request about the task, and proxies limit
/// header lines (nginx to 8 KiB by default); sealed and encoded, a note
/// this long makes an id of under 3 KiB.
const MAX_NOTE: usize = 2048;

/// What the task id carries to resume the call, unless it is too long to
/// travel in a header (a tool with very many arguments, a very long rule
/// path): then the task is not resumable and says so in the log.
fn resume_note(resumption: &TaskResumption) -> Option<Value> {
    let text = serde_json::to_string(resumption).ok()?;
    if text.len() > MAX_NOTE {
        tracing::warn!(
            tool = %resumption.tool(),
            bytes = text.len(),
            "this task cannot be resumed after a restart: what resumes it is longer than {MAX_NOTE} bytes"
        );
        return None;
    }
    serde_json::from_str(&text).ok()
}

/// What picks up a task of the gateway's that it no longer holds (it was
/// restarted): the governed call goes on following the downstream task
/// its id names ([`Host::resume_task`]: the same audit line, as the call
/// started), mirrored into the upstream task as before.
pub(crate) fn resumer(
    host: Host,
    telemetry: Telemetry,
) -> impl Fn(Value, Option<&Principal>) -> Option<TaskWork> + Send + Sync + 'static {
    move |note, _owner| {
        let resumption: TaskResumption = match serde_json::from_value(note) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "a task id opened but its note did not read; answered as unknown");
                return None;
            }
        };
        let host = host.clone();
        let telemetry = telemetry.clone();
        // Set up as the work is started, not when it is first polled: a
        // task cancelled at once still finds the call to cancel.
        Some(TaskWork::new(move |task: TaskContext| {
            telemetry.task_resumed(resumption.alias());
            let mut options = CallOptions::default();
            options.principal = task.principal().map(|p| p.subject.clone());
            options.caller_token = crate::tools::caller_token(task.principal());
            options.request.capabilities = Some(task.client_capabilities().clone());
            options.request.leave_task_on_drop = true;
            let (relay, questions) = Channels::attach(&mut options, task.client_capabilities());
            tracing::info!(tool = %resumption.tool(), task = %resumption.task_id(), "following a downstream task again after a restart");
            let call = tokio::spawn({
                let host = host.clone();
                let resumption = resumption.clone();
                async move { host.resume_task(resumption, options).await }
            });
            let following = Following::new(&host, &resumption, call, true);
            relay.run(following, questions, task)
        }))
    }
}

/// The receiving ends of what a governed call hands the upstream task:
/// status changes and the downstream task's questions.
struct Channels {
    statuses: mpsc::Receiver<String>,
    asks: mpsc::Receiver<Ask>,
    /// Where a legacy task's questions are put to the upstream task.
    forward: mpsc::Sender<Ask>,
}

impl Channels {
    /// Gives the call's options the sending ends (`on_task`, `task_input`,
    /// `call_input`, for a client that declared `caps`); a legacy server's
    /// own questions come out of the receiver returned beside.
    fn attach(
        options: &mut CallOptions,
        caps: &ClientCapabilities,
    ) -> (Channels, mpsc::Receiver<Question>) {
        let (status_tx, statuses) = mpsc::channel::<String>(STATUS_QUEUE);
        let (input_tx, asks) = mpsc::channel::<Ask>(INPUT_QUEUE);
        options.request.on_notification = Some(Arc::new(move |n: Notification| {
            if n.method == switchboard_wire::tasks::NOTIFICATION {
                let params = n.params.unwrap_or(Value::Null);
                let _ = status_tx.try_send(status_text(&params));
            }
        }));
        let forward = input_tx.clone();
        options.request.task_input = Some(Arc::new(Relay {
            asks: input_tx,
            support: upstream_support(caps),
        }));
        let (handler, questions) = questions();
        options.request.call_input = Some(handler);
        (
            Channels {
                statuses,
                asks,
                forward,
            },
            questions,
        )
    }

    /// The upstream task's work: mirroring the call that `following`
    /// follows.
    fn hand_on(self, following: Following, questions: mpsc::Receiver<Question>) -> TaskWork {
        TaskWork::new(move |task| self.run(following, questions, task))
    }

    /// Mirrors the downstream task into the upstream one until the call
    /// ends. A legacy task's questions (asked while its result is
    /// awaited) go to the upstream task like a modern task's. Everything is
    /// set up before the future is first polled, so a task stopped before
    /// that still knows whether it was cancelled ([`Following`]'s drop).
    fn run(
        self,
        mut following: Following,
        mut questions: mpsc::Receiver<Question>,
        task: TaskContext,
    ) -> impl Future<Output = Result<CallToolResult, HandlerError>> + Send + 'static {
        following.upstream_cancel = Some(task.cancellation());
        let forward = self.forward;
        tokio::spawn(async move {
            while let Some(question) = questions.recv().await {
                let (method, params, reply) = question.into_parts();
                let (tx, answer) = oneshot::channel();
                let ask = Ask {
                    questions: vec![Asked {
                        key: ONE.into(),
                        method,
                        params,
                    }],
                    reply: tx,
                };
                if forward.send(ask).await.is_err() {
                    break;
                }
                // One at a time: a legacy server waits for each answer.
                let answer = answer
                    .await
                    .unwrap_or_else(|_| Err("the upstream task has ended".to_owned()));
                let _ = reply.send(only_answer(answer));
            }
        });
        following.relay(task, self.statuses, self.asks)
    }
}

/// The governed call behind an upstream task.
struct Following {
    host: Host,
    /// The tool's namespaced name (it leads to the downstream server).
    name: String,
    /// The downstream task's id.
    downstream_id: String,
    /// The host's call, following the downstream task; `None` once it
    /// ended.
    call: Option<JoinHandle<CallReport>>,
    /// Whether the upstream task can be resumed after a restart: then a
    /// gateway that stops leaves the downstream task running.
    resumable: bool,
    /// The upstream task's cancellation (a cancel or its TTL running out),
    /// once its work has started.
    upstream_cancel: Option<Cancellation>,
}

impl Following {
    fn new(
        host: &Host,
        resumption: &TaskResumption,
        call: JoinHandle<CallReport>,
        resumable: bool,
    ) -> Following {
        Following {
            host: host.clone(),
            name: resumption.tool().to_owned(),
            downstream_id: resumption.task_id().to_owned(),
            call: Some(call),
            resumable,
            upstream_cancel: None,
        }
    }

    /// Mirrors the downstream task into the upstream one until the call
    /// ends, relaying its questions.
    async fn relay(
        mut self,
        task: TaskContext,
        mut statuses: mpsc::Receiver<String>,
        mut asks: mpsc::Receiver<Ask>,
    ) -> Result<CallToolResult, HandlerError> {
        let mut keys = 0u64;
        loop {
            let step = {
                let Some(call) = self.call.as_mut() else {
                    return Err(HandlerError::internal("the call already ended"));
                };
                tokio::select! {
                    report = call => Step::Done(Box::new(report)),
                    Some(status) = statuses.recv() => Step::Status(status),
                    Some(ask) = asks.recv() => Step::Ask(ask),
                }
            };
            match step {
                Step::Done(report) => {
                    self.call = None;
                    return task_end(*report);
                }
                Step::Status(status) => task.set_status(status),
                Step::Ask(ask) => {
                    // Every request of the round is put to the upstream
                    // client at once, under keys unique over the task.
                    let mut question = InputRequired::new();
                    let mut ours = Vec::with_capacity(ask.questions.len());
                    for q in ask.questions {
                        keys += 1;
                        let key = format!("input-{keys}");
                        question = question.request(&key, &q.method, q.params);
                        ours.push((key, q.key));
                    }
                    // The downstream task may end while the upstream client
                    // thinks: then the question is moot.
                    let answered = {
                        let Some(call) = self.call.as_mut() else {
                            return Err(HandlerError::internal("the call already ended"));
                        };
                        tokio::select! {
                            answers = task.ask(question) => Ok(answers),
                            report = call => Err(report),
                        }
                    };
                    let answers = match answered {
                        Ok(answers) => answers,
                        Err(report) => {
                            self.call = None;
                            return task_end(report);
                        }
                    };
                    let answer = match answers {
                        Ok(answers) => ours
                            .into_iter()
                            .map(|(key, theirs)| match answers.raw(&key) {
                                Some(a) => Ok((theirs, a.clone())),
                                None => Err(format!("the client answered without request {key}")),
                            })
                            .collect(),
                        Err(e) => Err(e.to_string()),
                    };
                    let _ = ask.reply.send(answer);
                }
            }
        }
    }
}

/// What the relay loop saw next.
enum Step {
    Done(Box<Result<CallReport, tokio::task::JoinError>>),
    Status(String),
    Ask(Ask),
}

impl Drop for Following {
    /// The upstream task was cancelled or expired (or the gateway is
    /// stopping and the task cannot be resumed) while the downstream one
    /// runs: cancel that too. The host's call goes on until the downstream
    /// task ends, so its audit line is still written. A gateway stopping
    /// with a resumable task stops the host's call instead and leaves the
    /// downstream task running, for the restarted gateway to pick up
    /// ([`resumer`]), which writes the call's one audit line.
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        if call.is_finished() {
            return;
        }
        let upstream_cancelled = self
            .upstream_cancel
            .as_ref()
            .is_none_or(Cancellation::is_cancelled);
        if self.resumable && !upstream_cancelled {
            // The host's call stops here, unconcluded (no audit line; its
            // client leaves the task alone): the resumed call concludes it.
            tracing::info!(tool = %self.name, task = %self.downstream_id, "stopping: the downstream task is left running, to be resumed");
            call.abort();
            return;
        }
        let host = self.host.clone();
        let name = std::mem::take(&mut self.name);
        let id = std::mem::take(&mut self.downstream_id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = host.cancel_task(&name, &id).await {
                    tracing::debug!(tool = %name, task = %id, error = %e, "tasks/cancel downstream failed");
                }
                let _ = call.await;
            });
        }
    }
}

/// One round of downstream input requests on its way upstream.
struct Ask {
    questions: Vec<Asked>,
    /// The upstream client's answers by the server's keys, or why there
    /// are none.
    reply: oneshot::Sender<Result<JsonObject, String>>,
}

/// One downstream input request as it goes upstream: the server's key
/// for it, its method and its params as JSON.
struct Asked {
    key: String,
    method: String,
    params: Value,
}

/// The key of a request that is asked alone.
const ONE: &str = "request";

/// The answer to a round of one request ([`ONE`]).
fn only_answer(answers: Result<JsonObject, String>) -> Result<Value, String> {
    answers?
        .remove(ONE)
        .ok_or_else(|| "the client answered without this request".to_owned())
}

/// The input handler given to the host for the downstream task: it puts
/// each request to the upstream task.
#[derive(Debug)]
struct Relay {
    asks: mpsc::Sender<Ask>,
    support: InputSupport,
}

impl Relay {
    /// Puts a round of requests to the upstream task, their params as JSON
    /// (unknown members included); the answers, read back into each
    /// request's kind, with the server's keys.
    fn relay(
        &self,
        requests: Vec<(String, InputQuestion)>,
    ) -> BoxFuture<'_, Result<Vec<(String, InputAnswer)>, InputError>> {
        Box::pin(async move {
            let questions = requests
                .iter()
                .map(|(key, q)| Asked {
                    key: key.clone(),
                    method: q.method().to_owned(),
                    params: q.params(),
                })
                .collect();
            let (reply, answer) = oneshot::channel();
            self.asks
                .send(Ask { questions, reply })
                .await
                .map_err(|_| InputError("the upstream task has ended".into()))?;
            let mut answers = answer
                .await
                .map_err(|_| InputError("the upstream task has ended".into()))?
                .map_err(InputError)?;
            requests
                .into_iter()
                .map(|(key, q)| match answers.remove(&key) {
                    Some(a) => Ok((key, q.answer_from(a)?)),
                    None => Err(InputError(format!(
                        "the client answered without request {key}"
                    ))),
                })
                .collect()
        })
    }

    /// One request alone.
    async fn relay_one(&self, question: InputQuestion) -> Result<InputAnswer, InputError> {
        let mut answers = self.relay(vec![(ONE.into(), question)]).await?;
        answers
            .pop()
            .map(|(_, a)| a)
            .ok_or_else(|| InputError("the client answered without this request".into()))
    }
}

impl InputHandler for Relay {
    fn support(&self) -> InputSupport {
        self.support
    }

    fn elicit(
        &self,
        _cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        Box::pin(async move {
            self.relay_one(InputQuestion::Elicit(params))
                .await?
                .into_elicit()
        })
    }

    fn sample(
        &self,
        _cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, InputError>> {
        Box::pin(async move {
            self.relay_one(InputQuestion::Sample(params))
                .await?
                .into_sample()
        })
    }

    fn roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, InputError>> {
        Box::pin(async move { self.relay_one(InputQuestion::Roots).await?.into_roots() })
    }

    /// The round's requests go upstream together, as one question of the
    /// upstream task, so its client sees them all at once.
    fn answer_round(
        &self,
        _cx: InputContext,
        requests: Vec<(String, InputQuestion)>,
    ) -> BoxFuture<'_, Result<Vec<(String, InputAnswer)>, InputError>> {
        self.relay(requests)
    }
}

/// What the upstream client declared it can answer.
fn upstream_support(caps: &ClientCapabilities) -> InputSupport {
    InputSupport {
        elicitation_form: caps.supports_elicitation_form(),
        elicitation_url: caps.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
        sampling: caps.sampling.is_some(),
        sampling_tools: caps.sampling.as_ref().is_some_and(|s| s.tools.is_some()),
        roots: caps.roots.is_some(),
    }
}

/// A task status as the upstream task's status message.
fn status_text(task: &Value) -> String {
    let status = task
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("working");
    match task.get("statusMessage").and_then(Value::as_str) {
        Some(message) => format!("{status}: {message}"),
        None => status.to_owned(),
    }
}

/// How the upstream task ends: failed with the downstream server's error
/// when its task failed with one (or the server rejected the call), else
/// completed with the call's result.
fn task_end(
    report: Result<CallReport, tokio::task::JoinError>,
) -> Result<CallToolResult, HandlerError> {
    match report {
        Ok(CallReport {
            protocol_error: Some(error),
            ..
        }) => Err(HandlerError::rpc(*error)),
        other => Ok(finished(other)),
    }
}

/// The result of the host's call; a call that panicked is an `isError`
/// result like any failure the host reports.
fn finished(report: Result<CallReport, tokio::task::JoinError>) -> CallToolResult {
    match report {
        Ok(report) => {
            let mut result = report.result;
            crate::identity::own_result(&mut result);
            result
        }
        Err(e) => CallToolResult::error(format!(
            "The gateway lost this call ({e}); its outcome is unknown. Tell the user."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resumption(argument_names: Vec<String>) -> TaskResumption {
        serde_json::from_value(json!({
            "tool": "mcp__s__export", "alias": "s", "originalTool": "export",
            "taskId": "t-1", "decision": {"verdict": "allow", "decidedBy": "rule"},
            "startedMs": 1,
            "record": {
                "time": "2026-12-02T00:00:00.000Z", "alias": null, "tool": "mcp__s__export",
                "originalTool": null, "argumentNames": argument_names,
                "argumentsSha256": "00", "decision": null, "decidedBy": "none",
                "outcome": "ok", "isError": false, "durationMs": 0
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_note_too_long_for_a_header_makes_the_task_not_resumable() {
        let short = resumption(vec!["id".into(), "format".into()]);
        let note = resume_note(&short).unwrap();
        assert_eq!(
            serde_json::from_value::<TaskResumption>(note).unwrap(),
            short
        );
        let many = (0..200).map(|i| format!("argument_{i}")).collect();
        assert!(resume_note(&resumption(many)).is_none());
    }
}
