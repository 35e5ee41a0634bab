//! The breaker: N consecutive timeouts trip a server; calls are refused
//! at once during the cool-down; then a probe closes it again.

use std::time::Duration;

use serde_json::json;
use switchboard_host::{CallOptions, ServerStatus};

use crate::util::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trips_after_consecutive_timeouts_and_recovers() {
    let dir = Dir::new();
    let log = dir.path("m.log");
    let host = dir
        .mount(json!({
            "mcpServers": {"m": {"command": mock(), "args": ["--log", log.display().to_string()],
                                  "toolTimeouts": {"sleep": 100}}},
            "permissions": {"allow": ["mcp__m"]},
            "breaker": {"failures": 3, "cooldownMs": 3000},
        }))
        .await;
    let slow = json!({"ms": 30000}).as_object().cloned();
    for _ in 0..3 {
        let r = host
            .call("mcp__m__sleep", slow.clone(), CallOptions::default())
            .await;
        assert!(text(&r).contains("did not answer"), "{}", text(&r));
    }
    assert_eq!(host.servers()[0].status, ServerStatus::Tripped);
    let reason = host.servers()[0].reason.clone().unwrap();
    assert!(reason.contains("3 consecutive failures"), "{reason}");
    assert!(host.outage_text().unwrap().contains("- m is paused"));
    assert_eq!(host.tools()[0].status.server, ServerStatus::Tripped);

    // Refused without reaching the server.
    let sent = logged_calls(&log).len();
    let r = host
        .call("mcp__m__echo", None, CallOptions::default())
        .await;
    assert!(r.is_error());
    assert!(
        text(&r).contains("paused after repeated failures"),
        "{}",
        text(&r)
    );
    assert_eq!(logged_calls(&log).len(), sent);

    // After the cool-down a probe goes through and closes the breaker.
    tokio::time::sleep(Duration::from_millis(3300)).await;
    let r = host
        .call(
            "mcp__m__echo",
            json!({"text": "probe"}).as_object().cloned(),
            CallOptions::default(),
        )
        .await;
    assert!(!r.is_error(), "{}", text(&r));
    assert_eq!(host.servers()[0].status, ServerStatus::Up);
    assert!(host.outage_text().is_none());
    host.shutdown().await;
}

/// Tool errors and protocol errors prove the server alive: they never trip it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_and_protocol_errors_do_not_trip() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[])},
            "permissions": {"allow": ["mcp__m"]},
            "breaker": {"failures": 2, "cooldownMs": 60000},
        }))
        .await;
    for name in [
        "mcp__m__fail",
        "mcp__m__error",
        "mcp__m__fail",
        "mcp__m__error",
    ] {
        host.call(name, None, CallOptions::default()).await;
    }
    assert_eq!(host.servers()[0].status, ServerStatus::Up);
    host.shutdown().await;
}
