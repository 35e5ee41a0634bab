//! Helpers: the testkit's mock server, config files in temporary folders, a
//! small HTTP MCP server, recording approvers, process checks.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_testutil::{Artifacts, built};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use switchboard_host::BoxFuture;
use switchboard_host::TokenStore;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, AssumeYes, CallOptions, CallReport, Config, ConfigLoader,
    Host, MountOptions, ServerReport,
};
use switchboard_oauth::{HeadlessUserAgent, OAuthConfig, OAuthProvider};
use tokio::net::TcpListener;

/// The path of a testkit binary, built for this test's profile
/// (`SWITCHBOARD_TESTKIT_BIN_DIR` names a directory to use instead).
pub(crate) fn bin(name: &str) -> PathBuf {
    std::env::var_os("SWITCHBOARD_TESTKIT_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| built("switchboard-testkit", Artifacts::Bins))
        .join(name)
}

/// The mock server's path as a string, for config files.
pub(crate) fn mock() -> String {
    bin("mock-server").display().to_string()
}

/// A temporary folder holding a config file (and, beside it, the lockfile,
/// the audit log, tools files and logs).
pub(crate) struct Dir {
    pub(crate) dir: tempfile::TempDir,
}

impl Dir {
    pub(crate) fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn path_str(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Writes `name` and returns its path.
    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write file");
        path
    }

    /// Writes a tools file for `--tools-file`.
    pub(crate) fn tools(&self, name: &str, tools: Value) -> String {
        self.write(name, &tools.to_string()).display().to_string()
    }

    /// Writes `.mcp.json` and loads it (with no environment but `vars`).
    pub(crate) fn config(&self, value: Value) -> Config {
        self.config_with_vars(value, &[])
    }

    pub(crate) fn config_with_vars(&self, value: Value, vars: &[(&str, &str)]) -> Config {
        let path = self.write(".mcp.json", &serde_json::to_string_pretty(&value).unwrap());
        ConfigLoader::new()
            .explicit(path)
            .vars(vars_of(vars))
            .load()
            .unwrap_or_else(|e| panic!("config should load: {e}"))
    }

    /// Writes the config and mounts it.
    pub(crate) async fn mount(&self, value: Value) -> Host {
        Host::mount(self.config(value), self.options())
            .await
            .expect("mount")
    }

    /// Mount options whose OAuth token store is in this folder (never the
    /// user's own).
    pub(crate) fn options(&self) -> MountOptions {
        let mut options = MountOptions::default();
        options.token_store = Some(self.store());
        // Skill content is cached in this folder, never the user's.
        options.skill_cache = Some(self.path("skill-cache"));
        options
    }

    /// The token store [`Dir::options`] uses.
    pub(crate) fn store(&self) -> TokenStore {
        TokenStore::at(self.path("state").join("oauth.json"))
    }
}

pub(crate) fn vars_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A stdio server entry running the mock server with `flags`.
pub(crate) fn stdio(flags: &[&str]) -> Value {
    json!({"command": mock(), "args": flags})
}

/// A tool definition for a tools file.
pub(crate) fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

/// An approver that records every question and answers with `answer`.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    pub(crate) asked: Arc<Mutex<Vec<ApprovalRequest>>>,
    pub(crate) answer: Approval,
}

impl Recorder {
    pub(crate) fn new(answer: Approval) -> Recorder {
        Recorder {
            asked: Arc::new(Mutex::new(Vec::new())),
            answer,
        }
    }

    /// Call options asking this recorder.
    pub(crate) fn options(&self) -> CallOptions {
        CallOptions::approver(self.clone())
    }

    pub(crate) fn questions(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for Recorder {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

/// The text of a result, all blocks joined.
pub(crate) fn text(result: &switchboard_wire::CallToolResult) -> String {
    result.joined_text()
}

/// Calls `name` with no arguments.
pub(crate) async fn call_no_args(
    host: &Host,
    name: &str,
    options: CallOptions,
) -> switchboard_wire::CallToolResult {
    host.call(name, None, options).await
}

/// Call options answering every question yes (`--yes`).
pub(crate) fn yes() -> CallOptions {
    CallOptions::approver(AssumeYes)
}

/// The status report of the server `alias`.
pub(crate) fn server_report(host: &Host, alias: &str) -> ServerReport {
    host.servers()
        .into_iter()
        .find(|s| s.alias == alias)
        .unwrap()
}

/// Calls the `secure` server's `whoami` tool with `--yes`.
pub(crate) async fn whoami(host: &Host) -> CallReport {
    host.call_detailed("mcp__secure__whoami", None, yes()).await
}

/// [`whoami`], expecting the call to need a login.
pub(crate) async fn whoami_needs_login(host: &Host) -> CallReport {
    let call = whoami(host).await;
    assert_eq!(
        call.outcome,
        switchboard_host::Outcome::AuthRequired,
        "{}",
        text(&call.result)
    );
    call
}

/// An OAuth provider for `config`, its tokens in `store`, whose user agent
/// approves at once.
pub(crate) fn headless_provider(config: OAuthConfig, store: &TokenStore) -> OAuthProvider {
    OAuthProvider::new(
        config
            .store(store.clone())
            .user_agent(Arc::new(HeadlessUserAgent::new())),
    )
    .unwrap()
}

/// The lines of a mock server's `--log` that are `tools/call` requests.
pub(crate) fn logged_calls(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "tools/call")
        .collect()
}

/// Whether a process is gone (no such pid, or a zombie waiting for its
/// parent to reap it).
pub(crate) fn process_gone(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (up to 10 s) for a process to be gone.
pub(crate) async fn wait_gone(pid: u64) -> bool {
    for _ in 0..200 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A small Streamable HTTP MCP server (2026-07-28, JSON responses).
pub(crate) struct HttpServer {
    pub(crate) url: String,
    pub(crate) state: Arc<HttpState>,
    _serving: Serving,
}

/// What the HTTP server serves and what it saw.
#[derive(Debug, Default)]
pub(crate) struct HttpState {
    pub(crate) tools: Mutex<Vec<Value>>,
    /// `ttlMs` of `tools/list` results.
    pub(crate) ttl_ms: Mutex<Option<u64>>,
    /// Every JSON-RPC body received, with its `Authorization` header.
    pub(crate) seen: Mutex<Vec<(Option<String>, Value)>>,
    pub(crate) lists: AtomicUsize,
}

impl HttpServer {
    pub(crate) async fn start(tools: Vec<Value>) -> HttpServer {
        let state = Arc::new(HttpState {
            tools: Mutex::new(tools),
            ..HttpState::default()
        });
        let st = state.clone();
        let (url, _serving) = serve_loopback(move |req| handle(st.clone(), req)).await;
        HttpServer {
            url,
            state,
            _serving,
        }
    }
}

/// A test server's accept loop, stopped when this is dropped.
pub(crate) struct Serving(tokio::task::JoinHandle<()>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves HTTP/1 on a fresh 127.0.0.1 port, every request through
/// `handler`, until the returned [`Serving`] is dropped; with the URL of
/// its `/mcp` endpoint. The test servers' one accept loop.
pub(crate) async fn serve_loopback<F, Fut, E>(handler: F) -> (String, Serving)
where
    F: Fn(hyper::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<hyper::Response<Full<Bytes>>, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handler = handler.clone();
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(handler))
                    .await;
            });
        }
    });
    (url, Serving(task))
}

/// A request's body as JSON (`null` when it is not JSON).
pub(crate) async fn json_body(req: hyper::Request<hyper::body::Incoming>) -> Value {
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

/// A response with `status`, `content_type` and `body`.
pub(crate) fn respond(
    status: u16,
    content_type: &str,
    body: String,
) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

/// The JSON-RPC answer to `id`: `result`, complete, from the server `name`.
pub(crate) fn complete(id: Value, mut result: Value, name: &str) -> Value {
    result["resultType"] = json!("complete");
    result["_meta"] = json!({"io.modelcontextprotocol/serverInfo": {"name": name, "version": "1"}});
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

async fn handle(
    state: Arc<HttpState>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let auth = req
        .headers()
        .get("authorization")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let msg = json_body(req).await;
    state.seen.lock().unwrap().push((auth, msg.clone()));
    let reply =
        |status: u16, body: Value| Ok(respond(status, "application/json", body.to_string()));
    let Some(id) = msg.get("id").cloned() else {
        return Ok(respond(202, "text/plain", String::new()));
    };
    let method = msg["method"].as_str().unwrap_or("");
    let result = match method {
        "server/discover" => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "ttlMs": 0, "cacheScope": "public",
        }),
        "tools/list" => {
            state.lists.fetch_add(1, Ordering::SeqCst);
            let mut r =
                json!({"tools": state.tools.lock().unwrap().clone(), "cacheScope": "public"});
            if let Some(ttl) = *state.ttl_ms.lock().unwrap() {
                r["ttlMs"] = json!(ttl);
            }
            r
        }
        "tools/call" => {
            let name = msg["params"]["name"].as_str().unwrap_or("");
            let args = &msg["params"]["arguments"];
            match name {
                "big" => {
                    let n = args["chars"].as_u64().unwrap_or(20_000) as usize;
                    json!({"content": [{"type": "text", "text": "y".repeat(n)}]})
                }
                other => {
                    json!({"content": [{"type": "text", "text": format!("{other} ran over http")}]})
                }
            }
        }
        other => {
            return reply(
                404,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: {other}")}}),
            );
        }
    };
    reply(200, complete(id, result, "http-test"))
}

/// A port on 127.0.0.1 with nothing listening.
pub(crate) async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}
