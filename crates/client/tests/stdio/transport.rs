//! The stdio transport against a misbehaving server: framing, junk,
//! interleaved notifications, late and missing answers, exits, big lines.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, RequestOptions, StdioTransport, TransportError};
use switchboard_wire::types::JsonObject;

use super::util::{self, connect, mock};

fn args(v: Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

// DESIGN item 1: bytes arrive one at a time; every message still frames.
#[tokio::test]
async fn one_byte_writes_still_frame_every_message() {
    let (client, _t) = connect(&["--byte-writes"]).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.items.len(), 15);
    let r = client
        .call_tool("echo", args(json!({"text": "split"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "split");
}

// DESIGN item 2: notifications before and after a response are never taken
// for it; unclaimed ones reach the general hook; stale progress is dropped.
#[tokio::test]
async fn interleaved_notifications_are_routed_not_confused() {
    let (builder, _t) = util::builder(&["--chatty"]).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let client = builder
        .on_notification(move |n| sink.lock().unwrap().push(n.method))
        .connect()
        .await
        .unwrap();
    let progress = Arc::new(AtomicUsize::new(0));
    let counter = progress.clone();
    let options = RequestOptions::default().with_progress(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    for i in 0..5 {
        let text = format!("call {i}");
        let r = client
            .call_tool_with("echo", args(json!({"text": text})), &options)
            .await
            .unwrap();
        assert_eq!(r.joined_text(), text);
    }
    // Progress for an unknown token and for the finished request (sent after
    // its response) belongs to no active request (PROG-04).
    assert_eq!(progress.load(Ordering::SeqCst), 0);
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains(&"notifications/message".to_owned()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"notifications/tools/list_changed".to_owned()),
        "{seen:?}"
    );
    assert!(
        !seen.contains(&"notifications/progress".to_owned()),
        "{seen:?}"
    );
}

// DESIGN item 1: non-JSON stdout lines are skipped, counted, and never kill
// the transport.
#[tokio::test]
async fn junk_lines_are_skipped_and_counted() {
    let (client, transport) = connect(&["--junk"]).await;
    for i in 0..3 {
        let r = client
            .call_tool("echo", args(json!({"text": format!("{i}")})))
            .await
            .unwrap();
        assert_eq!(r.joined_text(), format!("{i}"));
    }
    // Start-up junk plus junk before each of 4 responses (discover + 3
    // calls): 4 non-message lines each (the blank line is not counted).
    assert_eq!(transport.junk_lines(), 4 * 5);
}

// DESIGN item 2, CANC-08: a response after the timeout is dropped silently
// and cannot be mistaken for a later request's.
#[tokio::test]
async fn late_response_is_dropped_and_the_next_call_gets_its_own() {
    let log = util::log_path();
    let log_arg = log.to_str().unwrap();
    let (client, transport) =
        connect(&["--delay-ms", "600", "--ignore-cancel", "--log", log_arg]).await;
    let err = client
        .call_tool_with(
            "echo",
            args(json!({"text": "first"})),
            &RequestOptions::timeout(Duration::from_millis(100)),
        )
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    let r = client
        .call_tool("echo", args(json!({"text": "second"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "second");
    assert_eq!(transport.in_flight(), 0);
    // CANC-02: the timed-out request was cancelled by id.
    let entries = util::read_log(&log);
    let first = util::requests(&entries, "tools/call")[0]["id"].clone();
    assert!(
        entries
            .iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == first),
        "{entries:?}"
    );
}

// CANC-11: a request nobody answers times out with a clear error.
#[tokio::test]
async fn a_request_that_is_never_answered_times_out() {
    let (client, transport) = connect(&[]).await;
    let err = client
        .call_tool_with(
            "never",
            None,
            &RequestOptions::timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().contains("tools/call"), "{err}");
    assert_eq!(transport.in_flight(), 0);
    // The transport is fine afterwards.
    client.call_tool("echo", None).await.unwrap();
}

// STDIO-08: dropping a call's future sends notifications/cancelled with its id.
#[tokio::test]
async fn dropping_a_call_cancels_it() {
    let log = util::log_path();
    let (client, transport) = connect(&["--log", log.to_str().unwrap()]).await;
    let call = client.call_tool("sleep", args(json!({"ms": 20_000})));
    tokio::select! {
        _ = call => panic!("the sleep tool answered"),
        _ = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    assert_eq!(transport.in_flight(), 0);
    client.call_tool("echo", None).await.unwrap();
    let entries = util::read_log(&log);
    let id = util::requests(&entries, "tools/call")[0]["id"].clone();
    let cancels: Vec<_> = entries
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancels.len(), 1, "{entries:?}");
    assert_eq!(cancels[0]["params"]["requestId"], id);
    assert!(cancels[0].get("id").is_none());
}

// DESIGN item 3: a server exiting mid-request fails every pending request at
// once, with the exit status and the last stderr lines; later requests fail
// at once too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_mid_request_fails_every_pending_request_with_the_cause() {
    let (client, transport) = connect(&[]).await;
    let slow = |ms: u64| {
        let c = client.clone();
        tokio::spawn(async move {
            c.call_tool_with(
                "sleep",
                args(json!({"ms": ms})),
                &RequestOptions::timeout(Duration::from_secs(60)),
            )
            .await
        })
    };
    let a = slow(50_000);
    let b = slow(50_000);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let crash = client
        .call_tool("crash", args(json!({"code": 3, "lines": 2})))
        .await
        .unwrap_err();
    for err in [
        crash,
        a.await.unwrap().unwrap_err(),
        b.await.unwrap().unwrap_err(),
    ] {
        assert!(err.is_closed(), "{err}");
        let text = err.to_string();
        assert!(text.contains("exit status: 3"), "{text}");
        assert!(text.contains("exiting mid-request"), "{text}");
    }
    assert_eq!(transport.exit_status().and_then(|s| s.code()), Some(3));
    assert!(
        transport
            .stderr_tail()
            .iter()
            .any(|l| l.contains("crash line 1"))
    );
    let err = client.call_tool("echo", None).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
}

// A server that cannot be started fails with the cause, naming the server.
#[tokio::test]
async fn spawn_failure_names_the_cause() {
    let config = switchboard_client::StdioConfig::new("ghost", "/nonexistent/mcp-server-binary");
    let err = StdioTransport::spawn(config).await.unwrap_err();
    assert!(matches!(err, TransportError::Spawn { .. }), "{err}");
    assert!(err.is_closed());
    // The OS error itself is the source, typed.
    let source = std::error::Error::source(&err).expect("a source");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    let text = err.to_string();
    assert!(
        text.contains("ghost") && text.contains("/nonexistent/mcp-server-binary"),
        "{text}"
    );
}

#[tokio::test]
async fn a_ten_mebibyte_result_arrives_whole() {
    let (client, _t) = connect(&[]).await;
    let r = client.call_tool("big", None).await.unwrap();
    let text = r.joined_text();
    assert_eq!(text.len(), 10 * 1024 * 1024);
    assert!(text.bytes().all(|b| b == b'x'));
}

// DESIGN item 1: a line over the bound is skipped (memory stays bounded) and
// the messages after it still arrive; the request it answered fails at once
// with the limit named (its id is at the start of the line).
#[tokio::test]
async fn an_oversized_line_is_refused_without_losing_the_next_message() {
    let mut config = mock(&[]);
    config.max_line = 1024 * 1024;
    let transport = StdioTransport::spawn(config).await.unwrap();
    let client = Client::builder("mock", transport.clone())
        .connect()
        .await
        .unwrap();
    let err = client
        .call_tool_with(
            "big",
            args(json!({"bytes": 3 * 1024 * 1024})),
            &RequestOptions::timeout(Duration::from_secs(60)),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the server's answer was over 1 MiB (StdioConfig::max_line)"),
        "{err}"
    );
    let r = client
        .call_tool("echo", args(json!({"text": "after"})))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "after");
    // The whole line went by as one skipped line, reported at its end.
    assert_eq!(transport.junk_lines(), 1);
}

// STDIO-06: stderr is captured with the server's name, kept for diagnostics,
// and not an error.
#[tokio::test]
async fn stderr_is_captured_not_an_error() {
    let (client, transport) = connect(&[]).await;
    client.call_tool("echo", None).await.unwrap();
    let tail = transport.stderr_tail();
    assert!(
        tail.iter().any(|l| l.contains("mock-server mock ready")),
        "{tail:?}"
    );
}

// PROG-01: each request gets its own token; progress reaches only its caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_routed_by_token() {
    let (client, _t) = connect(&[]).await;
    let run = |steps: u64| {
        let c = client.clone();
        tokio::spawn(async move {
            let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
            let sink = seen.clone();
            let options = RequestOptions::default().with_progress(move |p| {
                sink.lock().unwrap().push(p.progress);
            });
            c.call_tool_with("progress", args(json!({"steps": steps})), &options)
                .await
                .unwrap();
            seen.lock().unwrap().clone()
        })
    };
    let (a, b) = (run(3), run(5));
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert_eq!(a, vec![1.0, 2.0, 3.0]);
    assert_eq!(b, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
}
