//! In-process cost of one `tools/call` through the stdio runner: framing,
//! parsing, `_meta`, validation, the handler, serialization. No system
//! calls: the input is a buffer, the output is discarded.
//!
//! ```text
//! cargo bench -p switchboard-server --bench dispatch            # 200 000 calls
//! cargo bench -p switchboard-server --bench dispatch -- 50000
//! ```
//! The end-to-end figures (with sockets and a load generator) come from
//! `bench/server/run.sh`.

use std::io::{Cursor, Write};
use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::Server;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

/// Counts and drops what the server writes.
struct Sink(usize);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[allow(clippy::print_stdout)] // A benchmark reports on stdout.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200_000);
    let line = |i: usize| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}\n"
        )
    };
    let mut input = Vec::with_capacity(n * line(0).len() + n * 8);
    for i in 0..n {
        input.extend_from_slice(line(i).as_bytes());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let server = Server::builder("bench", "1")
        .tool(
            "echo",
            "Returns its text",
            |a: EchoArgs| async move { a.text },
        )
        .build()?;
    let started = Instant::now();
    runtime.block_on(switchboard_server::stdio::serve_io(
        server,
        Cursor::new(input),
        Sink(0),
        Default::default(),
    ))?;
    let elapsed = started.elapsed();
    println!(
        "tools/call through the stdio runner: {:.2} µs per request ({n} requests)",
        elapsed.as_secs_f64() * 1e6 / n as f64
    );
    Ok(())
}
