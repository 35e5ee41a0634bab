//! The command line as clap reads it: plain "raw flags", not yet checked
//! against anything. [`crate::settings`] resolves them.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Many MCP servers behind one governed tool table.
///
/// With no config file (no --config, no $SWITCHBOARD_CONFIG, no ./.mcp.json,
/// no ~/.config/switchboard/config.json) every command runs on the built-in
/// demo: notes over stdio and tickets over HTTP on 127.0.0.1:3115.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about, long_about)]
#[command(after_help = EXIT_CODES)]
pub(crate) struct RawArgs {
    /// The config file (`mcpServers` JSON of Claude Desktop / Claude Code,
    /// or VS Code's `servers` JSON).
    #[arg(long, short = 'c', global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Machine-readable output on stdout; on failure, one JSON error line
    /// on stderr.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// More log lines on stderr (-v: warnings and info, -vv: debug);
    /// RUST_LOG overrides.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,

    /// Log lines (and notes) on stderr as text, or as one JSON object per
    /// line for a log collector.
    #[arg(
        long,
        global = true,
        value_enum,
        env = "SWITCHBOARD_LOG_FORMAT",
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub(crate) log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub(crate) command: RawCommand,
}

/// How stderr's log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for a person.
    Text,
    /// One JSON object per line: `timestamp`, `level`, `message` and the
    /// event's fields.
    Json,
}

/// The exit codes, shown under `--help`.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  ok
  1  usage or config error
  3  authorization required
  4  server unreachable (down, timed out, paused)
  5  the tool returned isError
  6  denied by the gate";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum RawCommand {
    /// Walk through the demo: two servers, colliding names, an approval,
    /// progress, a truncated result and an outage.
    Demo(DemoArgs),
    /// Talk to a model that uses the tools (interactive, or one prompt
    /// with -p).
    Chat(ChatArgs),
    /// List the tools the model sees, with where they come from (denied
    /// tools are left out; a changed one shows its approved text).
    Tools(ToolsArgs),
    /// List the servers: up, down (and why) or tripped.
    Servers,
    /// Call one tool by its namespaced name (mcp__ALIAS__TOOL).
    Call(CallArgs),
    /// Show or accept pinned tool definitions (switchboard.lock).
    Pins(PinsArgs),
    /// List the skills servers offer (with their status), show one, or
    /// accept one's files (switchboard.lock).
    Skills(SkillsArgs),
    /// Check the audit log.
    Audit(AuditArgs),
    /// Check the config (and a gateway's tokens file) without starting
    /// any server: for CI on a team's config.
    Config(ConfigArgs),
    /// Log in to remote servers with OAuth, show or forget logins.
    Auth(AuthArgs),
    /// Check every configured server and report each finding on one line.
    Doctor,
    /// Connect to one server and show everything it offers.
    Inspect(InspectArgs),
    /// Serve the governed tool table as one MCP server (a gateway).
    Serve(Box<ServeArgs>),
    /// Open the web console locally: the config's servers, tools and
    /// calls in a browser, on 127.0.0.1 at a free port, through a printed
    /// URL carrying a one-time sign-in token, opened in the browser
    /// (`$BROWSER`, else `xdg-open`/`open`; never when none is
    /// available); Ctrl-C ends it.
    Console {
        /// Only print the sign-in URL; do not open a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Run one of the demo servers.
    DemoServer(DemoServerArgs),
    /// Check the whole system end to end with real processes and sockets.
    Selftest,
    /// Probe a gateway's /healthz (or /readyz) over plain HTTP: exit 0 on
    /// 200, 4 otherwise (a container's HEALTHCHECK, where there is no curl).
    Health(HealthArgs),
    /// Measure tool selection: does the model call the right tool with the
    /// right arguments, or (for a trap) nothing? Tools are never run.
    Eval(EvalArgs),
}

/// `eval`.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// Case files (see evals/schema.json); by default every evals/*.json
    /// but schema.json.
    #[arg(value_name = "FILES")]
    pub(crate) files: Vec<PathBuf>,
    /// The model: anthropic:MODEL, openai:MODEL, script:FILE, or mock (an
    /// offline keyword selector: a stand-in for the demo, not a
    /// measurement of any model).
    #[arg(long, short = 'm', value_name = "PROVIDER:MODEL")]
    pub(crate) model: Option<String>,
    /// A deliberately wrong selector instead of a model: always:TOOL (calls
    /// TOOL with decoy arguments every time) or never.
    #[arg(long, value_name = "always:TOOL|never", conflicts_with = "model")]
    pub(crate) selector: Option<String>,
    /// Runs per case; the report shows each case's flakiness.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) repeat: usize,
    /// Runs in flight at once.
    #[arg(long, default_value_t = 8, value_name = "C")]
    pub(crate) concurrency: usize,
    /// Answer calls with the cases' canned results and judge their
    /// follow steps (multi-step cases).
    #[arg(long)]
    pub(crate) follow: bool,
    /// The lowest pass rate per category; exit 1 below any of them.
    #[arg(long, value_name = "happy=0.9,edge=0.8,trap=0.9")]
    pub(crate) min: Option<String>,
    /// Weights of the categories in the overall score.
    #[arg(long, value_name = "happy=4,edge=3,trap=3")]
    pub(crate) weights: Option<String>,
    /// Also write the report as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Save this run's per-case results to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) save_baseline: Option<PathBuf>,
    /// Write the JSON report (what --json prints) to FILE too, e.g. for
    /// the console's Evals page (`serve --console-evals FILE`).
    #[arg(long, value_name = "FILE")]
    pub(crate) save_report: Option<PathBuf>,
    /// Compare with a saved run case by case; exit 1 on a regression.
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline: Option<PathBuf>,
    /// Run the set twice, with the tool definitions approved in
    /// switchboard.lock and with what the servers serve now, and show
    /// which cases the change broke (exit 1 if any). Run it before
    /// `pins accept`.
    #[arg(long, conflicts_with = "selector")]
    pub(crate) against_pins: bool,
    /// Run with the table deferred (on: the always-loaded tools and
    /// mcp__switchboard__search_tools, whose calls are answered), whole
    /// (off), or both, and report each with the tokens of tool
    /// definitions sent per case.
    #[arg(long, value_name = "on|off|both", conflicts_with = "against_pins")]
    pub(crate) tool_search: Option<SearchMode>,
    /// Test the cases themselves: run them under `never` and under
    /// `always:TOOL` for every tool; a case that still passes cannot fail
    /// and is reported as broken (exit 1).
    #[arg(long, conflicts_with_all = ["model", "selector", "against_pins", "baseline", "save_baseline", "junit"])]
    pub(crate) check_assertions: bool,
}

/// `demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Approve the demo's approval question without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
}

/// `chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// The model: anthropic:MODEL (ANTHROPIC_API_KEY), openai:MODEL
    /// (OPENAI_API_KEY; OPENAI_BASE_URL for local runtimes), script:FILE,
    /// or mock (offline, on the built-in demo; MOCK=1 does the same).
    /// Default: the config's "model".
    #[arg(long, short = 'm', value_name = "PROVIDER:MODEL")]
    pub(crate) model: Option<String>,
    /// Run this one prompt, print the answer and exit.
    #[arg(long, short = 'p', value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,
    /// Approve every call the gate asks about, without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Most model calls per prompt.
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub(crate) max_turns: u32,
    /// End the turn when the model makes the same call N times in a row
    /// (0: never).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) loop_guard: u32,
}

/// `tools`.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Every tool of the table, denied ones included, each as its server
    /// serves it now (for reviewing, not what the model sees).
    #[arg(long)]
    pub(crate) all: bool,
    /// The tools a gateway lists to this caller (a token's name, or an
    /// OAuth subject): narrowed by its `principals` rules.
    #[arg(long, value_name = "NAME", conflicts_with = "all")]
    pub(crate) principal: Option<String>,
    /// The best tools for QUERY, best first (what the model's
    /// mcp__switchboard__search_tools finds), in the same shape.
    #[arg(long, value_name = "QUERY", conflicts_with = "all")]
    pub(crate) search: Option<String>,
    /// How many tools --search prints.
    #[arg(long, value_name = "K", default_value_t = 5, requires = "search")]
    pub(crate) limit: usize,
}

/// `eval --tool-search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SearchMode {
    /// The table deferred.
    On,
    /// The whole table.
    Off,
    /// Both, one after the other.
    Both,
}

/// `call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool's namespaced name, as `switchboard tools` lists it.
    pub(crate) tool: String,
    /// The arguments, a JSON object (`-` reads it from stdin).
    #[arg(value_name = "ARGS_JSON")]
    pub(crate) args: Option<String>,
    /// Approve the call if the gate asks, without asking anyone.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
}

/// `pins`.
#[derive(Debug, Args)]
pub(crate) struct PinsArgs {
    /// What to do with the pins.
    #[command(subcommand)]
    pub(crate) action: PinsAction,
}

/// `pins list|accept`.
#[derive(Debug, Subcommand)]
pub(crate) enum PinsAction {
    /// Show every tool's, prompt's and resource template's pin: pinned, new
    /// (added after the first mount) or changed (with the diff).
    List,
    /// Accept the current definition of a tool (mcp__ALIAS__TOOL) or of
    /// every tool of a server (ALIAS).
    Accept {
        /// The tool or server.
        target: String,
        /// Accept even when the config's `evals` regress with the new
        /// definitions (or cannot run).
        #[arg(long)]
        force: bool,
    },
}

/// `skills`.
#[derive(Debug, Args)]
pub(crate) struct SkillsArgs {
    /// What to do; without one, list them.
    #[command(subcommand)]
    pub(crate) action: Option<SkillsAction>,
}

/// `skills show|accept`.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsAction {
    /// Show a skill's entry (origin, files, status), then, once you
    /// confirm, its SKILL.md (verified): inspect it before any model sees it.
    Show {
        /// The skill's id, ALIAS:SKILL_PATH.
        id: String,
        /// Show the content without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Accept a skill: record its files ({uri, digest} each) in
    /// switchboard.lock, so it loads without asking until they change.
    Accept {
        /// The skill's id, ALIAS:SKILL_PATH.
        id: String,
    },
}

/// `config`.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) action: ConfigAction,
}

/// `config check`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigAction {
    /// Read and check the config file, every problem listed (exit 1 if
    /// any), and summarise it: servers, rules, principals and their
    /// limits, the audit log. Starts no server.
    Check {
        /// Also check a gateway's tokens file (`serve --tokens-file`):
        /// its entries, and that every `principals` entry names one of
        /// its tokens.
        #[arg(long, value_name = "FILE")]
        tokens_file: Option<PathBuf>,
    },
}

/// `audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// What to do with the log.
    #[command(subcommand)]
    pub(crate) action: AuditAction,
}

/// `audit verify|stats`.
#[derive(Debug, Subcommand)]
pub(crate) enum AuditAction {
    /// Check the hash chain of the audit log; exit 1 if it is broken.
    Verify {
        /// The logs (each chain checked on its own, e.g. one per
        /// replica); by default the config's `audit` path.
        files: Vec<PathBuf>,
    },
    /// Per tool: calls, error rate, denials, p50/p95/max duration (highest
    /// error rate first).
    Stats {
        /// The log; by default the config's `audit` path.
        file: Option<PathBuf>,
        /// Per tool (the default), or per caller of a gateway (each
        /// principal, and the calls that had none).
        #[arg(long, value_enum, default_value = "tool", value_name = "GROUP")]
        by: StatsBy,
    },
}

/// How `audit stats` groups the calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StatsBy {
    /// One row per tool.
    Tool,
    /// One row per caller (principal).
    Principal,
}

/// `auth`.
#[derive(Debug, Args)]
pub(crate) struct AuthArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) action: AuthAction,
}

/// `auth login|status|logout`.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthAction {
    /// Log in to a server with OAuth: shows the authorization URL, opens a
    /// browser, and waits on 127.0.0.1 for the redirect. Tokens go to the
    /// per-user token store ($SWITCHBOARD_STATE_DIR/oauth.json, else
    /// $XDG_STATE_HOME/switchboard/oauth.json, else
    /// ~/.local/state/switchboard/oauth.json) and are never printed.
    Login {
        /// The server's alias in the config.
        #[arg(required_unless_present = "idp", conflicts_with = "idp")]
        alias: Option<String>,
        /// Log in at this enterprise identity provider (an
        /// `identityProviders` entry) instead: every server whose `oauth`
        /// names it then needs no login of its own.
        #[arg(long, value_name = "NAME")]
        idp: Option<String>,
        /// Log in on behalf of this gateway principal: the tokens are kept
        /// for (ALIAS, NAME), beside the server's own login, and `serve`
        /// uses them for NAME's calls to a server whose identity is
        /// "per-principal" (when principals.NAME.credentials.ALIAS is absent).
        #[arg(long, value_name = "NAME", conflicts_with = "idp")]
        principal: Option<String>,
        /// Only print the URL; do not try to open a browser (none is
        /// opened either when SWITCHBOARD_NO_BROWSER is set, or without
        /// DISPLAY / WAYLAND_DISPLAY on Linux).
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the redirect, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 300)]
        timeout: u64,
    },
    /// Show the logins: per server, the authorization server, scopes and
    /// expiry (never a token). With ALIAS, exit 3 when it has no login.
    Status {
        /// Only this server.
        alias: Option<String>,
        /// The login made for this gateway principal (`auth login ALIAS
        /// --principal NAME`); needs ALIAS.
        #[arg(long, value_name = "NAME", requires = "alias")]
        principal: Option<String>,
    },
    /// Forget a server's tokens, revoking them where the authorization
    /// server offers revocation.
    Logout {
        /// The server's alias in the config.
        alias: String,
        /// Forget the login made for this gateway principal instead of
        /// the server's own.
        #[arg(long, value_name = "NAME")]
        principal: Option<String>,
    },
}

/// `inspect`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false, id = "target")]
pub(crate) struct InspectArgs {
    /// Start this command and speak stdio to it, e.g. 'switchboard
    /// demo-server notes' (split like a shell would).
    #[arg(long, value_name = "CMD ARGS…", group = "target")]
    pub(crate) stdio: Option<String>,
    /// Speak Streamable HTTP to this endpoint.
    #[arg(long, value_name = "URL", group = "target")]
    pub(crate) http: Option<String>,
    /// A header sent with every HTTP request (repeatable).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        requires = "http"
    )]
    pub(crate) headers: Vec<String>,
}

/// `serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Speak stdio on stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    pub(crate) stdio: bool,
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8080); the
    /// endpoint is /mcp, with /healthz and /readyz beside it. A
    /// non-loopback address needs --auth (or --insecure-no-auth).
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<SocketAddr>,
    /// Approve every call the gate asks about. Without it, a question is
    /// put to the upstream client's user through elicitation when the
    /// client supports it, and denied otherwise.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// List each caller only the always-loaded tools and
    /// mcp__switchboard__search_tools, plus the tools its own searches
    /// found (a notifications/tools/list_changed tells it when they join).
    #[arg(long)]
    pub(crate) tool_search: bool,
    /// Serve Prometheus metrics at /metrics next to /mcp (HTTP only; no
    /// authorization: bind where only the scraper and clients reach).
    #[arg(long, requires = "http")]
    pub(crate) metrics: bool,
    /// Serve the web console at /console next to /mcp: servers, tools and
    /// calls in a browser, for principals whose config entry says
    /// "console": true (needs --auth).
    #[arg(long, requires = "http")]
    pub(crate) console: bool,
    /// The eval report the console's Evals page shows (`switchboard eval
    /// --save-report FILE` output), read again at each view; an upload
    /// replaces it until the gateway restarts.
    #[arg(long, value_name = "FILE", requires = "console")]
    pub(crate) console_evals: Option<PathBuf>,
    /// This gateway's name among replicas behind one URL: written into
    /// every audit line, and named when a retry for a call parked here
    /// reaches another replica (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub(crate) replica: Option<String>,
    /// Another replica behind the same URL, by its --replica name and the
    /// http:// (or https://) URL of its MCP endpoint as this one reaches it (repeat for
    /// each): requests whose work lives there (its tasks, its parked
    /// calls, its legacy sessions) are sent on to it, so a plain
    /// round-robin balancer needs no rule and no affinity.
    #[arg(long = "peer", value_name = "NAME=URL", requires = "http")]
    pub(crate) peers: Vec<String>,
    /// With --state: the http:// (or https://) URL of this replica's MCP
    /// endpoint as the other replicas reach it, registered in the store
    /// under its --replica name, so requests for its tasks, parked calls
    /// and legacy sessions reach it with no --peer flag (default: the
    /// address it listens on).
    #[arg(long, value_name = "URL", requires = "state")]
    pub(crate) advertise_url: Option<String>,
    /// The key `requestState` is sealed with, read from FILE; replicas
    /// behind one URL share it (else SWITCHBOARD_STATE_KEY; else a random
    /// key per process).
    #[arg(long, value_name = "FILE")]
    pub(crate) state_key_file: Option<PathBuf>,
    /// Record each used approval in FILE, shared by the replicas behind
    /// one URL, so an answered approval runs once across all of them
    /// (default: each replica remembers its own).
    #[arg(long, value_name = "FILE", conflicts_with = "state")]
    pub(crate) replay_ledger: Option<PathBuf>,
    /// The store the replicas behind one URL share,
    /// redis://[USER:PASS@]HOST:PORT/DB (rediss:// for TLS; Redis 7 or
    /// Valkey): each answered approval runs once across all of them, and
    /// callers' calls a minute are counted once for all of them (else
    /// $SWITCHBOARD_STATE; default: none, each replica on its own).
    #[arg(
        long,
        value_name = "URL",
        env = "SWITCHBOARD_STATE",
        hide_env_values = true
    )]
    pub(crate) state: Option<String>,
    /// With --state, what a limited caller gets while the store cannot be
    /// reached: closed refuses its calls, open lets them through
    /// uncounted. Answered approvals are refused either way.
    #[arg(long, value_enum, default_value = "closed", requires = "state")]
    pub(crate) state_fail: StateFailFlag,
    /// Do not watch the config and tokens files (SIGHUP still reloads
    /// them).
    #[arg(long)]
    pub(crate) no_watch: bool,
    /// On Ctrl-C / SIGTERM, first drain for SECS seconds: /readyz answers
    /// 503 so the load balancer stops sending new callers, while calls,
    /// tasks and approvals in progress are still served; then stop. A
    /// second signal stops at once (default 0: stop at once).
    #[arg(long, value_name = "SECS", default_value_t = 0, requires = "http")]
    pub(crate) drain: u64,
    /// How HTTP callers authenticate: named bearer tokens (token) or OAuth
    /// access tokens of an issuer (oauth).
    #[arg(long, value_enum, requires = "http")]
    pub(crate) auth: Option<ServeAuth>,
    /// --auth token: the tokens, one `NAME TOKEN` per line, reloaded when
    /// the file changes; else $SWITCHBOARD_GATEWAY_TOKENS.
    #[arg(long, value_name = "FILE")]
    pub(crate) tokens_file: Option<PathBuf>,
    /// --auth oauth: the authorization server's issuer URL.
    #[arg(long, value_name = "URL")]
    pub(crate) issuer: Option<String>,
    /// --auth oauth: where the issuer's keys are (default: its metadata's
    /// jwks_uri).
    #[arg(long, value_name = "URL")]
    pub(crate) jwks_url: Option<String>,
    /// --auth oauth: introspect tokens here (RFC 7662) instead of checking
    /// JWTs; client credentials from $SWITCHBOARD_INTROSPECTION_CLIENT_ID
    /// and $SWITCHBOARD_INTROSPECTION_CLIENT_SECRET.
    #[arg(long, value_name = "URL")]
    pub(crate) introspection_url: Option<String>,
    /// The gateway's URL as clients reach it, the tokens' audience
    /// (default: http://ADDR/mcp, https with --tls-cert).
    #[arg(long, value_name = "URL")]
    pub(crate) resource: Option<String>,
    /// Serve HTTPS with this certificate chain (PEM, the gateway's
    /// certificate first); watched like the config, so a renewed one is
    /// used from the next connection on. Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// --auth oauth: a scope every request needs (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
    /// --auth oauth: also accept JWT access tokens whose header's typ is
    /// JWT (or absent), for an issuer that does not mark them at+jwt (RFC
    /// 9068). Only when the issuer signs no other JWTs for this audience
    /// with the same keys (ID tokens would then pass as access tokens).
    #[arg(long)]
    pub(crate) accept_plain_jwt: bool,
    /// Serve a non-loopback address without authentication: anyone who
    /// can reach it can call your tools.
    #[arg(long, conflicts_with = "auth")]
    pub(crate) insecure_no_auth: bool,
    /// HTTP connections served at once (default 1024); at the cap a new
    /// one takes the place of the one idle the longest.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_connections: Option<u64>,
    /// HTTP connections one client address may hold at once (default: no
    /// cap; behind a proxy or on loopback every caller has one address).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_connections_per_peer: Option<u64>,
    /// Seconds a request head may take to arrive whole (default 10).
    #[arg(long, value_name = "SECS", requires = "http", value_parser = seconds)]
    pub(crate) header_timeout: Option<std::time::Duration>,
    /// Seconds a kept-alive connection may stay idle between requests
    /// (default 120).
    #[arg(long, value_name = "SECS", requires = "http", value_parser = seconds)]
    pub(crate) idle_timeout: Option<std::time::Duration>,
    /// Seconds a request body may take to arrive whole (default 30).
    #[arg(long, value_name = "SECS", requires = "http", value_parser = seconds)]
    pub(crate) body_timeout: Option<std::time::Duration>,
    /// Seconds an answer may wait for the client to read any of it
    /// (default 30).
    #[arg(long, value_name = "SECS", requires = "http", value_parser = seconds)]
    pub(crate) write_timeout: Option<std::time::Duration>,
}

/// A positive number of seconds (fractions allowed: `0.5`), at most a day.
fn seconds(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{text:?} is not a number of seconds above 0 and at most 86400"
        )),
    }
}

/// `serve --state-fail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateFailFlag {
    /// Refuse limited callers' calls.
    Closed,
    /// Let limited callers' calls through, uncounted.
    Open,
}

/// `serve --auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ServeAuth {
    /// Named bearer tokens from --tokens-file or $SWITCHBOARD_GATEWAY_TOKENS.
    Token,
    /// OAuth access tokens of --issuer (JWT or introspection).
    Oauth,
}

/// `health`.
#[derive(Debug, Args)]
pub(crate) struct HealthArgs {
    /// The URL to GET (`http://HOST:PORT/PATH`; the path defaults to /healthz).
    #[arg(default_value = crate::cmd::health::DEFAULT_URL)]
    pub(crate) url: String,
    /// Give up after this many milliseconds.
    #[arg(long, default_value_t = 3000)]
    pub(crate) timeout_ms: u64,
}

/// `demo-server`.
#[derive(Debug, Args)]
pub(crate) struct DemoServerArgs {
    /// Which demo server.
    #[arg(value_enum)]
    pub(crate) which: DemoServerKind,
    /// tickets: the port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = switchboard_demo::tickets::DEFAULT_PORT)]
    pub(crate) port: u16,
}

/// The demo servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DemoServerKind {
    /// Notes, over stdio.
    Notes,
    /// Tickets, over Streamable HTTP.
    Tickets,
    /// A server that hangs or dies on request (for the self-test).
    #[value(hide = true)]
    Faulty,
}
