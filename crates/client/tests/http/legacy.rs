//! The transport against servers of earlier eras: 2025-11-25 Streamable
//! HTTP with sessions, and the deprecated 2024-11-05 HTTP+SSE transport.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Value, json};
use switchboard_client::transport::http::{HttpTransport, remembered_era};
use switchboard_client::transport::{EventSink, Incoming, Outgoing, Transport};
use switchboard_wire::{Era, Notification, Request, RequestId, Response, types::method};
use tokio::sync::{Notify, mpsc};

use super::util::*;

fn initialize_request(id: i64) -> Request {
    Request::new(
        id,
        method::INITIALIZE,
        Some(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "test", "version": "0"}
        })),
    )
}

fn legacy_request(id: i64, method: &str, params: Value) -> Request {
    Request::new(id, method, Some(params))
}

/// A transport to `url` that has sent `initialize` (id 1).
async fn initialized(url: &str) -> HttpTransport {
    let t = transport(url);
    within(t.request(Outgoing::new(initialize_request(1))))
        .await
        .unwrap();
    t
}

/// [`initialized`], its events (the server's requests) coming to the
/// returned receiver.
async fn initialized_with_events(
    url: &str,
) -> (Arc<HttpTransport>, mpsc::UnboundedReceiver<Incoming>) {
    let t = Arc::new(transport(url));
    let (sink, incoming) = events();
    t.set_events(sink);
    within(t.request(Outgoing::new(initialize_request(1))))
        .await
        .unwrap();
    (t, incoming)
}

/// Sends the request `id` with `method` and `params` and waits for it.
async fn send(
    t: &HttpTransport,
    id: i64,
    method: &str,
    params: Value,
) -> Result<Response, switchboard_client::TransportError> {
    within(t.request(Outgoing::new(legacy_request(id, method, params)))).await
}

fn events() -> (EventSink, mpsc::UnboundedReceiver<Incoming>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Arc::new(move |i| {
            let _ = tx.send(i);
        }),
        rx,
    )
}

/// A 2025-11-25 server in the shape of the TypeScript SDK's stateful
/// transport: sessions, SSE answers, a server request mid-call,
/// resumption, and a way to forget sessions.
struct Legacy {
    sessions: Mutex<Vec<String>>,
    minted: AtomicUsize,
    /// Answers to server requests the client POSTed, by id.
    answers: Mutex<Vec<Value>>,
    answered: Notify,
    /// tools/call "resumable": the stream drops after a priming event; the
    /// answer waits for the GET.
    resumable_pending: Mutex<Option<Value>>,
    /// The standalone GET stream, once the client opened it.
    standalone: Mutex<Option<mpsc::UnboundedSender<Result<Bytes, std::io::Error>>>>,
}

async fn legacy_server() -> (TestServer, Arc<Legacy>) {
    let state = Arc::new(Legacy {
        sessions: Mutex::new(Vec::new()),
        minted: AtomicUsize::new(0),
        answers: Mutex::new(Vec::new()),
        answered: Notify::new(),
        resumable_pending: Mutex::new(None),
        standalone: Mutex::new(None),
    });
    let s = state.clone();
    let server = serve(move |seen| {
        let s = s.clone();
        async move { s.handle(seen).await }
    })
    .await;
    (server, state)
}

impl Legacy {
    fn valid(&self, seen: &Seen) -> bool {
        seen.header("mcp-session-id")
            .is_some_and(|id| self.sessions.lock().unwrap().contains(&id))
    }

    async fn handle(self: Arc<Self>, seen: Seen) -> Reply {
        let body = seen.json();
        match seen.method {
            http::Method::DELETE => {
                if let Some(id) = seen.header("mcp-session-id") {
                    self.sessions.lock().unwrap().retain(|s| *s != id);
                }
                return text(200, "", "");
            }
            http::Method::GET => {
                if !self.valid(&seen) {
                    return text(400, "text/plain", "Invalid or missing session ID");
                }
                let pending = self.resumable_pending.lock().unwrap().take();
                return match (seen.header("last-event-id"), pending) {
                    (Some(_), Some(answer)) => sse(vec![
                        Step::Raw("id: e2\nretry: 100\ndata: \n\n".into()),
                        Step::Event(answer),
                    ]),
                    (None, _) => {
                        let (tx, reply) = channel_sse();
                        *self.standalone.lock().unwrap() = Some(tx);
                        reply
                    }
                    _ => text(405, "text/plain", "Method Not Allowed"),
                };
            }
            _ => {}
        }
        if body["method"] == method::INITIALIZE {
            let n = self.minted.fetch_add(1, Ordering::SeqCst) + 1;
            let id = format!("sess-{n}");
            self.sessions.lock().unwrap().push(id.clone());
            let mut reply = json_reply(
                200,
                result_for(
                    &seen,
                    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}),
                ),
            );
            reply
                .headers_mut()
                .insert("mcp-session-id", http::HeaderValue::from_str(&id).unwrap());
            return reply;
        }
        if !self.valid(&seen) {
            return json_reply(
                if seen.header("mcp-session-id").is_some() {
                    404
                } else {
                    400
                },
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}),
            );
        }
        if body.get("method").is_none() {
            // A response to one of our server requests.
            self.answers.lock().unwrap().push(body);
            self.answered.notify_one();
            return accepted();
        }
        if body.get("id").is_none() {
            return accepted();
        }
        match (body["method"].as_str(), body["params"]["name"].as_str()) {
            (Some("tools/call"), Some(tool @ ("ask" | "ask_standalone"))) => {
                let (tx, reply) = channel_sse();
                // Like the TypeScript SDK, a request not tied to the call
                // goes on the standalone stream.
                let to = match tool {
                    "ask" => tx.clone(),
                    _ => self.standalone.lock().unwrap().clone().unwrap(),
                };
                to.send(Ok(message_event(&json!({
                    "jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                    "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}}
                }))))
                .unwrap();
                let seen2 = seen.clone();
                let me = self.clone();
                tokio::spawn(async move {
                    let answer = loop {
                        let notified = me.answered.notified();
                        if let Some(a) = me.answers.lock().unwrap().last().cloned() {
                            break a;
                        }
                        notified.await;
                    };
                    let _ = tx.send(Ok(message_event(&result_for(
                        &seen2,
                        json!({"content": [{"type": "text", "text": format!("hello {}", answer["result"]["content"]["name"].as_str().unwrap_or("?"))}]}),
                    ))));
                });
                reply
            }
            (Some("tools/call"), Some("resumable")) => {
                *self.resumable_pending.lock().unwrap() = Some(result_for(
                    &seen,
                    json!({"content": [{"type": "text", "text": "resumed"}]}),
                ));
                sse(vec![Step::Raw("id: e1\nretry: 100\ndata: \n\n".into())])
            }
            _ => json_reply(200, result_for(&seen, json!({"tools": []}))),
        }
    }
}

fn transport(url: &str) -> HttpTransport {
    HttpTransport::builder("legacy", url).build().unwrap()
}

// HTTP-C-16: a 2025-11-25-only server refuses a modern POST with a 400
// whose body is not a modern error; `initialize` then opens a session whose
// id and negotiated version go on every later request, and close DELETEs it.
#[tokio::test]
async fn a_2025_11_25_server_gets_a_session() {
    let (server, state) = legacy_server().await;
    let t = transport(&server.url());
    let probe = Outgoing::new(modern_request(1, method::TOOLS_LIST, json!({})));
    let err = within(t.request(probe)).await.unwrap_err();
    assert_eq!(err.http_status(), Some(400));

    let r = within(t.request(Outgoing::new(initialize_request(2))))
        .await
        .unwrap();
    assert_eq!(r.outcome.unwrap()["protocolVersion"], "2025-11-25");
    assert_eq!(t.session_id().as_deref(), Some("sess-1"));
    assert_eq!(t.era(), Some(Era::Legacy));
    assert_eq!(remembered_era(&server.url()), Some(Era::Legacy));

    within(t.notify(Notification::new(method::INITIALIZED, None)))
        .await
        .unwrap();
    let r = send(&t, 3, method::TOOLS_LIST, json!({})).await.unwrap();
    assert!(r.outcome.is_ok());

    let initialized = &server.posts(method::INITIALIZED)[0];
    assert_eq!(
        initialized.header("mcp-session-id").as_deref(),
        Some("sess-1")
    );
    assert_eq!(
        initialized.header("mcp-protocol-version").as_deref(),
        Some("2025-11-25")
    );
    let list = server.posts(method::TOOLS_LIST);
    let list = list.last().unwrap();
    assert_eq!(list.header("mcp-session-id").as_deref(), Some("sess-1"));
    assert_eq!(
        list.header("mcp-protocol-version").as_deref(),
        Some("2025-11-25")
    );
    // The handshake itself carries no session.
    assert!(
        server.posts(method::INITIALIZE)[0]
            .header("mcp-session-id")
            .is_none()
    );

    t.close().await;
    let deletes: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.method == http::Method::DELETE)
        .collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(
        deletes[0].header("mcp-session-id").as_deref(),
        Some("sess-1")
    );
    assert!(state.sessions.lock().unwrap().is_empty());
}

// A legacy server's request on a response stream reaches the event sink;
// the answer is POSTed back in the session and the call completes.
#[tokio::test]
async fn legacy_server_requests_are_answered_through_the_client() {
    let (server, _state) = legacy_server().await;
    let (t, mut incoming) = initialized_with_events(&server.url()).await;

    let t2 = t.clone();
    let answerer = tokio::spawn(async move {
        while let Some(i) = incoming.recv().await {
            if let Incoming::Request(r) = i {
                assert_eq!(r.method, "elicitation/create");
                let default =
                    r.params.unwrap()["requestedSchema"]["properties"]["name"]["default"].clone();
                t2.respond(Response::result(
                    r.id,
                    json!({"action": "accept", "content": {"name": default}}),
                ))
                .await
                .unwrap();
                return;
            }
        }
    });
    let r = send(&t, 2, method::TOOLS_CALL, json!({"name": "ask"}))
        .await
        .unwrap();
    assert_eq!(r.outcome.unwrap()["content"][0]["text"], "hello Ada");
    within(answerer).await.unwrap();
    let answer = server
        .seen()
        .into_iter()
        .find(|s| s.json().get("result").is_some())
        .unwrap();
    assert_eq!(answer.json()["id"], "srv-1");
    assert_eq!(answer.header("mcp-session-id").as_deref(), Some("sess-1"));
}

// After `notifications/initialized` the standalone GET stream is open, so
// a request the server sends there (as SDK servers do for a tool's
// elicitation) reaches the client and is answered.
#[tokio::test]
async fn legacy_server_requests_on_the_standalone_stream_are_answered() {
    let (server, _state) = legacy_server().await;
    let (t, mut incoming) = initialized_with_events(&server.url()).await;
    within(t.notify(Notification::new(method::INITIALIZED, None)))
        .await
        .unwrap();
    let get = server
        .seen()
        .into_iter()
        .find(|s| s.method == http::Method::GET)
        .expect("the standalone stream is open once initialized is sent");
    assert_eq!(get.header("mcp-session-id").as_deref(), Some("sess-1"));
    assert_eq!(get.header("accept").as_deref(), Some("text/event-stream"));

    let t2 = t.clone();
    tokio::spawn(async move {
        while let Some(i) = incoming.recv().await {
            if let Incoming::Request(r) = i {
                t2.respond(Response::result(
                    r.id,
                    json!({"action": "accept", "content": {"name": "Grace"}}),
                ))
                .await
                .unwrap();
            }
        }
    });
    let r = send(&t, 2, method::TOOLS_CALL, json!({"name": "ask_standalone"}))
        .await
        .unwrap();
    assert_eq!(r.outcome.unwrap()["content"][0]["text"], "hello Grace");
}

// 2025-11-25 resumability (the conformance suite's sse-retry): a response
// stream that closes after an event id is resumed with GET and
// Last-Event-ID once the retry delay has passed.
#[tokio::test]
async fn a_legacy_stream_that_drops_is_resumed_with_last_event_id() {
    let (server, _state) = legacy_server().await;
    let t = initialized(&server.url()).await;
    let r = send(&t, 2, method::TOOLS_CALL, json!({"name": "resumable"}))
        .await
        .unwrap();
    assert_eq!(r.id, Some(RequestId::Number(2)));
    assert_eq!(r.outcome.unwrap()["content"][0]["text"], "resumed");
    let gets: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.method == http::Method::GET)
        .collect();
    assert_eq!(gets.len(), 1);
    assert_eq!(gets[0].header("last-event-id").as_deref(), Some("e1"));
    assert_eq!(gets[0].header("mcp-session-id").as_deref(), Some("sess-1"));
}

// 2025-11-25: a 404 for a session id means the server forgot the session;
// the transport initializes a new one and sends the request again.
#[tokio::test]
async fn an_expired_session_is_renewed() {
    let (server, state) = legacy_server().await;
    let t = initialized(&server.url()).await;
    state.sessions.lock().unwrap().clear();
    let r = send(&t, 2, method::TOOLS_LIST, json!({})).await.unwrap();
    assert!(r.outcome.is_ok());
    assert_eq!(t.session_id().as_deref(), Some("sess-2"));
    let inits = server.posts(method::INITIALIZE);
    assert_eq!(inits.len(), 2);
    assert!(inits[1].header("mcp-session-id").is_none());
    assert_eq!(server.posts(method::INITIALIZED).len(), 1);
    let lists = server.posts(method::TOOLS_LIST);
    assert_eq!(
        lists.last().unwrap().header("mcp-session-id").as_deref(),
        Some("sess-2")
    );
}

/// A 2024-11-05 HTTP+SSE server: POST to the URL is 405, GET opens the
/// stream with an `endpoint` event, messages are POSTed there and answered
/// on the stream.
struct OldSse {
    stream: Mutex<Option<mpsc::UnboundedSender<Result<Bytes, std::io::Error>>>>,
    gets: AtomicUsize,
    /// When set, a tools/call makes the server drop the stream instead.
    die_on_call: AtomicBool,
}

async fn old_sse_server() -> (TestServer, Arc<OldSse>) {
    let state = Arc::new(OldSse {
        stream: Mutex::new(None),
        gets: AtomicUsize::new(0),
        die_on_call: AtomicBool::new(false),
    });
    let s = state.clone();
    let server = serve(move |seen| {
        let s = s.clone();
        async move {
            match (seen.method.clone(), seen.path.as_str()) {
                (http::Method::GET, "/mcp") => {
                    s.gets.fetch_add(1, Ordering::SeqCst);
                    let (tx, reply) = channel_sse();
                    tx.send(Ok(Bytes::from(
                        ": hello\n\nevent: endpoint\ndata: /messages?sessionId=abc\n\n",
                    )))
                    .unwrap();
                    *s.stream.lock().unwrap() = Some(tx);
                    reply
                }
                (http::Method::POST, "/messages?sessionId=abc") => {
                    let body = seen.json();
                    let tx = s.stream.lock().unwrap().clone().unwrap();
                    if body.get("id").is_some() && body.get("method").is_some() {
                        let method = body["method"].as_str().unwrap_or("");
                        if method == "tools/call" && s.die_on_call.load(Ordering::SeqCst) {
                            *s.stream.lock().unwrap() = None;
                            drop(tx);
                            return text(202, "text/plain", "Accepted");
                        }
                        if method == "tools/call" {
                            let token = body["params"]["_meta"]["progressToken"].clone();
                            let _ = tx.send(Ok(message_event(&notification(
                                method::PROGRESS,
                                json!({"progressToken": token, "progress": 1}),
                            ))));
                            let _ = tx.send(Ok(message_event(&notification(
                                "notifications/tools/list_changed",
                                json!({}),
                            ))));
                        }
                        let result = if method == "initialize" {
                            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "old", "version": "0"}})
                        } else {
                            json!({"content": [{"type": "text", "text": method}]})
                        };
                        let _ = tx.send(Ok(message_event(&result_for(&seen, result))));
                    }
                    text(202, "text/plain", "Accepted")
                }
                _ => text(405, "text/plain", "Method Not Allowed"),
            }
        }
    })
    .await;
    (server, state)
}

// The deprecated HTTP+SSE transport: initialize falls back to GET →
// endpoint; requests are answered on the stream; progress reaches the
// request's sink, other notifications the event sink.
#[tokio::test]
async fn an_old_http_sse_server_is_reached_through_its_endpoint() {
    let (server, state) = old_sse_server().await;
    let t = transport(&server.url());
    let (sink, mut incoming) = events();
    t.set_events(sink);
    let err = within(t.request(Outgoing::new(modern_request(
        1,
        method::TOOLS_LIST,
        json!({}),
    ))))
    .await
    .unwrap_err();
    assert_eq!(err.http_status(), Some(405));

    let r = within(t.request(Outgoing::new(initialize_request(2))))
        .await
        .unwrap();
    assert_eq!(r.outcome.unwrap()["protocolVersion"], "2024-11-05");
    assert!(t.is_http_sse());
    assert_eq!(state.gets.load(Ordering::SeqCst), 1);
    within(t.notify(Notification::new(method::INITIALIZED, None)))
        .await
        .unwrap();

    let call = legacy_request(
        3,
        method::TOOLS_CALL,
        json!({"name": "x", "_meta": {"progressToken": "tok"}}),
    );
    let (out, mut notes) = with_sink(call);
    let r = within(t.request(out)).await.unwrap();
    assert_eq!(r.outcome.unwrap()["content"][0]["text"], "tools/call");
    let progress = within(notes.recv()).await.unwrap();
    assert_eq!(progress.method, method::PROGRESS);
    let other = within(incoming.recv()).await.unwrap();
    assert!(
        matches!(other, Incoming::Notification(n) if n.method == "notifications/tools/list_changed")
    );

    let posted: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.path.starts_with("/messages"))
        .map(|s| s.rpc_method().unwrap())
        .collect();
    assert_eq!(
        posted,
        ["initialize", "notifications/initialized", "tools/call"]
    );
    assert_eq!(remembered_era(&server.url()), Some(Era::Legacy));
}

// When the HTTP+SSE stream dies, the waiting request fails at once.
#[tokio::test]
async fn a_lost_http_sse_stream_fails_waiting_requests_at_once() {
    let (server, state) = old_sse_server().await;
    let t = initialized(&server.url()).await;
    state.die_on_call.store(true, Ordering::SeqCst);
    let err = send(&t, 2, method::TOOLS_CALL, json!({"name": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP+SSE stream ended"), "{err}");
    // And later requests say why instead of hanging.
    let err = send(&t, 3, method::TOOLS_LIST, json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP+SSE stream ended"), "{err}");
}
