//! Scripted HTTP servers on 127.0.0.1:0 for the HTTP transport tests: each
//! test decides, request by request, what the server answers, including
//! the misbehaviours real servers and proxies show (HTML error pages, cut
//! streams, answers for the wrong request).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use switchboard_client::transport::{NotificationSink, Outgoing};
use switchboard_wire::{Notification, Request, RequestMeta, version};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};

/// One request the server received.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Seen {
    /// The body as JSON (`Null` when empty or not JSON).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of the body.
    pub(crate) fn rpc_method(&self) -> Option<String> {
        self.json()
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The JSON-RPC id of the body.
    pub(crate) fn id(&self) -> Value {
        self.json().get("id").cloned().unwrap_or(Value::Null)
    }

    /// A header as text.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    }
}

/// A response body fed from a channel, so tests can pace, cut or hold it.
pub(crate) struct ChanBody(mpsc::UnboundedReceiver<Result<Bytes, std::io::Error>>);

impl Body for ChanBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

pub(crate) type Reply = http::Response<ChanBody>;

/// One step of a scripted SSE stream.
#[derive(Clone)]
pub(crate) enum Step {
    /// `event: message` + `data: <json>`.
    Event(Value),
    /// Bytes as they are.
    Raw(String),
    /// A pause.
    Sleep(Duration),
    /// Abort the connection in the middle of the body.
    Cut,
    /// Keep the stream open until the client goes away, then notify.
    HoldUntilClosed(Arc<Notify>),
}

/// A running scripted server; stops when dropped.
pub(crate) struct TestServer {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
    /// TCP connections accepted so far.
    pub(crate) connections: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// The MCP endpoint URL (`/mcp`).
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.addr.port())
    }

    /// Everything received so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The POSTs received so far whose body has this JSON-RPC method.
    pub(crate) fn posts(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == Method::POST && s.rpc_method().as_deref() == Some(method))
            .collect()
    }
}

/// Starts a server answering every request with `handler`.
pub(crate) async fn serve<F, Fut>(handler: F) -> TestServer
where
    F: Fn(Seen) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Reply> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(handler);
    let record = seen.clone();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let accepted = connections.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let handler = handler.clone();
            let record = record.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let handler = handler.clone();
                    let record = record.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let seen = Seen {
                            method: parts.method,
                            path: parts
                                .uri
                                .path_and_query()
                                .map(|p| p.as_str().to_owned())
                                .unwrap_or_default(),
                            headers: parts.headers,
                            body,
                        };
                        record.lock().unwrap().push(seen.clone());
                        Ok::<_, Infallible>(handler(seen).await)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    TestServer {
        addr,
        seen,
        connections,
        task,
    }
}

/// A full body with a status and content type.
pub(crate) fn text(status: u16, content_type: &str, body: impl Into<String>) -> Reply {
    let (tx, rx) = mpsc::unbounded_channel();
    let body: String = body.into();
    if !body.is_empty() {
        tx.send(Ok(Bytes::from(body))).unwrap();
    }
    let mut builder = http::Response::builder().status(StatusCode::from_u16(status).unwrap());
    if !content_type.is_empty() {
        builder = builder.header("content-type", content_type);
    }
    builder.body(ChanBody(rx)).unwrap()
}

/// A JSON body.
pub(crate) fn json_reply(status: u16, value: Value) -> Reply {
    text(status, "application/json", value.to_string())
}

/// `202 Accepted`, no body.
pub(crate) fn accepted() -> Reply {
    text(202, "", "")
}

/// The JSON-RPC result for the request `seen`.
pub(crate) fn result_for(seen: &Seen, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": seen.id(), "result": result})
}

/// The `server/discover` result for `seen`: 2026-07-28 with these
/// capabilities.
pub(crate) fn discovered(seen: &Seen, capabilities: Value) -> Reply {
    json_reply(
        200,
        result_for(
            seen,
            json!({"supportedVersions": ["2026-07-28"], "capabilities": capabilities}),
        ),
    )
}

/// Asserts the error's text says `words`.
pub(crate) fn assert_says(err: &impl std::fmt::Display, words: &str) {
    let text = err.to_string();
    assert!(text.contains(words), "{text}");
}

/// An SSE stream following `script`; the body ends cleanly after the
/// last step unless the script cut it.
pub(crate) fn sse(script: Vec<Step>) -> Reply {
    sse_with_headers(script, &[])
}

/// [`sse`] with extra response headers.
pub(crate) fn sse_with_headers(script: Vec<Step>, headers: &[(&str, &str)]) -> Reply {
    let (tx, rx) = mpsc::unbounded_channel::<Result<Bytes, std::io::Error>>();
    tokio::spawn(async move {
        for step in script {
            match step {
                Step::Event(v) => {
                    if tx
                        .send(Ok(Bytes::from(format!("event: message\ndata: {v}\n\n"))))
                        .is_err()
                    {
                        return;
                    }
                }
                Step::Raw(s) => {
                    if tx.send(Ok(Bytes::from(s))).is_err() {
                        return;
                    }
                }
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Cut => {
                    let _ = tx.send(Err(std::io::Error::other("cut by the test")));
                    return;
                }
                Step::HoldUntilClosed(n) => {
                    tx.closed().await;
                    n.notify_one();
                    return;
                }
            }
        }
    });
    let mut builder = http::Response::builder()
        .status(200)
        .header("content-type", "text/event-stream");
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    builder.body(ChanBody(rx)).unwrap()
}

/// An SSE response whose events the test pushes through the returned
/// sender (`event: message` framing is the caller's job; see
/// [`message_event`]). Dropping the sender ends the stream cleanly.
pub(crate) fn channel_sse() -> (mpsc::UnboundedSender<Result<Bytes, std::io::Error>>, Reply) {
    let (tx, rx) = mpsc::unbounded_channel();
    let reply = http::Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(ChanBody(rx))
        .unwrap();
    (tx, reply)
}

/// One `event: message` SSE event carrying `v`.
pub(crate) fn message_event(v: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {v}\n\n"))
}

/// A modern request with `_meta` in place.
pub(crate) fn modern_request(id: i64, method: &str, params: Value) -> Request {
    let mut params = Some(params);
    RequestMeta::new(version::LATEST).apply(&mut params);
    Request::new(id, method, params)
}

/// An [`Outgoing`] for `request` whose notifications land in the returned
/// channel.
pub(crate) fn with_sink(request: Request) -> (Outgoing, mpsc::UnboundedReceiver<Notification>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink: NotificationSink = Arc::new(move |n| {
        let _ = tx.send(n);
    });
    let mut out = Outgoing::new(request);
    out.sink = Some(sink);
    (out, rx)
}

/// A JSON-RPC notification value.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// A failsafe for awaits that must finish by themselves: far longer than
/// anything in these tests should take, so it only fires when the
/// behaviour under test is broken (a hang), never on a slow machine.
pub(crate) async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("did not finish: the transport hung")
}
