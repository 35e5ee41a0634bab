//! OAuth for the `auth/*` scenarios: the library's [`OAuthProvider`] as the
//! HTTP transport's authorization hook, configured from what the scenario
//! hands over, so the suite judges the same discovery, registration, PKCE,
//! `iss`, scope and step-up code every Switchboard user runs.
//!
//! - Authorization code (every scenario but two): a [`HeadlessUserAgent`]
//!   reads the redirect from the suite's authorization endpoint, which
//!   approves at once; no person, no browser, no listener.
//! - Client identity, in the library's order: credentials from
//!   `MCP_CONFORMANCE_CONTEXT` (`client_id`, `client_secret`,
//!   `private_key_pem` + `signing_algorithm`) when the scenario hands them
//!   over; the suite's Client ID Metadata Document URL in
//!   `auth/basic-cimd`; otherwise Dynamic Client Registration.
//! - Client credentials (`auth/client-credentials-basic` and `-jwt`, the
//!   machine-to-machine extension): the context's credentials authenticate
//!   a `client_credentials` grant (secret or `private_key_jwt`).
//!
//! - JWT bearer (`auth/wif-jwt-bearer`, workload identity): the context's
//!   `valid_jwt` is the workload's assertion, `client_id` its client.
//! - Enterprise-managed (`auth/enterprise-managed-authorization`, SEP-990):
//!   the context's ID token is exchanged at its identity provider for an
//!   ID-JAG, presented with the JWT-bearer grant as `client_id`/`client_secret`.
//! - DPoP (`auth/dpop`, `auth/dpop-nonce`): nothing to set up; the library
//!   binds tokens to a key wherever the authorization server offers it.
//!
//! Tokens live in memory only: nothing of a run is written to disk.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use switchboard_oauth::{
    AssertionSource, EnterpriseGrant, Grant, HeadlessUserAgent, IdentityProvider, JwtBearerGrant,
    OAuthConfig, OAuthProvider, PreRegisteredClient, Secret, SigningKey,
};
use switchboard_wire::types::value_kind;

/// The `client_id` the suite expects in `auth/basic-cimd`: its own fixed
/// Client ID Metadata Document URL. Nothing is served there, so it is
/// offered only in the scenario that asks for it; elsewhere the client
/// registers dynamically, which the suite checks further (the
/// `refresh_token` grant type of `auth/offline-access-scope`, say).
pub(crate) const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The scenario that expects a Client ID Metadata Document URL.
const CIMD_SCENARIO: &str = "auth/basic-cimd";

/// The scenarios where the client acts for itself: client credentials.
const CLIENT_CREDENTIALS_SCENARIOS: [&str; 2] = [
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

/// The workload identity scenario: the JWT-bearer grant.
const JWT_BEARER_SCENARIO: &str = "auth/wif-jwt-bearer";

/// The enterprise-managed authorization scenario (SEP-990).
const ENTERPRISE_SCENARIO: &str = "auth/enterprise-managed-authorization";

/// Whether `scenario` runs behind OAuth.
pub(crate) fn is_auth_scenario(scenario: &str) -> bool {
    scenario.starts_with("auth/")
}

/// The OAuth client for `scenario` against the MCP server at `url`, and a
/// line saying how it is set up (for the transcript; nothing secret).
///
/// # Errors
/// Context fields of the wrong type, a key that does not parse, a client
/// credentials scenario without a `client_id`, or a provider the library
/// refuses to build.
pub(crate) fn provider(
    scenario: &str,
    url: &str,
    context: &Value,
    timeout: Duration,
) -> anyhow::Result<(OAuthProvider, String)> {
    let client = credentials(context)?;
    let mut config = OAuthConfig::new("conformance", url)
        .client_name("switchboard-conformance-client")
        .timeout(timeout);
    let setup;
    if CLIENT_CREDENTIALS_SCENARIOS.contains(&scenario) {
        let Some(client) = client else {
            bail!("{scenario} needs a client_id in MCP_CONFORMANCE_CONTEXT");
        };
        setup = format!(
            "client credentials grant as {} ({})",
            client.client_id,
            authentication(&client)
        );
        config = config.grant(Grant::ClientCredentials(client));
    } else if scenario == JWT_BEARER_SCENARIO {
        let (Some(client), Some(jwt)) = (client, field(context, "valid_jwt")?) else {
            bail!("{scenario} needs client_id and valid_jwt in MCP_CONFORMANCE_CONTEXT");
        };
        setup = format!("JWT bearer grant as {}", client.client_id);
        config = config.grant(Grant::JwtBearer(JwtBearerGrant {
            client,
            assertion: AssertionSource::Value(Secret::new(jwt)),
        }));
    } else if scenario == ENTERPRISE_SCENARIO {
        let need = |name: &str| -> anyhow::Result<&str> {
            field(context, name)?
                .with_context(|| format!("{scenario} needs {name} in MCP_CONFORMANCE_CONTEXT"))
        };
        let Some(client) = client else {
            bail!("{scenario} needs a client_id in MCP_CONFORMANCE_CONTEXT");
        };
        let idp = IdentityProvider {
            name: "conformance-idp".into(),
            issuer: need("idp_issuer")?.to_owned(),
            token_endpoint: field(context, "idp_token_endpoint")?.map(str::to_owned),
            client: PreRegisteredClient::new(need("idp_client_id")?),
            id_token: AssertionSource::Value(Secret::new(need("idp_id_token")?)),
        };
        setup = format!(
            "enterprise-managed authorization: ID token exchanged at {} for an ID-JAG, JWT bearer grant as {} ({})",
            idp.issuer,
            client.client_id,
            authentication(&client)
        );
        config = config.grant(Grant::EnterpriseManaged(EnterpriseGrant { idp, client }));
    } else {
        config = config.user_agent(Arc::new(HeadlessUserAgent::new()));
        let mut identity = Vec::new();
        let pre_registered = client.is_some();
        if let Some(client) = client {
            identity.push(format!(
                "pre-registered client {} ({})",
                client.client_id,
                authentication(&client)
            ));
            config = config.pre_registered(client);
        }
        if scenario == CIMD_SCENARIO {
            identity.push(format!(
                "client metadata document {CLIENT_METADATA_URL} where supported"
            ));
            config = config.client_metadata_url(CLIENT_METADATA_URL);
        }
        // The library registers only when it has nothing configured for
        // the authorization server.
        if !pre_registered {
            identity.push("dynamic registration".into());
        }
        setup = format!(
            "authorization code grant, headless user agent; client identity: {}",
            identity.join(", else ")
        );
    }
    let provider = OAuthProvider::new(config).context("cannot set up OAuth")?;
    Ok((provider, setup))
}

/// The pre-registered credentials in the scenario's context, if any.
fn credentials(context: &Value) -> anyhow::Result<Option<PreRegisteredClient>> {
    let Some(client_id) = field(context, "client_id")? else {
        return Ok(None);
    };
    let mut client = PreRegisteredClient::new(client_id);
    if let Some(secret) = field(context, "client_secret")? {
        client = client.secret(secret);
    }
    if let Some(pem) = field(context, "private_key_pem")? {
        let algorithm = field(context, "signing_algorithm")?;
        let key = SigningKey::from_pem(pem, algorithm)
            .context("MCP_CONFORMANCE_CONTEXT.private_key_pem")?;
        client = client.signing_key(key);
    }
    Ok(Some(client))
}

/// How the credentials authenticate at the token endpoint, in words.
fn authentication(client: &PreRegisteredClient) -> &'static str {
    if client.signing_key.is_some() {
        "private_key_jwt"
    } else if client.client_secret.is_some() {
        "client secret"
    } else {
        "public client"
    }
}

/// A string member of the context: absent is `None`, anything but a
/// string is an error.
fn field<'a>(context: &'a Value, name: &str) -> anyhow::Result<Option<&'a str>> {
    match context.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => bail!(
            "MCP_CONFORMANCE_CONTEXT.{name} is not a string but {}",
            value_kind(other)
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const URL: &str = "http://localhost:3000/mcp";
    const TIMEOUT: Duration = Duration::from_secs(5);

    fn setup(scenario: &str, context: Value) -> String {
        provider(scenario, URL, &context, TIMEOUT).unwrap().1
    }

    // Context credentials are pre-registered for the code flow; the CIMD URL
    // only where the suite looks for it; DCR otherwise.
    #[test]
    fn identity_follows_the_scenario() {
        assert_eq!(
            setup("auth/metadata-default", Value::Null),
            "authorization code grant, headless user agent; client identity: dynamic registration"
        );
        assert_eq!(
            setup("auth/basic-cimd", json!({"name": "auth/basic-cimd"})),
            format!(
                "authorization code grant, headless user agent; client identity: client metadata document {CLIENT_METADATA_URL} where supported, else dynamic registration"
            )
        );
        assert_eq!(
            setup(
                "auth/pre-registration",
                json!({"name": "auth/pre-registration", "client_id": "pre", "client_secret": "s3cret"})
            ),
            "authorization code grant, headless user agent; client identity: pre-registered client pre (client secret)"
        );
    }

    // The two machine-to-machine scenarios use the client credentials grant
    // with the context's secret or key, and need a client_id.
    #[test]
    fn client_credentials_scenarios() {
        assert_eq!(
            setup(
                "auth/client-credentials-basic",
                json!({"client_id": "svc", "client_secret": "s3cret"})
            ),
            "client credentials grant as svc (client secret)"
        );
        let err = provider(
            "auth/client-credentials-basic",
            URL,
            &json!({"client_secret": "s3cret"}),
            TIMEOUT,
        )
        .unwrap_err();
        assert!(err.to_string().contains("needs a client_id"), "{err:#}");
    }

    // The workload and enterprise scenarios use the JWT-bearer grant, with
    // the context's assertion or ID token, and say what they miss.
    #[test]
    fn assertion_scenarios() {
        assert_eq!(
            setup(
                "auth/wif-jwt-bearer",
                json!({"client_id": "wl", "valid_jwt": "a.b.c"})
            ),
            "JWT bearer grant as wl"
        );
        let text = setup(
            "auth/enterprise-managed-authorization",
            json!({"client_id": "c", "client_secret": "s3cret", "idp_client_id": "i",
                   "idp_id_token": "a.b.c", "idp_issuer": "http://localhost:1"}),
        );
        assert!(
            text.starts_with("enterprise-managed authorization"),
            "{text}"
        );
        assert!(
            !text.contains("s3cret") && !text.contains("a.b.c"),
            "{text}"
        );
        let err = provider(
            "auth/enterprise-managed-authorization",
            URL,
            &json!({"client_id": "c"}),
            TIMEOUT,
        )
        .unwrap_err();
        assert!(err.to_string().contains("idp_issuer"), "{err:#}");
    }

    // A key that does not parse and a non-string field are clear errors,
    // and the secret never appears in them.
    #[test]
    fn bad_context_is_refused_clearly() {
        let err = provider(
            "auth/client-credentials-jwt",
            URL,
            &json!({"client_id": "svc", "private_key_pem": "not a key", "client_secret": "s3cret"}),
            TIMEOUT,
        )
        .unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("private_key_pem"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        let err = provider(
            "auth/pre-registration",
            URL,
            &json!({"client_id": 7}),
            TIMEOUT,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "MCP_CONFORMANCE_CONTEXT.client_id is not a string but a number"
        );
    }
}
