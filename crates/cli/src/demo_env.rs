//! The built-in demo config: `notes` over stdio (this binary re-executed
//! as `switchboard demo-server notes`, under the `strict` sandbox) and `tickets` over Streamable HTTP
//! on `127.0.0.1:3115`, served from this process.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde_json::{Value, json};
use switchboard_demo::tickets;
use switchboard_host::ConfigProblem;
use switchboard_host::{Config, ConfigOrigin, ConfigProblems, HostError};
use switchboard_wire::shared::lock;

/// Permission rules of the demo: reading is allowed; both `search` tools
/// (even the one annotated read-only), `create_ticket` and the summary are
/// asked about.
const DEMO_ALLOW: [&str; 4] = [
    "mcp__notes__list_notes",
    "mcp__notes__read_note",
    "mcp__tickets__get_ticket",
    "mcp__tickets__search",
];

/// The tickets server of the demo, running in this process, and the
/// listener it will use until it starts.
#[derive(Debug, Default)]
pub(crate) struct DemoTickets {
    listener: Option<TcpListener>,
    running: Mutex<Option<tickets::Running>>,
}

impl DemoTickets {
    /// Starts the tickets server on the listener reserved by the demo
    /// config; does nothing when the demo was not used.
    ///
    /// # Errors
    /// When the listener cannot be handed to tokio.
    pub(crate) fn start(&mut self) -> anyhow::Result<()> {
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        listener
            .set_nonblocking(true)
            .context("cannot prepare the tickets demo listener")?;
        let listener = tokio::net::TcpListener::from_std(listener)
            .context("cannot prepare the tickets demo listener")?;
        let running =
            tickets::start_on(listener).context("cannot start the tickets demo server")?;
        *lock(&self.running) = Some(running);
        Ok(())
    }

    /// Takes the running server out, to stop it.
    pub(crate) fn take_running(&self) -> Option<tickets::Running> {
        lock(&self.running).take()
    }

    /// Stops the tickets server, waiting for it.
    pub(crate) async fn stop(&mut self) {
        if let Some(running) = self.take_running() {
            running.stop().await;
        }
    }
}

/// Shared between the config loader's demo provider and the caller.
pub(crate) type SharedTickets = Arc<Mutex<DemoTickets>>;

/// A demo provider for [`Config::load`]: reserves the tickets port
/// (3115, or a free one when it is taken) and builds the demo config.
pub(crate) fn provider(
    shared: SharedTickets,
) -> impl FnOnce() -> Result<Config, HostError> + 'static {
    move || {
        let listener = reserve_tickets_port().map_err(|e| demo_error(&e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| demo_error(&format!("cannot read the tickets demo address: {e}")))?;
        lock(&shared).listener = Some(listener);
        config(&format!("http://{addr}/mcp"), &[])
    }
}

/// The demo config with tickets at `tickets_url`, plus `extra` servers
/// (alias, entry) after the two.
///
/// # Errors
/// [`HostError::Config`] if the entries do not parse (a bug) or the binary's own
/// path is unknown.
pub(crate) fn config(tickets_url: &str, extra: &[(&str, Value)]) -> Result<Config, HostError> {
    let exe = self_exe().map_err(|e| demo_error(&e))?;
    let mut servers = serde_json::Map::new();
    servers.insert(
        "notes".into(),
        // The demo's own server shows the strict sandbox working: it keeps
        // its notes in memory and needs nothing beyond its own program.
        json!({"command": exe.to_string_lossy(), "args": ["demo-server", "notes"], "sandbox": "strict"}),
    );
    servers.insert(
        "tickets".into(),
        json!({"type": "http", "url": tickets_url}),
    );
    for (alias, entry) in extra {
        servers.insert((*alias).to_owned(), entry.clone());
    }
    let text = json!({
        "mcpServers": servers,
        "permissions": {"allow": DEMO_ALLOW},
    })
    .to_string();
    Config::parse(&text, ConfigOrigin::Demo, &BTreeMap::new())
}

/// This binary, to re-execute as a demo server.
pub(crate) fn self_exe() -> Result<PathBuf, String> {
    std::env::current_exe()
        .map_err(|e| format!("cannot find the switchboard binary to start the notes demo: {e}"))
}

/// Binds `127.0.0.1:3115`, or a free loopback port when 3115 is taken (by
/// another switchboard, say).
fn reserve_tickets_port() -> std::io::Result<TcpListener> {
    let preferred = SocketAddr::from((Ipv4Addr::LOCALHOST, tickets::DEFAULT_PORT));
    match TcpListener::bind(preferred) {
        Ok(l) => Ok(l),
        Err(e) => {
            tracing::info!(error = %e, "port {} is taken; the tickets demo uses a free port", tickets::DEFAULT_PORT);
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        }
    }
}

/// A loopback port with nothing listening on it (bound, then released).
pub(crate) fn empty_port() -> std::io::Result<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(l.local_addr()?.port())
}

fn demo_error(problem: &str) -> HostError {
    ConfigProblems {
        file: ConfigOrigin::Demo.describe(),
        problems: vec![ConfigProblem {
            kind: switchboard_host::ProblemKind::NotFound,
            key: "(demo)".into(),
            problem: problem.to_owned(),
            fix: "write a config file (see the README) or fix the problem above".into(),
            position: None,
        }],
    }
    .into()
}
