//! A small MCP server on Streamable HTTP, bound to 127.0.0.1, with a tool
//! whose argument is mirrored into an `Mcp-Param-Region` header, structured
//! output, and a change notification for `subscriptions/listen` streams.
//!
//! ```text
//! cargo run -p switchboard-server --example http -- 127.0.0.1:8080
//! curl -s http://127.0.0.1:8080/mcp \
//!   -H 'Content-Type: application/json' \
//!   -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: forecast' \
//!   -H 'Mcp-Param-Region: eu-west' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"region":"eu-west","days":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//! Stop with Ctrl-C.

use std::net::SocketAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use switchboard_server::http::HttpOptions;
use switchboard_server::{Context, HandlerError, Json, Server, ToolSpec};

#[derive(Deserialize, JsonSchema)]
struct ForecastArgs {
    /// Region code.
    region: String,
    /// How many days ahead (1-7).
    days: u8,
}

#[derive(Serialize, JsonSchema)]
struct Forecast {
    region: String,
    days: Vec<String>,
}

async fn forecast(args: ForecastArgs, ctx: Context) -> Result<Json<Forecast>, HandlerError> {
    if !(1..=7).contains(&args.days) {
        return Err(HandlerError::msg("`days` must be between 1 and 7"));
    }
    ctx.progress(1.0, Some(1.0), Some("looked it up")).await;
    Ok(Json(Forecast {
        region: args.region,
        days: (0..args.days).map(|d| format!("day {d}: sunny")).collect(),
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()?;
    let spec = ToolSpec::new("forecast")
        .description("Weather for the next days")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region", "description": "Region code"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7}
            },
            "required": ["region", "days"]
        }))
        .output_schema_for::<Forecast>();
    let server = Server::builder("example-http", "1.0.0")
        .tool_spec(spec, forecast)
        .tool(
            "touch",
            "Announces that the tool list changed",
            |ctx: Context| async move {
                ctx.notifier().tools_list_changed();
                "sent"
            },
        )
        .build()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    switchboard_server::http::serve(server, listener, HttpOptions::new(), shutdown).await?;
    Ok(())
}
