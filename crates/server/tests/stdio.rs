//! The stdio runner, as a real child process (the `stdio` example): one
//! JSON-RPC message per stdout line, concurrency, cancellation, bad input,
//! end of input, and legacy `initialize`.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::util::*;

fn elicit() -> Value {
    meta_with(json!({"elicitation": {}}))
}

/// Sends `tools/call` of `name` with `arguments` as request `id`.
async fn call_tool(c: &mut Child, id: Value, name: &str, arguments: Value) {
    c.request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
}

/// Closes the child's input: it says nothing more and exits with success.
async fn close_and_expect_a_clean_exit(c: &mut Child) {
    c.close_stdin();
    assert!(c.recv().await.is_none());
    assert!(c.wait().await.success());
}

// STDIO-01/02: every stdout line is one JSON-RPC message.
#[tokio::test]
async fn answers_one_message_per_line() {
    let mut c = Child::spawn("stdio");
    c.request(json!(1), "tools/list", json!({})).await;
    let r = c.response().await;
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "count", "greet", "remember"]);
    call_tool(&mut c, json!("two"), "echo", json!({"text": "a\nb"})).await;
    let r = c.response().await;
    assert_eq!(r["id"], "two");
    assert_eq!(r["result"]["content"][0]["text"], "a\nb");
    close_and_expect_a_clean_exit(&mut c).await;
}

// A slow request does not hold up a fast one behind it.
#[tokio::test]
async fn requests_run_concurrently() {
    let mut c = Child::spawn("stdio");
    call_tool(&mut c, json!(1), "count", json!({"to": 2})).await;
    call_tool(&mut c, json!(2), "echo", json!({"text": "fast"})).await;
    assert_eq!(c.response().await["id"], 2);
    let slow = c.response().await;
    assert_eq!(slow["id"], 1);
    assert_eq!(slow["result"]["content"][0]["text"], "counted to 2");
}

// STDIO-08/10, CANC-07: notifications/cancelled stops the request and no
// answer is ever sent for it; progress flows before (PROG-04).
#[tokio::test]
async fn cancellation_stops_a_request_silently() {
    let mut c = Child::spawn("stdio");
    let mut meta = meta();
    meta["progressToken"] = json!("tok");
    c.request(
        json!(5),
        "tools/call",
        json!({"name": "count", "arguments": {"to": 100}, "_meta": meta}),
    )
    .await;
    let progress = c.recv().await.unwrap();
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], "tok");
    c.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}})).await;
    // Cancelling an unknown id is ignored (CANC-10).
    c.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}),
    )
    .await;
    call_tool(&mut c, json!(6), "echo", json!({"text": "after"})).await;
    loop {
        let m = c.recv().await.unwrap();
        if m["id"] == 6 {
            break;
        }
        // At most progress sent before the cancellation arrived.
        assert_eq!(m["method"], "notifications/progress", "{m}");
    }
    c.close_stdin();
    while let Some(m) = c.recv().await {
        assert_ne!(m["id"], 5, "a cancelled request was answered: {m}");
        assert_ne!(m["method"], "notifications/progress");
    }
    assert!(c.wait().await.success());
}

// Non-negotiable 1: bad lines are answered and skipped, never fatal.
#[tokio::test]
async fn bad_input_is_reported_and_skipped() {
    let mut c = Child::spawn("stdio");
    c.send_raw(b"{not json\n").await;
    let r = c.recv().await.unwrap();
    assert_eq!(r["error"]["code"], -32700);
    assert!(r["id"].is_null());
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":7}\n")
        .await;
    let r = c.recv().await.unwrap();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(3), json!(-32600))
    );
    // A line over the 16 MiB limit is refused without killing the server.
    let mut huge = vec![b'x'; 17 * 1024 * 1024];
    huge.push(b'\n');
    c.send_raw(&huge).await;
    let r = c.recv().await.unwrap();
    assert_eq!(r["error"]["code"], -32600);
    assert!(r["error"]["message"].as_str().unwrap().contains("limit"));
    // Without _meta: -32602 (WIRE-15).
    c.send(&json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}))
        .await;
    assert_eq!(c.response().await["error"]["code"], -32602);
    call_tool(&mut c, json!(5), "echo", json!({"text": "ok"})).await;
    assert_eq!(c.response().await["result"]["content"][0]["text"], "ok");
}

// STDIO-12: at end of input, running requests finish, then the process
// exits.
#[tokio::test]
async fn end_of_input_finishes_work_then_exits() {
    let mut c = Child::spawn("stdio");
    call_tool(&mut c, json!(1), "count", json!({"to": 2})).await;
    c.close_stdin();
    assert_eq!(
        c.response().await["result"]["content"][0]["text"],
        "counted to 2"
    );
    assert!(c.recv().await.is_none());
    assert!(c.wait().await.success());
}

// A thousand requests in flight on one pipe: each answer matches its id.
#[tokio::test]
async fn a_thousand_concurrent_requests() {
    let mut c = Child::spawn("stdio");
    let mut expected = HashMap::new();
    let mut input = Vec::new();
    for i in 0..1000 {
        let id = json!(format!("r{i}"));
        let (params, want) = if i % 2 == 0 {
            (
                json!({"name": "count", "arguments": {"to": 1}}),
                "counted to 1".to_owned(),
            )
        } else {
            let text = format!("echo {i}");
            (
                json!({"name": "echo", "arguments": {"text": text.clone()}}),
                text,
            )
        };
        expected.insert(id.to_string(), want);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": with_meta(params)});
        input.extend(serde_json::to_vec(&line).unwrap());
        input.push(b'\n');
    }
    // Write from another task: the answers must be read while writing.
    let mut stdin = c.take_stdin();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        stdin.write_all(&input).await.unwrap();
        stdin.flush().await.unwrap();
        stdin
    });
    for _ in 0..1000 {
        let r = c.response().await;
        let want = expected
            .remove(&r["id"].to_string())
            .unwrap_or_else(|| panic!("unexpected or repeated id: {r}"));
        assert_eq!(r["result"]["content"][0]["text"], want.as_str());
    }
    assert!(expected.is_empty());
    drop(writer.await.unwrap());
    assert!(c.wait().await.success());
}

// MRTR on stdio, modern client.
#[tokio::test]
async fn input_required_round_trip() {
    let mut c = Child::spawn("stdio");
    c.request(
        json!(1),
        "tools/call",
        json!({"name": "greet", "_meta": elicit()}),
    )
    .await;
    let r = c.response().await;
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(
        r["result"]["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    c.request(
        json!(2),
        "tools/call",
        json!({"name": "greet", "_meta": elicit(), "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}}),
    )
    .await;
    assert_eq!(
        c.response().await["result"]["content"][0]["text"],
        "Hello, Ada!"
    );
}

// A legacy client on stdio: initialize, then a server-to-client request.
#[tokio::test]
async fn legacy_client_on_stdio() {
    let mut c = Child::spawn("stdio");
    c.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"old","version":"1"}}})).await;
    let r = c.response().await;
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    c.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    c.send(&json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    assert_eq!(c.response().await["result"], json!({}));
    c.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet"}}))
        .await;
    let ask = c.recv().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    c.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"name":"Grace"}}})).await;
    let r = c.response().await;
    assert_eq!(r["id"], 2);
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Grace!");
}

// SUB-02/03/05 on stdio: acknowledgment first, notifications tagged with the
// listen id; notifications/cancelled ends the stream.
#[tokio::test]
async fn listen_on_stdio() {
    let mut c = Child::spawn("stdio");
    c.request(
        json!("sub-1"),
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true, "toolsListChanged": true}}),
    )
    .await;
    let ack = c.recv().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    call_tool(&mut c, json!(2), "remember", json!({"text": "milk"})).await;
    let mut seen_change = false;
    let mut seen_answer = false;
    while !(seen_change && seen_answer) {
        let m = c.recv().await.unwrap();
        if m["method"] == "notifications/resources/list_changed" {
            assert_eq!(
                m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                "sub-1"
            );
            seen_change = true;
        } else if m["id"] == 2 {
            seen_answer = true;
        } else {
            panic!("unexpected {m}");
        }
    }
    c.request(json!(3), "resources/list", json!({})).await;
    let list = c.response().await;
    assert!(
        list["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == "example://notes/2")
    );
    c.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub-1"}}),
    )
    .await;
    call_tool(&mut c, json!(4), "remember", json!({"text": "eggs"})).await;
    assert_eq!(
        c.recv().await.unwrap()["id"],
        4,
        "no notification after the listen was cancelled"
    );
    close_and_expect_a_clean_exit(&mut c).await;
}
