//! `conformance-client`: the client program the official MCP conformance
//! suite drives in its client role.
//!
//! The suite starts a mock server per scenario and runs this binary with the
//! server's URL as the last argument; the scenario's name comes in
//! `MCP_CONFORMANCE_SCENARIO`, the wire revision to speak in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`, and scenario data (e.g. the tool calls
//! of `http-custom-headers`) in `MCP_CONFORMANCE_CONTEXT` as JSON. The
//! program exits 0 once the scenario's flow is done, 1 when it failed.
//!
//! Every scenario goes through the library's [`Client`] over the
//! [`HttpTransport`] — the same code path any Switchboard user takes — so
//! the suite's verdict is a verdict on the client, not on a side path. The
//! `auth/*` scenarios add the library's OAuth client as the transport's
//! authorization hook (see `auth`): the first 401 starts discovery,
//! registration and the authorization flow, and the request goes on.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call conformance-client http://localhost:3000/mcp
//! ```
//!
//! Logs go to stderr (`RUST_LOG`, default `warn` plus the OAuth steps at
//! `info`, which never include a secret); each step is printed to
//! stdout so the suite's saved `stdout.txt` shows what was done.

mod auth;
mod input;
mod scenario;
mod skills;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use switchboard_client::{Client, EraPolicy, HttpTransport};
use switchboard_oauth::OAuthProvider;
use switchboard_wire::{Implementation, version};

/// The per-request deadline: well inside the suite's 30 s per scenario.
/// The first request of an `auth/*` scenario carries a whole authorization
/// (a dozen exchanges with the suite's local mocks).
const TIMEOUT: Duration = Duration::from_secs(20);
/// Bound on each exchange with an authorization server.
const OAUTH_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    // The OAuth steps are logged at info (never a secret), so the suite's
    // saved stderr.txt shows how an authorization went.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,switchboard_oauth=info")
            }),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            report(&anyhow::Error::new(e).context("cannot start the async runtime"));
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let url = std::env::args()
        .skip(1)
        .last()
        .context("usage: conformance-client URL (the MCP server URL is the last argument)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let wire = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .unwrap_or_else(|_| version::LATEST.to_owned());
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).context("MCP_CONFORMANCE_CONTEXT is not JSON")?
        }
        _ => Value::Null,
    };
    // The suite says which wire to speak: a legacy revision means the
    // 2025-11-25 handshake straight away; otherwise the client finds the
    // era itself, as it would for any server.
    let policy = if version::LEGACY_ACCEPTED.contains(&wire.as_str()) {
        EraPolicy::LegacyOnly
    } else if version::is_modern_supported(&wire) {
        EraPolicy::Probe
    } else {
        bail!("MCP_CONFORMANCE_PROTOCOL_VERSION {wire:?} is not a revision this client speaks");
    };
    say(&format!(
        "scenario {scenario:?} against {url} (wire {wire})"
    ));

    let mut transport = HttpTransport::builder("conformance", &url);
    let oauth = if auth::is_auth_scenario(&scenario) {
        let (provider, setup) = auth::provider(&scenario, &url, &context, OAUTH_TIMEOUT)?;
        say(&format!("oauth: {setup}"));
        transport = transport.auth(Arc::new(provider.clone()));
        Some(provider)
    } else {
        None
    };
    let transport = transport
        .build()
        .context("cannot set up the HTTP transport")?;
    let client = Client::builder("conformance", transport)
        .client_info(Implementation::new(
            "switchboard-conformance-client",
            env!("CARGO_PKG_VERSION"),
        ))
        .timeout(TIMEOUT)
        // The probe is the first request, so behind OAuth it waits for the
        // authorization too: as long as any request.
        .probe_timeout(TIMEOUT)
        .era_policy(policy)
        .input_handler(input::Defaults)
        .connect()
        .await
        .context("connecting")?;
    say(&format!(
        "connected: {} era, protocol {}",
        client.era(),
        client.protocol_version()
    ));
    let outcome = scenario::run(&scenario, &client, &context).await;
    client.close().await;
    if let Some(oauth) = oauth {
        report_login(&oauth).await;
    }
    outcome
}

/// Which authorization server issued the tokens used, to whom, for what
/// scope (no token, no secret).
async fn report_login(oauth: &OAuthProvider) {
    match oauth.status().await {
        Ok(Some(login)) => say(&format!(
            "oauth: authorized by {} as client {}, scope {}, refresh token: {}",
            login.issuer,
            login.client_id,
            if login.scopes.is_empty() {
                "(none)".to_owned()
            } else {
                format!("{:?}", login.scopes.join(" "))
            },
            if login.has_refresh_token { "yes" } else { "no" }
        )),
        Ok(None) => say("oauth: no token held"),
        Err(e) => say(&format!("oauth: cannot tell the login: {e}")),
    }
}

/// One line of progress on stdout (the suite keeps it as `stdout.txt`).
#[allow(clippy::print_stdout)] // This program's output is its transcript.
pub(crate) fn say(line: &str) {
    println!("{line}");
}

/// The error and its causes, on stderr.
#[allow(clippy::print_stderr)] // The one place a failure is reported.
fn report(error: &anyhow::Error) {
    eprintln!("conformance-client: {error:#}");
}
