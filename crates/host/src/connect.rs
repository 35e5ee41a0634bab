//! Connecting one configured server: spawn it (stdio) or build its HTTP
//! transport with the entry's headers and OAuth client, then probe its era.
//! The host's mounts and the CLI's direct looks at a server (`doctor`,
//! `inspect`) share it, so a server is reached the same way everywhere.

use std::sync::Arc;
use std::time::Duration;

use switchboard_client::transport::http::HttpTransport;
use switchboard_client::{
    Client, ClientBuilder, ClientError, InputHandler, StdioConfig, StdioTransport, TransportError,
};
use switchboard_oauth::{OAuthError, OAuthProvider, TokenStore, UserAgent};
use switchboard_wire::Implementation;

use crate::config::{ServerConfig, TransportConfig};
use crate::secret::SecretError;
use crate::{HostError, auth};

/// What a connection is made with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// Who the host is to the server (`clientInfo`); the client's default
    /// when `None`.
    pub client_info: Option<Implementation>,
    /// Answers the server's input requests; none when `None`.
    pub input: Option<Arc<dyn InputHandler>>,
    /// Time a stdio server gets after stdin closes (and again after
    /// `SIGTERM`) before it is killed.
    pub shutdown_grace: Duration,
    /// Where OAuth logins are read from (and refreshed tokens saved);
    /// `None`: in memory only.
    pub token_store: Option<TokenStore>,
    /// Who can log in interactively; `None`: no one (the server then
    /// needs `switchboard auth login`).
    pub user_agent: Option<Arc<dyn UserAgent>>,
    /// Connect with the OAuth login kept for this gateway principal
    /// (`switchboard auth login ALIAS --principal NAME`) instead of the
    /// server's own; no one is asked to log in interactively then.
    pub principal: Option<String>,
    /// Keys of tool results' `_meta` the client leaves out
    /// ([`crate::MountOptions::leave_out_result_meta`]).
    pub leave_out_result_meta: Option<fn(&str) -> bool>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            client_info: None,
            input: None,
            shutdown_grace: Duration::from_secs(2),
            token_store: None,
            user_agent: None,
            principal: None,
            leave_out_result_meta: None,
        }
    }
}

/// A configured server whose transport is up (process spawned, HTTP
/// transport built), before the era probe.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The client to connect, with the server's alias and transport (and
    /// the input handler and client info of the options).
    pub builder: ClientBuilder,
    /// The stdio transport, for supervision (stderr, junk lines, exit).
    pub stdio: Option<StdioTransport>,
    /// The OAuth client of an HTTP server that uses one.
    pub auth: Option<OAuthProvider>,
}

/// Why a configured server could not be connected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The process could not be spawned, or the HTTP transport built.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server's OAuth client could not be set up.
    #[error("its OAuth client cannot be set up: {0}")]
    OAuth(#[source] OAuthError),
    /// A secret reference of its entry could not be resolved (the message
    /// names the reference, never a value).
    #[error("{0}")]
    Secret(#[source] SecretError),
    /// The transport is up, but the era probe failed.
    #[error("{error}")]
    Probe {
        /// Why.
        #[source]
        error: ClientError,
        /// The OAuth client, when the server uses one (to tell a missing
        /// login from a refusal).
        auth: Option<OAuthProvider>,
    },
}

impl ConnectError {
    /// Whether the server refused authorization (401/403, or authorizing
    /// failed).
    pub fn is_auth_failure(&self) -> bool {
        matches!(self, ConnectError::Probe { error, .. } if error.is_auth_failure())
    }

    /// The server's OAuth client, when the failure came after it was set
    /// up.
    pub fn auth(&self) -> Option<&OAuthProvider> {
        match self {
            ConnectError::Probe { auth, .. } => auth.as_ref(),
            _ => None,
        }
    }
}

/// The stdio settings of a stdio entry whose secrets are resolved
/// ([`ServerConfig::resolve_secrets`]): command, arguments, environment
/// policy and variables, working directory, sandbox. `None` for a remote
/// server. `doctor` plans with it, the host spawns with it.
pub fn stdio_config(server: &ServerConfig) -> Option<StdioConfig> {
    let TransportConfig::Stdio {
        command,
        args,
        env,
        cwd,
    } = &server.transport
    else {
        return None;
    };
    let mut cfg = StdioConfig::new(server.alias.as_str(), command)
        .args(args)
        .environment(server.environment())
        .sandbox(server.sandbox.clone());
    for (k, v) in env {
        // A reference left unresolved names its source, never a value.
        let value = v.plain().map(str::to_owned).unwrap_or_else(|| v.source());
        cfg = cfg.env(k, value);
    }
    if let Some(cwd) = cwd {
        cfg = cfg.cwd(cwd);
    }
    Some(cfg)
}

/// Opens a configured server (see [`connect`]), its error unwrapped (the host sorts
/// the causes itself).
// Failing to connect is the cold path: the error carries the client's
// errors as they are.
#[allow(clippy::result_large_err)]
pub(crate) async fn try_open(
    server: &ServerConfig,
    options: &ConnectOptions,
) -> Result<Opened, ConnectError> {
    // Secret references are read now, at start, and only kept wrapped.
    let server = &server
        .resolve_secrets()
        .await
        .map_err(ConnectError::Secret)?;
    let alias = server.alias.as_str();
    let (builder, stdio, auth) = match &server.transport {
        TransportConfig::Stdio { .. } => {
            let cfg = stdio_config(server).unwrap_or_else(|| StdioConfig::new(alias, ""));
            let mut cfg = cfg;
            cfg.shutdown_grace = options.shutdown_grace;
            let transport = StdioTransport::spawn(cfg).await?;
            (
                Client::builder(alias, transport.clone()),
                Some(transport),
                None,
            )
        }
        TransportConfig::Http { url, headers } | TransportConfig::Sse { url, headers } => {
            let mut builder = HttpTransport::builder(alias, url);
            for (k, v) in headers {
                if let Some(v) = v.plain() {
                    builder = builder.header(k, v);
                }
            }
            let auth = oauth(server, options)?;
            if let Some(auth) = &auth {
                builder = builder.auth(Arc::new(auth.clone()));
            }
            (Client::builder(alias, builder.build()?), None, auth)
        }
    };
    let mut builder = builder;
    if let Some(info) = &options.client_info {
        builder = builder.client_info(info.clone());
    }
    if let Some(handler) = &options.input {
        builder = builder.input_handler(handler.clone());
    }
    if let Some(leave_out) = options.leave_out_result_meta {
        builder = builder.leave_out_result_meta(leave_out);
    }
    Ok(Opened {
        builder,
        stdio,
        auth,
    })
}

/// A configured server, connected: its era probed within `timeout`, which
/// is also every request's default deadline.
#[derive(Debug)]
pub struct Connection {
    /// The client.
    pub client: Client,
    /// The stdio transport, for supervision (stderr, junk lines, exit).
    pub stdio: Option<StdioTransport>,
    /// The OAuth client of an HTTP server that uses one.
    pub auth: Option<OAuthProvider>,
}

/// Opens a configured server (spawns a stdio server, or builds the HTTP
/// transport with the entry's headers and, when it uses OAuth, a fresh
/// OAuth client on the options' token store, so a login made meanwhile,
/// e.g. by `switchboard auth login`, is read), then runs the era probe
/// within `timeout` (also the default deadline of every request).
///
/// # Errors
/// [`HostError::Connect`] when the server cannot be opened, reached or
/// spoken to.
pub async fn connect(
    server: &ServerConfig,
    options: &ConnectOptions,
    timeout: Duration,
) -> Result<Connection, HostError> {
    let opened = try_open(server, options).await?;
    match opened
        .builder
        .timeout(timeout)
        .probe_timeout(timeout)
        .connect()
        .await
    {
        Ok(client) => Ok(Connection {
            client,
            stdio: opened.stdio,
            auth: opened.auth,
        }),
        Err(error) => Err(ConnectError::Probe {
            error,
            auth: opened.auth,
        }
        .into()),
    }
}

/// A fresh OAuth client for one connection attempt, or `None` when the
/// server does not use OAuth.
// Failing to connect is the cold path: the errors carry the client's
// errors as they are, as the client crate does.
#[allow(clippy::result_large_err)]
fn oauth(
    server: &ServerConfig,
    options: &ConnectOptions,
) -> Result<Option<OAuthProvider>, ConnectError> {
    let Ok(mut config) = auth::oauth_config(server) else {
        return Ok(None);
    };
    if let Some(store) = &options.token_store {
        config = config.store(store.clone());
    }
    match &options.principal {
        Some(name) => config = config.principal(name),
        None => {
            if let Some(agent) = &options.user_agent {
                config = config.user_agent(agent.clone());
            }
        }
    }
    OAuthProvider::new(config)
        .map(Some)
        .map_err(ConnectError::OAuth)
}
