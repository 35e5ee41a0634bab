//! Each caller's identity at the servers behind a gateway (issue 41):
//! `"identity": "exchange"` (RFC 8693 at the server's authorization
//! server) and `"identity": "per-principal"` (the principal's own
//! credentials), against authkit's authorization server and protected MCP
//! endpoints, which record the verified claims of every token they see.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};
use switchboard_authkit::jwt::{PublicKey, Signer, now};
use switchboard_authkit::{
    AuthServer, AuthServerConfig, ResourceConfig, ResourceServer, TestClient,
};

use crate::gateway_util::{client, serve};
use crate::util::Sandbox;

/// The token-exchange grant type (RFC 8693).
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// A file only its owner may read (secret references refuse others).
fn private_file(sb: &Sandbox, name: &str, text: &str) -> String {
    let path = sb.write(name, text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The text of a tool result.
fn text_of(r: &switchboard_wire::CallToolResult) -> String {
    serde_json::to_value(r).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `sub` of each accepted `tools/call` at `rs`, with its `aud` and
/// the `act` naming who exchanged it.
fn calls_seen(rs: &ResourceServer) -> Vec<(String, String, Value)> {
    rs.accepted()
        .into_iter()
        .filter(|(method, _)| method == "tools/call")
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
// told what to add. The audit lines name the identity used.
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
    let exchange = ResourceServer::start(ResourceConfig::default(), &auth).await;
    let personal = ResourceServer::start(ResourceConfig::default(), &auth).await;
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
        let r = c
            .call_tool("mcp__exchange__whoami", Some(serde_json::Map::new()))
            .await
            .unwrap();
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
    let r = alice
        .call_tool("mcp__personal__whoami", Some(serde_json::Map::new()))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert!(text_of(&r).contains("\nsub=alice "), "{r:?}");
    let r = bot
        .call_tool("mcp__personal__whoami", Some(serde_json::Map::new()))
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    let text = text_of(&r);
    assert!(
        text.contains("principal ci-bot has no credentials for personal: add principals.ci-bot.credentials.personal"),
        "{text}"
    );
    let subjects: Vec<String> = calls_seen(&personal)
        .into_iter()
        .map(|(s, _, _)| s)
        .collect();
    assert_eq!(subjects, ["alice"]);

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
