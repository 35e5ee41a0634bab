//! One mounted server: its connection, its tools, its health.
//!
//! Connecting is spawn (stdio) or build (HTTP), then the era probe
//! (`server/discover` or the legacy handshake) and the full tool listing,
//! all within the server's start-up timeout. A failure at any step leaves
//! the server `down` with a reason (stderr's last lines included for stdio)
//! and touches no other server.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use switchboard_client::{
    Client, ClientError, Dropped, Listing, ServerDescription, StdioTransport,
};
use switchboard_oauth::OAuthProvider;
use switchboard_wire::Tool;
use switchboard_wire::shared::lock;
use switchboard_wire::types::method;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::auth;
use crate::breaker::Breaker;
use crate::config::{BreakerConfig, ServerConfig};
use crate::connect::{self, ConnectError, ConnectOptions};
use crate::reason::Reason;
use crate::sanitize;
use crate::table::DroppedTool;

/// How many stderr lines a down server's reason quotes.
const REASON_STDERR_LINES: usize = 5;

/// A live connection to a server.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub(crate) client: Client,
    /// The stdio transport, for supervision (stderr, junk lines, exit).
    pub(crate) stdio: Option<StdioTransport>,
    /// The OAuth client of an HTTP connection that uses one.
    pub(crate) auth: Option<OAuthProvider>,
}

/// Why a server is down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Down {
    /// In words: the host's, and what it quotes from the server.
    pub(crate) reason: Reason,
    /// What kind of outage it is.
    pub(crate) cause: DownCause,
    /// The kind of outage in a few fixed words, with nothing from the
    /// server or the config in them (no stderr, no command line, no
    /// URL), for callers of a gateway ([`Down::for_callers`]).
    pub(crate) summary: &'static str,
}

/// The kinds of outage the host tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DownCause {
    /// It failed to start, could not be reached, or broke.
    Failed,
    /// It wants an OAuth login, and no one can log in from here.
    NeedsLogin,
    /// It refused the credentials (401/403), or authorizing failed.
    Unauthorized,
}

impl Down {
    /// An outage of the plain kind, `summary` saying which in fixed words.
    pub(crate) fn failed(summary: &'static str, reason: Reason) -> Down {
        Down {
            reason,
            cause: DownCause::Failed,
            summary,
        }
    }

    /// A server that wants an OAuth login no one could make from here.
    pub(crate) fn needs_login(server: &ServerConfig) -> Down {
        Down {
            reason: Reason::ours(auth::server_needs_login_reason(server)),
            cause: DownCause::NeedsLogin,
            summary: summary::NEEDS_LOGIN,
        }
    }

    /// A server that refused the credentials: `reason` quotes its answer.
    pub(crate) fn unauthorized(reason: Reason) -> Down {
        Down {
            reason,
            cause: DownCause::Unauthorized,
            summary: summary::UNAUTHORIZED,
        }
    }

    /// The outage for a gateway's callers: its kind in fixed words.
    /// Never the reason: what a server prints (stderr) or answers can
    /// hold its secrets (a database password in a connection string), and
    /// the config's values are not the callers' to read.
    pub(crate) fn for_callers(&self) -> &'static str {
        self.summary
    }

    /// Whether the outage is about authorization.
    pub(crate) fn auth_required(&self) -> bool {
        self.cause != DownCause::Failed
    }
}

impl Link {
    /// Whether the connection is known to be gone (stdio: the process
    /// exited or the pipes broke; HTTP has no standing connection).
    pub(crate) fn is_dead(&self) -> bool {
        self.stdio.as_ref().is_some_and(|s| s.closed().is_some())
    }
}

/// What is known about a server right now.
#[derive(Debug)]
pub(crate) struct State {
    /// The connection, while there is one.
    pub(crate) link: Option<Link>,
    /// Why it is down (`None` while up or never tried).
    pub(crate) down: Option<Down>,
    /// Its tools as last listed (kept while it is down, so the model's
    /// table stays stable and calls say what happened).
    pub(crate) tools: Vec<Tool>,
    /// Whether it was ever up (a never-mounted server has no tools).
    pub(crate) ever_up: bool,
    /// Until when the listing is fresh, from a positive `ttlMs`.
    pub(crate) fresh_until: Option<Instant>,
    /// What the server said about itself.
    pub(crate) description: Option<ServerDescription>,
    /// stderr tail and junk count of the last stdio process, kept after it
    /// is gone.
    pub(crate) last_stderr: Vec<String>,
    pub(crate) last_junk: u64,
    /// Tools the last listing left out (the client's reasons: invalid
    /// `x-mcp-header` annotations over HTTP).
    pub(crate) dropped: Vec<Dropped>,
    /// Whether `tools` are its pinned definitions, not a listing: a lazy
    /// server not started yet.
    pub(crate) from_pins: bool,
}

/// A lazy server's calls: how many run, and when the last ended.
#[derive(Debug)]
pub(crate) struct Activity {
    pub(crate) in_flight: usize,
    pub(crate) last: Instant,
}

/// Counts a call as running on its server until dropped.
#[derive(Debug)]
pub(crate) struct Busy<'a>(&'a Upstream);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut activity = self.0.activity();
        activity.in_flight = activity.in_flight.saturating_sub(1);
        activity.last = Instant::now();
    }
}

/// One configured server.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub(crate) config: ServerConfig,
    pub(crate) startup_timeout: Duration,
    pub(crate) default_call_timeout: Duration,
    state: Mutex<State>,
    breaker: Mutex<Breaker>,
    /// Serialises (re)connects.
    pub(crate) connecting: tokio::sync::Mutex<()>,
    /// Wakes the server's refresher (list_changed, stale listing).
    pub(crate) refresh: Notify,
    /// Started at its first call rather than at launch, and stopped again
    /// when idle (`"lazy"`, or all its tools pinned with tool search on).
    lazy: std::sync::atomic::AtomicBool,
    /// Its calls, for the idle stop.
    activity: Mutex<Activity>,
    /// Connections carrying each caller's identity (`"identity"`), by
    /// identity: never shared between callers.
    pub(crate) identity_links: crate::core::IdentityLinks,
}

impl Upstream {
    pub(crate) fn new(
        config: ServerConfig,
        startup_timeout: Duration,
        default_call_timeout: Duration,
        breaker: BreakerConfig,
    ) -> Upstream {
        Upstream {
            config,
            startup_timeout,
            default_call_timeout,
            state: Mutex::new(State {
                link: None,
                down: None,
                tools: Vec::new(),
                ever_up: false,
                fresh_until: None,
                description: None,
                last_stderr: Vec::new(),
                last_junk: 0,
                dropped: Vec::new(),
                from_pins: false,
            }),
            breaker: Mutex::new(Breaker::new(breaker)),
            connecting: tokio::sync::Mutex::new(()),
            refresh: Notify::new(),
            lazy: std::sync::atomic::AtomicBool::new(false),
            activity: Mutex::new(Activity {
                in_flight: 0,
                last: Instant::now(),
            }),
            identity_links: crate::core::IdentityLinks::default(),
        }
    }

    /// Whether it starts at its first call and stops when idle.
    pub(crate) fn is_lazy(&self) -> bool {
        self.lazy.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Makes it lazy, listed with `pinned` (its approved definitions)
    /// until it starts.
    pub(crate) fn set_lazy(&self, pinned: Vec<Tool>) {
        self.lazy.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut state = self.state();
        if !pinned.is_empty() && state.link.is_none() {
            state.tools = pinned;
            state.from_pins = true;
        }
    }

    /// Whether it waits for its first call to start: lazy, listed from its
    /// pins, never started.
    pub(crate) fn waits_for_first_call(&self) -> bool {
        self.is_lazy() && self.state().from_pins
    }

    /// Counts a call as running until the guard is dropped.
    pub(crate) fn busy(&self) -> Busy<'_> {
        self.activity().in_flight += 1;
        Busy(self)
    }

    /// Whether no call runs and none has ended for `idle`.
    pub(crate) fn idle_for(&self, idle: Duration, now: Instant) -> bool {
        let activity = self.activity();
        activity.in_flight == 0 && now.saturating_duration_since(activity.last) >= idle
    }

    /// How long until it has been idle for `idle` (zero when it has).
    pub(crate) fn idle_left(&self, idle: Duration, now: Instant) -> Duration {
        let activity = self.activity();
        (activity.last + idle).saturating_duration_since(now)
    }

    pub(crate) fn activity(&self) -> MutexGuard<'_, Activity> {
        lock(&self.activity)
    }

    pub(crate) fn alias(&self) -> &str {
        &self.config.alias
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(crate) fn breaker(&self) -> MutexGuard<'_, Breaker> {
        lock(&self.breaker)
    }

    /// The live link, if the connection is not known to be dead.
    pub(crate) fn live_link(&self) -> Option<Link> {
        let mut state = self.state();
        match &state.link {
            Some(link) if !link.is_dead() => Some(link.clone()),
            Some(link) => {
                let link = link.clone();
                let reason = link
                    .stdio
                    .as_ref()
                    .and_then(StdioTransport::closed)
                    .map_or_else(
                        || Reason::ours("the connection closed"),
                        |e| Reason::quoted(e.to_string()),
                    );
                remember_stdio(&mut state, link.stdio.as_ref());
                state.link = None;
                state.down = Some(Down::failed(self.closed_summary(), reason));
                None
            }
            None => None,
        }
    }

    /// Records a successful connection and listing.
    pub(crate) fn set_up(&self, link: Link, listing: Listing<Tool>) {
        let mut state = self.state();
        state.description = link.client.server();
        state.link = Some(link);
        state.down = None;
        state.ever_up = true;
        state.fresh_until = listing.cache.ttl().map(|ttl| Instant::now() + ttl);
        state.tools = listing.items;
        state.dropped = listing.dropped;
        state.from_pins = false;
        drop(state);
        // A (re)start counts as activity: the idle stop waits from here.
        self.activity().last = Instant::now();
    }

    /// Records a new listing from a refresh.
    pub(crate) fn set_tools(&self, listing: Listing<Tool>) {
        let mut state = self.state();
        state.fresh_until = listing.cache.ttl().map(|ttl| Instant::now() + ttl);
        state.tools = listing.items;
        state.dropped = listing.dropped;
    }

    /// Records that the server is down, and why.
    pub(crate) fn set_down(&self, reason: Down) {
        let mut state = self.state();
        if let Some(link) = state.link.take() {
            remember_stdio(&mut state, link.stdio.as_ref());
        }
        state.down = Some(reason);
    }

    /// Until when the listing is fresh (its `ttlMs`), while connected.
    pub(crate) fn fresh_until(&self) -> Option<Instant> {
        let state = self.state();
        state.link.as_ref().and(state.fresh_until)
    }

    /// Whether the listing's TTL has passed.
    pub(crate) fn is_stale(&self, now: Instant) -> bool {
        let state = self.state();
        state.link.is_some() && state.fresh_until.is_some_and(|t| now >= t)
    }

    /// The last stderr lines (live process, else the last one).
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        let state = self.state();
        match state.link.as_ref().and_then(|l| l.stdio.as_ref()) {
            Some(s) => s.stderr_tail(),
            None => state.last_stderr.clone(),
        }
    }

    /// Quarantined non-JSON stdout lines.
    pub(crate) fn junk_lines(&self) -> u64 {
        let state = self.state();
        match state.link.as_ref().and_then(|l| l.stdio.as_ref()) {
            Some(s) => s.junk_lines(),
            None => state.last_junk,
        }
    }

    /// Connects, discovers and lists, within the start-up timeout.
    ///
    /// # Errors
    /// Why the server is down: the reason in words, and whether it is
    /// about authorization.
    pub(crate) async fn connect(
        self: &Arc<Self>,
        options: &ConnectOptions,
    ) -> Result<(Link, Listing<Tool>), Down> {
        let mut stdio_handle: Option<StdioTransport> = None;
        let mut auth: Option<OAuthProvider> = None;
        let attempt = self.connect_inner(options, &mut stdio_handle, &mut auth);
        let result = match tokio::time::timeout(self.startup_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(Down::failed(
                summary::STARTUP_TIMEOUT,
                Reason::ours(format!(
                    "did not start and list its tools within {} ms",
                    self.startup_timeout.as_millis()
                )),
            )),
        };
        let mut down = match result {
            Ok(ok) => return Ok(ok),
            Err(down) => down,
        };
        // A refusal because no one could log in from here is said so.
        if down.cause == DownCause::Unauthorized && auth.as_ref().is_some_and(|a| a.needs_login()) {
            down = Down::needs_login(&self.config);
        }
        if let Some(stdio) = &stdio_handle {
            let tail = stdio.stderr_tail();
            let mut state = self.state();
            state.last_stderr = tail.clone();
            state.last_junk = stdio.junk_lines();
            drop(state);
            let tail: Vec<&String> = tail.iter().rev().take(REASON_STDERR_LINES).rev().collect();
            let said = down.reason.plain();
            if !tail.is_empty()
                && !tail
                    .iter()
                    .all(|l| said.contains(sanitize::strip_invisible(l).as_ref()))
            {
                let lines = tail
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join(" | ");
                down.reason = down
                    .reason
                    .then_ours("; its last stderr lines: ")
                    .then_quoted(lines);
            }
        }
        // Dropping the handle (and the client) stops the process.
        Err(down)
    }

    async fn connect_inner(
        self: &Arc<Self>,
        options: &ConnectOptions,
        stdio_handle: &mut Option<StdioTransport>,
        auth_handle: &mut Option<OAuthProvider>,
    ) -> Result<(Link, Listing<Tool>), Down> {
        let opened = connect::try_open(&self.config, options)
            .await
            .map_err(|e| match e {
                ConnectError::OAuth(e) => Down::failed(
                    summary::OAUTH_SETUP,
                    Reason::ours("its OAuth client cannot be set up: ").then_quoted(e.to_string()),
                ),
                // Our own words: a secret reference, or a sandbox that
                // cannot be had here.
                ConnectError::Secret(e) => {
                    Down::failed(summary::NOT_STARTED, Reason::ours(e.to_string()))
                }
                ConnectError::Transport(e) if e.sandbox_stop().is_some() => {
                    Down::failed(summary::SANDBOX, Reason::ours(e.to_string()))
                }
                other => Down::failed(summary::NOT_STARTED, Reason::quoted(other.to_string())),
            })?;
        stdio_handle.clone_from(&opened.stdio);
        auth_handle.clone_from(&opened.auth);
        let weak = Arc::downgrade(self);
        let client = opened
            .builder
            .timeout(self.default_call_timeout)
            .probe_timeout(self.startup_timeout)
            // Tasks (io.modelcontextprotocol/tasks) are followed to their
            // end under their own deadline.
            .tasks(true)
            .task_timeout(
                self.config
                    .task_timeout
                    .unwrap_or(crate::config::DEFAULT_TASK_TIMEOUT),
            )
            .on_notification(move |n| {
                if n.method == method::TOOLS_LIST_CHANGED {
                    if let Some(server) = weak.upgrade() {
                        server.refresh.notify_one();
                    }
                }
            })
            .connect()
            .await
            .map_err(|e| self.down_of(&e))?;
        // A server that offers no tools (only prompts or resources) is
        // not asked for them.
        let offers_tools = client
            .server()
            .is_none_or(|d| d.capabilities.tools.is_some());
        let listing = if offers_tools {
            client
                .list_all_tools()
                .await
                .map_err(|e| self.down_of(&e))?
        } else {
            Listing {
                items: Vec::new(),
                cache: switchboard_wire::types::CacheHints::default(),
                pages: 0,
                dropped: Vec::new(),
            }
        };
        Ok((
            Link {
                client,
                stdio: opened.stdio,
                auth: opened.auth,
            },
            listing,
        ))
    }
}

fn remember_stdio(state: &mut State, stdio: Option<&StdioTransport>) {
    if let Some(s) = stdio {
        state.last_stderr = s.stderr_tail();
        state.last_junk = s.junk_lines();
    }
}

/// A client error in words, without repeating the alias the caller adds.
pub(crate) fn describe(e: &ClientError) -> String {
    e.to_string()
}

impl Upstream {
    /// The outage a failed connect or listing means: a refusal the
    /// authorization layer could not get past is about authorization.
    fn down_of(&self, e: &ClientError) -> Down {
        let stop = e.transport_error().and_then(|t| t.sandbox_stop());
        let reason = match stop {
            Some(stop) => Reason::ours(format!("{}; ", stop.reason)).then_quoted(describe(e)),
            None => Reason::quoted(describe(e)),
        };
        if e.is_auth_failure() {
            Down::unauthorized(reason)
        } else if stop.is_some() {
            Down::failed(summary::SANDBOX, reason)
        } else if e.is_timeout() {
            Down::failed(summary::NO_ANSWER, reason)
        } else if e.is_closed() {
            Down::failed(self.closed_summary(), reason)
        } else {
            Down::failed(summary::FAILED, reason)
        }
    }

    /// The summary of a connection that is gone: a process that exited,
    /// or a connection that closed.
    pub(crate) fn closed_summary(&self) -> &'static str {
        match self.config.transport {
            crate::config::TransportConfig::Stdio { .. } => summary::EXITED,
            _ => summary::CLOSED,
        }
    }
}

/// The fixed words of [`Down::for_callers`], one per kind of outage.
pub(crate) mod summary {
    /// A stdio server's process ended.
    pub(crate) const EXITED: &str = "the process exited";
    /// An HTTP server's connection closed.
    pub(crate) const CLOSED: &str = "the connection closed";
    /// It could not be started or reached at all.
    pub(crate) const NOT_STARTED: &str = "it could not be started or reached";
    /// It did not list its tools within the start-up timeout.
    pub(crate) const STARTUP_TIMEOUT: &str = "it did not start in time";
    /// A request to it timed out.
    pub(crate) const NO_ANSWER: &str = "it did not answer in time";
    /// The host's sandbox stopped it (a refused system call, a limit).
    pub(crate) const SANDBOX: &str = "the sandbox stopped it";
    /// It answered with an error, or broke the protocol.
    pub(crate) const FAILED: &str = "it failed";
    /// Its OAuth client could not be set up.
    pub(crate) const OAUTH_SETUP: &str = "its authorization is not set up";
    /// It wants a login no one can make from here.
    pub(crate) const NEEDS_LOGIN: &str = "needs login";
    /// It refused the credentials.
    pub(crate) const UNAUTHORIZED: &str = "it refused the gateway's credentials";
    /// The host is stopping.
    pub(crate) const SHUT_DOWN: &str = "the host has shut down";
}

/// Dropped tools of one server, for reports.
pub(crate) fn dropped_of<'a>(
    dropped: &'a [DroppedTool],
    alias: &'a str,
) -> impl Iterator<Item = &'a DroppedTool> {
    dropped.iter().filter(move |d| d.alias == alias)
}
