//! `bench-echo`: the one-tool server the benchmarks drive: `echo` returns
//! its `text` argument as text content.
//!
//! ```text
//! bench-echo --listen 127.0.0.1:18080      # Streamable HTTP, endpoint /mcp
//! bench-echo --stdio
//! ```

use std::net::SocketAddr;

use clap::Parser;
use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::Server;
use switchboard_server::http::HttpOptions;

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(about = "The echo server of the benchmarks")]
struct Flags {
    /// Address to serve Streamable HTTP on; the endpoint is /mcp.
    #[arg(long, conflicts_with = "stdio")]
    listen: Option<SocketAddr>,
    /// Serve on stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Worker threads (0 = a single-threaded runtime).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let runtime = if flags.threads == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(flags.threads)
            .enable_all()
            .build()?
    };
    let server = Server::builder("switchboard-bench-echo", env!("CARGO_PKG_VERSION"))
        .tool("echo", "Returns its text argument", echo)
        .build()?;
    runtime.block_on(async move {
        match flags.listen {
            Some(addr) if !flags.stdio => {
                let listener = tokio::net::TcpListener::bind(addr).await?;
                let shutdown = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                switchboard_server::http::serve(server, listener, HttpOptions::new(), shutdown)
                    .await?;
            }
            _ => switchboard_server::stdio::serve(server).await?,
        }
        Ok(())
    })
}
