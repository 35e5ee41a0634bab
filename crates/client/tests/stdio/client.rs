//! The Client over stdio: `_meta`, capabilities, pagination, MRTR,
//! `resultType`, errors, the typed calls and subscriptions.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{ClientConfig, EraPolicy, InputSupport, SubscriptionEnd};
use switchboard_wire::types::{CacheScope, JsonObject, SubscriptionFilter};
use switchboard_wire::{Era, version};

use super::util::{self, Answers, connect};

fn args(v: Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO: &str = "io.modelcontextprotocol/clientInfo";

// WIRE-14, WIRE-16: every request carries protocolVersion,
// clientCapabilities and clientInfo on params._meta, discover included.
#[tokio::test]
async fn every_request_carries_meta() {
    let log = util::log_path();
    let (client, _t) = connect(&["--log", log.to_str().unwrap()]).await;
    client.list_all_tools().await.unwrap();
    client.call_tool("echo", None).await.unwrap();
    client.list_resources(None).await.unwrap();
    client.discover().await.unwrap();
    let entries = util::read_log(&log);
    let requests: Vec<_> = entries.iter().filter(|m| m.get("id").is_some()).collect();
    assert!(requests.len() >= 10, "{requests:?}");
    for r in requests {
        let meta = &r["params"]["_meta"];
        assert_eq!(meta[PV], version::LATEST, "{r}");
        assert_eq!(meta[CAPS], json!({}), "{r}");
        assert_eq!(meta[INFO]["name"], "switchboard", "{r}");
    }
    assert_eq!(util::requests(&entries, "server/discover").len(), 2);
}

// WIRE-14: a caller's own `_meta` keys go along with the session's (which
// every request shares), and can never override them.
#[tokio::test]
async fn caller_meta_goes_along_but_never_overrides_the_session() {
    let log = util::log_path();
    let (client, _t) = connect(&["--log", log.to_str().unwrap()]).await;
    let params = json!({"name": "echo", "_meta": {PV: "1999-01-01", "example.com/trace": "abc"}});
    client
        .request(
            "tools/call",
            params.as_object().cloned(),
            &switchboard_client::RequestOptions::default(),
        )
        .await
        .unwrap();
    let entries = util::read_log(&log);
    let calls = util::requests(&entries, "tools/call");
    let meta = &calls.last().unwrap()["params"]["_meta"];
    assert_eq!(meta[PV], version::LATEST, "{meta}");
    assert_eq!(meta[CAPS], json!({}), "{meta}");
    assert_eq!(meta[INFO]["name"], "switchboard", "{meta}");
    assert_eq!(meta["example.com/trace"], "abc", "{meta}");
}

// ELIC-01, SAMP-02, ROOT-02: the client declares exactly what its handler
// supports.
#[tokio::test]
async fn declared_capabilities_follow_the_input_handler() {
    let log = util::log_path();
    let (builder, _t) = util::builder(&["--log", log.to_str().unwrap()]).await;
    let handler = Answers {
        support: InputSupport {
            elicitation_form: true,
            ..InputSupport::NONE
        },
        ..Answers::default()
    };
    let client = builder.input_handler(handler).connect().await.unwrap();
    let r = client.call_tool("echo", None).await.unwrap();
    let sent = &r.structured_content.unwrap()["params"]["_meta"][CAPS];
    assert_eq!(sent, &json!({"elicitation": {"form": {}}}));
}

// PAGE-01..04: pages until nextCursor is absent; "" is a cursor; cursors are
// echoed unchanged; ttlMs/cacheScope surfaced.
#[tokio::test]
async fn list_all_pages_until_the_cursor_is_absent() {
    let log = util::log_path();
    let (client, _t) = connect(&["--log", log.to_str().unwrap()]).await;
    let listing = client.list_all_tools().await.unwrap();
    let names: Vec<_> = listing.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 15);
    assert_eq!(&names[..3], ["echo", "sleep", "never"]);
    assert_eq!(names[14], "filler_2");
    assert_eq!(listing.pages, 8);
    // The shortest TTL of the pages (the mock lowers it by one per page).
    assert_eq!(listing.cache.ttl_ms, Some(30000 - 7));
    assert_eq!(listing.cache.cache_scope, Some(CacheScope::Public));
    let entries = util::read_log(&log);
    let cursors: Vec<Value> = util::requests(&entries, "tools/list")
        .iter()
        .map(|r| r["params"].get("cursor").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        cursors,
        vec![
            Value::Null,
            json!(""),
            json!("2"),
            json!("3"),
            json!("4"),
            json!("5"),
            json!("6"),
            json!("7")
        ]
    );
    // JSCH-05: schemas come back untouched.
    let echo = &listing.items[0];
    assert_eq!(echo.input_schema["properties"]["text"]["$ref"], "#/$defs/t");
    assert_eq!(echo.input_schema["x-unknown-keyword"], json!([1, 2]));
}

#[tokio::test]
async fn one_page_exposes_its_cursor_and_cache_hints() {
    let (client, _t) = connect(&[]).await;
    let first = client.list_tools(None).await.unwrap().page;
    assert_eq!(first.next_cursor.as_deref(), Some(""));
    let second = client.list_tools(Some("")).await.unwrap().page;
    assert_eq!(second.tools[0].name, "never");
    assert_eq!(second.cache.ttl_ms, Some(29999));
    // A bad cursor is the server's -32602, surfaced as a protocol error.
    let err = client.list_tools(Some("bogus")).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err}");
}

// DESIGN item 4: a server that repeats a cursor forever is stopped.
#[tokio::test]
async fn a_repeated_cursor_is_an_error_not_a_loop() {
    let (client, _t) = connect(&["--repeat-cursor"]).await;
    let err = client.list_all_tools().await.unwrap_err();
    assert!(err.is_invalid_result(), "{err}");
    assert!(err.to_string().contains("repeated cursor"), "{err}");
}

#[tokio::test]
async fn a_listing_that_never_ends_hits_the_page_limit() {
    let (builder, _t) = util::builder(&["--page-size", "1", "--extra-tools", "20"]).await;
    let config = ClientConfig {
        max_pages: 5,
        ..ClientConfig::default()
    };
    let client = builder.config(config).connect().await.unwrap();
    let err = client.list_all_tools().await.unwrap_err();
    assert!(
        err.to_string().contains("did not end after 5 pages"),
        "{err}"
    );
}

// DESIGN item 13, MRTR-11..14: input_required is never returned; the client
// answers through the handler and retries with inputResponses keyed like
// inputRequests and the requestState byte for byte, under a new id.
#[tokio::test]
async fn input_required_twice_then_complete() {
    let log = util::log_path();
    let (builder, _t) = util::builder(&["--log", log.to_str().unwrap()]).await;
    let handler = Answers::all();
    let asked = handler.asked.clone();
    let client = builder.input_handler(handler).connect().await.unwrap();
    let r = client
        .call_tool("ask", args(json!({"rounds": 2})))
        .await
        .unwrap();
    assert!(!r.is_error());
    let done = r.structured_content.unwrap();
    assert_eq!(done["rounds"], 2);
    assert_eq!(done["inputResponses"]["confirm"]["action"], "accept");
    assert_eq!(done["inputResponses"]["summary"]["model"], "test-model");
    assert_eq!(
        done["inputResponses"]["roots"]["roots"][0]["uri"],
        "file:///tmp"
    );
    assert_eq!(asked.lock().unwrap().len(), 6);

    let entries = util::read_log(&log);
    let calls = util::requests(&entries, "tools/call");
    assert_eq!(calls.len(), 3);
    let ids: std::collections::HashSet<String> =
        calls.iter().map(|c| c["id"].to_string()).collect();
    assert_eq!(ids.len(), 3, "every retry has a new id");
    assert!(calls[0]["params"].get("requestState").is_none());
    assert!(calls[0]["params"].get("inputResponses").is_none());
    for (round, call) in calls.iter().enumerate().skip(1) {
        // The exact state the server sent (it rejects anything else).
        let expected = format!("round={round};opaque=\u{e9}\u{2028}\"\\/{{}}\u{1F600}");
        assert_eq!(call["params"]["requestState"], expected);
        let keys: Vec<&String> = call["params"]["inputResponses"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["confirm", "summary", "roots"]);
        assert_eq!(call["params"]["name"], "ask");
        assert_eq!(call["params"]["arguments"], json!({"rounds": 2}));
    }
}

// MRTR-11, MRTR-13: with no capabilities the server sends only state; the
// client retries at once, echoing it.
#[tokio::test]
async fn input_required_with_only_state_retries_at_once() {
    let (client, _t) = connect(&[]).await;
    let r = client
        .call_tool("ask", args(json!({"rounds": 1})))
        .await
        .unwrap();
    assert_eq!(r.structured_content.unwrap()["rounds"], 1);
}

#[tokio::test]
async fn input_required_is_bounded_by_the_round_limit() {
    let (builder, _t) = util::builder(&[]).await;
    let config = ClientConfig {
        max_input_rounds: 2,
        ..ClientConfig::default()
    };
    let client = builder.config(config).connect().await.unwrap();
    let err = client
        .call_tool("ask", args(json!({"rounds": 5})))
        .await
        .unwrap_err();
    assert!(err.is_invalid_result(), "{err}");
    assert!(err.to_string().contains("after 2 rounds"), "{err}");
}

#[tokio::test]
async fn resources_read_runs_the_same_input_loop() {
    let (builder, _t) = util::builder(&[]).await;
    let client = builder
        .input_handler(Answers::all())
        .connect()
        .await
        .unwrap();
    let r = client.read_resource("mock://ask").await.unwrap();
    assert_eq!(r.contents[0].uri, "mock://ask");
}

// WIRE-08: an unknown resultType is invalid, never complete.
#[tokio::test]
async fn an_unknown_result_type_is_an_invalid_result() {
    let (client, _t) = connect(&[]).await;
    let err = client.call_tool("weird", None).await.unwrap_err();
    assert!(err.is_invalid_result(), "{err}");
    assert!(err.to_string().contains("mystery"), "{err}");
}

// DESIGN item 10: a tool error is a result; a JSON-RPC error is an error
// with code and data kept.
#[tokio::test]
async fn tool_errors_are_results_and_protocol_errors_are_errors() {
    let (client, _t) = connect(&[]).await;
    let r = client.call_tool("fail", None).await.unwrap();
    assert!(r.is_error());
    assert_eq!(r.joined_text(), "the tool failed");
    let err = client.call_tool("error", None).await.unwrap_err();
    assert!(err.is_protocol());
    let e = err.protocol_error().unwrap();
    assert_eq!(e.code, -32602);
    assert_eq!(e.data, Some(json!({"field": "x"})));
    let err = client.call_tool("no_such_tool", None).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602));
}

#[tokio::test]
async fn resources_prompts_and_completion() {
    let (client, _t) = connect(&[]).await;
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.items.len(), 3);
    assert_eq!(resources.cache.cache_scope, Some(CacheScope::Private));
    let read = client.read_resource("mock://a").await.unwrap();
    assert_eq!(
        read.contents[0].text.as_deref(),
        Some("contents of mock://a")
    );
    assert_eq!(read.cache.ttl(), Some(Duration::from_millis(5000)));
    let err = client.read_resource("file:///missing").await.unwrap_err();
    assert_eq!(err.code(), Some(-32602));
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.items[0].uri_template, "mock://item/{id}");
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.items[0].name, "greet");
    let prompt = client
        .get_prompt("greet", args(json!({"who": "ada"})))
        .await
        .unwrap();
    assert_eq!(prompt.messages[0].content.as_text(), Some("hello ada"));
    let completion = client
        .complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            "who",
            "al",
            None,
        )
        .await
        .unwrap();
    assert_eq!(completion.completion.values, ["alice", "albert"]);
}

#[tokio::test]
async fn discover_is_remembered() {
    let (client, _t) = connect(&["--name", "described"]).await;
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), version::LATEST);
    let server = client.server().unwrap();
    assert_eq!(server.server_info.unwrap().name, "described");
    assert!(server.capabilities.tools.is_some());
    assert_eq!(
        server.instructions.as_deref(),
        Some("A mock server for tests.")
    );
}

// SUB-02..05, STDIO-07: a listen stream is acknowledged, carries only its own
// notifications, and is cancelled when dropped.
#[tokio::test]
async fn listen_delivers_its_notifications_and_cancels_on_drop() {
    let log = util::log_path();
    let (client, transport) = connect(&["--log", log.to_str().unwrap()]).await;
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resources_list_changed: Some(true),
        resource_subscriptions: Some(vec!["mock://a".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = client.listen(filter).await.unwrap();
    // SUB-04: the server honoured a subset.
    assert_eq!(sub.acknowledged().resources_list_changed, None);
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    let first = sub.next().await.unwrap();
    assert_eq!(first.method, "notifications/tools/list_changed");
    assert_eq!(
        first.params.unwrap()["_meta"]["io.modelcontextprotocol/subscriptionId"],
        sub.id().to_value()
    );
    let second = sub.next().await.unwrap();
    assert_eq!(second.method, "notifications/resources/updated");
    assert_eq!(second.params.unwrap()["uri"], "mock://a");
    let id = sub.id().to_value();
    drop(sub);
    assert_eq!(transport.in_flight(), 0);
    client.call_tool("echo", None).await.unwrap();
    let entries = util::read_log(&log);
    assert!(
        entries
            .iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id)
    );
}

// CANC-05, SUB-07: the server may end a stream either way.
#[tokio::test]
async fn listen_streams_end_when_the_server_ends_them() {
    for (end, expected) in [
        ("cancel", SubscriptionEnd::CancelledByServer),
        ("result", SubscriptionEnd::Completed),
    ] {
        let (client, _t) = connect(&["--listen-end", end]).await;
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        };
        let mut sub = client.listen(filter).await.unwrap();
        let n = sub.next().await.unwrap();
        assert_eq!(n.method, "notifications/tools/list_changed");
        assert!(sub.next().await.is_none(), "{end}");
        assert_eq!(sub.end(), Some(&expected), "{end}");
    }
}

// VER-02/03, STDIO-15: a modern server that shares no version with us is an
// unsupported-version error, never a fallback to initialize.
#[tokio::test]
async fn no_shared_version_is_an_error_without_fallback() {
    let log = util::log_path();
    let (builder, _t) =
        util::builder(&["--versions", "2099-01-01", "--log", log.to_str().unwrap()]).await;
    let err = builder.connect().await.unwrap_err();
    assert!(err.is_unsupported_version(), "{err}");
    assert!(err.to_string().contains("2099-01-01"), "{err}");
    let entries = util::read_log(&log);
    assert!(util::requests(&entries, "initialize").is_empty());
}

#[tokio::test]
async fn modern_only_policy_never_falls_back() {
    let (builder, _t) = util::builder(&["--legacy"]).await;
    let err = builder
        .era_policy(EraPolicy::ModernOnly)
        .connect()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32601), "{err}");
}

// ELIC-04, MRTR-05: a modern server's question whose params do not fit
// `elicitation/create` fails the call with an error naming the request
// and what did not fit; the handler is never asked, and nothing panics.
#[tokio::test]
async fn a_malformed_modern_question_fails_the_call_with_a_clear_error() {
    let (builder, _t) = util::builder(&["--malformed-input"]).await;
    let handler = Answers::all();
    let asked = handler.asked.clone();
    let client = builder.input_handler(handler).connect().await.unwrap();
    let err = client
        .call_tool("ask", args(json!({"rounds": 1})))
        .await
        .unwrap_err();
    assert!(err.is_invalid_result(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(r#"input request "confirm": malformed elicitation/create params"#),
        "{text}"
    );
    assert!(asked.lock().unwrap().is_empty(), "the handler was asked");
}

// ELIC-04: a legacy server's request whose params do not fit
// `elicitation/create` gets a -32602 error answer naming what did not fit;
// the call goes on and the server's other requests are answered.
#[tokio::test]
async fn a_malformed_legacy_question_gets_an_invalid_params_answer() {
    let (builder, _t) = util::builder(&["--legacy", "--malformed-input"]).await;
    let handler = Answers::all();
    let asked = handler.asked.clone();
    let client = builder.input_handler(handler).connect().await.unwrap();
    let r = client.call_tool("sample", None).await.unwrap();
    let got = r.structured_content.unwrap();
    let error = &got["elicitation/create"]["error"];
    assert_eq!(error["code"], -32602, "{got}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("malformed elicitation/create params"),
        "{got}"
    );
    assert_eq!(got["roots/list"]["roots"][0]["uri"], "file:///tmp");
    assert_eq!(
        *asked.lock().unwrap(),
        ["roots/list", "sampling/createMessage"]
    );
}
