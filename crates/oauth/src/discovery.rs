//! Finding the authorization server: Protected Resource Metadata (RFC 9728)
//! from the challenge's `resource_metadata` or the well-known URLs, then the
//! authorization server's metadata (RFC 8414 / OpenID Connect Discovery) in
//! the spec's order, with the issuer check.

use serde::Deserialize;
use serde_json::Value;

use super::error::OAuthError;
use super::http::{OAuthHttp, shown};
use super::uri::HttpUrl;

const PRM: &str = "protected resource metadata";
const ASM: &str = "authorization server metadata";

/// The parts of an RFC 9728 Protected Resource Metadata document the client
/// uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier (checked to name the server we talk to).
    pub resource: String,
    /// Issuers of the authorization servers, in the server's order.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`, when given.
    pub scopes_supported: Option<Vec<String>>,
    /// Where the document was fetched.
    pub url: String,
}

/// The parts of an authorization server's metadata (RFC 8414, or OpenID
/// Connect Discovery) the client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationServerMetadata {
    /// The issuer, identical to the one the metadata URL was built from.
    pub issuer: String,
    /// `authorization_endpoint`.
    pub authorization_endpoint: Option<String>,
    /// `token_endpoint`.
    pub token_endpoint: Option<String>,
    /// `registration_endpoint` (Dynamic Client Registration).
    pub registration_endpoint: Option<String>,
    /// `revocation_endpoint` (RFC 7009).
    pub revocation_endpoint: Option<String>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    /// `grant_types_supported`.
    pub grant_types_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported`; PKCE needs `S256` here.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported`.
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// `client_id_metadata_document_supported`.
    pub client_id_metadata_document_supported: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9449 §5.1): present when the
    /// server binds tokens to a DPoP key.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// `jwks_uri`: the keys that sign its access tokens (for a resource
    /// server checking them).
    pub jwks_uri: Option<String>,
    /// `introspection_endpoint` (RFC 7662).
    pub introspection_endpoint: Option<String>,
    /// Where the document was fetched.
    pub url: String,
}

impl AuthorizationServerMetadata {
    /// Whether DPoP with ES256 (the client's algorithm) is advertised.
    pub fn supports_dpop_es256(&self) -> bool {
        self.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "ES256"))
    }

    /// Whether PKCE with S256 is advertised (AUTH-C-11).
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }

    /// Whether `scope` is listed in `scopes_supported`.
    pub fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == scope))
    }
}

#[derive(Deserialize)]
struct RawPrm {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Option<Vec<String>>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct RawAsm {
    issuer: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    registration_endpoint: Option<String>,
    revocation_endpoint: Option<String>,
    scopes_supported: Option<Vec<String>>,
    grant_types_supported: Option<Vec<String>>,
    code_challenge_methods_supported: Option<Vec<String>>,
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    authorization_response_iss_parameter_supported: Option<bool>,
    client_id_metadata_document_supported: Option<bool>,
    dpop_signing_alg_values_supported: Option<Vec<String>>,
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
}

/// Fetches the Protected Resource Metadata of the server at `server`: from
/// `hint` (the challenge's `resource_metadata`) when given, else from the
/// well-known URLs, path-inserted first (AUTH-C-02). The document must name
/// this server as its resource (AUTH-C-16).
///
/// # Errors
/// [`OAuthError::ResourceMismatch`] when it names another resource,
/// [`OAuthError::NotFound`] when there is none, [`OAuthError::InvalidDocument`]
/// for a broken one, [`OAuthError::Http`] when the server cannot be reached.
pub(crate) async fn protected_resource_metadata(
    http: &OAuthHttp,
    server: &HttpUrl,
    hint: Option<&str>,
) -> Result<ProtectedResourceMetadata, OAuthError> {
    if let Some(url) = hint {
        http.check_url(url, PRM)?;
        let reply = http.get_json(url).await?;
        if !reply.is_success() {
            return Err(OAuthError::NotFound(format!(
                "the protected resource metadata named by the server's challenge ({}) answered HTTP {}",
                shown(url),
                reply.status
            )));
        }
        return parse_prm(url, &reply.body, server);
    }
    let candidates = server.protected_resource_metadata_urls();
    let mut last = None;
    for url in &candidates {
        let reply = http.get_json(url).await?;
        if !reply.is_success() {
            tracing::debug!(url = %url, status = reply.status, "no protected resource metadata here");
            continue;
        }
        match parse_prm(url, &reply.body, server) {
            Ok(prm) => return Ok(prm),
            Err(e @ OAuthError::ResourceMismatch { .. }) => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        OAuthError::NotFound(format!(
            "the server asked for authorization but publishes no protected resource metadata (tried {})",
            candidates.join(", ")
        ))
    }))
}

pub(crate) fn parse_prm(
    url: &str,
    body: &[u8],
    server: &HttpUrl,
) -> Result<ProtectedResourceMetadata, OAuthError> {
    let invalid = |reason: String| OAuthError::InvalidDocument {
        what: PRM,
        url: shown(url),
        reason,
    };
    let raw: RawPrm = parse_object(body).map_err(invalid)?;
    let resource = raw
        .resource
        .ok_or_else(|| invalid("it has no \"resource\"".into()))?;
    let covers = HttpUrl::parse(&resource)
        .map(|r| r.covers(server))
        .unwrap_or(false);
    if !covers {
        return Err(OAuthError::ResourceMismatch {
            url: shown(url),
            expected: server.canonical(),
            found: resource,
        });
    }
    let authorization_servers = raw
        .authorization_servers
        .filter(|a| !a.is_empty())
        .ok_or_else(|| invalid("it lists no \"authorization_servers\"".into()))?;
    Ok(ProtectedResourceMetadata {
        resource,
        authorization_servers,
        scopes_supported: raw.scopes_supported,
        url: url.to_owned(),
    })
}

/// Fetches the metadata of the authorization server `issuer`, trying the
/// RFC 8414 and OpenID Connect URLs in the spec's order (AUTH-C-03). A
/// document whose `issuer` is not exactly `issuer` is never used
/// (AUTH-C-04); the next URL is tried.
///
/// # Errors
/// [`OAuthError::IssuerMismatch`] when only mismatching documents were
/// found, [`OAuthError::NotFound`] when none were, [`OAuthError::Http`] when
/// the server cannot be reached.
pub(crate) async fn authorization_server_metadata(
    http: &OAuthHttp,
    issuer: &str,
) -> Result<AuthorizationServerMetadata, OAuthError> {
    let parsed = http.check_url(issuer, "issuer")?;
    if parsed.query().is_some() || parsed.has_fragment() {
        return Err(OAuthError::InvalidDocument {
            what: "issuer",
            url: shown(issuer),
            reason: "an issuer has no query or fragment (RFC 8414 §2)".into(),
        });
    }
    let candidates = parsed.authorization_server_metadata_urls();
    let mut mismatch = None;
    let mut invalid = None;
    for url in &candidates {
        let reply = http.get_json(url).await?;
        if !reply.is_success() {
            tracing::debug!(url = %url, status = reply.status, "no authorization server metadata here");
            continue;
        }
        match parse_asm(url, &reply.body, issuer) {
            Ok(metadata) => return Ok(metadata),
            Err(e @ OAuthError::IssuerMismatch { .. }) => {
                tracing::warn!(error = %e, "ignoring authorization server metadata");
                mismatch.get_or_insert(e);
            }
            Err(e) => {
                invalid.get_or_insert(e);
            }
        }
    }
    Err(mismatch.or(invalid).unwrap_or_else(|| {
        OAuthError::NotFound(format!(
            "authorization server {issuer} publishes no metadata (tried {})",
            candidates.join(", ")
        ))
    }))
}

pub(crate) fn parse_asm(
    url: &str,
    body: &[u8],
    issuer: &str,
) -> Result<AuthorizationServerMetadata, OAuthError> {
    let invalid = |reason: String| OAuthError::InvalidDocument {
        what: ASM,
        url: shown(url),
        reason,
    };
    let raw: RawAsm = parse_object(body).map_err(invalid)?;
    let found = raw
        .issuer
        .ok_or_else(|| invalid("it has no \"issuer\"".into()))?;
    // Simple string comparison: no normalisation of either side.
    if found != issuer {
        return Err(OAuthError::IssuerMismatch {
            url: shown(url),
            expected: issuer.to_owned(),
            found,
        });
    }
    Ok(AuthorizationServerMetadata {
        issuer: found,
        authorization_endpoint: raw.authorization_endpoint,
        token_endpoint: raw.token_endpoint,
        registration_endpoint: raw.registration_endpoint,
        revocation_endpoint: raw.revocation_endpoint,
        scopes_supported: raw.scopes_supported,
        grant_types_supported: raw.grant_types_supported,
        code_challenge_methods_supported: raw.code_challenge_methods_supported,
        token_endpoint_auth_methods_supported: raw.token_endpoint_auth_methods_supported,
        authorization_response_iss_parameter_supported: raw
            .authorization_response_iss_parameter_supported
            .unwrap_or(false),
        client_id_metadata_document_supported: raw
            .client_id_metadata_document_supported
            .unwrap_or(false),
        dpop_signing_alg_values_supported: raw.dpop_signing_alg_values_supported,
        jwks_uri: raw.jwks_uri,
        introspection_endpoint: raw.introspection_endpoint,
        url: url.to_owned(),
    })
}

fn parse_object<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| format!("it is not JSON: {e}"))?;
    if !value.is_object() {
        return Err("it is not a JSON object".into());
    }
    serde_json::from_value(value).map_err(|e| format!("a member has the wrong type: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> HttpUrl {
        HttpUrl::parse("http://localhost:3000/mcp").unwrap()
    }

    #[test]
    fn prm_must_name_this_server() {
        let ok = br#"{"resource":"http://localhost:3000/mcp","authorization_servers":["http://as"],"scopes_supported":["a"]}"#;
        let prm = parse_prm("http://x/prm", ok, &server()).unwrap();
        assert_eq!(prm.authorization_servers, ["http://as"]);
        assert_eq!(prm.scopes_supported.unwrap(), ["a"]);
        let evil =
            br#"{"resource":"https://evil.example.com/mcp","authorization_servers":["http://as"]}"#;
        assert!(matches!(
            parse_prm("http://x/prm", evil, &server()),
            Err(OAuthError::ResourceMismatch { .. })
        ));
        let garbage = br#"{"resource":"not a url","authorization_servers":["http://as"]}"#;
        assert!(matches!(
            parse_prm("http://x/prm", garbage, &server()),
            Err(OAuthError::ResourceMismatch { .. })
        ));
    }

    #[test]
    fn prm_needs_resource_and_servers() {
        for body in [
            &br#"{"authorization_servers":["http://as"]}"#[..],
            br#"{"resource":"http://localhost:3000/mcp"}"#,
            br#"{"resource":"http://localhost:3000/mcp","authorization_servers":[]}"#,
            br#"{"resource":"http://localhost:3000/mcp","authorization_servers":"http://as"}"#,
            br#"[1]"#,
            b"not json",
        ] {
            assert!(
                matches!(
                    parse_prm("http://x/prm", body, &server()),
                    Err(OAuthError::InvalidDocument { .. })
                ),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    // AUTH-C-04: exact string comparison, no normalisation.
    #[test]
    fn metadata_issuer_must_be_identical() {
        let doc = |issuer: &str| {
            format!(
                r#"{{"issuer":"{issuer}","authorization_endpoint":"http://as/a","token_endpoint":"http://as/t","code_challenge_methods_supported":["S256"]}}"#
            )
        };
        let m = parse_asm(
            "http://as/.well-known/x",
            doc("http://as").as_bytes(),
            "http://as",
        )
        .unwrap();
        assert!(m.supports_s256());
        assert!(!m.authorization_response_iss_parameter_supported);
        for other in ["http://as/", "HTTP://as", "https://attacker.example.com"] {
            assert!(matches!(
                parse_asm(
                    "http://as/.well-known/x",
                    doc(other).as_bytes(),
                    "http://as"
                ),
                Err(OAuthError::IssuerMismatch { .. })
            ));
        }
    }

    #[test]
    fn s256_must_be_listed() {
        let m = |methods: &str| {
            parse_asm("u", format!(r#"{{"issuer":"i"{methods}}}"#).as_bytes(), "i")
                .unwrap()
                .supports_s256()
        };
        assert!(!m(""));
        assert!(!m(r#","code_challenge_methods_supported":["plain"]"#));
        assert!(m(r#","code_challenge_methods_supported":["plain","S256"]"#));
    }
}
