//! The gateway: a [`Host`]'s governed tool table served as one MCP server.
//!
//! Each tool of the table is registered with its namespaced name, its
//! description (with provenance) and its input schema; `tools/call` goes
//! through [`Host::call_detailed`], so the gate, pins, budget, audit and
//! breaker apply exactly as in `switchboard call`. Server annotations are
//! not passed on: they are untrusted, and the gate has already weighed them.
//!
//! Approvals: there is no terminal, so a question is answered by
//! [`GatewayOptions::assume_yes`], or put to the upstream client's user
//! through elicitation (a multi round-trip `input_required`, bound to the
//! call by a signed, single-use `requestState`) when that client declares
//! form elicitation, or denied with an `isError` text saying how to allow
//! the tool. The gate is assessed once per call, in the host: the
//! gateway's approver hands the question back (`Approval::Defer`), the
//! call ends with it in `CallReport::approval_needed` (audit outcome
//! `asked`), and the answer comes as the retry, a call of its own. Table changes (a server's `list_changed`, a reconnect) reach
//! upstream listeners as `notifications/tools/list_changed`.
//!
//! Least privilege: the served list is [`Host::tools`], the model's view —
//! no tool the rules deny (called by name anyway, the gate refuses it), and
//! a tool whose pinned definition changed only with its approved
//! description, its title saying it changed, until `pins accept`.
//!
//! Identity: a relayed result's downstream protocol `_meta` (its
//! `serverInfo` above all) is removed, so every result carries the
//! gateway's own `serverInfo` (see `identity`). Live status: the
//! instructions and the [`STATUS_URI`] resource are computed when asked
//! for, from the host's current server states.
//!
//! Modules: `tools` keeps the served tools in step with the table and
//! runs each call, `approval` puts the gate's question upstream,
//! `identity` strips downstream `_meta`, `status` the live instructions and
//! status resource, `run` serves the gateway over stdio or Streamable
//! HTTP.
//!
//! ```no_run
//! # async fn example(host: switchboard_host::Host) -> Result<(), switchboard_gateway::GatewayError> {
//! use switchboard_gateway::{Gateway, GatewayOptions};
//! let gateway = Gateway::new(&host, GatewayOptions::default())?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|source| {
//!     switchboard_gateway::GatewayError::Bind { addr: "127.0.0.1:0".into(), source }
//! })?;
//! gateway.serve_http(listener, std::future::pending()).await
//! # }
//! ```

mod approval;
mod identity;
mod run;
mod status;
mod tools;

pub use status::STATUS_URI;

use switchboard_host::Host;
use switchboard_server::{BuildError, ServeError, Server};
use tokio::task::JoinHandle;

/// How the gateway behaves.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Answer every approval question with "allow once" (`serve --yes`).
    pub assume_yes: bool,
}

impl GatewayOptions {
    /// Options that answer every approval question with "allow once".
    #[must_use]
    pub fn assume_yes(mut self, yes: bool) -> Self {
        self.assume_yes = yes;
        self
    }
}

/// Why the gateway could not be built or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The MCP server the gateway is made of could not be built.
    #[error("cannot build the gateway server")]
    Build(#[from] BuildError),
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A runner stopped with an error.
    #[error("the gateway stopped")]
    Serve(#[from] ServeError),
}

/// A gateway over one mounted [`Host`]: an MCP server whose tools are the
/// host's governed tools, kept in step with the table while it lives.
#[derive(Debug)]
pub struct Gateway {
    server: Server,
    tool_count: usize,
    sync: JoinHandle<()>,
}

impl Gateway {
    /// Builds the gateway's server, registers every tool of `host`'s table
    /// and starts following the table's changes.
    ///
    /// # Errors
    /// [`GatewayError::Build`] when the server cannot be built.
    pub fn new(host: &Host, options: GatewayOptions) -> Result<Gateway, GatewayError> {
        let server = build_server(host, &options)?;
        // Subscribe before registering, so no change falls between the two.
        let changes = host.subscribe();
        let registered = tools::register_all(&server, host, &options);
        let tool_count = registered.len();
        let sync = tokio::spawn(tools::follow_changes(
            host.clone(),
            server.clone(),
            options,
            registered,
            changes,
        ));
        Ok(Gateway {
            server,
            tool_count,
            sync,
        })
    }

    /// The MCP server the gateway serves (to run it on a runner of one's own).
    #[must_use]
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// How many tools were served when the gateway started.
    #[must_use]
    pub fn tool_count(&self) -> usize {
        self.tool_count
    }

    /// Serves the gateway on this process's stdin and stdout until stdin
    /// ends.
    ///
    /// # Errors
    /// [`GatewayError::Serve`] when stdin cannot be read.
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        run::stdio(&self.server).await
    }

    /// Serves the gateway over Streamable HTTP at `/mcp` on `listener` until
    /// `shutdown` completes.
    ///
    /// # Errors
    /// [`GatewayError::Serve`] when the listener fails for good.
    pub async fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        run::http(&self.server, listener, shutdown).await
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.sync.abort();
        self.server.shutdown();
    }
}

/// The gateway's MCP server, with no tools yet: live instructions and the
/// status resource.
fn build_server(host: &Host, options: &GatewayOptions) -> Result<Server, BuildError> {
    let builder = Server::builder("switchboard", env!("CARGO_PKG_VERSION"))
        .title("Switchboard gateway")
        .instructions_with(status::instructions(host, options))
        // The outages change at run time: never let a client cache them long.
        .discover_cache(0, switchboard_wire::CacheScope::Private)
        .declare_tools()
        // The table changes at run time: never let a client cache it long.
        .list_cache(0, switchboard_wire::CacheScope::Private);
    status::register(builder, host).build()
}
