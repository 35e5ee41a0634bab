//! Shared helpers: a test server with one tool per behaviour, an HTTP
//! client over real sockets (hyper's connection API, one connection per
//! request so a test can drop it mid-stream), and a child-process stdio
//! client.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;
use switchboard_server::{
    CallToolResult, Context, Elicitation, HandlerError, InputRequired, Json, Principal,
    ResourceSpec, Sampling, Server, ServerBuilder, TemplateMatch, TemplateSpec, ToolResult,
    ToolSpec, blob_contents, text_contents,
};
use switchboard_wire::header::encode_value;
use switchboard_wire::{ContentBlock, SseDecoder};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};

pub(crate) const V: &str = "2026-07-28";
/// Generous: the machine is shared and slow at times.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// What handlers report back to the test.
#[derive(Default)]
pub(crate) struct Probe {
    /// A `wait_cancel` handler saw its cancellation.
    pub(crate) cancelled: Notify,
    pub(crate) cancel_count: AtomicUsize,
    /// A `wait_cancel` handler started.
    pub(crate) started: Notify,
}

pub(crate) fn meta() -> Value {
    meta_with(json!({}))
}

pub(crate) fn meta_with(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"}
    })
}

/// `params` with a default `_meta` unless it has one.
pub(crate) fn with_meta(mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    params
}

pub(crate) fn body(id: Value, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct EchoArgs {
    /// The text.
    pub(crate) text: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct AddArgs {
    pub(crate) a: i64,
    pub(crate) b: i64,
}

#[derive(Serialize, JsonSchema)]
pub(crate) struct Sum {
    pub(crate) sum: i64,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SleepArgs {
    pub(crate) ms: u64,
    pub(crate) text: String,
}

/// Books a seat: asks which one, keeps it in single-use state.
async fn book(ctx: Context) -> ToolResult {
    let state: Option<Value> = ctx.state()?;
    if let Some(state) = state {
        ctx.consume_state().await?;
        return Ok(CallToolResult::text(format!("booked seat {}", state["seat"])).into());
    }
    match ctx.input().elicitation("seat")? {
        Some(r) => {
            let seat = r
                .accepted()
                .and_then(|c| c.get("seat"))
                .cloned()
                .unwrap_or(Value::Null);
            Ok(InputRequired::new()
                .elicit(
                    "confirm",
                    Elicitation::form(
                        "Confirm?",
                        json!({"type":"object","properties":{"ok":{"type":"boolean"}}}),
                    ),
                )
                .state(json!({"seat": seat}))
                .into())
        }
        None => Ok(InputRequired::new()
            .elicit(
                "seat",
                Elicitation::form(
                    "Which seat?",
                    json!({"type":"object","properties":{"seat":{"type":"string"}}}),
                ),
            )
            .into()),
    }
}

/// A test server exercising every feature; `probe` observes handlers.
pub(crate) fn builder(probe: Arc<Probe>) -> ServerBuilder {
    let p1 = Arc::clone(&probe);
    Server::builder("test-server", "9.9.9")
        .logging(true)
        .tool("echo", "Returns its text", |a: EchoArgs| async move { a.text })
        .tool_spec(
            ToolSpec::new("add").description("Adds").output_schema_for::<Sum>(),
            |a: AddArgs| async move {
                a.a.checked_add(a.b)
                    .map(|sum| Json(Sum { sum }))
                    .ok_or_else(|| HandlerError::msg("overflow: use smaller numbers"))
            },
        )
        .tool("fail", "Always fails", || async {
            Err::<String, _>(HandlerError::msg("the ticket system is down; try again later"))
        })
        .tool("sleep_echo", "Sleeps, then echoes", |a: SleepArgs| async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            a.text
        })
        .tool("progress", "Reports progress 1..3 then answers", |ctx: Context| async move {
            for i in 1..=3 {
                ctx.progress(f64::from(i), Some(3.0), Some("step")).await;
                // Not increasing: must be dropped.
                ctx.progress(0.5, None, None).await;
            }
            "done"
        })
        .tool("logs", "Logs at debug and error", |ctx: Context| async move {
            ctx.debug("debug line").await;
            ctx.error("error line").await;
            "logged"
        })
        .tool("wait_cancel", "Reports progress, then waits until cancelled", move |ctx: Context| {
            let probe = Arc::clone(&p1);
            async move {
                ctx.progress(1.0, None, Some("waiting")).await;
                probe.started.notify_one();
                tokio::select! {
                    () = ctx.cancelled() => {
                        probe.cancel_count.fetch_add(1, Ordering::SeqCst);
                        probe.cancelled.notify_one();
                        "cancelled"
                    }
                    () = tokio::time::sleep(Duration::from_secs(60)) => "not cancelled",
                }
            }
        })
        .tool("whoami", "Names the principal", |ctx: Context| async move {
            ctx.principal().map_or_else(|| "nobody".to_owned(), |p| p.subject.clone())
        })
        .tool("need_sampling", "Asks the client's model", |ctx: Context| async move {
            match ctx.input().sampling("q") {
                Ok(Some(m)) => Ok(CallToolResult::text(format!("model said {}", m.text())).into()),
                Ok(None) => Ok::<switchboard_server::ToolOutcome, HandlerError>(
                    InputRequired::new().sample("q", Sampling::prompt("2+2?", 10)).into(),
                ),
                Err(e) => Err(e),
            }
        })
        .tool("book", "Books a seat, asking first", book)
        .tool_spec(
            ToolSpec::new("headers").description("Mirrors region and count").input_schema(json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "count": {"type": "integer", "x-mcp-header": "Count"},
                    "opts": {"type": "object", "properties": {"flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"}}}
                },
                "required": ["region"]
            })),
            |args: Value| async move { format!("got {args}") },
        )
        .tool("café", "A tool with a non-ASCII name", || async { "un café" })
        .tool("=?base64?abc?=", "A tool whose name looks like the sentinel", || async {
            "literal"
        })
        .prompt("greet", "Greets", |a: EchoArgs| async move {
            vec![switchboard_server::user(ContentBlock::text(format!("Hello {}", a.text)))]
        })
        .resource(
            ResourceSpec::new("test://text", "text").mime_type("text/plain"),
            || async { text_contents("test://text", "text/plain", "plain text") },
        )
        .resource(
            ResourceSpec::new("test://binary", "binary").mime_type("application/octet-stream"),
            || async { blob_contents("test://binary", "application/octet-stream", &[0, 1, 2, 255]) },
        )
        .resource_template(
            TemplateSpec::new("test://items/{id}", "items").mime_type("text/plain"),
            |m: TemplateMatch| async move {
                let id = m.get("id").unwrap_or_default().to_owned();
                text_contents(m.uri, "text/plain", format!("item {id}"))
            },
        )
        .completion(|req: switchboard_server::CompleteRequest| async move {
            (0..150).map(|i| format!("{}{i}", req.value)).collect::<Vec<_>>()
        })
}

pub(crate) fn server() -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    (builder(Arc::clone(&probe)).build().unwrap(), probe)
}

// ---------------------------------------------------------------------------
// HTTP

pub(crate) struct Http {
    pub(crate) addr: SocketAddr,
    pub(crate) server: Server,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

pub(crate) async fn start(server: Server, options: HttpOptions) -> Http {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    start_on(listener, server, options)
}

/// Serves on a listener bound beforehand (when the options need its port).
pub(crate) fn start_on(
    listener: tokio::net::TcpListener,
    server: Server,
    options: HttpOptions,
) -> Http {
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = oneshot::channel::<()>();
    let s = server.clone();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = rx.await;
        };
        switchboard_server::http::serve(s, listener, options, shutdown)
            .await
            .unwrap();
    });
    Http {
        addr,
        server,
        stop: Some(stop),
        task,
    }
}

/// Two replicas of the server `make` builds: `b`, then `a` with `b` (and
/// `more_peers`) among its peers. Returns (a, b).
pub(crate) async fn replicas(
    make: impl Fn() -> ServerBuilder,
    more_peers: &[(&str, &str)],
) -> (Http, Http) {
    let b = start(make().task_origin("b").build().unwrap(), HttpOptions::new()).await;
    let url = b.url();
    let peers = [("b", url.as_str())]
        .into_iter()
        .chain(more_peers.iter().copied());
    let a = make()
        .task_origin("a")
        .replica_peers(peers)
        .unwrap()
        .build()
        .unwrap();
    (start(a, HttpOptions::new()).await, b)
}

/// A TCP relay on loopback to `to` (`host:port`) that counts the
/// connections it accepts: its address, and the count.
pub(crate) async fn counting_relay(to: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, accepted)
}

pub(crate) async fn start_default() -> (Http, Arc<Probe>) {
    let (server, probe) = server();
    (start(server, HttpOptions::new()).await, probe)
}

#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Resp {
    pub(crate) fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Every JSON-RPC message of the body (one for JSON, all events for SSE).
    pub(crate) fn messages(&self) -> Vec<Value> {
        if self.content_type().starts_with("text/event-stream") {
            let mut d = SseDecoder::new();
            d.push(&self.body);
            let mut out = Vec::new();
            while let Ok(Some(e)) = d.next_event() {
                out.push(serde_json::from_str(&e.data).unwrap());
            }
            out
        } else if self.body.is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_slice(&self.body).unwrap_or_else(|e| {
                panic!(
                    "body is not JSON ({e}): {}",
                    String::from_utf8_lossy(&self.body)
                )
            })]
        }
    }

    /// The response message (the one with an id).
    pub(crate) fn response(&self) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m.get("id").is_some() && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response in {}", String::from_utf8_lossy(&self.body)))
    }

    pub(crate) fn result(&self) -> Value {
        let r = self.response();
        assert!(r.get("error").is_none(), "unexpected error: {r}");
        r["result"].clone()
    }

    pub(crate) fn error_code(&self) -> i64 {
        self.response()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The error's message (panics, naming the body, when there is none).
    pub(crate) fn error_message(&self) -> String {
        self.response()["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message: {}", String::from_utf8_lossy(&self.body)))
            .to_owned()
    }

    /// Asserts an invalid-params (-32602) error whose message says `says`.
    pub(crate) fn assert_invalid_params(&self, says: &str) {
        assert_eq!(
            self.error_code(),
            -32602,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        let message = self.error_message();
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }
}

/// The headers a conforming client sends for `method` with `params`.
pub(crate) fn standard_headers(method: &str, params: &Value) -> Vec<(String, String)> {
    let mut h = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("mcp-method".to_owned(), method.to_owned()),
    ];
    let version = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or(V);
    h.push(("mcp-protocol-version".to_owned(), version.to_owned()));
    let member = switchboard_wire::header::name_member(method);
    if let Some(name) = member.and_then(|m| params[m].as_str()) {
        h.push(("mcp-name".to_owned(), encode_value(name).into_owned()));
    }
    h
}

pub(crate) struct Stream {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    body: Incoming,
    conn: tokio::task::JoinHandle<()>,
    decoder: SseDecoder,
    pending: Vec<Value>,
}

impl Stream {
    /// The next JSON-RPC message; `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if !self.pending.is_empty() {
                return Some(self.pending.remove(0));
            }
            let frame = tokio::time::timeout(WAIT, self.body.frame())
                .await
                .expect("stream stalled")?;
            let frame = frame.ok()?;
            if let Some(data) = frame.data_ref() {
                self.decoder.push(data);
                while let Ok(Some(e)) = self.decoder.next_event() {
                    self.pending.push(serde_json::from_str(&e.data).unwrap());
                }
            }
        }
    }

    /// How many keep-alive comments arrived so far.
    pub(crate) fn comments(&self) -> u64 {
        self.decoder.comments_seen()
    }

    /// Reads raw frames until `n` comments have arrived or the stream ends.
    pub(crate) async fn until_comments(&mut self, n: u64) {
        while self.decoder.comments_seen() < n {
            let Some(Ok(frame)) = tokio::time::timeout(WAIT, self.body.frame())
                .await
                .expect("stalled")
            else {
                return;
            };
            if let Some(data) = frame.data_ref() {
                self.decoder.push(data);
                while let Ok(Some(e)) = self.decoder.next_event() {
                    self.pending.push(serde_json::from_str(&e.data).unwrap());
                }
            }
        }
    }

    /// Closes the connection, as a client giving up does.
    pub(crate) fn close(self) {
        self.conn.abort();
        drop(self.body);
    }
}

impl Http {
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    async fn send(
        &self,
        method: http::Method,
        path: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> (hyper::Response<Incoming>, tokio::task::JoinHandle<()>) {
        let stream = TcpStream::connect(self.addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut req = hyper::Request::builder().method(method).uri(path);
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req = req.header("host", self.addr.to_string());
        }
        for (k, v) in headers {
            req = req.header(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(v.as_bytes()).unwrap(),
            );
        }
        let req = req.body(Full::new(Bytes::from(body))).unwrap();
        let resp = tokio::time::timeout(WAIT, sender.send_request(req))
            .await
            .expect("no answer")
            .unwrap();
        (resp, conn)
    }

    /// Sends any request and reads the whole answer.
    pub(crate) async fn raw(
        &self,
        method: http::Method,
        path: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Resp {
        let (resp, conn) = self.send(method, path, headers, body).await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = tokio::time::timeout(WAIT, resp.into_body().collect())
            .await
            .expect("body stalled")
            .unwrap()
            .to_bytes()
            .to_vec();
        conn.abort();
        Resp {
            status,
            headers,
            body,
        }
    }

    /// POSTs a body with explicit headers.
    pub(crate) async fn post(&self, headers: &[(String, String)], body: Vec<u8>) -> Resp {
        self.raw(http::Method::POST, "/mcp", headers, body).await
    }

    /// A conforming call: `_meta` added when missing, headers mirrored.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Resp {
        self.call_id(json!(1), method, params).await
    }

    /// [`Http::call`] with `{"uri": uri}` as the params.
    pub(crate) async fn call_uri(&self, method: &str, uri: &str) -> Resp {
        self.call(method, json!({ "uri": uri })).await
    }

    pub(crate) async fn call_id(&self, id: Value, method: &str, params: Value) -> Resp {
        let params = with_meta(params);
        let headers = standard_headers(method, &params);
        self.post(&headers, body(id, method, params)).await
    }

    /// A conforming call whose answer is read as a stream.
    pub(crate) async fn open(&self, id: Value, method: &str, params: Value) -> Stream {
        let params = with_meta(params);
        let headers = standard_headers(method, &params);
        let (resp, conn) = self
            .send(
                http::Method::POST,
                "/mcp",
                &headers,
                body(id, method, params),
            )
            .await;
        Stream {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.into_body(),
            conn,
            decoder: SseDecoder::new(),
            pending: Vec::new(),
        }
    }

    /// Any POST whose answer is read as a stream.
    pub(crate) async fn open_with(&self, headers: Vec<(String, String)>, body: Vec<u8>) -> Stream {
        let (resp, conn) = self.send(http::Method::POST, "/mcp", &headers, body).await;
        Stream {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.into_body(),
            conn,
            decoder: SseDecoder::new(),
            pending: Vec::new(),
        }
    }

    pub(crate) async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }
}

pub(crate) fn header(k: &str, v: &str) -> (String, String) {
    (k.to_owned(), v.to_owned())
}

/// Replaces (or with `None` removes) one header of a list.
pub(crate) fn set_header(
    mut h: Vec<(String, String)>,
    name: &str,
    value: Option<&str>,
) -> Vec<(String, String)> {
    h.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    if let Some(v) = value {
        h.push((name.to_owned(), v.to_owned()));
    }
    h
}

/// A principal per token: `<name>-token` is `<name>`.
pub(crate) struct Tokens;

impl switchboard_server::TokenValidator for Tokens {
    fn validate<'a>(
        &'a self,
        token: &'a str,
    ) -> switchboard_server::BoxFuture<'a, Result<Principal, switchboard_server::AuthError>> {
        Box::pin(async move {
            match token.strip_suffix("-token") {
                Some(name) if !name.is_empty() => {
                    Ok(Principal::new(name).with_scopes(if name == "admin" {
                        vec!["admin"]
                    } else {
                        vec![]
                    }))
                }
                _ => Err(switchboard_server::AuthError::Unauthorized(
                    "unknown token".into(),
                )),
            }
        })
    }

    fn authorize(
        &self,
        principal: &Principal,
        request: &switchboard_server::AuthRequest<'_>,
    ) -> Result<(), switchboard_server::AuthError> {
        if request.name == Some("fail") && !principal.has_scope("admin") {
            return Err(switchboard_server::AuthError::InsufficientScope(vec![
                "admin".into(),
            ]));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// stdio

/// An example binary of this crate, built for this test's profile
/// (`cargo nextest run` builds no examples).
pub(crate) fn example(name: &str) -> PathBuf {
    switchboard_testutil::built(
        "switchboard-server",
        switchboard_testutil::Artifacts::Examples,
    )
    .join(name)
}

pub(crate) struct Child {
    pub(crate) child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Child {
    // The server crate must not depend on the client crate and its spawn
    // helper; this child is killed on drop, and its stdin is closed by the
    // tests that check a clean exit.
    pub(crate) fn spawn(example_name: &str) -> Child {
        Child::spawn_with(example_name, &[], &[])
    }

    /// [`Child::spawn`] with arguments and environment variables.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn spawn_with(
        example_name: &str,
        args: &[&std::ffi::OsStr],
        env: &[(&str, &str)],
    ) -> Child {
        let mut child = tokio::process::Command::new(example(example_name))
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Child {
            child,
            stdin,
            lines,
        }
    }

    pub(crate) async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }

    pub(crate) async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    pub(crate) async fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":with_meta(params)}))
            .await;
    }

    /// The next line of stdout, which must be one JSON-RPC message.
    pub(crate) async fn recv(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the server said nothing")
            .unwrap()?;
        Some(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}")),
        )
    }

    /// The next message that is a response (skipping notifications).
    pub(crate) async fn response(&mut self) -> Value {
        loop {
            let m = self.recv().await.expect("stdout ended");
            if m.get("method").is_none() {
                return m;
            }
        }
    }

    /// Takes stdin, to write from another task while reading stdout.
    pub(crate) fn take_stdin(&mut self) -> tokio::process::ChildStdin {
        self.stdin.take().unwrap()
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit; its status.
    pub(crate) async fn wait(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server did not exit")
            .unwrap()
    }
}
