//! One client to one server, outside the host: what `inspect` and
//! `doctor` use to look at a server directly (era, pages, schemas).

use std::sync::Arc;
use std::time::Duration;

use switchboard_client::{Client, ClientError, HttpTransport, StdioConfig, StdioTransport};
use switchboard_host::auth::default_token_store;
use switchboard_host::{ServerConfig, TransportConfig};
use switchboard_oauth::{OAuthConfig, OAuthProvider};

use crate::session::client_info;

/// How to reach a server.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A child process.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<std::path::PathBuf>,
    },
    /// Streamable HTTP (with its fallbacks).
    Http {
        url: String,
        headers: Vec<(String, String)>,
        /// The OAuth client, reading logins from the token store; it never
        /// starts a login (that is `switchboard auth login`).
        auth: Option<OAuthProvider>,
    },
}

impl Target {
    /// The target of a config entry (with its OAuth client, when it uses
    /// OAuth).
    pub(crate) fn of_config(server: &ServerConfig) -> Target {
        match &server.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => Target::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                cwd: cwd.clone(),
            },
            TransportConfig::Http { url, headers } | TransportConfig::Sse { url, headers } => {
                Target::Http {
                    url: url.clone(),
                    headers: headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    auth: switchboard_host::auth::oauth_config(server)
                        .ok()
                        .and_then(provider),
                }
            }
        }
    }

    /// An HTTP target outside the config: OAuth with a login made for the
    /// same URL, unless a header already authorizes.
    pub(crate) fn http(url: &str, headers: Vec<(String, String)>) -> Target {
        let static_auth = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        Target::Http {
            url: url.to_owned(),
            auth: (!static_auth)
                .then(|| OAuthConfig::new("inspected", url))
                .and_then(provider),
            headers,
        }
    }

    /// The OAuth client, if any.
    pub(crate) fn auth(&self) -> Option<&OAuthProvider> {
        match self {
            Target::Http { auth, .. } => auth.as_ref(),
            Target::Stdio { .. } => None,
        }
    }
}

/// A non-interactive OAuth client on the per-user token store.
fn provider(config: OAuthConfig) -> Option<OAuthProvider> {
    let config = match default_token_store() {
        Ok(store) => config.store(store),
        Err(_) => config,
    };
    OAuthProvider::new(config).ok()
}

/// A connected client, and its stdio transport for stderr and exit
/// details.
#[derive(Debug)]
pub(crate) struct Connected {
    pub(crate) client: Client,
    pub(crate) stdio: Option<StdioTransport>,
}

/// Starts (stdio) or reaches (HTTP) the server and probes its era, within
/// `timeout` for each request.
///
/// # Errors
/// [`ClientError`] when the server cannot be started, reached or spoken
/// to.
pub(crate) async fn connect(
    alias: &str,
    target: &Target,
    timeout: Duration,
) -> Result<Connected, ClientError> {
    let (builder, stdio) = match target {
        Target::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cfg = StdioConfig::new(alias, command).args(args);
            for (k, v) in env {
                cfg = cfg.env(k, v);
            }
            if let Some(cwd) = cwd {
                cfg = cfg.cwd(cwd);
            }
            cfg.shutdown_grace = Duration::from_secs(2);
            let transport = StdioTransport::spawn(cfg).await?;
            (Client::builder(alias, transport.clone()), Some(transport))
        }
        Target::Http { url, headers, auth } => {
            let mut b = HttpTransport::builder(alias, url);
            for (k, v) in headers {
                b = b.header(k, v);
            }
            if let Some(auth) = auth {
                b = b.auth(Arc::new(auth.clone()));
            }
            (Client::builder(alias, b.build()?), None)
        }
    };
    let client = builder
        .client_info(client_info())
        .timeout(timeout)
        .probe_timeout(timeout)
        .connect()
        .await?;
    Ok(Connected { client, stdio })
}
