//! Where the client looks for metadata, in which order, and what it
//! refuses to use.

use switchboard_authkit::{AuthServerConfig, MetadataAt, PrmAt, ResourceConfig};
use switchboard_oauth::{OAuthConfig, OAuthError, OAuthProvider};

use super::util::{config, provider, round_trip, servers};

fn well_known(s: &super::util::Servers) -> Vec<String> {
    s.mcp
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/.well-known"))
        .map(|r| r.path)
        .collect()
}

// AUTH-C-02/03 (metadata-var2): no resource_metadata, PRM only at the root;
// an issuer with a path, RFC 8414 metadata inserted before the path; the
// root well-known URL of the issuer is never asked.
#[tokio::test]
async fn root_prm_and_path_issuer() {
    let s = servers(
        AuthServerConfig {
            issuer_path: "/tenant1".into(),
            ..Default::default()
        },
        ResourceConfig {
            prm_at: PrmAt::Root,
            challenge_resource_metadata: false,
            ..Default::default()
        },
    )
    .await;
    round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert_eq!(
        well_known(&s),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
    assert_eq!(
        s.auth.metadata_paths(),
        ["/.well-known/oauth-authorization-server/tenant1"]
    );
    // A PRM at the root names the origin; that is the resource requested.
    assert_eq!(
        s.auth.authorization_requests()[0].query_param("resource"),
        Some(s.mcp.base_url().as_str())
    );
}

// AUTH-C-02/03 (metadata-var3): PRM only at the URL in resource_metadata;
// OpenID Connect metadata appended to the issuer path, after the two
// inserted forms, never the root.
#[tokio::test]
async fn custom_prm_and_openid_appended() {
    let s = servers(
        AuthServerConfig {
            issuer_path: "/tenant1".into(),
            metadata_at: MetadataAt::OpenIdAppended,
            ..Default::default()
        },
        ResourceConfig {
            prm_at: PrmAt::Custom("/custom/metadata/location.json".into()),
            ..Default::default()
        },
    )
    .await;
    round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert!(
        well_known(&s).is_empty(),
        "the challenge named the metadata"
    );
    assert_eq!(
        s.auth.metadata_paths(),
        [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
    );
}

// AUTH-C-02/03 (metadata-var1): path-aware PRM found by probing; a root
// issuer with only OpenID Connect metadata.
#[tokio::test]
async fn probed_prm_and_openid_root() {
    let s = servers(
        AuthServerConfig {
            metadata_at: MetadataAt::OpenIdInserted,
            ..Default::default()
        },
        ResourceConfig {
            challenge_resource_metadata: false,
            ..Default::default()
        },
    )
    .await;
    round_trip(&s.mcp, &provider(config(&s.mcp))).await.unwrap();
    assert_eq!(
        well_known(&s),
        ["/.well-known/oauth-protected-resource/mcp"]
    );
    assert_eq!(
        s.auth.metadata_paths(),
        [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration"
        ]
    );
}

// AUTH-C-04: metadata naming another issuer is fetched but none of its
// endpoints is used.
#[tokio::test]
async fn metadata_issuer_mismatch_is_refused() {
    let s = servers(
        AuthServerConfig {
            metadata_issuer: Some("https://attacker.example.com".into()),
            ..Default::default()
        },
        ResourceConfig::default(),
    )
    .await;
    let p = provider(config(&s.mcp));
    let err = round_trip(&s.mcp, &p).await.unwrap_err();
    assert!(
        err.to_string().contains("https://attacker.example.com"),
        "{err}"
    );
    assert!(!s.auth.metadata_paths().is_empty());
    assert!(s.auth.registration_requests().is_empty());
    assert!(s.auth.authorization_requests().is_empty());
    assert!(s.auth.token_requests().is_empty());
    assert!(matches!(
        p.login().await,
        Err(OAuthError::IssuerMismatch { .. })
    ));
}

// AUTH-C-16: metadata for another resource stops everything before the
// authorization server is contacted.
#[tokio::test]
async fn prm_resource_mismatch_is_refused() {
    let s = servers(
        AuthServerConfig::default(),
        ResourceConfig {
            resource_override: Some("https://evil.example.com/mcp".into()),
            ..Default::default()
        },
    )
    .await;
    let p = provider(config(&s.mcp));
    let err = round_trip(&s.mcp, &p).await.unwrap_err();
    assert!(err.to_string().contains("evil.example.com"), "{err}");
    assert!(
        s.auth.requests().is_empty(),
        "the authorization server was never contacted"
    );
    assert!(matches!(
        p.login().await,
        Err(OAuthError::ResourceMismatch { .. })
    ));
}

// AUTH-C-11: no S256 in the metadata (absent, or only `plain`) — refuse.
#[tokio::test]
async fn no_s256_no_flow() {
    for methods in [None, Some(vec!["plain".to_owned()])] {
        let s = servers(
            AuthServerConfig {
                code_challenge_methods: methods.clone(),
                ..Default::default()
            },
            ResourceConfig::default(),
        )
        .await;
        let p = provider(config(&s.mcp));
        assert!(
            matches!(p.login().await, Err(OAuthError::PkceUnsupported { .. })),
            "{methods:?}"
        );
        assert!(s.auth.authorization_requests().is_empty());
        assert!(s.auth.registration_requests().is_empty());
    }
}

// A server that neither challenges nor publishes metadata: nothing to log
// in to, said plainly.
#[tokio::test]
async fn nothing_to_log_in_to() {
    let s = servers(AuthServerConfig::default(), ResourceConfig::default()).await;
    let lost = OAuthProvider::new(OAuthConfig::new(
        "lost",
        format!("{}/nothing", s.mcp.base_url()),
    ))
    .unwrap();
    let err = lost.login().await.unwrap_err();
    assert!(matches!(err, OAuthError::NotFound(_)), "{err}");
    assert!(s.auth.requests().is_empty());
}
