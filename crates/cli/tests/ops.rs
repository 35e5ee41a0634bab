//! `serve` run as a service: trace context passed on, `/metrics`, OTLP
//! traces, config reload mid-traffic, and the audit logs of replicas.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_client::{Client, InputSupport, RequestOptions, TraceContext, input_handler_fn};
use switchboard_testutil::{Artifacts, built};

use crate::gateway_util::{Running, gateway_client, serve_asking, serve_cmd, tool_names};
use crate::util::{Sandbox, wait_for};

/// The testkit's mock server (its `echo` tool returns the params it got).
pub(crate) fn mock_server() -> String {
    built("switchboard-testkit", Artifacts::Bins)
        .join("mock-server")
        .display()
        .to_string()
}

pub(crate) async fn client(url: &str) -> Client {
    gateway_client(url, None).connect().await.unwrap()
}

/// One plain GET on `addr`: status line and body.
pub(crate) fn http_get(addr: &str, path: &str) -> (String, String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_owned();
    (status, head.to_owned(), body.to_owned())
}

fn object(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// A config with the mock server under `alias` (and notes).
fn mock_config(sb: &Sandbox, top: Value) -> String {
    sb.config(
        json!({"mock": {"command": mock_server(), "args": ["--name", "mock"]}}),
        top,
    )
    .display()
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_downstream_sees_the_upstream_trace_with_a_new_parent_span() {
    let sb = Sandbox::new();
    let cfg = mock_config(&sb, json!({}));
    let served = serve_asking(&sb, &cfg, &["--yes"], &[]).await;
    let client = client(&served.url).await;
    let trace = TraceContext {
        tracestate: Some("rojo=00f067aa0ba902b7".into()),
        ..TraceContext::new(UPSTREAM)
    };
    let result = echo_in_a_trace(&client, trace).await;
    let meta = &result.structured_content.as_ref().unwrap()["params"]["_meta"];
    let down = meta["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = down.split('-').collect();
    assert_eq!(parts.len(), 4, "{down}");
    assert_eq!(parts[1], "0af7651916cd43dd8448eb211c80319c", "same trace");
    assert_ne!(parts[2], "b7ad6b7169203331", "a new parent span");
    assert_eq!(parts[2].len(), 16);
    assert_eq!(parts[3], "01");
    assert_eq!(meta["tracestate"], "rojo=00f067aa0ba902b7");

    // Without one, the gateway starts a trace: a new id per call.
    let mut seen = Vec::new();
    for _ in 0..2 {
        let result = client
            .call_tool("mcp__mock__echo", object(json!({"text": "hi"})))
            .await
            .unwrap();
        let tp = result.structured_content.as_ref().unwrap()["params"]["_meta"]["traceparent"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(tp.len(), 55, "{tp}");
        seen.push(tp[3..35].to_owned());
    }
    assert_ne!(seen[0], seen[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_calls_decisions_and_server_states() {
    let sb = Sandbox::new();
    let cfg = sb
        .config(
            json!({
                "mock": {"command": mock_server()},
                "gone": {"command": "/nonexistent/server-binary"}
            }),
            json!({"permissions": {
                "allow": ["mcp__mock__echo", "mcp__mock__fail"],
                "deny": ["mcp__notes__search"]
            }}),
        )
        .display()
        .to_string();
    // Metrics are opt-in.
    let plain = serve_asking(&sb, &cfg, &[], &[]).await;
    let (status, _, _) = http_get(&plain.addr, "/metrics");
    assert!(status.contains("404"), "{status}");
    drop(plain);

    let served = serve_asking(&sb, &cfg, &["--metrics"], &[]).await;
    let client = client(&served.url).await;
    for _ in 0..3 {
        let r = client
            .call_tool("mcp__mock__echo", object(json!({"text": "x"})))
            .await
            .unwrap();
        assert!(!r.is_error(), "{r:?}");
    }
    let r = client.call_tool("mcp__mock__fail", None).await.unwrap();
    assert!(r.is_error());
    let r = client
        .call_tool("mcp__notes__search", object(json!({"query": "vpn"})))
        .await
        .unwrap();
    assert!(r.is_error(), "denied");

    let (status, head, body) = http_get(&served.addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    let has = |line: &str| {
        assert!(
            body.lines().any(|l| l == line),
            "no line {line:?} in:\n{body}"
        );
    };
    has(r#"switchboard_calls_total{server="mock",tool="mcp__mock__echo",outcome="ok"} 3"#);
    has(r#"switchboard_calls_total{server="mock",tool="mcp__mock__fail",outcome="tool_error"} 1"#);
    has(r#"switchboard_calls_total{server="notes",tool="mcp__notes__search",outcome="denied"} 1"#);
    has(r#"switchboard_call_errors_total{server="mock",tool="mcp__mock__fail"} 1"#);
    has(r#"switchboard_call_duration_seconds_count{server="mock",tool="mcp__mock__echo"} 3"#);
    assert!(
        body.lines().any(|l| l.starts_with(
            r#"switchboard_call_duration_seconds_bucket{le="+Inf",server="mock",tool="mcp__mock__echo"} 3"#
        ) || l.starts_with(
            r#"switchboard_call_duration_seconds_bucket{server="mock",tool="mcp__mock__echo",le="+Inf"} 3"#
        )),
        "{body}"
    );
    has(r#"switchboard_gate_decisions_total{server="mock",decision="allow"} 4"#);
    has(r#"switchboard_gate_decisions_total{server="notes",decision="deny"} 1"#);
    has(r#"switchboard_server_up{server="mock"} 1"#);
    has(r#"switchboard_server_up{server="gone"} 0"#);
    has(r#"switchboard_breaker_open{server="mock"} 0"#);
    has(r#"switchboard_server_status{server="gone",status="down"} 1"#);
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
    // No errors counted for the calls that went well.
    assert!(
        !body.contains(r#"switchboard_call_errors_total{server="mock",tool="mcp__mock__echo"}"#),
        "{body}"
    );
}

/// The value of the metric line `name{labels}` in `body` (0 when absent).
fn metric(body: &str, name: &str, labels: &str) -> f64 {
    let head = format!("{name}{{{labels}}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&head))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

// The same traffic, allowed, denied, asked (approved upstream), a tool
// error and a protocol error: `/metrics` and `audit stats` count the same
// calls, errors and durations.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_agree_with_audit_stats_on_the_same_traffic() {
    let sb = Sandbox::new();
    let cfg = sb
        .config(
            json!({"mock": {"command": mock_server()}}),
            json!({
                "permissions": {
                    "allow": ["mcp__mock__echo", "mcp__mock__fail", "mcp__mock__error"],
                    "deny": ["mcp__notes__search"]
                },
                "audit": "audit.jsonl"
            }),
        )
        .display()
        .to_string();
    let served = serve_asking(&sb, &cfg, &["--metrics"], &[]).await;
    let client = gateway_client(&served.url, None)
        // Approves every approval question the gateway puts to it.
        .input_handler(input_handler_fn(InputSupport::FORM, |_, q| async move {
            q.answer_from(json!({"action": "accept", "content": {"approve": true}}))
        }))
        .connect()
        .await
        .unwrap();
    let call = |name: &'static str| {
        let client = &client;
        async move {
            client
                .call_tool(name, object(json!({"text": "x", "query": "vpn"})))
                .await
                .unwrap()
        }
    };
    for _ in 0..2 {
        assert!(!call("mcp__mock__echo").await.is_error());
    }
    assert!(call("mcp__mock__fail").await.is_error());
    assert!(call("mcp__mock__error").await.is_error());
    assert!(call("mcp__notes__search").await.is_error(), "denied");
    // Asked: the question goes upstream (`asked`), the approved retry runs.
    let asked = call("mcp__mock__pids").await;
    assert!(!asked.is_error(), "{asked:?}");
    let (_, _, body) = http_get(&served.addr, "/metrics");
    drop(served);

    let run = sb.run(&["--config", &cfg, "--json", "audit", "stats"]);
    assert_eq!(run.code, 0, "{run:?}");
    let stats = run.json();
    let outcomes: Vec<String> = std::fs::read_to_string(sb.path().join("audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["outcome"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(outcomes.iter().any(|o| o == "asked"), "{outcomes:?}");
    let rows = stats["tools"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{stats}");
    for row in rows {
        let tool = row["tool"].as_str().unwrap();
        let server = row["server"].as_str().unwrap();
        let labels = format!(r#"server="{server}",tool="{tool}""#);
        let calls: f64 = [
            "ok",
            "tool_error",
            "protocol_error",
            "denied",
            "asked",
            "input_required",
        ]
        .iter()
        .map(|o| {
            metric(
                &body,
                "switchboard_calls_total",
                &format!(r#"{labels},outcome="{o}""#),
            )
        })
        .sum();
        assert_eq!(
            calls,
            row["calls"].as_f64().unwrap(),
            "calls of {tool}:\n{body}"
        );
        assert_eq!(
            metric(&body, "switchboard_call_errors_total", &labels),
            row["errors"].as_f64().unwrap(),
            "errors of {tool}:\n{body}"
        );
        let ran = row["calls"].as_u64().unwrap() - row["denied"].as_u64().unwrap();
        assert_eq!(
            metric(&body, "switchboard_call_duration_seconds_count", &labels),
            ran as f64,
            "durations of {tool}:\n{body}"
        );
    }
    // Errors by kind, as the outcomes say.
    let kinds =
        |tool: &str| rows.iter().find(|r| r["tool"] == tool).unwrap()["errorsByKind"].clone();
    assert_eq!(kinds("mcp__mock__fail"), json!({"tool_error": 1}));
    assert_eq!(kinds("mcp__mock__error"), json!({"protocol_error": 1}));
    assert_eq!(kinds("mcp__mock__pids"), json!({}));
    // The question handed back is no call and no error; the gate decided
    // once per call.
    let pids = r#"server="mock",tool="mcp__mock__pids""#;
    assert_eq!(
        metric(
            &body,
            "switchboard_calls_total",
            &format!(r#"{pids},outcome="asked""#)
        ),
        0.0
    );
    assert_eq!(
        metric(
            &body,
            "switchboard_calls_total",
            &format!(r#"{pids},outcome="ok""#)
        ),
        1.0
    );
    assert_eq!(
        metric(
            &body,
            "switchboard_gate_decisions_total",
            r#"server="mock",decision="ask""#
        ),
        1.0,
        "{body}"
    );
    // The table names the kinds too.
    let run = sb.run(&["--config", &cfg, "audit", "stats"]);
    assert!(
        run.stdout.contains("TOOL ERR") && run.stdout.contains("PROTOCOL"),
        "{run:?}"
    );
}

// A server's protocol error on a tool call is logged at warn.
#[test]
fn a_protocol_error_from_a_server_is_logged_at_warn() {
    let sb = Sandbox::new();
    let cfg = mock_config(&sb, json!({"permissions": {"allow": ["mcp__mock__error"]}}));
    let run = sb.run(&["--config", &cfg, "-v", "call", "mcp__mock__error", "{}"]);
    assert_ne!(run.code, 0, "{run:?}");
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("protocol error"))
        .unwrap_or_else(|| panic!("no log line: {run:?}"));
    assert!(
        line.contains("WARN") && line.contains("server=mock"),
        "{line}"
    );
}

// `call` and `chat` export their calls as spans, as `serve` does.
#[test]
fn call_and_chat_export_their_calls_as_spans() {
    let collector = Collector::start();
    let sb = Sandbox::new();
    let endpoint = format!("http://{}", collector.addr);
    let cfg = mock_config(&sb, json!({"permissions": {"allow": ["mcp__mock__echo"]}}));
    let echo = || {
        sb.cmd(&[
            "--config",
            &cfg,
            "call",
            "mcp__mock__echo",
            r#"{"text":"x"}"#,
        ])
    };
    // `cmd` with the collector as its endpoint exits 0, and has sent
    // `span` before it exits.
    let exports = |mut cmd: std::process::Command, span: &[u8], what: &str| {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
        let run = crate::util::run(cmd);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(contains(&collector.all_bodies(), span), "no span of {what}");
    };
    exports(echo(), b"tools/call echo", "the call");
    exports(
        sb.cmd(&["chat", "--model", "mock", "-p", "printers?", "--json"]),
        b"tools/call list_notes",
        "the chat's calls",
    );
    // Without the variable nothing is set up.
    let before = collector.requests.lock().unwrap().len();
    let run = crate::util::run(echo());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(collector.requests.lock().unwrap().len(), before);
}

/// Requests received: head and body of each.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A stand-in OTLP collector: records each request's head and body.
struct Collector {
    addr: String,
    requests: Received,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let requests: Received = Arc::default();
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    while let Some((head, body)) = read_request(&mut stream) {
                        seen.lock().unwrap().push((head, body));
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                        );
                    }
                });
            }
        });
        Collector { addr, requests }
    }

    /// Every body received so far, end to end.
    fn all_bodies(&self) -> Vec<u8> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .flat_map(|(_, b)| b.clone())
            .collect()
    }
}

/// One HTTP/1.1 request with a `content-length` body.
fn read_request(stream: &mut std::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// A gateway on the mock server, `--yes`, exporting spans to `collector`
/// every 100 ms, with `env` besides.
async fn traced_gateway(sb: &Sandbox, collector: &Collector, env: &[(&str, &str)]) -> Running {
    let cfg = mock_config(sb, json!({}));
    let endpoint = format!("http://{}", collector.addr);
    let mut all = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    all.extend_from_slice(env);
    serve_asking(sb, &cfg, &["--yes"], &all).await
}

/// The upstream caller's trace context: trace `0af7…`, its span `b7ad…`.
const UPSTREAM: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// The mock's echo called through `client` in the upstream `trace`; its
/// result, checked not to be an error.
async fn echo_in_a_trace(client: &Client, trace: TraceContext) -> switchboard_wire::CallToolResult {
    let options = RequestOptions {
        trace: Some(trace),
        ..RequestOptions::default()
    };
    let result = client
        .call_tool_with("mcp__mock__echo", object(json!({"text": "x"})), &options)
        .await
        .unwrap();
    assert!(!result.is_error(), "{result:?}");
    result
}

/// Waits (up to a minute) for an export whose body holds `needle`; its
/// request head and body.
async fn export_holding(
    collector: &Collector,
    served: &Running,
    needle: &[u8],
) -> (String, Vec<u8>) {
    let start = Instant::now();
    loop {
        let found = collector
            .requests
            .lock()
            .unwrap()
            .iter()
            .find(|(_, body)| contains(body, needle))
            .cloned();
        if let Some(found) = found {
            return found;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no span export with {:?} arrived; stderr:\n{}",
            String::from_utf8_lossy(needle),
            served.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn by_default_a_proxied_call_is_one_span_the_downstream_servers_parent() {
    let collector = Collector::start();
    let sb = Sandbox::new();
    let served = traced_gateway(&sb, &collector, &[]).await;
    let client = client(&served.url).await;
    let result = echo_in_a_trace(&client, TraceContext::new(UPSTREAM)).await;
    // The parent the downstream server was given…
    let meta = &result.structured_content.as_ref().unwrap()["params"]["_meta"];
    let parent = meta["traceparent"]
        .as_str()
        .unwrap()
        .split('-')
        .nth(2)
        .unwrap();
    let parent = u64::from_str_radix(parent, 16).unwrap().to_be_bytes();
    // …is the gateway's span, exported; and no client span is (it would
    // have ended first, so in this export or an earlier one).
    let (_, body) = export_holding(&collector, &served, b"tools/call mcp__mock__echo").await;
    assert!(
        contains(&body, &parent),
        "the downstream's parent is the exported span"
    );
    assert!(
        !contains(&collector.all_bodies(), b"tools/call echo"),
        "a client span was exported"
    );
}

#[test]
fn a_downstream_spans_setting_that_means_nothing_stops_the_gateway_at_start() {
    let sb = Sandbox::new();
    let cfg = mock_config(&sb, json!({}));
    let mut cmd = serve_cmd(&sb, &cfg, "127.0.0.1:0", &[]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("SWITCHBOARD_OTEL_DOWNSTREAM_SPANS", "maybe");
    let run = crate::util::run(cmd);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("SWITCHBOARD_OTEL_DOWNSTREAM_SPANS")
            && run.stderr.contains("\"maybe\""),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn traces_are_exported_over_otlp_http_when_an_endpoint_is_set() {
    let collector = Collector::start();
    let sb = Sandbox::new();
    let served = traced_gateway(
        &sb,
        &collector,
        &[
            ("OTEL_SERVICE_NAME", "gateway-under-test"),
            // A client span per downstream call too.
            ("SWITCHBOARD_OTEL_DOWNSTREAM_SPANS", "1"),
        ],
    )
    .await;
    let client = client(&served.url).await;
    echo_in_a_trace(&client, TraceContext::new(UPSTREAM)).await;
    let (head, body) = export_holding(&collector, &served, b"tools/call echo").await;
    let first = head.lines().next().unwrap();
    assert!(first.starts_with("POST /v1/traces "), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/x-protobuf"),
        "{head}"
    );
    let all = collector.all_bodies();
    assert!(contains(&body, b"gateway-under-test"), "service name");
    assert!(
        contains(&all, b"tools/call mcp__mock__echo"),
        "upstream span"
    );
    // OpenTelemetry's MCP attributes, and the server the call went to.
    for attribute in [
        &b"mcp.method.name"[..],
        b"gen_ai.tool.name",
        b"switchboard.server",
    ] {
        assert!(
            contains(&all, attribute),
            "{}",
            String::from_utf8_lossy(attribute)
        );
    }
    // The trace id travels as 16 raw bytes.
    let trace_id = [
        0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31,
        0x9c,
    ];
    assert!(contains(&body, &trace_id), "the upstream's trace id");

    // A task-augmented call (tasks extension): the same server span, with
    // the downstream call as its child, ended when the task ends.
    let tasks = gateway_client(&served.url, None)
        .tasks(true)
        .connect()
        .await
        .unwrap();
    let options = RequestOptions {
        trace: Some(TraceContext::new(
            "00-1bf7651916cd43dd8448eb211c80319d-c7ad6b7169203332-01",
        )),
        ..RequestOptions::default()
    };
    let r = tasks
        .call_tool_with(
            "mcp__mock__task",
            object(json!({"work_ms": 300, "poll_ms": 20})),
            &options,
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    let task_trace = [
        0x1b, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31,
        0x9d,
    ];
    let start = Instant::now();
    loop {
        let all = collector.all_bodies();
        if contains(&all, b"tools/call mcp__mock__task") && contains(&all, b"tools/call task") {
            // Both spans of the task's trace: the server span (the remote
            // parent c7ad…) and the downstream call.
            assert!(contains(&all, &task_trace), "the task call's trace id");
            let remote_parent = [0xc7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x32];
            assert!(contains(&all, &remote_parent), "the traceparent continued");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no span for the task call arrived; stderr:\n{}",
            served.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread")]
async fn reload_adds_and_drops_servers_without_failing_calls_to_the_others() {
    let sb = Sandbox::new();
    let base = json!({"permissions": {"allow": ["mcp__mock__echo"]}});
    let both = json!({"permissions": {"allow": ["mcp__mock__echo", "mcp__extra__echo"]}});
    let cfg = mock_config(&sb, base.clone());
    let served = serve_asking(&sb, &cfg, &["--metrics"], &[]).await;
    let client = Arc::new(client(&served.url).await);

    // Calls to mock, in a loop, for as long as the reloads go on.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let traffic = {
        let client = client.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let r = client
                    .call_tool("mcp__mock__echo", object(json!({"text": n.to_string()})))
                    .await
                    .unwrap();
                assert!(!r.is_error(), "call {n} failed: {r:?}");
                n += 1;
            }
            n
        })
    };

    // Add a server.
    add_extra_server(&sb, both);
    let names = until_extra_listed(&client, true, "the added server").await;
    assert!(names.iter().any(|n| n == "mcp__mock__echo"), "{names:?}");
    let r = client
        .call_tool("mcp__extra__echo", object(json!({"text": "new"})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");

    // A broken config is reported and the running one kept.
    sb.write("config.json", r#"{"mcpServers": {"mock": {"args": 3}}}"#);
    let buf = served.stderr.clone();
    tokio::task::spawn_blocking(move || wait_for(&buf, "config problem", Duration::from_secs(60)))
        .await
        .unwrap();
    let r = client
        .call_tool("mcp__extra__echo", object(json!({"text": "still"})))
        .await
        .unwrap();
    assert!(!r.is_error(), "the running config is kept: {r:?}");
    // Counted, for an alert on a config that no longer applies (the write
    // may be seen half done, and rejected twice).
    let counted = |metrics: &str| {
        metrics.contains(r#"switchboard_reloads_total{file="config",result="rejected"} "#)
            && metrics.contains(r#"switchboard_reloads_total{file="config",result="applied"} "#)
    };
    let start = Instant::now();
    loop {
        let (_, _, metrics) = http_get(&served.addr, "/metrics");
        if counted(&metrics) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{metrics}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Drop it again.
    sb.config(
        json!({"mock": {"command": mock_server(), "args": ["--name", "mock"]}}),
        base,
    );
    let names = until_extra_listed(&client, false, "the dropped server").await;
    assert!(names.iter().any(|n| n == "mcp__mock__echo"), "{names:?}");
    let r = client
        .call_tool("mcp__extra__echo", object(json!({"text": "gone"})))
        .await;
    // Unknown to the gateway now (-32602), or refused by the host.
    assert!(
        r.as_ref().map_or(true, |r| r.is_error()),
        "a dropped server's tools are gone: {r:?}"
    );

    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let calls = traffic.await.unwrap();
    assert!(calls > 0);
    let stderr = served.stderr();
    assert!(
        stderr.contains("the entry has neither command nor url"),
        "every problem is named: {stderr}"
    );
}

#[test]
fn audit_verify_checks_several_files_each_on_its_own() {
    let sb = Sandbox::new();
    let line_of = |seq: u64, prev: &str, replica: &str| -> (String, String) {
        use sha2::{Digest, Sha256};
        let body = format!(
            r#"{{"seq":{seq},"time":"2026-01-01T00:00:00.000Z","replica":"{replica}","alias":"notes","tool":"mcp__notes__search","originalTool":"search","argumentNames":[],"argumentsSha256":"x","decision":"allow","decidedBy":"rule","outcome":"ok","isError":false,"durationMs":1,"prev":"{prev}""#
        );
        let hash = hex(&Sha256::digest(body.as_bytes()));
        let line = format!(r#"{body},"hash":"{hash}"}}"#);
        let next = hex(&Sha256::digest(line.as_bytes()));
        (line, next)
    };
    let genesis = "0".repeat(64);
    let mut logs = Vec::new();
    for replica in ["a", "b"] {
        let (l1, h1) = line_of(1, &genesis, replica);
        let (l2, _) = line_of(2, &h1, replica);
        logs.push(sb.write(&format!("audit-{replica}.jsonl"), &format!("{l1}\n{l2}\n")));
    }
    let a = logs[0].display().to_string();
    let b = logs[1].display().to_string();
    let run = sb.run(&["audit", "verify", &a, &b]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 2, "{run:?}");
    assert!(
        run.stdout
            .contains("audit-a.jsonl: 2 line(s), chain intact"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("audit-b.jsonl: 2 line(s), chain intact"),
        "{run:?}"
    );

    // Tamper with b: a still verifies, b does not, and the exit says so.
    let text = std::fs::read_to_string(&logs[1]).unwrap();
    std::fs::write(
        &logs[1],
        text.replace("\"durationMs\":1", "\"durationMs\":2"),
    )
    .unwrap();
    let run = sb.run(&["audit", "verify", &a, &b]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("audit-a.jsonl: 2 line(s), chain intact"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("audit-b.jsonl: 2 line(s), chain broken"),
        "{run:?}"
    );
    let run = sb.run(&["--json", "audit", "verify", &a, &b]);
    let reports: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0]["intact"], true);
    assert_eq!(reports[1]["intact"], false);
}

// A gateway and `switchboard call` processes writing one audit log with
// `auditRotate`: the log is archived at its bound, the chain goes on across
// files and writers, `audit verify` and `audit stats` (no file: the
// config's log) read the log with its archives, and an edited archive is
// named.
#[tokio::test(flavor = "multi_thread")]
async fn a_rotated_audit_log_shared_by_processes_keeps_one_chain() {
    let sb = Sandbox::new();
    let cfg = mock_config(
        &sb,
        json!({
            "permissions": {"allow": ["mcp__mock"]},
            "audit": "audit.jsonl",
            "auditRotate": {"maxBytes": 3000}
        }),
    );
    let served = serve_asking(&sb, &cfg, &["--yes"], &[]).await;
    let gateway = client(&served.url).await;
    // Calls from the CLI, in their own processes, while the gateway writes.
    let calls: Vec<_> = (0..4)
        .map(|i| {
            sb.cmd(&[
                "--config",
                &cfg,
                "call",
                "mcp__mock__echo",
                &format!(r#"{{"from": "cli", "i": {i}}}"#),
            ])
        })
        .collect();
    let cli = std::thread::spawn(move || {
        for call in calls {
            let run = crate::util::run(call);
            assert_eq!(run.code, 0, "{run:?}");
        }
    });
    for i in 0..40 {
        let r = gateway
            .call_tool("mcp__mock__echo", object(json!({"i": i})))
            .await
            .unwrap();
        assert!(!r.is_error(), "{r:?}");
    }
    cli.join().unwrap();

    let archives: Vec<_> = std::fs::read_dir(sb.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("audit.jsonl."))
        .collect();
    assert!(archives.len() >= 3, "{archives:?}");
    let run = sb.run(&["--config", &cfg, "audit", "verify"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("44 line(s) in "), "{run:?}");
    assert!(run.stdout.contains("chain intact"), "{run:?}");
    let run = sb.run(&["--config", &cfg, "--json", "audit", "verify"]);
    let report = run.json();
    assert_eq!(report["lines"], 44, "{report}");
    assert_eq!(
        report["files"].as_array().unwrap().len(),
        archives.len() + 1
    );

    // Stats of the config's log count the archives' lines too; of the
    // file alone, only its own.
    let run = sb.run(&["--config", &cfg, "--json", "audit", "stats"]);
    let stats = run.json();
    assert_eq!(stats["records"], 44, "{stats}");
    assert_eq!(stats["tools"][0]["calls"], 44, "{stats}");
    assert_eq!(stats["files"].as_array().unwrap().len(), archives.len() + 1);
    let log = sb.path().join("audit.jsonl").display().to_string();
    let run = sb.run(&["--config", &cfg, "--json", "audit", "stats", &log]);
    let alone = run.json()["records"].as_u64().unwrap();
    assert!(alone < 44, "{run:?}");

    // An archive edited: verify fails and names it.
    let mut sorted = archives.clone();
    sorted.sort();
    let edited = sb.path().join(&sorted[1]);
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replacen("\"ok\"", "\"tool_error\"", 1)).unwrap();
    let run = sb.run(&["--config", &cfg, "audit", "verify"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(&format!("{}:1: ", sorted[1])),
        "{run:?}"
    );
    assert!(run.stdout.contains("chain broken"), "{run:?}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_config_when_the_file_is_not_watched() {
    let sb = Sandbox::new();
    let cfg = mock_config(&sb, json!({}));
    let served = serve_asking(&sb, &cfg, &["--yes", "--no-watch"], &[]).await;
    let client = client(&served.url).await;
    add_extra_server(&sb, json!({}));
    // Not watched: the change is not seen on its own.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let names = tool_names(&client).await;
    assert!(!names.iter().any(|n| n == "mcp__extra__echo"), "{names:?}");
    let status = std::process::Command::new("kill")
        .args(["-HUP", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    until_extra_listed(&client, true, "SIGHUP did not reload").await;
}

/// Writes the config anew with the mock server twice, as `mock` and as
/// `extra`, and `top`: the server a reload adds.
fn add_extra_server(sb: &Sandbox, top: Value) {
    sb.config(
        json!({
            "mock": {"command": mock_server(), "args": ["--name", "mock"]},
            "extra": {"command": mock_server(), "args": ["--name", "extra"]}
        }),
        top,
    );
}

/// Waits (up to 60 s) until the gateway behind `client` lists `extra`'s
/// echo, or (`listed` false) no longer does: the tools it lists then.
async fn until_extra_listed(client: &Client, listed: bool, what: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let names = tool_names(client).await;
        if names.iter().any(|n| n == "mcp__extra__echo") == listed {
            return names;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what}: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every line of `stderr` as a JSON log object: `timestamp`, `level` and
/// `message` at least.
fn json_log_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            for key in ["timestamp", "level", "message"] {
                assert!(v[key].is_string(), "no {key}: {l}");
            }
            v
        })
        .collect()
}

// `--log-format json` (or `SWITCHBOARD_LOG_FORMAT=json`): every stderr
// line is a JSON object with `timestamp`, `level` and `message`, and the
// event's fields beside them, as a log collector reads them; the
// gateway's address and a failing command's reason too.
#[tokio::test(flavor = "multi_thread")]
async fn log_lines_can_be_json_objects() {
    let sb = Sandbox::new();
    let cfg = sb.config(json!({}), json!({}));
    let served = serve_asking(
        &sb,
        cfg.to_str().unwrap(),
        &["-v"],
        &[("SWITCHBOARD_LOG_FORMAT", "json")],
    )
    .await;
    // A broken config: the reload's refusal is logged with its fields.
    std::fs::write(&cfg, r#"{"mcpServers": {"notes": {"command": 5}}}"#).unwrap();
    let start = Instant::now();
    while !served.stderr().contains("config problem") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{}",
            served.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stderr = served.stderr();
    let lines = json_log_lines(&stderr);
    let banner = lines
        .iter()
        .find(|l| {
            l["message"]
                .as_str()
                .unwrap()
                .starts_with("switchboard gateway: http://")
        })
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(banner["level"], "INFO");
    let mounted = lines
        .iter()
        .find(|l| l["message"] == "mounted")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(mounted["server"], "notes");
    let refused = lines
        .iter()
        .find(|l| {
            l["message"]
                .as_str()
                .unwrap()
                .starts_with("the config was not reloaded")
        })
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(refused["level"], "ERROR");
    assert_eq!(refused["problems"], 1);
    assert!(
        refused["file"].as_str().unwrap().ends_with("config.json"),
        "{refused}"
    );
    drop(served);

    let run = sb.run(&["--log-format", "json", "--config", "missing.json", "tools"]);
    assert_ne!(run.code, 0);
    let lines = json_log_lines(&run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert_eq!(lines[0]["level"], "ERROR");
    assert!(
        lines[0]["message"]
            .as_str()
            .unwrap()
            .contains("missing.json"),
        "{}",
        run.stderr
    );
    // --json keeps its own error line.
    let run = sb.run(&[
        "--log-format",
        "json",
        "--json",
        "--config",
        "missing.json",
        "tools",
    ]);
    let line: Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert!(line.get("level").is_none(), "{line}");
}
