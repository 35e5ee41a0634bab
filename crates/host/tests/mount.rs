//! Mounting: parallel discovery, per-server isolation, HTTP servers,
//! refresh on TTL expiry.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_host::{AssumeYes, CallOptions, ServerStatus};

use crate::util::*;

/// Ten servers that each take 200 ms to start are started together: their
/// start-up windows overlap (counted from the times each process logs),
/// which a one-after-another mount can never show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_slow_servers_start_in_parallel() {
    let dir = Dir::new();
    let mut servers = serde_json::Map::new();
    for i in 0..10 {
        let log = dir.path_str(&format!("start-{i}.log"));
        servers.insert(
            format!("s{i}"),
            stdio(&["--startup-delay-ms", "200", "--startup-log", &log]),
        );
    }
    let host = dir.mount(json!({"mcpServers": servers})).await;
    assert!(host.servers().iter().all(|s| s.status == ServerStatus::Up));

    let mut windows = Vec::new();
    for i in 0..10 {
        let text = std::fs::read_to_string(dir.path(&format!("start-{i}.log"))).unwrap();
        let time = |event: &str| -> u128 {
            text.lines()
                .find_map(|l| l.strip_prefix(event).map(|t| t.trim().parse().unwrap()))
                .unwrap()
        };
        windows.push((time("start"), time("ready")));
    }
    // The most start-up windows open at one instant.
    let most = windows
        .iter()
        .map(|(s, _)| windows.iter().filter(|(a, b)| a <= s && s < b).count())
        .max()
        .unwrap();
    assert!(
        most >= 5,
        "at most {most} servers were starting at once: {windows:?}"
    );
    host.shutdown().await;
}

/// A server that cannot be spawned, one that dies at start, one that does
/// not answer in time and an HTTP server on a dead port are each recorded
/// with their reason; the healthy server mounts and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_isolated_and_reported() {
    let dir = Dir::new();
    let port = closed_port().await;
    let host = dir
        .mount(json!({"mcpServers": {
            "good": stdio(&[]),
            "missing": {"command": dir.path_str("no-such-program")},
            "dies": {"command": "sh", "args": ["-c", "echo 'config file unreadable' >&2; exit 3"]},
            "slow": {"command": mock(), "args": ["--startup-delay-ms", "10000"], "startupTimeoutMs": 300},
            "web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
            "off": {"command": mock(), "enabled": false},
        }}))
        .await;
    let servers = host.servers();
    let by = |alias: &str| servers.iter().find(|s| s.alias == alias).unwrap().clone();
    assert_eq!(by("good").status, ServerStatus::Up);
    assert_eq!(by("off").status, ServerStatus::Disabled);
    for alias in ["missing", "dies", "slow", "web"] {
        let s = by(alias);
        assert_eq!(s.status, ServerStatus::Down, "{alias}");
        assert_eq!(s.tools, 0, "{alias}");
    }
    assert!(by("missing").reason.unwrap().contains("no-such-program"));
    let dies = by("dies").reason.unwrap();
    assert!(dies.contains("config file unreadable"), "{dies}");
    let slow = by("slow").reason.unwrap();
    assert!(slow.contains("300 ms"), "{slow}");
    assert!(by("web").reason.is_some());

    let outage = host.outage_text().expect("outages are reported");
    for alias in ["missing", "dies", "slow", "web"] {
        assert!(outage.contains(&format!("- {alias} is down")), "{outage}");
    }
    assert!(!outage.contains("good"), "{outage}");

    // Only the healthy server's tools are in the table, and they work.
    let tools = host.tools();
    assert!(!tools.is_empty());
    assert!(tools.iter().all(|t| t.server == "good"));
    let result = host
        .call(
            "mcp__good__echo",
            json!({"text": "hi"}).as_object().cloned(),
            CallOptions::approver(AssumeYes),
        )
        .await;
    assert!(!result.is_error(), "{}", text(&result));
    assert!(text(&result).contains("hi"));
    host.shutdown().await;
}

/// An HTTP server is mounted like a stdio one; its configured headers (with
/// `${VAR}` expanded) reach it; a tool with an invalid `x-mcp-header`
/// annotation is dropped, with the reason shown, and its siblings stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_with_headers_and_a_dropped_tool() {
    let server = HttpServer::start(vec![
        tool("lookup", "Looks things up."),
        json!({"name": "bad", "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}}),
        tool("other", "Another tool."),
    ])
    .await;
    let dir = Dir::new();
    let config = dir.config_with_vars(
        json!({"mcpServers": {"web": {"type": "http", "url": server.url, "headers": {"Authorization": "Bearer ${TOKEN}"}}}}),
        &[("TOKEN", "s3cret")],
    );
    let host = switchboard_host::Host::mount(config, Default::default())
        .await
        .unwrap();
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp__web__lookup", "mcp__web__other"]);
    let report = host.servers().remove(0);
    assert_eq!(report.transport, "http");
    assert_eq!(report.dropped.len(), 1, "{report:?}");
    assert_eq!(report.dropped[0].name, "bad");
    assert!(
        report.dropped[0].reason.contains("x-mcp-header"),
        "{report:?}"
    );

    let result = host
        .call("mcp__web__lookup", None, CallOptions::approver(AssumeYes))
        .await;
    assert!(
        text(&result).contains("lookup ran over http"),
        "{}",
        text(&result)
    );
    let seen = server.state.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|(auth, _)| auth.as_deref() == Some("Bearer s3cret"))
    );
    let call = seen
        .iter()
        .find(|(_, m)| m["method"] == "tools/call")
        .unwrap();
    assert_eq!(call.1["params"]["name"], "lookup");
    host.shutdown().await;
}

/// A listing with a positive `ttlMs` is fetched again once it expires, and
/// subscribers hear about the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_after_ttl_expiry() {
    let server = HttpServer::start(vec![tool("a", "first")]).await;
    *server.state.ttl_ms.lock().unwrap() = Some(100);
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"web": {"type": "http", "url": server.url}},
            // A tool added later is offered at once.
            "newTools": "allow",
        }))
        .await;
    let mut changes = host.subscribe();
    assert_eq!(host.tools().len(), 1);
    server.state.tools.lock().unwrap().push(tool("b", "second"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Using the table after expiry triggers the refresh.
    let _ = host.tools();
    let change = tokio::time::timeout(Duration::from_secs(10), changes.recv())
        .await
        .expect("a table change")
        .unwrap();
    assert_eq!(change.added, ["mcp__web__b"]);
    let names: Vec<Value> = host.tools().into_iter().map(|t| json!(t.name)).collect();
    assert_eq!(names, [json!("mcp__web__a"), json!("mcp__web__b")]);
    host.shutdown().await;
}
