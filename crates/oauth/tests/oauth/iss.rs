//! RFC 9207 `iss` validation, exactly as the spec's table says, and error
//! responses that are not acted on when `iss` fails.

use switchboard_authkit::{AuthServerConfig, IssMode, ResourceConfig};
use switchboard_oauth::OAuthError;

use super::util::{config, provider, servers};

struct Case {
    name: &'static str,
    advertised: Option<bool>,
    iss: fn(&str) -> IssMode,
    accepted: bool,
}

// AUTH-C-13/14: every row of the table plus the normalisation traps.
#[tokio::test]
async fn iss_table() {
    let cases = [
        Case {
            name: "advertised, correct",
            advertised: Some(true),
            iss: |_| IssMode::Correct,
            accepted: true,
        },
        Case {
            name: "not advertised, absent",
            advertised: None,
            iss: |_| IssMode::Omit,
            accepted: true,
        },
        Case {
            name: "advertised false, absent",
            advertised: Some(false),
            iss: |_| IssMode::Omit,
            accepted: true,
        },
        Case {
            name: "not advertised, correct",
            advertised: None,
            iss: |_| IssMode::Correct,
            accepted: true,
        },
        Case {
            name: "advertised, absent",
            advertised: Some(true),
            iss: |_| IssMode::Omit,
            accepted: false,
        },
        Case {
            name: "advertised, wrong",
            advertised: Some(true),
            iss: |_| IssMode::Value("https://evil.example.com".into()),
            accepted: false,
        },
        Case {
            name: "not advertised, wrong",
            advertised: None,
            iss: |_| IssMode::Value("https://evil.example.com".into()),
            accepted: false,
        },
        Case {
            name: "trailing slash",
            advertised: Some(true),
            iss: |issuer| IssMode::Value(format!("{issuer}/")),
            accepted: false,
        },
        Case {
            name: "upper-case scheme",
            advertised: Some(true),
            iss: |issuer| IssMode::Value(issuer.replacen("http", "HTTP", 1)),
            accepted: false,
        },
        Case {
            name: "explicit default port",
            advertised: Some(true),
            iss: |issuer| IssMode::Value(issuer.replacen("127.0.0.1", "127.0.0.1:80", 1)),
            accepted: false,
        },
        Case {
            name: "percent-encoded",
            advertised: Some(true),
            iss: |issuer| IssMode::Value(issuer.replacen(':', "%3A", 1)),
            accepted: false,
        },
    ];
    for case in cases {
        let s = servers(
            AuthServerConfig {
                iss_advertised: case.advertised,
                ..Default::default()
            },
            ResourceConfig::default(),
        )
        .await;
        let issuer = s.auth.issuer();
        s.auth.configure(|c| c.iss = (case.iss)(&issuer));
        let result = provider(config(&s.mcp)).login().await;
        assert_eq!(
            s.auth.authorization_requests().len(),
            1,
            "{}: the authorization was requested",
            case.name
        );
        if case.accepted {
            result.unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(s.auth.token_requests().len(), 1, "{}", case.name);
        } else {
            let err = result
                .err()
                .unwrap_or_else(|| panic!("{}: accepted", case.name));
            assert!(
                matches!(err, OAuthError::AuthorizationResponse(_)),
                "{}: {err}",
                case.name
            );
            assert!(
                s.auth.token_requests().is_empty(),
                "{}: no code sent anywhere",
                case.name
            );
        }
    }
}

// AUTH-C-14: an error response whose iss fails is rejected without its
// error fields being read; with a valid iss the error is reported.
#[tokio::test]
async fn error_fields_only_after_iss_passes() {
    let s = servers(
        AuthServerConfig {
            deny: true,
            iss: IssMode::Value("https://evil.example.com".into()),
            ..Default::default()
        },
        ResourceConfig::default(),
    )
    .await;
    let err = provider(config(&s.mcp)).login().await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, OAuthError::AuthorizationResponse(_)),
        "{text}"
    );
    assert!(
        !text.contains("access_denied") && !text.contains("said no"),
        "{text}"
    );

    s.auth.configure(|c| c.iss = IssMode::Correct);
    let err = provider(config(&s.mcp)).login().await.unwrap_err();
    assert!(
        matches!(&err, OAuthError::Refused { error, .. } if error == "access_denied"),
        "{err}"
    );
}
