//! OAuth for remote servers, as the host uses it: which servers authorize
//! with OAuth, the client settings from their `oauth` block, and where
//! logins are kept.
//!
//! The host builds every OAuth client **without** a user agent unless its
//! [`MountOptions`](crate::MountOptions) give one: a server that needs a
//! person to log in is reported as [`ServerStatus::NeedsLogin`] with the
//! outage reason [`needs_login_reason`], and `switchboard auth login ALIAS`
//! (which uses [`oauth_config`] too) does the login. Tokens live in the
//! per-user [`TokenStore`] ([`default_token_store`]).
//!
//! A server whose `headers` carry an `Authorization` header never runs
//! OAuth: the explicit header wins (and an `oauth` block beside one is
//! refused).
//!
//! [`ServerStatus::NeedsLogin`]: crate::ServerStatus::NeedsLogin

use std::fmt;
use std::path::PathBuf;

use switchboard_oauth::{
    AssertionSource, EnterpriseGrant, Grant, IdentityProvider, JwtBearerGrant, OAuthConfig,
    OAuthError, PreRegisteredClient,
};

use crate::config::{AssertionConfig, IdentityProviderConfig, OAuthSetting, ServerConfig};

pub use switchboard_oauth::TokenStore;
pub(crate) use switchboard_oauth::UserAgent;

/// Environment variable naming the folder of Switchboard's per-user state
/// (the token store is `oauth.json` in it); it wins over `XDG_STATE_HOME`.
pub(crate) const STATE_DIR_ENV: &str = "SWITCHBOARD_STATE_DIR";

/// The name Switchboard registers under at authorization servers.
const CLIENT_NAME: &str = "Switchboard";

/// The per-user token store: `$SWITCHBOARD_STATE_DIR/oauth.json`, else
/// `$XDG_STATE_HOME/switchboard/oauth.json`, else
/// `~/.local/state/switchboard/oauth.json`.
///
/// # Errors
/// [`OAuthError::Config`] when none of these variables is set.
pub fn default_token_store() -> Result<TokenStore, OAuthError> {
    match std::env::var_os(STATE_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => Ok(TokenStore::at(PathBuf::from(dir).join("oauth.json"))),
        None => TokenStore::default_location(),
    }
}

/// The command that logs in to `alias`.
pub fn login_command(alias: &str) -> String {
    format!("switchboard auth login {alias}")
}

/// The command that logs in to `alias` on behalf of the gateway's
/// principal `principal` (the login `"identity": "per-principal"` uses for
/// that principal's calls).
pub fn principal_login_command(alias: &str, principal: &str) -> String {
    format!("switchboard auth login {alias} --principal {principal}")
}

/// The outage reason of a server that needs a person to log in.
pub fn needs_login_reason(alias: &str) -> String {
    format!("needs login: run `{}`", login_command(alias))
}

/// The command that logs in for `idp`, an `identityProviders` entry.
pub(crate) fn idp_login_command(idp: &str) -> String {
    format!("switchboard auth login --idp {idp}")
}

/// The command that makes `server` usable: the login at its identity
/// provider when its `oauth` names one, else its own login.
pub(crate) fn server_login_command(server: &ServerConfig) -> String {
    match server_idp(server) {
        Some(idp) => idp_login_command(idp),
        None => login_command(&server.alias),
    }
}

/// The outage reason of `server` when a person has to log in
/// ([`server_login_command`]).
pub(crate) fn server_needs_login_reason(server: &ServerConfig) -> String {
    format!("needs login: run `{}`", server_login_command(server))
}

/// The `identityProviders` entry `server` signs in through, if any.
fn server_idp(server: &ServerConfig) -> Option<&str> {
    match &server.oauth {
        OAuthSetting::Client(client) => client.idp.as_ref().map(|i| i.name.as_str()),
        _ => None,
    }
}

/// The OAuth client settings of the login at identity provider `name`
/// (`switchboard auth login --idp NAME`), without a token store or user
/// agent: callers add those, then call
/// [`OAuthProvider::login_at_identity_provider`](switchboard_oauth::OAuthProvider::login_at_identity_provider).
pub fn idp_login_config(name: &str, idp: &IdentityProviderConfig) -> OAuthConfig {
    OAuthConfig::new(switchboard_oauth::idp_login_key(name), &idp.issuer)
        .client_name(CLIENT_NAME)
        .pre_registered(identity_provider(name, idp).client)
}

/// An identity provider as the OAuth client uses it: the ID token is the
/// one `switchboard auth login --idp NAME` kept in the token store.
pub(crate) fn identity_provider(name: &str, idp: &IdentityProviderConfig) -> IdentityProvider {
    let mut client = PreRegisteredClient::new(&idp.client_id).issuer(&idp.issuer);
    // Resolved beforehand (IdentityProviderConfig::resolve_secrets); an
    // unresolved reference gives no secret.
    if let Some(secret) = idp.client_secret.as_ref().and_then(|s| s.plain()) {
        client = client.secret(secret);
    }
    IdentityProvider {
        name: name.to_owned(),
        issuer: idp.issuer.clone(),
        token_endpoint: None,
        client,
        id_token: AssertionSource::IdpLogin(name.to_owned()),
    }
}

/// Why a server does not use OAuth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoOAuth {
    /// It is a stdio server.
    Stdio,
    /// Its entry says `"oauth": false`.
    Disabled,
    /// Its `headers` carry an `Authorization` header, which wins.
    StaticHeader,
}

impl fmt::Display for NoOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NoOAuth::Stdio => "it is a stdio server; OAuth is for remote (http, sse) servers",
            NoOAuth::Disabled => "its entry turns OAuth off (\"oauth\": false)",
            NoOAuth::StaticHeader => {
                "its entry sends a static Authorization header, which wins over OAuth"
            }
        })
    }
}

/// The OAuth client settings of `server` (its `oauth` block), without a
/// token store or user agent: callers add those.
///
/// # Errors
/// [`NoOAuth`] when the server does not authorize with OAuth.
pub fn oauth_config(server: &ServerConfig) -> Result<OAuthConfig, NoOAuth> {
    let Some(url) = server.transport.url() else {
        return Err(NoOAuth::Stdio);
    };
    if server.oauth == OAuthSetting::Off {
        return Err(NoOAuth::Disabled);
    }
    if server.transport.has_authorization_header() {
        return Err(NoOAuth::StaticHeader);
    }
    let mut config = OAuthConfig::new(&server.alias, url).client_name(CLIENT_NAME);
    if let OAuthSetting::Client(client) = &server.oauth {
        if let Some(id) = &client.client_id {
            let mut pre = PreRegisteredClient::new(id);
            // Resolved beforehand (ServerConfig::resolve_secrets).
            if let Some(secret) = client.client_secret.as_ref().and_then(|s| s.plain()) {
                pre = pre.secret(secret);
            }
            if let Some(issuer) = &client.issuer {
                pre = pre.issuer(issuer);
            }
            // A workload: its assertion instead of a browser login.
            if let Some(assertion) = &client.assertion {
                let assertion = match assertion {
                    AssertionConfig::File(path) => AssertionSource::File(path.into()),
                    AssertionConfig::Command(argv) => AssertionSource::Command(argv.clone()),
                };
                config = config.grant(Grant::JwtBearer(JwtBearerGrant {
                    client: pre.clone(),
                    assertion,
                }));
            }
            // Enterprise-managed: the login at the identity provider.
            if let Some(idp) = &client.idp {
                config = config.grant(Grant::EnterpriseManaged(EnterpriseGrant {
                    idp: identity_provider(&idp.name, &idp.provider),
                    client: pre.clone(),
                }));
            }
            config = config.pre_registered(pre);
        }
        config = config.dpop(client.dpop.unwrap_or(true));
        if let Some(url) = &client.client_metadata_url {
            config = config.client_metadata_url(url);
        }
        if !client.scopes.is_empty() {
            config = config.scopes(client.scopes.iter().cloned());
        }
    }
    Ok(config)
}
