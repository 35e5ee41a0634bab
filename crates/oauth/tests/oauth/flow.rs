//! The whole authorization code flow, headless and through the loopback
//! listener, and what happens without anyone to log in.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_authkit::jwt;
use switchboard_oauth::{IdentitySource, LoopbackUserAgent, OAuthConfig};

use super::util::{self, browse, config, default_servers, provider, round_trip};

// AUTH-C-01/02/11/12/15/16/21: 401 → PRM → AS metadata → DCR → PKCE code
// flow → token → every request with the bearer token, never in a URL.
#[tokio::test]
async fn full_login_and_bearer_on_every_request() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    let text = round_trip(&s.mcp, &p).await.unwrap();
    assert_eq!(text, "sub=user-1 scope=");

    // Discovery: the path-aware PRM (named in the challenge), the RFC 8414
    // metadata of the root issuer.
    let prm: Vec<_> = s
        .mcp
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/.well-known"))
        .collect();
    assert_eq!(prm.len(), 1);
    assert_eq!(prm[0].path, "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        s.auth.metadata_paths(),
        ["/.well-known/oauth-authorization-server"]
    );

    // Registration (AUTH-C-09): native, loopback redirect, refresh wanted.
    let reg = s.auth.registration_requests();
    assert_eq!(reg.len(), 1);
    let body = reg[0].json.clone().unwrap();
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["redirect_uris"][0], "http://127.0.0.1/callback");
    assert_eq!(
        body["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(body["token_endpoint_auth_method"], "none");

    // Authorization request: PKCE S256, state, resource, no scope.
    let authz = s.auth.authorization_requests();
    assert_eq!(authz.len(), 1);
    let a = &authz[0];
    assert_eq!(a.query_param("response_type"), Some("code"));
    assert_eq!(a.query_param("code_challenge_method"), Some("S256"));
    assert_eq!(a.query_param("code_challenge").unwrap().len(), 43);
    assert!(a.query_param("state").unwrap().len() >= 32);
    assert_eq!(a.query_param("resource"), Some(s.mcp.resource().as_str()));
    assert_eq!(a.query_param("scope"), None);

    // Token request: the same resource, the verifier (checked by the AS).
    let tokens = s.auth.token_requests();
    assert_eq!(tokens.len(), 1);
    assert_eq!(
        tokens[0].form_param("grant_type"),
        Some("authorization_code")
    );
    assert_eq!(
        tokens[0].form_param("resource"),
        Some(s.mcp.resource().as_str())
    );
    assert!(tokens[0].form_param("code_verifier").is_some());

    // The first MCP request went without a token; every later one carries
    // it in the header, none in the URL (AUTH-C-21).
    let mcp = s.mcp.mcp_requests();
    assert!(
        mcp.len() >= 4,
        "discover, retry, tools/list, tools/call: {}",
        mcp.len()
    );
    assert!(mcp[0].header("authorization").is_none());
    for r in &mcp[1..] {
        let value = r.header("authorization").expect("bearer on every request");
        let token = value.strip_prefix("Bearer ").expect("Bearer scheme");
        let (_, claims) = jwt::verify(token, &s.auth.public_key()).unwrap();
        assert_eq!(
            claims["aud"],
            s.mcp.resource().as_str(),
            "audience-bound token"
        );
    }
    for r in s.mcp.requests().iter().chain(s.auth.requests().iter()) {
        assert!(
            r.query.iter().all(|(k, _)| k != "access_token"),
            "no token in a URL"
        );
    }
}

// `switchboard auth login`: log in first, then the client's first request
// already carries the token.
#[tokio::test]
async fn login_before_connecting() {
    let s = default_servers().await;
    let p = provider(config(&s.mcp));
    let report = p.login().await.unwrap();
    assert_eq!(report.issuer, s.auth.issuer());
    assert_eq!(report.client_source, IdentitySource::Dynamic);
    assert!(report.has_refresh_token);
    let before = s.mcp.mcp_requests().len();
    assert_eq!(before, 1, "only the unauthenticated probe");
    round_trip(&s.mcp, &p).await.unwrap();
    let after = &s.mcp.mcp_requests()[before..];
    assert!(after.iter().all(|r| r.header("authorization").is_some()));
    assert_eq!(s.mcp.refusals().len(), 1, "only the probe was refused");
    assert_eq!(s.auth.authorization_requests().len(), 1);
}

// Without a user agent the flow stops at "needs login" instead of failing
// silently, and nothing is sent to the authorization endpoint.
#[tokio::test]
async fn needs_login_without_a_user_agent() {
    let s = default_servers().await;
    let p = provider(OAuthConfig::new("test", s.mcp.url()));
    let err = util::connect(&s.mcp, &p).await.unwrap_err();
    assert!(err.to_string().contains("needs login"), "{err}");
    assert!(p.needs_login());
    assert!(s.auth.authorization_requests().is_empty());
    assert!(s.auth.token_requests().is_empty());
}

// The interactive path: the loopback listener receives the browser's
// redirect (RFC 8252 §7.3), the state is checked, the flow completes.
#[tokio::test]
async fn interactive_login_through_the_loopback_listener() {
    let s = default_servers().await;
    let shown = Arc::new(Mutex::new(Vec::new()));
    let sink = shown.clone();
    let agent = LoopbackUserAgent::new()
        .open_browser(false)
        .timeout(Duration::from_secs(60))
        .on_url(move |url| {
            sink.lock().unwrap().push(url.to_owned());
            tokio::spawn(browse(url.to_owned()));
        });
    let p = provider(config(&s.mcp).user_agent(Arc::new(agent)));
    round_trip(&s.mcp, &p).await.unwrap();
    assert_eq!(shown.lock().unwrap().len(), 1);
    let redirect = s.auth.authorization_requests()[0]
        .query_param("redirect_uri")
        .unwrap()
        .to_owned();
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );
    assert_eq!(
        s.auth.token_requests()[0].form_param("redirect_uri"),
        Some(redirect.as_str())
    );
}

// An authorization server that needs a person cannot be driven headless:
// a clear error, no token request.
#[tokio::test]
async fn headless_against_a_login_page_is_a_clear_error() {
    let s = default_servers().await;
    s.auth.configure(|c| c.interactive = true);
    let err = round_trip(&s.mcp, &provider(config(&s.mcp)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("log in interactively"), "{err}");
    assert!(s.auth.token_requests().is_empty());
}
