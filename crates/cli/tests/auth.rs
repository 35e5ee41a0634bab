//! `switchboard auth login|status|logout` and OAuth servers in the other
//! commands, end to end: the built binary against the test authorization
//! server and protected MCP endpoint of `switchboard-authkit` (in this
//! process, on 127.0.0.1), with the test playing the browser.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_authkit::{AuthServer, AuthServerConfig, ResourceConfig, ResourceServer};

use crate::util::{Run, Sandbox, browser_get, collect, wait_for};

const LOGIN_REASON: &str = "needs login: run `switchboard auth login secure`";

/// The test servers, served by their own runtime while the test blocks on
/// the binary.
struct Servers {
    auth: AuthServer,
    mcp: ResourceServer,
    _runtime: tokio::runtime::Runtime,
}

fn servers(auth: AuthServerConfig) -> Servers {
    let runtime = servers_runtime();
    let (auth, mcp) = runtime.block_on(async {
        let auth = AuthServer::start(auth).await;
        let mcp = ResourceServer::start(ResourceConfig::default(), &auth).await;
        (auth, mcp)
    });
    Servers {
        auth,
        mcp,
        _runtime: runtime,
    }
}

/// A runtime of its own for the test servers, which serve on it while
/// the test blocks on the binary.
fn servers_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `--json call mcp__secure__whoami --yes` with `config`.
fn whoami_cmd(sb: &Sandbox, config: &str) -> std::process::Command {
    sb.cmd(&[
        "--config",
        config,
        "--json",
        "call",
        "mcp__secure__whoami",
        "--yes",
    ])
}

/// Runs [`whoami_cmd`].
fn call_whoami(sb: &Sandbox, config: &str) -> Run {
    crate::util::run(whoami_cmd(sb, config))
}

/// A config with the protected server as `secure` (next to the notes
/// demo) and an audit log; returns its path.
fn config(sb: &Sandbox, mcp: &ResourceServer) -> String {
    let audit = sb.path().join("audit.jsonl");
    sb.config(
        json!({"secure": {"type": "http", "url": mcp.url()}}),
        json!({"audit": audit}),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

/// Runs `switchboard auth login secure` and plays the browser: reads the
/// authorization URL from its stderr, opens it (the authorization server
/// approves at once and redirects), and follows the redirect to the
/// binary's loopback listener. Logs at trace level.
fn log_in(sb: &Sandbox, config: &str, args: &[&str]) -> (Run, u16) {
    let mut target = vec!["secure"];
    target.extend_from_slice(args);
    log_in_as(sb, config, &target)
}

/// `switchboard auth login TARGET…`, the test playing the browser.
pub(crate) fn log_in_as(sb: &Sandbox, config: &str, target: &[&str]) -> (Run, u16) {
    let mut all = vec!["--config", config, "auth", "login"];
    all.extend_from_slice(target);
    let mut cmd = sb.cmd(&all);
    cmd.env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = crate::util::spawn(&mut cmd);
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let shown = wait_for(&stderr, "/authorize?", Duration::from_secs(60));
    let url = shown
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("http://") && l.contains("/authorize?"))
        .unwrap_or_else(|| panic!("no authorization URL in:\n{shown}"))
        .to_owned();
    let (status, location) = browser_get(&url);
    assert!((300..400).contains(&status), "{status} from {url}");
    let redirect = location.expect("the authorization server redirects");
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let (landed, _) = browser_get(&redirect);
    let status = child.wait().unwrap();
    // The pipes close when the process ends; let the readers drain them.
    std::thread::sleep(Duration::from_millis(100));
    let text = |buf: &std::sync::Arc<std::sync::Mutex<Vec<u8>>>| {
        String::from_utf8_lossy(&buf.lock().unwrap()).into_owned()
    };
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: text(&stdout),
        stderr: text(&stderr),
    };
    (run, landed)
}

/// The access token the store holds for the one logged-in server.
fn stored_access_token(store: &Path) -> String {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(store).unwrap()).unwrap();
    let entry = file["servers"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    let issuer = entry["current"].as_str().unwrap();
    let token = entry["tokens"][issuer]["access_token"].as_str().unwrap();
    assert!(token.len() > 20, "{token}");
    token.to_owned()
}

/// Before a login the server needs one (exit 3 everywhere, the command in
/// the reason); `auth login` prints the URL, takes the redirect on
/// 127.0.0.1 and saves the tokens in a 0600 file; then `auth status`
/// shows the login, `call` works, and the access token is in no output,
/// log line or audit line; `auth logout` revokes and forgets it.
#[test]
fn login_status_call_logout() {
    let s = servers(AuthServerConfig::default());
    let sb = Sandbox::new();
    let config = config(&sb, &s.mcp);
    let config = config.as_str();

    // Not logged in yet.
    let run = call_whoami(&sb, config);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.error_line()["error"]["kind"], "auth_required");
    let result = run.json();
    assert_eq!(result["isError"], true);
    let said = result["content"][0]["text"].as_str().unwrap();
    assert!(
        said.contains("Tell the user to run `switchboard auth login secure`"),
        "{said}"
    );
    let run = sb.run(&["--config", config, "--json", "servers"]);
    assert_eq!(run.code, 0, "{run:?}");
    let secure = run.json()[1].clone();
    assert_eq!(secure["alias"], "secure");
    assert_eq!(secure["status"], "needs_login", "{run:?}");
    assert_eq!(secure["reason"], LOGIN_REASON);
    assert_eq!(secure["authRequired"], true);
    let run = sb.run(&["--config", config, "servers"]);
    assert!(run.stdout.contains("needs login"), "{run:?}");
    let run = sb.run(&["--config", config, "tools"]);
    assert!(run.stderr.contains(LOGIN_REASON), "{run:?}");
    let run = sb.run(&["--config", config, "doctor"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stdout.contains(LOGIN_REASON), "{run:?}");
    let run = sb.run(&["--config", config, "auth", "status", "secure"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("not logged in"), "{run:?}");
    let url = s.mcp.url();
    let run = sb.run(&["inspect", "--http", &url]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("switchboard auth login"), "{run:?}");

    // The login.
    let (login, landed) = log_in(&sb, config, &[]);
    assert_eq!(login.code, 0, "{login:?}");
    assert_eq!(landed, 200);
    assert!(login.stdout.contains("Logged in to secure."), "{login:?}");
    assert!(
        login
            .stdout
            .contains(&format!("authorization server: {}", s.auth.issuer())),
        "{login:?}"
    );
    // SWITCHBOARD_NO_BROWSER is set: the URL is shown, no browser opened.
    assert!(login.stderr.contains("Open this URL"), "{login:?}");
    assert!(
        !login.stderr.contains("a browser is being opened"),
        "{login:?}"
    );
    let asked = s.auth.authorization_requests();
    assert_eq!(asked.len(), 1);
    let redirect_uri = asked[0].query_param("redirect_uri").unwrap();
    assert!(
        redirect_uri.starts_with("http://127.0.0.1:"),
        "{redirect_uri}"
    );

    let store = sb.state_dir().join("oauth.json");
    let token = stored_access_token(&store);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store), 0o600, "{:o}", mode(&store));
        assert_eq!(mode(&sb.state_dir()), 0o700);
    }

    let run = sb.run(&["--config", config, "--json", "auth", "status", "secure"]);
    assert_eq!(run.code, 0, "{run:?}");
    let status = run.json();
    assert_eq!(status[0]["alias"], "secure");
    assert_eq!(status[0]["loggedIn"], true);
    assert_eq!(status[0]["issuer"], s.auth.issuer());
    assert_eq!(status[0]["hasRefreshToken"], true);
    // Issue 17: which method the server uses (the test server has no DPoP).
    assert_eq!(status[0]["method"], "authorization code, bearer");
    let run = sb.run(&["--config", config, "auth", "status"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("logged in at"), "{run:?}");
    assert!(run.stdout.contains("METHOD"), "{run:?}");
    assert!(run.stdout.contains(&store.display().to_string()), "{run:?}");

    // The call, with every log line on.
    let mut cmd = whoami_cmd(&sb, config);
    cmd.env("RUST_LOG", "trace");
    let call = crate::util::run(cmd);
    assert_eq!(call.code, 0, "{call:?}");
    let said = call.json()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(said.contains("sub="), "{said}");
    let sent = s.mcp.mcp_requests().pop().unwrap();
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    let doctor = sb.run(&["--config", config, "doctor"]);
    assert_eq!(doctor.code, 0, "{doctor:?}");
    assert!(doctor.stdout.contains("auth: OAuth login at"), "{doctor:?}");
    // `inspect` of the same URL uses the login too.
    let inspect = sb.run(&["inspect", "--http", &url]);
    assert_eq!(inspect.code, 0, "{inspect:?}");
    assert!(inspect.stdout.contains("whoami"), "{inspect:?}");

    // The token is nowhere but in the store and the header.
    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap();
    for (what, text) in [
        ("login stdout", &login.stdout),
        ("login stderr", &login.stderr),
        ("call stdout", &call.stdout),
        ("call stderr", &call.stderr),
        ("doctor stdout", &doctor.stdout),
        ("inspect stdout", &inspect.stdout),
        ("audit log", &audit),
    ] {
        assert!(!text.contains(&token), "the access token is in the {what}");
    }
    // The trace logs did run (so the check above looked at something).
    assert!(
        call.stderr.contains("TRACE") || call.stderr.contains("DEBUG"),
        "{call:?}"
    );

    // Logout revokes at the authorization server and forgets the tokens.
    let run = sb.run(&["--config", config, "auth", "logout", "secure"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Logged out of secure"), "{run:?}");
    assert_eq!(s.auth.revocation_requests().len(), 1);
    let file = std::fs::read_to_string(&store).unwrap();
    assert!(!file.contains(&token));
    let run = sb.run(&["--config", config, "auth", "status", "secure"]);
    assert_eq!(run.code, 3, "{run:?}");
    let run = call_whoami(&sb, config);
    assert_eq!(run.code, 3, "{run:?}");
    let run = sb.run(&["--config", config, "auth", "logout", "secure"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("secure had no login"), "{run:?}");
}

/// A login the user refuses at the authorization server ends with exit 3
/// and the reason; nothing is stored.
#[test]
fn a_refused_login_exits_3() {
    let s = servers(AuthServerConfig {
        deny: true,
        ..AuthServerConfig::default()
    });
    let sb = Sandbox::new();
    let config = config(&sb, &s.mcp);
    let (login, _) = log_in(&sb, &config, &["--timeout", "60"]);
    assert_eq!(login.code, 3, "{login:?}");
    assert!(login.stderr.contains("login to secure failed"), "{login:?}");
    assert!(login.stderr.contains("access_denied"), "{login:?}");
    assert!(s.auth.token_requests().is_empty());
    let run = sb.run(&["--config", &config, "--json", "auth", "status"]);
    assert_eq!(run.code, 0, "{run:?}");
    let secure = run.json()[0].clone();
    assert_eq!(secure["alias"], "secure");
    assert_eq!(secure["loggedIn"], false);
}

/// `auth` on an alias that is not configured, or does not use OAuth, is a
/// usage error naming the reason.
#[test]
fn auth_needs_a_configured_oauth_server() {
    let sb = Sandbox::new();
    let config = sb.config(
        json!({
            "off": {"url": "http://127.0.0.1:9/mcp", "oauth": false},
            "token": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}}
        }),
        json!({}),
    );
    let config = config.to_str().unwrap();
    for (alias, said) in [
        ("nope", "no server is configured as \"nope\""),
        ("notes", "it is a stdio server"),
        ("off", "turns OAuth off"),
        ("token", "static Authorization header"),
    ] {
        let run = sb.run(&["--config", config, "auth", "login", alias]);
        assert_eq!(run.code, 1, "{alias}: {run:?}");
        assert!(run.stderr.contains(said), "{alias}: {run:?}");
    }
    let run = sb.run(&["--config", config, "auth", "logout", "notes"]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = sb.run(&["--config", config, "auth", "status"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("OAuth off"), "{run:?}");
    assert!(
        run.stdout.contains("static Authorization header"),
        "{run:?}"
    );
}

/// Issue 17, enterprise-managed authorization: `auth login --idp corp` is
/// an OpenID Connect login at the identity provider; afterwards the server
/// whose `oauth` names it works with no login of its own, and `auth status`
/// shows the identity provider's login. Before it, the server needs the
/// `--idp` login.
#[test]
fn login_at_the_identity_provider_serves_the_server_behind_it() {
    let runtime = servers_runtime();
    let (idp, auth, mcp) = runtime.block_on(async {
        let idp = AuthServer::start(AuthServerConfig {
            token_exchange: true,
            ..AuthServerConfig::default()
        })
        .await;
        idp.add_client(switchboard_authkit::TestClient {
            client_id: "sb-at-idp".into(),
            secret: None,
            method: "none".into(),
            redirect_uris: vec!["http://127.0.0.1/callback".into()],
            jwt_key: None,
        });
        let auth = AuthServer::start(AuthServerConfig {
            assertion_keys: vec![idp.public_key()],
            ..AuthServerConfig::default()
        })
        .await;
        auth.add_client(switchboard_authkit::TestClient::basic("sb", "s3cret", &[]));
        let mcp = ResourceServer::start(ResourceConfig::default(), &auth).await;
        (idp, auth, mcp)
    });
    let sb = Sandbox::new();
    let config = sb.config(
        json!({"secure": {"type": "http", "url": mcp.url(),
            "oauth": {"idp": "corp", "clientId": "sb", "clientSecret": "s3cret"}}}),
        json!({"identityProviders": {"corp": {"issuer": idp.issuer(), "clientId": "sb-at-idp"}}}),
    );
    let config = config.to_str().unwrap();

    let run = sb.run(&["--config", config, "--json", "servers"]);
    let secure = run.json()[1].clone();
    assert_eq!(secure["status"], "needs_login", "{run:?}");
    assert_eq!(
        secure["reason"],
        "needs login: run `switchboard auth login --idp corp`"
    );
    let run = sb.run(&["--config", config, "auth", "login", "--idp", "nope"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("known: corp"), "{run:?}");

    let (login, landed) = log_in_as(&sb, config, &["--idp", "corp"]);
    assert_eq!(login.code, 0, "{login:?}");
    assert_eq!(landed, 200);
    assert!(
        login
            .stdout
            .contains("Logged in at identity provider corp."),
        "{login:?}"
    );
    assert!(login.stdout.contains("secure"), "{login:?}");
    assert!(auth.authorization_requests().is_empty());

    let run = sb.run(&["--config", config, "auth", "status"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("idp:corp"), "{run:?}");
    assert!(
        run.stdout
            .contains(&format!("logged in at {}", idp.issuer())),
        "{run:?}"
    );

    let run = call_whoami(&sb, config);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(auth.authorization_requests().is_empty(), "no second login");
    drop(runtime);
}
