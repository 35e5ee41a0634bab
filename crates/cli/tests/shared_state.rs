//! Replicas sharing a real `redis-server` (`serve --state redis://…`),
//! reached in turn with no balancer affinity: a caller limited to N calls
//! a minute gets exactly N across all of them; an answered approval runs
//! once, its replay refused on every replica; with the store killed,
//! limited callers and answered approvals are refused saying why while
//! plain calls go on, `/readyz` and `/metrics` say the store is down; once
//! it is back, everything works again without restarting the gateways.
//! Skipped, saying so, when `redis-server` is not installed (CI installs
//! it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::console_util::approval_link;
use crate::gateway_util::{Running, raw, rpc};
use crate::util::{Sandbox, empty_port, spawn};

pub(crate) const CI_TOKEN: &str = "ci-bot-token-0123456789";
pub(crate) const ALICE_TOKEN: &str = "alice-token-9876543210";
/// A state key the replicas share (tests only).
const STATE_KEY: &str = "0123456789abcdef0123456789abcdef-test-only-key";
/// ci-bot's calls a minute.
const LIMIT: usize = 5;

/// A `redis-server` of the test's own: a free loopback port, its own
/// folder, nothing saved.
pub(crate) struct Redis {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Redis {
    /// Started, or `None` (saying so) when it is not installed.
    #[allow(clippy::print_stderr)] // a skipped test says why
    pub(crate) fn start(dir: &Path) -> Option<Redis> {
        let Some(bin) = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
        else {
            eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
            return None;
        };
        std::fs::create_dir_all(dir).unwrap();
        let mut redis = Redis {
            bin,
            dir: dir.to_owned(),
            port: empty_port(),
            child: None,
        };
        redis.run();
        Some(redis)
    }

    /// Starts the server on its port and waits until it answers.
    pub(crate) fn run(&mut self) {
        let mut cmd = Command::new(&self.bin);
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(spawn(&mut cmd));
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (everything it held is lost).
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A sandbox with a `redis-server` of its own, or `None` (saying so) when
/// it is not installed.
pub(crate) fn sandbox_with_redis() -> Option<(Sandbox, Redis)> {
    let sb = Sandbox::new();
    let redis = Redis::start(&sb.path().join("redis"))?;
    Some((sb, redis))
}

/// `--auth token` over a tokens file in `sb` naming ci-bot and alice: the
/// flags (the file's path is the last).
pub(crate) fn token_auth(sb: &Sandbox) -> [String; 4] {
    let tokens = sb.write(
        "tokens.txt",
        &format!("ci-bot {CI_TOKEN}\nalice {ALICE_TOKEN}\n"),
    );
    [
        "--auth".into(),
        "token".into(),
        "--tokens-file".into(),
        tokens.display().to_string(),
    ]
}

/// Gateways of `cfg`, one per name in `names` (its `--replica`), sharing
/// `redis` (`--state`) and the state key, each with `args` too.
pub(crate) async fn start_replicas(
    sb: &Sandbox,
    redis: &Redis,
    cfg: &str,
    names: &[&str],
    args: &[&str],
) -> Vec<Running> {
    let url = redis.url();
    let mut gateways = Vec::new();
    for name in names {
        let mut all = vec!["--replica", name, "--state", &url];
        all.extend_from_slice(args);
        gateways.push(
            Running::start(
                sb,
                cfg,
                "127.0.0.1:0",
                &all,
                &[("SWITCHBOARD_STATE_KEY", STATE_KEY)],
            )
            .await,
        );
    }
    gateways
}

/// `replicas` gateways over the notes demo sharing `redis`: `list_notes`
/// allowed (`search` asks), ci-bot limited to [`LIMIT`] calls a minute,
/// alice unlimited. Fields drop in order: the gateways before the sandbox.
struct Replicas {
    gateways: Vec<Running>,
    sb: Sandbox,
}

async fn replicas(redis: &Redis, count: usize, sb: Sandbox) -> Replicas {
    let cfg = sb
        .config(
            json!({}),
            json!({
                "permissions": {"allow": ["mcp__notes__list_notes"]},
                "callerLimits": {"callsPerMinute": LIMIT},
                "principals": {"alice": {"limits": {"callsPerMinute": null}}}
            }),
        )
        .display()
        .to_string();
    let auth = token_auth(&sb);
    let mut args: Vec<&str> = auth.iter().map(String::as_str).collect();
    args.push("--metrics");
    let names: Vec<String> = (0..count).map(|i| format!("r{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let gateways = start_replicas(&sb, redis, &cfg, &names, &args).await;
    Replicas { gateways, sb }
}

/// The `_meta` of a modern client that can answer forms.
fn meta() -> Value {
    crate::console_util::meta(json!({"elicitation": {"form": {}}}))
}

/// One JSON-RPC `method` POSTed to `gw` with `token`: the message back.
pub(crate) fn post(gw: &Running, token: &str, method: &str, params: &Value) -> Value {
    post_at(&gw.addr, token, method, params)
}

/// [`post`] to the gateway (or balancer) at `addr`.
pub(crate) fn post_at(addr: &str, token: &str, method: &str, params: &Value) -> Value {
    rpc(addr, token, method, params)
}

/// `name` called on `gw` by `token`'s caller: the message back.
pub(crate) fn call(gw: &Running, token: &str, name: &str, arguments: &Value) -> Value {
    call_at(&gw.addr, token, name, arguments)
}

/// [`call`] at the gateway (or balancer) at `addr`.
pub(crate) fn call_at(addr: &str, token: &str, name: &str, arguments: &Value) -> Value {
    let params = json!({"name": name, "arguments": arguments, "_meta": meta()});
    post_at(addr, token, "tools/call", &params)
}

/// The text of a tool result (or of an error).
pub(crate) fn text_of(message: &Value) -> String {
    if let Some(error) = message["error"]["message"].as_str() {
        return error.to_owned();
    }
    message["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `message` is a tool result that ran.
pub(crate) fn ran(message: &Value) -> bool {
    message["result"].is_object()
        && message["result"]["isError"] != json!(true)
        && message["result"]["resultType"] != json!("input_required")
}

/// Asks for `search` on `asker` with `query`: the retry that approves it.
pub(crate) fn approval(asker: &Running, query: &str) -> Value {
    let asked = call(
        asker,
        ALICE_TOKEN,
        "mcp__notes__search",
        &json!({"query": query}),
    );
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let key = result["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap();
    json!({
        "name": "mcp__notes__search",
        "arguments": {"query": query},
        "_meta": meta(),
        "inputResponses": { key: {"action": "accept", "content": {"approve": true}} },
        "requestState": result["requestState"].clone(),
    })
}

/// `/readyz` and `/metrics` of `gw`.
fn health(gw: &Running) -> (u16, Value, String) {
    let (status, _, ready) = raw(&gw.addr, "GET", "/readyz", &[], "");
    let (_, _, metrics) = raw(&gw.addr, "GET", "/metrics", &[], "");
    let ready = serde_json::from_str(&ready).unwrap_or_else(|e| panic!("{e}: {ready}"));
    (status, ready, metrics)
}

/// The value of the metric line starting with `prefix`.
fn metric(metrics: &str, prefix: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} in\n{metrics}"))
}

// Three replicas, one store: ci-bot's LIMIT calls a minute hold across
// them (each replica alone would admit LIMIT, 3 × LIMIT in all), alice
// is not limited; an approval asked by one replica and answered on
// another runs once, and its replay is refused on every replica.
#[tokio::test(flavor = "multi_thread")]
async fn three_replicas_share_callers_limits_and_approvals_through_redis() {
    let Some((sb, redis)) = sandbox_with_redis() else {
        return;
    };
    let Replicas { gateways, sb: _sb } = replicas(&redis, 3, sb).await;
    let mut accepted = 0;
    let mut refusals = Vec::new();
    for i in 0..3 * LIMIT {
        let gw = &gateways[i % gateways.len()];
        let answer = call(gw, CI_TOKEN, "mcp__notes__list_notes", &json!({}));
        if ran(&answer) {
            accepted += 1;
        } else {
            refusals.push(text_of(&answer));
        }
    }
    assert_eq!(accepted, LIMIT, "{refusals:#?}");
    assert!(
        refusals
            .iter()
            .all(|t| t.contains(&format!("limited to {LIMIT} a minute")) && t.contains("ci-bot")),
        "{refusals:#?}"
    );
    for i in 0..2 * LIMIT {
        let answer = call(
            &gateways[i % 3],
            ALICE_TOKEN,
            "mcp__notes__list_notes",
            &json!({}),
        );
        assert!(ran(&answer), "alice is not limited: {answer}");
    }

    // Asked on r0, answered on r1: it runs there once.
    let retry = approval(&gateways[0], "shared");
    let first = post(&gateways[1], ALICE_TOKEN, "tools/call", &retry);
    assert!(ran(&first), "{first}");
    for gw in &gateways {
        let again = post(gw, ALICE_TOKEN, "tools/call", &retry);
        assert!(!ran(&again), "a replay ran on {}: {again}", gw.addr);
        assert!(text_of(&again).contains("already used"), "{again}");
    }
    let (status, ready, metrics) = health(&gateways[2]);
    assert_eq!((status, &ready["state"]), (200, &json!("up")), "{ready}");
    assert_eq!(metric(&metrics, "switchboard_state_up "), 1.0);
}

// The store killed: limited callers and answered approvals are refused
// saying the store cannot be reached, plain calls go on, `/readyz` (still
// 200) and `/metrics` say it is down; the store back: everything works
// again, the gateways untouched.
#[tokio::test(flavor = "multi_thread")]
async fn with_redis_down_what_needs_it_fails_closed_and_recovers_when_it_is_back() {
    let Some((sb, mut redis)) = sandbox_with_redis() else {
        return;
    };
    let Replicas { gateways, sb: _sb } = replicas(&redis, 2, sb).await;
    let limited = call(&gateways[0], CI_TOKEN, "mcp__notes__list_notes", &json!({}));
    assert!(ran(&limited), "{limited}");
    let retry = approval(&gateways[0], "before the outage");

    redis.kill();
    for gw in &gateways {
        let limited = call(gw, CI_TOKEN, "mcp__notes__list_notes", &json!({}));
        let text = text_of(&limited);
        assert!(!ran(&limited), "{limited}");
        assert!(
            text.contains("cannot count them") && text.contains("cannot be reached"),
            "{text}"
        );
        let plain = call(gw, ALICE_TOKEN, "mcp__notes__list_notes", &json!({}));
        assert!(ran(&plain), "{plain}");
    }
    let refused = post(&gateways[1], ALICE_TOKEN, "tools/call", &retry);
    assert!(!ran(&refused), "an approval ran unrecorded: {refused}");
    assert!(
        text_of(&refused).contains("cannot record that requestState was used"),
        "{refused}"
    );
    let (status, ready, metrics) = health(&gateways[1]);
    assert_eq!((status, &ready["state"]), (200, &json!("down")), "{ready}");
    assert_eq!(metric(&metrics, "switchboard_state_up "), 0.0);
    assert!(
        metric(
            &metrics,
            "switchboard_state_errors_total{operation=\"replay\"}"
        ) >= 1.0
    );
    assert!(
        metric(
            &metrics,
            "switchboard_state_errors_total{operation=\"limit\"}"
        ) >= 1.0
    );

    // Back (empty: it saved nothing), on the same port.
    redis.run();
    for gw in &gateways {
        let limited = call(gw, CI_TOKEN, "mcp__notes__list_notes", &json!({}));
        assert!(ran(&limited), "{limited}");
    }
    let retry = approval(&gateways[0], "after the outage");
    let answered = post(&gateways[1], ALICE_TOKEN, "tools/call", &retry);
    assert!(ran(&answered), "{answered}");
    let again = post(&gateways[0], ALICE_TOKEN, "tools/call", &retry);
    assert!(text_of(&again).contains("already used"), "{again}");
    let (_, ready, _) = health(&gateways[0]);
    assert_eq!(ready["state"], "up", "{ready}");
}

/// An MCP client of `url` that follows tasks.
async fn tasks_client(url: &str) -> switchboard_client::Client {
    let transport = switchboard_client::HttpTransport::builder("replica", url)
        .build()
        .unwrap();
    switchboard_client::Client::builder("replica", transport)
        .timeout(Duration::from_secs(60))
        .tasks(true)
        .connect()
        .await
        .unwrap()
}

/// Starts the mock server's endless task through `client`: its id.
async fn endless_task(client: &switchboard_client::Client) -> String {
    let args = json!({"never": true, "poll_ms": 10});
    let options = switchboard_client::RequestOptions::default();
    match client
        .call_tool_start("mcp__mock__task", args.as_object().cloned(), &options)
        .await
    {
        Ok(switchboard_client::ToolCallStart::Task(task)) => task.task_id,
        other => panic!("the task did not start: {other:?}"),
    }
}

/// One raw RESP command to `redis`: the reply's first line.
pub(crate) fn redis_command(redis: &Redis, args: &[&str]) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", redis.port)).unwrap();
    let mut command = format!("*{}\r\n", args.len());
    for a in args {
        command.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(command.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line.trim().to_owned()
}

// Replicas sharing a store find each other there, with no --peer flag: a
// task handed on by replica a is followed and cancelled through replica
// b, which sends its tasks/* requests on to a; once a is killed, its
// registration expires, b drops it, and b answers for a's task that
// replica a is gone.
#[tokio::test(flavor = "multi_thread")]
async fn replicas_find_each_other_through_the_store_and_say_when_one_is_gone() {
    let Some((sb, redis)) = sandbox_with_redis() else {
        return;
    };
    let cfg = sb
        .config(
            json!({"mock": {"command": crate::ops::mock_server(), "args": ["--name", "mock"]}}),
            json!({"permissions": {"allow": ["mcp__mock__task"]}}),
        )
        .display()
        .to_string();
    let mut started = start_replicas(&sb, &redis, &cfg, &["a", "b"], &[]).await;
    let b = started.pop().unwrap();
    let mut a = started.pop().unwrap();
    // Both register, each under its name with the address it serves (as
    // they start serving: waited for, bounded).
    let limit = Instant::now() + REPLICA_TTL_WAIT;
    while redis_command(
        &redis,
        &["EXISTS", "switchboard:replica:a", "switchboard:replica:b"],
    ) != ":2"
    {
        assert!(Instant::now() < limit, "not registered: {}", a.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let on_a = tasks_client(&a.url).await;
    let on_b = tasks_client(&b.url).await;
    let task = endless_task(&on_a).await;
    assert!(task.starts_with("a."), "{task}");
    // b does not hold it: its tasks/get and tasks/cancel go on to a (once
    // b's next beat has read a's registration).
    let limit = Instant::now() + REPLICA_TTL_WAIT;
    let seen = loop {
        match on_b.get_task(&task).await {
            Ok(seen) => break seen,
            Err(e) => assert!(Instant::now() < limit, "{e}\n{}", b.stderr()),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(seen.status.as_str(), "working", "{seen:?}");
    on_b.cancel_task(&task).await.unwrap();
    let mut status = String::new();
    for _ in 0..200 {
        status = on_b
            .get_task(&task)
            .await
            .unwrap()
            .status
            .as_str()
            .to_owned();
        if status == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(status, "cancelled", "{}", b.stderr());

    // a dies without leaving the registry: its registration expires.
    let orphan = endless_task(&on_a).await;
    let _ = a.child.kill();
    let _ = a.child.wait();
    let limit = Instant::now() + REPLICA_TTL_WAIT;
    let said = loop {
        let answer = on_b.get_task(&orphan).await;
        let text = format!("{answer:?}");
        if text.contains("replica a is gone") {
            break text;
        }
        assert!(Instant::now() < limit, "still: {text}\n{}", b.stderr());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(said.contains("start the call again"), "{said}");
    assert_eq!(
        redis_command(&redis, &["EXISTS", "switchboard:replica:a"]),
        ":0"
    );
    assert_eq!(
        redis_command(&redis, &["SISMEMBER", "switchboard:replicas", "a"]),
        ":0"
    );
}

/// How long a killed replica may stay registered, with the beats around
/// it (6 s of expiry, a 2 s beat), and slack for a loaded machine.
pub(crate) const REPLICA_TTL_WAIT: Duration = Duration::from_secs(30);

// `concurrentCalls` holds across replicas sharing a store: while ci-bot's
// one allowed call runs on one replica, its call on another is refused
// saying so (each replica alone would run it); once the first ends, the
// next call runs again.
#[tokio::test(flavor = "multi_thread")]
async fn calls_running_at_once_are_counted_for_every_replica() {
    let Some((sb, redis)) = sandbox_with_redis() else {
        return;
    };
    let cfg = sb
        .config(
            json!({"mock": {"command": crate::ops::mock_server(), "args": ["--name", "mock"]}}),
            json!({
                "permissions": {"allow": ["mcp__mock__sleep"]},
                "callerLimits": {"concurrentCalls": 1}
            }),
        )
        .display()
        .to_string();
    let auth = token_auth(&sb);
    let args: Vec<&str> = auth.iter().map(String::as_str).collect();
    let gateways = start_replicas(&sb, &redis, &cfg, &["r0", "r1"], &args).await;
    let sleep =
        |ms: u64| json!({"name": "mcp__mock__sleep", "arguments": {"ms": ms}, "_meta": meta()});
    // A long call on r0, in the background.
    let addr = gateways[0].addr.clone();
    let long = sleep(8_000);
    let running = std::thread::spawn(move || rpc(&addr, CI_TOKEN, "tools/call", &long));
    // Once its lease is in the store, r1 refuses ci-bot's next call.
    let limit = Instant::now() + Duration::from_secs(15);
    while redis_command(&redis, &["ZCARD", "switchboard:running:ci-bot"]) != ":1" {
        assert!(Instant::now() < limit, "the long call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let probe = call(
        &gateways[1],
        CI_TOKEN,
        "mcp__mock__sleep",
        &json!({"ms": 1}),
    );
    assert!(!ran(&probe), "{probe}");
    let refused = text_of(&probe);
    assert!(refused.contains("already has 1 call running"), "{refused}");
    let done = running.join().unwrap();
    assert!(ran(&done), "{done}");
    // Given back: runs again (the lease is released just after the answer).
    let limit = Instant::now() + Duration::from_secs(15);
    loop {
        let again = call(
            &gateways[1],
            CI_TOKEN,
            "mcp__mock__sleep",
            &json!({"ms": 1}),
        );
        if ran(&again) {
            break;
        }
        assert!(Instant::now() < limit, "still refused: {again}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(gateways);
}

// Two replicas sharing the state key and the store, each serving the
// console: a call asked on replica A from a client that can only open
// URLs gets a link; the link is shown and approved in replica B's console
// (A never sees the decision happen); A's retry runs, once. A link whose
// sealed call was altered is refused by both.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_asked_on_one_replica_is_decided_in_another_replicas_console() {
    let Some((sb, redis)) = sandbox_with_redis() else {
        return;
    };
    let cfg = sb
        .config(
            json!({}),
            json!({
                "permissions": {"allow": ["mcp__notes__list_notes"]},
                "principals": {"alice": {"console": true}}
            }),
        )
        .display()
        .to_string();
    let auth = token_auth(&sb);
    let mut args: Vec<&str> = auth.iter().map(String::as_str).collect();
    args.push("--console");
    let gateways = start_replicas(&sb, &redis, &cfg, &["a", "b"], &args).await;
    let (a, b) = (&gateways[0], &gateways[1]);
    let url_meta = crate::console_util::meta(json!({"elicitation": {"url": {}}}));
    let arguments = json!({"query": "vpn"});
    let params = json!({"name": "mcp__notes__search", "arguments": arguments, "_meta": url_meta});
    let asked = post(a, CI_TOKEN, "tools/call", &params);
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let link = approval_link(&result["inputRequests"]).unwrap_or_else(|| panic!("{asked}"));
    let path = format!("/console/approve/{}", link.rsplit('/').next().unwrap());
    let key = result["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap();
    let retry = json!({
        "name": "mcp__notes__search",
        "arguments": arguments,
        "_meta": url_meta,
        "inputResponses": { key.clone(): {"action": "accept"} },
        "requestState": result["requestState"].clone(),
    });

    // Alice signs in to replica B's console.
    let (status, headers, body) = raw(
        &b.addr,
        "POST",
        "/console/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &format!("token={ALICE_TOKEN}"),
    );
    assert_eq!(status, 303, "{body}");
    let cookie = headers
        .iter()
        .find(|(k, _)| k == "set-cookie")
        .map(|(_, v)| v.split(';').next().unwrap().trim().to_owned())
        .unwrap();
    let (status, _, page) = raw(&b.addr, "GET", &path, &[("Cookie", &cookie)], "");
    assert_eq!(status, 200, "B shows A's approval: {page}");
    assert!(page.contains("<dd id=\"caller\">ci-bot</dd>"), "{page}");
    assert!(page.contains("vpn"), "{page}");
    let at = page.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    let csrf = page[at..].split('"').next().unwrap().to_owned();

    // A tampered link (the sealed call altered, its MAC kept): refused.
    let id = link.rsplit('/').next().unwrap();
    let (body64, tag) = id.split_once('.').unwrap();
    let mut tampered_body = body64.to_owned();
    let last = tampered_body.pop().unwrap();
    tampered_body.push(if last == 'A' { 'B' } else { 'A' });
    let tampered = format!("/console/approve/{tampered_body}.{tag}");
    for gw in [a, b] {
        let (status, _, _) = raw(&gw.addr, "GET", &tampered, &[("Cookie", &cookie)], "");
        assert!(status == 404 || status == 401, "{status}");
    }
    let (status, _, _) = raw(
        &b.addr,
        "POST",
        &tampered,
        &[("Cookie", &cookie)],
        &format!("csrf={csrf}&decision=approve"),
    );
    assert_eq!(status, 409);

    // Still undecided: A asks again.
    let again = post(a, CI_TOKEN, "tools/call", &retry);
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let retry = json!({
        "name": "mcp__notes__search",
        "arguments": arguments,
        "_meta": url_meta,
        "inputResponses": { key: {"action": "accept"} },
        "requestState": again["result"]["requestState"].clone(),
    });

    // Approved in B's console; A's retry runs, once.
    let (status, _, page) = raw(
        &b.addr,
        "POST",
        &path,
        &[("Cookie", &cookie)],
        &format!("csrf={csrf}&decision=approve"),
    );
    assert_eq!(status, 303, "{page}");
    let done = post(a, CI_TOKEN, "tools/call", &retry);
    assert!(ran(&done), "A runs the call approved on B: {done}");
    let replay = post(b, CI_TOKEN, "tools/call", &retry);
    assert!(!ran(&replay), "the retry runs once: {replay}");
    let (status, _, _) = raw(&a.addr, "GET", &path, &[("Cookie", &cookie)], "");
    assert!(status == 404 || status == 401, "{status}");
    drop(gateways);
    drop(redis);
}

/// Gateways `a` and `b` over the notes demo sharing `redis` and the
/// state key, each serving the console (alice a console principal), calls
/// from clients without elicitation announced to `hook` and waiting for
/// a decision.
async fn console_replicas(redis: &Redis, sb: &Sandbox, hook: &str) -> Vec<Running> {
    let cfg = sb
        .config(
            json!({}),
            json!({
                "principals": {"alice": {"console": true}, "ci-bot": {}},
                "approvals": {"notify": hook, "timeoutMs": 60000}
            }),
        )
        .display()
        .to_string();
    let tokens = sb.write(
        "tokens.txt",
        &format!("ci-bot {CI_TOKEN}\nalice {ALICE_TOKEN}\n"),
    );
    let url = redis.url();
    let mut gateways = Vec::new();
    for name in ["a", "b"] {
        let args = [
            "--auth",
            "token",
            "--tokens-file",
            tokens.to_str().unwrap(),
            "--replica",
            name,
            "--console",
            "--state",
            &url,
        ];
        gateways.push(
            Running::start(
                sb,
                &cfg,
                "127.0.0.1:0",
                &args,
                &[("SWITCHBOARD_STATE_KEY", STATE_KEY)],
            )
            .await,
        );
    }
    gateways
}

// A call from a client without elicitation waits on replica A (the
// webhook told); replica B's Approvals page lists it with its tool,
// caller and link, alice approves it in B's console, the call on A runs,
// and the listing is empty again on both.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_waiting_on_one_replica_is_listed_and_decided_on_another() {
    use crate::console_util::{Session, call_raw, meta, path_of, receiver};
    let sb = Sandbox::new();
    let Some(redis) = Redis::start(&sb.path().join("redis")) else {
        return;
    };
    let (hook, announced) = receiver();
    let gateways = console_replicas(&redis, &sb, &hook).await;
    let (a, b) = (gateways[0].addr.clone(), gateways[1].addr.clone());
    let person = tokio::task::spawn_blocking({
        let a = a.clone();
        move || {
            let payload = announced
                .recv_timeout(Duration::from_secs(60))
                .expect("the webhook was not told");
            let path = path_of(payload["url"].as_str().unwrap());
            let alice = Session::sign_in(&b, ALICE_TOKEN);
            let (status, _, list) = alice.get("/console/approvals");
            assert_eq!(status, 200, "{list}");
            assert!(
                list.contains(&path),
                "B lists the call waiting on A: {list}"
            );
            assert!(list.contains("<td>mcp__notes__list_notes</td>"), "{list}");
            assert!(list.contains("<td>ci-bot</td>"), "{list}");
            assert_eq!(alice.decide(&path, "approve"), 303);
            // Decided: listed nowhere any more.
            let (_, _, list) = alice.get("/console/approvals");
            assert!(!list.contains(&path), "{list}");
            let (_, _, list) = Session::sign_in(&a, ALICE_TOKEN).get("/console/approvals");
            assert!(!list.contains(&path), "{list}");
        }
    });
    let params =
        json!({"name": "mcp__notes__list_notes", "arguments": {}, "_meta": meta(json!({}))});
    let done = tokio::task::spawn_blocking(move || call_raw(&a, CI_TOKEN, &params))
        .await
        .unwrap();
    person.await.unwrap();
    assert!(ran(&done), "A runs the call approved on B: {done}");
    drop(gateways);
    drop(redis);
}

// Failed console sign-ins from one address are counted in the store:
// five on each replica, and the next on either is refused with 429 even
// with a good token; another address signs in.
#[tokio::test(flavor = "multi_thread")]
async fn failed_sign_ins_are_counted_for_every_replica() {
    use crate::console_util::Session;
    use crate::gateway_util::raw_from;
    let sb = Sandbox::new();
    let Some(redis) = Redis::start(&sb.path().join("redis")) else {
        return;
    };
    let (hook, _announced) = crate::console_util::receiver();
    let gateways = console_replicas(&redis, &sb, &hook).await;
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    for i in 0..10 {
        let gw = &gateways[i % 2];
        let (status, _, _) = raw(
            &gw.addr,
            "POST",
            "/console/login",
            &[form],
            &format!("token=not-a-token-at-all-{i:06}"),
        );
        assert_eq!(status, 401, "attempt {i}");
    }
    for gw in &gateways {
        let (status, headers, page) = raw(
            &gw.addr,
            "POST",
            "/console/login",
            &[form],
            &format!("token={ALICE_TOKEN}"),
        );
        assert_eq!(status, 429, "{page}");
        assert!(
            headers.iter().any(|(k, _)| k == "retry-after"),
            "{headers:?}"
        );
    }
    let other: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let (status, headers, page) = raw_from(
        other,
        &gateways[1].addr,
        "POST",
        "/console/login",
        &[form],
        &format!("token={ALICE_TOKEN}"),
    )
    .await;
    assert_eq!(status, 303, "{page}");
    let alice = Session::from_answer(&gateways[1].addr, &headers);
    assert_eq!(alice.get("/console/servers").0, 200);
    drop(gateways);
    drop(redis);
}
