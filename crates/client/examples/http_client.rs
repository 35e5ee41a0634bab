//! Reaches an MCP server over Streamable HTTP: finds its era (2026-07-28,
//! or a 2025-11-25 / HTTP+SSE server through the legacy fallback), lists its
//! tools and calls one.
//!
//! ```text
//! cargo run -p switchboard-server --example http -- 127.0.0.1:8080 &
//! cargo run -p switchboard-client --example http_client -- http://127.0.0.1:8080/mcp \
//!     forecast '{"region": "eu-west", "days": 2}'
//! ```
//!
//! Extra headers (e.g. a token) come from `MCP_HEADER`, as `Name: value`.

// An example prints what it does.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use serde_json::Value;
use switchboard_client::{Client, HttpTransport, RequestOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: http URL [TOOL [JSON-ARGUMENTS]]")?;
    let tool = args.next();
    let arguments: Option<serde_json::Map<String, Value>> = match args.next() {
        Some(json) => Some(serde_json::from_str(&json)?),
        None => None,
    };

    let mut builder = HttpTransport::builder("example", &url);
    if let Ok(header) = std::env::var("MCP_HEADER") {
        let (name, value) = header
            .split_once(':')
            .ok_or("MCP_HEADER is `Name: value`")?;
        builder = builder.header(name, value);
    }
    let client = Client::builder("example", builder.build()?)
        .connect()
        .await?;
    println!(
        "{url}: {} era, protocol {}",
        client.era(),
        client.protocol_version()
    );

    for tool in client.list_all_tools().await?.items {
        println!("- {}: {}", tool.name, tool.description.unwrap_or_default());
    }
    if let Some(tool) = tool {
        let options = RequestOptions::default()
            .with_progress(|p| eprintln!("  progress {} / {:?}", p.progress, p.total));
        let result = client.call_tool_with(&tool, arguments, &options).await?;
        let kind = if result.is_error() {
            "tool error"
        } else {
            "result"
        };
        println!("{tool} {kind}: {}", result.joined_text());
    }
    client.close().await;
    Ok(())
}
