//! The `Client` over the HTTP transport: what only the pair can do —
//! `x-mcp-header` tool filtering and mirroring, HeaderMismatch recovery,
//! the era probe over HTTP, version retry, listen streams that reconnect.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_client::{
    Client, ClientBuilder, ClientError, EraPolicy, HttpTransport, RequestOptions,
};
use switchboard_wire::types::SubscriptionFilter;
use switchboard_wire::{CallToolResult, Era, types::method};
use tokio::sync::Notify;

use super::util::*;

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// A modern server: discover, the given tools, and `call` for tools/call.
async fn modern<F>(tools: Value, call: F) -> TestServer
where
    F: Fn(&Seen) -> Reply + Send + Sync + 'static,
{
    let call = Arc::new(call);
    serve(move |seen| {
        let tools = tools.clone();
        let call = call.clone();
        async move {
            match seen.rpc_method().as_deref() {
                Some(method::DISCOVER) => json_reply(
                    200,
                    result_for(
                        &seen,
                        json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}}, "ttlMs": 0, "cacheScope": "private"}),
                    ),
                ),
                Some(method::TOOLS_LIST) => json_reply(
                    200,
                    result_for(&seen, json!({"resultType": "complete", "tools": tools})),
                ),
                Some(method::TOOLS_CALL) => call(&seen),
                _ => json_reply(
                    404,
                    json!({"jsonrpc": "2.0", "id": seen.id(), "error": {"code": -32601, "message": "not found"}}),
                ),
            }
        }
    })
    .await
}

async fn connect(url: &str) -> Client {
    within(builder_for("srv", url).connect()).await.unwrap()
}

/// A client builder for the server `name` at `url`, its era not
/// remembered.
fn builder_for(name: &str, url: &str) -> ClientBuilder {
    let transport = HttpTransport::builder(name, url)
        .remember_era(false)
        .build()
        .unwrap();
    Client::builder(name, transport)
}

fn ok_text(seen: &Seen, text: &str) -> Reply {
    json_reply(
        200,
        result_for(
            seen,
            json!({"resultType": "complete", "content": [{"type": "text", "text": text}]}),
        ),
    )
}

/// Log lines written while a test runs (single-threaded runtime).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

// HTTP-C-12, HTTP-C-13: a tool whose x-mcp-header annotations break the
// rules is dropped from the list with a warning naming it and the reason;
// its siblings stay and mirror their parameters (HTTP-C-07, HTTP-C-08).
#[tokio::test]
async fn tools_with_invalid_x_mcp_header_are_dropped_and_siblings_stay() {
    let tools = json!([
        {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}}}},
        {"name": "plain_tool", "inputSchema": {"type": "object"}},
        {"name": "on_a_number", "inputSchema": {"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}},
        {"name": "duplicate", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Same"},
            "b": {"type": "string", "x-mcp-header": "same"}}}},
        {"name": "not_a_token", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Région 1"}}}},
        {"name": "in_any_of", "inputSchema": {"type": "object", "anyOf": [{"properties": {
            "a": {"type": "string", "x-mcp-header": "A"}}}]}}
    ]);
    let server = modern(tools, |seen| ok_text(seen, "ok")).await;
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let client = connect(&server.url()).await;
    let listed = within(client.list_all_tools()).await.unwrap();
    let names: Vec<_> = listed.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["valid_tool", "plain_tool"]);
    let dropped: Vec<_> = listed.dropped.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        dropped,
        ["on_a_number", "duplicate", "not_a_token", "in_any_of"]
    );
    let logged = logs.text();
    for (tool, reason) in [
        ("on_a_number", "not a string, integer or boolean"),
        ("duplicate", "used twice"),
        ("not_a_token", "not a valid HTTP header token"),
        ("in_any_of", "not reachable"),
    ] {
        let line = logged
            .lines()
            .find(|l| l.contains(tool))
            .unwrap_or_else(|| panic!("no warning for {tool}: {logged}"));
        assert!(line.contains("WARN") && line.contains(reason), "{line}");
        let said = listed.dropped.iter().find(|d| d.name == tool).unwrap();
        assert!(said.reason.contains(reason), "{said:?}");
    }

    within(client.call_tool(
        "valid_tool",
        args(json!({"region": "us-west1", "priority": 42, "verbose": null, "query": "x"})),
    ))
    .await
    .unwrap();
    let call = server.posts(method::TOOLS_CALL).pop().unwrap();
    assert_eq!(call.header("mcp-param-region").as_deref(), Some("us-west1"));
    assert_eq!(call.header("mcp-param-priority").as_deref(), Some("42"));
    // HTTP-C-11: null means no header; unannotated arguments never get one.
    assert!(call.header("mcp-param-verbose").is_none());
    assert!(call.headers.keys().all(|k| k.as_str() != "mcp-param-query"));
}

// HTTP-C-06, HTTP-C-09: a non-ASCII tool name and parameter values travel
// base64-wrapped through the whole client.
#[tokio::test]
async fn non_ascii_tool_names_and_values_through_the_client() {
    let tools = json!([{"name": "météo", "inputSchema": {"type": "object", "properties": {
        "city": {"type": "string", "x-mcp-header": "City"},
        "note": {"type": "string", "x-mcp-header": "Note"}}}}]);
    let server = modern(tools, |seen| ok_text(seen, "sunny")).await;
    let client = connect(&server.url()).await;
    within(client.list_all_tools()).await.unwrap();
    let result =
        within(client.call_tool("météo", args(json!({"city": "Zürich", "note": " padded "}))))
            .await
            .unwrap();
    assert_eq!(result.joined_text(), "sunny");
    let call = server.posts(method::TOOLS_CALL).pop().unwrap();
    let decode = |h: &str| {
        let raw = call.header(h).unwrap();
        assert!(raw.starts_with("=?base64?"), "{h}: {raw}");
        switchboard_wire::header::decode_value(raw.as_bytes())
            .unwrap()
            .into_owned()
    };
    assert_eq!(decode("mcp-name"), "météo");
    assert_eq!(decode("mcp-param-city"), "Zürich");
    assert_eq!(decode("mcp-param-note"), " padded ");
    assert_eq!(call.json()["params"]["name"], "météo");
}

// HTTP-C-14: on -32020 the client re-lists the tools once and retries with
// the fresh headers.
#[tokio::test]
async fn a_header_mismatch_relists_the_tools_and_retries_once() {
    let lists = Arc::new(AtomicUsize::new(0));
    let l = lists.clone();
    let server = serve(move |seen| {
        let l = l.clone();
        async move {
            match seen.rpc_method().as_deref() {
                Some(method::DISCOVER) => discovered(&seen, json!({"tools": {}})),
                Some(method::TOOLS_LIST) => {
                    // The first listing predates the annotation.
                    let annotated = l.fetch_add(1, Ordering::SeqCst) > 0;
                    let region = if annotated {
                        json!({"type": "string", "x-mcp-header": "Region"})
                    } else {
                        json!({"type": "string"})
                    };
                    json_reply(
                        200,
                        result_for(&seen, json!({"tools": [{"name": "deploy", "inputSchema": {"type": "object", "properties": {"region": region}}}]})),
                    )
                }
                Some(method::TOOLS_CALL) => match seen.header("mcp-param-region") {
                    Some(r) if r == "eu" => ok_text(&seen, "deployed"),
                    _ => json_reply(
                        400,
                        json!({"jsonrpc": "2.0", "id": seen.id(), "error": {"code": -32020, "message": "Mcp-Param-Region header is missing"}}),
                    ),
                },
                _ => accepted(),
            }
        }
    })
    .await;
    let client = connect(&server.url()).await;
    within(client.list_all_tools()).await.unwrap();
    let result = within(client.call_tool("deploy", args(json!({"region": "eu"}))))
        .await
        .unwrap();
    assert_eq!(result.joined_text(), "deployed");
    assert_eq!(server.posts(method::TOOLS_LIST).len(), 2);
    let calls = server.posts(method::TOOLS_CALL);
    assert_eq!(calls.len(), 2);
    assert!(calls[0].header("mcp-param-region").is_none());
    assert_eq!(calls[1].header("mcp-param-region").as_deref(), Some("eu"));
    assert_ne!(calls[0].id(), calls[1].id());
    // The retry sends the params the call was first sent with (they come
    // back from the refused request) and a `_meta` made anew, not the first
    // one merged into itself.
    let (first, retry) = (
        calls[0].json()["params"].clone(),
        calls[1].json()["params"].clone(),
    );
    let without_meta = |p: &Value| {
        let mut p = p.as_object().unwrap().clone();
        p.remove("_meta");
        p
    };
    assert_eq!(without_meta(&retry), without_meta(&first));
    assert_eq!(retry["arguments"], json!({"region": "eu"}));
    assert_eq!(retry["_meta"], first["_meta"]);
}

// HTTP-C-14, no loops: a server that keeps refusing gets one re-list and one
// retry, then the caller sees the -32020.
#[tokio::test]
async fn a_persistent_header_mismatch_is_not_a_loop() {
    let tools = json!([{"name": "t", "inputSchema": {"type": "object"}}]);
    let server = modern(tools, |seen| {
        json_reply(
            400,
            json!({"jsonrpc": "2.0", "id": seen.id(), "error": {"code": -32020, "message": "header mismatch"}}),
        )
    })
    .await;
    let client = connect(&server.url()).await;
    let err = within(client.call_tool("t", None)).await.unwrap_err();
    assert_eq!(err.code(), Some(-32020));
    assert_eq!(server.posts(method::TOOLS_CALL).len(), 2);
    assert_eq!(server.posts(method::TOOLS_LIST).len(), 1);
}

// VER-03: a -32022 naming supported versions is answered by retrying with
// one of them (even the one sent), once.
#[tokio::test]
async fn an_unsupported_version_error_is_retried_with_a_supported_version() {
    let first = Arc::new(AtomicUsize::new(0));
    let f = first.clone();
    let server = serve(move |seen| {
        let f = f.clone();
        async move {
            if f.fetch_add(1, Ordering::SeqCst) == 0 {
                return json_reply(
                    400,
                    json!({"jsonrpc": "2.0", "id": seen.id(), "error": {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
                );
            }
            discovered(&seen, json!({}))
        }
    })
    .await;
    let client = connect(&server.url()).await;
    assert_eq!(client.era(), Era::Modern);
    let probes = server.posts(method::DISCOVER);
    assert_eq!(probes.len(), 2);
    assert!(server.posts(method::INITIALIZE).is_empty());
    for p in probes {
        assert_eq!(
            p.header("mcp-protocol-version").as_deref(),
            Some("2026-07-28")
        );
    }
}

// HTTP-C-16: a recognised modern error is not a reason to fall back.
#[tokio::test]
async fn a_modern_error_on_the_probe_never_falls_back() {
    let server = serve(|seen| async move {
        json_reply(
            400,
            json!({"jsonrpc": "2.0", "id": seen.id(), "error": {"code": -32020, "message": "Mcp-Method header is missing"}}),
        )
    })
    .await;
    let err = within(builder_for("srv", &server.url()).connect())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32020), "{err}");
    assert!(server.posts(method::INITIALIZE).is_empty());
}

/// A 2025-11-25 server as the TypeScript SDK's stateful transport is: a
/// request without a session is a 400 with a non-modern error.
async fn legacy_only() -> TestServer {
    serve(|seen| async move {
        let method = seen.rpc_method();
        if method.as_deref() == Some(method::INITIALIZE) {
            let mut r = json_reply(
                200,
                result_for(&seen, json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}})),
            );
            r.headers_mut()
                .insert("mcp-session-id", http::HeaderValue::from_static("s-1"));
            return r;
        }
        if seen.header("mcp-session-id").as_deref() != Some("s-1") {
            return json_reply(
                400,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}),
            );
        }
        match seen.method {
            http::Method::GET => text(405, "", ""),
            http::Method::DELETE => text(200, "", ""),
            _ if seen.json().get("id").is_none() => accepted(),
            _ => match method.as_deref() {
                Some(method::TOOLS_LIST) => json_reply(
                    200,
                    result_for(&seen, json!({"tools": [{"name": "old_tool", "inputSchema": {"type": "object"}}]})),
                ),
                _ => ok_text(&seen, "legacy says hi"),
            },
        }
    })
    .await
}

// HTTP-C-16, VER-07: the client probes, sees a 400 that is not a modern
// error, falls back to the 2025-11-25 handshake and session, and a second
// client to the same endpoint skips the probe.
#[tokio::test]
async fn a_2025_11_25_only_server_through_the_client() {
    let server = legacy_only().await;
    let transport = HttpTransport::builder("old", server.url()).build().unwrap();
    let client = within(Client::builder("old", transport).connect())
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-11-25");
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.items[0].name, "old_tool");
    let r = within(client.call_tool("old_tool", None)).await.unwrap();
    assert_eq!(r.joined_text(), "legacy says hi");
    let call = server.posts(method::TOOLS_CALL).pop().unwrap();
    assert_eq!(call.header("mcp-session-id").as_deref(), Some("s-1"));
    assert_eq!(
        call.header("mcp-protocol-version").as_deref(),
        Some("2025-11-25")
    );
    assert!(call.json()["params"].get("_meta").is_none());
    client.close().await;
    assert_eq!(
        server
            .seen()
            .iter()
            .filter(|s| s.method == http::Method::DELETE)
            .count(),
        1
    );
    assert_eq!(server.posts(method::DISCOVER).len(), 1);

    // Remembered for the endpoint: no second probe.
    let transport = HttpTransport::builder("old", server.url()).build().unwrap();
    let again = within(Client::builder("old", transport).connect())
        .await
        .unwrap();
    assert_eq!(again.era(), Era::Legacy);
    assert_eq!(server.posts(method::DISCOVER).len(), 1);
    assert_eq!(server.posts(method::INITIALIZE).len(), 2);
}

// The deprecated HTTP+SSE transport through the client: probe refused with
// 405, initialize refused with 405, GET → endpoint, then everything works.
#[tokio::test]
async fn an_old_http_sse_server_through_the_client() {
    let stream: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<_>>>> =
        Arc::new(Mutex::new(None));
    let s = stream.clone();
    let server = serve(move |seen| {
        let s = s.clone();
        async move {
            match (seen.method.clone(), seen.path.as_str()) {
                (http::Method::GET, "/mcp") => {
                    let (tx, reply) = channel_sse();
                    tx.send(Ok(bytes::Bytes::from("event: endpoint\ndata: /mcp/messages\n\n")))
                        .unwrap();
                    *s.lock().unwrap() = Some(tx);
                    reply
                }
                (http::Method::POST, "/mcp/messages") => {
                    let body = seen.json();
                    if body.get("id").is_some() {
                        let result = match body["method"].as_str() {
                            Some("initialize") => json!({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "0"}}),
                            Some("tools/list") => json!({"tools": [{"name": "ancient", "inputSchema": {"type": "object"}}]}),
                            _ => json!({"content": [{"type": "text", "text": "from the stream"}]}),
                        };
                        let tx = s.lock().unwrap().clone().unwrap();
                        tx.send(Ok(message_event(&result_for(&seen, result)))).unwrap();
                    }
                    text(202, "text/plain", "Accepted")
                }
                _ => text(405, "text/plain", "Method Not Allowed"),
            }
        }
    })
    .await;
    let client = within(builder_for("ancient", &server.url()).connect())
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2024-11-05");
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.items[0].name, "ancient");
    let r = within(client.call_tool("ancient", None)).await.unwrap();
    assert_eq!(r.joined_text(), "from the stream");
}

// CANC-03, CANC-11: a call that times out closes its stream; no
// notifications/cancelled is POSTed.
#[tokio::test]
async fn a_timed_out_call_closes_its_stream() {
    let closed = Arc::new(Notify::new());
    let c = closed.clone();
    let tools = json!([{"name": "slow", "inputSchema": {"type": "object"}}]);
    let server = modern(tools, move |_| {
        sse(vec![
            Step::Raw(": working\n\n".into()),
            Step::HoldUntilClosed(c.clone()),
        ])
    })
    .await;
    let client = connect(&server.url()).await;
    let err = within(client.call_tool_with(
        "slow",
        None,
        &RequestOptions::timeout(Duration::from_millis(300)),
    ))
    .await
    .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    within(closed.notified()).await;
    assert!(server.posts(method::CANCELLED).is_empty());
}

// subscriptions/listen over HTTP: acknowledgement, list-changed and
// resource-updated notifications to the subscriber, keep-alive comments
// ignored, and a dropped stream re-opened with a new listen request.
#[tokio::test]
async fn listen_streams_deliver_and_reconnect_after_a_drop() {
    let listens = Arc::new(AtomicUsize::new(0));
    let l = listens.clone();
    let server = serve(move |seen| {
        let l = l.clone();
        async move {
            match seen.rpc_method().as_deref() {
                Some(method::DISCOVER) => discovered(&seen, json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}})),
                Some(method::SUBSCRIPTIONS_LISTEN) => {
                    let id = seen.id();
                    let meta = json!({"io.modelcontextprotocol/subscriptionId": id});
                    let ack = notification(
                        method::SUBSCRIPTIONS_ACKNOWLEDGED,
                        json!({"_meta": meta, "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]}}),
                    );
                    if l.fetch_add(1, Ordering::SeqCst) == 0 {
                        sse(vec![
                            Step::Event(ack),
                            Step::Raw(":\n\n: keep-alive\n\n".into()),
                            Step::Event(notification(method::TOOLS_LIST_CHANGED, json!({"_meta": meta}))),
                            Step::Sleep(Duration::from_millis(20)),
                            Step::Cut,
                        ])
                    } else {
                        sse(vec![
                            Step::Event(ack),
                            Step::Event(notification(
                                method::RESOURCES_UPDATED,
                                json!({"_meta": meta, "uri": "file:///a"}),
                            )),
                            Step::HoldUntilClosed(Arc::new(Notify::new())),
                        ])
                    }
                }
                _ => accepted(),
            }
        }
    })
    .await;
    let client = connect(&server.url()).await;
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///a".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = within(client.listen(filter)).await.unwrap();
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));

    let first = within(sub.next()).await.unwrap();
    assert_eq!(first.method, method::TOOLS_LIST_CHANGED);
    assert!(
        first.params.unwrap()["_meta"]
            .get("dev.switchboard/resync")
            .is_none()
    );
    // The stream is cut; the subscription comes back by itself, first with
    // the resync of what was acknowledged, then the new stream's messages.
    let mut after = Vec::new();
    while after.len() < 3 {
        let n = within(sub.next()).await.unwrap();
        after.push(n);
    }
    assert_eq!(sub.reconnects(), 1);
    assert_eq!(after[0].method, method::TOOLS_LIST_CHANGED);
    assert_eq!(
        after[0].params.as_ref().unwrap()["_meta"]["dev.switchboard/resync"],
        true
    );
    assert_eq!(after[1].method, method::RESOURCES_UPDATED);
    assert_eq!(after[1].params.as_ref().unwrap()["uri"], "file:///a");
    assert_eq!(after[2].method, method::RESOURCES_UPDATED);
    assert!(
        after[2].params.as_ref().unwrap()["_meta"]
            .get("dev.switchboard/resync")
            .is_none()
    );

    let posts = server.posts(method::SUBSCRIPTIONS_LISTEN);
    assert_eq!(posts.len(), 2);
    assert_ne!(posts[0].id(), posts[1].id());
    assert_eq!(
        posts[1].json()["params"]["notifications"]["toolsListChanged"],
        true
    );
    drop(sub);
}

// A listen stream the server ends with its result is over: no reconnect.
#[tokio::test]
async fn a_listen_stream_the_server_completes_is_not_reopened() {
    let server = serve(|seen| async move {
        match seen.rpc_method().as_deref() {
            Some(method::DISCOVER) => discovered(&seen, json!({})),
            Some(method::SUBSCRIPTIONS_LISTEN) => {
                let meta = json!({"io.modelcontextprotocol/subscriptionId": seen.id()});
                sse(vec![
                    Step::Event(notification(
                        method::SUBSCRIPTIONS_ACKNOWLEDGED,
                        json!({"_meta": meta, "notifications": {}}),
                    )),
                    Step::Event(result_for(
                        &seen,
                        json!({"resultType": "complete", "_meta": meta}),
                    )),
                ])
            }
            _ => accepted(),
        }
    })
    .await;
    let client = connect(&server.url()).await;
    let mut sub = within(client.listen(SubscriptionFilter::default()))
        .await
        .unwrap();
    assert!(within(sub.next()).await.is_none());
    assert_eq!(
        sub.end(),
        Some(&switchboard_client::SubscriptionEnd::Completed)
    );
    assert_eq!(server.posts(method::SUBSCRIPTIONS_LISTEN).len(), 1);
}

// A modern-only client does not fall back, and says what the server said.
#[tokio::test]
async fn modern_only_reports_the_http_refusal() {
    let server = legacy_only().await;
    let err = within(
        builder_for("old", &server.url())
            .era_policy(EraPolicy::ModernOnly)
            .connect(),
    )
    .await
    .unwrap_err();
    match &err {
        ClientError::Transport(t) => assert_eq!(t.http_status(), Some(400)),
        other => panic!("expected the HTTP refusal, got {other:?}"),
    }
    assert!(err.to_string().contains("No valid session ID"), "{err}");
    assert!(server.posts(method::INITIALIZE).is_empty());
}

// Hostile input (docs/LIMITS.md): an SSE stream that never ends an event
// fails that call once the event passes the body limit; the same client
// then calls again as usual.
#[tokio::test]
async fn an_sse_event_that_never_ends_fails_the_call_at_the_limit() {
    let server = modern(
        json!([{"name": "endless", "inputSchema": {"type": "object"}}]),
        |seen| {
            if seen.json()["params"]["name"] != "endless" {
                return ok_text(seen, "fine");
            }
            let (tx, reply) = channel_sse();
            tokio::spawn(async move {
                let chunk = bytes::Bytes::from(format!("data: {}\n", "x".repeat(64 * 1024)));
                // Until the client goes away: one event, never ended.
                while tx.send(Ok(chunk.clone())).is_ok() {
                    tokio::task::yield_now().await;
                    if tx.is_closed() {
                        break;
                    }
                }
            });
            reply
        },
    )
    .await;
    let transport = HttpTransport::builder("srv", server.url())
        .remember_era(false)
        .max_body_bytes(1024 * 1024)
        .build()
        .unwrap();
    let client = within(Client::builder("srv", transport).connect())
        .await
        .unwrap();
    let err = within(client.call_tool("endless", None)).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("1048576"), "{text}");
    let ok = within(client.call_tool("other", None)).await.unwrap();
    assert_eq!(ok.joined_text(), "fine");
}

// WIRE-06, WIRE-09: a complete tool result answered as a JSON body is read
// straight into its type; it must be the very result the general reading
// gives (the same bytes sent as an SSE event, or in a body the fast reader
// gives up on), for a result with every kind of member.
#[tokio::test]
async fn a_json_tool_result_reads_like_the_same_result_on_a_stream() {
    let result = json!({
        "content": [
            {"annotations": {"priority": 1}, "text": "T-1 [high]\n\u{202e}x", "type": "text"},
            {"type": "image", "data": "AA==", "mimeType": "image/png", "_meta": {"k": 1}},
            {"type": "hologram", "text": "?", "z": [1, 2]},
            {"type": "text", "text": 7},
            {"type": "resource", "resource": {"uri": "a:b", "text": "t"}}
        ],
        "structuredContent": {"id": "T-1", "nested": [null, {"a": 1.5}]},
        "isError": false,
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "dev.x/k": true},
        "extra": {"kept": "as it came"}
    });
    let body = result.clone();
    let server = modern(
        json!([{"name": "json", "inputSchema": {"type": "object"}},
                               {"name": "stream", "inputSchema": {"type": "object"}},
                               {"name": "duplicated", "inputSchema": {"type": "object"}}]),
        move |seen| {
            let answer = result_for(seen, body.clone());
            match seen.json()["params"]["name"].as_str() {
                Some("json") => json_reply(200, answer),
                Some("stream") => sse(vec![Step::Event(answer)]),
                // A duplicated member: the fast reader gives up, and the
                // general one keeps the last value, as JSON readers do.
                _ => {
                    let mut raw = answer.to_string();
                    raw.insert_str(raw.len() - 2, r#","isError":true"#);
                    text(200, "application/json", raw)
                }
            }
        },
    )
    .await;
    let client = connect(&server.url()).await;
    let via_json = within(client.call_tool("json", None)).await.unwrap();
    let via_stream = within(client.call_tool("stream", None)).await.unwrap();
    assert_eq!(via_json, via_stream);
    assert_eq!(via_json, CallToolResult::from_value(result).unwrap());
    let duplicated = within(client.call_tool("duplicated", None)).await.unwrap();
    assert_eq!(duplicated.is_error, Some(true));
    assert_eq!(duplicated.content, via_json.content);
}

// A client told to leave some `_meta` keys out of tool results (as the
// gateway does with the downstream's reserved ones) returns the same
// result whichever way it was read: a JSON body (the typed reader skips
// the keys unread), an SSE event, or a body the typed reader gives up on.
// A result whose `_meta` held only such keys comes back without one.
#[tokio::test]
async fn left_out_meta_keys_are_gone_however_the_result_was_read() {
    let result = json!({
        "content": [{"type": "text", "text": "t", "_meta": {"io.modelcontextprotocol/k": 1}}],
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "dev.x/k": true}
    });
    let body = result.clone();
    let server = modern(
        json!([{"name": "json", "inputSchema": {"type": "object"}},
               {"name": "stream", "inputSchema": {"type": "object"}},
               {"name": "duplicated", "inputSchema": {"type": "object"}},
               {"name": "reserved_only", "inputSchema": {"type": "object"}}]),
        move |seen| {
            let answer = result_for(seen, body.clone());
            match seen.json()["params"]["name"].as_str() {
                Some("json") => json_reply(200, answer),
                Some("stream") => sse(vec![Step::Event(answer)]),
                Some("reserved_only") => json_reply(
                    200,
                    result_for(
                        seen,
                        json!({"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}}),
                    ),
                ),
                _ => {
                    let mut raw = answer.to_string();
                    raw.insert_str(raw.len() - 2, r#","isError":true"#);
                    text(200, "application/json", raw)
                }
            }
        },
    )
    .await;
    fn reserved(key: &str) -> bool {
        key.starts_with("io.modelcontextprotocol/")
    }
    let client = within(
        builder_for("srv", &server.url())
            .leave_out_result_meta(reserved)
            .connect(),
    )
    .await
    .unwrap();
    let mut expected = CallToolResult::from_value(result.clone()).unwrap();
    expected.leave_out_meta(reserved);
    assert_eq!(
        serde_json::to_value(&expected.header.meta).unwrap(),
        json!({"dev.x/k": true})
    );
    for tool in ["json", "stream"] {
        let got = within(client.call_tool(tool, None)).await.unwrap();
        assert_eq!(got, expected, "read from {tool}");
        // A content block's own `_meta` is not the result's.
        assert_eq!(
            got.content,
            CallToolResult::from_value(result.clone()).unwrap().content
        );
    }
    let duplicated = within(client.call_tool("duplicated", None)).await.unwrap();
    assert_eq!(duplicated.header.meta, expected.header.meta);
    let reserved_only = within(client.call_tool("reserved_only", None))
        .await
        .unwrap();
    assert_eq!(reserved_only.header.meta, None);

    // Without the option the keys stay.
    let whole = within(connect(&server.url())).await;
    let got = within(whole.call_tool("json", None)).await.unwrap();
    assert_eq!(got, CallToolResult::from_value(result).unwrap());
}
