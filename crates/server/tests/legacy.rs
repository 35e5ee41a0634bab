//! Legacy 2025-11-25 clients on the same HTTP endpoint: `initialize`,
//! sessions, `ping`, `logging/setLevel`, and input requests sent to the
//! client as server-to-client requests on the response stream.

use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;

use crate::util::*;

fn legacy_headers(session: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![
        header("content-type", "application/json"),
        header("accept", "application/json, text/event-stream"),
    ];
    if let Some(s) = session {
        h.push(header("mcp-session-id", s));
        h.push(header("mcp-protocol-version", "2025-11-25"));
    }
    h
}

async fn initialize(http: &Http, capabilities: Value) -> String {
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "old", "version": "1"}});
    let r = http
        .post(&legacy_headers(None), body(json!(0), "initialize", params))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let result = r.result();
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["serverInfo"]["name"], "test-server");
    assert!(result["capabilities"]["logging"].is_object());
    let session = r.headers["mcp-session-id"].to_str().unwrap().to_owned();
    assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    session
}

async fn legacy_call(http: &Http, session: &str, id: Value, method: &str, params: Value) -> Resp {
    http.post(&legacy_headers(Some(session)), body(id, method, params))
        .await
}

#[tokio::test]
async fn session_lifecycle() {
    let (http, _) = start_default().await;
    let session = initialize(&http, json!({})).await;
    let note =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).unwrap();
    assert_eq!(
        http.post(&legacy_headers(Some(&session)), note)
            .await
            .status,
        202
    );
    let r = legacy_call(&http, &session, json!(1), "ping", json!({})).await;
    assert_eq!(r.result(), json!({}));
    let r = legacy_call(&http, &session, json!(2), "tools/list", json!({})).await;
    assert!(r.result()["tools"].as_array().unwrap().len() > 5);
    echo_old(&http, &session).await;
    // Unknown sessions are 404; DELETE ends a session.
    let r = legacy_call(&http, "nope", json!(4), "ping", json!({})).await;
    assert_eq!(r.status, 404);
    assert_eq!(end_session(&http, &session).await, 200);
    let r = legacy_call(&http, &session, json!(5), "ping", json!({})).await;
    assert_eq!(r.status, 404);
    // An ended (or never known) session is 404 on DELETE too (the legacy
    // unknown-session rule); DELETE without a session is 405.
    for session in [Some(session.as_str()), Some("nope")] {
        let r = http
            .raw(
                http::Method::DELETE,
                "/mcp",
                &legacy_headers(session),
                Vec::new(),
            )
            .await;
        assert_eq!(r.status, 404, "{session:?}");
    }
    let r = http
        .raw(
            http::Method::DELETE,
            "/mcp",
            &legacy_headers(None),
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "POST");
    http.stop().await;
}

#[tokio::test]
async fn set_level_then_logs() {
    let (http, _) = start_default().await;
    let session = initialize(&http, json!({})).await;
    let r = legacy_call(
        &http,
        &session,
        json!(1),
        "logging/setLevel",
        json!({"level": "debug"}),
    )
    .await;
    assert_eq!(r.result(), json!({}));
    let r = legacy_call(
        &http,
        &session,
        json!(2),
        "tools/call",
        json!({"name": "logs"}),
    )
    .await;
    let levels: Vec<Value> = r
        .messages()
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].clone())
        .collect();
    assert_eq!(levels, vec![json!("debug"), json!("error")]);
    http.stop().await;
}

// The same MRTR handler serves a legacy client: the input request goes to
// the client as a request on the stream, its answer comes back as a POST.
#[tokio::test]
async fn input_requests_become_server_requests() {
    let (http, _) = start_default().await;
    let session = initialize(&http, json!({"sampling": {}})).await;
    sampling_on_the_stream(&http, &session).await;
    http.stop().await;
}

/// `echo` called in `session`, answered.
async fn echo_old(http: &Http, session: &str) {
    let params = json!({"name": "echo", "arguments": {"text": "old"}});
    let r = legacy_call(http, session, json!(3), "tools/call", params).await;
    assert_eq!(r.result()["content"][0]["text"], "old");
}

/// Ends `session` (`DELETE`); the HTTP status.
async fn end_session(http: &Http, session: &str) -> u16 {
    let headers = legacy_headers(Some(session));
    http.raw(http::Method::DELETE, "/mcp", &headers, Vec::new())
        .await
        .status
}

/// A tool call of `session` that asks the client's model, on its
/// streamed answer, and gets the answer the client posts.
async fn sampling_on_the_stream(http: &Http, session: &str) {
    let mut stream = open_legacy(
        http,
        session,
        json!(9),
        "tools/call",
        json!({"name": "need_sampling"}),
    )
    .await;
    let ask = stream.next().await.unwrap();
    assert_eq!(ask["method"], "sampling/createMessage");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}});
    let r = http
        .post(
            &legacy_headers(Some(session)),
            serde_json::to_vec(&answer).unwrap(),
        )
        .await;
    assert_eq!(r.status, 202);
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], 9);
    assert_eq!(done["result"]["content"][0]["text"], "model said 4");
}

async fn open_legacy(http: &Http, session: &str, id: Value, method: &str, params: Value) -> Stream {
    http.open_with(legacy_headers(Some(session)), body(id, method, params))
        .await
}

#[tokio::test]
async fn legacy_can_be_switched_off() {
    let (server, _) = server_without_legacy();
    let http = start(server, HttpOptions::new()).await;
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}});
    let r = http
        .post(&legacy_headers(None), body(json!(0), "initialize", params))
        .await;
    assert_ne!(r.status, 200);
    assert!(r.headers.get("mcp-session-id").is_none());
    // HTTP-S-25: no sessions, so DELETE is 405 whatever Mcp-Session-Id says.
    let r = http
        .raw(
            http::Method::DELETE,
            "/mcp",
            &legacy_headers(Some("nope")),
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 405);
    http.stop().await;
}

fn server_without_legacy() -> (switchboard_server::Server, std::sync::Arc<Probe>) {
    let probe = std::sync::Arc::new(Probe::default());
    (
        builder(std::sync::Arc::clone(&probe))
            .legacy(false)
            .build()
            .unwrap(),
        probe,
    )
}

// Live instructions: computed on each discover (and legacy initialize),
// not frozen at build time.
#[tokio::test]
async fn live_instructions_are_computed_on_each_discover() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let server = switchboard_server::Server::builder("test-server", "9.9.9")
        .instructions("fixed text, replaced")
        .instructions_with(move || {
            format!("seen {} times", counter.fetch_add(1, Ordering::SeqCst) + 1)
        })
        .discover_cache(0, switchboard_server::CacheScope::Private)
        .build()
        .unwrap();
    let http = start(server, HttpOptions::new()).await;
    let first = http.call("server/discover", json!({})).await.result();
    let second = http.call("server/discover", json!({})).await.result();
    assert_eq!(first["instructions"], "seen 1 times");
    assert_eq!(second["instructions"], "seen 2 times");
    assert_eq!(second["ttlMs"], 0);
    assert_eq!(
        second["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-server"
    );
    // A legacy client's initialize gets the text of the moment too.
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
    let r = http
        .post(&legacy_headers(None), body(json!(0), "initialize", params))
        .await;
    assert_eq!(r.response()["result"]["instructions"], "seen 3 times");
    http.stop().await;
}

// Replicas: a legacy session lives in the replica that opened it (its id
// starts with the replica's name); a peer replica sends the session's
// requests on to it, its server-to-client requests and their answers, and
// its DELETE, so a plain round-robin balancer needs no session affinity.
#[tokio::test]
async fn a_session_reaching_a_peer_replica_is_sent_on_to_the_one_holding_it() {
    let (a, b) = replicas(|| builder(std::sync::Arc::default()), &[]).await;
    let session = initialize(&b, json!({"sampling": {}})).await;
    assert!(session.starts_with("b."), "{session}");

    // Everything of the session through a.
    let note =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).unwrap();
    let r = a.post(&legacy_headers(Some(&session)), note).await;
    assert_eq!(r.status, 202, "{r:?}");
    echo_old(&a, &session).await;
    // A server-to-client request on the streamed answer, answered through a.
    sampling_on_the_stream(&a, &session).await;

    // Ended through a: gone on b.
    assert_eq!(end_session(&a, &session).await, 200);
    let r = legacy_call(&b, &session, json!(5), "ping", json!({})).await;
    assert_eq!(r.status, 404);
    // a's own sessions stay on a.
    let own = initialize(&a, json!({})).await;
    assert!(own.starts_with("a."), "{own}");
    let r = legacy_call(&a, &own, json!(6), "ping", json!({})).await;
    assert_eq!(r.result(), json!({}));
}
