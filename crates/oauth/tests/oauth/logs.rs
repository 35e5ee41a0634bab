//! Nothing secret in logs, errors or `Debug` output (AUTH-C-25): a full
//! flow (registration with a secret, authorization, token, refresh,
//! step-up, a rejected response) under a TRACE subscriber, then every
//! token, secret, code, verifier and state the servers saw is searched for
//! in what was captured.

use base64::Engine as _;
use switchboard_authkit::{AuthServerConfig, IssMode, ResourceConfig};
use switchboard_oauth::TokenStore;
use switchboard_testutil::LogCapture;

use super::util::{config, connect, provider, servers};

#[tokio::test]
async fn no_secret_reaches_the_logs() {
    let capture = LogCapture::default();
    let _guard = capture.install();

    let s = servers(
        AuthServerConfig {
            token_auth_methods: vec!["client_secret_basic".into()],
            ..Default::default()
        },
        ResourceConfig {
            challenge_scope: Some(vec!["mcp:basic".into()]),
            required_scopes: vec!["mcp:basic".into()],
            method_scopes: vec![("tools/call".into(), vec!["mcp:write".into()])],
            ..Default::default()
        },
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore::at(dir.path().join("oauth.json"));
    let p = provider(config(&s.mcp).store(store.clone()));
    let client = connect(&s.mcp, &p).await.unwrap();
    client.call_tool("whoami", None).await.unwrap(); // step-up
    s.mcp.revoke_seen_tokens();
    client.list_all_tools().await.unwrap(); // refresh
    let mut errors = Vec::new();
    s.auth
        .configure(|c| c.iss = IssMode::Value("https://evil.example.com".into()));
    errors.push(p.login().await.unwrap_err().to_string()); // rejected response
    errors.push(format!("{p:?}"));
    errors.push(format!("{:?}", store.tokens(&s.mcp.url()).unwrap()));
    errors.push(format!("{:?}", p.status().await.unwrap()));

    // Everything secret the servers saw.
    let mut secrets = Vec::new();
    for r in s.auth.token_requests() {
        for name in ["code", "code_verifier", "refresh_token", "client_secret"] {
            secrets.extend(r.form_param(name).map(str::to_owned));
        }
        if let Some(basic) = r
            .header("authorization")
            .and_then(|h| h.strip_prefix("Basic "))
        {
            let decoded = String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(basic)
                    .unwrap(),
            )
            .unwrap();
            secrets.push(basic.to_owned());
            secrets.push(decoded.split_once(':').unwrap().1.to_owned());
        }
    }
    for r in s.auth.authorization_requests() {
        secrets.extend(r.query_param("state").map(str::to_owned));
    }
    for r in s.mcp.mcp_requests() {
        secrets.extend(
            r.header("authorization")
                .and_then(|h| h.strip_prefix("Bearer "))
                .map(str::to_owned),
        );
    }
    secrets.sort();
    secrets.dedup();
    assert!(
        secrets.len() >= 10,
        "the flow produced secrets to look for: {}",
        secrets.len()
    );

    let logs = capture.text();
    assert!(
        logs.contains("authorized"),
        "the subscriber captured the flow"
    );
    assert!(logs.contains("refreshed the access token"));
    assert!(logs.contains(&s.auth.issuer()));
    for secret in &secrets {
        assert!(!logs.contains(secret.as_str()), "a secret reached the logs");
        for text in &errors {
            assert!(
                !text.contains(secret.as_str()),
                "a secret reached an error or Debug output: {text}"
            );
        }
    }
    client.close().await;
}
