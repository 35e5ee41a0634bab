//! Streamable HTTP mechanics: methods, Origin/Host, body limits,
//! notifications, JSON versus SSE, cancellation by closing the stream, and
//! many calls at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use switchboard_server::http::HttpOptions;
use tokio::sync::Semaphore;

use crate::util::*;

fn discover_headers() -> Vec<(String, String)> {
    standard_headers("server/discover", &with_meta(json!({})))
}

fn discover_body() -> Vec<u8> {
    body(json!(1), "server/discover", with_meta(json!({})))
}

// HTTP-S-02/03: a foreign Origin or Host is refused with 403.
#[tokio::test]
async fn foreign_origin_and_host_are_refused() {
    let (http, _) = start_default().await;
    let mut h = discover_headers();
    h.push(header("origin", "http://evil.example.com"));
    let r = http.post(&h, discover_body()).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.error_code(), -32600);
    // DNS rebinding: the Host names another site.
    let h = set_header(discover_headers(), "host", Some("evil.example.com"));
    let r = http.post(&h, discover_body()).await;
    assert_eq!(r.status, 403);
    // Loopback origins are fine.
    let mut h = discover_headers();
    h.push(header(
        "origin",
        &format!("http://localhost:{}", http.addr.port()),
    ));
    assert_eq!(http.post(&h, discover_body()).await.status, 200);
    http.stop().await;
}

#[tokio::test]
async fn origin_allow_list_is_configurable() {
    let (server, _) = server();
    let http = start(
        server,
        HttpOptions::new().allowed_origins(["https://app.example.com"]),
    )
    .await;
    let mut h = discover_headers();
    h.push(header("origin", "https://app.example.com"));
    assert_eq!(http.post(&h, discover_body()).await.status, 200);
    let mut h = discover_headers();
    h.push(header("origin", "http://localhost:3000"));
    assert_eq!(http.post(&h, discover_body()).await.status, 403);
    http.stop().await;
}

// HTTP-S-01, HTTP-S-25: POST only; GET and DELETE get 405.
#[tokio::test]
async fn only_post_is_accepted() {
    let (http, _) = start_default().await;
    for method in [http::Method::GET, http::Method::DELETE, http::Method::PUT] {
        let r = http.raw(method.clone(), "/mcp", &[], Vec::new()).await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.headers["allow"], "POST");
    }
    let r = http
        .raw(
            http::Method::POST,
            "/elsewhere",
            &discover_headers(),
            discover_body(),
        )
        .await;
    assert_eq!(r.status, 404);
    http.stop().await;
}

// A body over the limit gets a clear 413, whether declared or streamed.
#[tokio::test]
async fn body_size_limit() {
    let (server, _) = server();
    let http = start(server, HttpOptions::new().max_body(1024)).await;
    let params = with_meta(json!({"name": "echo", "arguments": {"text": "x".repeat(4000)}}));
    let r = http
        .post(
            &standard_headers("tools/call", &params),
            body(json!(1), "tools/call", params),
        )
        .await;
    assert_eq!(r.status, 413);
    let msg = r.response()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("1024 bytes"), "{msg}");
    // The server still serves normal requests.
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "small"}}),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "small");
    http.stop().await;
}

// The default limit (4 MiB, docs/LIMITS.md): a body one byte over it gets
// 413 with the limit named, declared or streamed in; a body at the limit is
// served, and so is the next request on a new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_body_limit_is_4_mib() {
    const LIMIT: usize = 4 * 1024 * 1024;
    let (server, _) = server();
    let http = start(server, HttpOptions::new()).await;
    // A tools/call body of exactly `size` bytes: the text fills the rest.
    let sized = |id: i64, size: usize| {
        let params = |text: &str| with_meta(json!({"name": "echo", "arguments": {"text": text}}));
        let overhead = body(json!(id), "tools/call", params("")).len();
        let params = params(&"x".repeat(size - overhead));
        let bytes = body(json!(id), "tools/call", params.clone());
        assert_eq!(bytes.len(), size);
        (standard_headers("tools/call", &params), bytes)
    };
    let (headers, over) = sized(1, LIMIT + 1);
    let r = http.post(&headers, over.clone()).await;
    assert_eq!(r.status, 413);
    let msg = r.response()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("limit of 4194304 bytes"), "{msg}");
    let (status, answer) = post_chunked(&http, &headers, &over, 64 * 1024).await;
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit of 4194304 bytes")),
        "{answer}"
    );
    let (headers, at) = sized(2, LIMIT);
    let r = http.post(&headers, at).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.response()["id"], 2);
    assert!(r.result()["content"][0]["text"].as_str().unwrap().len() > LIMIT - 1024);
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "next"}}),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "next");
    http.stop().await;
}

/// Posts `payload` to `/mcp` in chunked pieces of `piece` bytes on a raw
/// socket: a body with no declared length, read frame by frame. Answers
/// the status and the body.
async fn post_chunked(
    http: &Http,
    headers: &[(String, String)],
    payload: &[u8],
    piece: usize,
) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(http.addr).await.unwrap();
    let _ = stream.set_nodelay(true);
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n",
        http.addr
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in payload.chunks(piece) {
        let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
        frame.extend_from_slice(chunk);
        frame.extend_from_slice(b"\r\n");
        // Written and flushed one by one, so the server sees several
        // frames (a refusal may close the socket before the end).
        if stream.write_all(&frame).await.is_err() {
            break;
        }
        let _ = stream.flush().await;
        tokio::task::yield_now().await;
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (_, rest) = text.split_once("\r\n\r\n").unwrap_or(("", ""));
    // The answer may itself be chunked: take the JSON between the braces.
    let json = match (rest.find('{'), rest.rfind('}')) {
        (Some(a), Some(b)) => serde_json::from_str(&rest[a..=b]).unwrap_or_default(),
        _ => serde_json::Value::Null,
    };
    (status, json)
}

// A client that sends the whole of a refused body before it reads gets the
// 413, not a reset connection: the server reads and drops the rest (up to a
// bound) before answering. 8 MiB is more than the loopback socket buffers
// hold, so a server that closed at once would fail the client's write.
#[tokio::test]
async fn a_refused_body_is_drained_so_the_413_arrives() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, _) = server();
    let http = start(server, HttpOptions::new().max_body(1024)).await;
    let params = with_meta(json!({"name": "echo", "arguments": {"text": "w".repeat(8 << 20)}}));
    let payload = body(json!(1), "tools/call", params.clone());
    for chunked in [false, true] {
        let mut stream = tokio::net::TcpStream::connect(http.addr).await.unwrap();
        let mut head = format!("POST /mcp HTTP/1.1\r\nhost: {}\r\n", http.addr);
        for (k, v) in standard_headers("tools/call", &params) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let mut bytes = Vec::with_capacity(payload.len() + 64);
        if chunked {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            bytes.extend_from_slice(head.as_bytes());
            bytes.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
            bytes.extend_from_slice(&payload);
            bytes.extend_from_slice(b"\r\n0\r\n\r\n");
        } else {
            head.push_str(&format!("content-length: {}\r\n\r\n", payload.len()));
            bytes.extend_from_slice(head.as_bytes());
            bytes.extend_from_slice(&payload);
        }
        stream
            .write_all(&bytes)
            .await
            .unwrap_or_else(|e| panic!("chunked={chunked}: the body could not be sent: {e}"));
        let mut head = vec![0u8; 12];
        stream
            .read_exact(&mut head)
            .await
            .unwrap_or_else(|e| panic!("chunked={chunked}: no answer: {e}"));
        assert_eq!(&head, b"HTTP/1.1 413", "chunked={chunked}");
    }
    http.stop().await;
}

// A body without a declared length, sent in many pieces, is read whole;
// one that grows past the limit is refused with 413 as it streams in.
#[tokio::test]
async fn chunked_bodies_are_joined_and_limited() {
    let (server, _) = server();
    let http = start(server, HttpOptions::new().max_body(1024)).await;
    let text = "y".repeat(300);
    let params = with_meta(json!({"name": "echo", "arguments": {"text": text}}));
    let (status, answer) = post_chunked(
        &http,
        &standard_headers("tools/call", &params),
        &body(json!(7), "tools/call", params),
        40,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["content"][0]["text"], text.as_str());
    let params = with_meta(json!({"name": "echo", "arguments": {"text": "z".repeat(4000)}}));
    let (status, answer) = post_chunked(
        &http,
        &standard_headers("tools/call", &params),
        &body(json!(8), "tools/call", params),
        500,
    )
    .await;
    assert_eq!(status, 413, "{answer}");
    // The server still serves normal requests.
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "ok"}}),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "ok");
    http.stop().await;
}

// HTTP-S-06: an accepted notification is 202 with no body.
#[tokio::test]
async fn notifications_get_202() {
    let (http, _) = start_default().await;
    let note =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).unwrap();
    let r = http.post(&discover_headers(), note).await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    http.stop().await;
}

#[tokio::test]
async fn malformed_bodies_are_400_and_the_server_goes_on() {
    let (http, _) = start_default().await;
    let r = http.post(&discover_headers(), b"{not json".to_vec()).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32700);
    assert!(r.response()["id"].is_null());
    let r = http.post(&discover_headers(), b"[1,2]".to_vec()).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32600);
    let r = http
        .post(
            &set_header(discover_headers(), "content-type", Some("text/plain")),
            discover_body(),
        )
        .await;
    assert_eq!(r.status, 415);
    let r = http.call("server/discover", json!({})).await;
    assert_eq!(r.status, 200);
    http.stop().await;
}

// HTTP-S-07: JSON unless something streams; SSE with X-Accel-Buffering
// when the handler sends progress (HTTP-S-11), the response last
// (HTTP-S-08).
#[tokio::test]
async fn json_by_default_sse_when_streaming() {
    let (http, _) = start_default().await;
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "a"}}),
        )
        .await;
    assert_eq!(r.content_type(), "application/json");
    // A progress token alone does not force SSE when nothing is sent.
    let mut meta = meta();
    meta["progressToken"] = json!("t");
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "a"}, "_meta": meta.clone()}),
        )
        .await;
    assert_eq!(r.content_type(), "application/json");
    let r = http
        .call("tools/call", json!({"name": "progress", "_meta": meta}))
        .await;
    assert_eq!(r.content_type(), "text/event-stream");
    assert_eq!(r.headers["x-accel-buffering"], "no");
    let messages = r.messages();
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "t");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    // PROG-02: strictly rising; the non-increasing values were dropped.
    assert_eq!(progress, vec![1.0, 2.0, 3.0]);
    assert_eq!(messages.last().unwrap()["id"], 1);
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "done"
    );
    http.stop().await;
}

// HTTP-S-12/14, CANC-03: closing the SSE stream cancels the handler, which
// sees it through its context.
#[tokio::test]
async fn closing_the_stream_cancels_the_handler() {
    let (http, probe) = start_default().await;
    let mut meta = meta();
    meta["progressToken"] = json!(5);
    let mut stream = http
        .open(
            json!(3),
            "tools/call",
            json!({"name": "wait_cancel", "_meta": meta}),
        )
        .await;
    assert_eq!(stream.status, 200);
    let first = stream.next().await.unwrap();
    assert_eq!(first["method"], "notifications/progress");
    stream.close();
    tokio::time::timeout(WAIT, probe.cancelled.notified())
        .await
        .expect("the handler never saw the cancellation");
    assert_eq!(probe.cancel_count.load(Ordering::SeqCst), 1);
    // The server is unaffected.
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "still here");
    http.stop().await;
}

// 1,000 calls in flight from many connections: none lost, none mismatched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls() {
    let (http, _) = start_default().await;
    let http = Arc::new(http);
    let gate = Arc::new(Semaphore::new(250));
    let mut tasks = Vec::new();
    for i in 0..1000u32 {
        let http = Arc::clone(&http);
        let gate = Arc::clone(&gate);
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            let text = format!("call-{i}");
            let r = http
                .call_id(
                    json!(format!("id-{i}")),
                    "tools/call",
                    json!({"name": "sleep_echo", "arguments": {"ms": i % 7, "text": text}}),
                )
                .await;
            let response = r.response();
            assert_eq!(response["id"], format!("id-{i}"));
            assert_eq!(response["result"]["content"][0]["text"], text);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    Arc::try_unwrap(http).ok().unwrap().stop().await;
}

// Graceful shutdown ends listen streams with their closing result.
#[tokio::test]
async fn shutdown_closes_listen_streams_gracefully() {
    let (http, _) = start_default().await;
    let mut stream = http
        .open(
            json!("L"),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .await;
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let stopping = tokio::spawn(http.stop());
    let closing = stream.next().await.unwrap();
    assert_eq!(closing["id"], "L");
    assert_eq!(closing["result"]["resultType"], "complete");
    assert_eq!(
        closing["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    assert!(stream.next().await.is_none());
    tokio::time::timeout(Duration::from_secs(20), stopping)
        .await
        .unwrap()
        .unwrap();
}

// Plain routes (health, metrics) answer GET next to the MCP endpoint with
// no Origin check, refuse other methods, and leave unknown paths at 404.
#[tokio::test]
async fn plain_routes_answer_get_next_to_the_endpoint() {
    use switchboard_server::http::{PlainResponse, PlainRoute};
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let route: PlainRoute = Arc::new(move || {
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move { PlainResponse::new(200, "text/plain", format!("ok {n}")) })
    });
    let (server, _) = server();
    let http = start(server, HttpOptions::new().plain_route("/healthz", route)).await;
    let r = http
        .raw(
            http::Method::GET,
            "/healthz",
            &[header("origin", "http://evil.example.com")],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type(), "text/plain");
    assert_eq!(r.body, b"ok 1");
    let r = http
        .raw(http::Method::POST, "/healthz", &[], Vec::new())
        .await;
    assert_eq!(r.status, 405);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "a refused method runs nothing"
    );
    let r = http
        .raw(http::Method::GET, "/readyz", &[], Vec::new())
        .await;
    assert_eq!(r.status, 404);
    http.stop().await;
}
