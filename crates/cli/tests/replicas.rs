//! Two gateways behind nginx (round-robin, no affinity): calls and
//! approvals spread over both replicas with no failure, an approval asked
//! by one replica completed by the other, each approval recorded once in
//! the replicas' shared replay ledger, and both audit logs verify. Tasks
//! handed on by either replica are followed to their end through the same
//! balancer, which sends `tasks/*` requests to the replica their id names
//! (the rule README.md gives). Skipped, saying so, when nginx is not
//! installed (CI installs it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_client::{
    BoxFuture, Client, EraPolicy, HttpTransport, InputContext, InputError, InputHandler,
    InputSupport, RequestOptions, ToolCallStart,
};

use crate::ops::{Served, mock_server, serve_on};
use crate::util::{Sandbox, empty_port, spawn};

const CALLS: usize = 1000;
const APPROVALS: usize = 50;
const TASKS: usize = 20;
/// A state key both replicas share (tests only).
const STATE_KEY: &str = "0123456789abcdef0123456789abcdef-test-only-key";

/// Approves every question, counting them.
#[derive(Clone, Debug, Default)]
struct Approve {
    asked: Arc<Mutex<usize>>,
}

impl InputHandler for Approve {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_form: true,
            ..InputSupport::NONE
        }
    }

    fn elicit(
        &self,
        _cx: InputContext,
        _params: switchboard_wire::types::ElicitRequestParams,
    ) -> BoxFuture<'_, Result<switchboard_wire::types::ElicitResult, InputError>> {
        *self.asked.lock().unwrap() += 1;
        let content = json!({"approve": true}).as_object().cloned();
        Box::pin(async { Ok(switchboard_wire::types::ElicitResult::accept(content)) })
    }
}

fn nginx() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// nginx in front of `backends` (replica name, address), round-robin, on
/// `port`, all its files in `dir`. Requests for a task go to the replica
/// its id names: the rule README.md gives, a `map` on the `Mcp-Method` and
/// `Mcp-Name` headers (a task id is `REPLICA.RANDOM`).
struct Nginx {
    child: Child,
    dir: PathBuf,
}

impl Nginx {
    /// nginx on `port`, round-robin over `backends` (name, address); with
    /// `task_rule`, the README's rule sending `tasks/*` requests to the
    /// replica their `Mcp-Name` names.
    fn start(
        bin: &Path,
        dir: &Path,
        port: u16,
        backends: &[(&str, &str)],
        task_rule: bool,
    ) -> Nginx {
        for sub in ["body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        // As root, nginx's workers would switch to `nobody`, who cannot
        // reach the test's private directory.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let user = if root { "user root;" } else { "" };
        let d = dir.display();
        let servers: String = backends
            .iter()
            .map(|(_, addr)| format!("    server {addr};\n"))
            .collect();
        let task_routes: String = backends
            .iter()
            .filter(|_| task_rule)
            .map(|(name, _)| format!("    \"~^tasks/[a-z]+ {name}\\.\" replica_{name};\n"))
            .collect();
        let replicas: String = backends
            .iter()
            .map(|(name, addr)| {
                format!(
                    "  upstream replica_{name} {{\n    server {addr};\n    keepalive 8;\n  }}\n"
                )
            })
            .collect();
        let conf = format!(
            r#"daemon off;
worker_processes 1;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  client_body_buffer_size 64k;
  log_format replicas '$upstream_addr $http_mcp_method $http_mcp_name $request_body';
  upstream switchboard {{
{servers}    keepalive 8;
  }}
{replicas}  map "$http_mcp_method $http_mcp_name" $switchboard_upstream {{
    default switchboard;
{task_routes}  }}
  server {{
    listen 127.0.0.1:{port};
    access_log {d}/access.log replicas;
    location / {{
      proxy_pass http://$switchboard_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 120s;
    }}
  }}
}}
"#
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("-p")
            .arg(dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let child = spawn(&mut cmd);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "nginx did not start: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Nginx {
            child,
            dir: dir.to_owned(),
        }
    }

    fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM lets the master stop its workers; SIGKILL would orphan them.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Two replicas, `a` and `b`, of one config (the mock server, `allow`,
/// an audit log each, a shared state key and replay ledger) behind nginx.
/// Fields drop in order: the servers before their sandbox.
struct Balanced {
    proxy: Nginx,
    a: Served,
    b: Served,
    url: String,
    audit_a: String,
    audit_b: String,
    ledger: String,
    /// The store the replicas share ([`TaskRouting::Store`]).
    redis: Option<crate::shared_state::Redis>,
    sb: Sandbox,
}

/// How `tasks/*` requests reach the replica holding their task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskRouting {
    /// nginx's rule on `Mcp-Method` and `Mcp-Name` (README).
    BalancerRule,
    /// Plain round-robin; each replica sends them on to its peer
    /// (`serve --peer`).
    Peers,
    /// Plain round-robin; the replicas share a `redis-server`
    /// (`serve --state`, no `--peer`) and find each other there.
    Store,
}

/// [`Balanced`], or `None` (saying so) when nginx is not installed.
#[allow(clippy::print_stderr)] // a skipped test says why
async fn balanced(allow: &[&str], routing: TaskRouting) -> Option<Balanced> {
    let Some(nginx_bin) = nginx() else {
        eprintln!("skipped: nginx is not installed (apt-get install nginx-light)");
        return None;
    };
    let sb = Sandbox::new();
    let cfg = sb
        .config(
            json!({"mock": {"command": mock_server(), "args": ["--name", "mock"]}}),
            json!({
                "permissions": {"allow": allow},
                "audit": "${SB_AUDIT}",
                "lockfile": "switchboard.lock"
            }),
        )
        .display()
        .to_string();
    let audit_a = sb.path().join("audit-a.jsonl").display().to_string();
    let audit_b = sb.path().join("audit-b.jsonl").display().to_string();
    let ledger = sb.path().join("used-states").display().to_string();
    // Each replica knows the other's address before either starts.
    let (addr_a, addr_b) = (
        format!("127.0.0.1:{}", empty_port()),
        format!("127.0.0.1:{}", empty_port()),
    );
    let (peer_a, peer_b) = (
        format!("a=http://{addr_a}/mcp"),
        format!("b=http://{addr_b}/mcp"),
    );
    let redis = match routing {
        TaskRouting::Store => Some(crate::shared_state::Redis::start(&sb.path().join("redis"))?),
        _ => None,
    };
    let store = redis.as_ref().map(crate::shared_state::Redis::url);
    let shared = match &store {
        Some(url) => ["--state", url.as_str()],
        None => ["--replay-ledger", ledger.as_str()],
    };
    let mut args_a = vec!["--replica", "a"];
    let mut args_b = vec!["--replica", "b"];
    args_a.extend(shared);
    args_b.extend(shared);
    if routing == TaskRouting::Peers {
        args_a.extend(["--peer", peer_b.as_str()]);
        args_b.extend(["--peer", peer_a.as_str()]);
    }
    let a = serve_on(
        &sb,
        &cfg,
        &addr_a,
        &args_a,
        &[("SB_AUDIT", &audit_a), ("SWITCHBOARD_STATE_KEY", STATE_KEY)],
    )
    .await;
    let b = serve_on(
        &sb,
        &cfg,
        &addr_b,
        &args_b,
        &[("SB_AUDIT", &audit_b), ("SWITCHBOARD_STATE_KEY", STATE_KEY)],
    )
    .await;
    let port = empty_port();
    let proxy = Nginx::start(
        &nginx_bin,
        &sb.path().join("nginx"),
        port,
        &[("a", &a.addr), ("b", &b.addr)],
        routing == TaskRouting::BalancerRule,
    );
    Some(Balanced {
        proxy,
        a,
        b,
        url: format!("http://127.0.0.1:{port}/mcp"),
        audit_a,
        audit_b,
        ledger,
        redis,
        sb,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_behind_nginx_share_calls_and_approvals() {
    let Some(Balanced {
        proxy,
        a,
        b,
        url,
        audit_a,
        audit_b,
        ledger,
        sb,
        ..
    }) = balanced(&["mcp__mock__echo"], TaskRouting::BalancerRule).await
    else {
        return;
    };
    calls_and_approvals(&url, EraPolicy::Probe, CALLS, APPROVALS).await;
    // Each answered approval was recorded once in the shared ledger.
    let used = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert_eq!(used.lines().count(), APPROVALS, "{used}");

    // Both replicas served traffic, and approvals crossed: the retry
    // carrying the requestState went to the other replica than the
    // question.
    let log = proxy.access_log();
    let lines: Vec<&str> = log.lines().collect();
    let served_by = |addr: &str| lines.iter().filter(|l| l.starts_with(addr)).count();
    let (by_a, by_b) = (served_by(&a.addr), served_by(&b.addr));
    assert!(by_a > CALLS / 4 && by_b > CALLS / 4, "a {by_a}, b {by_b}");
    let mut crossed = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.contains("requestState") && i > 0 {
            let question = lines[i - 1];
            let addr = |l: &str| l.split_whitespace().next().unwrap_or("").to_owned();
            if question.contains("mcp__notes__search") && addr(question) != addr(line) {
                crossed += 1;
            }
        }
    }
    assert!(
        crossed > 0,
        "no approval completed on the other replica:\n{log}"
    );

    // Each replica's audit log names it, and both chains verify.
    drop(a);
    drop(b);
    let text_a = std::fs::read_to_string(&audit_a).unwrap();
    let text_b = std::fs::read_to_string(&audit_b).unwrap();
    let (lines_a, lines_b) = (text_a.lines().count(), text_b.lines().count());
    // One line per call, and two per approval: the question (`asked`)
    // and the answered call.
    assert_eq!(
        lines_a + lines_b,
        CALLS + 2 * APPROVALS,
        "a {lines_a}, b {lines_b}"
    );
    let asked = text_a
        .lines()
        .chain(text_b.lines())
        .filter(|l| l.contains("\"outcome\":\"asked\""))
        .count();
    assert_eq!(asked, APPROVALS);
    assert!(lines_a > 0 && lines_b > 0);
    assert!(text_a.lines().all(|l| l.contains(r#""replica":"a""#)));
    assert!(text_b.lines().all(|l| l.contains(r#""replica":"b""#)));
    let approved = text_a
        .lines()
        .chain(text_b.lines())
        .filter(|l| l.contains(r#""decidedBy":"human""#))
        .count();
    assert_eq!(approved, APPROVALS);
    let run = sb.run(&["audit", "verify", &audit_a, &audit_b]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.matches("chain intact").count(), 2, "{run:?}");
    eprintln!(
        "replicas: a served {by_a} requests, b {by_b}; {crossed} of {APPROVALS} approvals completed on the other replica"
    );
}

/// A client of `url` speaking the era `era` makes `calls` echo calls and
/// `approvals` calls that need (and get) the user's approval, with no
/// failure, and closes.
async fn calls_and_approvals(url: &str, era: EraPolicy, calls: usize, approvals: usize) {
    let approve = Approve::default();
    let transport = HttpTransport::builder("balanced", url).build().unwrap();
    let client = Client::builder("balanced", transport)
        .timeout(Duration::from_secs(60))
        .era_policy(era)
        .input_handler(approve.clone())
        .connect()
        .await
        .unwrap();
    let mut failures = Vec::new();
    for i in 0..calls {
        let args = json!({"text": format!("call {i}")});
        match client
            .call_tool("mcp__mock__echo", args.as_object().cloned())
            .await
        {
            Ok(r) if r.joined_text().contains(&format!("call {i}")) => {}
            other => failures.push(format!("call {i}: {other:?}")),
        }
    }
    for i in 0..approvals {
        let args = json!({"query": format!("approval {i}")});
        match client
            .call_tool("mcp__notes__search", args.as_object().cloned())
            .await
        {
            Ok(r) if !r.is_error() => {}
            other => failures.push(format!("approval {i}: {other:?}")),
        }
    }
    client.close().await;
    none_failed(&failures);
    assert_eq!(*approve.asked.lock().unwrap(), approvals);
}

/// Fails the test with the count and the first of `failures`, if any.
fn none_failed(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failure(s), first: {}",
        failures.len(),
        failures[0]
    );
}

/// Our client of `url`, declaring the tasks extension and approving forms.
async fn tasks_client(url: &str, approve: Approve) -> Client {
    let transport = HttpTransport::builder("balanced", url).build().unwrap();
    Client::builder("balanced", transport)
        .timeout(Duration::from_secs(60))
        .tasks(true)
        .input_handler(approve)
        .connect()
        .await
        .unwrap()
}

/// Follows [`TASKS`] tasks (each with a question answered) and one
/// cancelled task through the balancer in front of `pair`, with no
/// failure; returns which replica handed each task on.
async fn follow_tasks(pair: &Balanced) -> Vec<String> {
    let approve = Approve::default();
    let client = tasks_client(&pair.url, approve.clone()).await;
    let options = RequestOptions::default();
    let mut failures = Vec::new();
    let mut origins = Vec::new();
    for i in 0..TASKS {
        // Each task takes two round-robin requests (the call and the
        // client's listen stream); one more on every other task makes the
        // calls alternate between the replicas.
        if i % 2 == 1 {
            if let Err(e) = client.list_tools(None).await {
                failures.push(format!("tools/list: {e}"));
            }
        }
        let args = json!({"inputs": 1, "work_ms": 20, "poll_ms": 10});
        let start = client
            .call_tool_start("mcp__mock__task", args.as_object().cloned(), &options)
            .await;
        let task = match start {
            Ok(ToolCallStart::Task(task)) => task,
            other => {
                failures.push(format!("task {i} did not start as a task: {other:?}"));
                continue;
            }
        };
        origins.push(task.task_id.split('.').next().unwrap_or("").to_owned());
        match client.wait_task(task, &options).await {
            Ok(r) if r.joined_text().contains("task done after 1 inputs") => {}
            other => failures.push(format!("task {i}: {other:?}")),
        }
    }
    // One that never ends, cancelled through the balancer.
    let args = json!({"never": true, "poll_ms": 10});
    match client
        .call_tool_start("mcp__mock__task", args.as_object().cloned(), &options)
        .await
    {
        Ok(ToolCallStart::Task(task)) => {
            if let Err(e) = client.cancel_task(&task.task_id).await {
                failures.push(format!("cancel: {e}"));
            }
            // Cancellation is eventually consistent (the ack comes first):
            // the task reads `cancelled` soon after, through the balancer.
            let mut seen = None;
            for _ in 0..200 {
                match client.get_task(&task.task_id).await {
                    Ok(t) if t.status.as_str() == "cancelled" => {
                        seen = None;
                        break;
                    }
                    other => seen = Some(format!("{other:?}")),
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            if let Some(last) = seen {
                failures.push(format!("5 s after cancel: {last}"));
            }
        }
        other => failures.push(format!("the endless task did not start: {other:?}")),
    }
    client.close().await;
    none_failed(&failures);
    assert_eq!(*approve.asked.lock().unwrap(), TASKS);
    // Both replicas handed tasks on (round-robin), so requests for half of
    // them reach the other replica unless something routes them.
    assert!(
        handed_on_by(&origins, "a") > 0 && handed_on_by(&origins, "b") > 0,
        "{origins:?}"
    );
    origins
}

/// The balancer's `tasks/*` lines: (the replica's address it went to, the
/// address of the replica the task id names).
fn task_requests(pair: &Balanced) -> Vec<(String, String)> {
    let log = pair.proxy.access_log();
    let mut requests = Vec::new();
    for line in log.lines() {
        let mut fields = line.split_whitespace();
        let (addr, method, name) = (fields.next(), fields.next(), fields.next());
        let (Some(addr), Some(method), Some(name)) = (addr, method, name) else {
            continue;
        };
        if !method.starts_with("tasks/") {
            continue;
        }
        let holder = match name.split('.').next() {
            Some("a") => &pair.a.addr,
            Some("b") => &pair.b.addr,
            _ => panic!("a task request without a replica's task id: {line}"),
        };
        requests.push((addr.to_owned(), holder.clone()));
    }
    // At least a tasks/get and a tasks/update per task, and the cancel.
    assert!(
        requests.len() > 2 * TASKS,
        "{} task requests:\n{log}",
        requests.len()
    );
    requests
}

/// How many of `origins` name `replica`.
fn handed_on_by(origins: &[String], replica: &str) -> usize {
    origins.iter().filter(|o| *o == replica).count()
}

/// How the tasks were split between the replicas, for the test's log.
fn split_of(origins: &[String]) -> String {
    format!(
        "tasks handed on by a {}, by b {}",
        handed_on_by(origins, "a"),
        handed_on_by(origins, "b")
    )
}

// A task lives on the replica that handed it on; the balancer's rule on
// `Mcp-Method` and `Mcp-Name` (which the client sets to the task id,
// SEP-2663) sends its `tasks/get`, `tasks/update` and `tasks/cancel` there,
// while every other request stays round-robin.
#[tokio::test(flavor = "multi_thread")]
async fn tasks_behind_nginx_reach_the_replica_holding_them() {
    let Some(pair) = balanced(&["mcp__mock__task"], TaskRouting::BalancerRule).await else {
        return;
    };
    let origins = follow_tasks(&pair).await;
    // Every request for a task went to the replica its id names.
    let requests = task_requests(&pair);
    for (addr, holder) in &requests {
        assert_eq!(addr, holder);
    }
    eprintln!(
        "replicas: {}; {} task requests routed",
        split_of(&origins),
        requests.len()
    );
}

// With no rule in the balancer, a task request reaching the replica that
// does not hold the task is sent on by it to its peer (`serve --peer`).
#[tokio::test(flavor = "multi_thread")]
async fn tasks_behind_a_plain_balancer_reach_the_replica_holding_them_through_its_peer() {
    let Some(pair) = balanced(&["mcp__mock__task"], TaskRouting::Peers).await else {
        return;
    };
    let origins = follow_tasks(&pair).await;
    let requests = task_requests(&pair);
    let sent_on = requests
        .iter()
        .filter(|(addr, holder)| addr != holder)
        .count();
    // Round-robin: about half reached the other replica, and were sent on.
    assert!(
        sent_on > TASKS / 2,
        "{sent_on} of {} sent on",
        requests.len()
    );
    eprintln!(
        "replicas: {}; {sent_on} of {} task requests sent on to the peer",
        split_of(&origins),
        requests.len()
    );
}

// With no rule in the balancer and no --peer flag, replicas sharing a
// store (`serve --state`) find each other in its registry: a task request
// reaching the replica that does not hold the task is sent on by it to
// the holder; calls and approvals go on round-robin as well, each
// approval recorded once in the store, and so does a legacy client's
// session, whose requests reaching the other replica are sent on.
#[tokio::test(flavor = "multi_thread")]
async fn tasks_behind_a_plain_balancer_reach_their_replica_through_the_store() {
    let Some(pair) = balanced(&["mcp__mock__task", "mcp__mock__echo"], TaskRouting::Store).await
    else {
        return;
    };
    // Each replica has read the other's registration (bounded wait).
    for replica in [&pair.a, &pair.b] {
        let limit = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, _, ready) = crate::gateway_util::raw(&replica.addr, "GET", "/readyz", &[], "");
            let ready: Value = serde_json::from_str(&ready).unwrap_or(Value::Null);
            if ready["replicas"].as_array().is_some_and(|r| r.len() == 1) {
                break;
            }
            assert!(Instant::now() < limit, "{ready}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let origins = follow_tasks(&pair).await;
    let requests = task_requests(&pair);
    let sent_on = requests
        .iter()
        .filter(|(addr, holder)| addr != holder)
        .count();
    assert!(
        sent_on > TASKS / 2,
        "{sent_on} of {} sent on",
        requests.len()
    );
    calls_and_approvals(&pair.url, EraPolicy::Probe, CALLS / 4, APPROVALS / 2).await;
    // A legacy client's session, opened on one replica, is reached
    // through the other as well.
    calls_and_approvals(&pair.url, EraPolicy::LegacyOnly, 40, 5).await;
    // No replay ledger file: the store recorded the approvals.
    assert!(!std::path::Path::new(&pair.ledger).exists());
    assert!(pair.redis.is_some());
    eprintln!(
        "replicas: {}; {sent_on} of {} task requests sent on through the store's registry",
        split_of(&origins),
        requests.len()
    );
}

// `--peer` takes NAME=URL, the URL an http:// or https:// one: anything
// else stops the gateway before it serves, saying what to write.
#[tokio::test(flavor = "multi_thread")]
async fn a_peer_is_a_name_and_an_http_url() {
    let sb = Sandbox::new();
    let cfg = sb
        .config(
            json!({"mock": {"command": mock_server(), "args": ["--name", "mock"]}}),
            json!({}),
        )
        .display()
        .to_string();
    let serve_with = |peer: &str| {
        sb.run(&[
            "--config",
            &cfg,
            "serve",
            "--http",
            "127.0.0.1:0",
            "--replica",
            "a",
            "--peer",
            peer,
        ])
    };
    let run = serve_with("http://10.0.0.2:8080/mcp");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("expected NAME=URL"), "{run:?}");
    let run = serve_with("b=ftp://10.0.0.2/mcp");
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("peer b") && run.stderr.contains("http:// or https:// URL"),
        "{run:?}"
    );
}

// A 2025-11-25 client keeps a session, which lives in the replica that
// opened it; behind a plain balancer, the other replica sends the
// session's requests on to it (`serve --peer`): calls, approvals asked as
// server-to-client requests and answered, and the session's end.
#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_client_behind_a_plain_balancer_keeps_its_session_through_the_peer() {
    let Some(pair) = balanced(&["mcp__mock__echo"], TaskRouting::Peers).await else {
        return;
    };
    const LEGACY_CALLS: usize = 40;
    calls_and_approvals(&pair.url, EraPolicy::LegacyOnly, LEGACY_CALLS, 5).await;
    // Round-robin put about half of the session's requests on the replica
    // that does not hold it.
    let log = pair.proxy.access_log();
    let served_by = |addr: &str| log.lines().filter(|l| l.starts_with(addr)).count();
    let (by_a, by_b) = (served_by(&pair.a.addr), served_by(&pair.b.addr));
    assert!(
        by_a > LEGACY_CALLS / 4 && by_b > LEGACY_CALLS / 4,
        "a {by_a}, b {by_b}"
    );
    eprintln!("replicas: a legacy session's requests reached a {by_a} times, b {by_b} times");
}
