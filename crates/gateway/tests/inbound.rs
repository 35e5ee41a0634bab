//! Named tokens replaced while the gateway serves: a caller whose token is
//! taken out loses its requests and its open listen stream; the others keep
//! both.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::Client;
use switchboard_gateway::{GatewayOptions, Telemetry};
use switchboard_host::Host;
use switchboard_wire::CallToolResult;
use switchboard_wire::types::SubscriptionFilter;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{ALICE, BOB, Dir, callers, client_as, serve, serve_callers, stdio, tokens};

/// A host mounting the mock server, its tools allowed.
async fn mount_mock(dir: &Dir) -> Host {
    mount_mock_with(dir, json!({})).await
}

/// [`mount_mock`] with the keys of `extra` in the config too.
async fn mount_mock_with(dir: &Dir, extra: Value) -> Host {
    let mut config = json!({
        "mcpServers": {"mock": stdio(&[])},
        "permissions": {"allow": ["mcp__mock"]}
    });
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    dir.mount(config).await
}

/// The arguments of the mock server's `greet` prompt.
fn who() -> Option<serde_json::Map<String, Value>> {
    json!({"who": "you"}).as_object().cloned()
}

/// Calls the mock server's `echo` with `hi`.
async fn echo_hi(client: &Client) -> CallToolResult {
    client
        .call_tool(
            "mcp__mock__echo",
            json!({"text": "hi"}).as_object().cloned(),
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_taken_out_ends_its_callers_requests_and_listen_stream() {
    let dir = Dir::new();
    let host = mount_mock(&dir).await;
    let auth = callers(&format!("alice {ALICE}\nbob {BOB}"));
    let mut options = GatewayOptions::default().auth(auth.clone());
    options.recheck_streams = Some(Duration::from_millis(50));
    let gateway = serve(&host, options).await;
    let alice = client_as(&gateway.url, ALICE).await;
    let bob = client_as(&gateway.url, BOB).await;
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let mut alice_listens = alice.listen(filter.clone()).await.unwrap();
    let mut bob_listens = bob.listen(filter).await.unwrap();

    // alice's token leaked: the list in use becomes bob's alone.
    let change = auth.replace_tokens(tokens(&format!("bob {BOB}"))).unwrap();
    assert_eq!(change.removed, ["alice"]);
    // Her stream ends; the client's reconnection meets the refusal.
    let ended = tokio::time::timeout(Duration::from_secs(20), alice_listens.next()).await;
    assert!(matches!(ended, Ok(None)), "{ended:?}");
    assert!(alice.list_all_tools().await.is_err());
    // bob goes on: requests, and his stream is still open.
    assert!(!bob.list_all_tools().await.unwrap().items.is_empty());
    let quiet = tokio::time::timeout(Duration::from_millis(500), bob_listens.next()).await;
    assert!(quiet.is_err(), "bob's stream ended: {quiet:?}");
    host.shutdown().await;
}

/// The status of a bare `tools/list` POST to `url` with `authorization`.
async fn status_of(url: &str, authorization: Option<&str>) -> u16 {
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(a) = authorization {
        request.push_str(&format!("Authorization: {a}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap()
}

// Requests refused for their authorization are counted by reason in the
// metrics (never naming a token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_are_counted_by_reason() {
    let dir = Dir::new();
    let host = mount_mock(&dir).await;
    let telemetry = Telemetry::from_env(true).unwrap();
    let auth = callers(&format!("alice {ALICE}"));
    let mut options = GatewayOptions::default().auth(auth);
    options.telemetry = telemetry.clone();
    let gateway = serve(&host, options).await;
    assert_eq!(status_of(&gateway.url, None).await, 401);
    for _ in 0..2 {
        let wrong = "Bearer not-a-known-token-000000";
        assert_eq!(status_of(&gateway.url, Some(wrong)).await, 401);
    }
    assert_eq!(status_of(&gateway.url, Some("Basic YTpi")).await, 401);
    assert_eq!(status_of(&gateway.url, Some("Bearer a b")).await, 400);
    // An admitted request is no refusal.
    client_as(&gateway.url, ALICE)
        .await
        .list_all_tools()
        .await
        .unwrap();
    let metrics = telemetry.render_metrics(&host).unwrap();
    for line in [
        r#"switchboard_auth_refusals_total{reason="missing_token"} 2"#,
        r#"switchboard_auth_refusals_total{reason="invalid_token"} 2"#,
        r#"switchboard_auth_refusals_total{reason="invalid_request"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }
    assert!(!metrics.contains("not-a-known-token"));
    host.shutdown().await;
}

/// The names of the prompts, resources and templates `client` is listed.
async fn offers_listed(client: &Client) -> (Vec<String>, Vec<String>, Vec<String>) {
    let prompts = client.list_all_prompts().await.unwrap().items;
    let resources = client.list_all_resources().await.unwrap().items;
    let templates = client.list_all_resource_templates().await.unwrap().items;
    (
        prompts.into_iter().map(|p| p.name).collect(),
        resources.into_iter().map(|r| r.uri).collect(),
        templates.into_iter().map(|t| t.uri_template).collect(),
    )
}

// A caller's `principals` rules narrow the prompts and resources it is
// listed and may use, not only the tools: a prompt's name as a tool's; a
// server's resources and templates as the whole server (a caller narrowed
// to some of its tools reads none of them). Gets, reads and completions of
// what is hidden are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_narrow_prompts_and_resources_too() {
    const CAROL: &str = "carol-token-5555555555";
    let dir = Dir::new();
    let host = mount_mock_with(
        &dir,
        json!({
            "principals": {
                "bob": {"allow": ["mcp__mock__echo"]},
                "carol": {"allow": ["mcp__mock"], "deny": ["mcp__mock__greet"]}
            }
        }),
    )
    .await;
    let (_gateway, [alice, bob, carol]) =
        serve_callers(&host, [("alice", ALICE), ("bob", BOB), ("carol", CAROL)]).await;
    let greet = "mcp__mock__greet";
    let (template, resource) = ("mock://item/{id}", "mock://a");
    let prompt_ref = json!({"type": "ref/prompt", "name": greet});

    // alice has no entry: everything.
    let (prompts, resources, templates) = offers_listed(&alice).await;
    assert_eq!(prompts, [greet]);
    assert!(resources.iter().any(|r| r == resource), "{resources:?}");
    assert_eq!(templates, [template]);
    alice.get_prompt(greet, who()).await.unwrap();
    alice.read_resource(resource).await.unwrap();
    alice.read_resource("mock://item/7").await.unwrap();

    // bob may call echo only: no prompt, no resource of mock.
    assert_eq!(offers_listed(&bob).await, (vec![], vec![], vec![]));
    let refused = bob.get_prompt(greet, who()).await.unwrap_err();
    assert!(refused.to_string().contains("bob"), "{refused}");
    for uri in [resource, "mock://item/7"] {
        let refused = bob.read_resource(uri).await.unwrap_err();
        assert!(
            refused.to_string().contains("do not allow"),
            "{uri}: {refused}"
        );
    }
    assert!(
        bob.complete(prompt_ref.clone(), "who", "y", None)
            .await
            .is_err()
    );

    // carol has the whole server but greet: its resources, not the prompt.
    let (prompts, resources, templates) = offers_listed(&carol).await;
    assert!(prompts.is_empty(), "{prompts:?}");
    assert!(resources.iter().any(|r| r == resource), "{resources:?}");
    assert_eq!(templates, [template]);
    carol.read_resource(resource).await.unwrap();
    assert!(carol.get_prompt(greet, who()).await.is_err());
    assert!(carol.complete(prompt_ref, "who", "y", None).await.is_err());

    // Updates of a resource are heard only by those who may read it (one
    // of a template's URIs too); the acknowledgment says what is honoured.
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![resource.to_owned(), "mock://item/7".to_owned()]),
        ..SubscriptionFilter::default()
    };
    let honoured = |listen: &switchboard_client::Subscription| {
        listen
            .acknowledged()
            .resource_subscriptions
            .clone()
            .unwrap_or_default()
    };
    let alice_listens = alice.listen(filter.clone()).await.unwrap();
    assert_eq!(honoured(&alice_listens), [resource, "mock://item/7"]);
    let carol_listens = carol.listen(filter.clone()).await.unwrap();
    assert_eq!(honoured(&carol_listens), [resource, "mock://item/7"]);
    let bob_listens = bob.listen(filter).await.unwrap();
    assert!(
        honoured(&bob_listens).is_empty(),
        "{:?}",
        honoured(&bob_listens)
    );
    host.shutdown().await;
}

// A caller's limits count its prompt gets and resource reads with its tool
// calls (each reaches a server): over them, each is refused saying which
// limit; another caller goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_gets_and_resource_reads_count_against_a_callers_limits() {
    let dir = Dir::new();
    let host = mount_mock_with(&dir, json!({"callerLimits": {"callsPerMinute": 3}})).await;
    let (_gateway, [alice, bob]) = serve_callers(&host, [("alice", ALICE), ("bob", BOB)]).await;
    // A tool call, a read and a prompt: alice's minute.
    let echoed = echo_hi(&alice).await;
    assert!(!echoed.is_error(), "{echoed:?}");
    alice.read_resource("mock://a").await.unwrap();
    alice.get_prompt("mcp__mock__greet", who()).await.unwrap();
    let read = alice.read_resource("mock://item/7").await.unwrap_err();
    assert!(
        read.to_string()
            .contains("reading mock://item/7 was refused")
            && read.to_string().contains("limited to 3 a minute"),
        "{read}"
    );
    let prompt = alice
        .get_prompt("mcp__mock__greet", who())
        .await
        .unwrap_err();
    assert!(prompt.to_string().contains("Try again in"), "{prompt}");
    let call = echo_hi(&alice).await;
    assert!(
        call.is_error() && call.joined_text().contains("limited to 3"),
        "{call:?}"
    );
    // bob has a minute of his own.
    bob.read_resource("mock://a").await.unwrap();
    bob.get_prompt("mcp__mock__greet", who()).await.unwrap();
    host.shutdown().await;
}

/// The audit lines written since the first `seen` ones.
fn lines_after(dir: &Dir, seen: &mut usize) -> Vec<serde_json::Value> {
    let lines = dir.audit();
    let new = lines[(*seen).min(lines.len())..].to_vec();
    *seen = lines.len();
    new
}

/// Checks the lines of one caller's requests of one kind, one line per
/// name in `tools`: allowed, or refused by the caller's rules (`denied`).
fn check_lines(lines: &[serde_json::Value], who: &str, method: &str, tools: &[&str], denied: bool) {
    assert_eq!(lines.len(), tools.len(), "{method}: {lines:#?}");
    for (line, tool) in lines.iter().zip(tools) {
        assert_eq!(line["principal"], who, "{line}");
        assert_eq!(line["tool"], *tool, "{line}");
        assert_eq!(line["alias"], "mock", "{line}");
        assert_eq!(line["method"], method, "{line}");
        if denied {
            assert_eq!(line["outcome"], "denied", "{line}");
            assert_eq!(line["decision"], "deny", "{line}");
            assert_eq!(line["decidedBy"], "rule", "{line}");
            assert_eq!(line["isError"], true, "{line}");
        } else {
            assert_eq!(line["outcome"], "ok", "{line}");
        }
    }
}

// Every kind of request a caller makes through the gateway (a prompt get,
// a read of a listed resource or through a template, a completion) is
// audited naming the caller, as a tool call is; and so is each one its
// `principals` rules refuse, which keeps the words and codes it had.
// Regressions: a prompt's line lacked the caller, a refused prompt left no
// line, reads and completions none at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_kind_is_audited_with_its_caller_also_when_refused() {
    let dir = Dir::new();
    let host = mount_mock_with(
        &dir,
        json!({"principals": {"bob": {"allow": ["mcp__mock__echo"]}}}),
    )
    .await;
    let (_gateway, [alice, bob]) = serve_callers(&host, [("alice", ALICE), ("bob", BOB)]).await;
    let greet = "mcp__mock__greet";
    let mut seen = 0;

    alice.get_prompt(greet, who()).await.unwrap();
    let lines = lines_after(&dir, &mut seen);
    check_lines(&lines, "alice", "prompts/get", &[greet], false);
    let refused = bob.get_prompt(greet, who()).await.unwrap_err();
    assert!(
        refused.to_string().contains(&format!(
            "The user's permission rules for bob do not allow prompt {greet}."
        )),
        "{refused}"
    );
    let lines = lines_after(&dir, &mut seen);
    check_lines(&lines, "bob", "prompts/get", &[greet], true);

    let uris = ["mock://a", "mock://item/7"];
    for uri in uris {
        alice.read_resource(uri).await.unwrap();
    }
    let lines = lines_after(&dir, &mut seen);
    check_lines(&lines, "alice", "resources/read", &uris, false);
    for (uri, named) in uris.iter().zip(["mock://a", "mock://item/{id}"]) {
        let refused = bob.read_resource(uri).await.unwrap_err();
        let words = format!("The user's permission rules for bob do not allow resource {named}.");
        assert!(refused.to_string().contains(&words), "{refused}");
    }
    let lines = lines_after(&dir, &mut seen);
    check_lines(&lines, "bob", "resources/read", &uris, true);

    let prompt_ref = json!({"type": "ref/prompt", "name": greet});
    alice
        .complete(prompt_ref.clone(), "who", "y", None)
        .await
        .unwrap();
    let lines = lines_after(&dir, &mut seen);
    check_lines(&lines, "alice", "completion/complete", &[greet], false);
    // What bob's rules hide is unknown to him.
    let refused = bob
        .complete(prompt_ref, "who", "y", None)
        .await
        .unwrap_err();
    assert_eq!(
        refused
            .protocol_error()
            .map(|e| (e.code, e.message.clone())),
        Some((-32602, format!("unknown prompt {greet:?}"))),
        "{refused}"
    );
    let lines = lines_after(&dir, &mut seen);
    check_lines(&lines, "bob", "completion/complete", &[greet], true);
    host.shutdown().await;
}

/// Checks the lines of requests refused for the caller's limits.
fn check_limited(lines: &[serde_json::Value], expected: &[(&str, &str)]) {
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    for (line, (method, tool)) in lines.iter().zip(expected) {
        assert_eq!(line["tool"], *tool, "{line}");
        assert_eq!(line["principal"], "alice", "{line}");
        assert_eq!(line["outcome"], "limited", "{line}");
        assert_eq!(line["isError"], true, "{line}");
        assert_eq!(line["method"], *method, "{line}");
    }
}

// A caller over its limits is refused every kind of request, and each
// refusal is audited naming it (outcome `limited`). Regression: a prompt
// or a read refused for the caller's limits left no line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_a_callers_limits_are_audited() {
    let dir = Dir::new();
    let host = mount_mock_with(&dir, json!({"callerLimits": {"callsPerMinute": 1}})).await;
    let (_gateway, [alice]) = serve_callers(&host, [("alice", ALICE)]).await;
    let greet = "mcp__mock__greet";
    let echoed = echo_hi(&alice).await;
    assert!(!echoed.is_error(), "{echoed:?}");
    let mut seen = dir.audit().len();
    let prompt = alice.get_prompt(greet, who()).await.unwrap_err();
    let words =
        "getting prompt mcp__mock__greet was refused: calls by alice are limited to 1 a minute";
    assert!(prompt.to_string().contains(words), "{prompt}");
    let read = alice.read_resource("mock://a").await.unwrap_err();
    let words = "reading mock://a was refused: calls by alice are limited to 1 a minute";
    assert!(read.to_string().contains(words), "{read}");
    check_limited(
        &lines_after(&dir, &mut seen),
        &[("prompts/get", greet), ("resources/read", "mock://a")],
    );
    // Completions count too.
    let completed = alice
        .complete(
            json!({"type": "ref/prompt", "name": greet}),
            "who",
            "y",
            None,
        )
        .await
        .unwrap_err();
    let words = "completing mcp__mock__greet was refused: calls by alice are limited to 1 a minute";
    assert!(completed.to_string().contains(words), "{completed}");
    check_limited(
        &lines_after(&dir, &mut seen),
        &[("completion/complete", greet)],
    );
    host.shutdown().await;
}
