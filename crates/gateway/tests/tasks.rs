//! Tasks through the gateway over HTTP: our `Client` declaring the tasks
//! extension gets the gateway's own task for a call the downstream server
//! (the testkit's mock) turns into a task, follows it to its end through
//! the gateway (the downstream question relayed up and the answer down),
//! and cancels it through the gateway; another principal's task id, the
//! downstream id and a made-up one are refused like unknown ones; a task
//! asked of another replica gets an error naming the replica holding it; a
//! client without the extension gets the final result; and a gateway with
//! a lasting key that is stopped and replaced leaves the downstream task
//! running for the new one, which resumes it (one audit line) or, asked to,
//! cancels it.

// Helpers outside #[test] functions panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{
    BoxFuture, Client, HttpTransport, InputContext, InputError, InputHandler, InputSupport,
    RequestOptions, ToolCallStart,
};
use switchboard_gateway::{Gateway, GatewayOptions, Telemetry};
use switchboard_host::TokenStore;
use switchboard_host::{ConfigLoader, Host, MountOptions};
use switchboard_server::http::HttpOptions;
use switchboard_server::{AuthError, Principal, ProtectedResource, TokenValidator};
use switchboard_testutil::{Artifacts, built};
use switchboard_wire::JsonObject;
use switchboard_wire::types::{ElicitRequestParams, ElicitResult};
use tokio::sync::oneshot;

const TOOL: &str = "mcp__m__task";

/// A principal per bearer token: `<name>-token` is `<name>`.
struct Tokens;

impl TokenValidator for Tokens {
    fn validate<'a>(
        &'a self,
        token: &'a str,
    ) -> switchboard_server::BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(async move {
            match token.strip_suffix("-token") {
                Some(name) if !name.is_empty() => Ok(Principal::new(name)),
                _ => Err(AuthError::Unauthorized("unknown token".into())),
            }
        })
    }
}

/// Accepts every form with `{"ok": true}` and counts the questions.
#[derive(Debug, Default)]
struct Yes {
    asked: Arc<Mutex<Vec<Value>>>,
}

impl InputHandler for Yes {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_form: true,
            ..InputSupport::NONE
        }
    }

    fn elicit(
        &self,
        _cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        self.asked.lock().unwrap().push(params.into());
        let ok = json!({"ok": true}).as_object().cloned();
        Box::pin(async { Ok(ElicitResult::accept(ok)) })
    }
}

/// A gateway in front of the mock server, on HTTP with bearer tokens.
struct Setup {
    dir: tempfile::TempDir,
    /// Questions the host's own input handler was asked (none should be:
    /// a tasked call's questions go to the upstream client).
    host_asked: Arc<Mutex<Vec<Value>>>,
    url: String,
    host: Host,
    _gateway: Gateway,
    _stop: oneshot::Sender<()>,
}

impl Setup {
    async fn start() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let mock = built("switchboard-testkit", Artifacts::Bins).join("mock-server");
        let log = dir.path().join("requests.jsonl");
        let config = json!({
            "mcpServers": {"m": {"command": mock, "args": ["--log", log]}},
            "permissions": {"allow": [TOOL]},
            "audit": "audit.jsonl",
        });
        let path = dir.path().join(".mcp.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let config = ConfigLoader::new().explicit(path).load().unwrap();
        let mut options = MountOptions::default();
        options.token_store = Some(TokenStore::at(dir.path().join("oauth.json")));
        // The host can answer forms itself (so it declares them downstream).
        let host_input = Yes::default();
        let host_asked = Arc::clone(&host_input.asked);
        options.input_handler = Some(Arc::new(host_input));
        let host = Host::mount(config, options).await.unwrap();
        let (url, gateway, stop) = serve(&host, "a").await;
        Setup {
            dir,
            host_asked,
            url,
            host,
            _gateway: gateway,
            _stop: stop,
        }
    }

    /// Our client as `who`, with or without the tasks extension.
    async fn client(&self, who: &str, tasks: bool, input: Yes) -> Client {
        client_at(&self.url, who, tasks, input).await
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A gateway of `host` named `replica`, on HTTP with bearer tokens: its
/// URL, and what keeps it serving.
async fn serve(host: &Host, replica: &str) -> (String, Gateway, oneshot::Sender<()>) {
    serve_with(host, GatewayOptions::default().replica(replica)).await
}

/// [`serve`] with `options`.
async fn serve_with(
    host: &Host,
    options: GatewayOptions,
) -> (String, Gateway, oneshot::Sender<()>) {
    let gateway = Gateway::new(host, options).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let prm = ProtectedResource::new(url.clone(), "http://127.0.0.1:1/issuer");
    let (stop, stopped) = oneshot::channel::<()>();
    let server = gateway.server().clone();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let options = HttpOptions::new().auth(Tokens, prm);
        let _ = switchboard_server::http::serve(server, listener, options, shutdown).await;
    });
    (url, gateway, stop)
}

/// Our client of the gateway at `url` as `who`.
async fn client_at(url: &str, who: &str, tasks: bool, input: Yes) -> Client {
    {
        let transport = HttpTransport::builder(who, url)
            .header("Authorization", format!("Bearer {who}-token"))
            .remember_era(false)
            .build()
            .unwrap();
        within(
            Client::builder(who, transport)
                .tasks(tasks)
                .input_handler(input)
                .connect(),
        )
        .await
        .unwrap()
    }
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("did not finish in time")
}

/// Follows `task` to its end: the result's text.
async fn finished_text(client: &Client, task: switchboard_wire::tasks::Task) -> String {
    within(client.wait_task(task, &RequestOptions::default()))
        .await
        .unwrap()
        .joined_text()
}

fn args(v: Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn requests(log: &[Value], method: &str) -> Vec<Value> {
    log.iter()
        .filter(|m| m["method"] == method)
        .cloned()
        .collect()
}

/// Waits until `f` holds of the lines of `path`.
async fn eventually(path: &Path, f: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..1000 {
        let all = lines(path);
        if f(&all) {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never showed what was expected", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_task_is_handed_on_and_followed_through_the_gateway() {
    let setup = Setup::start().await;
    let yes = Yes::default();
    let asked = Arc::clone(&yes.asked);
    let alice = setup.client("alice", true, yes).await;
    let start = within(alice.call_tool_start(
        TOOL,
        args(json!({"inputs": 1, "work_ms": 50, "poll_ms": 20})),
        &RequestOptions::default(),
    ))
    .await
    .unwrap();
    let ToolCallStart::Task(task) = start else {
        panic!("expected a task: {start:?}");
    };
    // The gateway's own id, not the downstream server's.
    assert!(!task.task_id.starts_with("mock-task-"), "{}", task.task_id);
    let text = finished_text(&alice, task.clone()).await;
    assert!(text.contains("task done after 1 inputs"), "{text}");
    // The downstream question reached alice once (not the host's own
    // handler), and her answer went down.
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(setup.host_asked.lock().unwrap().is_empty());
    let log = lines(&setup.path("requests.jsonl"));
    let updates = requests(&log, "tasks/update");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(
        updates[0]["params"]["inputResponses"]["confirm"]["content"]["ok"],
        true
    );
    let downstream_id = updates[0]["params"]["taskId"].as_str().unwrap().to_owned();
    // The governed path: one audit line, with the downstream task's id.
    let audit = eventually(&setup.path("audit.jsonl"), |a| !a.is_empty()).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["outcome"], "ok");
    assert_eq!(audit[0]["taskId"], downstream_id.as_str());

    // Alice still sees her finished task; bob cannot, nor can anyone reach
    // the downstream id or a made-up one: each is an unknown task.
    let again = within(alice.get_task(&task.task_id)).await.unwrap();
    assert_eq!(again.status.as_str(), "completed");
    let bob = setup.client("bob", true, Yes::default()).await;
    for id in [
        task.task_id.as_str(),
        downstream_id.as_str(),
        "forged-task-id",
    ] {
        let err = within(bob.get_task(id)).await.unwrap_err();
        assert_eq!(err.code(), Some(-32602), "{id}: {err}");
        let err = within(bob.cancel_task(id)).await.unwrap_err();
        assert_eq!(err.code(), Some(-32602), "{id}: {err}");
    }
    let err = within(alice.get_task(&downstream_id)).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
    setup.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_task_that_fails_fails_the_gateways_task_with_its_error() {
    let setup = Setup::start().await;
    let alice = setup.client("alice", true, Yes::default()).await;
    let start = within(alice.call_tool_start(
        TOOL,
        args(json!({"fail": true, "work_ms": 20, "poll_ms": 20})),
        &RequestOptions::default(),
    ))
    .await
    .unwrap();
    let ToolCallStart::Task(task) = start else {
        panic!("expected a task: {start:?}");
    };
    let err = within(alice.wait_task(task.clone(), &RequestOptions::default()))
        .await
        .unwrap_err();
    let error = err.protocol_error().expect("the task's error");
    assert_eq!(error.code, -32603, "{err}");
    assert!(error.message.contains("the mock task failed"), "{err}");
    let now = within(alice.get_task(&task.task_id)).await.unwrap();
    assert_eq!(now.status.as_str(), "failed");
    // Audited as the protocol error it was.
    let audit = eventually(&setup.path("audit.jsonl"), |a| !a.is_empty()).await;
    assert_eq!(audit[0]["outcome"], "protocol_error");
    setup.host.shutdown().await;
}

/// Starts a call the mock turns into a task that never ends by itself.
async fn endless_task(client: &Client) -> switchboard_wire::tasks::Task {
    let start = within(client.call_tool_start(
        TOOL,
        args(json!({"never": true, "poll_ms": 20})),
        &RequestOptions::default(),
    ))
    .await
    .unwrap();
    let ToolCallStart::Task(task) = start else {
        panic!("expected a task: {start:?}");
    };
    task
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_gateways_task_cancels_the_downstream_one() {
    let setup = Setup::start().await;
    let alice = setup.client("alice", true, Yes::default()).await;
    let task = endless_task(&alice).await;
    within(alice.cancel_task(&task.task_id)).await.unwrap();
    let log = eventually(&setup.path("requests.jsonl"), |l| {
        !requests(l, "tasks/cancel").is_empty()
    })
    .await;
    let cancelled = &requests(&log, "tasks/cancel")[0]["params"]["taskId"];
    assert!(
        cancelled.as_str().unwrap().starts_with("mock-task-"),
        "{cancelled}"
    );
    // The call following the downstream task saw it end: audited.
    let audit = eventually(&setup.path("audit.jsonl"), |a| !a.is_empty()).await;
    assert_eq!(&audit[0]["taskId"], cancelled);
    assert_ne!(audit[0]["outcome"], "ok");
    let now = within(alice.get_task(&task.task_id)).await.unwrap();
    assert_eq!(now.status.as_str(), "cancelled");
    setup.host.shutdown().await;
}

// Regression: a task that ends cancelled (here by its caller) is the
// server answering, not failing, so a run of them longer than the
// breaker's threshold of consecutive failures leaves the server's calls
// running instead of pausing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_cancelled_tasks_does_not_pause_the_server() {
    let setup = Setup::start().await;
    let alice = setup.client("alice", true, Yes::default()).await;
    const RUN: usize = 4;
    for _ in 0..RUN {
        let task = endless_task(&alice).await;
        within(alice.cancel_task(&task.task_id)).await.unwrap();
    }
    // Each call following a downstream task saw it end (audited after the
    // breaker heard of it).
    eventually(&setup.path("audit.jsonl"), |a| a.len() >= RUN).await;
    let task = endless_task(&alice).await;
    within(alice.cancel_task(&task.task_id)).await.unwrap();
    setup.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_extension_gets_the_final_result() {
    let setup = Setup::start().await;
    let carol = setup.client("carol", false, Yes::default()).await;
    let result = within(carol.call_tool(TOOL, args(json!({"work_ms": 50, "poll_ms": 20}))))
        .await
        .unwrap();
    assert!(
        result.joined_text().contains("task done after 0 inputs"),
        "{}",
        result.joined_text()
    );
    // Downstream it was a task, which the gateway followed itself.
    let log = lines(&setup.path("requests.jsonl"));
    assert!(!requests(&log, "tasks/get").is_empty());
    setup.host.shutdown().await;
}

// A task lives in the replica that started it: its id names that replica,
// and a request for it reaching another replica says where it lives
// (and what to do) instead of only "not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asked_of_another_replica_names_the_one_holding_it() {
    let setup = Setup::start().await;
    let (url_b, _b, _stop_b) = serve(&setup.host, "b").await;
    let alice = setup.client("alice", true, Yes::default()).await;
    let task = endless_task(&alice).await;
    assert!(task.task_id.starts_with("a."), "{}", task.task_id);
    let alice_at_b = client_at(&url_b, "alice", true, Yes::default()).await;
    let err = within(alice_at_b.get_task(&task.task_id))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("replica a started it") && text.contains("Mcp-Name"),
        "{text}"
    );
    // A made-up id is only unknown, and replica a still has the task.
    let err = within(alice_at_b.get_task("made-up")).await.unwrap_err();
    assert!(!err.to_string().contains("replica"), "{err}");
    let here = within(alice.get_task(&task.task_id)).await.unwrap();
    assert_eq!(here.status.as_str(), "working");
    within(alice.cancel_task(&task.task_id)).await.unwrap();
    setup.host.shutdown().await;
}

/// Keeps a gateway serving.
type Serving = (Gateway, oneshot::Sender<()>);

/// A task of `work` handed on by a keyed gateway of `setup`'s host, which
/// is then stopped and replaced by a new one (the same replica name and
/// key): the task's id, and the new gateway's URL.
async fn handed_on_then_replaced(setup: &Setup, work: Value) -> (String, String, Serving) {
    let keyed = || {
        GatewayOptions::default()
            .replica("a")
            .state_key(Some(b"kept across restarts".to_vec()))
            .telemetry(Telemetry::from_env(true).unwrap())
    };
    let (url, gateway, stop) = serve_with(&setup.host, keyed()).await;
    let alice = client_at(&url, "alice", true, Yes::default()).await;
    let start = within(alice.call_tool_start(TOOL, args(work), &RequestOptions::default()))
        .await
        .unwrap();
    let ToolCallStart::Task(task) = start else {
        panic!("expected a task: {start:?}");
    };
    eventually(&setup.path("requests.jsonl"), |l| {
        !requests(l, "tasks/get").is_empty()
    })
    .await;
    // The gateway stops (its host goes on), and a new one takes its place.
    drop(gateway);
    let _ = stop.send(());
    let (url, gateway, stop) = serve_with(&setup.host, keyed()).await;
    (task.task_id, url, (gateway, stop))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_started_again_resumes_the_tasks_the_stopped_one_handed_on() {
    let setup = Setup::start().await;
    let work = json!({"work_ms": 800, "poll_ms": 20});
    let (id, url, serving) = handed_on_then_replaced(&setup, work).await;
    let alice = client_at(&url, "alice", true, Yes::default()).await;
    // Bob cannot pick up Alice's task.
    let bob = client_at(&url, "bob", true, Yes::default()).await;
    let err = within(bob.get_task(&id)).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
    let resumed = within(alice.get_task(&id)).await.unwrap();
    let text = finished_text(&alice, resumed).await;
    assert!(text.contains("task done after 0 inputs"), "{text}");
    // The new gateway counts the task it picked up.
    let metrics = serving.0.telemetry().render_metrics(&setup.host).unwrap();
    assert!(
        metrics.contains("switchboard_tasks_resumed_total{server=\"m\"} 1"),
        "{metrics}"
    );
    // Time for the stopped gateway's call, were it still following the
    // task, to see it end and write a line of its own.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    setup.host.shutdown().await;
    // The downstream task was left alone, and the call has one line: the
    // stopped gateway's call ended unconcluded, the resumed one wrote it.
    let log = lines(&setup.path("requests.jsonl"));
    assert!(requests(&log, "tasks/cancel").is_empty(), "{log:#?}");
    let audit = lines(&setup.path("audit.jsonl"));
    assert_eq!(audit.len(), 1, "{audit:#?}");
    assert_eq!(audit[0]["outcome"], "ok");
    assert_eq!(audit[0]["principal"], "alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_first_thing_after_a_restart_cancels_the_downstream_one() {
    let setup = Setup::start().await;
    let work = json!({"never": true, "poll_ms": 20});
    let (id, url, _serving) = handed_on_then_replaced(&setup, work).await;
    let alice = client_at(&url, "alice", true, Yes::default()).await;
    within(alice.cancel_task(&id)).await.unwrap();
    let log = eventually(&setup.path("requests.jsonl"), |l| {
        !requests(l, "tasks/cancel").is_empty()
    })
    .await;
    let cancelled = &requests(&log, "tasks/cancel")[0]["params"]["taskId"];
    // The resumed call saw the downstream task end: its one line.
    let audit = eventually(&setup.path("audit.jsonl"), |a| !a.is_empty()).await;
    assert_eq!(&audit[0]["taskId"], cancelled);
    assert_ne!(audit[0]["outcome"], "ok");
    let now = within(alice.get_task(&id)).await.unwrap();
    assert_eq!(now.status.as_str(), "cancelled");
    setup.host.shutdown().await;
    assert_eq!(lines(&setup.path("audit.jsonl")).len(), 1);
}
