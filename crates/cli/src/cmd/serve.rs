//! `switchboard serve [--stdio | --http ADDR]`: the gateway
//! (`switchboard-gateway`) over the config's mounted host. This module only
//! turns flags into the gateway's options and runs it until stdin ends
//! (stdio) or Ctrl-C / SIGTERM.

use std::net::SocketAddr;

use anyhow::Context as _;
use switchboard_gateway::{ConfigSource, Gateway, GatewayOptions, Telemetry, watch_config};
use switchboard_host::MountOptions;

use crate::exit::Failure;
use crate::session::Session;
use crate::settings::{ServeOps, Settings};

/// The environment variable holding the state key replicas share.
const STATE_KEY_VAR: &str = "SWITCHBOARD_STATE_KEY";

/// The shortest state key accepted, in bytes.
const MIN_STATE_KEY: usize = 32;

/// Mounts the config and serves its table until stdin ends (stdio) or
/// Ctrl-C / SIGTERM.
///
/// # Errors
/// When the config is bad, the address cannot be bound, or stdin fails.
pub(crate) async fn run(
    settings: &Settings,
    http: Option<SocketAddr>,
    yes: bool,
    ops: &ServeOps,
) -> anyhow::Result<()> {
    let state_key = state_key(ops)?;
    let telemetry = Telemetry::from_env(ops.metrics && http.is_some())?;
    let loaded = settings.load_config()?;
    let watched = loaded.config.origin.path().map(ConfigSource::new);
    let mut options = MountOptions::default();
    options.input_handler = crate::ask::for_command(settings, &loaded.config);
    options.observer = telemetry.observer();
    options.replica = Some(ops.replica.clone().unwrap_or_else(host_name));
    let session = Session::mount(loaded, options).await?;
    let options = GatewayOptions::default()
        .assume_yes(yes)
        .state_key(state_key)
        .telemetry(telemetry.clone());
    // SIGHUP reloads even with --no-watch; only the file is not polled.
    let watcher = watched.map(|mut source| {
        if !ops.watch {
            source.poll = std::time::Duration::from_secs(365 * 24 * 3600);
        }
        watch_config(&session.host, source)
    });
    let result = serve(&session, http, options).await;
    if let Some(w) = watcher {
        w.abort();
    }
    telemetry.shutdown().await;
    session.close().await;
    result
}

async fn serve(
    session: &Session,
    http: Option<SocketAddr>,
    options: GatewayOptions,
) -> anyhow::Result<()> {
    let metrics = options.telemetry.has_metrics();
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
            if metrics {
                crate::out::note(format!("metrics: http://{local}/metrics"));
            }
            gateway
                .serve_http(listener, crate::shutdown_signal())
                .await
                .context("HTTP gateway")
        }
    }
}

/// The state key: `--state-key-file`, else `SWITCHBOARD_STATE_KEY`, else
/// none (a random key per process).
fn state_key(ops: &ServeOps) -> Result<Option<Vec<u8>>, Failure> {
    let (key, from) = match &ops.state_key_file {
        Some(path) => {
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
