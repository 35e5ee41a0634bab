//! End to end: our `Client` over HTTP against our own server framework's
//! Streamable HTTP runner, on 127.0.0.1 — the modern wire (headers,
//! progress on SSE, MRTR, listen) and the legacy 2025-11-25 wire the same
//! server also serves.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{
    Client, ClientBuilder, ClientError, EraPolicy, HttpTransport, InputSupport, RequestOptions,
    input_handler_fn,
};
use switchboard_server::{
    CallToolResult, Context, Elicitation, HandlerError, InputRequired, Server, ToolResult, ToolSpec,
};
use switchboard_wire::types::SubscriptionFilter;
use switchboard_wire::{Era, types::method};

use super::framework::serve_server;
use super::util::within;
use switchboard_testkit::fixtures::{RoundAnswers, Served};

async fn forecast(args: Value, ctx: Context) -> Result<String, HandlerError> {
    ctx.progress(1.0, Some(2.0), Some("looking")).await;
    ctx.progress(2.0, Some(2.0), Some("found")).await;
    let region = args["region"].as_str().unwrap_or("?");
    let days = args["days"].as_i64().unwrap_or(0);
    Ok(format!("{region}: sunny for {days} days"))
}

async fn greet(ctx: Context) -> ToolResult {
    match ctx.input().elicitation("who")? {
        Some(answer) => {
            let name = answer
                .accepted()
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("stranger")
                .to_owned();
            Ok(CallToolResult::text(format!("Hello, {name}!")).into())
        }
        None => Ok(InputRequired::new()
            .elicit(
                "who",
                Elicitation::form(
                    "What is your name?",
                    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                ),
            )
            .into()),
    }
}

/// Starts the server on 127.0.0.1:0; stops when the guard is dropped.
async fn start() -> (String, Served) {
    let spec = ToolSpec::new("forecast")
        .description("Weather for the next days")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7}
            },
            "required": ["region", "days"]
        }));
    let server = Server::builder("e2e", "1.0.0")
        .tool_spec(spec, forecast)
        .tool("greet", "Asks for a name, then greets", greet)
        .tool(
            "touch",
            "Announces that the tool list changed",
            |ctx: Context| async move {
                ctx.notifier().tools_list_changed();
                "sent"
            },
        )
        .build()
        .unwrap();
    serve_server(server).await
}

/// A client builder for the server at `url`, its era not remembered.
fn e2e_client(url: &str) -> ClientBuilder {
    let transport = HttpTransport::builder("e2e", url)
        .remember_era(false)
        .build()
        .unwrap();
    Client::builder("e2e", transport)
}

// MRTR: the client hands a round's requests to the handler together, and
// refuses to send a round that leaves one of them unanswered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_is_answered_together_and_every_request_must_be_answered() {
    let (url, _stop) = start().await;
    for forget in [false, true] {
        // Answers a whole round at once; forgetting, leaves every answer out.
        let answers = if forget {
            RoundAnswers::forgetting()
        } else {
            RoundAnswers::new(json!({"name": "Grace"}))
        };
        let transport = HttpTransport::builder("e2e", &url).build().unwrap();
        let client = within(
            Client::builder("e2e", transport)
                .input_handler(answers.clone())
                .connect(),
        )
        .await
        .unwrap();
        let outcome = within(client.call_tool("greet", None)).await;
        assert_eq!(answers.rounds(), [["who elicitation/create"]]);
        match outcome {
            Ok(r) if !forget => assert_eq!(r.joined_text(), "Hello, Grace!"),
            Err(ClientError::Input { reason, .. }) if forget => {
                assert!(
                    reason.contains(r#"no answer to input request "who""#),
                    "{reason}"
                );
            }
            other => panic!("forget={forget}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_wire_against_our_server() {
    let (url, _stop) = start().await;
    let client = within(
        e2e_client(&url)
            .input_handler(input_handler_fn(InputSupport::FORM, |_, q| async move {
                q.answer_from(json!({"action": "accept", "content": {"name": "Ada"}}))
            }))
            .connect(),
    )
    .await
    .unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), "2026-07-28");

    let tools = within(client.list_all_tools()).await.unwrap();
    let mut names: Vec<_> = tools.items.iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["forecast", "greet", "touch"]);

    // The server validates Mcp-Param-Region against the body: the call only
    // succeeds if the client mirrored it.
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = progress.clone();
    let options =
        RequestOptions::default().with_progress(move |p| seen.lock().unwrap().push(p.progress));
    let result = within(client.call_tool_with(
        "forecast",
        json!({"region": "eu-west", "days": 3}).as_object().cloned(),
        &options,
    ))
    .await
    .unwrap();
    assert_eq!(result.joined_text(), "eu-west: sunny for 3 days");
    assert_eq!(*progress.lock().unwrap(), [1.0, 2.0]);

    // MRTR through the input handler.
    let greeting = within(client.call_tool("greet", None)).await.unwrap();
    assert_eq!(greeting.joined_text(), "Hello, Ada!");

    // A listen stream receives the list change another call causes.
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let mut sub = within(client.listen(filter)).await.unwrap();
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    within(client.call_tool("touch", None)).await.unwrap();
    let changed = within(sub.next()).await.unwrap();
    assert_eq!(changed.method, method::TOOLS_LIST_CHANGED);
    drop(sub);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_wire_against_our_server() {
    let (url, _stop) = start().await;
    let client = within(
        e2e_client(&url)
            .era_policy(EraPolicy::LegacyOnly)
            .timeout(Duration::from_secs(20))
            .connect(),
    )
    .await
    .unwrap();
    assert_eq!(client.era(), Era::Legacy);
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.items.len(), 3);
    let result = within(client.call_tool(
        "forecast",
        json!({"region": "us-east", "days": 1}).as_object().cloned(),
    ))
    .await
    .unwrap();
    assert_eq!(result.joined_text(), "us-east: sunny for 1 days");
    client.close().await;
}

// PAGE-*: the list changes between two pages (a tool of page one hidden),
// the server refuses the stale cursor, and `list_all_tools` lists again
// from the start, once: every tool of the list as it is now, none skipped
// or twice.
#[tokio::test]
async fn list_all_starts_again_when_the_list_changed_between_pages() {
    let mut builder = Server::builder("paged", "1").page_size(2);
    for name in ["t0", "t1", "t2", "t3", "t4"] {
        builder = builder.tool(name, "a tool", || async { "ok" });
    }
    let server = builder.build().unwrap();
    // `t0` is shown in the first listing only.
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = asked.clone();
    server.set_tool_filter(move |_, name| {
        name != "t0" || seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0
    });
    let (url, _stop) = serve_server(server).await;
    let transport = HttpTransport::builder("paged", &url).build().unwrap();
    let client = within(Client::builder("paged", transport).connect())
        .await
        .unwrap();
    let listing = within(client.list_all_tools()).await.unwrap();
    let names: Vec<&str> = listing.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t1", "t2", "t3", "t4"]);
    assert_eq!(listing.pages, 2, "the pages of the listing started again");
    assert!(asked.load(std::sync::atomic::Ordering::SeqCst) > 1);
}
