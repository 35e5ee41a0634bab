//! `switchboard serve [--stdio | --http ADDR [--auth token|oauth]]`: the
//! gateway (`switchboard-gateway`) over the config's host. This module
//! only turns flags into the gateway's [`ServeConfig`], binds the address,
//! and hands both to [`switchboard_gateway::serve`] with the stop signal:
//! stdin's end (stdio), or Ctrl-C / SIGTERM after the drain.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use switchboard_gateway::{
    AccessFile, ConnectionLimits, Drain, GatewayError, GatewayOptions, InboundAuth, Introspection,
    Listener, OAuthInbound, ServeConfig, SharedState, StateFail, StaticTokens, Telemetry, TlsFiles,
    TokensSource, WATCH_POLL, check_access_file,
};

use crate::exit::Failure;
use crate::flags::{ServeArgs, ServeAuth, StateFailFlag};
use crate::settings::{Loaded, Settings};

/// The variable holding tokens when there is no `--tokens-file`.
const TOKENS_VAR: &str = "SWITCHBOARD_GATEWAY_TOKENS";
/// The introspection client's id and secret.
const INTROSPECTION_ID_VAR: &str = "SWITCHBOARD_INTROSPECTION_CLIENT_ID";
const INTROSPECTION_SECRET_VAR: &str = "SWITCHBOARD_INTROSPECTION_CLIENT_SECRET";

/// The environment variable holding the state key replicas share.
const STATE_KEY_VAR: &str = "SWITCHBOARD_STATE_KEY";

/// The shortest state key accepted, in bytes.
const MIN_STATE_KEY: usize = 32;

/// `serve`, checked.
#[derive(Debug)]
pub(crate) struct ServeSettings {
    http: Option<SocketAddr>,
    yes: bool,
    /// `--tool-search`: list each caller only what it searched for.
    tool_search: bool,
    auth: Option<AuthPlan>,
    resource: Option<String>,
    /// Serve `/metrics`.
    metrics: bool,
    /// Serve the web console at `/console`.
    console: bool,
    /// `--console-evals FILE`.
    console_evals: Option<PathBuf>,
    /// The replica's name for the audit log.
    replica: Option<String>,
    /// The other replicas: (name, URL of the MCP endpoint).
    peers: Vec<(String, String)>,
    /// This replica's URL in the store's registry (`--advertise-url`).
    advertise_url: Option<String>,
    /// Where the shared state key is.
    state_key_file: Option<PathBuf>,
    /// Where used approvals are recorded for every replica.
    replay_ledger: Option<PathBuf>,
    /// The store the replicas share (`--state`), checked, and what limited
    /// callers get while it is unreachable.
    state: Option<SharedState>,
    /// How often the config and tokens files are looked at (`--no-watch`:
    /// practically never; SIGHUP reloads them either way).
    poll: std::time::Duration,
    /// How long to drain before stopping.
    drain: std::time::Duration,
    /// HTTPS: the certificate and key files (watched).
    tls: Option<TlsFiles>,
    /// The HTTP runner's connection limits.
    connections: ConnectionLimits,
}

/// How callers will authenticate, before the address is bound (the
/// default resource URL needs the bound port).
#[derive(Debug)]
enum AuthPlan {
    /// Named tokens, and the file they came from (watched), if any.
    Tokens(StaticTokens, Option<TokensSource>),
    OAuth {
        issuer: String,
        jwks_url: Option<String>,
        scopes: Vec<String>,
        introspection: Option<Introspection>,
        /// JWTs typed `JWT` (or untyped) are accepted too.
        accept_plain_jwt: bool,
    },
}

/// Checks the flags: authentication settings that fit together, tokens
/// that parse, and no unauthenticated non-loopback address unless
/// `--insecure-no-auth`.
///
/// # Errors
/// A usage [`Failure`] (exit 1) saying what to change.
pub(crate) fn resolve(a: ServeArgs) -> Result<ServeSettings, Failure> {
    let connections = connection_limits(&a);
    let oauth_only = [
        ("--issuer", a.issuer.is_some()),
        ("--jwks-url", a.jwks_url.is_some()),
        ("--introspection-url", a.introspection_url.is_some()),
        ("--scope", !a.scopes.is_empty()),
        ("--accept-plain-jwt", a.accept_plain_jwt),
    ];
    if a.auth != Some(ServeAuth::Oauth) {
        if let Some((flag, _)) = oauth_only.iter().find(|(_, given)| *given) {
            return Err(Failure::usage(format!("{flag} needs --auth oauth")));
        }
    }
    if a.console && a.auth.is_none() {
        return Err(Failure::usage(
            "--console needs --auth token (or --auth oauth): only principals marked \"console\": true in the config may open it",
        ));
    }
    if a.auth != Some(ServeAuth::Token) && a.tokens_file.is_some() {
        return Err(Failure::usage("--tokens-file needs --auth token"));
    }
    if a.http.is_none() && (a.resource.is_some() || a.insecure_no_auth || a.tls_cert.is_some()) {
        return Err(Failure::usage(
            "--resource, --insecure-no-auth and --tls-cert need --http",
        ));
    }
    // --no-watch: SIGHUP still reloads; the files are not polled.
    let poll = if a.no_watch {
        std::time::Duration::from_secs(365 * 24 * 3600)
    } else {
        WATCH_POLL
    };
    let auth = match a.auth {
        None => None,
        Some(ServeAuth::Token) => {
            // Made before the first read, so the watch misses no change.
            let file = a.tokens_file.map(|path| {
                let mut source = TokensSource::new(path);
                source.poll = poll;
                source
            });
            Some(AuthPlan::Tokens(tokens(file.as_ref())?, file))
        }
        Some(ServeAuth::Oauth) => {
            let Some(issuer) = a.issuer else {
                return Err(Failure::usage(
                    "--auth oauth needs --issuer URL (the authorization server)",
                ));
            };
            let introspection = match a.introspection_url {
                None => None,
                Some(url) => Some(introspection_client(url)?),
            };
            Some(AuthPlan::OAuth {
                issuer,
                jwks_url: a.jwks_url,
                scopes: a.scopes,
                introspection,
                accept_plain_jwt: a.accept_plain_jwt,
            })
        }
    };
    // Made before the first read, so the watch misses no change.
    let tls = match (a.tls_cert, a.tls_key) {
        (Some(cert), Some(key)) => {
            let mut files = TlsFiles::new(cert, key);
            files.poll = poll;
            Some(files)
        }
        _ => None,
    };
    if let Some(addr) = a.http {
        if auth.is_some() && tls.is_none() && !addr.ip().is_loopback() {
            crate::out::note(format!(
                "serving {addr} over plain HTTP: unless a proxy in front of it terminates TLS, callers' tokens cross the network in clear text (--tls-cert and --tls-key serve HTTPS)"
            ));
        }
        if auth.is_none() && !addr.ip().is_loopback() {
            if !a.insecure_no_auth {
                return Err(Failure::usage(format!(
                    "refusing to serve {addr} without authentication: anyone who can reach it could call your tools. \
                     Add --auth token (or --auth oauth), or --insecure-no-auth to serve it open anyway"
                )));
            }
            crate::out::warning(format!(
                "serving {addr} without authentication (--insecure-no-auth): anyone who can reach it can call your tools"
            ));
        }
    }
    Ok(ServeSettings {
        http: a.http,
        yes: a.yes,
        tool_search: a.tool_search,
        auth,
        resource: a.resource,
        metrics: a.metrics,
        console: a.console,
        console_evals: a.console_evals,
        replica: a.replica,
        peers: peers(&a.peers)?,
        advertise_url: match &a.advertise_url {
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                return Err(Failure::usage(format!(
                    "--advertise-url {url}: expected the http:// or https:// URL of this replica's MCP endpoint, e.g. http://10.0.0.2:8080/mcp"
                )));
            }
            other => other.clone(),
        },
        state_key_file: a.state_key_file,
        replay_ledger: a.replay_ledger,
        state: match &a.state {
            None => None,
            Some(url) => Some(
                SharedState::new(
                    url,
                    match a.state_fail {
                        StateFailFlag::Closed => StateFail::Closed,
                        StateFailFlag::Open => StateFail::Open,
                    },
                )
                .map_err(|e| Failure::usage(e.to_string()))?,
            ),
        },
        poll,
        drain: std::time::Duration::from_secs(a.drain),
        tls,
        connections,
    })
}

/// The connection limit flags, for the gateway's HTTP runner.
fn connection_limits(a: &ServeArgs) -> ConnectionLimits {
    let count = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut limits = ConnectionLimits::default();
    limits.max_connections = count(a.max_connections);
    limits.max_connections_per_peer = count(a.max_connections_per_peer);
    limits.header_timeout = a.header_timeout;
    limits.idle_timeout = a.idle_timeout;
    limits.body_timeout = a.body_timeout;
    limits.write_timeout = a.write_timeout;
    limits
}

/// The `--peer NAME=URL` flags, split.
fn peers(flags: &[String]) -> Result<Vec<(String, String)>, Failure> {
    flags
        .iter()
        .map(|flag| match flag.split_once('=') {
            Some((name, url)) if !name.trim().is_empty() && !url.trim().is_empty() => {
                Ok((name.trim().to_owned(), url.trim().to_owned()))
            }
            _ => Err(Failure::usage(format!(
                "--peer {flag}: expected NAME=URL, e.g. --peer b=http://10.0.0.2:8080/mcp"
            ))),
        })
        .collect()
}

/// The tokens of `--tokens-file`, else of `$SWITCHBOARD_GATEWAY_TOKENS`.
fn tokens(file: Option<&TokensSource>) -> Result<StaticTokens, Failure> {
    let (text, source) = match file {
        Some(file) => {
            let (tokens, warning) = file
                .read()
                .map_err(|e| Failure::usage(format!("--tokens-file: {e}")))?;
            if let Some(warning) = warning {
                crate::out::warning(warning.to_string());
            }
            return Ok(tokens);
        }
        None => match std::env::var(TOKENS_VAR) {
            Ok(text) if !text.trim().is_empty() => (text, format!("${TOKENS_VAR}")),
            _ => {
                return Err(Failure::usage(format!(
                    "--auth token needs --tokens-file FILE or ${TOKENS_VAR} (one `NAME TOKEN` per line)"
                )));
            }
        },
    };
    StaticTokens::parse(&text, &source).map_err(|e| Failure::usage(e.to_string()))
}

/// The introspection endpoint with the client credentials of the
/// environment.
fn introspection_client(url: String) -> Result<Introspection, Failure> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (Some(client_id), Some(secret)) =
        (var(INTROSPECTION_ID_VAR), var(INTROSPECTION_SECRET_VAR))
    else {
        return Err(Failure::usage(format!(
            "--introspection-url needs ${INTROSPECTION_ID_VAR} and ${INTROSPECTION_SECRET_VAR}"
        )));
    };
    Ok(Introspection {
        url,
        client_id,
        client_secret: secret.into(),
    })
}

/// Serves the config's table until stdin ends (stdio) or Ctrl-C / SIGTERM
/// (after the drain, over HTTP); the config file is watched (and `SIGHUP`
/// reloads it).
///
/// # Errors
/// When the config is bad, the address cannot be bound, or stdin fails.
pub(crate) async fn run(settings: &Settings, serve: &ServeSettings) -> anyhow::Result<()> {
    let state_key = state_key(serve)?;
    let telemetry = Telemetry::from_env(serve.metrics && serve.http.is_some())?;
    let Loaded {
        config,
        mut tickets,
    } = settings.load_config()?;
    let drain = Drain::default();
    if let Some(state) = &serve.state {
        // Started anyway: the store may come up later, and everything
        // but approvals and limited calls works without it.
        match state.check().await {
            Ok(()) => crate::out::note(format!("shared state: {}", state.url())),
            Err(why) => crate::out::warning(format!(
                "{why}; starting anyway: until it answers, answered approvals are refused, and limited callers as --state-fail says"
            )),
        }
    }
    let mut options = GatewayOptions::default();
    options.tool_search = serve.tool_search;
    options.console = serve.console;
    options.console_evals.clone_from(&serve.console_evals);
    let options = options
        .replica(serve.replica.clone().unwrap_or_else(host_name))
        .peers(serve.peers.clone())
        .advertise_url(serve.advertise_url.clone())
        .assume_yes(serve.yes)
        .state_key(state_key)
        .replay_ledger(serve.replay_ledger.clone())
        .state(serve.state.clone())
        .telemetry(telemetry)
        .drain(drain.clone())
        .connections(serve.connections);
    let mut config = ServeConfig::new(config, options);
    config.mount.client_info = Some(crate::session::client_info());
    config.watch = Some(serve.poll);
    if let Err(e) = tickets.start() {
        return Err(Failure::usage(format!("{e:#}")).into());
    }
    let served = match serve.http {
        None => {
            let mut signals = crate::StopSignals::new();
            let stop = async move { signals.next().await };
            let served = switchboard_gateway::serve(Listener::Stdio, config, stop).await;
            failure(served, "stdio gateway")
        }
        Some(addr) => serve_http(addr, serve, config, drain).await,
    };
    tickets.stop().await;
    served
}

/// `switchboard console`: the config's host with the web console on
/// 127.0.0.1 at a free port, no authentication but a one-time sign-in
/// token in the printed URL (its first use signs the browser in), until
/// Ctrl-C / SIGTERM.
///
/// # Errors
/// When the config is bad or no loopback port can be bound.
pub(crate) async fn console(settings: &Settings, no_open: bool) -> anyhow::Result<()> {
    let open = !no_open;
    let Loaded {
        config,
        mut tickets,
    } = settings.load_config()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot bind a loopback port")?;
    let local = listener.local_addr()?;
    let token = switchboard_gateway::console_login_token()
        .context("no system randomness for a sign-in token")?;
    let mut options = GatewayOptions::default();
    options.console = true;
    options.console_login = Some(token.clone());
    let mut config = ServeConfig::new(config, options);
    config.mount.client_info = Some(crate::session::client_info());
    config.on_ready = Some(Box::new(move |_| {
        let url = format!("http://{local}/console/login?once={token}");
        // The URL is printed either way: the browser may not come up.
        let opened = if open && crate::cmd::auth::browser_available() {
            switchboard_oauth::open_in_browser(&url);
            "opened in the browser; "
        } else {
            ""
        };
        crate::out::note(format!(
            "switchboard console: {url} (the link signs in once; {opened}Ctrl-C stops it)"
        ));
    }));
    if let Err(e) = tickets.start() {
        return Err(Failure::usage(format!("{e:#}")).into());
    }
    let mut signals = crate::StopSignals::new();
    let stop = async move { signals.next().await };
    let served = switchboard_gateway::serve(Listener::Http(listener), config, stop).await;
    tickets.stop().await;
    failure(served, "console")
}

/// Binds `addr` and serves the gateway there until Ctrl-C / SIGTERM and
/// the drain.
async fn serve_http(
    addr: SocketAddr,
    serve: &ServeSettings,
    mut config: ServeConfig,
    drain: Drain,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().unwrap_or(addr);
    let scheme = if serve.tls.is_some() { "https" } else { "http" };
    config.tls_files.clone_from(&serve.tls);
    let resource = match &serve.resource {
        Some(url) => url.clone(),
        None if serve.auth.is_some() && local.ip().is_unspecified() => {
            return Err(Failure::usage(format!(
                "--http {addr} listens on every address: give --resource URL, the gateway's URL as clients reach it (the tokens' audience)"
            ))
            .into());
        }
        None => format!("{scheme}://{local}/mcp"),
    };
    let mut how = "no authentication";
    if let Some(plan) = &serve.auth {
        let auth = inbound(plan, &resource)?;
        how = auth.kind();
        if let AuthPlan::Tokens(_, Some(file)) = plan {
            config.tokens_file = Some(file.clone());
        }
        config.gateway.auth = Some(auth);
    }
    // The address goes to stderr: stdout is not used.
    let stopping = if serve.drain.is_zero() {
        "Ctrl-C stops it".to_owned()
    } else {
        format!(
            "Ctrl-C drains it for {} s, then stops it",
            serve.drain.as_secs()
        )
    };
    let metrics = config.gateway.telemetry.has_metrics();
    let console = config.gateway.console;
    config.on_ready = Some(Box::new(move |gateway| {
        if console {
            crate::out::note(format!("console: {scheme}://{local}/console"));
        }
        crate::out::note(format!(
            "switchboard gateway: {scheme}://{local}/mcp ({} tools; {how}; {stopping})",
            gateway.tool_count()
        ));
        if metrics {
            crate::out::note(format!("metrics: {scheme}://{local}/metrics"));
        }
    }));
    // Listened for before the gateway says it is up: a signal that comes
    // right after the banner drains it rather than killing the process.
    let stop = drain_then_stop(crate::StopSignals::new(), drain, serve.drain);
    let served = switchboard_gateway::serve(Listener::Http(listener), config, stop).await;
    failure(served, "HTTP gateway")
}

/// How the gateway ended, as the command reports it: a host that cannot
/// be mounted and TLS files that do not load are the user's to fix (exit
/// 1, the cause's own words); anything else is said after `what`.
fn failure(served: Result<(), GatewayError>, what: &'static str) -> anyhow::Result<()> {
    match served {
        Ok(()) => Ok(()),
        Err(GatewayError::Mount(e)) => Err(Failure::usage(e.to_string()).into()),
        Err(GatewayError::Tls(e)) => Err(Failure::usage(e.to_string()).into()),
        Err(GatewayError::FileAccess(e)) => Err(Failure::usage(e.to_string()).into()),
        Err(e) => Err(anyhow::Error::new(e).context(what)),
    }
}

/// Completes when the gateway is to stop: at Ctrl-C / SIGTERM, or with a
/// drain period, that long after it (`/readyz` answering 503 meanwhile)
/// or at a second signal, whichever comes first.
async fn drain_then_stop(
    mut signals: crate::StopSignals,
    drain: Drain,
    period: std::time::Duration,
) {
    signals.next().await;
    if period.is_zero() {
        return;
    }
    drain.start();
    crate::out::note(format!(
        "draining: /readyz answers 503; still serving for {} s (a second Ctrl-C / SIGTERM stops at once)",
        period.as_secs()
    ));
    tokio::select! {
        () = tokio::time::sleep(period) => {}
        () = signals.next() => {}
    }
    crate::out::note("drained: stopping");
}

fn inbound(plan: &AuthPlan, resource: &str) -> anyhow::Result<InboundAuth> {
    Ok(match plan {
        AuthPlan::Tokens(tokens, _) => InboundAuth::tokens(tokens.clone(), resource),
        AuthPlan::OAuth {
            issuer,
            jwks_url,
            scopes,
            introspection,
            accept_plain_jwt,
        } => {
            let mut settings = OAuthInbound::new(issuer, resource)
                .scopes(scopes.clone())
                .accept_plain_jwt(*accept_plain_jwt);
            if let Some(url) = jwks_url {
                settings = settings.jwks_url(url);
            }
            if let Some(i) = introspection {
                settings = settings.introspection(i.clone());
            }
            InboundAuth::oauth(settings)?
        }
    })
}

/// The state key: `--state-key-file`, else `SWITCHBOARD_STATE_KEY`, else
/// none (a random key per process).
fn state_key(serve: &ServeSettings) -> Result<Option<Vec<u8>>, Failure> {
    let (key, from) = match &serve.state_key_file {
        Some(path) => {
            // Whoever can write the key can forge approvals; whoever can
            // read it can too, which is said (and the key still used).
            match check_access_file(path, AccessFile::StateKey) {
                Ok(Some(warning)) => crate::out::warning(warning.to_string()),
                Ok(None) => {}
                Err(e) => return Err(Failure::usage(e.to_string())),
            }
            let bytes = std::fs::read(path).map_err(|e| {
                Failure::usage(format!(
                    "cannot read the state key file {}: {e}",
                    path.display()
                ))
            })?;
            (bytes, path.display().to_string())
        }
        None => match std::env::var_os(STATE_KEY_VAR) {
            Some(v) => (
                v.into_encoded_bytes(),
                format!("the environment variable {STATE_KEY_VAR}"),
            ),
            None => return Ok(None),
        },
    };
    // A trailing newline (echo > file) is not part of the key.
    let key = key.trim_ascii().to_vec();
    if key.len() < MIN_STATE_KEY {
        return Err(Failure::usage(format!(
            "the state key in {from} is {} bytes; use at least {MIN_STATE_KEY} random bytes \
             (e.g. `openssl rand -hex 32`)",
            key.len()
        )));
    }
    Ok(Some(key))
}

/// This machine's name (the kernel's, else `HOSTNAME`), the default
/// replica name.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "switchboard".into())
}
