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
//! Over HTTP, callers may be required to authenticate
//! ([`GatewayOptions::auth`], [`InboundAuth`]): the caller's principal
//! goes into each call ([`CallOptions`](switchboard_host::CallOptions)), so
//! the config's `principals` rules narrow what it may call and list, and
//! the audit line names it. `/healthz` and `/readyz` are served without
//! authentication.
//!
//! Beyond tools, the servers' prompts (named like tools), resources and
//! resource templates (their URIs kept, or wrapped as
//! `switchboard-mount://ALIAS/ORIGINAL` where two servers' URIs collide)
//! are served from the host's [`Catalog`](switchboard_host::Catalog), with
//! completions routed to the owning server and resource updates passed to
//! listen streams. A server's question on a tool call (MRTR elicitation,
//! sampling, roots; or a legacy server's own request, the call parked on
//! this replica until the retry) is relayed to the upstream client when it
//! declared the capability: mount the host with [`relay_input_handler`].
//!
//! Modules: `serve` runs a gateway from start to end ([`serve`]: the
//! host mounted, the watchers, the runner, the shutdown) and holds the
//! stdio and HTTP runners; `tools` keeps the served tools in step with the
//! table and turns each `tools/call` into the host's governed call, which
//! `call` drives for the upstream request (progress, log messages, a
//! legacy server's questions from `question`); `approval` puts the gate's
//! question upstream, `identity` strips downstream `_meta`, `status` the
//! live instructions and status resource, `tasks` hands downstream tasks
//! on to upstream clients that declared the tasks extension, `catalog`
//! serves prompts, resources, templates and completions (each through the
//! host's governed path), `relay` relays servers' questions, `parked`
//! holds the calls of legacy servers that asked until their retry,
//! `inbound` checks callers' tokens, `health` answers liveness and
//! readiness, `state` is the store replicas share.
//! Observability:
//! `trace` continues the upstream request's W3C trace context on every
//! downstream call, `metrics` (Prometheus, `/metrics`) and `otel`
//! (OpenTelemetry over OTLP/HTTP) are gathered in [`Telemetry`], and
//! `reload` watches the config file ([`watch_config`]).
//!
//! Replicas: gateways started with the same config, lockfile and
//! `GatewayOptions::state_key` serve one URL behind a round-robin
//! balancer; an approval asked by one is completed by another, since the
//! approval's `requestState` is sealed with the shared key and bound to
//! the tool, the arguments and the principal, and lapses after
//! [`APPROVAL_STATE_TTL`]. Its single use is enforced by the replica that
//! redeems it (a replay on another replica within the lapse would run the
//! same approved call, with the same arguments, again), unless the
//! replicas share a ledger file ([`GatewayOptions::replay_ledger`]) or a
//! store ([`GatewayOptions::state`], `state`), which also counts callers'
//! calls a minute for all of them. The one exception
//! is a legacy (2025-11-25) server's question: its call waits in the memory
//! of the replica that asked, so the retry must reach that replica. A
//! replica that has the asking one among its [`GatewayOptions::peers`]
//! sends the retry on to it (its `requestState` starts with the replica's
//! name), as it does requests for another replica's tasks; without peers
//! such calls need load-balancer affinity ([`GatewayOptions::replica`] is
//! named in the error another replica gives). A task handed on upstream
//! lives in the replica that handed it on, and with the shared key
//! survives that replica's restart (`tasks`).
//!
//! A gateway from start to end, until Ctrl-C:
//!
//! ```no_run
//! # async fn example(config: switchboard_host::Config) -> Result<(), switchboard_gateway::GatewayError> {
//! use switchboard_gateway::{GatewayOptions, Listener, ServeConfig, serve};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|source| {
//!     switchboard_gateway::GatewayError::Bind { addr: "127.0.0.1:0".into(), source }
//! })?;
//! let config = ServeConfig::new(config, GatewayOptions::default());
//! let stop = async {
//!     let _ = tokio::signal::ctrl_c().await;
//! };
//! serve(Listener::Http(listener), config, stop).await
//! # }
//! ```
//!
//! Or over a host mounted by hand:
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

mod access;
mod approval;
mod call;
mod catalog;
mod console;
mod health;
mod identity;
mod inbound;
mod metrics;
mod otel;
mod parked;
mod question;
mod relay;
mod reload;
mod search;
mod serve;
mod skills;
mod state;
mod status;
mod tasks;
mod telemetry;
mod tools;
mod trace;

use std::time::Duration;

pub use access::{AccessFile, AccessFileError, AccessWarning, check_access_file};
pub use console::{
    LOCAL_PRINCIPAL, MAX_PENDING_APPROVALS, MAX_SESSIONS, SESSION_TTL, SIGN_IN_FAILURES,
    SIGN_IN_WINDOW, console_login_token,
};
pub use health::Drain;
pub use metrics::Metrics;
pub use otel::OtelError;
pub use reload::{
    ConfigSource, TlsFiles, TokensSource, WATCH_POLL, check_principals, watch_config, watch_tls,
    watch_tokens,
};
pub use telemetry::Telemetry;

pub use inbound::{
    INTROSPECTION_TTL, InboundAuth, Introspection, JWKS_MAX_AGE, JWKS_MIN_REFETCH, MIN_TOKEN_LEN,
    OAuthInbound, StaticTokens, TokenChange,
};
pub use parked::{PARK_LIMIT, PARK_TTL};
pub use relay::relay_input_handler;
pub use serve::{Listener, OnReady, ServeConfig, serve};

pub use state::{HEARTBEAT, Membership, REPLICA_TTL, SharedState, StateError, StateFail};
pub use status::STATUS_URI;
pub use tools::RELIST_MIN_INTERVAL;

use std::sync::Arc;
use switchboard_host::Host;
use switchboard_server::http::ServerTls;

use switchboard_server::{BuildError, ReplicaDirectory, ServeError, Server};
use tokio::task::JoinHandle;

/// How long an approval question's `requestState` stays good: the user
/// has this long to answer.
pub const APPROVAL_STATE_TTL: Duration = Duration::from_secs(300);

/// How the gateway behaves.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Answer every approval question with "allow once" (`serve --yes`).
    pub assume_yes: bool,
    /// How HTTP callers authenticate; `None` lets anyone who reaches the
    /// port call (stdio never authenticates).
    pub auth: Option<InboundAuth>,
    /// The key `requestState` and cursors are sealed with; replicas behind
    /// one URL share it. `None`: a random key for this process.
    pub state_key: Option<Vec<u8>>,
    /// A file shared by the replicas behind one URL where each used
    /// approval `requestState` is recorded, so an answered approval runs
    /// once across all of them. `None`: each gateway remembers its own.
    pub replay_ledger: Option<std::path::PathBuf>,
    /// The store replicas share (`serve --state redis://…`): each
    /// approval's single use is recorded there (in place of
    /// [`GatewayOptions::replay_ledger`]), and [`serve`] counts callers'
    /// calls a minute there for every replica. `None`: as without it.
    pub state: Option<SharedState>,
    /// Metrics and traces (`/metrics` is served when metrics are on).
    pub telemetry: Telemetry,
    /// This gateway's name among replicas, named in the error a retry
    /// gets when it reaches another replica than the one holding its
    /// parked call; `None`: the process id.
    pub replica: Option<String>,
    /// The other replicas behind the same URL: each one's name (its
    /// `replica`) and the `http://` or `https://` URL of its MCP endpoint as this one
    /// reaches it. A request whose work lives in another replica is sent
    /// on to it (a `tasks/*` request for a task it handed on, the retry
    /// answering a legacy server's question it parked, a request of a
    /// legacy client's session it opened), so a plain round-robin
    /// balancer needs no rule and no affinity.
    pub peers: Vec<(String, String)>,
    /// The URL the other replicas reach this one's MCP endpoint at
    /// (`serve --advertise-url`), registered in the shared store
    /// ([`GatewayOptions::state`]) with this replica's name; `None`: the
    /// address it listens on (right when the replicas share a host or
    /// a network where that address is reachable).
    pub advertise_url: Option<String>,
    /// How long a call parked on a legacy server's question waits for the
    /// retry ([`PARK_TTL`] when `None`).
    pub park_ttl: Option<Duration>,
    /// How many calls may be parked at once ([`PARK_LIMIT`] when `None`).
    pub park_limit: Option<usize>,
    /// How often the token of an open `subscriptions/listen` stream is
    /// checked again (the stream ends once it is refused); the framework's
    /// default (60 s) when `None`.
    pub recheck_streams: Option<Duration>,
    /// Serve HTTPS with this certificate and key (replaceable while
    /// serving: [`watch_tls`]); `None`: plain HTTP.
    pub tls: Option<ServerTls>,
    /// The drain switch `/readyz` reports ([`Gateway::drain`]): give one
    /// of your own to start the drain from outside [`serve`].
    pub drain: Drain,
    /// The HTTP runner's connection limits (`serve --max-connections`,
    /// `--header-timeout` …); the framework's defaults where unset.
    pub connections: ConnectionLimits,
    /// The shortest time between two re-listings of downstream servers
    /// whose listing's `ttlMs` lapsed ([`RELIST_MIN_INTERVAL`] when
    /// `None`).
    pub relist_min: Option<Duration>,
    /// List each caller only the always-loaded tools, the built-ins and
    /// what its own `mcp__switchboard__search_tools` calls loaded
    /// (`serve --tool-search`); the config's `toolSearch` (`true`, or a
    /// number of tokens the table is over) turns it on too.
    pub tool_search: bool,
    /// Serve the web console at `/console` over HTTP (`serve --console`):
    /// only to principals whose config entry says `"console": true`, so
    /// it needs [`GatewayOptions::auth`].
    pub console: bool,
    /// A one-time sign-in token for the console without authentication
    /// (`switchboard console`, on loopback): the first browser that opens
    /// `/console/login?once=TOKEN` is signed in as the principal
    /// [`LOCAL_PRINCIPAL`], which may open the console.
    pub console_login: Option<String>,
    /// The eval report file the console's Evals page shows (`serve
    /// --console-evals FILE`), read again at each view.
    pub console_evals: Option<std::path::PathBuf>,
    /// The calls parked on this gateway (each [`Gateway`] makes its own).
    parking: call::CallParking,
    /// The approvals waiting in the console (with [`GatewayOptions::console`]).
    approvals: Option<console::Approvals>,
    /// Each caller's loaded tools, when the table is deferred.
    search: Option<search::Search>,
}

impl std::fmt::Debug for GatewayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayOptions")
            .field("assume_yes", &self.assume_yes)
            .field("state_key", &self.state_key.as_ref().map(|_| ".."))
            .field("replay_ledger", &self.replay_ledger)
            .field("state", &self.state)
            .field("telemetry", &self.telemetry)
            .field("auth", &self.auth)
            .field("replica", &self.replica)
            .field("peers", &self.peers)
            .field("advertise_url", &self.advertise_url)
            .field("park_ttl", &self.park_ttl)
            .field("park_limit", &self.park_limit)
            .field("recheck_streams", &self.recheck_streams)
            .field("tls", &self.tls.is_some())
            .field("drain", &self.drain)
            .field("connections", &self.connections)
            .field("relist_min", &self.relist_min)
            .field("tool_search", &self.tool_search)
            .field("console", &self.console)
            .field("console_login", &self.console_login.as_ref().map(|_| ".."))
            .finish()
    }
}

impl GatewayOptions {
    /// Options that answer every approval question with "allow once".
    #[must_use]
    pub fn assume_yes(mut self, yes: bool) -> Self {
        self.assume_yes = yes;
        self
    }

    /// Options requiring HTTP callers to authenticate with `auth`.
    #[must_use]
    pub fn auth(mut self, auth: InboundAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Options sealing state with `key` (shared by replicas).
    #[must_use]
    pub fn state_key(mut self, key: Option<Vec<u8>>) -> Self {
        self.state_key = key;
        self
    }

    /// Options recording used approvals in the ledger at `path` (shared
    /// by replicas).
    #[must_use]
    pub fn replay_ledger(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.replay_ledger = path;
        self
    }

    /// Options sharing state with the other replicas in `state`.
    #[must_use]
    pub fn state(mut self, state: Option<SharedState>) -> Self {
        self.state = state;
        self
    }

    /// Options naming this gateway `replica` among replicas.
    #[must_use]
    pub fn replica(mut self, replica: impl Into<String>) -> Self {
        self.replica = Some(replica.into());
        self
    }

    /// Options registering this replica in the shared store at `url`
    /// ([`GatewayOptions::advertise_url`]).
    #[must_use]
    pub fn advertise_url(mut self, url: Option<String>) -> Self {
        self.advertise_url = url;
        self
    }

    /// Options sending requests for another replica's tasks on to it:
    /// `peers` are (name, `http://` or `https://` URL of its MCP endpoint)
    /// pairs.
    #[must_use]
    pub fn peers(mut self, peers: Vec<(String, String)>) -> Self {
        self.peers = peers;
        self
    }

    /// Options reporting through `telemetry`.
    #[must_use]
    pub fn telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Options serving HTTPS with `tls`.
    #[must_use]
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Options reporting `drain` at `/readyz`.
    #[must_use]
    pub fn drain(mut self, drain: Drain) -> Self {
        self.drain = drain;
        self
    }

    /// Options serving HTTP within `limits`.
    #[must_use]
    pub fn connections(mut self, limits: ConnectionLimits) -> Self {
        self.connections = limits;
        self
    }
}

/// How many connections the gateway's HTTP runner holds and how long each
/// may take (the framework's [`HttpOptions`](switchboard_server::http::HttpOptions),
/// `serve --max-connections` and the timeout flags); `None` keeps the
/// framework's default, which `docs/LIMITS.md` lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// Connections served at once; at the cap the one idle the longest
    /// makes room (default 1,024).
    pub max_connections: Option<usize>,
    /// Connections one peer address may hold (default: no cap).
    pub max_connections_per_peer: Option<usize>,
    /// How long a request head may take to arrive (default 10 s).
    pub header_timeout: Option<Duration>,
    /// How long a kept-alive connection may stay idle (default 120 s).
    pub idle_timeout: Option<Duration>,
    /// How long a request body may take to arrive (default 30 s).
    pub body_timeout: Option<Duration>,
    /// How long an answer may wait for the client to read (default 30 s).
    pub write_timeout: Option<Duration>,
}

impl ConnectionLimits {
    /// `options` with the limits that are set.
    fn apply(
        &self,
        mut options: switchboard_server::http::HttpOptions,
    ) -> switchboard_server::http::HttpOptions {
        if let Some(n) = self.max_connections {
            options = options.max_connections(n);
        }
        if let Some(n) = self.max_connections_per_peer {
            options = options.max_connections_per_peer(n);
        }
        if let Some(t) = self.header_timeout {
            options = options.header_timeout(t);
        }
        if let Some(t) = self.idle_timeout {
            options = options.idle_timeout(t);
        }
        if let Some(t) = self.body_timeout {
            options = options.body_timeout(t);
        }
        if let Some(t) = self.write_timeout {
            options = options.write_timeout(t);
        }
        options
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
    /// The authentication settings are not usable (a bad token list, …).
    #[error("{0}")]
    Auth(String),
    /// The host's servers could not be mounted ([`serve`]).
    #[error("cannot mount the host")]
    Mount(#[source] switchboard_host::HostError),
    /// The TLS certificate and key could not be loaded ([`serve`]).
    #[error("cannot load the TLS certificate and key")]
    Tls(#[source] switchboard_server::http::TlsError),
    /// A file that grants access (tokens, state key, config) may be
    /// written by other users ([`check_access_file`]).
    #[error(transparent)]
    FileAccess(#[from] AccessFileError),
    /// The config file does not load ([`ConfigSource::load`]).
    #[error("the config does not load")]
    Config(#[source] switchboard_host::HostError),
}

/// A gateway over one mounted [`Host`]: an MCP server whose tools are the
/// host's governed tools, kept in step with the table while it lives.
#[derive(Debug)]
pub struct Gateway {
    server: Server,
    host: Host,
    telemetry: Telemetry,
    auth: Option<InboundAuth>,
    recheck_streams: Option<Duration>,
    tls: Option<ServerTls>,
    connections: ConnectionLimits,
    tool_count: usize,
    drain: Drain,
    state: Option<SharedState>,
    console: Option<console::Console>,
    sync: JoinHandle<()>,
    offers: JoinHandle<()>,
    relist: JoinHandle<()>,
    heartbeat: Option<JoinHandle<()>>,
    /// This replica's registration in the shared store (with a store and
    /// a replica name), and where it is advertised.
    membership: Option<(Arc<Membership>, Option<String>)>,
}

impl Gateway {
    /// Builds the gateway's server, registers every tool of `host`'s table
    /// and starts following the table's changes.
    ///
    /// # Errors
    /// [`GatewayError::Build`] when the server cannot be built.
    pub fn new(host: &Host, mut options: GatewayOptions) -> Result<Gateway, GatewayError> {
        options.parking = parked::Parking::new(
            options
                .replica
                .clone()
                .unwrap_or_else(|| format!("process {}", std::process::id())),
            options.park_ttl.unwrap_or(PARK_TTL),
            options.park_limit.unwrap_or(PARK_LIMIT),
        );
        // With a shared store, replicas find each other there.
        let membership = options
            .state
            .clone()
            .zip(options.replica.clone())
            .map(|(state, name)| Arc::new(Membership::new(state, &name)));
        let server = build_server(host, &options, membership.as_ref())?;
        // With tool search, each caller is listed what it loaded.
        if search::Search::wanted(host, options.tool_search) {
            host.enable_tool_search();
            let state = search::Search::default();
            state.refresh(host);
            options.search = Some(state);
        }
        let listed = options.search.clone();
        // An authenticated caller sees only the tools its `principals`
        // rules let it call.
        if options.auth.is_some() || listed.is_some() {
            let filter_host = host.clone();
            let authenticated = options.auth.is_some();
            server.set_tool_filter(move |principal, tool| {
                let subject = principal.map(|p| p.subject.as_str());
                (!authenticated || subject.is_none_or(|p| filter_host.principal_may_call(p, tool)))
                    && listed.as_ref().is_none_or(|s| s.lists(subject, tool))
            });
        }
        if options.auth.is_some() {
            // And the prompts and resources its rules let it use.
            let filter_host = host.clone();
            server.set_offer_filter(move |principal, offered| {
                principal.is_none_or(|p| catalog::may_list(&filter_host, &p.subject, offered))
            });
        }
        let console = if !options.console {
            None
        } else if options.auth.is_none() && options.console_login.is_none() {
            return Err(GatewayError::Auth(
                "the console needs authentication: serve it with --auth token or --auth oauth"
                    .into(),
            ));
        } else {
            let approvals =
                console::Approvals::new(options.state_key.as_deref(), options.state.clone())
                    .map_err(GatewayError::Auth)?;
            options.approvals = Some(approvals.clone());
            let validator = options.auth.as_ref().map(|auth| {
                std::sync::Arc::new(auth.validator(&options.telemetry))
                    as std::sync::Arc<dyn switchboard_server::TokenValidator>
            });
            Some(console::Console::new(
                host,
                validator,
                options.console_login.clone(),
                approvals,
                options.console_evals.clone(),
                options.state.clone(),
            ))
        };
        let auth = options.auth.clone();
        let recheck_streams = options.recheck_streams;
        let connections = options.connections;
        let tls = options.tls.clone();
        let drain = options.drain.clone();
        let state = options.state.clone();
        if let Some(state) = &state {
            options.telemetry.attach_state(state);
        }
        let heartbeat = state.as_ref().map(SharedState::heartbeat);
        let membership = membership.map(|m| (m, options.advertise_url.clone()));
        // Subscribe before registering, so no change falls between the two.
        let changes = host.subscribe();
        let registered = tools::register_all(&server, host, &options);
        let tool_count = registered.len();
        let telemetry = options.telemetry.clone();
        let relist = tokio::spawn(tools::relist_stale(
            host.clone(),
            options.relist_min.unwrap_or(RELIST_MIN_INTERVAL),
        ));
        let sync = tokio::spawn(tools::follow_changes(
            host.clone(),
            server.clone(),
            options,
            registered,
            changes,
        ));
        let offer_changes = host.subscribe_offers();
        let offered = catalog::register_all(&server, host);
        let offers = tokio::spawn(catalog::follow_changes(
            host.clone(),
            server.clone(),
            offered,
            offer_changes,
        ));
        Ok(Gateway {
            server,
            host: host.clone(),
            telemetry,
            auth,
            recheck_streams,
            tls,
            connections,
            tool_count,
            drain,
            state,
            console,
            sync,
            offers,
            relist,
            heartbeat,
            membership,
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

    /// The gateway's drain switch: started, `/readyz` answers 503 so a
    /// balancer stops sending new callers while everything is still
    /// served (stop the gateway afterwards with the `shutdown` future).
    #[must_use]
    pub fn drain(&self) -> Drain {
        self.drain.clone()
    }

    /// The gateway's telemetry (to flush traces at the end:
    /// [`Telemetry::shutdown`]).
    #[must_use]
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.sync.abort();
        self.offers.abort();
        self.relist.abort();
        if let Some(heartbeat) = &self.heartbeat {
            heartbeat.abort();
        }
        self.server.shutdown();
    }
}

/// The gateway's MCP server, with no tools yet: live instructions and the
/// status resource.
fn build_server(
    host: &Host,
    options: &GatewayOptions,
    membership: Option<&Arc<Membership>>,
) -> Result<Server, BuildError> {
    let completer = host.clone();
    let mut builder = Server::builder("switchboard", env!("CARGO_PKG_VERSION"));
    if let Some(key) = &options.state_key {
        // The key outlives the process: the tasks handed on upstream can
        // be picked up again after a restart.
        builder = builder
            .signing_key(key.clone())
            .task_resumer(tasks::resumer(host.clone(), options.telemetry.clone()));
    }
    if let Some(state) = &options.state {
        builder = builder.use_ledger(std::sync::Arc::new(state.clone()));
    } else if let Some(path) = &options.replay_ledger {
        builder = builder.replay_ledger(path);
    }
    if let Some(replica) = &options.replica {
        builder = builder.task_origin(replica);
    }
    if let Some(membership) = membership {
        builder = builder.replica_directory(Arc::clone(membership) as Arc<dyn ReplicaDirectory>);
    }
    builder = builder.replica_peers(
        options
            .peers
            .iter()
            .map(|(name, url)| (name.as_str(), url.as_str())),
    )?;
    let builder = builder
        .request_state_ttl(APPROVAL_STATE_TTL)
        .title("Switchboard gateway")
        .instructions_for(status::instructions(host, options))
        // The outages change at run time: never let a client cache them long.
        .discover_cache(0, switchboard_wire::types::CacheScope::Private)
        .declare_tools()
        .declare_prompts()
        .declare_resources()
        .completion(
            move |request: switchboard_server::CompleteRequest,
                  ctx: switchboard_server::Context| {
                let host = completer.clone();
                async move { catalog::complete(&host, request, ctx).await }
            },
        )
        // Calls the downstream servers turn into tasks are handed on as
        // tasks to upstream clients that follow them (`tasks`).
        .tasks()
        // The table changes at run time: never let a client cache it long.
        .list_cache(0, switchboard_wire::types::CacheScope::Private);
    // The servers' skills, when any serves some (declared at start).
    let builder = match skills::ServedSkills::of(host) {
        Some((relay, directory_read)) => builder.skills_relay(relay, directory_read),
        None => builder,
    };
    status::register(builder, host).build()
}
