//! Hostile servers over stdio, one row each: what the server does, and the
//! error the call must end in. Every row then checks that the same client
//! still works (nothing else harmed). The limits are listed in
//! `docs/LIMITS.md`.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, ClientConfig, RequestOptions};

use super::util::*;

/// What a row expects of the hostile call.
enum Ends {
    /// An error whose text contains this.
    Error(&'static str),
    /// A result whose text contains this.
    Result(&'static str),
}

async fn open(flags: &[&str], config: ClientConfig) -> Client {
    let (builder, _transport) = builder(flags).await;
    builder
        .config(config)
        // A regression that leaves a request to its timeout shows as a row
        // running this long and failing on the text ("did not answer").
        .timeout(Duration::from_secs(60))
        .connect()
        .await
        .expect("connect")
}

fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_answers_end_in_a_clear_bounded_error() {
    let rows: [(&str, Value, Ends); 6] = [
        // 100 MB in one line: the framer discards it past its bound
        // (64 MiB), and the id at its start fails the request at once.
        (
            "a 100 MB line",
            json!({"kind": "long-line", "size": 100_000_000}),
            Ends::Error(
                "the server's answer was over 64 MiB (StdioConfig::max_line) and was skipped",
            ),
        ),
        // serde_json's depth limit (128) refuses the line; the scan reads
        // the id and the request fails with the parser's reason.
        (
            "JSON nested 100,000 deep",
            json!({"kind": "deep", "size": 100_000}),
            Ends::Error(
                "the server's response is malformed: not valid JSON: recursion limit exceeded",
            ),
        ),
        // The id after the deep part is found all the same.
        (
            "JSON nested 100,000 deep, the id last",
            json!({"kind": "deep", "size": 100_000, "idLast": true}),
            Ends::Error("recursion limit exceeded"),
        ),
        (
            "a syntax error after the id",
            json!({"kind": "bad-json"}),
            Ends::Error("the server's response is malformed: not valid JSON"),
        ),
        // A malformed answer fails its request at once, with the reason.
        (
            "a response with both result and error",
            json!({"kind": "both"}),
            Ends::Error("result or error, not both"),
        ),
        // Answers to requests never sent are dropped; the real one counts.
        (
            "answers to requests it was never sent",
            json!({"kind": "unsolicited"}),
            Ends::Result("the real answer"),
        ),
    ];
    let client = open(&[], ClientConfig::default()).await;
    for (what, arguments, ends) in rows {
        let outcome = client.call_tool("hostile", args(arguments)).await;
        match (&ends, &outcome) {
            (Ends::Error(text), Err(e)) => {
                assert!(e.to_string().contains(text), "{what}: {e}");
            }
            (Ends::Result(text), Ok(r)) => {
                assert!(r.joined_text().contains(text), "{what}: {r:?}");
            }
            _ => panic!("{what}: unexpected {outcome:?}"),
        }
        let echo = client
            .call_tool("echo", args(json!({"text": "still here"})))
            .await
            .unwrap_or_else(|e| panic!("after {what}: {e}"));
        assert_eq!(echo.joined_text(), "still here", "after {what}");
    }
}

/// An over-long answer whose start does not name its request (the id
/// after a huge result) cannot fail it early: it ends at its timeout, as
/// `docs/LIMITS.md` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_answer_with_its_id_last_ends_at_the_timeout() {
    let client = open(&[], ClientConfig::default()).await;
    let options = RequestOptions {
        timeout: Some(Duration::from_secs(3)),
        ..RequestOptions::default()
    };
    let arguments = json!({"kind": "long-line", "size": 70_000_000, "idLast": true});
    let err = client
        .call_tool_with("hostile", args(arguments), &options)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did not answer"), "{err}");
    let echo = client
        .call_tool("echo", args(json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "still here");
}

/// While one request gets a hostile answer, another in flight on the same
/// connection is untouched: it gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_answer_leaves_the_other_requests_in_flight_alone() {
    let client = open(&[], ClientConfig::default()).await;
    for kind in ["long-line", "deep", "bad-json"] {
        let slow = client.call_tool("sleep", args(json!({"ms": 1500})));
        let hostile = client.call_tool("hostile", args(json!({"kind": kind})));
        let (slow, hostile) = tokio::join!(slow, hostile);
        let err = hostile.unwrap_err().to_string();
        assert!(
            err.contains("over 64 MiB") || err.contains("malformed"),
            "{kind}: {err}"
        );
        let slow = slow.unwrap_or_else(|e| panic!("{kind}: the other request failed: {e}"));
        assert!(!slow.is_error(), "{kind}: {slow:?}");
    }
}

/// A listing over `max_items` fails with the limit named; a tool whose
/// definition is over `max_tool_bytes` is left out with the reason while
/// the others are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_listings_and_tools_are_refused_with_the_limit() {
    let dir = std::env::temp_dir().join(format!("switchboard-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let many: Vec<Value> = (0..100_000)
        .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
        .collect();
    let many_file = dir.join("many.json");
    std::fs::write(&many_file, serde_json::to_vec(&many).unwrap()).unwrap();
    let flags = [
        "--tools-file",
        many_file.to_str().unwrap(),
        "--page-size",
        "0",
    ];
    let client = open(&flags, ClientConfig::default()).await;
    let err = client.list_all_tools().await.unwrap_err();
    assert!(err.to_string().contains("more than 50000 items"), "{err}");
    client.call_tool("echo", None).await.unwrap();

    let big_schema = json!({"type": "object", "description": "x".repeat(10 * 1024 * 1024)});
    let tools = json!([
        {"name": "huge", "inputSchema": big_schema},
        {"name": "small", "inputSchema": {"type": "object"}},
    ]);
    let big_file = dir.join("big.json");
    std::fs::write(&big_file, serde_json::to_vec(&tools).unwrap()).unwrap();
    let flags = [
        "--tools-file",
        big_file.to_str().unwrap(),
        "--page-size",
        "0",
    ];
    let client = open(&flags, ClientConfig::default()).await;
    let listing = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listing.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["small"]);
    assert_eq!(listing.dropped.len(), 1);
    assert_eq!(listing.dropped[0].name, "huge");
    assert!(
        listing.dropped[0]
            .reason
            .contains("over the limit of 1048576"),
        "{}",
        listing.dropped[0].reason
    );
    let _ = std::fs::remove_dir_all(&dir);
}
