//! Helpers of the gateway tests: a `serve --http` child and its URL,
//! raw HTTP requests, clients with or without a token, the configs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, ClientBuilder, HttpTransport};

use crate::util::{Run, Sandbox, run, spawn_serving_logged};

pub(crate) const CI_TOKEN: &str = "ci-bot-token-0123456789";
pub(crate) const ALICE_TOKEN: &str = "alice-token-9876543210";

/// A running gateway: its URL and address, its stderr, the process
/// (killed when dropped).
pub(crate) struct Running {
    /// Its MCP endpoint.
    pub(crate) url: String,
    /// `host:port`.
    pub(crate) addr: String,
    pub(crate) stderr: Arc<Mutex<Vec<u8>>>,
    pub(crate) child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Starts `serve --http ADDR` on `config` with `args` and `env` (its
    /// questions go upstream unless `args` has `--yes`), and waits until
    /// it serves (ADDR a port chosen beforehand when others must know it
    /// before the gateway starts).
    pub(crate) async fn start(
        sb: &Sandbox,
        config: &str,
        addr: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Running {
        let mut cmd = serve_cmd(sb, config, addr, args);
        cmd.envs(env.iter().copied());
        let (child, stderr, url) =
            tokio::task::spawn_blocking(move || spawn_serving_logged(&mut cmd))
                .await
                .unwrap();
        let addr = url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches("/mcp")
            .to_owned();
        Running {
            url,
            addr,
            stderr,
            child,
        }
    }

    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }
}

/// Starts `serve --http 127.0.0.1:0 --yes` with `args` and waits for its URL.
pub(crate) async fn serve(
    sb: &Sandbox,
    config: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Running {
    let mut all = vec!["--yes"];
    all.extend_from_slice(args);
    serve_asking(sb, config, &all, env).await
}

/// Starts `serve --http 127.0.0.1:0` with `args` (its questions go
/// upstream) and waits for its URL.
pub(crate) async fn serve_asking(
    sb: &Sandbox,
    config: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Running {
    Running::start(sb, config, "127.0.0.1:0", args, env).await
}

/// `--config CONFIG serve --http ADDR ARGS`, in the sandbox.
pub(crate) fn serve_cmd(sb: &Sandbox, config: &str, addr: &str, args: &[&str]) -> Command {
    let mut all = vec!["--config", config, "serve", "--http", addr];
    all.extend_from_slice(args);
    sb.cmd(&all)
}

/// Runs `serve --http 127.0.0.1:0` on `config` with `args` to its end: a
/// gateway that stops before it serves (a bad flag, a file refused).
pub(crate) fn serve_exit(sb: &Sandbox, config: &str, args: &[&str]) -> Run {
    run(serve_cmd(sb, config, "127.0.0.1:0", args))
}

/// One raw HTTP/1.1 exchange: status, headers (lower-cased names), body.
pub(crate) fn raw(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = request_text(authority, method, path, headers, body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    parse_response(&response)
}

/// [`raw`] from the loopback address `source` (e.g. 127.0.0.2), for a
/// gateway that tells callers apart by their address.
pub(crate) async fn raw_from(
    source: std::net::IpAddr,
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::new(source, 0)).unwrap();
    let mut stream = socket.connect(authority.parse().unwrap()).await.unwrap();
    let request = request_text(authority, method, path, headers, body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let read = stream.read_to_end(&mut response);
    let _ = tokio::time::timeout(Duration::from_secs(30), read).await;
    parse_response(&response)
}

/// An HTTP/1.1 request closing its connection.
fn request_text(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    request
}

/// A whole HTTP/1.1 response: status, headers (lower-cased names), body.
fn parse_response(response: &[u8]) -> (u16, Vec<(String, String)>, String) {
    let response = String::from_utf8_lossy(response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// One JSON-RPC `method` with `params` POSTed to the MCP endpoint at
/// `addr` with `token`, as a 2026-07-28 client sends it: the message back.
pub(crate) fn rpc(addr: &str, token: &str, method: &str, params: &Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("Mcp-Method", method),
        ("Mcp-Name", params["name"].as_str().unwrap_or_default()),
        ("Mcp-Protocol-Version", "2026-07-28"),
    ];
    let (status, _, text) = raw(addr, "POST", "/mcp", &headers, &body);
    let json = &text[text.find('{').unwrap_or(0)..=text.rfind('}').unwrap_or(0)];
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{status} {e}: {text}"))
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A `tools/list` POST with `authorization`, as raw HTTP.
pub(crate) fn list_raw(
    gw: &Running,
    authorization: Option<&str>,
) -> (u16, Vec<(String, String)>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(a) = authorization {
        headers.push(("Authorization", a));
    }
    raw(&gw.addr, "POST", "/mcp", &headers, &body)
}

/// An MCP client presenting `token`.
pub(crate) async fn client(gw: &Running, token: &str) -> Client {
    client_with(gw, Some(token)).await
}

/// An MCP client presenting `token`, or no `Authorization` at all.
pub(crate) async fn client_with(gw: &Running, token: Option<&str>) -> Client {
    gateway_client(&gw.url, token).connect().await.unwrap()
}

/// A client of the gateway at `url` (its MCP endpoint) presenting `token`,
/// or no `Authorization`, with a 60 s timeout; to connect once the test
/// has added what it needs (an input handler, the tasks extension).
pub(crate) fn gateway_client(url: &str, token: Option<&str>) -> ClientBuilder {
    let mut transport = HttpTransport::builder("gateway", url);
    if let Some(token) = token {
        transport = transport.header("Authorization", format!("Bearer {token}"));
    }
    Client::builder("gateway", transport.build().unwrap()).timeout(Duration::from_secs(60))
}

/// The tools a gateway serving the notes demo lists: its three, and the two
/// skill tools (`mcp__switchboard__load_skill`, `read_skill_file`) the
/// host adds because the demo serves a skill.
pub(crate) const NOTES_TOOLS: usize = 5;

pub(crate) async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Calls `list_notes` with `token` and checks the audit log in `dir`
/// names `principal`.
pub(crate) async fn call_is_audited_as(
    gw: &Running,
    token: &str,
    dir: &std::path::Path,
    principal: &str,
) {
    lists_notes(&client(gw, token).await).await;
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    assert!(
        audit.contains(&format!("\"principal\":\"{principal}\"")),
        "{audit}"
    );
}

/// Calls `list_notes` through `c` and checks it ran.
pub(crate) async fn lists_notes(c: &Client) {
    let r = c
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
}

pub(crate) fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// notes, every tool allowed; ci-bot may call list_notes and read_note
/// but read_note is denied to it; alice has no entry.
pub(crate) fn token_config(sb: &Sandbox) -> String {
    sb.config(
        json!({}),
        json!({
            "permissions": {"allow": ["mcp__notes"]},
            "audit": "audit.jsonl",
            "principals": {"ci-bot": {
                "allow": ["mcp__notes__list_notes", "mcp__notes__read_note"],
                "deny": ["mcp__notes__read_note"]
            }}
        }),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

/// Writes `tokens` as `tokens.txt` and serves with `--auth token
/// --tokens-file tokens.txt` and `extra`.
pub(crate) async fn serve_with_tokens(
    sb: &Sandbox,
    cfg: &str,
    tokens: &str,
    extra: &[&str],
) -> Running {
    let file = sb.write("tokens.txt", tokens);
    let mut args = vec!["--auth", "token", "--tokens-file", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    serve(sb, cfg, &args, &[]).await
}

/// The gateway's config for the OAuth tests: notes, all allowed.
pub(crate) fn open_config(sb: &Sandbox) -> String {
    sb.config(
        json!({}),
        json!({"permissions": {"allow": ["mcp__notes"]}, "audit": "audit.jsonl"}),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

/// Waits (up to 30 s) until the gateway's stderr contains `text`.
pub(crate) async fn until_logged(gw: &Running, text: &str) {
    let start = std::time::Instant::now();
    while !gw.stderr().contains(text) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never logged {text:?}:\n{}",
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
