//! Grants that present a signed assertion instead of a browser login:
//!
//! - **JWT bearer** (RFC 7523 §2.1) for workloads: the platform hands the
//!   workload a JWT (a Kubernetes projected service-account token, a cloud
//!   identity token) in a file it refreshes, or a command prints one; the
//!   client exchanges it for an access token. No browser, no stored secret.
//! - **Enterprise-managed authorization** (SEP-990): the user's ID token
//!   from the enterprise identity provider is exchanged there (RFC 8693
//!   token exchange) for an Identity Assertion JWT Authorization Grant
//!   (ID-JAG) addressed to the MCP server's authorization server, which is
//!   then presented there with the JWT-bearer grant.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::error::OAuthError;
use super::http::{OAuthHttp, shown};
use super::registration::PreRegisteredClient;
use super::secret::Secret;
use super::token::{TokenEndpointAuthMethod, basic_header, now_secs, oauth_error};

/// `grant_type` of the JWT-bearer grant (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693 §2.1).
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// Token type of an OpenID Connect ID token (RFC 8693 §3).
pub(crate) const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// Token type of an Identity Assertion JWT Authorization Grant (SEP-990).
pub(crate) const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// How long an assertion command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Where an assertion (a workload JWT, or a user's ID token) comes from.
/// Read afresh for every token request, so a file the platform rotates is
/// always current.
#[derive(Clone)]
pub enum AssertionSource {
    /// A fixed value (tests, the conformance suite's context).
    Value(Secret),
    /// A file holding the JWT (surrounding whitespace is ignored).
    File(PathBuf),
    /// A program and its arguments; its standard output is the JWT.
    Command(Vec<String>),
    /// The ID token of the login at the named identity provider, kept in
    /// the provider's token store (`switchboard auth login --idp NAME`);
    /// none there means a person has to log in.
    IdpLogin(String),
}

impl fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssertionSource::Value(_) => f.write_str("Value(<redacted>)"),
            AssertionSource::File(p) => f.debug_tuple("File").field(p).finish(),
            AssertionSource::Command(c) => f.debug_tuple("Command").field(c).finish(),
            AssertionSource::IdpLogin(n) => f.debug_tuple("IdpLogin").field(n).finish(),
        }
    }
}

impl AssertionSource {
    /// What the source is, for messages.
    pub fn describe(&self) -> String {
        match self {
            AssertionSource::Value(_) => "the configured assertion".into(),
            AssertionSource::File(p) => format!("assertion file {}", p.display()),
            AssertionSource::Command(c) => format!(
                "assertion command {:?}",
                c.first().map(String::as_str).unwrap_or("")
            ),
            AssertionSource::IdpLogin(n) => format!("the login at identity provider {n:?}"),
        }
    }

    /// The current assertion, checked to be a JWT that has not expired.
    ///
    /// # Errors
    /// [`OAuthError::Assertion`] when the file or command fails, the value
    /// is not a JWT, or its `exp` has passed.
    pub(crate) async fn read(&self) -> Result<Secret, OAuthError> {
        let what = self.describe();
        let fail = |reason: String| OAuthError::Assertion {
            source_name: what.clone(),
            reason,
        };
        let value = match self {
            AssertionSource::Value(v) => v.expose().trim().to_owned(),
            // Read by the provider, which holds the token store.
            AssertionSource::IdpLogin(_) => {
                return Err(fail("is read from the token store only".into()));
            }
            AssertionSource::File(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || std::fs::read_to_string(path))
                    .await
                    .map_err(|e| fail(e.to_string()))?
                    .map_err(|e| fail(format!("cannot be read: {e}")))?
                    .trim()
                    .to_owned()
            }
            AssertionSource::Command(argv) => {
                let Some((program, args)) = argv.split_first() else {
                    return Err(fail("no program is given".into()));
                };
                let mut command = tokio::process::Command::new(program);
                command
                    .args(args)
                    .stdin(std::process::Stdio::null())
                    .kill_on_drop(true);
                let output = tokio::time::timeout(COMMAND_TIMEOUT, command.output())
                    .await
                    .map_err(|_| {
                        fail(format!(
                            "gave no answer within {} s",
                            COMMAND_TIMEOUT.as_secs()
                        ))
                    })?
                    .map_err(|e| fail(format!("cannot be run: {e}")))?;
                if !output.status.success() {
                    return Err(fail(format!("exited with {}", output.status)));
                }
                String::from_utf8(output.stdout)
                    .map_err(|_| fail("printed something that is not UTF-8".into()))?
                    .trim()
                    .to_owned()
            }
        };
        check_jwt(&value).map_err(fail)?;
        Ok(Secret::new(value))
    }
}

/// A JWT whose `exp`, if any, lies in the future.
pub(crate) fn check_jwt(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("is empty".into());
    }
    let mut parts = value.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("is not a JWT (three dot-separated parts)".into());
    };
    let claims: Value = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("is not a JWT (its payload is not base64url JSON)")?;
    if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
        let now = now_secs();
        if exp <= now {
            return Err(format!(
                "expired {} s ago (exp {exp}); it must be refreshed before it can be exchanged",
                now - exp
            ));
        }
    }
    Ok(())
}

/// An enterprise identity provider (SEP-990): where the user's ID token
/// is exchanged for ID-JAGs.
#[derive(Clone, Debug)]
pub struct IdentityProvider {
    /// Its name in the configuration (`switchboard auth login --idp NAME`).
    pub name: String,
    /// Its issuer.
    pub issuer: String,
    /// Its token endpoint; read from its metadata when `None`.
    pub token_endpoint: Option<String>,
    /// This client's credentials at the identity provider.
    pub client: PreRegisteredClient,
    /// The user's ID token from the identity provider.
    pub id_token: AssertionSource,
}

/// RFC 8693 token exchange at the identity provider: the ID token for an
/// ID-JAG for the authorization server `audience` and the MCP server
/// `resource`.
///
/// # Errors
/// [`OAuthError::Refused`] when the identity provider refuses,
/// [`OAuthError::InvalidDocument`] for an answer without an ID-JAG.
pub(crate) async fn exchange_for_id_jag(
    http: &OAuthHttp,
    idp: &IdentityProvider,
    endpoint: &str,
    id_token: &Secret,
    audience: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Secret, OAuthError> {
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", TOKEN_EXCHANGE.into()),
        ("requested_token_type", ID_JAG_TYPE.into()),
        ("audience", audience.into()),
        ("resource", resource.into()),
        ("subject_token", id_token.expose().into()),
        ("subject_token_type", ID_TOKEN_TYPE.into()),
    ];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let client = &idp.client;
    let mut authorization = None;
    match (&client.client_secret, client.auth_method) {
        (Some(secret), Some(TokenEndpointAuthMethod::ClientSecretPost)) => {
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_secret", secret.expose().into()));
        }
        (Some(secret), _) => authorization = Some(basic_header(&client.client_id, secret)?),
        (None, _) => form.push(("client_id", client.client_id.clone())),
    }
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    tracing::info!(idp = %idp.name, "exchanging the ID token for an identity assertion grant");
    let reply = http.post_form(endpoint, &pairs, authorization).await?;
    let invalid = |reason: String| OAuthError::InvalidDocument {
        what: "token exchange response",
        url: shown(endpoint),
        reason,
    };
    if !reply.is_success() {
        return Err(oauth_error("token exchange", &reply)
            .unwrap_or_else(|| invalid(format!("HTTP {} without an OAuth error", reply.status))));
    }
    let object = reply.json_object().map_err(invalid)?;
    let issued = object.get("issued_token_type").and_then(Value::as_str);
    if issued != Some(ID_JAG_TYPE) {
        return Err(invalid(format!(
            "issued_token_type is {issued:?}, not {ID_JAG_TYPE}"
        )));
    }
    object
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(Secret::new)
        .ok_or_else(|| invalid("it has no access_token".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        format!(
            "{}.{}.sig",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256"}"#),
            URL_SAFE_NO_PAD.encode(claims)
        )
    }

    // A live JWT passes; an expired one, a non-JWT and an empty value are
    // refused with a message that says why and names the source.
    #[tokio::test]
    async fn assertions_are_checked_before_use() {
        let live = jwt(&format!(r#"{{"exp":{}}}"#, now_secs() + 60));
        let got = AssertionSource::Value(Secret::new(format!("{live}\n")))
            .read()
            .await
            .unwrap();
        assert_eq!(got.expose(), live);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, jwt(&format!(r#"{{"exp":{}}}"#, now_secs() - 60))).unwrap();
        let err = AssertionSource::File(path.clone())
            .read()
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("expired"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        let err = AssertionSource::Value(Secret::new("nope"))
            .read()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a JWT"), "{err}");
        let err = AssertionSource::File(dir.path().join("missing"))
            .read()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("cannot be read"), "{err}");
    }

    // A command's standard output is the assertion; a failing command is
    // an error.
    #[cfg(unix)]
    #[tokio::test]
    async fn command_sources_run_the_program() {
        let live = jwt(r#"{"sub":"w"}"#);
        let got = AssertionSource::Command(vec!["echo".into(), live.clone()])
            .read()
            .await
            .unwrap();
        assert_eq!(got.expose(), live);
        let err = AssertionSource::Command(vec!["false".into()])
            .read()
            .await
            .unwrap_err();
        assert!(err.to_string().contains("exited"), "{err}");
    }
}
