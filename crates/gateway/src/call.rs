//! The call driver: the host's governed call ([`Host::call_detailed`])
//! followed for the upstream request that started it (`tools` builds its
//! options; `tasks` drives a call that may become a task the same way).
//!
//! The driver ([`Running`]) follows the call for one upstream request: it
//! passes the server's progress and log messages on as they come, and
//! ends at the call's report ([`Round::Done`]), or at the next question a
//! legacy (2025-11-25) server asks in the middle of the call
//! (`question`). That question is put upstream and the call, still
//! running on a task of its own, is parked on this replica (`parked`)
//! until the retry answers it and follows it again ([`resume`]); or it is
//! declined (the client cannot answer it, or the parking is full) and the
//! call goes on alone, writing its audit line when it ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use switchboard_host::{CallOptions, CallReport, Host};
use switchboard_server::{Context, HandlerError, InputRequired, ToolResult};
use switchboard_wire::types::method;
use switchboard_wire::{
    CallToolResult, JsonObject, LoggingLevel, Notification, types::ProgressParams,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::parked::{ParkedAt, Parking};
use crate::question::{Question, questions};
use crate::relay;

/// How many progress notifications may wait for the upstream stream; more
/// are dropped (progress is advisory, the result is not).
const PROGRESS_QUEUE: usize = 32;
/// How many of the server's log messages may wait for the upstream
/// request; more are dropped.
const LOG_QUEUE: usize = 64;

/// A call waiting for the answer to its question.
pub(crate) struct Parked {
    running: Running,
    question: Question,
    /// The key of the question in the `input_required` asked upstream.
    key: String,
}

/// The calls parked on a gateway.
pub(crate) type CallParking = Parking<Parked>;

/// A governed call whose legacy server's questions come to the gateway.
pub(crate) struct Running {
    call: Call,
    questions: mpsc::Receiver<Question>,
    progress: Option<mpsc::Receiver<ProgressParams>>,
    /// The server's log messages about the call, when the upstream request
    /// asked for logs.
    logs: Option<mpsc::Receiver<Notification>>,
    /// How many questions it asked so far (for the keys).
    asked: u32,
}

/// The host's call: polled in place until it has to outlive the upstream
/// request (parked), then on a task of its own.
enum Call {
    Here(Pin<Box<dyn Future<Output = CallReport> + Send>>),
    Spawned(JoinHandle<CallReport>),
    /// Its report was taken.
    Ended,
}

/// How one upstream request's part of a call ended.
pub(crate) enum Round {
    /// The call ended: its report (a panicked call as `Err`).
    Done(Result<CallReport, String>),
    /// The answer to give upstream now (a question, or why there is none).
    Reply(ToolResult),
}

/// Follows the governed call of `name` for this upstream request: to its
/// end, or to the next question of its server ([`Running::round`]). A call
/// with nothing to follow (no progress or logs asked for upstream, and a
/// server that cannot ask mid-call: [`Host::may_ask_during_call`]) is
/// awaited in place instead: the driver's channels, its `select!` and the
/// copies that let a call outlive its request (parked) are only for calls
/// that may need them.
pub(crate) fn follow<'a>(
    host: &'a Host,
    name: &'a str,
    arguments: Option<JsonObject>,
    options: CallOptions,
    ctx: &'a Context,
    parking: &'a CallParking,
) -> impl Future<Output = Round> + Send + 'a {
    // Decided before the future is made, so that it holds the call (or
    // the driver) and not the arguments and options it was made of.
    let (progress, log_level) = (ctx.wants_progress(), ctx.log_level());
    let follow = if !progress && log_level.is_none() && !host.may_ask_during_call(name) {
        // Boxed, as the driver boxes it, to keep the caller's future small.
        Follow::InPlace(Box::pin(host.call_detailed(name, arguments, options)))
    } else {
        Follow::Driven(Running::start(
            host, name, arguments, options, progress, log_level,
        ))
    };
    async move {
        match follow {
            Follow::InPlace(call) => Round::Done(Ok(call.await)),
            Follow::Driven(running) => running.round(ctx, name, parking).await,
        }
    }
}

/// How [`follow`] follows a call.
enum Follow<'a> {
    /// Awaited where it is: nothing can come before its report.
    InPlace(Pin<Box<dyn Future<Output = CallReport> + Send + 'a>>),
    /// Through the driver.
    Driven(Running),
}

impl Running {
    /// A call already on a task of its own, its questions arriving on
    /// `questions`.
    pub(crate) fn spawned(
        call: JoinHandle<CallReport>,
        questions: mpsc::Receiver<Question>,
    ) -> Running {
        Running {
            call: Call::Spawned(call),
            questions,
            progress: None,
            logs: None,
            asked: 0,
        }
    }

    /// Starts the governed call, its legacy server's questions coming here,
    /// and its progress (when `progress`) and log messages (when the
    /// upstream request asked for logs at `log_level`) too.
    fn start(
        host: &Host,
        name: &str,
        arguments: Option<JsonObject>,
        mut options: CallOptions,
        progress: bool,
        log_level: Option<LoggingLevel>,
    ) -> Running {
        let (handler, questions) = questions();
        options.request.call_input = Some(handler);
        let progress = progress.then(|| {
            let (tx, rx) = mpsc::channel::<ProgressParams>(PROGRESS_QUEUE);
            options = std::mem::take(&mut options).with_progress(move |p| {
                let _ = tx.try_send(p);
            });
            rx
        });
        let logs = log_level.map(|level| {
            let (tx, rx) = mpsc::channel::<Notification>(LOG_QUEUE);
            options.request.log_level = Some(level);
            // Dropped when the upstream falls behind: logs are advisory.
            options.request.on_notification = Some(Arc::new(move |n: Notification| {
                if n.method == method::MESSAGE {
                    let _ = tx.try_send(n);
                }
            }));
            rx
        });
        let host = host.clone();
        let name = name.to_owned();
        let call = Box::pin(async move { host.call_detailed(&name, arguments, options).await });
        Running {
            call: Call::Here(call),
            questions,
            progress,
            logs,
            asked: 0,
        }
    }

    /// Follows the call for one upstream request: to its end, or to the
    /// next question, which is put upstream (the call parked) or declined.
    pub(crate) async fn round(self, ctx: &Context, name: &str, parking: &CallParking) -> Round {
        match self.next(ctx).await {
            Next::Done(report) => Round::Done(report),
            Next::Asked(running, question) => {
                Round::Reply(running.ask(question, ctx, name, parking))
            }
        }
    }

    /// The call's next event that ends this round.
    async fn next(mut self, ctx: &Context) -> Next {
        loop {
            tokio::select! {
                report = self.call.wait() => {
                    // The server's progress and logs came before its
                    // answer: they go out before it too.
                    if let Some(progress) = self.progress.as_mut() {
                        while let Ok(p) = progress.try_recv() {
                            relay_progress(ctx, p).await;
                        }
                    }
                    if let Some(logs) = self.logs.as_mut() {
                        while let Ok(n) = logs.try_recv() {
                            relay_log(ctx, n).await;
                        }
                    }
                    return Next::Done(report);
                }
                Some(question) = self.questions.recv() => return Next::Asked(self, question),
                Some(p) = next_of(&mut self.progress) => relay_progress(ctx, p).await,
                Some(n) = next_of(&mut self.logs) => relay_log(ctx, n).await,
            }
        }
    }

    /// Puts the question to the upstream client, parking the call; or
    /// declines it (the client cannot answer, or the parking is full).
    pub(crate) fn ask(
        mut self,
        question: Question,
        ctx: &Context,
        name: &str,
        parking: &CallParking,
    ) -> ToolResult {
        let caps = ctx.client_capabilities();
        if let Some(missing) = relay::uncovered(question.method(), question.params(), caps) {
            let text = relay::cannot_ask(name, missing, question.method());
            let why = format!(
                "the gateway cannot pass {} on: its client did not declare {missing}",
                question.method()
            );
            question.decline(why);
            self.detach();
            return Ok(CallToolResult::error(text).into());
        }
        self.asked += 1;
        let key = format!("question-{}", self.asked);
        let (method, params) = (question.method().to_owned(), question.params().clone());
        self.call.spawn();
        let parked = Parked {
            running: self,
            question,
            key: key.clone(),
        };
        let principal = ctx.principal().map(|p| p.subject.clone());
        match parking.park(principal, parked) {
            Ok(at) => {
                let asked = InputRequired::new().request(&key, &method, params);
                Ok(relay::parked_question(asked, key, at).into())
            }
            Err(parked) => {
                let limit = parking.limit();
                parked.question.decline(format!(
                    "the gateway holds too many calls waiting for answers ({limit}); it cannot pass {method} on now"
                ));
                parked.running.detach();
                Ok(CallToolResult::error(format!(
                    "The server behind {name} asked for input ({method}), and the gateway declined the question: \
                     it already holds {limit} calls waiting for their clients' answers. The call did not finish; \
                     try again later."
                ))
                .into())
            }
        }
    }

    /// Lets the call go on without anyone waiting for it: its later
    /// questions are cancelled, and it writes its audit line when it ends.
    fn detach(mut self) {
        self.call.spawn();
    }
}

/// What a running call did next.
enum Next {
    Done(Result<CallReport, String>),
    Asked(Running, Question),
}

impl Call {
    /// Moves the call onto a task of its own, so it outlives this request
    /// and writes its audit line whoever waits for it.
    fn spawn(&mut self) {
        if let Call::Here(_) = self {
            if let Call::Here(call) = std::mem::replace(self, Call::Ended) {
                *self = Call::Spawned(tokio::spawn(call));
            }
        }
    }

    async fn wait(&mut self) -> Result<CallReport, String> {
        let report = match self {
            Call::Here(call) => Ok(call.as_mut().await),
            Call::Spawned(handle) => handle.await.map_err(|e| e.to_string()),
            Call::Ended => Err("the call already ended".to_owned()),
        };
        *self = Call::Ended;
        report
    }
}

/// The next message of a channel that may not be there (then never).
async fn next_of<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Passes a server's progress on to the upstream request, when it asked
/// for progress.
async fn relay_progress(ctx: &Context, p: ProgressParams) {
    if ctx.wants_progress() {
        ctx.progress(p.progress, p.total, p.message.as_deref())
            .await;
    }
}

/// Passes a server's log message on to the upstream request, at the
/// server's level (the upstream level filters it again); a message that
/// is not one is dropped.
async fn relay_log(ctx: &Context, n: Notification) {
    let params = n.params.unwrap_or(Value::Null);
    let Some(level) = params
        .get("level")
        .and_then(|l| serde_json::from_value::<LoggingLevel>(l.clone()).ok())
    else {
        tracing::debug!("a log message without a valid level was dropped");
        return;
    };
    let logger = params.get("logger").and_then(Value::as_str);
    let data = params.get("data").cloned().unwrap_or(Value::Null);
    ctx.log(level, logger, data).await;
}

/// The retry of a parked call: hands the client's answer down and follows
/// the call for this request.
///
/// # Errors
/// The call is not parked here (another replica, a restart, lapsed), or
/// belongs to another caller; the answer to its question is missing.
pub(crate) async fn resume(
    at: &ParkedAt,
    answers: &JsonObject,
    ctx: &Context,
    name: &str,
    parking: &CallParking,
) -> Result<Round, HandlerError> {
    let principal = ctx.principal().map(|p| p.subject.as_str());
    let parked = parking
        .take(at, principal)
        .map_err(HandlerError::invalid_params)?;
    let Some(answer) = answers.get(&parked.key) else {
        // The state named the key, so this cannot happen; keep the call
        // parked-free but tell why.
        return Err(HandlerError::invalid_params(format!(
            "inputResponses has no answer for {:?}",
            parked.key
        )));
    };
    parked.question.answer(answer.clone());
    Ok(parked.running.round(ctx, name, parking).await)
}
