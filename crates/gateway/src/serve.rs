//! The gateway from start to end ([`serve`]), as mini-redis's
//! `server::run(listener, shutdown)`: the host mounted for serving, the
//! gateway built over it, the config, tokens and TLS files watched, the
//! MCP endpoint served on stdin/stdout or Streamable HTTP until the
//! shutdown future completes, then everything stopped in order (the
//! watchers, the server, telemetry flushed, the host's servers).
//!
//! The runners themselves ([`Gateway::serve_stdio`],
//! [`Gateway::serve_http`]) are here too, for a gateway built by hand.

use std::sync::Arc;
use std::time::Duration;

use switchboard_host::{Config, Host, MountOptions};
use switchboard_server::http::{HttpOptions, PlainResponse, PlainRoute};
use switchboard_server::{BuildError, Server};
use tokio::task::JoinHandle;

use crate::{
    AccessFile, ConfigSource, Gateway, GatewayError, GatewayOptions, TlsFiles, TokensSource,
    check_access_file, check_principals, relay_input_handler, watch_config, watch_tls,
    watch_tokens,
};

/// Where [`serve`] listens.
#[derive(Debug)]
pub enum Listener {
    /// This process's stdin and stdout, until stdin ends (stdio never
    /// authenticates).
    Stdio,
    /// Streamable HTTP at `/mcp` (with `/healthz`, `/readyz` and, with
    /// metrics, `/metrics`) on this bound listener.
    Http(tokio::net::TcpListener),
}

/// Told once the gateway is built, just before it serves (e.g. to say
/// where, and how many tools).
pub type OnReady = Box<dyn FnOnce(&Gateway) + Send>;

/// What [`serve`] builds and serves, besides where it listens.
#[non_exhaustive]
pub struct ServeConfig {
    /// The host's config: [`serve`] mounts it, and shuts the host down at
    /// the end.
    pub host: Config,
    /// How the host is mounted. [`serve`] fills in what a gateway needs
    /// when it is not given: the input handler ([`relay_input_handler`],
    /// which lets servers ask questions the gateway relays), the call
    /// observer (the gateway's telemetry), the replica's name (the
    /// gateway's) and the callers' shared limits (the gateway's
    /// [`GatewayOptions::state`]).
    pub mount: MountOptions,
    /// The gateway's options (callers' authentication, the state key,
    /// telemetry, replicas, the drain switch). Its TLS is taken from
    /// [`ServeConfig::tls_files`] when they are given.
    pub gateway: GatewayOptions,
    /// How often the config file (the one `host` was read from) is looked
    /// at; it is reloaded when it changes and at `SIGHUP`. `None`: not
    /// watched.
    pub watch: Option<Duration>,
    /// The file the named tokens of [`GatewayOptions::auth`] were read
    /// from, watched the same way (HTTP only).
    pub tokens_file: Option<TokensSource>,
    /// The certificate and key to serve HTTPS with, loaded at start and
    /// watched (HTTP only).
    pub tls_files: Option<TlsFiles>,
    /// Told once the gateway is built.
    pub on_ready: Option<OnReady>,
}

impl ServeConfig {
    /// A gateway over the host `config` mounts, with `gateway`'s options;
    /// the config file is watched every [`crate::WATCH_POLL`].
    #[must_use]
    pub fn new(host: Config, gateway: GatewayOptions) -> ServeConfig {
        ServeConfig {
            host,
            mount: MountOptions::default(),
            gateway,
            watch: Some(crate::WATCH_POLL),
            tokens_file: None,
            tls_files: None,
            on_ready: None,
        }
    }
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig")
            .field("host", &self.host.origin)
            .field("gateway", &self.gateway)
            .field("watch", &self.watch)
            .field("tokens_file", &self.tokens_file)
            .field("tls_files", &self.tls_files)
            .field("on_ready", &self.on_ready.is_some())
            .finish_non_exhaustive()
    }
}

/// Serves a gateway from start to end: loads the TLS files, mounts the
/// host, builds the gateway, starts the watchers (the config file, the
/// tokens file, the TLS files; `SIGHUP` reloads them all), and serves on
/// `listener` until `shutdown` completes (or, on stdio, stdin ends).
/// Then it stops the watchers and the server, flushes the telemetry and
/// shuts the host's servers down. To drain first, start the drain switch
/// given in [`GatewayOptions::drain`] inside `shutdown` and complete it
/// later: `/readyz` answers 503 meanwhile, and everything is still served.
///
/// # Errors
/// [`GatewayError::FileAccess`] when the config file may be written by
/// other users ([`check_access_file`]), [`GatewayError::Tls`] when the TLS
/// files do not load,
/// [`GatewayError::Mount`] when the host cannot be mounted,
/// [`GatewayError::Build`] when the gateway cannot be built, and
/// [`GatewayError::Serve`] when the runner fails for good.
pub async fn serve(
    listener: Listener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), GatewayError> {
    let ServeConfig {
        host: host_config,
        mut mount,
        mut gateway,
        watch,
        tokens_file,
        tls_files,
        on_ready,
    } = config;
    let http = matches!(listener, Listener::Http(_));
    // The config decides which commands run and what callers may do: one
    // that others may write is refused here as at every reload.
    if let Some(path) = host_config.origin.path() {
        check_access_file(path, AccessFile::Config)?;
    }
    // Made before the mount, which may take a while: a change meanwhile is
    // reloaded once the watch starts.
    let watched = watch.and_then(|poll| {
        host_config.origin.path().map(|path| {
            let mut source = ConfigSource::new(path);
            source.poll = poll;
            source
        })
    });
    let tls = match tls_files.as_ref().filter(|_| http) {
        Some(files) => Some(files.load().map_err(GatewayError::Tls)?),
        None => None,
    };
    if tls.is_some() {
        gateway.tls.clone_from(&tls);
    }
    if mount.input_handler.is_none() {
        mount.input_handler = Some(relay_input_handler(None));
    }
    if mount.observer.is_none() {
        mount.observer = gateway.telemetry.observer();
    }
    if mount.replica.is_none() {
        mount.replica.clone_from(&gateway.replica);
    }
    if mount.leave_out_result_meta.is_none() {
        mount.leave_out_result_meta = Some(crate::identity::downstream_only);
    }
    if mount.shared_limits.is_none() {
        mount.shared_limits = gateway
            .state
            .clone()
            .map(|state| Arc::new(state) as Arc<dyn switchboard_host::SharedLimits>);
    }
    let telemetry = gateway.telemetry.clone();
    let host = Host::mount(host_config, mount)
        .await
        .map_err(GatewayError::Mount)?;
    let files = Files {
        config: watched,
        tokens: tokens_file.filter(|_| http),
        tls: tls.zip(tls_files),
    };
    let served = serve_host(&host, listener, gateway, files, on_ready, shutdown).await;
    telemetry.shutdown().await;
    host.shutdown().await;
    served
}

/// The files [`serve`] watches.
struct Files {
    config: Option<ConfigSource>,
    tokens: Option<TokensSource>,
    tls: Option<(switchboard_server::http::ServerTls, TlsFiles)>,
}

/// The watchers, stopped when dropped.
#[derive(Default)]
struct Watchers(Vec<JoinHandle<()>>);

impl Drop for Watchers {
    fn drop(&mut self) {
        for watcher in &self.0 {
            watcher.abort();
        }
    }
}

/// [`serve`] over a mounted host: the gateway, its watchers, the runner.
async fn serve_host(
    host: &Host,
    listener: Listener,
    options: GatewayOptions,
    files: Files,
    on_ready: Option<OnReady>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), GatewayError> {
    let telemetry = options.telemetry.clone();
    let auth = options.auth.clone();
    let gateway = Gateway::new(host, options)?;
    let mut watchers = Watchers::default();
    if let Some(auth) = &auth {
        // A principals entry no token has: said at start and at every
        // reload of either file.
        check_principals(host, auth);
    }
    if let Some(source) = files.config {
        watchers
            .0
            .push(watch_config(host, source, &telemetry, auth.as_ref()));
    }
    if let (Some(file), Some(auth)) = (files.tokens, &auth) {
        watchers.0.push(watch_tokens(auth, file, &telemetry, host));
    }
    if let Some((tls, files)) = files.tls {
        watchers.0.push(watch_tls(&tls, files, &telemetry));
    }
    if let Some(ready) = on_ready {
        ready(&gateway);
    }
    let served = match listener {
        Listener::Stdio => tokio::select! {
            served = gateway.serve_stdio() => served,
            () = shutdown => Ok(()),
        },
        Listener::Http(listener) => gateway.serve_http(listener, shutdown).await,
    };
    drop(watchers);
    served
}

impl Gateway {
    /// Serves the gateway on this process's stdin and stdout until stdin
    /// ends.
    ///
    /// # Errors
    /// [`GatewayError::Serve`] when stdin cannot be read.
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        switchboard_server::stdio::serve(self.server.clone()).await?;
        Ok(())
    }

    /// Serves the gateway over Streamable HTTP at `/mcp` on `listener` until
    /// `shutdown` completes, with `/healthz` and `/readyz`, and requiring
    /// the tokens of [`GatewayOptions::auth`] when set.
    ///
    /// # Errors
    /// [`GatewayError::Serve`] when the listener fails for good.
    pub async fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        let options = self.connections.apply(HttpOptions::new());
        let mut options = crate::health::routes(
            options,
            &self.host,
            &self.drain,
            self.state.as_ref(),
            self.membership.as_ref().map(|(m, _)| m),
        );
        if let Some(auth) = &self.auth {
            options = options.auth(auth.validator(&self.telemetry), auth.metadata().clone());
        }
        if let Some(every) = self.recheck_streams {
            options = options.recheck_streams(every);
        }
        if let Some(tls) = &self.tls {
            options = options.tls(tls.clone());
        }
        // https:// peers are verified as every server the gateway reaches:
        // the platform's roots (and `SSL_CERT_FILE`) and Mozilla's.
        match switchboard_client::default_tls() {
            Ok(config) => options = options.peer_tls(config),
            Err(e) => tracing::warn!("https:// peers cannot be reached: {e}"),
        }
        if let Some(console) = &self.console {
            // The approval links point here: the resource URL's origin
            // when one is set (the address callers know), else the bound
            // address.
            let scheme = if self.tls.is_some() { "https" } else { "http" };
            let origin = self
                .auth
                .as_ref()
                .and_then(|a| crate::console::origin_of(&a.metadata().resource))
                .or_else(|| {
                    listener
                        .local_addr()
                        .ok()
                        .map(|addr| format!("{scheme}://{addr}"))
                });
            if let Some(origin) = origin {
                console.serving_at(origin);
            }
            options = options.app_route(crate::console::PREFIX, console.route());
        }
        if self.telemetry.has_metrics() {
            let host = self.host.clone();
            let telemetry = self.telemetry.clone();
            options = with_metrics(options, move || {
                telemetry.render_metrics(&host).unwrap_or_default()
            });
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let listening = listener
            .local_addr()
            .ok()
            .map(|addr| format!("{scheme}://{addr}/mcp"));
        let beating = match &self.membership {
            Some((membership, advertised)) => {
                let Some(url) = advertised.clone().or(listening) else {
                    return Err(GatewayError::Build(BuildError::Config(
                        "the listening address is unknown: give --advertise-url".into(),
                    )));
                };
                membership.set_url(url.clone());
                // Registered before the first request, so a task this
                // replica hands on can be found by the others at once.
                match membership.beat().await {
                    Ok(()) => {
                        tracing::info!(%url, "registered in the shared store's registry of replicas")
                    }
                    Err(why) => tracing::warn!("not yet registered among the replicas: {why}"),
                }
                Some((Arc::clone(membership), membership.run()))
            }
            None => None,
        };
        let served = http(&self.server, listener, options, shutdown).await;
        if let Some((membership, beat)) = beating {
            beat.abort();
            membership.leave().await;
        }
        served
    }
}

/// Serves Streamable HTTP on `listener` with `options` until `shutdown`.
async fn http(
    server: &Server,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), GatewayError> {
    switchboard_server::http::serve(server.clone(), listener, options, shutdown).await?;
    Ok(())
}

/// `options` with `/metrics` answered by `render` (Prometheus text).
fn with_metrics(
    options: HttpOptions,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> HttpOptions {
    let render = Arc::new(render);
    let route: PlainRoute = Arc::new(move || {
        let render = render.clone();
        Box::pin(async move { PlainResponse::new(200, crate::metrics::CONTENT_TYPE, render()) })
    });
    options.plain_route("/metrics", route)
}
