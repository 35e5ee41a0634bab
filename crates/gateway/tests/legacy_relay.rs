//! A legacy (2025-11-25) server's own requests during a tool call
//! (`roots/list`, `sampling/createMessage`, `elicitation/create`) relayed
//! to the gateway's client as `input_required` rounds while the call is
//! parked on the replica that asked (MRTR-01, MRTR-05, MRTR-09, ELIC-10).
//!
//! The downstream server is the testkit's mock in `--legacy` mode: its
//! `sample` tool asks `ping`, then each of roots, sampling and elicitation
//! the client declared at `initialize` (the gateway declares all three),
//! and returns the answers keyed by method.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{
    BoxFuture, Client, EraPolicy, HttpTransport, InputAnswer, InputContext, InputError,
    InputHandler, InputQuestion, InputSupport, RequestOptions, Resume,
};
use switchboard_gateway::{GatewayOptions, relay_input_handler};
use switchboard_host::Host;

use crate::harness::{Dir, serve, stdio};

const TOOL: &str = "mcp__old__sample";

/// A host mounting the legacy mock as `old`, relaying its questions.
async fn legacy_host(dir: &Dir) -> Host {
    dir.mount_with(
        json!({"mcpServers": {"old": stdio(&["--legacy"])}}),
        Some(relay_input_handler(None)),
    )
    .await
}

/// The upstream user and model: answers what it declares, recording each
/// question (method, params).
#[derive(Debug, Clone)]
struct Upstream {
    support: InputSupport,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Upstream {
    fn all() -> Upstream {
        Upstream {
            support: InputSupport {
                elicitation_form: true,
                sampling: true,
                roots: true,
                ..InputSupport::NONE
            },
            asked: Arc::default(),
        }
    }

    fn elicitation_only() -> Upstream {
        Upstream {
            support: InputSupport {
                elicitation_form: true,
                ..InputSupport::NONE
            },
            asked: Arc::default(),
        }
    }

    fn methods(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    fn record(&self, method: &str, params: Value) {
        self.asked.lock().unwrap().push((method.into(), params));
    }
}

fn roots_answer() -> Value {
    json!({"roots": [{"uri": "file:///upstream/project"}]})
}

fn sampling_answer() -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "from upstream"}, "model": "m", "stopReason": "endTurn", "x-usage": {"tokens": 4}})
}

fn elicitation_answer() -> Value {
    // A member no type knows, which must reach the server as it is.
    json!({"action": "accept", "content": {"ok": true}, "x-answered-by": {"person": "ops", "n": 3}})
}

impl InputHandler for Upstream {
    fn support(&self) -> InputSupport {
        self.support
    }

    fn answer(
        &self,
        _cx: InputContext,
        q: InputQuestion,
    ) -> BoxFuture<'_, Result<InputAnswer, InputError>> {
        self.record(q.method(), q.params());
        let answer = match q {
            InputQuestion::Elicit(_) => elicitation_answer(),
            InputQuestion::Sample(_) => sampling_answer(),
            InputQuestion::Roots => roots_answer(),
        };
        Box::pin(async move { q.answer_from(answer) })
    }
}

/// A client of the gateway at `url` answering through `upstream`.
async fn upstream_client(url: &str, upstream: &Upstream, policy: EraPolicy) -> Client {
    upstream_client_with(url, upstream, policy, false).await
}

/// [`upstream_client`], declaring the tasks extension when `tasks`.
async fn upstream_client_with(
    url: &str,
    upstream: &Upstream,
    policy: EraPolicy,
    tasks: bool,
) -> Client {
    let transport = HttpTransport::builder("gateway", url).build().unwrap();
    Client::builder("gateway", transport)
        .timeout(Duration::from_secs(60))
        .era_policy(policy)
        .tasks(tasks)
        .input_handler(upstream.clone())
        .connect()
        .await
        .unwrap()
}

/// Waits until the audit log has `n` lines (a generous bound, never
/// asserted as a time).
async fn audit_lines(dir: &Dir, n: usize) -> Vec<Value> {
    for _ in 0..400 {
        let audit = dir.audit();
        if audit.len() >= n {
            return audit;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the audit log never got {n} lines: {:?}", dir.audit());
}

/// The answers the mock returned, keyed by method.
fn answers(result: &switchboard_wire::CallToolResult) -> Value {
    result.structured_content.clone().unwrap()
}

/// Checks one relayed call end to end: three questions, three rounds, the
/// answers back in the result, one audit line.
async fn relays_every_question(policy: EraPolicy, tasks: bool) {
    let dir = Dir::new();
    let host = legacy_host(&dir).await;
    let gateway = serve(&host, GatewayOptions::default().assume_yes(true)).await;
    let upstream = Upstream::all();
    let c = upstream_client_with(&gateway.url, &upstream, policy, tasks).await;

    let r = c.call_tool(TOOL, None).await.unwrap();
    assert!(!r.is_error(), "{r:?}");
    let got = answers(&r);
    // Each question reached the upstream client, in the server's order,
    // one per round, and each answer went back to the server.
    assert_eq!(
        upstream.methods(),
        ["roots/list", "sampling/createMessage", "elicitation/create"]
    );
    let asked = upstream.asked.lock().unwrap().clone();
    assert_eq!(asked[2].1["message"], "Proceed?");
    // Members no type knows pass the relay unchanged both ways: in the
    // server's questions up, and in the client's answers down (checked
    // whole below).
    assert_eq!(
        asked[1].1["x-mock-trace"],
        json!({"asked-by": "mock", "n": 2})
    );
    assert_eq!(
        asked[2].1["x-mock-trace"],
        json!({"asked-by": "mock", "n": 1})
    );
    assert_eq!(got["roots/list"], roots_answer());
    assert_eq!(got["sampling/createMessage"], sampling_answer());
    assert_eq!(got["elicitation/create"], elicitation_answer());
    // The gateway answered the server's ping itself.
    assert_eq!(got["ping"], json!({}));
    // One call, one audit line, written when it ended.
    let audit = audit_lines(&dir, 1).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["tool"], TOOL);
    assert_eq!(audit[0]["outcome"], "ok");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_servers_questions_are_relayed_round_by_round_to_a_modern_client() {
    relays_every_question(EraPolicy::Probe, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_declaring_client_gets_a_legacy_servers_questions_on_a_plain_call() {
    // The gateway's task path: the call is no task, its questions are
    // relayed and the call parked the same way.
    relays_every_question(EraPolicy::Probe, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_client_gets_a_legacy_servers_questions_as_requests() {
    // The gateway's framework turns each input_required into a request of
    // its own on the legacy session, and calls the tool again with the
    // answer: the parked call goes on.
    relays_every_question(EraPolicy::LegacyOnly, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_client_cannot_answer_is_declined_and_the_call_ends() {
    let dir = Dir::new();
    let host = legacy_host(&dir).await;
    let gateway = serve(&host, GatewayOptions::default().assume_yes(true)).await;
    let upstream = Upstream::elicitation_only();
    let c = upstream_client(&gateway.url, &upstream, EraPolicy::Probe).await;

    // The server's first question is roots/list, which this client did
    // not declare (MRTR-05): the call ends with the reason.
    let r = c.call_tool(TOOL, None).await.unwrap();
    assert!(r.is_error(), "{r:?}");
    let text = r.joined_text();
    assert!(text.contains("roots (roots/list)"), "{text}");
    assert!(text.contains("did not declare"), "{text}");
    assert!(upstream.methods().is_empty(), "{:?}", upstream.methods());
    // Downstream, the question was answered with an error and the later
    // ones cancelled: the call ran to its end and wrote its one line.
    let audit = audit_lines(&dir, 1).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["tool"], TOOL);
    assert_eq!(audit[0]["outcome"], "ok");
    host.shutdown().await;
}

/// The first round by hand: the gateway's `input_required`, not answered.
async fn first_round(c: &Client) -> switchboard_wire::InputRequiredResult {
    let options = RequestOptions {
        relay_input: true,
        ..RequestOptions::default()
    };
    let err = c.call_tool_with(TOOL, None, &options).await.unwrap_err();
    err.input_required().cloned().unwrap()
}

/// The retry answering `key` of `asked` with `answer`.
fn retry(
    asked: &switchboard_wire::InputRequiredResult,
    key: &str,
    answer: Value,
) -> RequestOptions {
    let mut responses = serde_json::Map::new();
    responses.insert(key.into(), answer);
    RequestOptions {
        relay_input: true,
        resume: Some(Resume {
            input_responses: Some(responses),
            request_state: asked.request_state.clone(),
        }),
        ..RequestOptions::default()
    }
}

/// The one input request of a round: its key and method.
fn only_request(asked: &switchboard_wire::InputRequiredResult) -> (String, String) {
    let requests: Vec<_> = asked.requests().collect();
    assert_eq!(requests.len(), 1, "{asked:?}");
    let (key, request) = &requests[0];
    (key.to_string(), request.clone().unwrap().method)
}

/// The options of replica `name` of a gateway pair sharing a state key.
fn replica(name: &str) -> GatewayOptions {
    GatewayOptions::default()
        .assume_yes(true)
        .state_key(Some(vec![7u8; 32]))
        .replica(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_on_another_replica_is_told_the_call_needs_affinity() {
    let dir = Dir::new();
    let host = legacy_host(&dir).await;
    let one = serve(&host, replica("replica-one")).await;
    let two = serve(&host, replica("replica-two")).await;
    let upstream = Upstream::all();
    let c1 = upstream_client(&one.url, &upstream, EraPolicy::Probe).await;
    let c2 = upstream_client(&two.url, &upstream, EraPolicy::Probe).await;

    let asked = first_round(&c1).await;
    let (key1, method) = only_request(&asked);
    assert_eq!(method, "roots/list");
    let answer = retry(&asked, &key1, roots_answer());

    // The state opens on replica two (shared key), but the call is not
    // there.
    let err = c2.call_tool_with(TOOL, None, &answer).await.unwrap_err();
    let text = err.to_string();
    assert!(err.is_protocol(), "{err:?}");
    assert!(text.contains("legacy (2025-11-25) server"), "{text}");
    assert!(text.contains("replica \"replica-one\""), "{text}");
    assert!(text.contains("affinity"), "{text}");

    // The same retry on the replica holding the call goes on: the next
    // question comes.
    let asked = retry_round(&c1, &answer).await;
    let (_, method) = only_request(&asked);
    assert_eq!(method, "sampling/createMessage");
    host.shutdown().await;
}

// A replica that has the asking one among its peers sends the retry on to
// it (the state starts with that replica's name), round after round, to
// the result: no affinity needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_on_a_peer_replica_is_sent_on_to_the_one_holding_the_call() {
    let dir = Dir::new();
    let host = legacy_host(&dir).await;
    let one = serve(&host, replica("replica-one")).await;
    let two = serve(
        &host,
        replica("replica-two").peers(vec![("replica-one".into(), one.url.clone())]),
    )
    .await;
    let upstream = Upstream::all();
    let c1 = upstream_client(&one.url, &upstream, EraPolicy::Probe).await;
    let c2 = upstream_client(&two.url, &upstream, EraPolicy::Probe).await;

    // Asked on one; every retry goes to two, which sends it on to one.
    let mut asked = first_round(&c1).await;
    assert!(
        asked
            .request_state
            .as_deref()
            .is_some_and(|s| s.starts_with("replica-one.")),
        "{asked:?}"
    );
    let mut methods = Vec::new();
    let result = loop {
        let (key, method) = only_request(&asked);
        let answer = match method.as_str() {
            "roots/list" => roots_answer(),
            "sampling/createMessage" => sampling_answer(),
            _ => elicitation_answer(),
        };
        methods.push(method);
        match c2
            .call_tool_with(TOOL, None, &retry(&asked, &key, answer))
            .await
        {
            Ok(result) => break result,
            Err(err) => {
                asked = err
                    .input_required()
                    .cloned()
                    .unwrap_or_else(|| panic!("the retry failed: {err}"));
            }
        }
    };
    assert_eq!(
        methods,
        ["roots/list", "sampling/createMessage", "elicitation/create"]
    );
    let text = result.joined_text();
    assert!(text.contains("file:///upstream/project"), "{text}");
    assert!(text.contains("from upstream"), "{text}");
    host.shutdown().await;
}

async fn retry_round(
    c: &Client,
    options: &RequestOptions,
) -> switchboard_wire::InputRequiredResult {
    let err = c.call_tool_with(TOOL, None, options).await.unwrap_err();
    err.input_required().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_without_a_retry_lapses_and_still_writes_its_audit_line() {
    let dir = Dir::new();
    let host = legacy_host(&dir).await;
    let mut options = GatewayOptions::default().assume_yes(true).replica("only");
    options.park_ttl = Some(Duration::from_millis(200));
    let gateway = serve(&host, options).await;
    let upstream = Upstream::all();
    let c = upstream_client(&gateway.url, &upstream, EraPolicy::Probe).await;

    let asked = first_round(&c).await;
    let (key, _) = only_request(&asked);
    // No retry: the parked call lapses, its question is cancelled, and the
    // server ends the call, which writes its line.
    let audit = audit_lines(&dir, 1).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["tool"], TOOL);
    // A late retry finds nothing parked.
    let err = c
        .call_tool_with(TOOL, None, &retry(&asked, &key, roots_answer()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("lapsed"), "{err}");
    host.shutdown().await;
}

/// Runs the legacy mock's `job` task (2025-11-25 tasks), which asks
/// `elicitation/create` while `tasks/result` is awaited, through the
/// gateway for a client that follows tasks or not.
async fn a_legacy_task_question(tasks: bool) {
    let dir = Dir::new();
    let host = dir
        .mount_with(
            json!({"mcpServers": {"old": stdio(&["--legacy", "--legacy-tasks"])}}),
            Some(relay_input_handler(None)),
        )
        .await;
    let gateway = serve(&host, GatewayOptions::default().assume_yes(true)).await;
    let upstream = Upstream::all();
    let c = upstream_client_with(&gateway.url, &upstream, EraPolicy::Probe, tasks).await;
    let r = c
        .call_tool(
            "mcp__old__job",
            Some(
                json!({"ask": true, "work_ms": 10})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(upstream.methods(), ["elicitation/create"], "{r:?}");
    assert!(r.joined_text().contains("job done"), "{r:?}");
    let audit = audit_lines(&dir, 1).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["outcome"], "ok");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_tasks_question_reaches_a_plain_client_through_a_parked_call() {
    a_legacy_task_question(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_tasks_question_reaches_a_task_following_client_as_its_tasks() {
    a_legacy_task_question(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_cannot_be_tied_to_one_call_reaches_no_client() {
    let dir = Dir::new();
    let host = legacy_host(&dir).await;
    let gateway = serve(&host, GatewayOptions::default().assume_yes(true)).await;
    let first = Upstream::all();
    let second = Upstream::all();
    let a = upstream_client(&gateway.url, &first, EraPolicy::Probe).await;
    let b = upstream_client(&gateway.url, &second, EraPolicy::Probe).await;

    // A's call waits on its first question, its tools/call still in flight
    // on the server's stdio connection.
    let asked = first_round(&a).await;
    let (key, _) = only_request(&asked);
    // B's call runs meanwhile: with two calls in flight, nothing in the
    // server's requests says whose they are, so none reaches any client
    // (neither A's nor B's): each is declined, saying why.
    let r = b.call_tool(TOOL, None).await.unwrap();
    let got = answers(&r);
    let declined = got["roots/list"]["error"]["message"].as_str().unwrap_or("");
    assert!(declined.contains("in flight"), "{got}");
    assert!(second.methods().is_empty(), "{:?}", second.methods());
    assert!(first.methods().is_empty(), "{:?}", first.methods());
    // A, alone again, goes on: its next question comes to its client.
    let next = retry_round(&a, &retry(&asked, &key, roots_answer())).await;
    assert_eq!(only_request(&next).1, "sampling/createMessage");
    host.shutdown().await;
}
