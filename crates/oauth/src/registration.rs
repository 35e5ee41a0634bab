//! Client identity: pre-registered credentials, Client ID Metadata Documents
//! and Dynamic Client Registration (RFC 7591), in the spec's order of
//! preference (AUTH-C-06), with credentials bound to the issuer that issued
//! them (AUTH-C-10).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::discovery::AuthorizationServerMetadata;
use super::error::OAuthError;
use super::http::{OAuthHttp, shown};
use super::jwt::SigningKey;
use super::secret::Secret;
use super::token::{TokenEndpointAuthMethod as Method, now_secs, oauth_error, sanitize};
use super::uri::HttpUrl;

/// Client credentials registered with an authorization server beforehand
/// (configuration, or the conformance suite's context).
#[derive(Clone, Debug)]
pub struct PreRegisteredClient {
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    pub client_secret: Option<Secret>,
    /// The issuer these credentials belong to. `None` binds them to the
    /// first authorization server the resource names, and they are refused
    /// if the resource later names another (AUTH-C-10).
    pub issuer: Option<String>,
    /// The token endpoint authentication method; chosen from the server's
    /// metadata when `None`.
    pub auth_method: Option<Method>,
    /// The key for `private_key_jwt`.
    pub signing_key: Option<Arc<SigningKey>>,
}

impl PreRegisteredClient {
    /// Credentials with `client_id` and nothing else (a public client).
    pub fn new(client_id: impl Into<String>) -> PreRegisteredClient {
        PreRegisteredClient {
            client_id: client_id.into(),
            client_secret: None,
            issuer: None,
            auth_method: None,
            signing_key: None,
        }
    }

    /// Adds the client secret.
    pub fn secret(mut self, secret: impl Into<Secret>) -> PreRegisteredClient {
        self.client_secret = Some(secret.into());
        self
    }

    /// Binds the credentials to `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> PreRegisteredClient {
        self.issuer = Some(issuer.into());
        self
    }

    /// Fixes the token endpoint authentication method.
    pub fn auth_method(mut self, method: Method) -> PreRegisteredClient {
        self.auth_method = Some(method);
        self
    }

    /// Authenticates with `private_key_jwt` using `key`.
    pub fn signing_key(mut self, key: SigningKey) -> PreRegisteredClient {
        self.signing_key = Some(Arc::new(key));
        self.auth_method.get_or_insert(Method::PrivateKeyJwt);
        self
    }
}

/// A client registered through Dynamic Client Registration, kept per issuer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// The issued client id.
    pub client_id: String,
    /// The issued secret, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// The token endpoint authentication method registered.
    pub method: Method,
    /// The redirect URIs registered.
    pub redirect_uris: Vec<String>,
    /// When the secret expires (seconds since the epoch; absent or 0: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
}

impl Registration {
    /// Whether this registration can serve a flow redirecting to
    /// `redirect_uri` now.
    pub(crate) fn usable_for(&self, redirect_uri: Option<&str>) -> bool {
        let secret_live = self
            .client_secret_expires_at
            .is_none_or(|at| at == 0 || at > now_secs() + 60);
        let redirect_ok = redirect_uri.is_none_or(|r| self.redirect_uris.iter().any(|u| u == r));
        secret_live && redirect_ok
    }
}

/// What the client says about itself when registering.
#[derive(Clone, Debug)]
pub(crate) struct RegistrationRequest<'a> {
    pub(crate) client_name: &'a str,
    pub(crate) redirect_uri: &'a str,
    pub(crate) refresh_tokens: bool,
    pub(crate) scope: Option<String>,
}

/// Registers with the authorization server's `registration_endpoint`.
///
/// # Errors
/// [`OAuthError::Refused`] when the server refuses (a hint about redirect
/// URI constraints is added for `invalid_redirect_uri`, AUTH-C-09),
/// [`OAuthError::InvalidDocument`] for a malformed answer.
pub(crate) async fn register(
    http: &OAuthHttp,
    metadata: &AuthorizationServerMetadata,
    endpoint: &str,
    request: &RegistrationRequest<'_>,
) -> Result<Registration, OAuthError> {
    let method = dcr_method(metadata.token_endpoint_auth_methods_supported.as_deref())?;
    let mut grant_types = vec!["authorization_code"];
    if request.refresh_tokens {
        grant_types.push("refresh_token");
    }
    let mut body = json!({
        "client_name": request.client_name,
        "redirect_uris": [request.redirect_uri],
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": method.as_str(),
        "application_type": application_type(request.redirect_uri),
        "software_id": "switchboard",
        "software_version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(scope) = &request.scope {
        body["scope"] = json!(scope);
    }
    let reply = http.post_json(endpoint, &body).await?;
    let invalid = |reason: String| OAuthError::InvalidDocument {
        what: "client registration response",
        url: shown(endpoint),
        reason,
    };
    if !reply.is_success() {
        return Err(match oauth_error("registration", &reply) {
            Some(OAuthError::Refused {
                endpoint,
                error,
                description,
            }) if error == "invalid_redirect_uri" || error == "invalid_client_metadata" => {
                OAuthError::Refused {
                    endpoint,
                    description: Some(format!(
                        "{}the server rejected redirect URI {} for an application_type {:?} client",
                        description.map(|d| format!("{d}; ")).unwrap_or_default(),
                        request.redirect_uri,
                        application_type(request.redirect_uri)
                    )),
                    error,
                }
            }
            Some(e) => e,
            None => invalid(format!("HTTP {} without an OAuth error", reply.status)),
        });
    }
    let object = reply.json_object().map_err(invalid)?;
    let client_id = object
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("it has no client_id".into()))?
        .to_owned();
    let client_secret = object
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(Secret::new);
    let registered = match object.get("token_endpoint_auth_method").and_then(Value::as_str) {
        Some(name) => Method::parse(name).ok_or_else(|| {
            OAuthError::Unsupported(format!(
                "the authorization server registered the client for token endpoint authentication {:?}, which is not supported",
                sanitize(name)
            ))
        })?,
        None => method,
    };
    // A secret method without a secret cannot work; a public registration
    // that came back with a secret stays public.
    let registered = match (registered, &client_secret) {
        (Method::ClientSecretBasic | Method::ClientSecretPost, None) => Method::None,
        (m, _) => m,
    };
    if registered == Method::PrivateKeyJwt {
        return Err(OAuthError::Unsupported(
            "the authorization server registered the client for private_key_jwt, but no key was registered".into(),
        ));
    }
    let redirect_uris = object
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| vec![request.redirect_uri.to_owned()]);
    Ok(Registration {
        client_id,
        client_secret,
        method: registered,
        redirect_uris,
        client_secret_expires_at: object
            .get("client_secret_expires_at")
            .and_then(Value::as_u64),
    })
}

/// The authentication method to register with: a public client (`none`,
/// PKCE protects the code) when the server allows it, else a secret.
pub(crate) fn dcr_method(supported: Option<&[String]>) -> Result<Method, OAuthError> {
    let Some(list) = supported else {
        // RFC 8414 §2: absent means client_secret_basic.
        return Ok(Method::ClientSecretBasic);
    };
    let has = |m: Method| list.iter().any(|s| s == m.as_str());
    [Method::None, Method::ClientSecretBasic, Method::ClientSecretPost]
        .into_iter()
        .find(|m| has(*m))
        .ok_or_else(|| {
            OAuthError::Unsupported(format!(
                "the authorization server supports no token endpoint authentication this client can register with ({})",
                list.join(", ")
            ))
        })
}

/// The method for configured credentials: the configured one, else one the
/// server lists that fits what we hold.
pub(crate) fn method_for(
    client: &PreRegisteredClient,
    supported: Option<&[String]>,
) -> Result<Method, OAuthError> {
    if let Some(m) = client.auth_method {
        return Ok(m);
    }
    if client.signing_key.is_some() {
        return Ok(Method::PrivateKeyJwt);
    }
    if client.client_secret.is_none() {
        return Ok(Method::None);
    }
    let Some(list) = supported else {
        return Ok(Method::ClientSecretBasic);
    };
    let has = |m: Method| list.iter().any(|s| s == m.as_str());
    [Method::ClientSecretBasic, Method::ClientSecretPost, Method::None]
        .into_iter()
        .find(|m| has(*m))
        .ok_or_else(|| {
            OAuthError::Unsupported(format!(
                "the authorization server supports no token endpoint authentication usable with a client secret ({})",
                list.join(", ")
            ))
        })
}

/// `native` for loopback and custom-scheme redirects (CLI and desktop
/// clients), `web` for a remote HTTPS redirect (AUTH-C-09).
pub(crate) fn application_type(redirect_uri: &str) -> &'static str {
    match HttpUrl::parse(redirect_uri) {
        Ok(url) if !url.is_loopback() => "web",
        _ => "native",
    }
}

/// Checks a Client ID Metadata Document URL: HTTPS with a path (AUTH-C-08).
pub(crate) fn check_metadata_document_url(url: &str) -> Result<(), OAuthError> {
    let parsed = HttpUrl::parse(url)
        .map_err(|e| OAuthError::Config(format!("client metadata URL {url:?}: {e}")))?;
    if parsed.scheme() != "https" || parsed.trimmed_path().is_empty() || parsed.has_fragment() {
        return Err(OAuthError::Config(format!(
            "client metadata URL {url:?} must be an https URL with a path and no fragment"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn dcr_prefers_a_public_client() {
        assert_eq!(dcr_method(None).unwrap(), Method::ClientSecretBasic);
        assert_eq!(
            dcr_method(Some(&list(&["client_secret_basic", "none"]))).unwrap(),
            Method::None
        );
        assert_eq!(
            dcr_method(Some(&list(&["client_secret_basic"]))).unwrap(),
            Method::ClientSecretBasic
        );
        assert_eq!(
            dcr_method(Some(&list(&["client_secret_post"]))).unwrap(),
            Method::ClientSecretPost
        );
        assert!(dcr_method(Some(&list(&["private_key_jwt"]))).is_err());
    }

    #[test]
    fn configured_credentials_pick_a_fitting_method() {
        let public = PreRegisteredClient::new("c");
        assert_eq!(
            method_for(&public, Some(&list(&["client_secret_basic"]))).unwrap(),
            Method::None
        );
        let secret = PreRegisteredClient::new("c").secret("s");
        assert_eq!(
            method_for(&secret, None).unwrap(),
            Method::ClientSecretBasic
        );
        assert_eq!(
            method_for(&secret, Some(&list(&["client_secret_post"]))).unwrap(),
            Method::ClientSecretPost
        );
        assert_eq!(
            method_for(
                &secret,
                Some(&list(&["client_secret_post", "client_secret_basic"]))
            )
            .unwrap(),
            Method::ClientSecretBasic
        );
        assert!(method_for(&secret, Some(&list(&["private_key_jwt"]))).is_err());
        let fixed = PreRegisteredClient::new("c")
            .secret("s")
            .auth_method(Method::ClientSecretPost);
        assert_eq!(
            method_for(&fixed, Some(&list(&["client_secret_basic"]))).unwrap(),
            Method::ClientSecretPost
        );
    }

    #[test]
    fn application_types() {
        assert_eq!(application_type("http://127.0.0.1:4000/callback"), "native");
        assert_eq!(application_type("http://localhost/callback"), "native");
        assert_eq!(application_type("com.example.app:/callback"), "native");
        assert_eq!(application_type("https://app.example.com/callback"), "web");
    }

    #[test]
    fn metadata_document_urls() {
        assert!(
            check_metadata_document_url("https://conformance-test.local/client-metadata.json")
                .is_ok()
        );
        for bad in [
            "http://x.example/c.json",
            "https://x.example",
            "https://x.example/",
            "https://x.example/c#f",
            "c.json",
        ] {
            assert!(check_metadata_document_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn registrations_are_reused_only_when_they_fit() {
        let r = Registration {
            client_id: "c".into(),
            client_secret: None,
            method: Method::None,
            redirect_uris: list(&["http://127.0.0.1:5000/callback"]),
            client_secret_expires_at: Some(0),
        };
        assert!(r.usable_for(Some("http://127.0.0.1:5000/callback")));
        assert!(!r.usable_for(Some("http://127.0.0.1:5001/callback")));
        let expired = Registration {
            client_secret_expires_at: Some(1),
            ..r.clone()
        };
        assert!(!expired.usable_for(None));
    }
}
