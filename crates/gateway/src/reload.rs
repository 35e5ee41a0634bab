//! Config reload: the config file is watched (its modification time and
//! size, looked at every `poll`), and `SIGHUP` reloads it at once. A
//! config that loads is applied with [`Host::reload`]; one with problems
//! is reported (every problem, one log line each) and the running config
//! is kept.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use switchboard_host::{Config, Host, HostError, ReloadReport};
use tokio::task::JoinHandle;
use tracing::{error, info};

/// Where the gateway's config comes from, and how it is read again.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    /// The config file.
    pub path: PathBuf,
    /// How often its modification time and size are looked at.
    pub poll: Duration,
}

impl ConfigSource {
    /// The file at `path`, looked at every second.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> ConfigSource {
        ConfigSource {
            path: path.into(),
            poll: Duration::from_secs(1),
        }
    }

    /// Reads and checks the file.
    ///
    /// # Errors
    /// [`HostError`] listing every problem, or the read failure.
    pub fn load(&self) -> Result<Config, HostError> {
        Config::load(Some(&self.path), || {
            // Never reached: an explicit path is never the demo.
            Err(HostError::NoMatch("the built-in demo config".into()))
        })
    }
}

/// Watches `source` and reloads `host` when the file changes or the
/// process gets `SIGHUP`, until the returned task is aborted (or the host
/// is dropped).
#[must_use]
pub fn watch_config(host: &Host, source: ConfigSource) -> JoinHandle<()> {
    let host = host.clone();
    tokio::spawn(async move {
        let mut seen = stamp(&source).await;
        let mut hangup = hangup_signal();
        let mut tick = tokio::time::interval(source.poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let why = tokio::select! {
                _ = tick.tick() => {
                    let now = stamp(&source).await;
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    "the file changed"
                }
                () = next_hangup(&mut hangup) => {
                    seen = stamp(&source).await;
                    "SIGHUP"
                }
            };
            let _ = reload_once(&host, &source, why).await;
        }
    })
}

/// Reads `source` and applies it to `host`; on problems, logs every one
/// and keeps the running config.
///
/// # Errors
/// The load's [`HostError`] (already logged).
pub(crate) async fn reload_once(
    host: &Host,
    source: &ConfigSource,
    why: &str,
) -> Result<ReloadReport, HostError> {
    match source.load() {
        Ok(config) => {
            info!(file = %source.path.display(), reason = why, "reloading the config");
            Ok(host.reload(config).await)
        }
        Err(e) => {
            let problems: Vec<String> = match e.config_problems() {
                Some(p) => p.to_string().lines().map(str::to_owned).collect(),
                None => vec![e.to_string()],
            };
            error!(
                file = %source.path.display(),
                problems = problems.len(),
                "the config was not reloaded: it has problems; the running config is kept"
            );
            for p in &problems {
                error!("config problem: {p}");
            }
            Err(e)
        }
    }
}

/// The file's modification time and size (`None` while it cannot be
/// read).
async fn stamp(source: &ConfigSource) -> Option<(SystemTime, u64)> {
    let meta = tokio::fs::metadata(&source.path).await.ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = ();

#[cfg(unix)]
fn hangup_signal() -> Hangup {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}
#[cfg(not(unix))]
fn hangup_signal() -> Hangup {}

#[cfg(unix)]
async fn next_hangup(signal: &mut Hangup) {
    let got = match signal {
        Some(s) => s.recv().await.is_some(),
        None => false,
    };
    if !got {
        // No signal handler (or it closed): only the file is watched.
        *signal = None;
        std::future::pending::<()>().await;
    }
}
#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangup) {
    std::future::pending().await
}
