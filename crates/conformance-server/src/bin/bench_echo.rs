//! `bench-echo`: the one-tool server the benchmarks drive: `echo` returns
//! its `text` argument as text content.
//!
//! ```text
//! bench-echo --listen 127.0.0.1:18080      # Streamable HTTP, endpoint /mcp
//! bench-echo --stdio
//! bench-echo --stdio --ceiling            # the answer's bytes, no server work
//! bench-echo --stdio --no-server-info     # results without the serverInfo _meta
//! ```
//!
//! `--ceiling` is a measuring stick, not a server: it answers every line
//! with the exact bytes `--stdio` sends for the bench's `echo "hi"` call
//! (the request's id copied, nothing parsed or checked). What a client
//! reaches against it is the most any server sending that answer
//! (`resultType`, the `serverInfo` `_meta`) could reach on the machine, so
//! the bench can tell the answer's own cost from the server's.

use std::io::{BufRead, Write};
use std::net::SocketAddr;

use clap::Parser;
use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::Server;
use switchboard_server::http::HttpOptions;

/// The allocator the `switchboard` binary ships with, so the benchmarks
/// measure the server framework as it runs there.
#[global_allocator]
static ALLOCATOR: switchboard_alloc::Mimalloc = switchboard_alloc::Mimalloc;

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
    /// With --stdio: answer every line with the echo answer's bytes, the id
    /// copied, and do nothing else (the bench's ceiling).
    #[arg(long, requires = "stdio")]
    ceiling: bool,
    /// Leave the `serverInfo` `_meta` out of every result.
    #[arg(long)]
    no_server_info: bool,
}

/// The server's name in every answer's `serverInfo`.
const NAME: &str = "switchboard-bench-echo";

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
    if flags.ceiling {
        return ceiling(!flags.no_server_info);
    }
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
    let server = Server::builder(NAME, env!("CARGO_PKG_VERSION"))
        .tool("echo", "Returns its text argument", echo)
        .server_info_meta(!flags.no_server_info)
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

/// `--ceiling`: every input line gets the echo answer with the line's id
/// (with the `serverInfo` `_meta` when `server_info`).
fn ceiling(server_info: bool) -> anyhow::Result<()> {
    let meta = if server_info {
        format!(
            r#","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"{NAME}","version":"{}"}}}}"#,
            env!("CARGO_PKG_VERSION")
        )
    } else {
        String::new()
    };
    let tail = format!(
        r#","result":{{"content":[{{"type":"text","text":"hi"}}],"resultType":"complete"{meta}}}}}"#
    );
    let mut input = std::io::BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let Some(id) = raw_id(&line) else { continue };
        out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
        out.write_all(id)?;
        out.write_all(tail.as_bytes())?;
        out.write_all(b"\n")?;
        // Written when no more input is waiting: a burst costs one write.
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The raw text of the line's first `"id":` value (a number or a string
/// without escapes); the bench's requests carry exactly one.
fn raw_id(line: &[u8]) -> Option<&[u8]> {
    let at = line.windows(5).position(|w| w == br#""id":"#)? + 5;
    let rest = &line[at..];
    let end = if rest.first() == Some(&b'"') {
        1 + rest[1..].iter().position(|&b| b == b'"')? + 1
    } else {
        rest.iter().position(|&b| b == b',' || b == b'}')?
    };
    Some(&rest[..end])
}
