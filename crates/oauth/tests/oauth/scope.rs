//! Scope selection (AUTH-C-18/19), offline access, and step-up on 403
//! `insufficient_scope` with its retry limit (AUTH-C-20).

use switchboard_authkit::{AuthServerConfig, ResourceConfig};
use switchboard_client::ClientError;

use super::util::{config, connect, provider, round_trip, scopes, servers};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

// The challenge's scope is used as is, whatever scopes_supported says.
#[tokio::test]
async fn scope_from_the_challenge() {
    let s = servers(
        AuthServerConfig::default(),
        ResourceConfig {
            challenge_scope: Some(strings(&["mcp:basic"])),
            scopes_supported: Some(strings(&["mcp:profile", "mcp:other"])),
            required_scopes: strings(&["mcp:basic"]),
            ..Default::default()
        },
    )
    .await;
    let text = round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert_eq!(text, "sub=user-1 scope=mcp:basic");
    assert_eq!(
        scopes(&s.auth.authorization_requests()[0], "scope").unwrap(),
        ["mcp:basic"]
    );
}

// No challenge scope: all of scopes_supported.
#[tokio::test]
async fn scope_from_scopes_supported() {
    let s = servers(
        AuthServerConfig::default(),
        ResourceConfig {
            scopes_supported: Some(strings(&["mcp:basic", "mcp:read", "mcp:write"])),
            ..Default::default()
        },
    )
    .await;
    round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert_eq!(
        scopes(&s.auth.authorization_requests()[0], "scope").unwrap(),
        ["mcp:basic", "mcp:read", "mcp:write"]
    );
}

// Neither: no scope parameter at all.
#[tokio::test]
async fn scope_omitted_when_undefined() {
    let s = servers(AuthServerConfig::default(), ResourceConfig::default()).await;
    round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert_eq!(
        s.auth.authorization_requests()[0].query_param("scope"),
        None
    );
}

// offline_access only when the authorization server lists it, and then
// refresh_token is among the registered grant types.
#[tokio::test]
async fn offline_access_only_when_advertised() {
    for (listed, expected) in [
        (true, vec!["mcp:basic", "offline_access"]),
        (false, vec!["mcp:basic"]),
    ] {
        let mut as_scopes = strings(&["mcp:basic"]);
        if listed {
            as_scopes.push("offline_access".into());
        }
        let s = servers(
            AuthServerConfig {
                scopes_supported: Some(as_scopes),
                ..Default::default()
            },
            ResourceConfig {
                scopes_supported: Some(strings(&["mcp:basic"])),
                ..Default::default()
            },
        )
        .await;
        round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
        assert_eq!(
            scopes(&s.auth.authorization_requests()[0], "scope").unwrap(),
            expected
        );
        let grants = &s.auth.registration_requests()[0].json.clone().unwrap()["grant_types"];
        assert!(
            grants
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g == "refresh_token")
        );
    }
}

// 403 insufficient_scope on tools/call: re-authorize for the union of what
// was held and what is challenged, then the call succeeds.
#[tokio::test]
async fn step_up_requests_the_union() {
    let s = servers(
        AuthServerConfig::default(),
        ResourceConfig {
            challenge_scope: Some(strings(&["mcp:basic"])),
            scopes_supported: Some(strings(&["mcp:profile"])),
            required_scopes: strings(&["mcp:basic"]),
            method_scopes: vec![("tools/call".into(), strings(&["mcp:write"]))],
            ..Default::default()
        },
    )
    .await;
    let text = round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert_eq!(text, "sub=user-1 scope=mcp:basic mcp:write");
    let authz = s.auth.authorization_requests();
    assert_eq!(authz.len(), 2);
    assert_eq!(scopes(&authz[0], "scope").unwrap(), ["mcp:basic"]);
    assert_eq!(
        scopes(&authz[1], "scope").unwrap(),
        ["mcp:basic", "mcp:write"]
    );
}

// A scope the user never grants: at most three authorizations for the
// operation, then a clear error instead of a loop.
#[tokio::test]
async fn step_up_gives_up() {
    let s = servers(
        AuthServerConfig {
            withheld_scopes: strings(&["mcp:admin"]),
            ..Default::default()
        },
        ResourceConfig {
            challenge_scope: Some(strings(&["mcp:admin"])),
            scopes_supported: Some(strings(&["mcp:admin"])),
            method_scopes: vec![("tools/call".into(), strings(&["mcp:admin"]))],
            ..Default::default()
        },
    )
    .await;
    let p = provider(config(&s.mcp));
    let client = connect(&s.mcp, &p).await.unwrap();
    let before = s.auth.authorization_requests().len();
    assert_eq!(before, 1);
    let err = client.call_tool("whoami", None).await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err}");
    assert!(err.to_string().contains("mcp:admin"), "{err}");
    let total = s.auth.authorization_requests().len();
    assert_eq!(total, 3, "the first authorization and two step-ups");
    // The limit holds across requests for the same operation.
    assert!(client.call_tool("whoami", None).await.is_err());
    assert_eq!(s.auth.authorization_requests().len(), 3);
}
