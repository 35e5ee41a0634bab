//! A small MCP server on stdio: typed tools, progress, cancellation, a tool
//! that asks the user first (multi round-trip), a prompt and a resource.
//!
//! Run it and paste requests, one per line:
//!
//! ```text
//! cargo run -p switchboard-server --example stdio
//! ```
//!
//! ```text
//! {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","arguments":{"to":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}
//! {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"greet","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
//! ```
//!
//! The last one answers `input_required`; retry it with
//! `"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}}`
//! in `params`. Cancel a running `count` with
//! `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`.
//! Listen for new notes with
//! `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"resourcesListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
//! and call `remember` with `{"text":"milk"}`. Close stdin (Ctrl-D) to stop.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use switchboard_server::{
    CallToolResult, ContentBlock, Context, Elicitation, HandlerError, InputRequired, ResourceSpec,
    Server, ToolResult, text_contents, user,
};

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// Count from 1 to this number, one step every 200 ms.
    to: u32,
}

/// Reports progress at each step and stops early when cancelled.
async fn count(args: CountArgs, ctx: Context) -> Result<String, HandlerError> {
    if args.to > 1000 {
        return Err(HandlerError::msg(
            "`to` must be at most 1000; pick a smaller number",
        ));
    }
    for i in 1..=args.to {
        tokio::select! {
            () = ctx.cancelled() => return Ok(format!("cancelled at {i}")),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        ctx.progress(f64::from(i), Some(f64::from(args.to)), None)
            .await;
    }
    Ok(format!("counted to {}", args.to))
}

/// Asks the user's name first (MRTR), then greets them.
async fn greet(ctx: Context) -> ToolResult {
    match ctx.input().elicitation("who")? {
        Some(answer) => {
            let name = answer
                .accepted()
                .and_then(|c| c.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or("stranger");
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

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// What to remember.
    text: String,
}

/// Adds a resource at run time; `subscriptions/listen` streams that asked
/// for `resourcesListChanged` hear about it.
async fn remember(args: NoteArgs, ctx: Context) -> Result<String, HandlerError> {
    let uri = format!(
        "example://notes/{}",
        ctx.request_id().to_string().trim_matches('"')
    );
    let text = args.text;
    let body = text.clone();
    let resource_uri = uri.clone();
    ctx.server()
        .add_resource(
            ResourceSpec::new(uri.clone(), "note").mime_type("text/plain"),
            move || {
                let (uri, body) = (resource_uri.clone(), body.clone());
                async move { text_contents(uri, "text/plain", body) }
            },
        )
        .map_err(|e| HandlerError::msg(format!("cannot store the note: {e}")))?;
    Ok(format!("remembered {text:?} as {uri}"))
}

#[derive(Deserialize, JsonSchema)]
struct TopicArgs {
    /// What to write about.
    topic: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // stdout carries MCP messages only; a real binary installs a `tracing`
    // subscriber that writes to stderr.
    let server = Server::builder("example-stdio", "1.0.0")
        .instructions("Echoes, counts, greets and remembers notes.")
        .tool("echo", "Returns its text argument", echo)
        .tool("count", "Counts up, reporting progress", count)
        .tool(
            "greet",
            "Greets the user by name, asking for it first",
            greet,
        )
        .tool("remember", "Remembers a note as a new resource", remember)
        .prompt("haiku", "Asks for a haiku", |a: TopicArgs| async move {
            vec![user(ContentBlock::text(format!(
                "Write a haiku about {}.",
                a.topic
            )))]
        })
        .resource(
            ResourceSpec::new("example://motd", "motd").mime_type("text/plain"),
            || async { text_contents("example://motd", "text/plain", "Have a nice day.") },
        )
        .build()?;
    switchboard_server::stdio::serve(server).await?;
    Ok(())
}
