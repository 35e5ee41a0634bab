//! The tasks extension (`io.modelcontextprotocol/tasks`) over HTTP: task
//! creation only for declaring clients, polling, input through
//! `tasks/update`, cancellation, expiry after the TTL, task ids bound to
//! the principal that created them, and resumable tasks picked up by a
//! restarted server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;
use switchboard_server::{
    BuildError, Context, Elicitation, HandlerError, InputRequired, NoArgs, Outcome,
    ProtectedResource, Server, ServerBuilder, TaskContext, TaskSupport, TaskWork, ToolOutcome,
    ToolSpec,
};

use crate::auth::call_as;
use crate::util::*;

const EXT: &str = "io.modelcontextprotocol/tasks";

fn tasks_meta() -> Value {
    meta_with(json!({"elicitation": {}, "extensions": {EXT: {}}}))
}

fn tasks_server(ttl: Duration) -> Server {
    tasks_builder(ttl).build().unwrap()
}

fn tasks_builder(ttl: Duration) -> ServerBuilder {
    Server::builder("tasks-test", "1.0.0")
        .task_tool(
            "quick",
            "Finishes at once",
            |_: NoArgs, t: TaskContext| async move {
                t.set_status("almost there");
                "quick done"
            },
        )
        .task_tool(
            "forever",
            "Never finishes",
            |_: NoArgs, t: TaskContext| async move {
                t.set_status("still going");
                t.cancelled().await;
                "unreachable"
            },
        )
        .task_tool(
            "asker",
            "Asks two questions",
            |_: NoArgs, t: TaskContext| async move {
                let form = || {
                    Elicitation::form(
                        "?",
                        json!({"type": "object", "properties": {"v": {"type": "string"}}}),
                    )
                };
                let a = t
                    .ask(InputRequired::new().elicit("a", form()).elicit("b", form()))
                    .await?;
                let v = |k: &str| {
                    a.raw(k)
                        .map(|x| x["content"]["v"].clone())
                        .unwrap_or_default()
                };
                Ok::<_, HandlerError>(format!("{} {}", v("a"), v("b")))
            },
        )
        .task_tool_spec(
            ToolSpec::new("must").task_support(TaskSupport::Required),
            |_: NoArgs, _t: TaskContext| async { "must done" },
        )
        .task_options(ttl, Duration::from_millis(50))
}

async fn call(http: &Http, method: &str, mut params: Value) -> Resp {
    params["_meta"] = tasks_meta();
    http.call(method, params).await
}

async fn get(http: &Http, id: &str) -> Value {
    call(http, "tasks/get", json!({"taskId": id}))
        .await
        .result()
}

/// Polls until the task is terminal or in `status`.
async fn wait_for(http: &Http, id: &str, status: &str) -> Value {
    for _ in 0..400 {
        let t = get(http, id).await;
        let s = t["status"].as_str().unwrap().to_owned();
        if s == status || ["completed", "failed", "cancelled"].contains(&s.as_str()) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never reached {status}");
}

async fn start_task(http: &Http, tool: &str) -> String {
    let created = call(http, "tools/call", json!({"name": tool, "arguments": {}}))
        .await
        .result();
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_declaring_client_gets_a_task_it_can_poll_to_its_result() {
    let http = start(tasks_server(Duration::from_secs(60)), HttpOptions::new()).await;
    let created = call(
        &http,
        "tools/call",
        json!({"name": "quick", "arguments": {}}),
    )
    .await
    .result();
    // A flat CreateTaskResult: no result, no requestState, ttlMs always there.
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert!(created.get("result").is_none() && created.get("requestState").is_none());
    assert_eq!(created["ttlMs"], 60_000);
    assert_eq!(created["pollIntervalMs"], 50);
    let id = created["taskId"].as_str().unwrap();
    // Unguessable: 256 random bits.
    assert!(id.len() >= 40, "{id}");
    let done = wait_for(&http, id, "completed").await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "quick done");
    assert!(
        done["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );
}

#[tokio::test]
async fn without_the_extension_optional_tasks_run_inside_the_call_and_required_ones_are_refused() {
    let http = start(tasks_server(Duration::from_secs(60)), HttpOptions::new()).await;
    let plain = http
        .call("tools/call", json!({"name": "quick", "arguments": {}}))
        .await
        .result();
    assert_eq!(plain["resultType"], "complete");
    assert_eq!(plain["content"][0]["text"], "quick done");
    let refused = http
        .call("tools/call", json!({"name": "must", "arguments": {}}))
        .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.error_code(), -32021);
    assert!(
        refused.response()["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object()
    );
    // The task methods need the extension too.
    let r = http.call("tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(r.error_code(), -32021);
    // tasks/list and tasks/result are gone in the extension.
    let r = call(&http, "tasks/list", json!({})).await;
    assert_eq!(r.error_code(), -32601);
}

#[tokio::test]
async fn input_comes_through_tasks_update_a_few_answers_at_a_time() {
    let http = start(tasks_server(Duration::from_secs(60)), HttpOptions::new()).await;
    let id = start_task(&http, "asker").await;
    let t = wait_for(&http, &id, "input_required").await;
    assert_eq!(t["inputRequests"]["a"]["method"], "elicitation/create");
    assert!(t["inputRequests"]["b"].is_object());
    let ack = call(
        &http,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"a": {"action": "accept", "content": {"v": "x"}}, "zzz": {}}}),
    )
    .await
    .result();
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none());
    let t = get(&http, &id).await;
    assert_eq!(t["status"], "input_required");
    assert!(t["inputRequests"].get("a").is_none());
    assert!(t["inputRequests"]["b"].is_object());
    call(
        &http,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"b": {"action": "accept", "content": {"v": "y"}}}}),
    )
    .await
    .result();
    let done = wait_for(&http, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "\"x\" \"y\"");
}

#[tokio::test]
async fn cancel_stops_the_work_and_is_acknowledged_again_once_terminal() {
    let http = start(tasks_server(Duration::from_secs(60)), HttpOptions::new()).await;
    let id = start_task(&http, "forever").await;
    assert_eq!(get(&http, &id).await["statusMessage"], "still going");
    let ack = call(&http, "tasks/cancel", json!({"taskId": id}))
        .await
        .result();
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(
        wait_for(&http, &id, "cancelled").await["status"],
        "cancelled"
    );
    let again = call(&http, "tasks/cancel", json!({"taskId": id}))
        .await
        .result();
    assert_eq!(again["resultType"], "complete");
}

#[tokio::test]
async fn a_task_is_gone_once_its_ttl_has_passed() {
    let http = start(tasks_server(Duration::from_millis(300)), HttpOptions::new()).await;
    let id = start_task(&http, "quick").await;
    assert_eq!(
        wait_for(&http, &id, "completed").await["status"],
        "completed"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let r = call(&http, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(r.error_code(), -32602);
}

#[tokio::test]
async fn another_principals_task_id_is_answered_like_an_unknown_one() {
    let prm = ProtectedResource::new("http://127.0.0.1/mcp", "http://127.0.0.1:1/issuer");
    let http = start(
        tasks_server(Duration::from_secs(60)),
        HttpOptions::new().auth(Tokens, prm),
    )
    .await;
    let p = |v: Value| {
        let mut v = v;
        v["_meta"] = tasks_meta();
        v
    };
    let created = call_as(
        &http,
        "alice-token",
        "tools/call",
        p(json!({"name": "forever", "arguments": {}})),
    )
    .await
    .result();
    let id = created["taskId"].as_str().unwrap();
    let theirs = call_as(&http, "bob-token", "tasks/get", p(json!({"taskId": id}))).await;
    let unknown = call_as(
        &http,
        "bob-token",
        "tasks/get",
        p(json!({"taskId": "no-such-task"})),
    )
    .await;
    assert_eq!(theirs.error_code(), -32602);
    assert_eq!(theirs.response()["error"], unknown.response()["error"]);
    // Bob cannot cancel it either; Alice still sees it working.
    let r = call_as(&http, "bob-token", "tasks/cancel", p(json!({"taskId": id}))).await;
    assert_eq!(r.error_code(), -32602);
    let mine = call_as(&http, "alice-token", "tasks/get", p(json!({"taskId": id})))
        .await
        .result();
    assert_eq!(mine["status"], "working");
}

#[tokio::test]
async fn mcp_name_must_match_the_task_id() {
    let http = start(tasks_server(Duration::from_secs(60)), HttpOptions::new()).await;
    let id = start_task(&http, "forever").await;
    let params = with_meta(json!({"taskId": id, "_meta": tasks_meta()}));
    let mut headers = standard_headers("tasks/get", &params);
    for h in &mut headers {
        if h.0 == "mcp-name" {
            h.1 = "someone-else".into();
        }
    }
    let r = http
        .post(&headers, body(json!(7), "tasks/get", params))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32020);
}

#[tokio::test]
async fn a_listen_stream_gets_the_status_of_the_callers_tasks() {
    let http = start(tasks_server(Duration::from_secs(60)), HttpOptions::new()).await;
    let id = start_task(&http, "forever").await;
    let mut s = http
        .open(
            json!("L1"),
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id, "not-a-task"]}, "_meta": tasks_meta()}),
        )
        .await;
    // Unknown (or foreign) ids are left out.
    assert_eq!(acknowledged_tasks(&mut s).await, json!([id]));
    call(&http, "tasks/cancel", json!({"taskId": id}))
        .await
        .result();
    cancelled_on_the_stream(&mut s, &id, "L1").await;
    s.close();
    // Without the extension, asking for task notifications is refused.
    let r = http
        .call(
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}}),
        )
        .await;
    assert_eq!(r.error_code(), -32021);
}

// Replicas behind one URL: a `tasks/*` request reaching a replica that
// does not hold the task is sent on to the one its id names, when that one
// is among the replica's peers, so a plain round-robin balancer needs no
// rule. The answer is the holder's, as it came.
#[tokio::test]
async fn a_task_request_reaching_another_replica_is_sent_on_to_the_one_holding_it() {
    // Port 9 (discard) on loopback: nothing listens there.
    let (a, b) = replicas(
        || tasks_builder(Duration::from_secs(60)),
        &[("c", "http://127.0.0.1:9/mcp")],
    )
    .await;

    // Questions and answers of b's task, all through a.
    let id = start_task(&b, "asker").await;
    assert!(id.starts_with("b."), "{id}");
    let t = wait_for(&a, &id, "input_required").await;
    assert_eq!(t["taskId"], id.as_str());
    assert_eq!(t["inputRequests"]["a"]["method"], "elicitation/create");
    let answers = json!({
        "a": {"action": "accept", "content": {"v": "x"}},
        "b": {"action": "accept", "content": {"v": "y"}},
    });
    let ack = call(
        &a,
        "tasks/update",
        json!({"taskId": id, "inputResponses": answers}),
    )
    .await
    .result();
    assert_eq!(ack["resultType"], "complete");
    let done = wait_for(&a, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "\"x\" \"y\"");

    // Cancelled through a, seen cancelled on b.
    let endless = start_task(&b, "forever").await;
    let ack = call(&a, "tasks/cancel", json!({"taskId": endless}))
        .await
        .result();
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(
        wait_for(&b, &endless, "cancelled").await["status"],
        "cancelled"
    );

    // a's own tasks stay on a.
    let own = start_task(&a, "quick").await;
    assert!(own.starts_with("a."), "{own}");
    assert_eq!(wait_for(&a, &own, "completed").await["status"], "completed");

    // A request another replica already sent on is answered where it
    // arrives: never sent on again.
    let params = with_meta(json!({"taskId": id, "_meta": tasks_meta()}));
    let mut headers = standard_headers("tasks/get", &params);
    headers.push(("switchboard-forwarded-by".into(), "z".into()));
    let r = a.post(&headers, body(json!(8), "tasks/get", params)).await;
    assert_eq!(r.error_code(), -32602);
    let message = message_of(&r);
    assert!(message.contains("replica b started it"), "{message}");

    // A peer that cannot be reached: an error naming it and why.
    let params = json!({"taskId": "c.abc"});
    let r = call(&a, "tasks/get", params).await;
    assert_eq!(r.error_code(), -32603);
    let message = message_of(&r);
    assert!(
        message.contains("replica c") && message.contains("127.0.0.1:9"),
        "{message}"
    );

    // A replica named in an id but not among the peers: the usual answer.
    let r = call(&a, "tasks/get", json!({"taskId": "d.abc"})).await;
    assert_eq!(r.error_code(), -32602);
}

// A listen following tasks that one peer holds is that peer's stream, so
// their notifications reach a client whose balancer picked another
// replica. A listen naming tasks of several replicas is answered where it
// arrives, for that replica's own tasks (the client polls the others).
#[tokio::test]
async fn a_listen_for_a_peers_tasks_is_sent_on_to_it() {
    let (a, b) = replicas(|| tasks_builder(Duration::from_secs(60)), &[]).await;
    let theirs = start_task(&b, "forever").await;
    let listen = |ids: Vec<&str>| json!({"notifications": {"taskIds": ids}, "_meta": tasks_meta()});
    let mut s = a
        .open(json!("L1"), "subscriptions/listen", listen(vec![&theirs]))
        .await;
    assert_eq!(acknowledged_tasks(&mut s).await, json!([theirs]));
    call(&a, "tasks/cancel", json!({"taskId": theirs}))
        .await
        .result();
    cancelled_on_the_stream(&mut s, &theirs, "L1").await;
    s.close();

    let own = start_task(&a, "forever").await;
    let other = start_task(&b, "forever").await;
    let mut s = a
        .open(
            json!("L2"),
            "subscriptions/listen",
            listen(vec![&own, &other]),
        )
        .await;
    assert_eq!(acknowledged_tasks(&mut s).await, json!([own]));
    s.close();
}

// The connections to a peer are kept open and reused: requests sent on
// one after another share one connection, not one connect each.
#[tokio::test]
async fn requests_sent_on_to_a_peer_share_its_connection() {
    let make = || tasks_builder(Duration::from_secs(60));
    let b = start(make().task_origin("b").build().unwrap(), HttpOptions::new()).await;
    let (relay, accepted) = counting_relay(b.addr).await;
    let relay = format!("http://{relay}/mcp");
    let a = make()
        .task_origin("a")
        .replica_peers([("b", relay.as_str())])
        .unwrap()
        .build()
        .unwrap();
    let a = start(a, HttpOptions::new()).await;
    let id = start_task(&b, "quick").await;
    for _ in 0..10 {
        let task = call(&a, "tasks/get", json!({"taskId": id})).await.result();
        assert_eq!(task["taskId"], id.as_str());
    }
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "ten requests sent on to b took more than one connection"
    );

    // b restarts on the same address: the closed connection is not reused,
    // the next request reaches the new b (which no longer knows the task).
    let addr = b.addr;
    b.stop().await;
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let _b = start_on(
        listener,
        make().task_origin("b").build().unwrap(),
        HttpOptions::new(),
    );
    let r = call(&a, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(r.error_code(), -32602, "{:?}", r.response());
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// The `taskIds` the acknowledgment opening listen stream `s` lists.
async fn acknowledged_tasks(s: &mut Stream) -> Value {
    let ack = s.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    ack["params"]["notifications"]["taskIds"].clone()
}

/// Reads the listen stream `s` until task `id` shows `cancelled`, in a
/// `notifications/tasks` of subscription `subscription`.
async fn cancelled_on_the_stream(s: &mut Stream, id: &str, subscription: &str) {
    let n = loop {
        let n = s.next().await.unwrap();
        if n["params"]["status"] == "cancelled" {
            break n;
        }
    };
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(n["params"]["taskId"], id);
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        subscription
    );
}

/// The message of the JSON-RPC error `r` carries.
fn message_of(r: &Resp) -> String {
    r.response()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_peer_must_be_an_http_or_https_url() {
    for url in ["ftp://10.0.0.2/mcp", "/mcp", "not a url"] {
        let built = Server::builder("s", "1")
            .task_origin("a")
            .replica_peers([("b", url)]);
        match built {
            Err(BuildError::Config(message)) => {
                assert!(message.contains("peer b"), "{message}");
            }
            Err(other) => panic!("{url}: {other}"),
            Ok(_) => panic!("{url} was taken as a peer's URL"),
        }
    }
    for url in ["http://10.0.0.2/mcp", "https://b.internal:8443/mcp"] {
        let built = Server::builder("s", "1")
            .task_origin("a")
            .replica_peers([("b", url)]);
        assert!(built.is_ok(), "{url}");
    }
    // And a replica with peers has a name of its own.
    let nameless = Server::builder("s", "1")
        .replica_peers([("b", "http://10.0.0.2/mcp")])
        .unwrap()
        .build();
    assert!(
        matches!(&nameless, Err(BuildError::Config(m)) if m.contains("task_origin")),
        "{:?}",
        nameless.err()
    );
}

/// A server whose `export` tool makes a resumable task (the note names
/// the step to go on from) that runs until cancelled; with `resumer`, the
/// work that picks such a task up (counted in `resumed` when it starts)
/// finishes with the note it was given.
fn resumable_server(resumed: Option<Arc<AtomicUsize>>) -> Server {
    let mut builder = Server::builder("resumable", "1.0.0")
        .signing_key(b"shared by the restarts".to_vec())
        .tasks()
        .tool_spec(ToolSpec::new("export"), |_: NoArgs, _ctx: Context| async {
            let work = TaskWork::new(|t: TaskContext| async move {
                t.cancelled().await;
                "unreachable"
            });
            Ok::<ToolOutcome, HandlerError>(Outcome::Task(work.resumable(json!({"step": 2}))))
        })
        .task_options(Duration::from_secs(60), Duration::from_millis(50));
    if let Some(resumed) = resumed {
        builder = builder.task_resumer(move |note, owner| {
            let who = owner.map(|p| p.subject.clone()).unwrap_or_default();
            let resumed = Arc::clone(&resumed);
            Some(TaskWork::new(move |t: TaskContext| {
                // Counted when the work starts: two requests may both ask
                // the resumer, but only one work runs.
                resumed.fetch_add(1, Ordering::SeqCst);
                async move {
                    // Long enough for a second request to find it running.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    t.set_status("resumed");
                    format!("{who} resumed at step {}", note["step"])
                }
            }))
        });
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_resumable_task_is_picked_up_by_a_restarted_server_for_its_owner_only() {
    let prm = ProtectedResource::new("http://127.0.0.1/mcp", "http://127.0.0.1:1/issuer");
    let as_ = |who: &'static str, method: &'static str, params: Value| {
        let mut params = params;
        params["_meta"] = tasks_meta();
        (who, method, params)
    };
    let first = start(
        resumable_server(None),
        HttpOptions::new().auth(Tokens, prm.clone()),
    )
    .await;
    let (who, method, params) = as_("alice-token", "tools/call", json!({"name": "export"}));
    let created = call_as(&first, who, method, params).await.result();
    let id = created["taskId"].as_str().unwrap().to_owned();
    drop(first);

    // The restarted server holds no tasks; it has a resumer.
    let resumed = Arc::new(AtomicUsize::new(0));
    let second = start(
        resumable_server(Some(Arc::clone(&resumed))),
        HttpOptions::new().auth(Tokens, prm.clone()),
    )
    .await;
    let get = |who: &'static str, id: &str| as_(who, "tasks/get", json!({"taskId": id}));
    // Another principal, an altered id and a made-up one: unknown, and
    // nothing is resumed.
    let (w, m, p) = get("bob-token", &id);
    let theirs = call_as(&second, w, m, p).await;
    let mut altered = id.clone().into_bytes();
    altered[10] = if altered[10] == b'A' { b'B' } else { b'A' };
    let (w, m, p) = get("alice-token", std::str::from_utf8(&altered).unwrap());
    let altered = call_as(&second, w, m, p).await;
    let (w, m, p) = get("alice-token", "no-such-task");
    let unknown = call_as(&second, w, m, p).await;
    for r in [&theirs, &altered] {
        assert_eq!(r.error_code(), -32602);
        assert_eq!(r.response()["error"], unknown.response()["error"]);
    }
    assert_eq!(resumed.load(Ordering::SeqCst), 0);

    // The owner asks twice at once: resumed once, under the same id, with
    // the creation time it had.
    let (w, m, p) = get("alice-token", &id);
    let (w2, m2, p2) = get("alice-token", &id);
    let (a, b) = tokio::join!(call_as(&second, w, m, p), call_as(&second, w2, m2, p2));
    for r in [a.result(), b.result()] {
        assert_eq!(r["taskId"], id.as_str());
        assert_eq!(r["createdAt"], created["createdAt"]);
    }
    let mut done = Value::Null;
    for _ in 0..400 {
        let (w, m, p) = get("alice-token", &id);
        done = call_as(&second, w, m, p).await.result();
        if done["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "alice resumed at step 2"
    );
    assert_eq!(resumed.load(Ordering::SeqCst), 1);

    // A server with the key but no resumer does not know the task.
    let third = start(resumable_server(None), HttpOptions::new().auth(Tokens, prm)).await;
    let (w, m, p) = get("alice-token", &id);
    assert_eq!(call_as(&third, w, m, p).await.error_code(), -32602);
}
