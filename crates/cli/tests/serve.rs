//! `serve`: the gateway, driven by `switchboard-client` as an upstream
//! agent would.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, StdioConfig, StdioTransport};

use crate::gateway_util::{client_with, serve, serve_cmd};
use crate::util::{Sandbox, bin, empty_port, run, spawn_serving};

/// notes, with `list_notes` allowed and everything else asked about; the
/// audit log in `audit.jsonl`.
fn config(sb: &Sandbox) -> String {
    sb.config(
        json!({}),
        json!({"permissions": {"allow": ["mcp__notes__list_notes"]}, "audit": "audit.jsonl"}),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

async fn gateway(sb: &Sandbox, extra: &[&str], input: Option<Answer>) -> Client {
    let mut args = vec![
        "--config".to_owned(),
        config(sb),
        "serve".into(),
        "--stdio".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let cfg = StdioConfig::new("gateway", bin())
        .args(args)
        .cwd(sb.path())
        .env("XDG_CONFIG_HOME", sb.path().join("xdg"));
    let transport = StdioTransport::spawn(cfg).await.unwrap();
    let mut builder = Client::builder("gateway", transport).timeout(Duration::from_secs(60));
    if let Some(answer) = input {
        builder = builder.input_handler(answer);
    }
    builder.connect().await.unwrap()
}

fn object(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_stdio_exposes_the_governed_table() {
    let sb = Sandbox::new();
    let client = gateway(&sb, &["--yes"], None).await;
    let tools = client.list_all_tools().await.unwrap().items;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp__notes__list_notes",
            "mcp__notes__read_note",
            "mcp__notes__search",
            // Added by the host: the notes demo serves a skill.
            "mcp__switchboard__load_skill",
            "mcp__switchboard__read_skill_file",
        ]
    );
    let search = &tools[2];
    assert!(
        search
            .description
            .as_deref()
            .unwrap()
            .starts_with("[from notes]")
    );
    assert_eq!(search.input_schema["required"], json!(["query"]));
    // Untrusted annotations are not passed on.
    assert!(search.annotations.is_none());
    let result = client
        .call_tool("mcp__notes__read_note", object(json!({"id": "handbook"})))
        .await
        .unwrap();
    assert!(!result.is_error());
    // The host's budget applies through the gateway.
    assert!(
        result
            .joined_text()
            .contains("1448 characters not shown here (characters 5333 to 6781)")
    );
    // A schema violation is refused by the gateway before the host.
    let bad = client
        .call_tool("mcp__notes__read_note", object(json!({"id": 5})))
        .await
        .unwrap();
    assert!(bad.is_error(), "{bad:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_denies_a_question_when_no_one_upstream_can_answer() {
    let sb = Sandbox::new();
    let client = gateway(&sb, &[], None).await;
    let denied = client
        .call_tool("mcp__notes__search", object(json!({"query": "printer"})))
        .await
        .unwrap();
    assert!(denied.is_error());
    assert!(
        denied.joined_text().contains("cannot ask"),
        "{}",
        denied.joined_text()
    );
    // An allowed tool needs no one.
    let ok = client
        .call_tool("mcp__notes__list_notes", None)
        .await
        .unwrap();
    assert!(!ok.is_error(), "{ok:?}");
    client.close().await;
}

/// Answers the gateway's approval question, recording each one.
use switchboard_testkit::fixtures::FormAnswers as Answer;

#[tokio::test(flavor = "multi_thread")]
async fn serve_asks_the_upstream_user_through_elicitation() {
    let sb = Sandbox::new();
    for approve in [true, false] {
        let answer = Answer::approving(approve);
        let client = gateway(&sb, &[], Some(answer.clone())).await;
        let result = client
            .call_tool("mcp__notes__search", object(json!({"query": "printer"})))
            .await
            .unwrap();
        client.close().await;
        let asked = answer.questions();
        assert_eq!(asked.len(), 1, "{asked:?}");
        let message = asked[0]["message"].as_str().unwrap();
        assert!(message.contains("mcp__notes__search"), "{message}");
        assert!(message.contains("\"query\": \"printer\""), "{message}");
        if approve {
            assert!(!result.is_error(), "{result:?}");
            assert!(result.joined_text().contains("standup"));
        } else {
            assert!(result.is_error());
            assert!(result.joined_text().contains("declined"), "{result:?}");
        }
        // One gate evaluation per round, in the host: the question handed
        // back (`asked`), then the answered call.
        let audit: Vec<Value> = std::fs::read_to_string(sb.path().join("audit.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let round = &audit[audit.len() - 2..];
        assert_eq!(audit.len(), if approve { 2 } else { 4 }, "{audit:?}");
        assert_eq!(round[0]["outcome"], "asked");
        assert_eq!(round[0]["decidedBy"], "upstream");
        assert_eq!(round[1]["decidedBy"], "human");
        assert_eq!(round[1]["decision"], if approve { "allow" } else { "deny" });
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_http_serves_the_table_on_loopback() {
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let gw = serve(&sb, &cfg, &[], &[]).await;
    let client = client_with(&gw, None).await;
    let tools = client.list_all_tools().await.unwrap().items;
    let result = client
        .call_tool("mcp__notes__search", object(json!({"query": "vpn"})))
        .await
        .unwrap();
    drop(gw);
    // The notes demo's three, and the two skill tools (it serves a skill).
    assert_eq!(tools.len(), 5);
    assert!(!result.is_error(), "{result:?}");
}

/// `switchboard health` (a container's HEALTHCHECK) passes against a
/// serving gateway's /healthz and fails, exit 4, against /readyz of a
/// port nothing listens on and against a path that is not 200.
#[test]
fn health_probes_a_serving_gateway() {
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let (mut child, url) = spawn_serving(&mut serve_cmd(&sb, &cfg, "127.0.0.1:0", &["--yes"]));
    let base = url.trim_end_matches("/mcp").to_owned();
    let ok = run(sb.cmd(&["health", &format!("{base}/healthz")]));
    let missing = run(sb.cmd(&["health", &format!("{base}/no-such-path")]));
    let _ = child.kill();
    let _ = child.wait();
    let nobody = run(sb.cmd(&[
        "health",
        &format!("http://127.0.0.1:{}/readyz", empty_port()),
        "--timeout-ms",
        "2000",
    ]));
    let tls = run(sb.cmd(&["health", "https://127.0.0.1:1/healthz"]));
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(ok.stdout.contains(": ok"), "{ok:?}");
    assert_eq!(missing.code, 4, "{missing:?}");
    assert!(missing.stderr.contains("answered 404"), "{missing:?}");
    assert_eq!(nobody.code, 4, "{nobody:?}");
    assert_eq!(tls.code, 1, "{tls:?}");
    assert!(tls.stderr.contains("plain HTTP only"), "{tls:?}");
}
