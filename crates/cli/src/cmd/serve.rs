//! `switchboard serve [--stdio | --http ADDR]`: the gateway
//! (`switchboard-gateway`) over the config's mounted host. This module only
//! turns flags into the gateway's options and runs it until stdin ends
//! (stdio) or Ctrl-C / SIGTERM.

use std::net::SocketAddr;

use anyhow::Context as _;
use switchboard_gateway::{Gateway, GatewayOptions};

use crate::session::Session;
use crate::settings::Settings;

/// Mounts the config and serves its table until stdin ends (stdio) or
/// Ctrl-C / SIGTERM.
///
/// # Errors
/// When the config is bad, the address cannot be bound, or stdin fails.
pub(crate) async fn run(
    settings: &Settings,
    http: Option<SocketAddr>,
    yes: bool,
) -> anyhow::Result<()> {
    let session = Session::open(settings).await?;
    let options = GatewayOptions::default().assume_yes(yes);
    let result = serve(&session, http, options).await;
    session.close().await;
    result
}

async fn serve(
    session: &Session,
    http: Option<SocketAddr>,
    options: GatewayOptions,
) -> anyhow::Result<()> {
    let gateway = Gateway::new(&session.host, options)?;
    match http {
        None => {
            tokio::select! {
                r = gateway.serve_stdio() => r.context("stdio gateway"),
                () = crate::shutdown_signal() => Ok(()),
            }
        }
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let local = listener.local_addr().unwrap_or(addr);
            // The address goes to stderr: stdout is not used.
            crate::out::note(format!(
                "switchboard gateway: http://{local}/mcp ({} tools; Ctrl-C stops it)",
                gateway.tool_count()
            ));
            gateway
                .serve_http(listener, crate::shutdown_signal())
                .await
                .context("HTTP gateway")
        }
    }
}
