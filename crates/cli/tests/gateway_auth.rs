//! `serve --http` with inbound authorization: named bearer tokens, OAuth
//! access tokens (JWT checked with the issuer's keys, or introspection),
//! per-principal rules, `/healthz` and `/readyz`, and the refusal to serve
//! a non-loopback address without authentication.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_authkit::jwt::{Signer, now};
use switchboard_authkit::{AuthServer, AuthServerConfig, TestClient};
use switchboard_client::{
    BoxFuture, Client, HttpTransport, InputContext, InputError, InputHandler, InputSupport,
};

use switchboard_testutil::tls;

use crate::util::{Sandbox, collect, spawn, wait_for};

const CI_TOKEN: &str = "ci-bot-token-0123456789";
const ALICE_TOKEN: &str = "alice-token-9876543210";

/// A running gateway: its URL, its stderr, the process.
pub(crate) struct Running {
    pub(crate) url: String,
    stderr: Arc<Mutex<Vec<u8>>>,
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// `host:port`.
    fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches("/mcp")
            .to_owned()
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

/// Starts `serve --http 127.0.0.1:0` with `args` (questions go upstream).
async fn serve_asking(sb: &Sandbox, config: &str, args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut all = vec!["--config", config, "serve", "--http", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut cmd = sb.cmd(&all);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = spawn(&mut cmd);
    let stderr = collect(child.stderr.take().unwrap());
    let seen = Arc::clone(&stderr);
    let text =
        tokio::task::spawn_blocking(move || wait_for(&seen, "/mcp", Duration::from_secs(60)))
            .await
            .unwrap();
    let url = text
        .split_whitespace()
        .find(|w| w.starts_with("http://") || w.starts_with("https://"))
        .unwrap()
        .to_owned();
    Running { url, stderr, child }
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
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
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

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A `tools/list` POST with `authorization`, as raw HTTP.
fn list_raw(gw: &Running, authorization: Option<&str>) -> (u16, Vec<(String, String)>, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(a) = authorization {
        headers.push(("Authorization", a));
    }
    raw(&gw.authority(), "POST", "/mcp", &headers, &body)
}

/// An MCP client presenting `token`.
pub(crate) async fn client(gw: &Running, token: &str) -> Client {
    client_with(gw, Some(token)).await
}

/// An MCP client presenting `token`, or no `Authorization` at all.
async fn client_with(gw: &Running, token: Option<&str>) -> Client {
    let mut transport = HttpTransport::builder("gateway", &gw.url);
    if let Some(token) = token {
        transport = transport.header("Authorization", format!("Bearer {token}"));
    }
    Client::builder("gateway", transport.build().unwrap())
        .timeout(Duration::from_secs(60))
        .connect()
        .await
        .unwrap()
}

/// The tools a gateway serving the notes demo lists: its three, and the two
/// skill tools (`mcp__switchboard__load_skill`, `read_skill_file`) the
/// host adds because the demo serves a skill.
const NOTES_TOOLS: usize = 5;

async fn tool_names(client: &Client) -> Vec<String> {
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
async fn call_is_audited_as(gw: &Running, token: &str, dir: &std::path::Path, principal: &str) {
    lists_notes(&client(gw, token).await).await;
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    assert!(
        audit.contains(&format!("\"principal\":\"{principal}\"")),
        "{audit}"
    );
}

/// Calls `list_notes` through `c` and checks it ran.
async fn lists_notes(c: &Client) {
    let r = c
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
}

fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// notes, every tool allowed; ci-bot may call list_notes and read_note
/// but read_note is denied to it; alice has no entry.
fn token_config(sb: &Sandbox) -> String {
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
async fn serve_with_tokens(sb: &Sandbox, cfg: &str, tokens: &str, extra: &[&str]) -> Running {
    let file = sb.write("tokens.txt", tokens);
    let mut args = vec!["--auth", "token", "--tokens-file", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    serve(sb, cfg, &args, &[]).await
}

// Tokens: a missing or wrong token is 401 with a Bearer challenge; each
// token's name is the principal (audit line, per-principal rules); tokens
// appear in no log; health and readiness need no token.
#[tokio::test(flavor = "multi_thread")]
async fn token_auth_names_the_principal() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let tokens = format!("# gateway callers\nci-bot {CI_TOKEN}\nalice {ALICE_TOKEN}\n");
    let gw = serve_with_tokens(&sb, &cfg, &tokens, &[]).await;

    let (status, headers, _) = list_raw(&gw, None);
    assert_eq!(status, 401);
    let challenge = header(&headers, "www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer ") && challenge.contains("resource_metadata=\""),
        "{challenge}"
    );
    assert!(!challenge.contains("error="), "{challenge}");
    let (status, headers, _) = list_raw(&gw, Some("Bearer wrong-token-0000000000"));
    assert_eq!(status, 401);
    let challenge = header(&headers, "www-authenticate").unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // A token in the URL is refused outright.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    let (status, _, _) = raw(
        &gw.authority(),
        "POST",
        &format!("/mcp?access_token={ALICE_TOKEN}"),
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(status, 400);

    // Health and readiness answer without a token.
    let (status, _, body) = raw(&gw.authority(), "GET", "/healthz", &[], "");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = raw(&gw.authority(), "GET", "/readyz", &[], "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"ready\":true"), "{body}");

    // alice has no principals entry: the whole table.
    let alice = client(&gw, ALICE_TOKEN).await;
    assert_eq!(tool_names(&alice).await.len(), NOTES_TOOLS);
    let r = alice
        .call_tool("mcp__notes__read_note", args(json!({"id": "handbook"})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");

    // ci-bot: allow list narrows, deny wins; refused by name too.
    let bot = client(&gw, CI_TOKEN).await;
    assert_eq!(tool_names(&bot).await, ["mcp__notes__list_notes"]);
    let r = bot
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    for denied in ["mcp__notes__read_note", "mcp__notes__search"] {
        let r = bot
            .call_tool(denied, args(json!({"id": "handbook", "query": "vpn"})))
            .await
            .unwrap();
        assert!(r.is_error(), "{denied}: {r:?}");
        assert!(r.joined_text().contains("ci-bot"), "{r:?}");
    }

    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by =
        |who: &str| -> Vec<&Value> { lines.iter().filter(|l| l["principal"] == who).collect() };
    assert_eq!(by("alice").len(), 1, "{audit}");
    assert_eq!(by("alice")[0]["outcome"], "ok");
    let bot_lines = by("ci-bot");
    assert_eq!(bot_lines.len(), 3, "{audit}");
    assert_eq!(
        bot_lines.iter().filter(|l| l["decision"] == "deny").count(),
        2
    );
    drop((alice, bot));
    let stderr = gw.stderr();
    for text in [&audit, &stderr] {
        assert!(!text.contains(CI_TOKEN) && !text.contains(ALICE_TOKEN));
    }
    assert!(stderr.contains("token"), "{stderr}");
}

// The token list may come from the environment; a bad list is refused at
// start with exit 1, without quoting a token.
#[tokio::test(flavor = "multi_thread")]
async fn tokens_from_the_environment_and_bad_lists() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let env = format!("ci-bot {CI_TOKEN}; alice {ALICE_TOKEN}");
    let gw = serve(
        &sb,
        &cfg,
        &["--auth", "token"],
        &[("SWITCHBOARD_GATEWAY_TOKENS", &env)],
    )
    .await;
    let alice = client(&gw, ALICE_TOKEN).await;
    assert_eq!(tool_names(&alice).await.len(), NOTES_TOOLS);
    drop(alice);
    drop(gw);

    let short = sb.write("short.txt", "alice tooshort\n");
    let run = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "127.0.0.1:0",
        "--auth",
        "token",
        "--tokens-file",
        short.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("shorter than"), "{run:?}");
    assert!(!run.stderr.contains("tooshort"), "{run:?}");
    let run = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "127.0.0.1:0",
        "--auth",
        "token",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("SWITCHBOARD_GATEWAY_TOKENS"), "{run:?}");
}

// Issue 36: files that grant access are checked at start: a tokens file
// or state key file others may write stops serve with the fix; a tokens
// file others may read is served, with a warning.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn files_others_may_write_are_refused_at_start() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let chmod = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let tokens = sb.write("tokens.txt", &format!("alice {ALICE_TOKEN}\n"));
    chmod(&tokens, 0o666);
    let serve_args = |extra: &[&str]| {
        let mut all = vec![
            "--config",
            &cfg,
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth",
            "token",
        ];
        all.extend_from_slice(extra);
        all.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| sb.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let out = run(serve_args(&["--tokens-file", tokens.to_str().unwrap()]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("refusing the tokens file"), "{out:?}");
    assert!(out.stderr.contains("chmod go-w"), "{out:?}");

    chmod(&tokens, 0o600);
    let key = sb.write("state.key", &"k".repeat(40));
    chmod(&key, 0o620);
    let env = format!("alice {ALICE_TOKEN}");
    let args = serve_args(&["--state-key-file", key.to_str().unwrap()]);
    let mut cmd = sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>());
    cmd.env("SWITCHBOARD_GATEWAY_TOKENS", &env);
    let out = crate::util::run(cmd);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("refusing the state key file"),
        "{out:?}"
    );

    chmod(&tokens, 0o644);
    let gw = serve(
        &sb,
        &cfg,
        &["--auth", "token", "--tokens-file", tokens.to_str().unwrap()],
        &[],
    )
    .await;
    assert!(admitted(&gw, ALICE_TOKEN));
    assert!(
        gw.stderr().contains("may be read by all users"),
        "{}",
        gw.stderr()
    );
}

// Issue 36: the HTTP runner's connection limits are serve flags. With
// --header-timeout 0.5 a socket that sends nothing is closed well within
// the default's 10 s; with --max-connections-per-peer 1, while this
// address's one connection has a request in flight (a listen stream), a
// second is closed unanswered.
#[tokio::test(flavor = "multi_thread")]
async fn connection_limits_are_serve_flags() {
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let gw = serve(
        &sb,
        &cfg,
        &["--header-timeout", "0.5", "--max-connections-per-peer", "1"],
        &[],
    )
    .await;
    let authority = gw.authority();
    let closed_within = |limit: Duration, send: &'static [u8]| {
        let authority = authority.clone();
        move || {
            let mut stream = TcpStream::connect(&authority).unwrap();
            stream.set_read_timeout(Some(limit)).unwrap();
            stream.write_all(send).unwrap();
            // Closed: the end of the stream, or a reset when the request
            // sent was never read. A read timeout is not.
            let mut got = Vec::new();
            match stream.read_to_end(&mut got) {
                Ok(_) => Some(got),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Some(got),
                Err(_) => None,
            }
        }
    };
    let silent = tokio::task::spawn_blocking(closed_within(Duration::from_secs(5), b""))
        .await
        .unwrap();
    assert_eq!(silent.as_deref(), Some(&b""[..]), "not closed within 5 s");

    let listener = client_with(&gw, None).await;
    let _stream = listener
        .listen(switchboard_wire::SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    let second = tokio::task::spawn_blocking(closed_within(
        Duration::from_secs(5),
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ))
    .await
    .unwrap();
    assert_eq!(second.as_deref(), Some(&b""[..]), "answered: {second:?}");

    let run = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "127.0.0.1:0",
        "--idle-timeout",
        "0",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("above 0"), "{run:?}");
}

const BOB_TOKEN: &str = "bob-token-5555555555555";

/// Whether a raw request with `token` gets past authentication (the
/// bare request itself may still be refused, with 400, for what it lacks).
fn admitted(gw: &Running, token: &str) -> bool {
    list_raw(gw, Some(&format!("Bearer {token}"))).0 != 401
}

/// Waits (up to 30 s) until `token` is `admitted`, or refused.
async fn until_admitted(gw: &Running, token: &str, admitted_now: bool) {
    let start = std::time::Instant::now();
    while admitted(gw, token) != admitted_now {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "a token was never {}; stderr:\n{}",
            if admitted_now { "admitted" } else { "refused" },
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// The tokens file is watched while serving: a token taken out is refused
// from the next request on (a client already connected with it too), a
// new one gets in under its name, and a broken file is reported (naming
// no token) while the tokens in use are kept.
#[tokio::test(flavor = "multi_thread")]
async fn the_tokens_file_is_reloaded_while_serving() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let tokens = format!("ci-bot {CI_TOKEN}\nalice {ALICE_TOKEN}\n");
    // -v: the reload's own line (info) is logged.
    let gw = serve_with_tokens(&sb, &cfg, &tokens, &["-v"]).await;
    let alice = client(&gw, ALICE_TOKEN).await;
    lists_notes(&alice).await;
    assert!(!admitted(&gw, BOB_TOKEN));

    // alice's token leaked: it is taken out, and bob is added.
    sb.write(
        "tokens.txt",
        &format!("ci-bot {CI_TOKEN}\nbob {BOB_TOKEN}\n"),
    );
    until_admitted(&gw, ALICE_TOKEN, false).await;
    let refused = alice
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    call_is_audited_as(&gw, BOB_TOKEN, sb.path(), "bob").await;
    assert!(admitted(&gw, CI_TOKEN));
    let stderr = gw.stderr();
    let reloaded = stderr
        .lines()
        .find(|l| l.contains("reloaded the tokens"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        reloaded.contains("alice") && reloaded.contains("bob"),
        "{reloaded}"
    );

    // A broken file: said so, and bob and ci-bot still get in.
    sb.write("tokens.txt", "bob tooshort\n");
    until_logged(&gw, "the tokens were not reloaded").await;
    for token in [BOB_TOKEN, CI_TOKEN] {
        assert!(admitted(&gw, token));
    }
    let stderr = gw.stderr();
    assert!(stderr.contains("shorter than"), "{stderr}");
    for token in [CI_TOKEN, ALICE_TOKEN, BOB_TOKEN, "tooshort"] {
        assert!(!stderr.contains(token), "{stderr}");
    }
}

/// The notes demo, every tool allowed, an audit log, and `limits` as
/// `callerLimits`; alice lifts the rate limit for herself.
fn limits_config(sb: &Sandbox, limits: Value) -> String {
    sb.config(
        json!({}),
        json!({
            "permissions": {"allow": ["mcp__notes"]},
            "audit": "audit.jsonl",
            "callerLimits": limits,
            "principals": {"alice": {"limits": {"callsPerMinute": null}}}
        }),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

// Callers' limits through a real gateway: a caller over its calls a
// minute gets an isError result naming the limit and when to try again
// (the server never hears of it), audited and counted as `limited`;
// another caller's own limits let it go on; a config reload raising the
// limit lets the caller in again without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn callers_over_their_limits_are_refused_until_the_limit_allows() {
    let sb = Sandbox::new();
    let cfg = limits_config(&sb, json!({"callsPerMinute": 2}));
    let tokens = format!("ci-bot {CI_TOKEN}\nalice {ALICE_TOKEN}\n");
    let gw = serve_with_tokens(&sb, &cfg, &tokens, &["--metrics"]).await;
    let bot = client(&gw, CI_TOKEN).await;
    for _ in 0..2 {
        lists_notes(&bot).await;
    }
    let over = bot
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await
        .unwrap();
    assert!(over.is_error(), "{over:?}");
    let text = over.joined_text();
    assert!(
        text.contains("ci-bot")
            && text.contains("limited to 2 a minute")
            && text.contains("Try again in"),
        "{text}"
    );
    let alice = client(&gw, ALICE_TOKEN).await;
    for _ in 0..4 {
        lists_notes(&alice).await;
    }

    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap();
    let limited: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["outcome"] == "limited")
        .collect();
    assert_eq!(limited.len(), 1, "{audit}");
    assert_eq!(limited[0]["principal"], "ci-bot");
    let (status, _, metrics) = raw(&gw.authority(), "GET", "/metrics", &[], "");
    assert_eq!(status, 200);
    let count = metrics
        .lines()
        .find(|l| l.starts_with("switchboard_calls_total{") && l.contains("outcome=\"limited\""))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(
        count.contains("tool=\"mcp__notes__list_notes\"") && count.ends_with(" 1"),
        "{count}"
    );
    // A refusal, not an error of the tool.
    assert!(
        !metrics.contains("switchboard_call_errors_total{server=\"notes\""),
        "{metrics}"
    );

    // The config now allows 50 a minute: ci-bot gets in again at once.
    limits_config(&sb, json!({"callsPerMinute": 50}));
    let start = std::time::Instant::now();
    loop {
        let r = bot
            .call_tool("mcp__notes__list_notes", args(json!({})))
            .await
            .unwrap();
        if !r.is_error() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the raised limit never applied: {r:?}\n{}",
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Who called how much, and who was held back: `audit stats --by
    // principal`.
    let run = sb.run(&[
        "--config",
        &cfg,
        "--json",
        "audit",
        "stats",
        "--by",
        "principal",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let rows = run.json()["principals"].as_array().unwrap().clone();
    let row = |who: &str| rows.iter().find(|r| r["principal"] == who).unwrap().clone();
    let (bot, alice) = (row("ci-bot"), row("alice"));
    assert!(bot["limited"].as_u64().unwrap() >= 1, "{bot}");
    assert_eq!(bot["errors"], 0, "{bot}");
    assert_eq!(
        (alice["calls"].as_u64(), alice["limited"].as_u64()),
        (Some(4), Some(0))
    );
    let run = sb.run(&["--config", &cfg, "audit", "stats", "--by", "principal"]);
    assert!(run.stdout.starts_with("PRINCIPAL"), "{}", run.stdout);
    assert!(run.stdout.contains("LIMITED"), "{}", run.stdout);
}

/// Waits (up to 30 s) until the gateway's stderr contains `text`.
async fn until_logged(gw: &Running, text: &str) {
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

// A principals entry that no token has (a misspelt name: the caller it
// was meant for gets the whole table) is reported at start, and again
// when a reload of the tokens file or of the config leaves one so.
#[tokio::test(flavor = "multi_thread")]
async fn principals_that_name_no_token_are_reported() {
    let sb = Sandbox::new();
    let rules = json!({"allow": ["mcp__notes__list_notes"]});
    let cfg = sb.config(
        json!({}),
        json!({"permissions": {"allow": ["mcp__notes"]}, "principals": {"ci-bot": rules, "ci-bott": rules}}),
    );
    let cfg = cfg.to_str().unwrap().to_owned();
    let tokens = format!("ci-bot {CI_TOKEN}\nalice {ALICE_TOKEN}\n");
    let gw = serve_with_tokens(&sb, &cfg, &tokens, &[]).await;
    until_logged(&gw, "principals.ci-bott names no token in use").await;
    assert!(
        !gw.stderr().contains("principals.ci-bot names"),
        "{}",
        gw.stderr()
    );

    // ci-bot's token is taken out: its entry now names no one.
    sb.write("tokens.txt", &format!("alice {ALICE_TOKEN}\n"));
    until_logged(&gw, "principals.ci-bot names no token in use").await;
    // The config now has an entry for someone without a token.
    sb.config(
        json!({}),
        json!({"permissions": {"allow": ["mcp__notes"]}, "principals": {"alice": rules, "dave": {}}}),
    );
    until_logged(&gw, "principals.dave names no token in use").await;
    assert!(
        !gw.stderr().contains("principals.alice names"),
        "{}",
        gw.stderr()
    );
}

/// The certificate the gateway presents on a new TLS connection, and the
/// body of a `GET path` on it.
async fn tls_get(gw: &Running, path: &str) -> (Vec<u8>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tcp = tokio::net::TcpStream::connect(gw.authority())
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(tls::client_trusting_test_ca())
        .connect(name, tcp)
        .await
        .unwrap();
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    (presented, response)
}

// HTTPS: --tls-cert and --tls-key serve the gateway over TLS (a client
// trusting the CA lists and calls tools; plain HTTP gets no answer); a
// renewed certificate written over the files is used from the next
// connection on, and a broken one is reported while the one in use stays.
#[tokio::test(flavor = "multi_thread")]
async fn https_with_a_certificate_renewed_while_serving() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let cert = sb.write("tls.pem", &tls::pem("server-a.pem"));
    let key = sb.write("tls.key", &tls::pem("server-a.key"));
    let tokens = format!("alice {ALICE_TOKEN}\n");
    let gw = serve_with_tokens(
        &sb,
        &cfg,
        &tokens,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--metrics",
        ],
    )
    .await;
    assert!(gw.url.starts_with("https://127.0.0.1:"), "{}", gw.url);
    let transport = HttpTransport::builder("gateway", &gw.url)
        .header("Authorization", format!("Bearer {ALICE_TOKEN}"))
        .tls_config(tls::client_trusting_test_ca())
        .build()
        .unwrap();
    let alice = Client::builder("gateway", transport)
        .timeout(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    assert_eq!(tool_names(&alice).await.len(), NOTES_TOOLS);
    lists_notes(&alice).await;
    let (presented, health) = tls_get(&gw, "/healthz").await;
    assert_eq!(presented, tls::der("server-a.pem").to_vec());
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    // Plain HTTP on the port: no HTTP answer.
    let mut plain = TcpStream::connect(gw.authority()).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");

    // The certificate is renewed (key first, then the chain).
    sb.write("tls.key", &tls::pem("server-b.key"));
    sb.write("tls.pem", &tls::pem("server-b.pem"));
    let start = std::time::Instant::now();
    while tls_get(&gw, "/healthz").await.0 != tls::der("server-b.pem").to_vec() {
        assert!(start.elapsed() < Duration::from_secs(30), "{}", gw.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    lists_notes(&alice).await;

    // A broken chain: reported, and the renewed one stays.
    sb.write("tls.pem", "-----BEGIN CERTIFICATE-----\nbroken\n");
    until_logged(&gw, "the TLS certificate was not reloaded").await;
    assert_eq!(
        tls_get(&gw, "/healthz").await.0,
        tls::der("server-b.pem").to_vec()
    );
    lists_notes(&alice).await;
    // A pair that does not go together, or TLS without --http, stops the
    // gateway before it serves, naming the files.
    let mismatched = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "127.0.0.1:0",
        "--tls-cert",
        &tls::fixture("server-a.pem").display().to_string(),
        "--tls-key",
        &tls::fixture("server-b.key").display().to_string(),
    ]);
    assert_eq!(mismatched.code, 1, "{mismatched:?}");
    assert!(
        mismatched.stderr.contains("server-a.pem")
            && mismatched.stderr.contains("cannot be served together"),
        "{mismatched:?}"
    );
    let stdio = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--tls-cert",
        "a.pem",
        "--tls-key",
        "a.key",
    ]);
    assert_eq!(stdio.code, 1, "{stdio:?}");
    assert!(stdio.stderr.contains("need --http"), "{stdio:?}");
    let (_, metrics) = tls_get(&gw, "/metrics").await;
    for result in ["applied", "rejected"] {
        assert!(
            metrics.contains(&format!(
                "switchboard_reloads_total{{file=\"tls\",result=\"{result}\"}}"
            )),
            "{metrics}"
        );
    }
}

// Under --no-watch the tokens file is not looked at on its own; SIGHUP
// reloads it.
#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_tokens_file_when_it_is_not_watched() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let tokens = format!("alice {ALICE_TOKEN}\n");
    let gw = serve_with_tokens(&sb, &cfg, &tokens, &["--no-watch"]).await;
    sb.write("tokens.txt", &format!("bob {BOB_TOKEN}\n"));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        admitted(&gw, ALICE_TOKEN),
        "the file was reloaded without SIGHUP"
    );
    let status = std::process::Command::new("kill")
        .args(["-HUP", &gw.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    until_admitted(&gw, BOB_TOKEN, true).await;
    until_admitted(&gw, ALICE_TOKEN, false).await;
}

// A non-loopback address without --auth refuses to start (exit 1, naming
// the fix); --insecure-no-auth starts it with a loud warning.
#[tokio::test(flavor = "multi_thread")]
async fn open_non_loopback_needs_insecure_no_auth() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let run = sb.run(&["--config", &cfg, "serve", "--http", "0.0.0.0:0"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("without authentication") && run.stderr.contains("--auth"),
        "{run:?}"
    );
    let mut cmd = sb.cmd(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "0.0.0.0:0",
        "--insecure-no-auth",
    ]);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = spawn(&mut cmd);
    let stderr = collect(child.stderr.take().unwrap());
    let text =
        tokio::task::spawn_blocking(move || wait_for(&stderr, "/mcp", Duration::from_secs(60)))
            .await
            .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.contains("WARNING") && text.contains("--insecure-no-auth"),
        "{text}"
    );
}

// /readyz: 503 naming a required server that is down; a server marked
// "required": false does not count.
#[tokio::test(flavor = "multi_thread")]
async fn readyz_names_required_servers_that_are_down() {
    let sb = Sandbox::new();
    let missing = sb.path().join("no-such-server");
    let missing = missing.to_str().unwrap();
    let cfg = sb.config(
        json!({
            "broken": {"command": missing},
            "optional": {"command": missing, "required": false}
        }),
        json!({}),
    );
    let gw = serve(&sb, cfg.to_str().unwrap(), &[], &[]).await;
    let (status, headers, body) = raw(&gw.authority(), "GET", "/readyz", &[], "");
    assert_eq!(status, 503, "{body}");
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let doc: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(doc["ready"], false);
    let names: Vec<&str> = doc["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["server"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["broken"], "{doc}");
    let (status, _, _) = raw(&gw.authority(), "GET", "/healthz", &[], "");
    assert_eq!(status, 200);
}

/// The gateway's config for the OAuth tests: notes, all allowed.
fn open_config(sb: &Sandbox) -> String {
    sb.config(
        json!({}),
        json!({"permissions": {"allow": ["mcp__notes"]}, "audit": "audit.jsonl"}),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

// OAuth JWTs: a token of the issuer for this gateway is accepted (its sub
// is the principal); a forged signature, an expired token and one for
// another audience are 401; a missing scope is 403; the Protected
// Resource Metadata names the issuer.
#[tokio::test(flavor = "multi_thread")]
async fn oauth_jwts_are_checked() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let issuer = auth.issuer();
    let gw = serve(
        &sb,
        &cfg,
        &[
            "--auth",
            "oauth",
            "--issuer",
            &issuer,
            "--scope",
            "mcp:tools",
        ],
        &[],
    )
    .await;
    let good = auth.mint_access_token(&gw.url, "mcp:tools", 300);
    let c = client(&gw, &good).await;
    assert_eq!(tool_names(&c).await.len(), NOTES_TOOLS);
    drop(c);
    call_is_audited_as(&gw, &good, sb.path(), "user-1").await;

    // Same claims and kid, another key.
    let forger = Signer::generate("as-key");
    let forged = forger.sign(&json!({
        "iss": issuer, "aud": gw.url, "sub": "root", "scope": "mcp:tools",
        "iat": now(), "exp": now() + 300,
    }));
    let expired = auth.mint_access_token(&gw.url, "mcp:tools", -600);
    let elsewhere = auth.mint_access_token("http://127.0.0.1:1/mcp", "mcp:tools", 300);
    // Signed by the issuer's own key, but not access tokens this gateway
    // takes: an exp of null (never expiring), a sub that is not a string
    // (not replaced by client_id), an ID token's typ, a crit header.
    let signed = |header: Value, changes: Value| {
        let mut claims = json!({
            "iss": issuer, "aud": gw.url, "sub": "user-1", "client_id": "minted",
            "scope": "mcp:tools", "iat": now(), "exp": now() + 300,
        });
        for (k, v) in changes.as_object().unwrap() {
            claims[k] = v.clone();
        }
        auth.sign_access_token(&header, &claims)
    };
    let never_expires = signed(json!({}), json!({"exp": null}));
    let numeric_sub = signed(json!({}), json!({"sub": 7}));
    let id_token_typ = signed(json!({"typ": "JWT"}), json!({}));
    let critical = signed(json!({"crit": ["x"], "x": 1}), json!({}));
    for (what, token) in [
        ("forged", &forged),
        ("expired", &expired),
        ("wrong audience", &elsewhere),
        ("exp null", &never_expires),
        ("sub not a string", &numeric_sub),
        ("typ JWT", &id_token_typ),
        ("crit", &critical),
    ] {
        let (status, headers, body) = list_raw(&gw, Some(&format!("Bearer {token}")));
        assert_eq!(status, 401, "{what}: {body}");
        let challenge = header(&headers, "www-authenticate").unwrap();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
    }
    let unscoped = auth.mint_access_token(&gw.url, "other", 300);
    let (status, headers, _) = list_raw(&gw, Some(&format!("Bearer {unscoped}")));
    assert_eq!(status, 403);
    assert!(
        header(&headers, "www-authenticate")
            .unwrap()
            .contains("insufficient_scope")
    );

    let (status, _, body) = raw(
        &gw.authority(),
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        "",
    );
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(doc["resource"], gw.url.as_str());
    assert_eq!(doc["authorization_servers"][0], issuer.as_str());
    let stderr = gw.stderr();
    assert!(!stderr.contains(&good), "{stderr}");
    drop(gw);

    // Issue 36: an issuer that types its access tokens JWT is served with
    // --accept-plain-jwt; the other checks stay.
    let gw = serve(
        &sb,
        &cfg,
        &["--auth", "oauth", "--issuer", &issuer, "--accept-plain-jwt"],
        &[],
    )
    .await;
    let claims = json!({
        "iss": issuer, "aud": gw.url, "sub": "user-1", "scope": "mcp:tools",
        "iat": now(), "exp": now() + 300,
    });
    let typed_jwt = auth.sign_access_token(&json!({"typ": "JWT"}), &claims);
    let c = client(&gw, &typed_jwt).await;
    assert_eq!(tool_names(&c).await.len(), NOTES_TOOLS);
    drop(c);
    let critical = auth.sign_access_token(&json!({"typ": "JWT", "crit": ["x"], "x": 1}), &claims);
    let (status, _, body) = list_raw(&gw, Some(&format!("Bearer {critical}")));
    assert_eq!(status, 401, "{body}");
}

// RS256 and key rotation end to end: the issuer starts with an ES256 key;
// the gateway fetches its JWK set for the first token. The issuer then
// rotates to an RS256 key with a new kid (the old key stays published):
// the gateway, which cached the old set, fetches it again for the unknown
// kid and accepts the RS256 token without a restart, and still accepts the
// old key's. A token signed by a key the issuer does not publish is 401
// with a challenge; tokens spraying made-up kids cause no further fetch
// (the refetch is rate-limited: one, then one per 30 s).
#[tokio::test(flavor = "multi_thread")]
async fn oauth_rs256_and_key_rotation() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let issuer = auth.issuer();
    let gw = serve(&sb, &cfg, &["--auth", "oauth", "--issuer", &issuer], &[]).await;
    let claims = |sub: &str| {
        json!({
            "iss": issuer, "aud": gw.url, "sub": sub, "scope": "mcp:tools",
            "iat": now(), "exp": now() + 300,
        })
    };
    let accepted = async |token: &str| {
        let c = client(&gw, token).await;
        let names = tool_names(&c).await;
        assert_eq!(names.len(), NOTES_TOOLS, "{names:?}");
    };

    let old = auth.mint_access_token(&gw.url, "mcp:tools", 300);
    accepted(&old).await;
    assert_eq!(auth.jwks_requests().len(), 1);

    let rsa = Signer::rs256_test_key("rsa-2026");
    let rotated = rsa.sign(&claims("after-rotation"));
    auth.rotate_key(rsa);
    accepted(&rotated).await;
    assert_eq!(auth.jwks_requests().len(), 2, "one fetch for the new kid");
    // Minted by the issuer's current key: RS256 now.
    let minted = auth.mint_access_token(&gw.url, "mcp:tools", 300);
    // (The same header: alg RS256, kid rsa-2026.)
    assert_eq!(minted.split('.').next(), rotated.split('.').next());
    accepted(&minted).await;
    accepted(&old).await;
    call_is_audited_as(&gw, &rotated, sb.path(), "after-rotation").await;
    assert_eq!(auth.jwks_requests().len(), 2, "known kids fetch nothing");

    // A key the issuer does not publish, under a new kid, then a spray of
    // made-up kids: all refused, and the JWK set is not fetched again.
    let mut refused = vec![Signer::generate("intruder").sign(&claims("intruder"))];
    refused.extend((0..20).map(|i| Signer::generate(&format!("spray-{i}")).sign(&claims("x"))));
    for token in &refused {
        let (status, headers, body) = list_raw(&gw, Some(&format!("Bearer {token}")));
        assert_eq!(status, 401, "{body}");
        let challenge = header(&headers, "www-authenticate").unwrap();
        assert!(
            challenge.starts_with("Bearer ") && challenge.contains("error=\"invalid_token\""),
            "{challenge}"
        );
        assert!(challenge.contains("resource_metadata="), "{challenge}");
    }
    assert_eq!(
        auth.jwks_requests().len(),
        2,
        "unknown kids within 30 s of the last refetch fetch nothing"
    );
    accepted(&rotated).await;
}

// Introspection (RFC 7662): an active token is accepted, anything the
// issuer does not vouch for is 401; the gateway authenticates as its
// client from the environment.
#[tokio::test(flavor = "multi_thread")]
async fn oauth_introspection() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    auth.add_client(TestClient::basic("gateway", "gateway-secret", &[]));
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let issuer = auth.issuer();
    let endpoint = format!("{issuer}/introspect");
    let gw = serve(
        &sb,
        &cfg,
        &[
            "--auth",
            "oauth",
            "--issuer",
            &issuer,
            "--introspection-url",
            &endpoint,
        ],
        &[
            ("SWITCHBOARD_INTROSPECTION_CLIENT_ID", "gateway"),
            ("SWITCHBOARD_INTROSPECTION_CLIENT_SECRET", "gateway-secret"),
        ],
    )
    .await;
    let good = auth.mint_access_token(&gw.url, "", 300);
    let c = client(&gw, &good).await;
    assert_eq!(tool_names(&c).await.len(), NOTES_TOOLS);
    drop(c);
    let forged = Signer::generate("as-key").sign(&json!({
        "iss": issuer, "aud": gw.url, "sub": "root", "exp": now() + 300,
    }));
    let (status, _, body) = list_raw(&gw, Some(&format!("Bearer {forged}")));
    assert_eq!(status, 401, "{body}");
    let introspected = auth
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/introspect"))
        .count();
    assert!(introspected >= 2, "{introspected}");

    // Without the client credentials, --introspection-url refuses to start.
    let run = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "127.0.0.1:0",
        "--auth",
        "oauth",
        "--issuer",
        &issuer,
        "--introspection-url",
        &endpoint,
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("SWITCHBOARD_INTROSPECTION_CLIENT_ID"),
        "{run:?}"
    );
}

/// Answers every approval question with "approve", recording it.
#[derive(Clone, Debug, Default)]
struct Approve {
    asked: Arc<Mutex<Vec<Value>>>,
}

impl InputHandler for Approve {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_form: true,
            ..InputSupport::NONE
        }
    }

    fn elicit(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        self.asked.lock().unwrap().push(params);
        Box::pin(async { Ok(json!({"action": "accept", "content": {"approve": true}})) })
    }
}

// A call the caller's principals rules refuse is denied without putting
// an approval question to its user; an allowed one is still asked about.
#[tokio::test(flavor = "multi_thread")]
async fn refused_calls_are_not_asked_about() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        json!({}),
        json!({"principals": {"ci-bot": {"allow": ["mcp__notes__list_notes"]}}}),
    );
    let tokens = sb.write("tokens.txt", &format!("ci-bot {CI_TOKEN}\n"));
    let gw = serve_asking(
        &sb,
        cfg.to_str().unwrap(),
        &["--auth", "token", "--tokens-file", tokens.to_str().unwrap()],
        &[],
    )
    .await;
    let answer = Approve::default();
    let transport = HttpTransport::builder("gateway", &gw.url)
        .header("Authorization", format!("Bearer {CI_TOKEN}"))
        .build()
        .unwrap();
    let bot = Client::builder("gateway", transport)
        .timeout(Duration::from_secs(60))
        .input_handler(answer.clone())
        .connect()
        .await
        .unwrap();
    let r = bot
        .call_tool("mcp__notes__read_note", args(json!({"id": "handbook"})))
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    assert!(answer.asked.lock().unwrap().is_empty());
    let r = bot
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(answer.asked.lock().unwrap().len(), 1);
}

// --drain: at SIGTERM /readyz turns 503 ("draining") so a balancer takes
// the replica out of rotation, while calls are still served; a second
// SIGTERM stops it at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_draining_gateway_is_not_ready_but_still_serves() {
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let mut gw = serve(&sb, &cfg, &["--drain", "600"], &[]).await;
    let (status, _, body) = raw(&gw.authority(), "GET", "/readyz", &[], "");
    assert_eq!(status, 200, "{body}");
    let term = || {
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &gw.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    term();
    let stderr = Arc::clone(&gw.stderr);
    tokio::task::spawn_blocking(move || wait_for(&stderr, "draining", Duration::from_secs(30)))
        .await
        .unwrap();
    let (status, _, body) = raw(&gw.authority(), "GET", "/readyz", &[], "");
    assert_eq!(status, 503, "{body}");
    let doc: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(doc, json!({"ready": false, "draining": true}));
    // Still serving: a client connects and calls a tool.
    lists_notes(&client_with(&gw, None).await).await;
    term();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = gw.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a second SIGTERM did not stop the draining gateway: {}",
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}: {}", gw.stderr());
}
