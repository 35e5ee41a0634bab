//! OAuth servers in the host, against the test authorization server and
//! protected MCP endpoint of `switchboard-authkit` (real HTTP on
//! 127.0.0.1): a server nobody logged in to is reported as needing a login
//! (status, outage text, an `isError` call), a login made elsewhere is
//! picked up without a restart, a lapsed login turns the server back to
//! "needs login", and a failed authorization is told apart from a login.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_authkit::{AuthServer, AuthServerConfig, PrmAt, ResourceConfig, ResourceServer};
use switchboard_host::{Host, Outcome, ServerStatus};
use switchboard_host::{TokenStore, oauth_config};
use switchboard_oauth::HeadlessUserAgent;

use crate::util::*;

const LOGIN_REASON: &str = "needs login: run `switchboard auth login secure`";

struct Servers {
    auth: AuthServer,
    mcp: ResourceServer,
}

async fn servers(resource: ResourceConfig) -> Servers {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let mcp = ResourceServer::start(resource, &auth).await;
    Servers { auth, mcp }
}

/// A config with the protected server as `secure` (with `oauth`, when
/// given), a stdio server beside it, and an audit log.
fn config(dir: &Dir, mcp: &ResourceServer, oauth: Option<Value>) -> Value {
    let mut secure = json!({"type": "http", "url": mcp.url()});
    if let Some(oauth) = oauth {
        secure["oauth"] = oauth;
    }
    json!({
        "mcpServers": {"secure": secure, "local": stdio(&[])},
        "audit": dir.path_str("audit.jsonl"),
    })
}

/// What `switchboard auth login secure` does, from another process's
/// point of view: a login with the server's own OAuth settings, saved in
/// the shared token store. The authorization server approves at once.
async fn log_in(host: &Host, store: &TokenStore) {
    let config = host.config();
    let server = config.server("secure").unwrap();
    let provider = headless_provider(oauth_config(server).unwrap(), store);
    provider.login().await.unwrap();
}

/// The access token the store holds for the server.
fn stored_access_token(store: &TokenStore) -> String {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(store.path()).unwrap()).unwrap();
    let servers = file["servers"].as_object().unwrap();
    assert_eq!(servers.len(), 1, "{file}");
    let entry = servers.values().next().unwrap();
    let issuer = entry["current"].as_str().unwrap();
    let token = entry["tokens"][issuer]["access_token"].as_str().unwrap();
    assert!(token.len() > 20, "{token}");
    token.to_owned()
}

/// A server that wants a login nobody made is `needs_login`, with the
/// command in its reason and in the outage text; its tools give an
/// `isError` result telling the model to ask the user to log in; the audit
/// line says so. Nothing is registered or authorized without a person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_nobody_logged_in_to_needs_a_login() {
    let s = servers(ResourceConfig::default()).await;
    let dir = Dir::new();
    let host = dir.mount(config(&dir, &s.mcp, None)).await;

    let secure = server_report(&host, "secure");
    assert_eq!(secure.status, ServerStatus::NeedsLogin);
    assert_eq!(secure.reason.as_deref(), Some(LOGIN_REASON));
    assert!(secure.auth_required);
    assert_eq!(server_report(&host, "local").status, ServerStatus::Up);
    let json = serde_json::to_value(&secure).unwrap();
    assert_eq!(json["status"], "needs_login");

    let outage = host.outage_text().expect("the outage is reported");
    assert!(
        outage.contains(&format!("- secure {LOGIN_REASON}")),
        "{outage}"
    );
    assert!(!outage.contains("local"), "{outage}");

    let call = whoami(&host).await;
    assert!(call.result.is_error());
    assert_eq!(call.outcome, Outcome::AuthRequired);
    let text = text(&call.result);
    assert!(text.contains("log in"), "{text}");
    assert!(
        text.contains("Tell the user to run `switchboard auth login secure`"),
        "{text}"
    );

    let audit = std::fs::read_to_string(dir.path("audit.jsonl")).unwrap();
    let line: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(line["outcome"], "auth_required", "{line}");
    assert_eq!(line["alias"], "secure", "{line}");

    // The host looked where to authorize, but sent no one there.
    assert!(!s.auth.metadata_paths().is_empty());
    assert!(s.auth.registration_requests().is_empty());
    assert!(s.auth.authorization_requests().is_empty());
    assert!(s.auth.token_requests().is_empty());
    host.shutdown().await;
}

/// A login saved in the token store while the host runs (`switchboard
/// auth login` in another terminal) is used by the next call, with the
/// scopes the entry configures; the store is private to the user and the
/// access token is in no audit line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_made_meanwhile_is_used_by_the_next_call() {
    let s = servers(ResourceConfig::default()).await;
    let dir = Dir::new();
    let store = dir.store();
    let host = dir
        .mount(config(
            &dir,
            &s.mcp,
            Some(json!({"scopes": ["notes:read", "notes:write"]})),
        ))
        .await;
    assert_eq!(
        server_report(&host, "secure").status,
        ServerStatus::NeedsLogin
    );
    let before = host.call("mcp__secure__whoami", None, yes()).await;
    assert!(before.is_error());

    log_in(&host, &store).await;
    let asked = s.auth.authorization_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].query_param("scope"),
        Some("notes:read notes:write")
    );

    let call = whoami(&host).await;
    assert_eq!(call.outcome, Outcome::Ok, "{}", text(&call.result));
    let said = text(&call.result);
    assert!(said.contains("scope=notes:read notes:write"), "{said}");
    let secure = server_report(&host, "secure");
    assert_eq!(secure.status, ServerStatus::Up);
    assert!(!secure.auth_required);
    assert!(host.outage_text().is_none());

    // The token went in the Authorization header, and nowhere else.
    let token = stored_access_token(&store);
    let last = s.mcp.mcp_requests().pop().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    let audit = std::fs::read_to_string(dir.path("audit.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 2);
    assert!(!audit.contains(&token));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    host.shutdown().await;
}

/// A server that was up turns to `needs_login` when its login lapses for
/// good (token revoked, refresh token refused): the call says to log in,
/// and so do the status and the outage text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_login_turns_the_server_to_needs_login() {
    let s = servers(ResourceConfig::default()).await;
    let dir = Dir::new();
    let store = dir.store();
    // Logged in before the host starts.
    let staging = dir.mount(config(&dir, &s.mcp, None)).await;
    log_in(&staging, &store).await;
    staging.shutdown().await;

    let host = dir.mount(config(&dir, &s.mcp, None)).await;
    assert_eq!(server_report(&host, "secure").status, ServerStatus::Up);
    let ok = host.call("mcp__secure__whoami", None, yes()).await;
    assert!(!ok.is_error(), "{}", text(&ok));

    s.mcp.revoke_seen_tokens();
    s.auth.revoke_refresh_tokens();
    let call = whoami_needs_login(&host).await;
    let said = text(&call.result);
    assert!(said.contains("switchboard auth login secure"), "{said}");
    // The refresh was tried before giving up.
    assert!(
        s.auth
            .token_requests()
            .iter()
            .any(|r| r.form_param("grant_type") == Some("refresh_token"))
    );
    let secure = server_report(&host, "secure");
    assert_eq!(secure.status, ServerStatus::NeedsLogin);
    assert_eq!(secure.reason.as_deref(), Some(LOGIN_REASON));
    let outage = host.outage_text().unwrap();
    assert!(outage.contains(LOGIN_REASON), "{outage}");
    host.shutdown().await;
}

/// An authorization that fails (here: the server's metadata cannot be
/// found) is an authorization problem, not a login to make: the server is
/// down with the reason, marked as needing authorization, and its calls
/// are `auth_required`, not transport failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_authorization_is_not_a_login_to_make() {
    let s = servers(ResourceConfig {
        prm_at: PrmAt::Custom("/hidden/metadata".into()),
        challenge_resource_metadata: false,
        ..ResourceConfig::default()
    })
    .await;
    let dir = Dir::new();
    let host = dir.mount(config(&dir, &s.mcp, None)).await;
    let secure = server_report(&host, "secure");
    assert_eq!(secure.status, ServerStatus::Down);
    assert!(secure.auth_required);
    let reason = secure.reason.unwrap();
    assert!(
        reason.contains("authorization for secure failed"),
        "{reason}"
    );
    let outage = host.outage_text().unwrap();
    assert!(
        outage.contains("- secure refused authorization"),
        "{outage}"
    );

    let call = whoami_needs_login(&host).await;
    let said = text(&call.result);
    assert!(said.contains("refused authorization"), "{said}");
    assert!(!said.contains("auth login"), "{said}");
    host.shutdown().await;
}

/// With a user agent in the mount options the host logs in by itself (here
/// one that needs no person), saves the login in the store, and the
/// server is up from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_user_agent_the_host_logs_in_itself() {
    let s = servers(ResourceConfig::default()).await;
    let dir = Dir::new();
    let mut options = dir.options();
    options.oauth_user_agent = Some(Arc::new(HeadlessUserAgent::new()));
    let host = Host::mount(dir.config(config(&dir, &s.mcp, None)), options)
        .await
        .unwrap();
    assert_eq!(server_report(&host, "secure").status, ServerStatus::Up);
    assert_eq!(s.auth.authorization_requests().len(), 1);
    let call = host.call("mcp__secure__whoami", None, yes()).await;
    assert!(!call.is_error(), "{}", text(&call));
    let token = stored_access_token(&dir.store());
    let audit = std::fs::read_to_string(dir.path("audit.jsonl")).unwrap();
    assert!(!audit.contains(&token));
    host.shutdown().await;
}

/// A login saved while the host runs brings the server up by itself (as a
/// gateway needs: the model cannot call tools it was never shown): its
/// tools join the table and subscribers hear of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_made_meanwhile_brings_the_tools_without_a_call() {
    let s = servers(ResourceConfig::default()).await;
    let dir = Dir::new();
    let host = dir.mount(config(&dir, &s.mcp, None)).await;
    assert_eq!(
        server_report(&host, "secure").status,
        ServerStatus::NeedsLogin
    );
    assert!(host.tools().iter().all(|t| t.server != "secure"));
    let mut changes = host.subscribe();

    log_in(&host, &dir.store()).await;
    let change = tokio::time::timeout(std::time::Duration::from_secs(60), changes.recv())
        .await
        .expect("the table changes once the login is saved")
        .unwrap();
    assert_eq!(change.added, ["mcp__secure__whoami"]);
    assert_eq!(server_report(&host, "secure").status, ServerStatus::Up);
    assert!(host.outage_text().is_none());
    host.shutdown().await;
}
