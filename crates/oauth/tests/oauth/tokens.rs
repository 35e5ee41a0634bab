//! Refresh tokens, the client credentials grant, a change of authorization
//! server, and logout.

use base64::Engine as _;
use switchboard_authkit::{AuthServer, AuthServerConfig, ResourceConfig, TestClient, jwt};
use switchboard_oauth::{Grant, OAuthConfig, PreRegisteredClient, SigningKey};

use super::util::{
    auth_servers, config, connect, default_servers, grant_types, provider, round_trip, servers,
    servers_with_client, store_in,
};

// A token the server stops accepting (401) is refreshed once (AUTH-C-23);
// the same resource is requested and the call goes through without a new
// authorization.
#[tokio::test]
async fn refresh_on_401() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    let client = connect(&s.mcp, &p).await.unwrap();
    s.mcp.revoke_seen_tokens();
    client.list_all_tools().await.unwrap();
    assert_eq!(
        grant_types(&s.auth),
        ["authorization_code", "refresh_token"]
    );
    assert_eq!(s.auth.authorization_requests().len(), 1);
    let refresh = &s.auth.token_requests()[1];
    assert_eq!(
        refresh.form_param("resource"),
        Some(s.mcp.resource().as_str())
    );
    assert!(refresh.form_param("refresh_token").is_some());
}

// When the refresh token is refused too, a full authorization follows.
#[tokio::test]
async fn failed_refresh_falls_back_to_authorization() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    let client = connect(&s.mcp, &p).await.unwrap();
    s.mcp.revoke_seen_tokens();
    s.auth.revoke_refresh_tokens();
    client.list_all_tools().await.unwrap();
    assert_eq!(
        grant_types(&s.auth),
        ["authorization_code", "refresh_token", "authorization_code"]
    );
    assert_eq!(s.auth.authorization_requests().len(), 2);
}

// A refreshed token that is refused again is not refreshed in a loop: the
// next 401 gets a full authorization.
#[tokio::test]
async fn refresh_is_tried_once_per_challenge() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    let client = connect(&s.mcp, &p).await.unwrap();
    s.mcp.revoke_seen_tokens();
    client.list_all_tools().await.unwrap();
    s.mcp.revoke_seen_tokens();
    client.list_all_tools().await.unwrap();
    assert_eq!(
        grant_types(&s.auth),
        ["authorization_code", "refresh_token", "authorization_code"]
    );
}

// Tokens stored by one run and expired since are refreshed before they are
// sent, not after a 401.
#[tokio::test]
async fn expired_stored_token_is_refreshed_first() {
    let s = default_servers().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    provider(config(&s.mcp).store(store.clone()))
        .login()
        .await
        .unwrap();
    // Age the stored token.
    let path = store.path().to_owned();
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for entry in file["servers"].as_object_mut().unwrap().values_mut() {
        for tokens in entry["tokens"].as_object_mut().unwrap().values_mut() {
            tokens["expires_at"] = serde_json::json!(1);
        }
    }
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let refusals = s.mcp.refusals().len();
    round_trip(&s.mcp, &provider(config(&s.mcp).store(store)))
        .await
        .unwrap();
    assert_eq!(s.mcp.refusals().len(), refusals, "no request was refused");
    assert_eq!(
        grant_types(&s.auth),
        ["authorization_code", "refresh_token"]
    );
}

// Machine to machine: client credentials with client_secret_basic, the
// resource and no authorization endpoint.
#[tokio::test]
async fn client_credentials_with_a_secret() {
    let s = servers(
        AuthServerConfig {
            token_auth_methods: vec!["client_secret_basic".into()],
            ..Default::default()
        },
        ResourceConfig {
            scopes_supported: Some(vec!["mcp:agent".into()]),
            ..Default::default()
        },
    )
    .await;
    s.auth
        .add_client(TestClient::basic("svc", "svc-secret", &[]));
    let client = PreRegisteredClient::new("svc").secret("svc-secret");
    let p = provider(config(&s.mcp).grant(Grant::ClientCredentials(client)));
    let text = round_trip(&s.mcp, &p).await.unwrap();
    assert_eq!(text, "sub=user-1 scope=mcp:agent");
    assert!(s.auth.authorization_requests().is_empty());
    let token = &s.auth.token_requests()[0];
    assert_eq!(token.form_param("grant_type"), Some("client_credentials"));
    assert_eq!(
        token.form_param("resource"),
        Some(s.mcp.resource().as_str())
    );
    assert_eq!(token.form_param("scope"), Some("mcp:agent"));
    let basic = token
        .header("authorization")
        .unwrap()
        .strip_prefix("Basic ")
        .unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(basic)
        .unwrap();
    assert_eq!(decoded, b"svc:svc-secret");
}

// private_key_jwt (RFC 7523): the assertion is signed with the configured
// key and verified by the server's own implementation.
#[tokio::test]
async fn client_credentials_with_a_signed_assertion() {
    for (pem, public, alg) in [
        {
            let (pem, public) = jwt::es256_client_key();
            (pem, public, "ES256")
        },
        {
            let (pem, public) = jwt::ed25519_client_key();
            (pem, public, "EdDSA")
        },
    ] {
        let s = auth_servers(AuthServerConfig {
            token_auth_methods: vec!["private_key_jwt".into()],
            ..Default::default()
        })
        .await;
        s.auth.add_client(TestClient::jwt("agent", public));
        let key = SigningKey::from_pem(&pem, Some(alg)).unwrap();
        let client = PreRegisteredClient::new("agent").signing_key(key);
        let p = provider(config(&s.mcp).grant(Grant::ClientCredentials(client)));
        round_trip(&s.mcp, &p)
            .await
            .unwrap_or_else(|e| panic!("{alg}: {e}"));
        let token = &s.auth.token_requests()[0];
        assert_eq!(
            token.form_param("client_assertion_type"),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        assert!(token.header("authorization").is_none());
    }
}

// AUTH-C-05/10 (authorization-server-migration): after the resource moves
// to another authorization server, the old token's 401 leads to discovery
// and a fresh registration there; nothing from the first server is shown
// to the second.
#[tokio::test]
async fn migration_to_another_authorization_server() {
    let s = default_servers().await;
    let as2 = AuthServer::start(AuthServerConfig::default()).await;
    let p = provider(config(&s.mcp));
    let client = connect(&s.mcp, &p).await.unwrap();
    client.call_tool("whoami", None).await.unwrap();
    let first_id = s.auth.authorization_requests()[0]
        .query_param("client_id")
        .unwrap()
        .to_owned();
    s.mcp.migrate_to(&as2);
    client.call_tool("whoami", None).await.unwrap();
    assert_eq!(as2.registration_requests().len(), 1, "registered afresh");
    assert_eq!(as2.authorization_requests().len(), 1);
    for r in as2.requests() {
        assert_ne!(r.query_param("client_id"), Some(first_id.as_str()));
        assert_ne!(r.form_param("client_id"), Some(first_id.as_str()));
        assert!(
            r.header("authorization")
                .is_none_or(|h| !h.contains(&first_id))
        );
        assert!(
            r.form_param("refresh_token").is_none(),
            "no token from the first server"
        );
    }
    assert!(
        s.auth
            .token_requests()
            .iter()
            .all(|r| r.form_param("grant_type") != Some("refresh_token"))
    );
}

// Pre-registered credentials bound to the first server (by first use) are
// refused at the second: an error, not silent reuse (AUTH-C-10).
#[tokio::test]
async fn pre_registered_credentials_do_not_follow_a_migration() {
    let s = servers_with_client("pre", "secret").await;
    let as2 = AuthServer::start(AuthServerConfig {
        registration: false,
        ..Default::default()
    })
    .await;
    let p =
        provider(config(&s.mcp).pre_registered(PreRegisteredClient::new("pre").secret("secret")));
    let client = connect(&s.mcp, &p).await.unwrap();
    s.mcp.migrate_to(&as2);
    let err = client.call_tool("whoami", None).await.unwrap_err();
    assert!(err.to_string().contains("registered with"), "{err}");
    assert!(as2.authorization_requests().is_empty());
    assert!(as2.token_requests().is_empty());
}

// Logout revokes the refresh token, forgets the tokens, and the next use
// needs a new authorization.
#[tokio::test]
async fn logout_revokes_and_forgets() {
    let s = default_servers().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let p = provider(config(&s.mcp).store(store.clone()));
    p.login().await.unwrap();
    assert!(p.status().await.unwrap().is_some());
    assert!(p.logout().await.unwrap());
    let revoke = s.auth.revocation_requests();
    assert_eq!(revoke.len(), 1);
    assert_eq!(
        revoke[0].form_param("token_type_hint"),
        Some("refresh_token")
    );
    assert!(store.logins().unwrap().is_empty());
    assert!(p.status().await.unwrap().is_none());
    assert!(!p.logout().await.unwrap());
    round_trip(&s.mcp, &p).await.unwrap();
    assert_eq!(s.auth.authorization_requests().len(), 2);
}

// Without a refresh token and without a user agent, a login the server
// stops accepting is reported as "needs login".
#[tokio::test]
async fn refused_without_refresh_needs_login() {
    let s = auth_servers(AuthServerConfig {
        refresh_tokens: false,
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    round_trip(&s.mcp, &provider(config(&s.mcp).store(store.clone())))
        .await
        .unwrap();
    s.mcp.revoke_seen_tokens();
    let unattended = provider(OAuthConfig::new("test", s.mcp.url()).store(store));
    let err = round_trip(&s.mcp, &unattended).await.unwrap_err();
    assert!(err.to_string().contains("needs login"), "{err}");
    assert!(unattended.needs_login());
    assert_eq!(s.auth.authorization_requests().len(), 1);
}

// An authorization server that cannot be reached is no reason to forget a
// login: the refresh fails, the request fails with the cause, and the
// stored tokens (refresh token included) are still there for later.
#[tokio::test]
async fn unreachable_authorization_server_keeps_the_login() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let mcp = switchboard_authkit::ResourceServer::start(ResourceConfig::default(), &auth).await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    round_trip(&mcp, &provider(config(&mcp).store(store.clone())))
        .await
        .unwrap();
    mcp.revoke_seen_tokens();
    drop(auth);
    let p = provider(config(&mcp).store(store.clone()));
    let err = round_trip(&mcp, &p).await.unwrap_err();
    assert!(err.to_string().contains("failed"), "{err}");
    let kept = store
        .tokens(&mcp.url())
        .unwrap()
        .expect("the login is kept");
    assert!(kept.refresh_token.is_some());
}

// A 401 for a token that is no longer the current one (the response
// overtook a refresh) is answered with a plain retry: no refresh, no new
// login. A 401 for the current token runs the flow.
#[tokio::test]
async fn refusal_of_an_old_token_just_retries() {
    use switchboard_client::{AuthChallenge, AuthRetry};
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    p.login().await.unwrap();
    let current = p.authorization_header().await.unwrap().unwrap();
    let challenge = AuthChallenge {
        status: 401,
        www_authenticate: vec![format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            s.mcp.base_url()
        )],
        url: s.mcp.url(),
        method: Some("tools/list".into()),
        // Not looked at by handle_challenge_for, which is told below.
        sent_authorization: None,
        dpop_nonce: None,
    };
    let before = s.auth.requests().len();
    for stale in [Some("Bearer an-older-token"), None] {
        assert_eq!(
            p.handle_challenge_for(&challenge, stale).await.unwrap(),
            AuthRetry::Retry
        );
    }
    assert_eq!(s.auth.requests().len(), before, "no authorization traffic");
    assert_eq!(p.authorization_header().await.unwrap().unwrap(), current);

    assert_eq!(
        p.handle_challenge_for(&challenge, Some(&current))
            .await
            .unwrap(),
        AuthRetry::Retry
    );
    assert_eq!(
        grant_types(&s.auth),
        ["authorization_code", "refresh_token"]
    );
    assert_ne!(p.authorization_header().await.unwrap().unwrap(), current);

    // A 401 challenging another scheme is not OAuth: it stands.
    let basic = AuthChallenge {
        www_authenticate: vec!["Basic realm=\"intranet\"".into()],
        ..challenge.clone()
    };
    let before = s.auth.requests().len();
    assert_eq!(p.handle_challenge(&basic).await.unwrap(), AuthRetry::GiveUp);
    assert_eq!(s.auth.requests().len(), before);

    // A 403 that is not insufficient_scope is not ours to fix.
    let forbidden = AuthChallenge {
        status: 403,
        www_authenticate: vec!["Bearer error=\"access_denied\"".into()],
        ..challenge
    };
    assert_eq!(
        p.handle_challenge(&forbidden).await.unwrap(),
        AuthRetry::GiveUp
    );
}

// The header known at once (what the transport asks before boxing a
// future) agrees with the awaited one whenever it is given, and is
// withheld where only the awaited one can answer: before the store is
// read, and for a token within the expiry margin, which needs a refresh.
#[tokio::test]
async fn the_header_known_at_once_agrees_with_the_awaited_one() {
    use switchboard_client::AuthProvider;
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    assert_eq!(p.authorization_header_now(), None, "the store is not read");
    assert_eq!(p.authorization_header().await.unwrap(), None);
    assert_eq!(p.authorization_header_now(), Some(None));
    p.login().await.unwrap();
    let awaited = p.authorization_header().await.unwrap();
    assert!(awaited.is_some());
    assert_eq!(p.authorization_header_now(), Some(awaited.clone()));
    assert_eq!(p.authorization_now().map(Result::unwrap), Some(awaited));

    let short = auth_servers(AuthServerConfig {
        access_token_ttl: 1,
        ..Default::default()
    })
    .await;
    let p = provider(config(&short.mcp));
    p.login().await.unwrap();
    assert_eq!(p.authorization_header_now(), None, "due for a refresh");
    assert!(p.authorization_now().is_none());
}
