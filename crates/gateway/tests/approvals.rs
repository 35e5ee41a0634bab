//! Approvals through the host's approval API: the gate is assessed once
//! per call, in the host; a question is handed back (`Approval::Defer`)
//! and put to the upstream user; the audit log shows `asked`, then the
//! answered call.

use serde_json::json;
use switchboard_gateway::GatewayOptions;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_goes_upstream_and_the_audit_shows_asked_then_the_answer() {
    for approve in [true, false] {
        let dir = Dir::new();
        let log = dir.path("calls.log").display().to_string();
        let host = dir
            .mount(json!({"mcpServers": {"m": stdio(&["--log", &log])}}))
            .await;
        let gateway = serve(&host, GatewayOptions::default()).await;
        let answer = Answer::new(approve);
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
        let calls = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"tools/call\""))
            .count();
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
    let audit = dir.audit();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["outcome"], "denied");
    assert_eq!(audit[0]["decidedBy"], "no-approver");
    client.close().await;
    host.shutdown().await;
}
