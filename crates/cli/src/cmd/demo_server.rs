//! `switchboard demo-server notes|tickets`: the demo servers on their own.

use std::net::{Ipv4Addr, SocketAddr};

use anyhow::Context as _;
use switchboard_demo::{faulty, notes, tickets};

use crate::flags::DemoServerKind;
use crate::out;

/// Runs one demo server: notes and faulty on stdio until stdin ends,
/// tickets on `127.0.0.1:PORT` until Ctrl-C or SIGTERM.
///
/// # Errors
/// When stdin cannot be read or the port cannot be bound.
pub(crate) async fn run(which: DemoServerKind, port: u16) -> anyhow::Result<()> {
    match which {
        DemoServerKind::Notes => notes::serve_stdio().await.context("notes demo server")?,
        DemoServerKind::Faulty => faulty::serve_stdio().await.context("faulty demo server")?,
        DemoServerKind::Tickets => {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let running = tickets::start(addr)
                .await
                .with_context(|| format!("tickets demo server on {addr}"))?;
            // The address goes to stderr: stdout stays free for data.
            out::note(format!(
                "tickets demo server: {} (Ctrl-C stops it)",
                running.url()
            ));
            crate::shutdown_signal().await;
            running.stop().await;
        }
    }
    Ok(())
}
