//! Each caller's identity at the servers behind a gateway (issue 41):
//! `"identity": "exchange"` (RFC 8693 at the server's authorization
//! server) and `"identity": "per-principal"` (the principal's own
//! credentials), against authkit's authorization server and protected MCP
//! endpoints, which record the verified claims of every token they see;
//! and `switchboard auth login ALIAS --principal NAME`, the OAuth login
//! per-principal uses when the config holds no credentials.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};
use switchboard_authkit::jwt::{PublicKey, Signer, now};
use switchboard_authkit::{
    AuthServer, AuthServerConfig, ResourceConfig, ResourceServer, TestClient,
};
use switchboard_client::Client;
use switchboard_wire::CallToolResult;

use crate::auth::log_in_as;
use crate::gateway_util::{client, serve};
use crate::util::{Run, Sandbox};

/// The token-exchange grant type (RFC 8693).
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// A file only its owner may read (secret references refuse others).
fn private_file(sb: &Sandbox, name: &str, text: &str) -> String {
    let path = sb.write(name, text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The text of a tool result.
fn text_of(r: &CallToolResult) -> String {
    serde_json::to_value(r).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `sub` of each accepted `tools/call` at `rs`, with its `aud` and
/// the `act` naming who exchanged it.
fn calls_seen(rs: &ResourceServer) -> Vec<(String, String, Value)> {
    seen_for(rs, "tools/call")
}

/// The `whoami` tool of the server mounted as `alias`, called through
/// `c` (the gateway's client of one caller).
async fn whoami(c: &Client, alias: &str) -> CallToolResult {
    c.call_tool(
        &format!("mcp__{alias}__whoami"),
        Some(serde_json::Map::new()),
    )
    .await
    .unwrap()
}

/// [`calls_seen`] for the requests of `method`.
fn seen_for(rs: &ResourceServer, method: &str) -> Vec<(String, String, Value)> {
    rs.accepted()
        .into_iter()
        .filter(|(m, _)| m == method)
        .map(|(_, c)| {
            (
                c["sub"].as_str().unwrap_or_default().to_owned(),
                c["aud"].as_str().unwrap_or_default().to_owned(),
                c["act"].clone(),
            )
        })
        .collect()
}

// Alice's calls reach the exchange server as Alice's, the CI bot's as the
// bot's, each with a token for that server exchanged by the gateway's
// client (act = sb); the callers' own tokens never reach it; one exchange
// per caller (cached until expiry). Per-principal: alice's own
// credentials are used for alice only, and the bot, which has none, is
// told what to add. The audit lines name the identity used. Prompts got
// and resources read through the gateway arrive as the caller too, for
// both kinds of identity.
#[tokio::test(flavor = "multi_thread")]
async fn each_caller_reaches_the_servers_as_itself() {
    let workload = Signer::generate("workload");
    let auth = AuthServer::start(AuthServerConfig {
        token_exchange: true,
        assertion_keys: vec![PublicKey::Es256(workload.public_key())],
        ..AuthServerConfig::default()
    })
    .await;
    auth.add_client(TestClient::basic("sb", "s3cret", &[]));
    let catalog = ResourceConfig {
        catalog: true,
        ..ResourceConfig::default()
    };
    let exchange = ResourceServer::start(catalog.clone(), &auth).await;
    let personal = ResourceServer::start(catalog, &auth).await;
    let issuer = auth.issuer();

    let sb = Sandbox::new();
    // The gateway's own login (for the mount's listing): the JWT-bearer
    // grant with a workload assertion, no person involved.
    let assertion = workload.sign(&json!({
        "iss": "workload", "sub": "gateway", "aud": issuer,
        "iat": now(), "exp": now() + 600,
    }));
    let assertion = private_file(&sb, "assertion.jwt", &assertion);
    let oauth =
        json!({"clientId": "sb", "clientSecret": "s3cret", "assertion": {"file": assertion}});
    let alice_personal = auth.mint_access_token_for("alice", &personal.resource(), "", 600);
    let alice_secret = private_file(&sb, "alice-personal", &alice_personal);
    let cfg = sb.config(
        json!({
            "exchange": {"type": "http", "url": exchange.url(), "oauth": oauth, "identity": "exchange"},
            "personal": {"type": "http", "url": personal.url(), "oauth": oauth, "identity": "per-principal"},
        }),
        json!({
            "permissions": {"allow": ["mcp__exchange", "mcp__personal"]},
            "audit": "audit.jsonl",
            "principals": {"alice": {"credentials": {"personal": {"secret": format!("file:{alice_secret}")}}}},
        }),
    );
    let cfg = cfg.to_str().unwrap();
    let gw = serve(&sb, cfg, &["--auth", "oauth", "--issuer", &issuer], &[]).await;

    let alice_token = auth.mint_access_token_for("alice", &gw.url, "", 600);
    let bot_token = auth.mint_access_token_for("ci-bot", &gw.url, "", 600);
    let alice = client(&gw, &alice_token).await;
    let bot = client(&gw, &bot_token).await;

    for (who, c) in [("alice", &alice), ("ci-bot", &bot), ("alice", &alice)] {
        let r = whoami(c, "exchange").await;
        assert!(!r.is_error(), "{r:?} {}", gw.stderr());
        assert!(text_of(&r).contains(&format!("\nsub={who} ")), "{r:?}");
    }
    let seen = calls_seen(&exchange);
    let subjects: Vec<&str> = seen.iter().map(|(s, _, _)| s.as_str()).collect();
    assert_eq!(subjects, ["alice", "ci-bot", "alice"]);
    for (_, aud, act) in &seen {
        assert_eq!(aud, &exchange.resource());
        assert_eq!(act["sub"], "sb");
    }
    // No request reached the server with a caller's own token.
    for request in exchange.requests().iter().chain(personal.requests().iter()) {
        let authorization = request.header("authorization").unwrap_or_default();
        assert!(
            !authorization.contains(&alice_token),
            "alice's token passed through"
        );
        assert!(
            !authorization.contains(&bot_token),
            "the bot's token passed through"
        );
    }
    // One exchange per caller: alice's second call reused hers.
    let exchanges: Vec<String> = auth
        .token_requests()
        .iter()
        .filter(|r| r.form_param("grant_type") == Some(TOKEN_EXCHANGE))
        .map(|r| r.form_param("subject_token").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(exchanges, [alice_token.clone(), bot_token.clone()]);

    // Per-principal: alice's credentials, for alice only.
    let r = whoami(&alice, "personal").await;
    assert!(!r.is_error(), "{r:?}");
    assert!(text_of(&r).contains("\nsub=alice "), "{r:?}");
    let r = whoami(&bot, "personal").await;
    assert!(r.is_error(), "{r:?}");
    let text = text_of(&r);
    assert!(
        text.contains("principal ci-bot has no credentials for personal")
            && text.contains("run `switchboard auth login personal --principal ci-bot`")
            && text.contains("or add principals.ci-bot.credentials.personal"),
        "{text}"
    );
    let subjects: Vec<String> = calls_seen(&personal)
        .into_iter()
        .map(|(s, _, _)| s)
        .collect();
    assert_eq!(subjects, ["alice"]);

    prompts_and_resources_as_the_caller(&alice, &bot, &exchange, &personal).await;

    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap();
    for identity in ["exchange:alice", "exchange:ci-bot", "principal:alice"] {
        assert!(
            audit.contains(&format!("\"identity\":\"{identity}\"")),
            "{audit}"
        );
    }
    assert!(!audit.contains(&alice_token) && !audit.contains(&alice_personal));
    let refused = audit
        .lines()
        .find(|l| l.contains("\"principal\":\"ci-bot\"") && l.contains("mcp__personal__whoami"))
        .unwrap();
    assert!(
        refused.contains("\"outcome\":\"auth_required\""),
        "{refused}"
    );
}

/// `prompts/get` and `resources/read` of the `whoami` prompt and resource
/// of `exchange` (by alice, then the bot) and `personal` (by alice)
/// through the gateway: each answer names its caller, and each server saw
/// the caller's subject, for its audience.
async fn prompts_and_resources_as_the_caller(
    alice: &switchboard_client::Client,
    bot: &switchboard_client::Client,
    exchange: &ResourceServer,
    personal: &ResourceServer,
) {
    let resources = alice.list_resources(None).await.unwrap();
    let uri_of = |alias: &str| {
        let uris: Vec<String> = resources
            .resources
            .iter()
            .map(|r| r.uri.clone())
            .filter(|u| u.contains("whoami"))
            .collect();
        uris.iter()
            .find(|u| u.contains(alias))
            .cloned()
            .unwrap_or_else(|| panic!("no whoami resource of {alias} in {uris:?}"))
    };
    for (alias, who, caller, rs) in [
        ("exchange", "alice", alice, exchange),
        ("exchange", "ci-bot", bot, exchange),
        ("personal", "alice", alice, personal),
    ] {
        let prompt = caller
            .get_prompt(&format!("mcp__{alias}__whoami"), None)
            .await
            .unwrap_or_else(|e| panic!("prompts/get of {alias} by {who}: {e}"));
        let text = serde_json::to_string(&prompt).unwrap();
        assert!(text.contains(&format!("sub={who} ")), "{text}");
        let read = caller
            .read_resource(&uri_of(alias))
            .await
            .unwrap_or_else(|e| panic!("resources/read of {alias} by {who}: {e}"));
        let text = serde_json::to_string(&read).unwrap();
        assert!(text.contains(&format!("sub={who} ")), "{text}");
        for method in ["prompts/get", "resources/read"] {
            let (sub, aud, _) = seen_for(rs, method).pop().unwrap();
            assert_eq!((sub.as_str(), aud), (who, rs.resource()), "{method}");
        }
    }
    let subjects = |rs: &ResourceServer, method: &str| -> Vec<String> {
        seen_for(rs, method)
            .into_iter()
            .map(|(s, _, _)| s)
            .collect()
    };
    for method in ["prompts/get", "resources/read"] {
        assert_eq!(subjects(exchange, method), ["alice", "ci-bot"], "{method}");
        assert_eq!(subjects(personal, method), ["alice"], "{method}");
    }
}

/// `switchboard --config CONFIG ARGS…` in `sb`.
fn run(sb: &Sandbox, config: &str, args: &[&str]) -> Run {
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    sb.run(&all)
}

// `auth login ALIAS --principal NAME` keeps an OAuth login for that
// principal beside the server's own: the gateway (mounted with its own
// login, user-1) sends alice's calls to a per-principal server with
// alice's tokens; bob, who has no login, is told the command to run;
// `auth status` and `auth logout` take --principal too, and logging alice
// out leaves the gateway's own login.
#[tokio::test(flavor = "multi_thread")]
async fn a_principals_own_login_carries_its_calls() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let catalog = ResourceConfig {
        catalog: true,
        ..ResourceConfig::default()
    };
    let personal = ResourceServer::start(catalog, &auth).await;
    let sb = Sandbox::new();
    let cfg = sb.config(
        json!({"personal": {"type": "http", "url": personal.url(), "identity": "per-principal"}}),
        json!({"permissions": {"allow": ["mcp__personal"]}, "audit": "audit.jsonl"}),
    );
    let cfg = cfg.to_str().unwrap().to_owned();
    // The login runs the binary and plays the browser: off the runtime's
    // threads, which serve the authorization server meanwhile.
    let login = |who: &str, target: &[&str]| {
        auth.log_in_as(who);
        let (run, landed) = tokio::task::block_in_place(|| log_in_as(&sb, &cfg, target));
        assert_eq!((run.code, landed), (0, 200), "{run:?}");
        run
    };
    login("user-1", &["personal"]);
    let logged = login("alice", &["personal", "--principal", "alice"]);
    assert!(
        logged
            .stdout
            .contains("Logged in to personal as principal alice."),
        "{logged:?}"
    );
    let status = run(&sb, &cfg, &["--json", "auth", "status"]);
    assert_eq!(status.code, 0, "{status:?}");
    let views: Value = serde_json::from_str(&status.stdout).unwrap();
    let principals: Vec<&Value> = views
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["principal"])
        .collect();
    assert!(principals.contains(&&json!("alice")), "{views}");
    let alice_status = principal_status(&sb, &cfg, "alice");
    assert_eq!(alice_status.code, 0, "{alice_status:?}");
    let bob_status = principal_status(&sb, &cfg, "bob");
    assert_eq!(bob_status.code, 3, "{bob_status:?}");
    assert!(
        bob_status
            .stderr
            .contains("switchboard auth login personal --principal bob"),
        "{bob_status:?}"
    );

    // A name no caller can have is refused before anything is stored.
    let bad = run(
        &sb,
        &cfg,
        &["auth", "login", "personal", "--principal", "al#ice"],
    );
    assert_eq!(bad.code, 1, "{bad:?}");
    assert!(
        bad.stderr.contains("a principal's name is one word"),
        "{bad:?}"
    );

    let issuer = auth.issuer();
    let gw = serve(&sb, &cfg, &["--auth", "oauth", "--issuer", &issuer], &[]).await;
    let alice_token = auth.mint_access_token_for("alice", &gw.url, "", 600);
    let bob_token = auth.mint_access_token_for("bob", &gw.url, "", 600);
    let alice = client(&gw, &alice_token).await;
    let bob = client(&gw, &bob_token).await;
    let r = whoami(&alice, "personal").await;
    assert!(!r.is_error(), "{r:?} {}", gw.stderr());
    assert!(text_of(&r).contains("\nsub=alice "), "{r:?}");
    let prompt = alice
        .get_prompt("mcp__personal__whoami", None)
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&prompt)
            .unwrap()
            .contains("sub=alice "),
        "{prompt:?}"
    );
    let r = whoami(&bob, "personal").await;
    assert!(r.is_error(), "{r:?}");
    let text = text_of(&r);
    assert!(
        text.contains("needs login: principal bob has no credentials for personal")
            && text.contains("run `switchboard auth login personal --principal bob`"),
        "{text}"
    );
    // The server saw alice for her call and her prompt, the gateway's own
    // login (user-1) for the mount's listing, and nothing from bob.
    let subjects: Vec<String> = calls_seen(&personal)
        .into_iter()
        .chain(seen_for(&personal, "prompts/get"))
        .map(|(s, _, _)| s)
        .collect();
    assert_eq!(subjects, ["alice", "alice"]);
    assert!(
        seen_for(&personal, "tools/list")
            .iter()
            .all(|(s, _, _)| s == "user-1")
    );
    assert!(personal.accepted().iter().all(|(_, c)| c["sub"] != "bob"));
    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap();
    assert!(
        audit.contains("\"identity\":\"principal:alice\""),
        "{audit}"
    );
    drop(gw);

    // Logged out: alice's login is gone, the gateway's own stays.
    let out = run(
        &sb,
        &cfg,
        &["auth", "logout", "personal", "--principal", "alice"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("Logged out of personal as principal alice"),
        "{out:?}"
    );
    let gone = principal_status(&sb, &cfg, "alice");
    assert_eq!(gone.code, 3, "{gone:?}");
    let own = run(&sb, &cfg, &["auth", "status", "personal"]);
    assert_eq!(own.code, 0, "{own:?}");
}

/// `auth status personal --principal WHO` with `cfg`.
fn principal_status(sb: &Sandbox, cfg: &str, who: &str) -> Run {
    run(sb, cfg, &["auth", "status", "personal", "--principal", who])
}

// A bad identity and credentials for an unknown server are config errors
// naming the key and what to write.
#[test]
fn identity_settings_are_checked() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        json!({
            "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "identity": "caller"},
            "off": {"type": "http", "url": "http://127.0.0.1:1/mcp", "oauth": false, "identity": "exchange"},
            "local": {"command": "true", "identity": "per-principal"},
        }),
        json!({"principals": {"alice": {"credentials": {"wbe": "x"}}}}),
    );
    let run = sb.run(&["--config", cfg.to_str().unwrap(), "config", "check"]);
    assert_ne!(run.code, 0);
    for needle in [
        "unknown identity \"caller\"",
        "token exchange happens at the server's OAuth authorization server",
        "a caller's identity can only be carried to an HTTP server",
        "no server is named \"wbe\"",
    ] {
        assert!(
            run.stderr.contains(needle) || run.stdout.contains(needle),
            "{needle}: {} {}",
            run.stdout,
            run.stderr
        );
    }
}
