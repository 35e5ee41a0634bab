//! Who is calling: the [`Principal`] an authentication hook derives from a
//! bearer token, and the Protected Resource Metadata document (RFC 9728)
//! that tells OAuth clients where to get one.
//!
//! The HTTP runner calls a [`TokenValidator`] on every request when one is
//! configured: no or bad token → 401 with `WWW-Authenticate: Bearer
//! resource_metadata=…, scope=…`; a token lacking scope → 403
//! `error="insufficient_scope"` (AUTH-S-04…07). On stdio there is no token
//! and the principal is `None` (credentials come from the environment).

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};
use switchboard_wire::JsonObject;

/// The authenticated caller of a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Principal {
    /// Stable identifier of the caller (the token's `sub`, a client id, …).
    pub subject: String,
    /// Scopes the token grants.
    pub scopes: Vec<String>,
    /// Other claims the validator chose to keep.
    pub claims: JsonObject,
}

impl Principal {
    /// A principal with a subject and no scopes.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes: Vec::new(),
            claims: JsonObject::new(),
        }
    }

    /// The same principal with these scopes.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Why a request is not authorized.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No token, or a token that is invalid, expired or meant for another
    /// resource: HTTP 401 with `error="invalid_token"` when a token was sent.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// A valid token without the scopes this request needs: HTTP 403 with
    /// `error="insufficient_scope"` naming every scope needed (AUTH-S-07).
    #[error("insufficient scope: needs {}", .0.join(" "))]
    InsufficientScope(Vec<String>),
}

/// What the request asks for, for per-method or per-tool authorization.
#[derive(Clone, Copy, Debug)]
pub struct AuthRequest<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The tool or prompt name, or resource URI, when the method has one.
    pub name: Option<&'a str>,
}

/// A boxed future, as [`TokenValidator`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Validates bearer tokens for the HTTP runner.
///
/// Implement `validate` to check the token (signature, expiry, audience =
/// this server, AUTH-S-04) and say who it belongs to; optionally implement
/// `authorize` to require scopes per method or tool.
pub trait TokenValidator: Send + Sync + 'static {
    /// Checks a bearer token.
    ///
    /// # Errors
    /// [`AuthError::Unauthorized`] for a token that must not be accepted.
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>>;

    /// Decides whether `principal` may make this request; the default
    /// allows everything.
    ///
    /// # Errors
    /// [`AuthError::InsufficientScope`] with every scope needed.
    fn authorize(&self, principal: &Principal, request: &AuthRequest<'_>) -> Result<(), AuthError> {
        let _ = (principal, request);
        Ok(())
    }
}

/// The Protected Resource Metadata of this server (RFC 9728; AUTH-S-01).
#[derive(Clone, Debug, PartialEq)]
pub struct ProtectedResource {
    /// The canonical URI of the MCP endpoint, e.g. `https://api.example.com/mcp`.
    pub resource: String,
    /// Issuer URLs of the authorization servers (at least one).
    pub authorization_servers: Vec<String>,
    /// Scopes this server understands.
    pub scopes_supported: Vec<String>,
    /// Other metadata members.
    pub extra: JsonObject,
}

impl ProtectedResource {
    /// Metadata for `resource` trusting one authorization server.
    pub fn new(resource: impl Into<String>, authorization_server: impl Into<String>) -> Self {
        ProtectedResource {
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
            extra: JsonObject::new(),
        }
    }

    /// The same metadata listing these scopes.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The JSON document.
    pub fn document(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Value::Object(map) = &mut doc {
            for (k, v) in &self.extra {
                map.insert(k.clone(), v.clone());
            }
        }
        doc
    }

    /// The path-inserted well-known path of the document (RFC 9728 §3.1),
    /// e.g. `/.well-known/oauth-protected-resource/mcp`.
    pub fn well_known_path(&self) -> String {
        let path = split_url(&self.resource).1;
        let path = path.trim_end_matches('/');
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The absolute URL of the document, as `resource_metadata` in
    /// challenges (AUTH-S-02).
    pub fn metadata_url(&self) -> String {
        let (origin, _) = split_url(&self.resource);
        format!("{origin}{}", self.well_known_path())
    }

    /// The `WWW-Authenticate` value for a failure.
    pub(crate) fn challenge(&self, error: &AuthError, had_token: bool) -> String {
        let mut parts = vec![format!(
            "resource_metadata=\"{}\"",
            quote(&self.metadata_url())
        )];
        match error {
            AuthError::Unauthorized(description) => {
                if !self.scopes_supported.is_empty() {
                    parts.push(format!(
                        "scope=\"{}\"",
                        quote(&self.scopes_supported.join(" "))
                    ));
                }
                if had_token {
                    parts.push("error=\"invalid_token\"".to_owned());
                    parts.push(format!("error_description=\"{}\"", quote(description)));
                }
            }
            AuthError::InsufficientScope(scopes) => {
                parts.push("error=\"insufficient_scope\"".to_owned());
                parts.push(format!("scope=\"{}\"", quote(&scopes.join(" "))));
            }
        }
        format!("Bearer {}", parts.join(", "))
    }
}

/// Splits `scheme://authority/path?query` into origin and path.
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => {
            let (origin, rest) = url.split_at(after_scheme + i);
            let path = rest.split(['?', '#']).next().unwrap_or("");
            (origin, path)
        }
        None => (url, ""),
    }
}

fn quote(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_location_is_path_inserted() {
        let prm = ProtectedResource::new("https://api.example.com/mcp", "https://auth.example.com")
            .with_scopes(["files:read"]);
        assert_eq!(
            prm.well_known_path(),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            prm.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let doc = prm.document();
        assert_eq!(doc["authorization_servers"][0], "https://auth.example.com");
        assert_eq!(doc["scopes_supported"][0], "files:read");
    }

    // AUTH-S-03/07: challenges carry resource_metadata and the needed scope.
    #[test]
    fn challenges() {
        let prm = ProtectedResource::new("http://127.0.0.1:9/mcp", "http://127.0.0.1:8")
            .with_scopes(["a", "b"]);
        let c = prm.challenge(&AuthError::Unauthorized("no token".into()), false);
        assert_eq!(
            c,
            "Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\", scope=\"a b\""
        );
        let c = prm.challenge(&AuthError::InsufficientScope(vec!["b".into()]), true);
        assert!(c.contains("error=\"insufficient_scope\""));
        assert!(c.contains("scope=\"b\""));
    }
}
