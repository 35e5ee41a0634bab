//! The token store as the provider uses it: persistence across runs,
//! private files, and tokens that stay with their server.

use switchboard_authkit::{ResourceConfig, ResourceServer};
use switchboard_oauth::TokenStore;

use super::util::{config, default_servers, provider, round_trip};

// AUTH-C-25: a login survives the process (a new provider with the same
// store connects without any authorization traffic), in a 0600 file in a
// 0700 folder.
#[tokio::test]
async fn logins_persist_in_a_private_file() {
    let s = default_servers().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("state")
        .join("switchboard")
        .join("oauth.json");
    let store = TokenStore::at(&path);
    round_trip(&s.mcp, &provider(config(&s.mcp).store(store.clone())))
        .await
        .unwrap();
    let auth_requests = s.auth.requests().len();

    let again = provider(config(&s.mcp).store(store.clone()));
    let status = again.status().await.unwrap().expect("a stored login");
    assert_eq!(status.issuer, s.auth.issuer());
    assert!(status.has_refresh_token);
    round_trip(&s.mcp, &again).await.unwrap();
    assert_eq!(
        s.auth.requests().len(),
        auth_requests,
        "no authorization traffic"
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }
    let logins = store.logins().unwrap();
    assert_eq!(logins.len(), 1);
    assert_eq!(logins[0].server, s.mcp.url());
}

// AUTH-C-22: tokens are keyed by server; another server behind the same
// authorization server never sees them.
#[tokio::test]
async fn tokens_stay_with_their_server() {
    let s = default_servers().await;
    let other = ResourceServer::start(ResourceConfig::default(), &s.auth).await;
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::at(dir.path().join("oauth.json"));
    round_trip(&s.mcp, &provider(config(&s.mcp).store(store.clone())))
        .await
        .unwrap();
    round_trip(&other, &provider(config(&other).store(store.clone())))
        .await
        .unwrap();
    let first = &other.mcp_requests()[0];
    assert!(
        first.header("authorization").is_none(),
        "the first server's token was not sent"
    );
    assert_eq!(s.auth.authorization_requests().len(), 2);
    assert_eq!(store.logins().unwrap().len(), 2);
}
