//! One client to one server, outside the host: what `inspect`, `doctor`
//! and `selftest` use to look at a server directly (era, pages, schemas).
//! A server named on the command line becomes a config entry, and every
//! entry is reached through the host's [`switchboard_host::connect`], so
//! it is reached exactly as a mount would.

use std::time::Duration;

use switchboard_host::HostError;
use switchboard_host::default_token_store;
use switchboard_host::{ConnectOptions, Connection};
use switchboard_host::{OAuthSetting, ServerConfig, TransportConfig};

use crate::session::client_info;

/// An HTTP server outside the config: OAuth with a login made for the
/// same URL (under the alias `inspected`), unless a header already
/// authorizes.
pub(crate) fn http_server(alias: &str, url: &str, headers: Vec<(String, String)>) -> ServerConfig {
    ServerConfig::new(
        alias,
        TransportConfig::Http {
            url: url.to_owned(),
            headers: headers.into_iter().map(|(k, v)| (k, v.into())).collect(),
        },
    )
}

/// An HTTP server reached without OAuth (the built-in demo's tickets).
pub(crate) fn http_server_without_oauth(alias: &str, url: &str) -> ServerConfig {
    let mut server = http_server(alias, url, Vec::new());
    server.oauth = OAuthSetting::Off;
    server
}

/// Starts (stdio) or reaches (HTTP) the server and probes its era, within
/// `timeout` for each request. OAuth logins are read from the per-user
/// token store; no login is ever started (that is `switchboard auth
/// login`).
///
/// # Errors
/// [`HostError::Connect`] when the server cannot be started, reached or spoken
/// to.
pub(crate) async fn connect(
    server: &ServerConfig,
    timeout: Duration,
) -> Result<Connection, HostError> {
    let mut options = ConnectOptions::default();
    options.client_info = Some(client_info());
    options.token_store = default_token_store().ok();
    switchboard_host::connect(server, &options, timeout).await
}
