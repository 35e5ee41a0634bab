//! `client-holder`: a process that holds a [`switchboard_client::Client`]
//! to a stdio server and then waits to be killed, so tests can check that
//! no server process outlives a client killed with `SIGKILL`.
//!
//! Usage: `client-holder SERVER [ARGS...]`. It starts `SERVER ARGS…`,
//! connects, calls the server's `pids` tool (see `mock-server`), prints one
//! line `ready <server pid> <grandchild pid or 0>` on stdout and sleeps until
//! it is killed.

// Printing the ready line is this binary's whole interface.
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, bail};
use switchboard_client::{Client, StdioConfig, StdioTransport};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let Some(server) = args.next() else {
        bail!("usage: client-holder SERVER [ARGS...]");
    };
    let transport = StdioTransport::spawn(StdioConfig::new("held", server).args(args)).await?;
    let pid = transport.pid().unwrap_or(0);
    let client = Client::builder("held", transport).connect().await?;
    let pids = client.call_tool("pids", None).await?;
    let grandchild = pids
        .structured_content
        .as_ref()
        .and_then(|s| s.get("grandchild"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let mut out = std::io::stdout();
    writeln!(out, "ready {pid} {grandchild}").context("writing the ready line")?;
    out.flush()?;
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}
