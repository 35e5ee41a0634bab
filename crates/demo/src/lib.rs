//! The demo MCP servers that ship with Switchboard, built on
//! `switchboard-server`.
//!
//! They exist so a new user sees the whole system work with no config and
//! no network: `switchboard demo` mounts `notes` over stdio (the
//! `switchboard` binary re-executed as `switchboard demo-server notes`) and
//! `tickets` over Streamable HTTP on `127.0.0.1:3115`, started in-process.
//! `switchboard selftest` checks the host against them.
//!
//! # Layout
//! - [`notes`]: the lab's three tools served two per page (`search`,
//!   annotated `readOnlyHint: true`, `read_note` and `list_notes`) and a
//!   note longer than the host's 8,000-character budget.
//! - [`tickets`]: `search` (the same name as notes' tool), `get_ticket`,
//!   `create_ticket` (which asks the user for a missing priority by
//!   elicitation), `summarize_ticket` (which asks the client's model by
//!   sampling), `export_tickets` (a task) and a tool with a non-ASCII
//!   name; one
//!   `notifications/progress` before each search result.
//! - [`faulty`]: a server that misbehaves on request (hangs, dies), for the
//!   self-test's timeout and crash checks.
//!
//! Its place among the layers: it uses the server framework only; the host
//! and the CLI use it.
//!
//! # Example
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Serve the tickets demo on a free loopback port until the handle drops.
//! let tickets = switchboard_demo::tickets::start("127.0.0.1:0".parse()?).await?;
//! println!("tickets at {}", tickets.url());
//! tickets.stop().await;
//! # Ok(()) }
//! ```

pub mod faulty;
pub mod notes;
mod search;
pub mod tickets;

/// Version the demo servers report in `serverInfo`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a demo server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// A tool definition was refused by the framework (a bug in the demo).
    #[error("cannot build the {server} demo server")]
    Build {
        /// `notes`, `tickets` or `faulty`.
        server: &'static str,
        /// What the framework refused.
        #[source]
        source: switchboard_server::BuildError,
    },
    /// The runner failed: the port is taken, stdin broke.
    #[error(transparent)]
    Serve(#[from] switchboard_server::ServeError),
}
