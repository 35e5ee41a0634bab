//! Reload while serving: the config file, and the named tokens of
//! `--tokens-file`. Each file is watched (its modification time, size,
//! mode and owner, looked at every `poll`), and `SIGHUP` reloads both at
//! once. A file that loads is applied (the config with [`Host::reload`],
//! the tokens with [`InboundAuth::replace_tokens`]); one with problems, or
//! one that others may write ([`check_access_file`]), is reported (every
//! problem, one log line each) and what is running is kept.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use switchboard_host::{Config, Host, HostError, ReloadReport};
use switchboard_server::http::{ServerTls, TlsError};
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use crate::access::{AccessFile, AccessWarning, check_access_file};
use crate::{GatewayError, InboundAuth, StaticTokens, Telemetry, TokenChange};

/// How often a watched file is looked at by default.
pub const WATCH_POLL: Duration = Duration::from_secs(1);

/// A file's modification time, size, and (on Unix) mode and owner: a
/// `chmod` or `chown` changes no content, but may make a refused file
/// acceptable, or an accepted one refused.
type Stamp = (SystemTime, u64, u32, u32);

/// Where the gateway's config comes from, and how it is read again.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    /// The config file.
    pub path: PathBuf,
    /// How often its modification time and size are looked at.
    pub poll: Duration,
    /// The file's stamp when this was made (just after or before the file
    /// was read): a change after it is reloaded once the watch starts.
    stamp: Option<Stamp>,
}

impl ConfigSource {
    /// The file at `path`, looked at every second. Make it when the file
    /// is read: a change made after that, even before the watch starts (a
    /// slow mount), is not missed.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> ConfigSource {
        let path = path.into();
        ConfigSource {
            stamp: stamp_now(&path),
            path,
            poll: WATCH_POLL,
        }
    }

    /// Checks who may write the file ([`check_access_file`]), then reads
    /// and checks it.
    ///
    /// # Errors
    /// [`GatewayError::FileAccess`] for a file others may write,
    /// [`GatewayError::Config`] listing every problem, or the read failure.
    pub fn load(&self) -> Result<Config, GatewayError> {
        check_access_file(&self.path, AccessFile::Config)?;
        Config::load(Some(&self.path), || {
            // Never reached: an explicit path is never the demo.
            Err(HostError::NoMatch("the built-in demo config".into()))
        })
        .map_err(GatewayError::Config)
    }
}

/// Watches `source` and reloads `host` when the file changes or the
/// process gets `SIGHUP`, until the returned task is aborted (or the host
/// is dropped). Each reload is counted in `telemetry`'s metrics.
#[must_use]
pub fn watch_config(
    host: &Host,
    source: ConfigSource,
    telemetry: &Telemetry,
    auth: Option<&InboundAuth>,
) -> JoinHandle<()> {
    let (host, telemetry, auth) = (host.clone(), telemetry.clone(), auth.cloned());
    let path = source.path.clone();
    watch(vec![path], source.poll, vec![source.stamp], move |why| {
        let (host, source, telemetry) = (host.clone(), source.clone(), telemetry.clone());
        let auth = auth.clone();
        async move {
            let applied = reload_once(&host, &source, why).await.is_ok();
            telemetry.reloaded("config", applied);
            if let (true, Some(auth)) = (applied, &auth) {
                check_principals(&host, auth);
            }
        }
    })
}

/// Logs each `principals` entry of `host`'s config that no named token in
/// use has ([`InboundAuth::principals_without_token`]): a misspelt name
/// leaves the caller it was meant for unrestricted. Returns the names.
pub fn check_principals(host: &Host, auth: &InboundAuth) -> Vec<String> {
    let missing = auth.principals_without_token(&host.config());
    for name in &missing {
        error!(
            principal = %name,
            "principals.{name} names no token in use: its rules and limits apply to no caller \
             (a misspelt name leaves the caller it was meant for with the whole table)"
        );
    }
    missing
}

/// Where the named tokens come from (`--tokens-file`), and how they are
/// read again.
#[derive(Debug, Clone)]
pub struct TokensSource {
    /// The tokens file: one `NAME TOKEN` per line ([`StaticTokens`]).
    pub path: PathBuf,
    /// How often its modification time and size are looked at.
    pub poll: Duration,
    /// The file's stamp when this was made (see [`ConfigSource::new`]).
    stamp: Option<Stamp>,
}

impl TokensSource {
    /// The file at `path`, looked at every second. Make it when the file
    /// is first read, as [`ConfigSource::new`].
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> TokensSource {
        let path = path.into();
        TokensSource {
            stamp: stamp_now(&path),
            path,
            poll: WATCH_POLL,
        }
    }

    /// Checks who may write and read the file ([`check_access_file`]: a
    /// warning is logged for one others may read), then reads and checks
    /// it. Errors name the file and the line, never a token.
    ///
    /// # Errors
    /// As [`TokensSource::read`].
    pub fn load(&self) -> Result<StaticTokens, GatewayError> {
        let (tokens, warning) = self.read()?;
        if let Some(warning) = warning {
            warn!("{warning}");
        }
        Ok(tokens)
    }

    /// [`TokensSource::load`], handing the warning about a file others may
    /// read back to the caller (to show it where it shows warnings) instead
    /// of logging it.
    ///
    /// # Errors
    /// [`GatewayError::FileAccess`] for a file others may write or that
    /// belongs to another user, [`GatewayError::Auth`] when the file cannot
    /// be read or its list is bad ([`StaticTokens::parse`]).
    pub fn read(&self) -> Result<(StaticTokens, Option<AccessWarning>), GatewayError> {
        let warning = check_access_file(&self.path, AccessFile::Tokens)?;
        let name = self.path.display().to_string();
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| GatewayError::Auth(format!("cannot read {name}: {e}")))?;
        Ok((StaticTokens::parse(&text, &name)?, warning))
    }
}

/// Watches `source` and puts its tokens in place in `auth` when the file
/// changes or the process gets `SIGHUP`, until the returned task is
/// aborted. A file that does not load is reported and the tokens in use
/// are kept. Each reload is counted in `telemetry`'s metrics.
#[must_use]
pub fn watch_tokens(
    auth: &InboundAuth,
    source: TokensSource,
    telemetry: &Telemetry,
    host: &Host,
) -> JoinHandle<()> {
    let (auth, telemetry, host) = (auth.clone(), telemetry.clone(), host.clone());
    let path = source.path.clone();
    watch(vec![path], source.poll, vec![source.stamp], move |why| {
        let (auth, source, telemetry) = (auth.clone(), source.clone(), telemetry.clone());
        let host = host.clone();
        async move {
            let applied = reload_tokens(&auth, &source, why).await.is_ok();
            telemetry.reloaded("tokens", applied);
            if applied {
                check_principals(&host, &auth);
            }
        }
    })
}

/// Reads `source` and puts its tokens in place in `auth`; on problems,
/// logs them and keeps the tokens in use.
///
/// # Errors
/// The load's [`GatewayError`] (already logged).
pub(crate) async fn reload_tokens(
    auth: &InboundAuth,
    source: &TokensSource,
    why: &str,
) -> Result<TokenChange, GatewayError> {
    let loading = source.clone();
    let loaded = tokio::task::spawn_blocking(move || loading.load())
        .await
        .map_err(|e| GatewayError::Auth(format!("the tokens file was not read: {e}")))
        .and_then(|r| r);
    let applied = loaded.and_then(|tokens| auth.replace_tokens(tokens));
    match &applied {
        Ok(change) => info!(
            file = %source.path.display(),
            reason = why,
            tokens = change.count,
            added = ?change.added,
            removed = ?change.removed,
            replaced = ?change.replaced,
            "reloaded the tokens"
        ),
        Err(e) => error!(
            file = %source.path.display(),
            reason = why,
            "the tokens were not reloaded ({e}); the tokens in use are kept"
        ),
    }
    applied
}

/// The certificate chain and key the gateway serves HTTPS with
/// (`serve --tls-cert`, `--tls-key`), and how they are read again.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain (PEM, the gateway's certificate first).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// How often their modification times and sizes are looked at.
    pub poll: Duration,
    /// The files' stamps when this was made (see [`ConfigSource::new`]).
    stamps: Vec<Option<Stamp>>,
}

impl TlsFiles {
    /// The files at `cert` and `key`, looked at every second. Make it when
    /// they are first read, as [`ConfigSource::new`].
    #[must_use]
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsFiles {
        let (cert, key) = (cert.into(), key.into());
        TlsFiles {
            stamps: vec![stamp_now(&cert), stamp_now(&key)],
            cert,
            key,
            poll: WATCH_POLL,
        }
    }

    /// Reads both files.
    ///
    /// # Errors
    /// [`TlsError`] naming the file that cannot be read or used (a key
    /// that is not the certificate's included).
    pub fn load(&self) -> Result<ServerTls, TlsError> {
        ServerTls::from_pem_files(&self.cert, &self.key)
    }
}

/// Watches `files` (a change to either, or `SIGHUP`) and puts a renewed
/// certificate and key in place in `tls`, used from the next connection
/// on; a pair that does not load (a half-written file, a key that is not
/// the certificate's) is logged and the pair in use kept, and tried again
/// at the next change. Reloads are counted in `telemetry`'s metrics.
pub fn watch_tls(tls: &ServerTls, files: TlsFiles, telemetry: &Telemetry) -> JoinHandle<()> {
    let (tls, telemetry) = (tls.clone(), telemetry.clone());
    let paths = vec![files.cert.clone(), files.key.clone()];
    let seen = files.stamps.clone();
    watch(paths, files.poll, seen, move |why| {
        let (tls, files, telemetry) = (tls.clone(), files.clone(), telemetry.clone());
        async move {
            let loading = files.clone();
            let loaded = tokio::task::spawn_blocking(move || {
                tls.replace_from_pem_files(&loading.cert, &loading.key)
            })
            .await;
            let applied = match loaded {
                Ok(Ok(())) => {
                    info!(cert = %files.cert.display(), reason = why, "reloaded the TLS certificate");
                    true
                }
                Ok(Err(e)) => {
                    error!(
                        cert = %files.cert.display(),
                        reason = why,
                        "the TLS certificate was not reloaded ({e}); the one in use is kept"
                    );
                    false
                }
                Err(e) => {
                    error!(reason = why, "the TLS certificate was not reloaded: {e}");
                    false
                }
            };
            telemetry.reloaded("tls", applied);
        }
    })
}

/// Calls `reload` when one of the files at `paths` changes from `seen`
/// (looked at every `poll`) or the process gets `SIGHUP`, until the task
/// is aborted.
fn watch<F, Fut>(
    paths: Vec<PathBuf>,
    poll: Duration,
    seen: Vec<Option<Stamp>>,
    mut reload: F,
) -> JoinHandle<()>
where
    F: FnMut(&'static str) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut seen = seen;
        let mut hangup = hangup_signal();
        // The first look is one period in: with a poll of a year
        // (`--no-watch`), nothing is looked at on its own.
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + poll, poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let why = tokio::select! {
                _ = tick.tick() => {
                    let now = stamps(&paths).await;
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    "the file changed"
                }
                () = next_hangup(&mut hangup) => {
                    seen = stamps(&paths).await;
                    "SIGHUP"
                }
            };
            reload(why).await;
        }
    })
}

/// Reads `source` and applies it to `host`; on problems (or a file others
/// may write), logs every one and keeps the running config.
///
/// # Errors
/// The load's [`GatewayError`] (already logged).
pub(crate) async fn reload_once(
    host: &Host,
    source: &ConfigSource,
    why: &str,
) -> Result<ReloadReport, GatewayError> {
    match source.load() {
        Ok(config) => {
            info!(file = %source.path.display(), reason = why, "reloading the config");
            Ok(host.reload(config).await)
        }
        Err(GatewayError::FileAccess(e)) => {
            error!(
                file = %source.path.display(),
                reason = why,
                "the config was not reloaded ({e}); the running config is kept"
            );
            Err(GatewayError::FileAccess(e))
        }
        Err(e) => {
            let problems: Vec<String> = match &e {
                GatewayError::Config(e) => match e.config_problems() {
                    Some(p) => p.to_string().lines().map(str::to_owned).collect(),
                    None => vec![e.to_string()],
                },
                e => vec![e.to_string()],
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

/// The file's [`Stamp`] (`None` while it cannot be read).
fn stamp_now(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let (mode, owner) = {
        use std::os::unix::fs::MetadataExt as _;
        (meta.mode(), meta.uid())
    };
    #[cfg(not(unix))]
    let (mode, owner) = (0, 0);
    Some((meta.modified().ok()?, meta.len(), mode, owner))
}

/// [`stamp_now`] of each of `paths`, on the blocking pool (a file may be
/// on a slow disk).
async fn stamps(paths: &[PathBuf]) -> Vec<Option<Stamp>> {
    let paths = paths.to_vec();
    tokio::task::spawn_blocking(move || paths.iter().map(|p| stamp_now(p)).collect())
        .await
        .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Telemetry;
    use switchboard_server::TokenValidator;

    /// A host mounting nothing, with `principals` entries for `names`.
    async fn host_naming(names: &[&str]) -> Host {
        let mut config = Config::new(switchboard_host::ConfigOrigin::Demo);
        for name in names {
            config.principals.insert((*name).to_owned(), Vec::new());
        }
        Host::mount(config, switchboard_host::MountOptions::default())
            .await
            .unwrap()
    }

    async fn empty_host() -> Host {
        host_naming(&[]).await
    }

    // A principals entry no token has is named (a misspelt name would leave
    // its caller unrestricted); OAuth principals cannot be listed.
    #[tokio::test]
    async fn principals_without_a_token_are_named() {
        let tokens = StaticTokens::parse(
            "ci-bot aaaaaaaaaaaaaaaaaaaa\nalice bbbbbbbbbbbbbbbbbbbb",
            "test",
        )
        .unwrap();
        let auth = InboundAuth::tokens(tokens, "http://gw/mcp");
        let host = host_naming(&["ci-bot", "ci-bott", "bob"]).await;
        assert_eq!(check_principals(&host, &auth), ["bob", "ci-bott"]);
        assert!(check_principals(&empty_host().await, &auth).is_empty());
        // A config built in code may give limits without rules.
        let mut config = Config::new(switchboard_host::ConfigOrigin::Demo);
        config
            .principal_limits
            .insert("carol".into(), switchboard_host::LimitsOverride::default());
        assert_eq!(auth.principals_without_token(&config), ["carol"]);
    }

    /// The metrics exposition of `telemetry` (no host: no server states).
    fn metrics_text(telemetry: &Telemetry) -> String {
        telemetry.metrics_without_host().unwrap()
    }

    // A change made between the first read and the start of the watch (a
    // slow mount sits there) is reloaded once the watch starts.
    #[tokio::test]
    async fn a_change_made_before_the_watch_starts_is_not_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.txt");
        std::fs::write(&path, "alice aaaaaaaaaaaaaaaaaaaa\n").unwrap();
        let mut source = TokensSource::new(&path);
        source.poll = Duration::from_millis(20);
        let auth = InboundAuth::tokens(source.load().unwrap(), "http://gw/mcp");
        std::fs::write(&path, "bob bbbbbbbbbbbbbbbbbbbbbbbb\n").unwrap();
        let telemetry = Telemetry::from_env(true).unwrap();
        let watcher = watch_tokens(&auth, source, &telemetry, &empty_host().await);
        let validator = auth.validator(&Telemetry::default());
        let start = std::time::Instant::now();
        while validator
            .validate("bbbbbbbbbbbbbbbbbbbbbbbb")
            .await
            .is_err()
        {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the change was missed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(validator.validate("aaaaaaaaaaaaaaaaaaaa").await.is_err());
        // Counted; then a broken file is counted as rejected, and the
        // tokens in use stay.
        std::fs::write(&path, "carol short\n").unwrap();
        // (The write may be seen half done, and rejected twice.)
        let rejected = r#"switchboard_reloads_total{file="tokens",result="rejected"} "#;
        let start = std::time::Instant::now();
        while !metrics_text(&telemetry).contains(rejected) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{}",
                metrics_text(&telemetry)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let text = metrics_text(&telemetry);
        assert!(
            text.contains(r#"switchboard_reloads_total{file="tokens",result="applied"} 1"#),
            "{text}"
        );
        assert!(validator.validate("bbbbbbbbbbbbbbbbbbbbbbbb").await.is_ok());
        watcher.abort();
    }

    /// Waits (5 s at most) until `telemetry`'s metrics contain `line`.
    async fn wait_for_metric(telemetry: &Telemetry, line: &str) {
        let start = std::time::Instant::now();
        while !metrics_text(telemetry).contains(line) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "no {line} in {}",
                metrics_text(telemetry)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The value of the counter line starting with `prefix` (0 if none).
    fn count(telemetry: &Telemetry, prefix: &str) -> u64 {
        metrics_text(telemetry)
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    #[cfg(unix)]
    fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    // Issue 36: a tokens file others may write is refused at start and at
    // every reload (a local user appending a token of their own gets
    // nothing), the tokens in use kept; once fixed, it loads again.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_tokens_file_others_may_write_is_refused_and_the_tokens_in_use_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.txt");
        std::fs::write(&path, "alice aaaaaaaaaaaaaaaaaaaa\n").unwrap();
        chmod(&path, 0o666);
        let e = TokensSource::new(&path).load().unwrap_err();
        assert!(
            matches!(&e, GatewayError::FileAccess(_))
                && e.to_string().contains("all users may write it"),
            "{e}"
        );
        chmod(&path, 0o600);
        let mut source = TokensSource::new(&path);
        source.poll = Duration::from_millis(20);
        let auth = InboundAuth::tokens(source.load().unwrap(), "http://gw/mcp");
        let telemetry = Telemetry::from_env(true).unwrap();
        let watcher = watch_tokens(&auth, source, &telemetry, &empty_host().await);
        let validator = auth.validator(&Telemetry::default());

        chmod(&path, 0o622);
        std::fs::write(
            &path,
            "alice aaaaaaaaaaaaaaaaaaaa\nmallory mmmmmmmmmmmmmmmmmmmm\n",
        )
        .unwrap();
        wait_for_metric(
            &telemetry,
            r#"switchboard_reloads_total{file="tokens",result="rejected"} "#,
        )
        .await;
        assert!(validator.validate("mmmmmmmmmmmmmmmmmmmm").await.is_err());
        assert!(validator.validate("aaaaaaaaaaaaaaaaaaaa").await.is_ok());

        // A chmod alone is a change: the fixed file loads.
        chmod(&path, 0o600);
        wait_for_metric(
            &telemetry,
            r#"switchboard_reloads_total{file="tokens",result="applied"} 1"#,
        )
        .await;
        assert!(validator.validate("mmmmmmmmmmmmmmmmmmmm").await.is_ok());

        // Another user's file is refused too (only root can make one).
        if nix::unistd::geteuid().is_root() {
            std::fs::write(&path, "alice aaaaaaaaaaaaaaaaaaaa\n").unwrap();
            let rejected = r#"switchboard_reloads_total{file="tokens",result="rejected"} "#;
            let before = count(&telemetry, rejected);
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let e = TokensSource::new(&path).load().unwrap_err();
            assert!(e.to_string().contains("belongs to user 65534"), "{e}");
            let start = std::time::Instant::now();
            while count(&telemetry, rejected) == before {
                assert!(start.elapsed() < Duration::from_secs(5), "not rejected");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(validator.validate("mmmmmmmmmmmmmmmmmmmm").await.is_ok());
        }
        watcher.abort();
    }

    // Issue 36: a config others may write is not reloaded: the running
    // config is kept, the reload counted as rejected.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_config_others_may_write_is_not_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, r#"{"mcpServers": {}, "budgetChars": 1000}"#).unwrap();
        chmod(&path, 0o644);
        let mut source = ConfigSource::new(&path);
        source.poll = Duration::from_millis(20);
        let host = Host::mount(
            source.load().unwrap(),
            switchboard_host::MountOptions::default(),
        )
        .await
        .unwrap();
        let telemetry = Telemetry::from_env(true).unwrap();
        let watcher = watch_config(&host, source.clone(), &telemetry, None);

        chmod(&path, 0o646);
        std::fs::write(&path, r#"{"mcpServers": {}, "budgetChars": 2000}"#).unwrap();
        wait_for_metric(
            &telemetry,
            r#"switchboard_reloads_total{file="config",result="rejected"} "#,
        )
        .await;
        assert_eq!(host.config().budget_chars, 1000);
        let e = source.load().unwrap_err();
        assert!(e.to_string().contains("refusing the config file"), "{e}");

        chmod(&path, 0o644);
        wait_for_metric(
            &telemetry,
            r#"switchboard_reloads_total{file="config",result="applied"} 1"#,
        )
        .await;
        assert_eq!(host.config().budget_chars, 2000);
        watcher.abort();
    }
}
