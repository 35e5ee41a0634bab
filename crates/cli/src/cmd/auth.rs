//! `switchboard auth login ALIAS | status [ALIAS] | logout ALIAS`: OAuth
//! logins of remote servers, kept in the per-user token store; with
//! `--principal NAME`, the login kept for a gateway principal at that
//! server (what `"identity": "per-principal"` uses for NAME's calls).
//!
//! `login` shows the authorization URL (and opens a browser when asked to),
//! listens on 127.0.0.1 for the redirect, and reports the authorization
//! server, scopes and expiry; tokens are never printed.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use switchboard_host::{Config, OAuthSetting, ServerConfig};
use switchboard_host::{
    NoOAuth, default_token_store, idp_login_config, login_command, oauth_config,
    principal_login_command,
};
use switchboard_oauth::{
    IdentitySource, LoginReport, LoopbackUserAgent, OAuthConfig, OAuthError, OAuthProvider,
    StoredLogin, TokenStore, idp_login_key,
};

use crate::exit::{Code, Failure, of_oauth_error};
use crate::out;
use crate::settings::Settings;
use switchboard_wire::shared::unix_secs as now;

/// `auth login ALIAS [--principal NAME]`.
///
/// # Errors
/// A [`Failure`]: 1 for an alias that is not configured or does not use
/// OAuth, 3 when authorizing fails or is cancelled, 4 when the server or
/// its authorization server cannot be reached.
pub(crate) async fn login(
    settings: &Settings,
    alias: &str,
    principal: Option<&str>,
    open_browser: bool,
    wait: Duration,
) -> anyhow::Result<()> {
    let server = &resolved_server(settings, alias).await?;
    let store = store()?;
    let url = server.transport.url().unwrap_or_default().to_owned();
    let target = target_of(alias, principal);
    let mut agent = loopback_agent(target.clone(), open_browser, wait);
    if let OAuthSetting::Client(client) = &server.oauth {
        if let Some(port) = client.callback_port {
            agent = agent.port(port);
        }
    }
    let provider = provider(
        for_principal(
            oauth_config(server).map_err(|why| not_oauth(alias, why))?,
            principal,
        )?
        .store(store)
        .user_agent(Arc::new(agent)),
    )?;
    out::note(format!("Logging in to {target} ({url})…"));
    let report = until_done(&format!("login to {target}"), provider.login()).await?;
    let mut view = LoginView::logged_in(Some(alias), url, report, provider.method());
    view.principal = principal.map(str::to_owned);
    show_login(settings, &view, &format!("Logged in to {target}."))?;
    Ok(())
}

/// `ALIAS`, or `ALIAS as principal NAME`: whose login a command acts on.
fn target_of(alias: &str, principal: Option<&str>) -> String {
    match principal {
        Some(name) => format!("{alias} as principal {name}"),
        None => alias.to_owned(),
    }
}

/// Runs `login` until it ends or Ctrl-C cancels it; `what` ("login to
/// ALIAS") names it in the error.
async fn until_done(
    what: &str,
    login: impl Future<Output = Result<LoginReport, OAuthError>>,
) -> anyhow::Result<LoginReport> {
    tokio::select! {
        r = login => Ok(r.map_err(|e| Failure::new(of_oauth_error(&e), format!("{what} failed: {e}")))?),
        () = crate::shutdown_signal() => Err(Failure::new(Code::Auth, format!("{what} cancelled")).into()),
    }
}

/// A login just made: as JSON, or `done` and its details.
fn show_login(settings: &Settings, view: &LoginView, done: &str) -> anyhow::Result<()> {
    if settings.json {
        out::json(view)?;
    } else {
        out::line(done)?;
        for line in details(view) {
            out::line(format!("  {line}"))?;
        }
    }
    Ok(())
}

/// The loopback user agent of a login to `target`: prints the URL and
/// opens a browser where one can be.
fn loopback_agent(target: String, open_browser: bool, wait: Duration) -> LoopbackUserAgent {
    let open_browser = open_browser && browser_available();
    LoopbackUserAgent::new()
        .open_browser(open_browser)
        .timeout(wait)
        .on_url(move |url| {
            out::note(format!(
                "Open this URL in a browser to log in to {target}{}:\n\n  {url}\n\nWaiting up to {} s for the authorization server to redirect back to this computer (Ctrl-C to cancel)…",
                if open_browser {
                    " (a browser is being opened)"
                } else {
                    ""
                },
                wait.as_secs()
            ));
        })
}

/// `auth login --idp NAME`: an OpenID Connect login at an enterprise
/// identity provider; its ID token serves every server whose `oauth`
/// names it (the enterprise-managed grant).
///
/// # Errors
/// A [`Failure`]: 1 for a name the config does not define, 3 when the
/// login fails or is cancelled, 4 when the identity provider cannot be
/// reached.
pub(crate) async fn login_idp(
    settings: &Settings,
    name: &str,
    open_browser: bool,
    wait: Duration,
) -> anyhow::Result<()> {
    let config = settings.load_config()?.config;
    let Some(idp) = config.identity_providers.get(name) else {
        let known: Vec<&str> = config
            .identity_providers
            .keys()
            .map(String::as_str)
            .collect();
        return Err(Failure::usage(if known.is_empty() {
            format!(
                "{name:?} is not an identity provider: the config has no \"identityProviders\" section"
            )
        } else {
            format!(
                "{name:?} is not an identity provider in the config; known: {}",
                known.join(", ")
            )
        })
        .into());
    };
    let idp = &idp
        .resolve_secrets()
        .await
        .map_err(|e| Failure::usage(format!("identity provider {name}: {e}")))?;
    let agent = loopback_agent(format!("identity provider {name}"), open_browser, wait);
    let provider = provider(
        idp_login_config(name, idp)
            .store(store()?)
            .user_agent(Arc::new(agent)),
    )?;
    out::note(format!(
        "Logging in at identity provider {name} ({})…",
        idp.issuer
    ));
    let report = until_done(
        &format!("login at identity provider {name}"),
        provider.login_at_identity_provider(name, &idp.scopes),
    )
    .await?;
    let servers: Vec<&str> = config
        .servers
        .iter()
        .filter(|s| {
            matches!(&s.oauth, OAuthSetting::Client(c) if c.idp.as_ref().is_some_and(|i| i.name == name))
        })
        .map(|s| s.alias.as_str())
        .collect();
    let view = LoginView::logged_in(
        None,
        idp_login_key(name),
        report,
        "OpenID Connect login (ID token for the enterprise-managed grant)".into(),
    );
    show_login(
        settings,
        &view,
        &format!("Logged in at identity provider {name}."),
    )?;
    if !settings.json && !servers.is_empty() {
        out::line(format!(
            "  servers signing in through it: {}",
            servers.join(", ")
        ))?;
    }
    Ok(())
}

/// `auth status [ALIAS [--principal NAME]]`.
///
/// # Errors
/// A [`Failure`]: 1 for a bad config or alias, or an unreadable store; 3
/// when ALIAS is given and has no login (for NAME, with `--principal`).
pub(crate) async fn status(
    settings: &Settings,
    alias: Option<&str>,
    principal: Option<&str>,
) -> anyhow::Result<()> {
    let config = settings.load_config()?.config;
    let servers: Vec<&ServerConfig> = match alias {
        Some(a) => {
            let server = oauth_server(&config, a)?;
            oauth_config(server).map_err(|why| not_oauth(a, why))?;
            vec![server]
        }
        None => config
            .servers
            .iter()
            .filter(|s| s.transport.url().is_some())
            .collect(),
    };
    let store = store()?;
    let mut views = Vec::new();
    let mut seen = Vec::new();
    for server in servers {
        let url = server.transport.url().unwrap_or_default().to_owned();
        let mut view = LoginView::logged_out(Some(&server.alias), url);
        view.principal = principal.map(str::to_owned);
        match oauth_config(server) {
            Err(NoOAuth::StaticHeader) => view.oauth = "static_header",
            Err(_) => view.oauth = "off",
            Ok(oauth) => {
                let oauth = provider(for_principal(oauth, principal)?.store(store.clone()))?;
                let login = oauth
                    .status()
                    .await
                    .map_err(|e| Failure::usage(e.to_string()))?;
                view.method = Some(oauth.method());
                if let Some(login) = login {
                    seen.push(login.server.clone());
                    view.fill(login);
                }
            }
        }
        views.push(view);
    }
    if alias.is_none() {
        // Logins at the configured identity providers (`auth login --idp`),
        // shown as `idp:NAME`, logged in or not.
        let logins = store.logins().map_err(|e| Failure::usage(e.to_string()))?;
        for name in config.identity_providers.keys() {
            let key = idp_login_key(name);
            let mut view = LoginView::logged_out(None, key.clone());
            view.method = Some(format!(
                "identity provider: `switchboard auth login --idp {name}`"
            ));
            if let Some(login) = logins.iter().find(|l| l.server == key) {
                view.fill(login.clone());
            }
            seen.push(key);
            views.push(view);
        }
        // Logins kept for principals (`auth login ALIAS --principal
        // NAME`), under the server they were made at, and for servers the
        // config no longer names.
        let others = store.logins().map_err(|e| Failure::usage(e.to_string()))?;
        for login in others.into_iter().filter(|l| !seen.contains(&l.server)) {
            let mut view = LoginView::logged_out(None, login.server.clone());
            if let Some((url, name)) = login.server.split_once("#principal=") {
                view.alias = config
                    .servers
                    .iter()
                    .find(|s| s.transport.url().is_some_and(|u| same_server(u, url)))
                    .map(|s| s.alias.clone());
                view.url = url.to_owned();
                view.principal = Some(name.to_owned());
            }
            view.fill(login);
            views.push(view);
        }
    }
    if settings.json {
        out::json(&views)?;
    } else {
        out::line(format!("token store: {}", store.path().display()))?;
        for line in human(&views) {
            out::line(line)?;
        }
    }
    match (alias, principal) {
        (Some(a), Some(p)) if !views.iter().any(|v| v.logged_in) => Err(Failure::new(
            Code::Auth,
            format!(
                "{a} has no login for principal {p}: run `{}`",
                principal_login_command(a, p)
            ),
        )
        .into()),
        (Some(a), None) if !views.iter().any(|v| v.logged_in) => Err(Failure::new(
            Code::Auth,
            format!("{a} is not logged in: run `{}`", login_command(a)),
        )
        .into()),
        _ => Ok(()),
    }
}

/// Whether the configured URL `configured` and the canonical URL of a
/// stored login name the same server.
fn same_server(configured: &str, canonical: &str) -> bool {
    configured.trim_end_matches('/') == canonical.trim_end_matches('/')
}

/// `oauth` made the login of `principal` (kept apart from the server's
/// own), when one is named.
fn for_principal(oauth: OAuthConfig, principal: Option<&str>) -> Result<OAuthConfig, Failure> {
    let Some(name) = principal else {
        return Ok(oauth);
    };
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains('#') {
        return Err(Failure::usage(format!(
            "--principal {name:?}: a principal's name is one word, as the gateway's callers are named"
        )));
    }
    Ok(oauth.principal(name))
}

/// `auth logout ALIAS [--principal NAME]`.
///
/// # Errors
/// A [`Failure`]: 1 for an alias that does not use OAuth or a store that
/// cannot be written.
pub(crate) async fn logout(
    settings: &Settings,
    alias: &str,
    principal: Option<&str>,
) -> anyhow::Result<()> {
    let server = &resolved_server(settings, alias).await?;
    let oauth = oauth_config(server).map_err(|why| not_oauth(alias, why))?;
    let had = provider(for_principal(oauth, principal)?.store(store()?))?
        .logout()
        .await
        .map_err(|e| Failure::new(of_oauth_error(&e), e.to_string()))?;
    let target = target_of(alias, principal);
    if settings.json {
        out::json(&serde_json::json!({"alias": alias, "principal": principal, "loggedOut": had}))?;
    } else if had {
        out::line(format!(
            "Logged out of {target}: its tokens are forgotten (and revoked where the authorization server offers revocation)."
        ))?;
    } else {
        out::line(format!("{target} had no login."))?;
    }
    Ok(())
}

/// Environment variable that keeps `auth login` from opening a browser
/// (any non-empty value): for tests, scripts and remote shells. The URL is
/// printed either way.
pub(crate) const NO_BROWSER_ENV: &str = "SWITCHBOARD_NO_BROWSER";

/// Whether a browser can be opened here: not when [`NO_BROWSER_ENV`] is
/// set, and on systems using `xdg-open` only within a graphical session
/// (`DISPLAY` or `WAYLAND_DISPLAY`; an SSH shell has neither) unless
/// `$BROWSER` names one.
pub(crate) fn browser_available() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set(NO_BROWSER_ENV) {
        return false;
    }
    // `$BROWSER` names a program to run, graphical session or not.
    set("BROWSER")
        || cfg!(any(target_os = "macos", windows))
        || set("DISPLAY")
        || set("WAYLAND_DISPLAY")
}

/// "expires in 59 min", "expired 3 min ago", with a note on the refresh
/// token.
pub(crate) fn expiry_words(expires_at: Option<u64>, has_refresh_token: bool) -> String {
    let refresh = if has_refresh_token {
        "; a refresh token is held"
    } else {
        ""
    };
    let Some(at) = expires_at else {
        return format!("no expiry given{refresh}");
    };
    let now = now();
    if at > now {
        format!("expires in {}{refresh}", span(at - now))
    } else {
        format!("expired {} ago{refresh}", span(now - at))
    }
}

/// One server's login, as `auth status --json` and `auth login --json`
/// print it: never a token or secret.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct LoginView {
    /// The configured alias (`null` for a stored login no entry names).
    alias: Option<String>,
    /// The gateway principal the login was made for (`auth login ALIAS
    /// --principal NAME`); absent for the server's own login.
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    /// The server's URL (for a stored login, its canonical form).
    url: String,
    /// `on`, `off` (`"oauth": false`) or `static_header`.
    oauth: &'static str,
    logged_in: bool,
    issuer: Option<String>,
    client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_source: Option<IdentitySource>,
    scopes: Vec<String>,
    /// Seconds since the epoch.
    expires_at: Option<u64>,
    expired: Option<bool>,
    has_refresh_token: bool,
    /// How tokens are obtained and presented (e.g. "authorization code,
    /// DPoP-bound", "JWT bearer, bearer"), for configured servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<String>,
}

impl LoginView {
    fn logged_out(alias: Option<&str>, url: String) -> LoginView {
        LoginView {
            alias: alias.map(str::to_owned),
            principal: None,
            url,
            oauth: "on",
            logged_in: false,
            issuer: None,
            client_id: None,
            client_source: None,
            scopes: Vec::new(),
            expires_at: None,
            expired: None,
            has_refresh_token: false,
            method: None,
        }
    }

    /// The login `report` just made, at `url`, obtained by `method`.
    fn logged_in(
        alias: Option<&str>,
        url: String,
        report: LoginReport,
        method: String,
    ) -> LoginView {
        LoginView {
            logged_in: true,
            issuer: Some(report.issuer),
            client_id: Some(report.client_id),
            client_source: Some(report.client_source),
            scopes: report.scopes,
            expires_at: report.expires_at,
            expired: report.expires_at.map(|at| at <= now()),
            has_refresh_token: report.has_refresh_token,
            method: Some(method),
            ..LoginView::logged_out(alias, url)
        }
    }

    fn fill(&mut self, login: StoredLogin) {
        self.logged_in = true;
        self.issuer = Some(login.issuer);
        self.client_id = Some(login.client_id);
        self.scopes = login.scopes;
        self.expires_at = login.expires_at;
        self.expired = login.expires_at.map(|at| at <= now());
        self.has_refresh_token = login.has_refresh_token;
    }
}

fn details(v: &LoginView) -> Vec<String> {
    let mut lines = vec![format!(
        "authorization server: {}",
        v.issuer.as_deref().unwrap_or("?")
    )];
    if let Some(id) = &v.client_id {
        let how = match v.client_source {
            Some(IdentitySource::PreRegistered) => " (from the config)",
            Some(IdentitySource::MetadataDocument) => " (client metadata document)",
            Some(IdentitySource::Dynamic) => " (registered dynamically)",
            None => "",
        };
        lines.push(format!("client:               {id}{how}"));
    }
    lines.push(format!("scopes:               {}", scope_words(&v.scopes)));
    lines.push(format!(
        "token:                {}",
        expiry_words(v.expires_at, v.has_refresh_token)
    ));
    lines
}

fn human(views: &[LoginView]) -> Vec<String> {
    let mut rows = vec![vec![
        "SERVER".to_owned(),
        "LOGIN".into(),
        "SCOPES".into(),
        "TOKEN".into(),
        "METHOD".into(),
    ]];
    for v in views {
        let mut server = v.alias.clone().unwrap_or_else(|| v.url.clone());
        if let Some(name) = &v.principal {
            server = format!("{server} (principal {name})");
        }
        let (login, scopes, token) = match (v.oauth, &v.issuer) {
            ("static_header", _) => ("static Authorization header".into(), "-".into(), "-".into()),
            ("off", _) => ("OAuth off".into(), "-".into(), "-".into()),
            (_, Some(issuer)) => (
                format!("logged in at {issuer}"),
                scope_words(&v.scopes),
                expiry_words(v.expires_at, v.has_refresh_token),
            ),
            (_, None) => ("not logged in".into(), "-".into(), "-".into()),
        };
        let method = v.method.clone().unwrap_or_else(|| "-".into());
        rows.push(vec![server, login, scopes, token, method]);
    }
    if views.is_empty() {
        return vec!["no remote servers are configured and no logins are stored".into()];
    }
    out::table(&rows)
}

/// The configured server `alias` (an OAuth server, see [`oauth_server`])
/// with its secret references resolved: its client secret and its
/// identity provider's may be references.
async fn resolved_server(settings: &Settings, alias: &str) -> anyhow::Result<ServerConfig> {
    let config = settings.load_config()?.config;
    Ok(oauth_server(&config, alias)?
        .resolve_secrets()
        .await
        .map_err(|e| Failure::usage(format!("{alias}: {e}")))?)
}

/// The configured server `alias`, which must be an HTTP one.
fn oauth_server<'a>(config: &'a Config, alias: &str) -> Result<&'a ServerConfig, Failure> {
    let Some(server) = config.server(alias) else {
        let names: Vec<&str> = config.servers.iter().map(|s| s.alias.as_str()).collect();
        return Err(Failure::usage(format!(
            "no server is configured as {alias:?} in {}; configured: {}",
            config.origin,
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )));
    };
    if let Err(NoOAuth::Stdio) = oauth_config(server) {
        return Err(not_oauth(alias, NoOAuth::Stdio));
    }
    Ok(server)
}

fn not_oauth(alias: &str, why: NoOAuth) -> Failure {
    Failure::usage(format!("{alias} does not log in with OAuth: {why}"))
}

fn store() -> Result<TokenStore, Failure> {
    default_token_store().map_err(|e| {
        Failure::usage(format!(
            "cannot tell where to keep logins ({e}); set SWITCHBOARD_STATE_DIR"
        ))
    })
}

fn provider(config: OAuthConfig) -> Result<OAuthProvider, Failure> {
    OAuthProvider::new(config).map_err(|e| Failure::usage(e.to_string()))
}

fn scope_words(scopes: &[String]) -> String {
    if scopes.is_empty() {
        "none".into()
    } else {
        scopes.join(" ")
    }
}

/// A duration in the largest whole unit that fits.
fn span(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7_199 => format!("{} min", secs / 60),
        7_200..=172_799 => format!("{} h", secs / 3_600),
        _ => format!("{} days", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_in_words() {
        assert_eq!(span(5), "5 s");
        assert_eq!(span(3_540), "59 min");
        assert_eq!(span(10_800), "3 h");
        assert_eq!(span(259_200), "3 days");
        assert!(expiry_words(Some(now() + 3_600), true).starts_with("expires in 60 min"));
        assert!(expiry_words(Some(now() + 3_600), true).ends_with("a refresh token is held"));
        assert!(expiry_words(Some(1), false).starts_with("expired "));
        assert_eq!(expiry_words(None, false), "no expiry given");
    }
}
