//! Parked calls: a legacy (2025-11-25) server's questions relayed.
//!
//! A legacy server asks with a request of its own in the middle of a tool
//! call (`elicitation/create`, `sampling/createMessage`, `roots/list`) and
//! waits for the answer on the same connection. The host ties the request
//! to the call (the request's `call_input`) and hands it to [`Questions`];
//! the gateway then answers its own client with an `input_required`
//! carrying the question, and *parks* the call: the downstream call goes on
//! running in a task of its own, waiting for the answer, and is kept in
//! this replica's memory under a random id that the sealed `requestState`
//! names with the replica (the state starts with the replica's name, so a
//! retry reaching a peer replica, [`GatewayOptions::peers`], is sent on
//! here; without peers such servers need load-balancer affinity). The
//! retry finds the call, hands the answer down as the
//! response to the server's request, and follows the call again: to its
//! result, or to its next question (another round).
//!
//! A parked call that gets no retry within its bound
//! ([`GatewayOptions::park_ttl`], the lifetime of the `requestState`) is
//! dropped: its question is answered with a cancel (elicitation) or an
//! error, and the call, still running, ends as the server decides and
//! writes its one audit line. So does a call whose upstream request goes
//! away (a cancelled retry). The question is asked inside the downstream
//! `tools/call`, so the call's own timeout keeps running while it waits. At most [`GatewayOptions::park_limit`] calls
//! are parked at once; beyond that a question is declined with a text
//! saying why.
//!
//! [`GatewayOptions::park_ttl`]: crate::GatewayOptions::park_ttl
//! [`GatewayOptions::park_limit`]: crate::GatewayOptions::park_limit

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport};
use switchboard_host::{CallOptions, CallReport, Host};
use switchboard_server::{Context, HandlerError, InputRequired, ToolResult};
use switchboard_wire::types::method;
use switchboard_wire::{CallToolResult, JsonObject, LoggingLevel, Notification, ProgressParams};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::relay;

/// How long a parked call waits for its retry by default: as long as the
/// `requestState` naming it stays good.
pub const PARK_TTL: Duration = crate::APPROVAL_STATE_TTL;
/// How many calls may be parked at once by default.
pub const PARK_LIMIT: usize = 1024;

/// How many progress notifications may wait for the upstream stream; more
/// are dropped (progress is advisory, the result is not).
const PROGRESS_QUEUE: usize = 32;
/// How many of the server's log messages may wait for the upstream
/// request; more are dropped.
const LOG_QUEUE: usize = 64;

/// What the sealed state says of a parked call: where it waits.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ParkedAt {
    /// The call's random id in its replica's memory.
    id: String,
    /// The replica holding it.
    replica: String,
}

/// The calls parked on this gateway, shared by its tools.
#[derive(Clone)]
pub(crate) struct Parking {
    inner: Arc<ParkingInner>,
}

struct ParkingInner {
    calls: Mutex<HashMap<String, Parked>>,
    /// This gateway's name among replicas.
    replica: String,
    ttl: Duration,
    limit: usize,
}

/// A call waiting for the answer to its question.
struct Parked {
    running: Running,
    question: Question,
    /// The key of the question in the `input_required` asked upstream.
    key: String,
    /// Who asked the call.
    principal: Option<String>,
}

/// A legacy server's question during a call, with the way back to it.
pub(crate) struct Question {
    method: String,
    params: Value,
    reply: oneshot::Sender<Result<Value, String>>,
}

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

impl Parking {
    /// An empty parking for the replica `replica`.
    pub(crate) fn new(replica: String, ttl: Duration, limit: usize) -> Parking {
        Parking {
            inner: Arc::new(ParkingInner {
                calls: Mutex::new(HashMap::new()),
                replica,
                ttl,
                limit,
            }),
        }
    }

    /// How many calls are parked.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.inner
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Parks a call until its retry, or until it lapses; `Err` gives the
    /// call back when the parking is full.
    fn park(&self, parked: Parked) -> Result<ParkedAt, Box<Parked>> {
        let id = random_id();
        {
            let mut calls = self.lock();
            if calls.len() >= self.inner.limit {
                return Err(Box::new(parked));
            }
            calls.insert(id.clone(), parked);
        }
        let weak: Weak<ParkingInner> = Arc::downgrade(&self.inner);
        let ttl = self.inner.ttl;
        let lapsing = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            let Some(inner) = weak.upgrade() else { return };
            let lapsed = Parking { inner }.lock().remove(&lapsing);
            if lapsed.is_some() {
                tracing::info!(call = %lapsing, "a parked call got no retry in time; its question is cancelled");
            }
            // Dropped outside the lock: the question is answered with a
            // cancel and the call goes on to its end.
            drop(lapsed);
        });
        Ok(ParkedAt {
            id,
            replica: self.inner.replica.clone(),
        })
    }

    /// Takes the parked call the state names, for `principal`.
    fn take(&self, at: &ParkedAt, principal: Option<&str>) -> Result<Parked, String> {
        let mut calls = self.lock();
        match calls.get(&at.id) {
            None => Err(format!(
                "this retry answers a question asked by a legacy (2025-11-25) server whose call is parked on replica {:?}, \
                 and this gateway ({:?}) does not hold it: it is on another replica, the gateway restarted, or the call \
                 lapsed. Calls to such servers need the retry on the same replica: name the replicas to each other \
                 (serve --peer) or give the client load-balancer affinity; start the call again",
                at.replica, self.inner.replica
            )),
            Some(parked) if parked.principal.as_deref() != principal => Err(
                "this retry answers a question of another caller's call; start the call again"
                    .into(),
            ),
            Some(_) => calls
                .remove(&at.id)
                .ok_or_else(|| "the parked call went away".to_owned()),
        }
    }
}

impl Default for Parking {
    /// A parking with the default bounds (a [`crate::Gateway`] makes its
    /// own, named after its replica).
    fn default() -> Parking {
        Parking::new(String::new(), PARK_TTL, PARK_LIMIT)
    }
}

impl fmt::Debug for Parking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parking")
            .field("replica", &self.inner.replica)
            .field("ttl", &self.inner.ttl)
            .field("limit", &self.inner.limit)
            .finish_non_exhaustive()
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

/// The handler to give a call's request options (`call_input`),
/// and where its questions arrive.
pub(crate) fn questions() -> (Arc<dyn InputHandler>, mpsc::Receiver<Question>) {
    // One question at a time: a legacy server waits for each answer.
    let (tx, rx) = mpsc::channel(1);
    (Arc::new(Questions { tx }), rx)
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
    pub(crate) fn start(
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
    pub(crate) async fn round(self, ctx: &Context, name: &str, parking: &Parking) -> Round {
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
            let progress = async {
                match self.progress.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            let log = async {
                match self.logs.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
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
                Some(p) = progress => relay_progress(ctx, p).await,
                Some(n) = log => relay_log(ctx, n).await,
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
        parking: &Parking,
    ) -> ToolResult {
        let caps = ctx.client_capabilities();
        if let Some(missing) = relay::uncovered(&question.method, &question.params, caps) {
            let text = relay::cannot_ask(name, missing, &question.method);
            let why = format!(
                "the gateway cannot pass {} on: its client did not declare {missing}",
                question.method
            );
            question.decline(why);
            self.detach();
            return Ok(CallToolResult::error(text).into());
        }
        self.asked += 1;
        let key = format!("question-{}", self.asked);
        let (method, params) = (question.method.clone(), question.params.clone());
        self.call.spawn();
        let parked = Parked {
            running: self,
            question,
            key: key.clone(),
            principal: ctx.principal().map(|p| p.subject.clone()),
        };
        match parking.park(parked) {
            Ok(at) => {
                let asked = InputRequired::new().request(&key, &method, params);
                Ok(relay::parked_question(asked, key, at).into())
            }
            Err(parked) => {
                parked.question.decline(format!(
                    "the gateway holds too many calls waiting for answers ({}); it cannot pass {method} on now",
                    parking.inner.limit
                ));
                parked.running.detach();
                Ok(CallToolResult::error(format!(
                    "The server behind {name} asked for input ({method}), and the gateway declined the question: \
                     it already holds {} calls waiting for their clients' answers. The call did not finish; \
                     try again later.",
                    parking.inner.limit
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

impl Question {
    /// The question's method, params and the way back to the server.
    pub(crate) fn into_parts(self) -> (String, Value, oneshot::Sender<Result<Value, String>>) {
        (self.method, self.params, self.reply)
    }

    /// Answers the server's request with `answer` (the client's, verbatim).
    fn answer(self, answer: Value) {
        let _ = self.reply.send(Ok(answer));
    }

    /// Answers the server's request with an error saying `why`.
    fn decline(self, why: String) {
        let _ = self.reply.send(Err(why));
    }
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
    parking: &Parking,
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

/// The input handler the host's call gets: each question a legacy server
/// asks during the call goes to the gateway's call, which relays it.
#[derive(Debug)]
struct Questions {
    tx: mpsc::Sender<Question>,
}

/// Why a question got no answer when nobody relays it any more.
const ABANDONED: &str = "the gateway's client is no longer waiting for this call (its request went away, or it did not \
                         answer the gateway's question in time)";

impl Questions {
    fn relay(&self, method: &str, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        let method = method.to_owned();
        Box::pin(async move {
            let elicitation = method == method::ELICITATION_CREATE;
            let (reply, answer) = oneshot::channel();
            let question = Question {
                method,
                params,
                reply,
            };
            let answered = match self.tx.send(question).await {
                Ok(()) => answer.await.ok(),
                Err(_) => None,
            };
            match answered {
                Some(Ok(answer)) => Ok(answer),
                Some(Err(why)) => Err(InputError(why)),
                // Nobody will answer: a form no one filled in is cancelled.
                None if elicitation => Ok(json!({"action": "cancel"})),
                None => Err(InputError(ABANDONED.into())),
            }
        })
    }
}

impl InputHandler for Questions {
    fn support(&self) -> InputSupport {
        // The client checks what it declared (the gateway's whole set);
        // what the upstream client can answer is checked per question.
        InputSupport {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            sampling_tools: true,
            roots: true,
        }
    }

    fn elicit(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        self.relay(method::ELICITATION_CREATE, params)
    }

    fn sample(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        self.relay(method::SAMPLING_CREATE_MESSAGE, params)
    }

    fn roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<Value, InputError>> {
        self.relay(method::ROOTS_LIST, json!({}))
    }
}

/// 128 random bits, hex; a fixed-looking id only if the OS has no
/// randomness (then ids still differ by a counter).
fn random_id() -> String {
    use std::fmt::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        bytes[..8].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    }
    bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_parked_call_lapses_and_its_question_is_cancelled() {
        let parking = Parking::new("r1".into(), Duration::from_secs(60), 1);
        let (tx, questions) = mpsc::channel(1);
        let handler = Questions { tx };
        let running = Running {
            call: Call::Spawned(tokio::spawn(std::future::pending())),
            questions,
            progress: None,
            logs: None,
            asked: 0,
        };
        let mut running = running;
        let cx = InputContext {
            server: "s".into(),
            method: Some("tools/call".into()),
            era: switchboard_wire::Era::Legacy,
        };
        let asked = tokio::spawn(async move { handler.elicit(cx, json!({"message": "?"})).await });
        let question = running.questions.recv().await.unwrap();
        let at = parking
            .park(Parked {
                running,
                question,
                key: "question-1".into(),
                principal: None,
            })
            .ok()
            .unwrap();
        assert_eq!(parking.len(), 1);
        // Full: a second call is refused.
        let (_tx2, questions2) = mpsc::channel(1);
        let (reply, _answer) = oneshot::channel();
        let second = Parked {
            running: Running {
                call: Call::Ended,
                questions: questions2,
                progress: None,
                logs: None,
                asked: 0,
            },
            question: Question {
                method: "roots/list".into(),
                params: json!({}),
                reply,
            },
            key: "question-1".into(),
            principal: None,
        };
        assert!(parking.park(second).is_err());
        // Another principal cannot take it.
        let err = parking.take(&at, Some("mallory")).err().unwrap();
        assert!(err.contains("another caller"), "{err}");
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(parking.len(), 0);
        assert_eq!(asked.await.unwrap().unwrap(), json!({"action": "cancel"}));
        let err = parking.take(&at, None).err().unwrap();
        assert!(
            err.contains("replica \"r1\"") && err.contains("affinity"),
            "{err}"
        );
    }
}
