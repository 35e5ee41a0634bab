//! `conformance-server`: the fixtures of the official MCP conformance suite,
//! served over Streamable HTTP (or stdio) by switchboard-server.
//!
//! ```text
//! conformance-server --listen 127.0.0.1:8080        # endpoint http://127.0.0.1:8080/mcp
//! conformance-server --listen 127.0.0.1:8080 --no-legacy
//! conformance-server --stdio
//! conformance-server --listen 127.0.0.1:8080 --skills-dir crates/conformance-server/skills
//! ```
//! Legacy 2025-11-25 clients (`initialize`, sessions) are served alongside
//! modern ones unless `--no-legacy` is given. The skills of the Skills
//! extension's scenarios are compiled in, or read from `--skills-dir`.

mod fixtures;
mod skills;
mod tasks;

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::Parser;
use switchboard_server::http::HttpOptions;

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    version,
    about = "MCP conformance fixtures served by switchboard-server"
)]
struct Flags {
    /// Address to serve Streamable HTTP on; the endpoint is /mcp.
    #[arg(long, default_value = "127.0.0.1:8080", conflicts_with = "stdio")]
    listen: SocketAddr,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Do not answer legacy 2025-11-25 clients (initialize, sessions).
    #[arg(long)]
    no_legacy: bool,
    /// Serve the skills in this directory instead of the compiled-in copies.
    #[arg(long)]
    skills_dir: Option<std::path::PathBuf>,
    /// Worker threads (0 = a single-threaded runtime).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
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
    runtime.block_on(run(flags))
}

async fn run(flags: Flags) -> anyhow::Result<()> {
    let server = fixtures::server(!flags.no_legacy, flags.skills_dir.as_deref())?;
    if flags.stdio {
        switchboard_server::stdio::serve(server).await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(flags.listen)
        .await
        .with_context(|| format!("cannot listen on {}", flags.listen))?;
    let addr = listener.local_addr()?;
    eprintln_ready(addr);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    switchboard_server::http::serve(server, listener, HttpOptions::new(), shutdown).await?;
    Ok(())
}

/// Says where the server listens, on stderr (scripts wait for the port
/// instead of parsing this).
#[allow(clippy::print_stderr)] // The binary reports its address to the operator.
fn eprintln_ready(addr: SocketAddr) {
    eprintln!("conformance-server: serving http://{addr}/mcp");
}
