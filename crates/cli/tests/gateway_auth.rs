//! `serve --http` with inbound authorization: named bearer tokens (and
//! their file reloaded while serving), callers' limits, OAuth access tokens
//! (JWT checked with the issuer's keys, or introspection) and
//! per-principal rules. The gateway as a service (TLS, `/readyz`,
//! draining, non-loopback refusal) is in `gateway_http`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_authkit::jwt::{Signer, now};
use switchboard_authkit::{AuthServer, AuthServerConfig, TestClient};
use switchboard_client::{InputSupport, input_handler_fn};

use crate::gateway_util::*;
use crate::util::Sandbox;

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
        &gw.addr,
        "POST",
        &format!("/mcp?access_token={ALICE_TOKEN}"),
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(status, 400);

    // Health and readiness answer without a token.
    let (status, _, body) = raw(&gw.addr, "GET", "/healthz", &[], "");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = raw(&gw.addr, "GET", "/readyz", &[], "");
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
    let run = serve_exit(
        &sb,
        &cfg,
        &["--auth", "token", "--tokens-file", short.to_str().unwrap()],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("shorter than"), "{run:?}");
    assert!(!run.stderr.contains("tooshort"), "{run:?}");
    let run = serve_exit(&sb, &cfg, &["--auth", "token"]);
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
    let tokens_file = tokens.to_str().unwrap();
    let out = serve_exit(
        &sb,
        &cfg,
        &["--auth", "token", "--tokens-file", tokens_file],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("refusing the tokens file"), "{out:?}");
    assert!(out.stderr.contains("chmod go-w"), "{out:?}");

    chmod(&tokens, 0o600);
    let key = sb.write("state.key", &"k".repeat(40));
    chmod(&key, 0o620);
    let env = format!("alice {ALICE_TOKEN}");
    let args = ["--auth", "token", "--state-key-file", key.to_str().unwrap()];
    let mut cmd = serve_cmd(&sb, &cfg, "127.0.0.1:0", &args);
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
        &["--auth", "token", "--tokens-file", tokens_file],
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
    let (status, _, metrics) = raw(&gw.addr, "GET", "/metrics", &[], "");
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
        &gw.addr,
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
    let flags = [
        "--auth",
        "oauth",
        "--issuer",
        &issuer,
        "--introspection-url",
        &endpoint,
    ];
    let gw = serve(
        &sb,
        &cfg,
        &flags,
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
    let run = serve_exit(&sb, &cfg, &flags);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("SWITCHBOARD_INTROSPECTION_CLIENT_ID"),
        "{run:?}"
    );
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
    // Answers every approval question with "approve", recording it.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let answer = input_handler_fn(InputSupport::FORM, move |_, q| {
        seen.lock().unwrap().push(q.params());
        async move { q.answer_from(json!({"action": "accept", "content": {"approve": true}})) }
    });
    let bot = gateway_client(&gw.url, Some(CI_TOKEN))
        .input_handler(answer)
        .connect()
        .await
        .unwrap();
    let r = bot
        .call_tool("mcp__notes__read_note", args(json!({"id": "handbook"})))
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    assert!(asked.lock().unwrap().is_empty());
    let r = bot
        .call_tool("mcp__notes__list_notes", args(json!({})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(asked.lock().unwrap().len(), 1);
}
