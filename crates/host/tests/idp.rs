//! Enterprise-managed authorization in the host (issue 17, SEP-990):
//! `switchboard-authkit` plays both the enterprise identity provider
//! (token exchange of its ID tokens for ID-JAGs) and the MCP server's
//! authorization server (the JWT-bearer grant with those ID-JAGs). A
//! server whose `oauth` names the identity provider needs the login there,
//! once; then it mounts with no login of its own.

use serde_json::{Value, json};
use switchboard_authkit::{
    AuthServer, AuthServerConfig, ResourceConfig, ResourceServer, TestClient,
};
use switchboard_host::{Host, Outcome, ServerStatus};

use switchboard_host::idp_login_config;
use switchboard_oauth::{Secret, TokenSet, TokenStore, idp_login_key};

use crate::util::*;

const IDP_CLIENT: &str = "switchboard-at-idp";
const LOGIN_REASON: &str = "needs login: run `switchboard auth login --idp corp`";

struct Enterprise {
    idp: AuthServer,
    auth: AuthServer,
    mcp: ResourceServer,
}

async fn enterprise() -> Enterprise {
    let idp = AuthServer::start(AuthServerConfig {
        token_exchange: true,
        ..AuthServerConfig::default()
    })
    .await;
    idp.add_client(TestClient {
        client_id: IDP_CLIENT.into(),
        secret: None,
        method: "none".into(),
        redirect_uris: vec!["http://127.0.0.1/callback".into()],
        jwt_key: None,
    });
    let auth = AuthServer::start(AuthServerConfig {
        assertion_keys: vec![idp.public_key()],
        ..AuthServerConfig::default()
    })
    .await;
    auth.add_client(TestClient::basic("switchboard", "s3cret", &[]));
    let mcp = ResourceServer::start(ResourceConfig::default(), &auth).await;
    Enterprise { idp, auth, mcp }
}

fn config(dir: &Dir, e: &Enterprise) -> Value {
    json!({
        "identityProviders": {"corp": {"issuer": e.idp.issuer(), "clientId": IDP_CLIENT}},
        "mcpServers": {
            "secure": {"type": "http", "url": e.mcp.url(), "oauth": {
                "idp": "corp", "clientId": "switchboard", "clientSecret": "s3cret"}},
            "local": stdio(&[]),
        },
        "audit": dir.path_str("audit.jsonl"),
    })
}

/// What `switchboard auth login --idp corp` does: an OpenID Connect login
/// at the identity provider (which approves at once), kept in the store.
async fn log_in_at_idp(host: &Host, store: &TokenStore) {
    let config = host.config();
    let idp = &config.identity_providers["corp"];
    let provider = headless_provider(idp_login_config("corp", idp), store);
    let report = provider
        .login_at_identity_provider("corp", &idp.scopes)
        .await
        .unwrap();
    assert!(report.scopes.iter().any(|s| s == "openid"), "{report:?}");
    assert!(store.id_token("corp").unwrap().is_some());
}

/// An expired login at the identity provider, as the store keeps one.
fn save_idp_login(store: &TokenStore, e: &Enterprise, ttl_secs: i64) {
    let id_token = e.idp.mint_id_token("alice", IDP_CLIENT, ttl_secs);
    let tokens = TokenSet {
        access_token: Secret::new("idp-access"),
        refresh_token: None,
        expires_at: None,
        granted_scope: Some("openid".into()),
        requested_scope: vec!["openid".into()],
        issuer: e.idp.issuer(),
        client_id: IDP_CLIENT.into(),
        resource: e.idp.issuer(),
        obtained_at: 0,
        dpop_key: None,
        id_token: Some(Secret::new(id_token)),
    };
    store.save_tokens(&idp_login_key("corp"), &tokens).unwrap();
}

/// Without a login at the identity provider the server needs one, and
/// every place says which command makes it: the `--idp` login, not the
/// server's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_idp_login_the_server_needs_the_idp_command() {
    let e = enterprise().await;
    let dir = Dir::new();
    let host = dir.mount(config(&dir, &e)).await;
    let secure = server_report(&host, "secure");
    assert_eq!(secure.status, ServerStatus::NeedsLogin, "{secure:?}");
    assert_eq!(secure.reason.as_deref(), Some(LOGIN_REASON));
    assert_eq!(server_report(&host, "local").status, ServerStatus::Up);
    let outage = host.outage_text().unwrap();
    assert!(outage.contains(LOGIN_REASON), "{outage}");
    let call = whoami_needs_login(&host).await;
    let said = text(&call.result);
    assert!(
        said.contains("`switchboard auth login --idp corp`"),
        "{said}"
    );
    // Nothing was exchanged, nobody was sent to a consent screen.
    assert!(e.idp.token_requests().is_empty());
    assert!(e.auth.authorization_requests().is_empty());
    assert!(e.auth.token_requests().is_empty());

    // An expired login at the identity provider is no login either.
    save_idp_login(&dir.store(), &e, -60);
    whoami_needs_login(&host).await;
    assert!(e.idp.token_requests().is_empty());
    host.shutdown().await;
}

/// Logging in once at the identity provider (OpenID Connect, PKCE, through
/// the user agent) is all a server behind it needs: the next call mounts
/// it, its ID token exchanged for an ID-JAG at the identity provider, which
/// the server's authorization server takes; no authorization request at
/// the server's authorization server, no login of the server's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idp_login_mounts_the_server_with_no_further_login() {
    let e = enterprise().await;
    let dir = Dir::new();
    let host = dir.mount(config(&dir, &e)).await;
    assert_eq!(
        server_report(&host, "secure").status,
        ServerStatus::NeedsLogin
    );
    log_in_at_idp(&host, &dir.store()).await;
    let asked = e.idp.authorization_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].query_param("scope"), Some("openid"));
    assert_eq!(asked[0].query_param("code_challenge_method"), Some("S256"));
    let call = whoami(&host).await;
    assert_eq!(call.outcome, Outcome::Ok, "{}", text(&call.result));
    assert_eq!(server_report(&host, "secure").status, ServerStatus::Up);
    let exchange = e
        .idp
        .token_requests()
        .into_iter()
        .find(|r| r.form_param("grant_type") != Some("authorization_code"))
        .unwrap();
    assert_eq!(
        exchange.form_param("requested_token_type"),
        Some("urn:ietf:params:oauth:token-type:id-jag")
    );
    assert_eq!(
        exchange.form_param("audience"),
        Some(e.auth.issuer().as_str())
    );
    let grant = &e.auth.token_requests()[0];
    assert_eq!(
        grant.form_param("grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert!(e.auth.authorization_requests().is_empty());
    host.shutdown().await;
}
