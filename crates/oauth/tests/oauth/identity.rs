//! Which client identity is used (AUTH-C-06..10) and how it authenticates
//! at the token endpoint.

use base64::Engine as _;
use switchboard_authkit::AuthServerConfig;
use switchboard_oauth::{IdentitySource, OAuthError, PreRegisteredClient};

use super::util::{
    auth_servers, config, default_servers, provider, round_trip, servers_with_client,
};

const CIMD_URL: &str = "https://client.example.com/switchboard.json";

fn basic_credentials(header: &str) -> (String, String) {
    let b64 = header.strip_prefix("Basic ").expect("Basic");
    let text = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap();
    let (id, secret) = text.split_once(':').unwrap();
    (id.to_owned(), secret.to_owned())
}

// Pre-registered credentials win over CIMD and DCR (AUTH-C-06), with
// client_secret_basic when that is what the server takes.
#[tokio::test]
async fn pre_registered_first() {
    let s = auth_servers(AuthServerConfig {
        cimd_supported: true,
        token_auth_methods: vec!["client_secret_basic".into()],
        ..Default::default()
    })
    .await;
    s.add_basic_client("pre-registered-client", "pre-registered-secret");
    let p = provider(config(&s.mcp).client_metadata_url(CIMD_URL).pre_registered(
        PreRegisteredClient::new("pre-registered-client").secret("pre-registered-secret"),
    ));
    let report = p.login().await.unwrap();
    assert_eq!(report.client_source, IdentitySource::PreRegistered);
    assert!(s.auth.registration_requests().is_empty());
    let token = &s.auth.token_requests()[0];
    let (id, secret) = basic_credentials(token.header("authorization").unwrap());
    assert_eq!(
        (id.as_str(), secret.as_str()),
        ("pre-registered-client", "pre-registered-secret")
    );
    assert_eq!(token.form_param("client_secret"), None);
}

// RFC 6749 §2.3.1: id and secret are form-encoded inside Basic; the server
// decodes them and accepts.
#[tokio::test]
async fn basic_credentials_with_special_characters() {
    let s = servers_with_client("my client:1", "p@ss w+rd/é%").await;
    let p = provider(
        config(&s.mcp)
            .pre_registered(PreRegisteredClient::new("my client:1").secret("p@ss w+rd/é%")),
    );
    round_trip(&s.mcp, &p).await.unwrap();
    let (id, secret) =
        basic_credentials(s.auth.token_requests()[0].header("authorization").unwrap());
    assert_eq!(id, "my+client%3A1");
    assert_eq!(secret, "p%40ss+w%2Brd%2F%C3%A9%25");
}

// CIMD when the server supports it (AUTH-C-07/08): the URL is the client
// id, no registration, a public client at the token endpoint.
#[tokio::test]
async fn metadata_document_when_supported() {
    let s = auth_servers(AuthServerConfig {
        cimd_supported: true,
        cimd_documents: vec![serde_json::json!({
            "client_id": CIMD_URL,
            "client_name": "Switchboard",
            "redirect_uris": ["http://127.0.0.1/callback"],
        })],
        ..Default::default()
    })
    .await;
    let p = provider(config(&s.mcp).client_metadata_url(CIMD_URL));
    round_trip(&s.mcp, &p).await.unwrap();
    assert!(s.auth.registration_requests().is_empty());
    assert_eq!(
        s.auth.authorization_requests()[0].query_param("client_id"),
        Some(CIMD_URL)
    );
    let token = &s.auth.token_requests()[0];
    assert_eq!(token.form_param("client_id"), Some(CIMD_URL));
    assert!(token.header("authorization").is_none() && token.form_param("client_secret").is_none());
}

// Without the server's CIMD flag the URL is not used: DCR instead.
#[tokio::test]
async fn registration_when_metadata_documents_are_not_supported() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp).client_metadata_url(CIMD_URL));
    let report = p.login().await.unwrap();
    assert_eq!(report.client_source, IdentitySource::Dynamic);
    assert_eq!(s.auth.registration_requests().len(), 1);
    assert_ne!(
        s.auth.authorization_requests()[0].query_param("client_id"),
        Some(CIMD_URL)
    );
}

// No pre-registration, no CIMD, no registration endpoint: a clear error
// telling the user what to configure.
#[tokio::test]
async fn no_way_to_get_a_client_id() {
    let s = auth_servers(AuthServerConfig {
        registration: false,
        ..Default::default()
    })
    .await;
    let err = provider(config(&s.mcp)).login().await.unwrap_err();
    assert!(matches!(err, OAuthError::NoClientIdentity { .. }), "{err}");
    assert!(err.to_string().contains("client_id"), "{err}");
    assert!(s.auth.authorization_requests().is_empty());
}

// Credentials bound to another issuer are not used here (AUTH-C-10).
#[tokio::test]
async fn credentials_for_another_issuer_are_not_used() {
    let s = default_servers().await;
    let p = provider(
        config(&s.mcp).pre_registered(
            PreRegisteredClient::new("elsewhere")
                .secret("s")
                .issuer("https://other-as.example.com"),
        ),
    );
    let report = p.login().await.unwrap();
    assert_eq!(report.client_source, IdentitySource::Dynamic);
    for r in s.auth.requests() {
        assert_ne!(r.query_param("client_id"), Some("elsewhere"));
        assert_ne!(r.form_param("client_id"), Some("elsewhere"));
    }
}

// The token endpoint authentication method follows the metadata: each of
// the three a registered client can use.
#[tokio::test]
async fn token_endpoint_auth_methods() {
    for method in ["client_secret_basic", "client_secret_post", "none"] {
        let s = auth_servers(AuthServerConfig {
            token_auth_methods: vec![method.into()],
            ..Default::default()
        })
        .await;
        round_trip(&s.mcp, &provider(config(&s.mcp)))
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"));
        let reg = &s.auth.registration_requests()[0];
        assert_eq!(
            reg.json.as_ref().unwrap()["token_endpoint_auth_method"],
            method
        );
        let token = &s.auth.token_requests()[0];
        let used = match (
            token.header("authorization"),
            token.form_param("client_secret"),
        ) {
            (Some(h), None) if h.starts_with("Basic ") => "client_secret_basic",
            (None, Some(_)) => "client_secret_post",
            (None, None) => "none",
            _ => "both",
        };
        assert_eq!(used, method);
        assert!(token.form_param("client_id").is_some() || method == "client_secret_basic");
    }
}

// A dynamic registration is made once per issuer and reused.
#[tokio::test]
async fn registration_is_reused() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    p.login().await.unwrap();
    p.login().await.unwrap();
    assert_eq!(s.auth.registration_requests().len(), 1);
    let ids: Vec<_> = s
        .auth
        .authorization_requests()
        .iter()
        .map(|r| r.query_param("client_id").unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1]);
}

// AUTH-C-09: a registration refused for its redirect URI is reported with
// what was sent (the URI and the application_type), not as a bare code.
#[tokio::test]
async fn refused_registration_says_why() {
    let s = default_servers().await;
    let agent =
        switchboard_oauth::HeadlessUserAgent::new().redirect_uri("http://192.0.2.10/callback");
    let p = provider(config(&s.mcp).user_agent(std::sync::Arc::new(agent)));
    let err = p.login().await.unwrap_err();
    assert!(
        matches!(&err, OAuthError::Refused { endpoint: "registration", error, .. } if error == "invalid_redirect_uri"),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("http://192.0.2.10/callback") && text.contains("\"web\""),
        "{text}"
    );
    assert_eq!(
        s.auth.registration_requests()[0].json.as_ref().unwrap()["application_type"],
        "web"
    );
    assert!(s.auth.authorization_requests().is_empty());
}
