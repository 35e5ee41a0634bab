//! The token endpoint: client authentication (`client_secret_basic`,
//! `client_secret_post`, `none`, `private_key_jwt`), the three grants the
//! client uses (authorization code, refresh token, client credentials) and
//! the response rules.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::HeaderValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dpop::{DpopKey, USE_DPOP_NONCE};
use super::error::OAuthError;
use super::http::{OAuthHttp, Reply, shown};
use super::jwt::SigningKey;
use super::secret::Secret;
pub(crate) use switchboard_wire::shared::unix_secs as now_secs;

/// How the client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenEndpointAuthMethod {
    /// A public client: `client_id` in the body, no secret.
    None,
    /// HTTP Basic with the form-urlencoded id and secret (RFC 6749 §2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// A signed JWT client assertion (RFC 7523).
    PrivateKeyJwt,
}

impl TokenEndpointAuthMethod {
    /// The registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuthMethod::None => "none",
            TokenEndpointAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuthMethod::ClientSecretPost => "client_secret_post",
            TokenEndpointAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// Parses a registered name.
    pub fn parse(name: &str) -> Option<TokenEndpointAuthMethod> {
        Some(match name {
            "none" => TokenEndpointAuthMethod::None,
            "client_secret_basic" => TokenEndpointAuthMethod::ClientSecretBasic,
            "client_secret_post" => TokenEndpointAuthMethod::ClientSecretPost,
            "private_key_jwt" => TokenEndpointAuthMethod::PrivateKeyJwt,
            _ => return None,
        })
    }
}

impl fmt::Display for TokenEndpointAuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a client identity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentitySource {
    /// Configured credentials.
    PreRegistered,
    /// A Client ID Metadata Document URL.
    MetadataDocument,
    /// Dynamic Client Registration.
    Dynamic,
}

/// The client identity used with one authorization server.
#[derive(Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) client_id: String,
    pub(crate) secret: Option<Secret>,
    pub(crate) method: TokenEndpointAuthMethod,
    pub(crate) key: Option<Arc<SigningKey>>,
    pub(crate) source: IdentitySource,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("client_id", &self.client_id)
            .field("method", &self.method)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Tokens from one authorization server for one resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token, sent as `Authorization: Bearer`.
    pub access_token: Secret,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires (seconds since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted, as the token response reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_scope: Option<String>,
    /// The scopes requested.
    #[serde(default)]
    pub requested_scope: Vec<String>,
    /// The issuer that issued the tokens.
    pub issuer: String,
    /// The client id the tokens were issued to.
    pub client_id: String,
    /// The `resource` they were requested for.
    pub resource: String,
    /// When they were obtained (seconds since the Unix epoch).
    pub obtained_at: u64,
    /// The DPoP key the access token is bound to (RFC 9449; PKCS#8,
    /// base64url): the token is sent as `Authorization: DPoP` with a proof
    /// signed by it. `None`: a Bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
    /// The OpenID Connect ID token, when the token endpoint issued one (a
    /// login at an enterprise identity provider keeps it for the
    /// enterprise-managed grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<Secret>,
}

impl TokenSet {
    /// Whether the access token is expired or expires within `skew_secs`.
    pub fn is_expired(&self, skew_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|at| now_secs().saturating_add(skew_secs) >= at)
    }

    /// The scopes the token is known to carry: the granted ones when the
    /// server reported them, else the requested ones (RFC 6749 §5.1).
    pub fn scopes(&self) -> Vec<String> {
        match &self.granted_scope {
            Some(s) => super::challenge::split_scope(s),
            None => self.requested_scope.clone(),
        }
    }
}

/// The fixed inputs of one token request.
pub(crate) struct TokenRequest<'a> {
    pub(crate) endpoint: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) client: &'a ClientIdentity,
    pub(crate) resource: &'a str,
    pub(crate) requested_scope: &'a [String],
    /// The DPoP key to prove possession of (RFC 9449 §5), if any.
    pub(crate) dpop: Option<&'a DpopKey>,
}

/// Sends a token request with the grant-specific `form` and the client's
/// authentication, and reads the response.
///
/// # Errors
/// [`OAuthError::Refused`] for an OAuth error answer,
/// [`OAuthError::InvalidDocument`] for a malformed one,
/// [`OAuthError::Unsupported`] for a token type other than Bearer.
pub(crate) async fn request(
    http: &OAuthHttp,
    req: &TokenRequest<'_>,
    form: Vec<(&'static str, String)>,
    previous_refresh: Option<&Secret>,
) -> Result<TokenSet, OAuthError> {
    let mut form = form;
    let mut authorization = None;
    let client = req.client;
    match client.method {
        TokenEndpointAuthMethod::None => form.push(("client_id", client.client_id.clone())),
        TokenEndpointAuthMethod::ClientSecretBasic => {
            let secret = client.secret.as_ref().ok_or_else(|| {
                OAuthError::Config(format!(
                    "client {:?} uses client_secret_basic but has no secret",
                    client.client_id
                ))
            })?;
            authorization = Some(basic_header(&client.client_id, secret)?);
        }
        TokenEndpointAuthMethod::ClientSecretPost => {
            let secret = client.secret.as_ref().ok_or_else(|| {
                OAuthError::Config(format!(
                    "client {:?} uses client_secret_post but has no secret",
                    client.client_id
                ))
            })?;
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_secret", secret.expose().to_owned()));
        }
        TokenEndpointAuthMethod::PrivateKeyJwt => {
            let key = client.key.as_ref().ok_or_else(|| {
                OAuthError::Config(format!(
                    "client {:?} uses private_key_jwt but has no signing key",
                    client.client_id
                ))
            })?;
            form.push(("client_id", client.client_id.clone()));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            form.push((
                "client_assertion",
                key.client_assertion(&client.client_id, req.issuer)?,
            ));
        }
    }
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let Some(key) = req.dpop else {
        let reply = http.post_form(req.endpoint, &pairs, authorization).await?;
        return read_response(req, &reply, previous_refresh);
    };
    // RFC 9449 §5, §8: a fresh proof per request; a `use_dpop_nonce`
    // answer is retried once with the server's nonce.
    let mut nonce: Option<String> = None;
    loop {
        let proof = key.proof("POST", req.endpoint, None, nonce.as_deref())?;
        let reply = http
            .post_form_with(req.endpoint, &pairs, authorization.clone(), Some(&proof))
            .await?;
        let offered = reply
            .headers
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let asks_nonce = !reply.is_success()
            && matches!(oauth_error("token", &reply), Some(OAuthError::Refused { error, .. }) if error == USE_DPOP_NONCE);
        match offered {
            Some(offered) if asks_nonce && nonce.is_none() => {
                tracing::debug!(endpoint = %shown(req.endpoint), "the token endpoint asks for a DPoP nonce; retrying with it");
                nonce = Some(offered);
            }
            _ => return read_response(req, &reply, previous_refresh),
        }
    }
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
pub(crate) fn basic_header(client_id: &str, secret: &Secret) -> Result<HeaderValue, OAuthError> {
    let id: String = form_urlencoded::byte_serialize(client_id.as_bytes()).collect();
    let pw: String = form_urlencoded::byte_serialize(secret.expose().as_bytes()).collect();
    let mut value =
        HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(format!("{id}:{pw}"))))
            .map_err(|_| {
                OAuthError::Config("the client credentials cannot form a header".into())
            })?;
    value.set_sensitive(true);
    Ok(value)
}

#[derive(Deserialize)]
struct RawToken {
    access_token: Option<String>,
    token_type: Option<String>,
    expires_in: Option<Value>,
    refresh_token: Option<String>,
    scope: Option<String>,
    id_token: Option<String>,
}

fn read_response(
    req: &TokenRequest<'_>,
    reply: &Reply,
    previous_refresh: Option<&Secret>,
) -> Result<TokenSet, OAuthError> {
    let invalid = |reason: String| OAuthError::InvalidDocument {
        what: "token response",
        url: shown(req.endpoint),
        reason,
    };
    if !reply.is_success() {
        return Err(oauth_error("token", reply)
            .unwrap_or_else(|| invalid(format!("HTTP {} without an OAuth error", reply.status))));
    }
    let object = reply.json_object().map_err(invalid)?;
    let raw: RawToken = serde_json::from_value(Value::Object(object))
        .map_err(|e| invalid(format!("a member has the wrong type: {e}")))?;
    let access = raw
        .access_token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| invalid("it has no access_token".into()))?;
    if !is_header_safe(&access) {
        return Err(invalid(
            "the access token has characters a header cannot carry".into(),
        ));
    }
    // RFC 9449 §5: a DPoP-bound token says so; a server that ignored the
    // proof issues a Bearer token, used as such.
    let dpop_key = match raw.token_type.as_deref() {
        None => None,
        Some(t) if t.eq_ignore_ascii_case("bearer") => None,
        Some(t) if t.eq_ignore_ascii_case("dpop") && req.dpop.is_some() => {
            req.dpop.map(DpopKey::stored)
        }
        Some(other) => {
            return Err(OAuthError::Unsupported(format!(
                "the token endpoint issued a {other:?} token; only Bearer and DPoP tokens are supported"
            )));
        }
    };
    let expires_in = match raw.expires_in {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(_) => return Err(invalid("expires_in is not a number".into())),
    };
    let now = now_secs();
    // A refresh response without a new refresh token keeps the old one
    // (RFC 6749 §6).
    let refresh = raw
        .refresh_token
        .filter(|t| !t.is_empty())
        .map(Secret::new)
        .or_else(|| previous_refresh.cloned());
    Ok(TokenSet {
        access_token: Secret::new(access),
        refresh_token: refresh,
        expires_at: expires_in.map(|s| now.saturating_add(s)),
        granted_scope: raw.scope,
        requested_scope: req.requested_scope.to_vec(),
        issuer: req.issuer.to_owned(),
        client_id: req.client.client_id.clone(),
        resource: req.resource.to_owned(),
        obtained_at: now,
        dpop_key,
        id_token: raw.id_token.filter(|t| !t.is_empty()).map(Secret::new),
    })
}

/// The OAuth error object of a failed answer (RFC 6749 §5.2, RFC 7591 §3.2.2).
pub(crate) fn oauth_error(endpoint: &'static str, reply: &Reply) -> Option<OAuthError> {
    let object = reply.json_object().ok()?;
    let error = object.get("error")?.as_str()?.to_owned();
    let description = object
        .get("error_description")
        .and_then(Value::as_str)
        .map(sanitize);
    Some(OAuthError::Refused {
        endpoint,
        error: sanitize(&error),
        description,
    })
}

/// Keeps server-supplied text printable and short.
pub(crate) fn sanitize(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(300).collect()
}

/// Visible ASCII only: what `Authorization: Bearer …` can carry.
fn is_header_safe(token: &str) -> bool {
    token.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_basic(v: &HeaderValue) -> String {
        let b64 = v.to_str().unwrap().strip_prefix("Basic ").unwrap();
        String::from_utf8(STANDARD.decode(b64).unwrap()).unwrap()
    }

    // RFC 6749 §2.3.1: id and secret are form-urlencoded before Basic.
    #[test]
    fn basic_header_form_encodes_id_and_secret() {
        let v = basic_header(
            "pre-registered-client",
            &Secret::new("pre-registered-secret"),
        )
        .unwrap();
        assert_eq!(
            decode_basic(&v),
            "pre-registered-client:pre-registered-secret"
        );
        assert!(v.is_sensitive());
        let v = basic_header("my client:1", &Secret::new("p@ss w+rd/é")).unwrap();
        assert_eq!(decode_basic(&v), "my+client%3A1:p%40ss+w%2Brd%2F%C3%A9");
    }

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: Default::default(),
            body: body.to_owned().into(),
        }
    }

    fn parse(status: u16, body: &str) -> Result<TokenSet, OAuthError> {
        let client = ClientIdentity {
            client_id: "c".into(),
            secret: None,
            method: TokenEndpointAuthMethod::None,
            key: None,
            source: IdentitySource::Dynamic,
        };
        let scopes = vec!["a".to_owned()];
        let req = TokenRequest {
            endpoint: "http://as/token",
            issuer: "http://as",
            client: &client,
            resource: "http://rs/mcp",
            requested_scope: &scopes,
            dpop: None,
        };
        read_response(
            &req,
            &reply(status, body),
            Some(&Secret::new("old-refresh")),
        )
    }

    #[test]
    fn token_responses() {
        let t = parse(
            200,
            r#"{"access_token":"at","token_type":"bearer","expires_in":"60","scope":"a b"}"#,
        )
        .unwrap();
        assert_eq!(t.access_token.expose(), "at");
        assert_eq!(t.refresh_token.as_ref().unwrap().expose(), "old-refresh");
        assert!(t.expires_at.unwrap() >= now_secs() + 59);
        assert_eq!(t.scopes(), ["a", "b"]);
        assert!(!format!("{t:?}").contains("at\""));
        let t = parse(
            200,
            r#"{"access_token":"at","token_type":"Bearer","refresh_token":"new"}"#,
        )
        .unwrap();
        assert_eq!(t.refresh_token.unwrap().expose(), "new");
        assert_eq!(t.expires_at, None);
        assert_eq!(t.requested_scope, ["a"]);
    }

    #[test]
    fn bad_token_responses() {
        assert!(matches!(
            parse(200, r#"{"token_type":"Bearer"}"#),
            Err(OAuthError::InvalidDocument { .. })
        ));
        assert!(matches!(
            parse(200, r#"{"access_token":"a b"}"#),
            Err(OAuthError::InvalidDocument { .. })
        ));
        assert!(matches!(
            parse(200, r#"{"access_token":"x","token_type":"DPoP"}"#),
            Err(OAuthError::Unsupported(_))
        ));
        assert!(matches!(
            parse(200, "nope"),
            Err(OAuthError::InvalidDocument { .. })
        ));
        let e = parse(
            400,
            r#"{"error":"invalid_grant","error_description":"expired\ncode"}"#,
        )
        .unwrap_err();
        assert!(e.is_invalid_grant());
        assert_eq!(e.to_string(), "token refused: invalid_grant (expiredcode)");
        assert!(matches!(
            parse(502, "<html>"),
            Err(OAuthError::InvalidDocument { .. })
        ));
    }

    #[test]
    fn method_names_round_trip() {
        for m in [
            TokenEndpointAuthMethod::None,
            TokenEndpointAuthMethod::ClientSecretBasic,
            TokenEndpointAuthMethod::ClientSecretPost,
            TokenEndpointAuthMethod::PrivateKeyJwt,
        ] {
            assert_eq!(TokenEndpointAuthMethod::parse(m.as_str()), Some(m));
        }
        assert_eq!(TokenEndpointAuthMethod::parse("tls_client_auth"), None);
    }
}
