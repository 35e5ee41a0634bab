//! The web console (`serve --http … --console`): no route without the
//! flag, only console principals, the session cookie's attributes, CSRF
//! tokens and cross-site refusals on every change, hostile server text
//! shown as text, and a changed tool accepted with who accepted it in the
//! audit log. Real gateways on 127.0.0.1:0, plain HTTP exchanges.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport};

use serde_json::{Value, json};

use crate::console_util::{
    ALICE, BOT, Console, Session, announced_to_alice, audited, console_config, console_notifying,
    console_with, csrf_of, path_of, setup, write_tools,
};
use crate::gateway_util::{Running, gateway_client, header, raw, serve_asking};
use crate::ops::mock_server;
use crate::util::{Sandbox, empty_port, run};

#[tokio::test]
async fn without_the_flag_there_is_no_console() {
    let (sb, cfg) = setup();
    let tokens = sb.path().join("tokens").display().to_string();
    let served = serve_asking(
        &sb,
        &cfg,
        &["--auth", "token", "--tokens-file", &tokens],
        &[],
    )
    .await;
    for path in ["/console", "/console/servers", "/console/assets/console.js"] {
        let (status, _, _) = raw(
            &served.addr,
            "GET",
            path,
            &[("Authorization", &format!("Bearer {ALICE}"))],
            "",
        );
        assert_eq!(status, 404, "{path}");
    }
    let (status, _, _) = raw(
        &served.addr,
        "POST",
        "/console/login",
        &[],
        &format!("token={ALICE}"),
    );
    assert_eq!(status, 404);
}

#[test]
fn the_console_needs_authentication() {
    let (sb, cfg) = setup();
    let run = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--http",
        "127.0.0.1:0",
        "--console",
    ]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("--console needs --auth"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn only_console_principals_may_open_it() {
    let console = Console::start().await;
    let addr = console.addr();
    // Nobody yet: the sign-in page, 401.
    let (status, _, body) = raw(addr, "GET", "/console/servers", &[], "");
    assert_eq!(status, 401);
    assert!(body.contains("action=\"/console/login\""), "{body}");
    // A token that is not a console principal's: 403 with a bearer
    // header, and no session at sign-in.
    let (status, _, body) = raw(
        addr,
        "GET",
        "/console/servers",
        &[("Authorization", &format!("Bearer {BOT}"))],
        "",
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("console"), "{body}");
    let (status, headers, _) = raw(addr, "POST", "/console/login", &[], &format!("token={BOT}"));
    assert_eq!(status, 403);
    assert!(header(&headers, "set-cookie").is_none());
    // A wrong token: 401, no session.
    let (status, headers, _) = raw(
        addr,
        "POST",
        "/console/login",
        &[],
        "token=not-a-token-at-all-000000",
    );
    assert_eq!(status, 401);
    assert!(header(&headers, "set-cookie").is_none());
    // A forged session cookie is no session.
    let forged = Session {
        addr: addr.to_owned(),
        cookie: "switchboard_console=00ff".into(),
        set_cookie: String::new(),
    };
    let (status, _, _) = forged.get("/console/servers");
    assert_eq!(status, 401);
    // The console principal, with its bearer header or its session.
    let (status, _, _) = raw(
        addr,
        "GET",
        "/console/servers",
        &[("Authorization", &format!("Bearer {ALICE}"))],
        "",
    );
    assert_eq!(status, 200);
}

#[tokio::test]
async fn signing_in_sets_a_strict_session_cookie_and_pages_carry_a_strict_csp() {
    let console = Console::start().await;
    let alice = console.sign_in(ALICE);
    let set = &alice.set_cookie;
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age="] {
        assert!(set.contains(attribute), "{set}");
    }
    // Plain HTTP: not `Secure` (the browser would drop it).
    assert!(!set.contains("Secure"), "{set}");
    assert!(
        alice.cookie.len() > 40,
        "a long random id: {}",
        alice.cookie
    );
    let (status, headers, body) = alice.get("/console/servers");
    assert_eq!(status, 200);
    let csp = header(&headers, "content-security-policy").unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    // The demo's notes server is up, with its tools.
    assert!(body.contains("data-server=\"notes\""), "{body}");
    // No inline script: only the embedded file.
    assert!(!body.contains("<script>"), "{body}");
    let (status, headers, js) = alice.get("/console/assets/console.js");
    assert_eq!(status, 200);
    assert!(
        header(&headers, "content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(js.contains("EventSource"));
}

#[tokio::test]
async fn changes_need_the_sessions_csrf_token_and_the_same_site() {
    let console = Console::start().await;
    let addr = console.addr();
    let alice = console.sign_in(ALICE);
    let csrf = alice.csrf("/console/tools");
    // No token, a wrong one: refused, nothing accepted.
    for body in [
        "name=mcp__mock__lister".to_owned(),
        "name=mcp__mock__lister&csrf=0000".to_owned(),
        format!("name=mcp__mock__lister&csrf={}", "a".repeat(csrf.len())),
    ] {
        let (status, _, text) = alice.post("/console/tools/accept", &body);
        assert_eq!(status, 403, "{body}: {text}");
        assert!(text.contains("CSRF"), "{text}");
    }
    // The right token from another site or origin: refused too.
    for (name, value) in [
        ("Origin", "http://evil.example"),
        ("Origin", "null"),
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Site", "same-site"),
    ] {
        let (status, _, text) =
            alice.post_with("/console/logout", &[(name, value)], &format!("csrf={csrf}"));
        assert_eq!(status, 403, "{name}: {value}: {text}");
        assert!(text.contains("other"), "{text}");
    }
    // A sign-in from another site is refused as well (login CSRF).
    let (status, headers, _) = raw(
        addr,
        "POST",
        "/console/login",
        &[("Origin", "http://evil.example")],
        &format!("token={ALICE}"),
    );
    assert_eq!(status, 403);
    assert!(header(&headers, "set-cookie").is_none());
    // The session still stands; with the right token and its own origin,
    // signing out works and ends it.
    let (status, _, _) = alice.get("/console/servers");
    assert_eq!(status, 200);
    let own = format!("http://{addr}");
    let (status, headers, _) = alice.post_with(
        "/console/logout",
        &[("Origin", &own), ("Sec-Fetch-Site", "same-origin")],
        &format!("csrf={csrf}"),
    );
    assert_eq!(status, 303);
    assert!(
        header(&headers, "set-cookie")
            .unwrap()
            .contains("Max-Age=0")
    );
    let (status, _, _) = alice.get("/console/servers");
    assert_eq!(status, 401);
}

#[tokio::test]
async fn hostile_server_text_is_escaped_and_a_restricted_principal_sees_only_its_tools() {
    let console = Console::start().await;
    let alice = console.sign_in(ALICE);
    let page = alice.page("/console/tools");
    assert!(page.contains("data-tool=\"mcp__mock__lister\""), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"),
        "{page}"
    );
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(!page.contains("<img src="), "{page}");
    assert!(page.contains("data-tool=\"mcp__notes__search\""));
    // Why the gate asks, in its own words.
    assert!(
        page.contains("<td class=\"why\">no permission rule allows"),
        "{page}"
    );
    // As bot sees it: the tool its rules deny is not there.
    let (_, _, page) = alice.get("/console/tools?principal=bot");
    assert!(!page.contains("data-tool=\"mcp__notes__search\""), "{page}");
    assert!(
        page.contains("data-tool=\"mcp__notes__list_notes\""),
        "{page}"
    );
    // A filter value from the URL is escaped too.
    let (_, _, page) = alice.get("/console/calls?tool=%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    assert!(page.contains("value=\"&lt;script&gt;"), "{page}");
    assert!(!page.contains("<script>alert"), "{page}");
}

#[tokio::test]
async fn a_changed_tool_shows_its_diff_and_is_accepted_with_who_accepted_in_the_audit_log() {
    let console = Console::start().await;
    let alice = Arc::new(console.sign_in(ALICE));
    // The server changes the tool's description.
    write_tools(&console.sb, "Lists things, and now also deletes them.");
    let page = tokio::task::spawn_blocking({
        let alice = Arc::clone(&alice);
        move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                let (_, _, page) = alice.get("/console/tools");
                if page.contains("data-pin=\"mcp__mock__lister\"") {
                    return page;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the change never showed: {page}"
                );
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        }
    })
    .await
    .unwrap();
    // Side by side: approved on the left, current on the right, both
    // escaped.
    assert!(page.contains("<table class=\"diff\">"), "{page}");
    assert!(page.contains("now also deletes them"), "{page}");
    assert!(page.contains("&lt;script&gt;"), "{page}");
    let csrf = csrf_of(&page);
    let (status, headers, text) = alice.post(
        "/console/tools/accept",
        &format!("csrf={csrf}&name=mcp__mock__lister"),
    );
    assert_eq!(status, 303, "{text}");
    assert_eq!(header(&headers, "location"), Some("/console/tools"));
    let (_, _, page) = alice.get("/console/tools");
    assert!(!page.contains("data-pin=\"mcp__mock__lister\""), "{page}");
    let audit = std::fs::read_to_string(console.sb.path().join("audit.jsonl")).unwrap();
    let line: serde_json::Value = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["method"] == "pins/accept")
        .unwrap_or_else(|| panic!("no acceptance in {audit}"));
    assert_eq!(line["tool"], "mcp__mock__lister");
    assert_eq!(line["principal"], "alice");
    assert_eq!(line["decidedBy"], "human");
    // The Calls page reads the same log: its chain is intact.
    let (_, _, calls) = alice.get("/console/calls");
    assert!(calls.contains("Audit chain intact"), "{calls}");
}

/// The browser driver's folder and the browser, or why they are not here
/// (`npm ci` in `tests/console`, and Debian's `chromium`; CI installs
/// both).
fn browser() -> Result<(PathBuf, String), String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/console");
    if !dir
        .join("node_modules/puppeteer-core/package.json")
        .is_file()
    {
        return Err("tests/console/node_modules is missing (run `npm ci` in tests/console)".into());
    }
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        return Err(format!("no browser at {chromium} (set CHROMIUM)"));
    }
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => Ok((dir, chromium)),
        _ => Err("node is not installed".into()),
    }
}

#[tokio::test]
#[allow(clippy::print_stderr)] // the screenshots' paths, and why a run was skipped
async fn in_a_browser_the_servers_are_live_tools_are_filtered_and_hostile_script_never_runs() {
    let (dir, chromium) = match browser() {
        Ok(found) => found,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let (sb, _) = setup();
    // The demo's outage (archive: nothing listens at its URL), and a
    // server the browser stops mid-test (it writes its pid first).
    let pid_file = sb.path().join("victim.pid");
    let tools = sb.path().join("tools.json");
    let victim = format!(
        "echo $$ > '{}'; exec '{}' --tools-file '{}'",
        pid_file.display(),
        mock_server(),
        tools.display()
    );
    let cfg = console_config(
        &sb,
        json!({
            "archive": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", empty_port())},
            "victim": {"command": "/bin/sh", "args": ["-c", victim]}
        }),
    );
    let served = console_with(&sb, &cfg.display().to_string(), &[]).await;
    let shots = sb.path().join("screenshots");
    let mut node = Command::new("node");
    node.arg(dir.join("browse.mjs"))
        .args([
            format!("http://{}", served.addr),
            ALICE.to_owned(),
            "bot".to_owned(),
            "mcp__notes__search".to_owned(),
            pid_file.display().to_string(),
            "victim".to_owned(),
            shots.display().to_string(),
            tools.display().to_string(),
        ])
        .env("CHROMIUM", chromium)
        .current_dir(sb.path())
        .stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || run(node))
        .await
        .unwrap();
    let last = out.stdout.lines().last().unwrap_or_default().to_owned();
    let report: Value = serde_json::from_str(&last).unwrap_or_else(|e| {
        panic!(
            "no report from the browser ({e}):\n{}\n{}",
            out.stdout, out.stderr
        )
    });
    assert_eq!(report["ok"], json!(true), "{report:#}\n{}", served.stderr());
    assert!(
        report["archive"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );
    let screenshots = report["screenshots"].as_array().unwrap();
    assert_eq!(screenshots.len(), 9, "{report:#}");
    assert_eq!(report["accepted"], json!(true));
    for path in screenshots {
        let path = path.as_str().unwrap();
        assert!(std::fs::metadata(path).is_ok_and(|m| m.len() > 0), "{path}");
        eprintln!("screenshot: {path}");
    }
    // Kept for a look after the run when asked.
    if let Ok(keep) = std::env::var("CONSOLE_SCREENSHOTS") {
        std::fs::create_dir_all(&keep).unwrap();
        for path in screenshots {
            let path = std::path::Path::new(path.as_str().unwrap());
            std::fs::copy(
                path,
                std::path::Path::new(&keep).join(path.file_name().unwrap()),
            )
            .unwrap();
        }
    }
}

/// A client that can open URLs but cannot show forms; each URL question
/// is handed to `decide` (a person in the console), then answered
/// "accept" (the person is done).
#[derive(Clone)]
struct OpensUrls {
    asked: Arc<Mutex<Vec<Value>>>,
    decide: Arc<dyn Fn(String) + Send + Sync>,
}

impl std::fmt::Debug for OpensUrls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpensUrls").finish_non_exhaustive()
    }
}

impl InputHandler for OpensUrls {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_url: true,
            ..InputSupport::NONE
        }
    }

    fn elicit(
        &self,
        _cx: InputContext,
        params: switchboard_wire::types::ElicitRequestParams,
    ) -> BoxFuture<'_, Result<switchboard_wire::types::ElicitResult, InputError>> {
        let params = Value::from(params);
        self.asked.lock().unwrap().push(params.clone());
        let decide = Arc::clone(&self.decide);
        Box::pin(async move {
            let url = params["url"].as_str().unwrap_or_default().to_owned();
            tokio::task::spawn_blocking(move || decide(url))
                .await
                .unwrap();
            Ok(switchboard_wire::types::ElicitResult::accept(None))
        })
    }
}

// A call the gate asks about, from a client that can only open URLs: the
// question is a link to the console's page for that call; a console
// principal approves it once there and the call completes. The link then
// leads nowhere (single use), a forged one never did, and a decision
// cannot be made twice.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_by_url_is_decided_in_the_console_once_and_the_call_completes() {
    let console = Console::start().await;
    let addr = console.addr().to_owned();
    let links: Arc<Mutex<Vec<String>>> = Arc::default();
    let handler = OpensUrls {
        asked: Arc::default(),
        decide: Arc::new({
            let addr = addr.clone();
            let links = Arc::clone(&links);
            move |url: String| {
                let path = path_of(&url);
                links.lock().unwrap().push(path.clone());
                // Not signed in: the sign-in page, which comes back here.
                let (status, _, page) = raw(&addr, "GET", &path, &[], "");
                assert_eq!(status, 401);
                assert!(
                    page.contains(&format!("name=\"next\" value=\"{path}\"")),
                    "{page}"
                );
                let (status, headers, _) = raw(
                    &addr,
                    "POST",
                    "/console/login",
                    &[],
                    &format!("token={ALICE}&next={path}"),
                );
                assert_eq!(status, 303);
                assert_eq!(header(&headers, "location"), Some(path.as_str()));
                let alice = Session::from_answer(&addr, &headers);
                let page = alice.page(&path);
                assert!(
                    page.contains("<dd id=\"tool\">mcp__notes__read_note</dd>"),
                    "{page}"
                );
                assert!(page.contains("<dd id=\"caller\">bot</dd>"), "{page}");
                // The exact arguments, escaped.
                assert!(page.contains("&lt;b&gt;vpn&lt;/b&gt;"), "{page}");
                let csrf = csrf_of(&page);
                // Without the CSRF token: refused, undecided.
                let (status, _, _) = alice.post(&path, "decision=approve");
                assert_eq!(status, 403);
                let (status, headers, _) =
                    alice.post(&path, &format!("csrf={csrf}&decision=approve"));
                assert_eq!(status, 303);
                assert_eq!(header(&headers, "location"), Some(path.as_str()));
                // Decided once only.
                let (status, _, _) = alice.post(&path, &format!("csrf={csrf}&decision=deny"));
                assert_eq!(status, 409);
            }
        }),
    };
    let bot = gateway_client(&format!("http://{addr}/mcp"), Some(BOT))
        .input_handler(handler.clone())
        .connect()
        .await
        .unwrap();
    let r = bot
        .call_tool(
            "mcp__notes__read_note",
            json!({"id": "<b>vpn</b>"}).as_object().cloned(),
        )
        .await
        .unwrap();
    // Approved: the call ran (the note does not exist; the server said so).
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["mode"], "url");
    let text = format!("{r:?}");
    assert!(!text.contains("approval"), "{text}");
    assert!(!text.contains("declined"), "{text}");
    let ran = audited(&console.sb, "mcp__notes__read_note")
        .into_iter()
        .find(|l| l["decision"] == "allow")
        .unwrap_or_else(|| panic!("the call did not run"));
    assert_eq!(ran["principal"], "bot");
    // Used: the link leads nowhere now, and a forged one never did.
    let path = links.lock().unwrap()[0].clone();
    let alice = console.sign_in(ALICE);
    let (status, _, _) = alice.get(&path);
    assert_eq!(status, 404);
    let forged = format!("/console/approve/{}", "ab".repeat(32));
    let (status, _, page) = alice.get(&forged);
    assert_eq!(status, 404, "{page}");
    let csrf = alice.csrf("/console/tools");
    let (status, _, _) = alice.post(&forged, &format!("csrf={csrf}&decision=approve"));
    assert_eq!(status, 409);
    // The Calls page: the call's line (its argument names and digest,
    // never the value), the per-tool figures, the chart; filters apply.
    let (_, _, calls) = alice.get("/console/calls?tool=mcp__notes__read_note");
    assert!(calls.contains("<svg id=\"chart\""), "{calls}");
    assert!(calls.contains("<td>bot</td>"), "{calls}");
    assert!(
        !calls.contains("vpn"),
        "argument values are never shown: {calls}"
    );
    assert!(calls.contains("<table id=\"stats\">"), "{calls}");
    // A small chart of its own for the tool, after the figures.
    let charts = calls
        .find("<div id=\"tool-charts\">")
        .unwrap_or_else(|| panic!("no per-tool charts: {calls}"));
    assert!(charts > calls.find("<table id=\"stats\">").unwrap());
    assert!(
        calls[charts..].contains("<h3 data-tool=\"mcp__notes__read_note\">"),
        "{calls}"
    );
    assert!(
        calls[charts..].contains("<svg id=\"chart-tool-0\""),
        "{calls}"
    );
    let (_, _, none) = alice.get("/console/calls?principal=nobody");
    assert!(!none.contains("<td>bot</td>"), "{none}");
    // The next call is asked about anew.
    let _ = bot
        .call_tool(
            "mcp__notes__read_note",
            json!({"id": "<b>vpn</b>"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_eq!(handler.asked.lock().unwrap().len(), 2);
}

// A call the gate asks about, from a client that supports no elicitation
// at all: with `approvals.notify`, the call is announced to the local
// webhook and waits; a console principal approves it on the linked page
// and the call runs. Another one nobody decides is denied at
// `approvals.timeoutMs`.
#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_approval_waits_for_the_console_then_runs_or_lapses() {
    let (console, announced) = console_notifying(3000).await;
    let addr = console.addr().to_owned();
    let bot = gateway_client(&format!("http://{addr}/mcp"), Some(BOT))
        .connect()
        .await
        .unwrap();
    let person = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || {
            let (payload, path, alice) = announced_to_alice(&addr, &announced);
            let page = alice.page(&path);
            // Waiting calls are listed too.
            let (_, _, list) = alice.get("/console/approvals");
            assert!(list.contains(&path), "{list}");
            let csrf = csrf_of(&page);
            let (status, _, _) = alice.post(&path, &format!("csrf={csrf}&decision=approve"));
            assert_eq!(status, 303);
            (payload, announced)
        }
    });
    let r = bot
        .call_tool("mcp__notes__list_notes", json!({}).as_object().cloned())
        .await
        .unwrap();
    let (payload, announced) = person.await.unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(payload["event"], "approval.requested");
    assert_eq!(payload["tool"], "mcp__notes__list_notes");
    assert_eq!(payload["server"], "notes");
    assert_eq!(payload["caller"], "bot");
    assert_eq!(payload["argumentsSha256"].as_str().unwrap().len(), 64);
    // Nobody decides the next one: denied when the wait lapses.
    let r = bot
        .call_tool("mcp__notes__list_notes", json!({}).as_object().cloned())
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    assert!(format!("{r:?}").contains("Nobody approved"), "{r:?}");
    assert!(announced.recv_timeout(Duration::from_secs(5)).is_ok());
    let lines = audited(&console.sb, "mcp__notes__list_notes");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["decision"], "allow");
    assert_eq!(lines[0]["decidedBy"], "human");
    assert_eq!(lines[1]["decision"], "deny");
}

/// Starts `switchboard console` (`cmd`), waits until its stderr shows
/// `until`: the process (killed when dropped, failed test or not), its
/// stderr so far, and the one-time sign-in link it printed.
async fn local_console(cmd: &mut Command, until: &'static str) -> (Running, String, String) {
    use crate::util::{collect, spawn, wait_for};
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = spawn(cmd);
    let stderr = collect(child.stderr.take().unwrap());
    let served = Running {
        url: String::new(),
        addr: String::new(),
        stderr: Arc::clone(&stderr),
        child,
    };
    let text =
        tokio::task::spawn_blocking(move || wait_for(&stderr, until, Duration::from_secs(60)))
            .await
            .unwrap();
    let url = text
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("once="))
        .unwrap()
        .to_owned();
    (served, text, url)
}

// `switchboard console` on the built-in demo: a loopback URL whose
// one-time token signs a browser in once; the demo's servers are there.
#[tokio::test]
async fn the_local_console_signs_in_once_with_its_printed_link() {
    let sb = Sandbox::new();
    let mut cmd = sb.cmd(&["console"]);
    let (_served, _, url) = local_console(&mut cmd, "/console/login?once=").await;
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let path = path_of(&url);
    let (status, headers, _) = raw(&addr, "GET", &path, &[], "");
    assert_eq!(status, 303);
    let set = header(&headers, "set-cookie").unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let local = Session::from_answer(&addr, &headers);
    // Used: the same link signs nobody in again, nor does a guess.
    let (status, headers, _) = raw(&addr, "GET", &path, &[], "");
    assert_eq!(status, 401);
    assert!(header(&headers, "set-cookie").is_none());
    // Nothing without the session.
    let (status, _, _) = raw(&addr, "GET", "/console/servers", &[], "");
    assert_eq!(status, 401);
    let page = local.page("/console/servers");
    assert!(page.contains("signed in as <b>local</b>"), "{page}");
    for server in ["notes", "tickets"] {
        assert!(
            page.contains(&format!("data-server=\"{server}\"")),
            "{page}"
        );
    }
}

// The Evals page shows an uploaded `eval --json` report: pass rates per
// category and each failing case, escaped; uploading needs the CSRF
// token, and what is not a report is refused.
#[tokio::test]
async fn an_uploaded_eval_report_shows_rates_and_failures() {
    let console = Console::start().await;
    let alice = console.sign_in(ALICE);
    let page = alice.page("/console/evals");
    assert!(page.contains("No eval report yet"), "{page}");
    let csrf = csrf_of(&page);
    let report = json!({"report": {
        "model": "mock", "score": 0.5, "ok": false,
        "categories": [
            {"category": "happy", "cases": 2, "runs": 2, "passed": 1, "errors": 0, "rate": 0.5, "min": 0.9, "weight": 2.0, "ok": false}
        ],
        "failures": [
            {"id": "printer-<script>x</script>", "category": "happy", "run": 1, "expected": "mcp__notes__search", "got": "none", "why": "picked nothing"}
        ]
    }});
    let form = |body: &str| {
        let mut out = String::new();
        for (k, v) in [("csrf", csrf.as_str()), ("report", body)] {
            out.push_str(&format!(
                "{k}={}&",
                v.bytes().map(|b| format!("%{b:02X}")).collect::<String>()
            ));
        }
        out
    };
    let (status, _, _) = alice.post("/console/evals", &format!("report={}", report));
    assert_eq!(status, 403, "no CSRF token");
    let (status, _, text) = alice.post("/console/evals", &form("{\"not\": \"a report\"}"));
    assert_eq!(status, 400, "{text}");
    let (status, _, _) = alice.post("/console/evals", &form(&report.to_string()));
    assert_eq!(status, 303);
    let (_, _, page) = alice.get("/console/evals");
    assert!(page.contains("<td>happy</td><td>50%</td>"), "{page}");
    assert!(
        page.contains("printer-&lt;script&gt;x&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("picked nothing"), "{page}");
    assert!(!page.contains("<script>x"), "{page}");
}

// The official TypeScript client, declaring URL elicitation only, calls a
// tool the gate asks about: it is asked with the console's approval link
// for that call, alice approves it in the console over HTTP (session and
// CSRF token), and the client's retry completes the call.
#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_client_gets_a_console_link_and_its_retry_completes() {
    use std::io::{BufRead as _, Write as _};
    let Some(dir) = crate::ts_client::driver_or_skip() else {
        return;
    };
    let console = Console::start().await;
    let addr = console.addr().to_owned();
    let mut node = Command::new("node");
    node.arg(dir.join("approve.mjs"))
        .args([
            &format!("http://{addr}/mcp"),
            BOT,
            "mcp__notes__read_note",
            r#"{"id":"vpn"}"#,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = crate::util::spawn(&mut node);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let report = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        let asked: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let link = asked["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{asked}"))
            .to_owned();
        assert!(
            link.starts_with(&format!("http://{addr}/console/approve/")),
            "{link}"
        );
        let path = path_of(&link);
        let alice = Session::sign_in(&addr, ALICE);
        let page = alice.page(&path);
        assert!(page.contains("<dd id=\"caller\">bot</dd>"), "{page}");
        let csrf = csrf_of(&page);
        let (status, _, _) = alice.post(&path, &format!("csrf={csrf}&decision=approve"));
        assert_eq!(status, 303);
        // Decided: the person is done; the client retries.
        stdin.write_all(b"\n").unwrap();
        let last = lines.next().unwrap().unwrap();
        serde_json::from_str::<Value>(&last).unwrap_or_else(|e| panic!("{e}: {last}"))
    })
    .await
    .unwrap();
    let _ = child.wait();
    assert_eq!(report["ok"], json!(true), "{report:#}");
    let text = report["result"]["text"].as_str().unwrap_or_default();
    assert!(!text.contains("approval"), "{report:#}");
    assert!(!text.contains("declined"), "{report:#}");
    let ran = audited(&console.sb, "mcp__notes__read_note")
        .into_iter()
        .find(|l| l["decision"] == "allow")
        .unwrap_or_else(|| panic!("the call did not run"));
    assert_eq!(ran["principal"], "bot");
}

// `switchboard console` hands its sign-in URL to `$BROWSER` (the URL is
// printed too); with `--no-open` it only prints it.
#[tokio::test]
async fn the_local_console_opens_the_browser_unless_told_not_to() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = Sandbox::new();
    let opened = sb.path().join("opened.txt");
    let browser = sb.write(
        "browser.sh",
        &format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{}.tmp' && mv '{0}.tmp' '{0}'\n",
            opened.display()
        ),
    );
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    for no_open in [false, true] {
        let _ = std::fs::remove_file(&opened);
        let mut cmd = sb.cmd(if no_open {
            &["console", "--no-open"][..]
        } else {
            &["console"][..]
        });
        cmd.env_remove("SWITCHBOARD_NO_BROWSER")
            .env("BROWSER", &browser);
        let (_served, text, url) = local_console(&mut cmd, "Ctrl-C stops it").await;
        if no_open {
            assert!(!text.contains("opened in the browser"), "{text}");
            assert!(!opened.exists(), "--no-open opened the browser");
        } else {
            assert!(text.contains("opened in the browser"), "{text}");
            // The opener runs by itself: wait (bounded) for its file.
            let start = std::time::Instant::now();
            while !opened.exists() {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "$BROWSER never ran"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(std::fs::read_to_string(&opened).unwrap(), url);
        }
    }
}

// `eval --save-report FILE` writes the report `--json` prints, and
// `serve --console-evals FILE` shows it on the Evals page (read at each
// view) until a report is uploaded.
#[tokio::test]
async fn a_saved_eval_report_is_shown_from_its_file() {
    let (sb, cfg) = setup();
    let saved = sb.path().join("report.json");
    let run = sb.run(&[
        "eval",
        &crate::eval::demo_set(),
        "--selector",
        "never",
        "--json",
        "--save-report",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(file, run.json(), "the file holds what --json printed");
    let served = console_with(&sb, &cfg, &["--console-evals", saved.to_str().unwrap()]).await;
    let alice = Session::sign_in(&served.addr, ALICE);
    let page = alice.page("/console/evals");
    assert!(page.contains("<table id=\"categories\">"), "{page}");
    assert!(page.contains("<td>trap</td><td>100%</td>"), "{page}");
    assert!(page.contains("<td>happy</td><td>0%</td>"), "{page}");
    assert!(page.contains("<table id=\"failures\">"), "{page}");
    // Read at each view: a file that is no report says so.
    std::fs::write(&saved, "{\"not\": \"a report\"}").unwrap();
    let (status, _, page) = alice.get("/console/evals");
    assert_eq!(status, 500, "{page}");
    assert!(page.contains("not an eval report"), "{page}");
}
