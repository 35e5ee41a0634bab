//! The console tests' fixture: a gateway serving the console over a
//! sandbox with a tokens file (alice a console principal, bot not), and
//! a signed-in session that fetches pages, reads their CSRF token and
//! posts forms with its cookie.

use std::sync::mpsc::Receiver;

use serde_json::{Value, json};

use crate::gateway_util::{Running, header, raw, rpc, serve_asking};
use crate::ops::mock_server;
use crate::util::Sandbox;

pub(crate) const ALICE: &str = "alice-console-token-0123456789";
pub(crate) const BOT: &str = "bot-console-token-0123456789ab";

/// A hostile tool description: markup that must stay text.
pub(crate) const HOSTILE: &str = "Lists things. <script>alert('pwned')</script><img src=https://attacker.invalid/p.png onerror=alert(1)>";

/// A sandbox with a tokens file (alice, bot) and a config: the notes demo,
/// a mock server listing the tools of `tools.json`, an audit log, alice a
/// console principal, bot narrowed and not one.
pub(crate) fn setup() -> (Sandbox, String) {
    let sb = Sandbox::new();
    write_tokens(&sb, &format!("alice {ALICE}\nbot {BOT}\n"));
    write_tools(&sb, HOSTILE);
    let cfg = console_config(&sb, json!({}));
    (sb, cfg.display().to_string())
}

/// Writes [`setup`]'s config (readable by its owner only) with `extra`
/// servers beside the notes demo and the mock server: its path.
pub(crate) fn console_config(sb: &Sandbox, extra: Value) -> std::path::PathBuf {
    let tools = sb.path().join("tools.json");
    let mut servers = json!({
        "mock": {"command": mock_server(), "args": ["--tools-file", tools.display().to_string(), "--watch-tools"]}
    });
    for (alias, entry) in extra.as_object().unwrap() {
        servers[alias] = entry.clone();
    }
    let cfg = sb.config(
        servers,
        json!({
            "audit": sb.path().join("audit.jsonl").display().to_string(),
            "principals": {
                "alice": {"console": true},
                "bot": {"deny": ["mcp__notes__search"]}
            }
        }),
    );
    set_private(&cfg);
    cfg
}

/// The console over a config whose approvals are announced to a local
/// webhook (the receiver of what it is told) and lapse after
/// `timeout_ms`; alice a console principal, bot not.
pub(crate) async fn console_notifying(timeout_ms: u64) -> (Console, Receiver<Value>) {
    let (sb, _) = setup();
    let (hook, announced) = receiver();
    let cfg = sb.config(
        json!({}),
        json!({
            "audit": sb.path().join("audit.jsonl").display().to_string(),
            "principals": {"alice": {"console": true}, "bot": {}},
            "approvals": {"notify": hook, "timeoutMs": timeout_ms}
        }),
    );
    set_private(&cfg);
    (
        Console::over(sb, cfg.display().to_string()).await,
        announced,
    )
}

/// Writes the tokens file (`NAME TOKEN` lines), readable by its owner
/// only.
pub(crate) fn write_tokens(sb: &Sandbox, text: &str) {
    let tokens = sb.write("tokens", text);
    set_private(&tokens);
}

pub(crate) fn set_private(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The mock server's tool listing: one tool, `lister`, described by
/// `description`.
pub(crate) fn write_tools(sb: &Sandbox, description: &str) {
    let tools = json!([{
        "name": "lister",
        "description": description,
        "inputSchema": {"type": "object"}
    }]);
    sb.write("tools.json", &tools.to_string());
}

/// `serve --auth token --tokens-file tokens --console` on `cfg`, with
/// `more` flags.
pub(crate) async fn console_with(sb: &Sandbox, cfg: &str, more: &[&str]) -> Running {
    let tokens = sb.path().join("tokens").display().to_string();
    let mut args = vec!["--auth", "token", "--tokens-file", &tokens, "--console"];
    args.extend_from_slice(more);
    serve_asking(sb, cfg, &args, &[]).await
}

/// The console served over [`setup`]'s sandbox (or another config of
/// it). Fields drop in order: the gateway before the sandbox.
pub(crate) struct Console {
    pub(crate) served: Running,
    pub(crate) sb: Sandbox,
}

impl Console {
    /// The console over [`setup`]'s config.
    pub(crate) async fn start() -> Console {
        let (sb, cfg) = setup();
        Console::over(sb, cfg).await
    }

    /// The console over `cfg` in `sb` (which has [`setup`]'s tokens).
    pub(crate) async fn over(sb: Sandbox, cfg: String) -> Console {
        let served = console_with(&sb, &cfg, &[]).await;
        Console { served, sb }
    }

    pub(crate) fn addr(&self) -> &str {
        &self.served.addr
    }

    /// Signs in with `token`.
    pub(crate) fn sign_in(&self, token: &str) -> Session {
        Session::sign_in(self.addr(), token)
    }
}

/// A signed-in console session.
pub(crate) struct Session {
    pub(crate) addr: String,
    /// `switchboard_console=ID`, as a `Cookie` header.
    pub(crate) cookie: String,
    /// The whole `Set-Cookie` header of the sign-in.
    pub(crate) set_cookie: String,
}

/// One HTTP answer: status, headers (lower-cased names), body.
pub(crate) type Answer = (u16, Vec<(String, String)>, String);

impl Session {
    /// Signs in at `addr` with `token` (asserting it worked).
    pub(crate) fn sign_in(addr: &str, token: &str) -> Session {
        let (status, headers, body) = raw(
            addr,
            "POST",
            "/console/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            &format!("token={token}"),
        );
        assert_eq!(status, 303, "{body}");
        assert_eq!(header(&headers, "location"), Some("/console/servers"));
        Session::from_answer(addr, &headers)
    }

    /// The session a sign-in answer's `Set-Cookie` opened.
    pub(crate) fn from_answer(addr: &str, headers: &[(String, String)]) -> Session {
        let set_cookie = header(headers, "set-cookie").unwrap().to_owned();
        let cookie = set_cookie.split(';').next().unwrap().trim().to_owned();
        Session {
            addr: addr.to_owned(),
            cookie,
            set_cookie,
        }
    }

    /// A page fetched with the session's cookie.
    pub(crate) fn get(&self, path: &str) -> Answer {
        raw(&self.addr, "GET", path, &[("Cookie", &self.cookie)], "")
    }

    /// The page at `path`, which must answer 200 to the session.
    pub(crate) fn page(&self, path: &str) -> String {
        let (status, _, page) = self.get(path);
        assert_eq!(status, 200, "{page}");
        page
    }

    /// The session's CSRF token, from the page at `path`.
    pub(crate) fn csrf(&self, path: &str) -> String {
        csrf_of(&self.page(path))
    }

    /// A form POSTed with the session's cookie (`form` as is).
    pub(crate) fn post(&self, path: &str, form: &str) -> Answer {
        self.post_with(path, &[], form)
    }

    /// [`Session::post`] with more headers.
    pub(crate) fn post_with(&self, path: &str, headers: &[(&str, &str)], form: &str) -> Answer {
        let mut all = vec![
            ("Cookie", self.cookie.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        all.extend_from_slice(headers);
        raw(&self.addr, "POST", path, &all, form)
    }

    /// Decides the approval at `path` (`approve` or `deny`) with the
    /// CSRF token of its page: the answer's status.
    pub(crate) fn decide(&self, path: &str, decision: &str) -> u16 {
        let csrf = self.csrf(path);
        let (status, _, _) = self.post(path, &format!("csrf={csrf}&decision={decision}"));
        status
    }
}

/// Waits (up to 60 s) until the webhook behind `announced` is told of an
/// approval, and signs alice in to the console at `addr`: what the
/// webhook was told, the approval page's path, alice's session.
pub(crate) fn announced_to_alice(
    addr: &str,
    announced: &Receiver<Value>,
) -> (Value, String, Session) {
    let payload = announced
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the webhook was not told");
    let path = path_of(payload["url"].as_str().unwrap());
    (payload, path, Session::sign_in(addr, ALICE))
}

/// The session's CSRF token, from the sign-out form of any page.
pub(crate) fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap().to_owned()
}

/// The path of an approval link.
pub(crate) fn path_of(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    format!("/{}", rest.split_once('/').unwrap().1)
}

/// The first string in `v` that is a console approval link.
pub(crate) fn approval_link(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if s.contains("/console/approve/") => Some(s.clone()),
        Value::Array(a) => a.iter().find_map(approval_link),
        Value::Object(o) => o.values().find_map(approval_link),
        _ => None,
    }
}

/// A local webhook receiver: the body of each POST it gets, as JSON.
pub(crate) fn receiver() -> (String, Receiver<Value>) {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/approvals", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            let _ = tx.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
        }
    });
    (url, rx)
}

/// The `_meta` of a 2026-07-28 client declaring `capabilities`.
pub(crate) fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"}
    })
}

/// One JSON-RPC `tools/call` with `params` POSTed to the gateway at
/// `addr` with `token`: the message back.
pub(crate) fn call_raw(addr: &str, token: &str, params: &Value) -> Value {
    rpc(addr, token, "tools/call", params)
}

/// The audit lines of `tool` in the sandbox's `audit.jsonl`.
pub(crate) fn audited(sb: &Sandbox, tool: &str) -> Vec<Value> {
    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap_or_default();
    audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["tool"] == tool)
        .collect()
}
