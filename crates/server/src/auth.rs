//! Who is calling: the [`Principal`] an authentication hook derives from a
//! bearer token, the Protected Resource Metadata document (RFC 9728) that
//! tells OAuth clients where to get one, and [`ClaimsValidator`], a
//! ready-made hook that checks what a token decoder or an introspection
//! endpoint says about a token.
//!
//! The HTTP runner calls a [`TokenValidator`] on every request when one is
//! configured: no or bad token → 401 with `WWW-Authenticate: Bearer
//! resource_metadata=…, scope=…` naming the scopes the request needs
//! ([`TokenValidator::scopes_needed`], else `scopes_supported`); a token
//! lacking scope → 403 `error="insufficient_scope"`; a token in the URL or
//! an `Authorization` header that is not `Bearer <token68>` → 400
//! `error="invalid_request"` (AUTH-S-03…07). Tokens are read from the
//! `Authorization` header only, are never logged, and never reach handlers:
//! handlers see the [`Principal`] (AUTH-S-05, no pass-through). On stdio
//! there is no token and the principal is `None` (credentials come from the
//! environment).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_wire::JsonObject;
use switchboard_wire::shared::unix_secs as now_secs;

/// The scope a protected resource never asks for: refresh tokens are the
/// client's business, not a resource requirement (AUTH-S-09).
const OFFLINE_ACCESS: &str = "offline_access";

/// The authenticated caller of a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Principal {
    /// Stable identifier of the caller (the token's `sub`, a client id, …).
    /// `requestState` and [`StateHandles`](crate::StateHandles) are bound
    /// to it, so it must be unique across every issuer the validator
    /// accepts.
    pub subject: String,
    /// Scopes the token grants (with the ones they imply, when the
    /// validator knows a hierarchy).
    pub scopes: Vec<String>,
    /// Other claims the validator chose to keep.
    pub claims: JsonObject,
    /// The token itself, when the validator was asked to keep it
    /// ([`PresentedToken`]): a gateway that exchanges a caller's token
    /// for one at a server behind it (RFC 8693) needs it. `None` by
    /// default.
    pub token: Option<PresentedToken>,
}

/// The bearer token a caller presented, kept for a token exchange made on
/// its behalf. `Debug` shows `<redacted>`, there is no `Display`: the
/// value leaves only through [`PresentedToken::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct PresentedToken(Arc<str>);

impl PresentedToken {
    /// Wraps a presented token.
    pub fn new(token: &str) -> PresentedToken {
        PresentedToken(Arc::from(token))
    }

    /// The token, for the exchange request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PresentedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PresentedToken(<redacted>)")
    }
}

impl Principal {
    /// A principal with a subject and no scopes.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes: Vec::new(),
            claims: JsonObject::new(),
            token: None,
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

    /// The issuer of the token (its `iss` claim), when the validator kept it.
    pub fn issuer(&self) -> Option<&str> {
        self.claims.get("iss").and_then(Value::as_str)
    }
}

/// Why a request is not authorized.
///
/// Descriptions end up in the `error_description` of the challenge and in
/// the server's logs: they must never contain the token.
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
    /// A malformed authorization request, such as a token in the URL or an
    /// `Authorization` header that is not `Bearer <token68>`: HTTP 400
    /// with `error="invalid_request"` (AUTH-S-06).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The token could not be checked right now (the introspection endpoint
    /// is down, …): HTTP 503. Not the client's fault, so not a 401 that
    /// would send it through a new login.
    #[error("cannot check the token now: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// The HTTP status this failure is answered with (the one place that
    /// decides it).
    pub fn http_status(&self) -> u16 {
        match self {
            AuthError::Unauthorized(_) => 401,
            AuthError::InsufficientScope(_) => 403,
            AuthError::InvalidRequest(_) => 400,
            AuthError::Unavailable(_) => 503,
        }
    }
}

/// What the request asks for, for per-method or per-tool authorization.
#[derive(Clone, Copy, Debug)]
pub struct AuthRequest<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The tool or prompt name, or resource URI, when the method has one.
    pub name: Option<&'a str>,
}

/// A boxed, sendable future (the one alias of the workspace).
pub use switchboard_wire::BoxFuture;

/// Validates bearer tokens for the HTTP runner.
///
/// Implement `validate` to check the token (signature, expiry, audience =
/// this server, AUTH-S-04) and say who it belongs to; optionally implement
/// `authorize` to require scopes per method or tool. [`ClaimsValidator`]
/// does all of this given a function that decodes or introspects a token.
pub trait TokenValidator: Send + Sync + 'static {
    /// Checks a bearer token.
    ///
    /// # Errors
    /// [`AuthError::Unauthorized`] for a token that must not be accepted,
    /// [`AuthError::Unavailable`] when it cannot be checked now.
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

    /// The scopes a token needs for `request`, or for every request when
    /// `None`; a 401 challenge names them in its `scope`, so the client
    /// asks the authorization server for what this request needs
    /// (AUTH-S-03).
    ///
    /// The HTTP runner decides a 401 before it reads the body, so
    /// `request` comes from the `Mcp-Method` and `Mcp-Name` headers a
    /// 2026-07-28 client sends; it is `None` for a legacy client, which
    /// sends neither, and for a `DELETE`. The answer should be the set
    /// [`authorize`](TokenValidator::authorize) would name for the same
    /// request, so a client that follows the 401 is not refused with 403
    /// next.
    ///
    /// The default, `None`, means the validator cannot tell: the challenge
    /// names the metadata's `scopes_supported` instead, as it does for an
    /// empty list. `offline_access` is never named (AUTH-S-09).
    fn scopes_needed(&self, request: Option<&AuthRequest<'_>>) -> Option<Vec<String>> {
        let _ = request;
        None
    }

    /// Hears of each request the HTTP runner refused for its authorization
    /// (to count them); the default does nothing. Called after the answer
    /// is decided, with nothing that names the token.
    fn refused(&self, refusal: Refusal) {
        let _ = refusal;
    }
}

/// Why the HTTP runner refused a request's authorization, as
/// [`TokenValidator::refused`] hears of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// No bearer token (401).
    MissingToken,
    /// A token that is not accepted: unknown, expired, for another
    /// resource, revoked (401).
    InvalidToken,
    /// A valid token without the scope the request needs (403).
    InsufficientScope,
    /// A malformed authorization: a token in the URL, a bad
    /// `Authorization` header (400).
    InvalidRequest,
    /// The token could not be checked now (503).
    Unavailable,
    /// A DPoP-bound token without a valid proof, or asked for a fresh
    /// nonce (401).
    InvalidProof,
}

impl Refusal {
    /// The refusal of `error`; `had_token` tells a missing token from a
    /// refused one.
    pub fn of(error: &AuthError, had_token: bool) -> Refusal {
        match error {
            AuthError::Unauthorized(_) if !had_token => Refusal::MissingToken,
            AuthError::Unauthorized(_) => Refusal::InvalidToken,
            AuthError::InsufficientScope(_) => Refusal::InsufficientScope,
            AuthError::InvalidRequest(_) => Refusal::InvalidRequest,
            AuthError::Unavailable(_) => Refusal::Unavailable,
        }
    }

    /// A short label: `missing_token`, `invalid_token`,
    /// `insufficient_scope`, `invalid_request`, `unavailable` or
    /// `invalid_proof`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::MissingToken => "missing_token",
            Refusal::InvalidToken => "invalid_token",
            Refusal::InsufficientScope => "insufficient_scope",
            Refusal::InvalidRequest => "invalid_request",
            Refusal::Unavailable => "unavailable",
            Refusal::InvalidProof => "invalid_proof",
        }
    }
}

/// A [`TokenValidator`] that checks what a caller-supplied function says
/// about a token: the claims of a verified JWT access token (RFC 9068) or
/// an introspection response (RFC 7662).
///
/// The function does the cryptography or the network call and returns the
/// claims as a JSON object; this validator then insists, in order, on:
/// - `active` not being `false` (introspection);
/// - `iss` being one of the trusted issuers (those of the
///   [`ProtectedResource`] with [`ClaimsValidator::for_resource`]);
/// - `aud` (a string or an array) naming this server's canonical URI
///   (AUTH-S-04/05, RFC 8707): scheme and host compare case-insensitively,
///   nothing else is normalised;
/// - `exp` in the future and `nbf` in the past, give or take the leeway
///   (30 seconds by default); either, when present, a number (`null` is
///   refused, not taken for "never");
/// - a subject: `sub` (a string), else, without `sub`, `client_id`.
///
/// Each failure is a 401 `invalid_token`. Scopes come from `scope` (space
/// separated) or `scp` (string or array), widened by
/// [`implies`](ClaimsValidator::implies) (AUTH-S-08); requests then need
/// the scopes of [`require_scopes`](ClaimsValidator::require_scopes),
/// [`method_scopes`](ClaimsValidator::method_scopes) and
/// [`tool_scopes`](ClaimsValidator::tool_scopes), all named in one 403
/// challenge when any is missing (AUTH-S-07).
///
/// # Example
/// ```no_run
/// use switchboard_server::http::HttpOptions;
/// use switchboard_server::{AuthError, ClaimsValidator, ProtectedResource};
/// use switchboard_wire::JsonObject;
///
/// # async fn introspect(token: &str) -> Result<JsonObject, AuthError> { unimplemented!() }
/// let prm = ProtectedResource::new("https://tickets.example.com/mcp", "https://auth.example.com")
///     .with_scopes(["tickets:read"]);
/// let validator = ClaimsValidator::for_resource(&prm, |token: String| async move {
///     introspect(&token).await
/// })
/// .require_scopes(["tickets:read"])
/// .tool_scopes("close_ticket", ["tickets:write"])
/// .implies("tickets:admin", ["tickets:read", "tickets:write"]);
/// let options = HttpOptions::new().auth(validator, prm);
/// ```
pub struct ClaimsValidator<F> {
    /// Decodes or introspects a token into its claims.
    decode: F,
    /// Audiences that name this server.
    audiences: Vec<String>,
    /// Issuers whose tokens are accepted; empty accepts any issuer the
    /// decoder vouches for.
    issuers: Vec<String>,
    /// Scopes every request needs.
    required: Vec<String>,
    /// Extra scopes by method, and by method and name.
    rules: Vec<ScopeRule>,
    /// A granted scope and the narrower ones it implies.
    implied: Vec<(String, Vec<String>)>,
    /// Tolerated clock difference with the authorization server.
    leeway: u64,
    /// Seconds since the Unix epoch.
    clock: Arc<dyn Fn() -> u64 + Send + Sync>,
}

struct ScopeRule {
    method: String,
    name: Option<String>,
    scopes: Vec<String>,
}

impl<F> fmt::Debug for ClaimsValidator<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaimsValidator")
            .field("audiences", &self.audiences)
            .field("issuers", &self.issuers)
            .field("required", &self.required)
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

impl<F, Fut> ClaimsValidator<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<JsonObject, AuthError>> + Send + 'static,
{
    /// A validator accepting tokens whose audience is `audience` (the
    /// server's canonical URI, e.g. `https://api.example.com/mcp`) from any
    /// issuer `decode` vouches for.
    ///
    /// `decode` verifies the token (signature, or introspection at the
    /// authorization server) and returns its claims, or
    /// [`AuthError::Unauthorized`] for a token it does not recognise, or
    /// [`AuthError::Unavailable`] when it cannot tell now.
    pub fn new(audience: impl Into<String>, decode: F) -> Self {
        ClaimsValidator {
            decode,
            audiences: vec![audience.into()],
            issuers: Vec::new(),
            required: Vec::new(),
            rules: Vec::new(),
            implied: Vec::new(),
            leeway: 30,
            clock: Arc::new(now_secs),
        }
    }

    /// A validator for the server `metadata` describes: the audience is its
    /// `resource`, the trusted issuers its `authorization_servers`.
    pub fn for_resource(metadata: &ProtectedResource, decode: F) -> Self {
        let mut v = ClaimsValidator::new(metadata.resource.clone(), decode);
        v.issuers.clone_from(&metadata.authorization_servers);
        v
    }

    /// Also accepts tokens for `audience` (the server under another name).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Accepts tokens from `issuer` (compared as an exact string). When
    /// more than one issuer is accepted, the principal's subject is
    /// `{iss}#{sub}`, so equal `sub`s of different issuers stay apart.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        let issuer = issuer.into();
        if !self.issuers.contains(&issuer) {
            self.issuers.push(issuer);
        }
        self
    }

    /// Scopes every request needs.
    pub fn require_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        extend_unique(&mut self.required, scopes);
        self
    }

    /// Scopes requests of `method` (e.g. `tools/call`) need, on top of the
    /// required ones.
    pub fn method_scopes<I, S>(mut self, method: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rules.push(ScopeRule {
            method: method.into(),
            name: None,
            scopes: scopes.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Scopes a call of tool `name` needs, on top of the others.
    pub fn tool_scopes<I, S>(self, name: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_for("tools/call", name, scopes)
    }

    /// Scopes a request of `method` for `name` (a tool or prompt name, a
    /// resource URI) needs, on top of the others.
    pub fn scopes_for<I, S>(
        mut self,
        method: impl Into<String>,
        name: impl Into<String>,
        scopes: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rules.push(ScopeRule {
            method: method.into(),
            name: Some(name.into()),
            scopes: scopes.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// A token granting `broader` also grants `narrower` (AUTH-S-08), e.g.
    /// `files:write` implies `files:read`. Implications chain.
    pub fn implies<I, S>(mut self, broader: impl Into<String>, narrower: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.implied.push((
            broader.into(),
            narrower.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// The clock difference tolerated on `exp` and `nbf`.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway.as_secs();
        self
    }

    /// The clock `exp` and `nbf` are compared with, in seconds since the
    /// Unix epoch (the system clock by default).
    pub fn clock(mut self, now: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(now);
        self
    }

    /// Checks the claims `decode` returned.
    fn check(&self, claims: JsonObject) -> Result<Principal, AuthError> {
        let invalid = |why: &str| Err(AuthError::Unauthorized(why.to_owned()));
        if claims.get("active") == Some(&Value::Bool(false)) {
            return invalid("the token is not active");
        }
        let issuer = claims.get("iss").and_then(Value::as_str);
        if !self.issuers.is_empty() && !issuer.is_some_and(|i| self.issuers.iter().any(|t| t == i))
        {
            return invalid("the token was not issued by an authorization server of this resource");
        }
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let ours = audiences
            .iter()
            .any(|a| self.audiences.iter().any(|o| same_resource(a, o)));
        if !ours {
            return invalid("the token was not issued for this resource");
        }
        let now = (self.clock)();
        match time_claim(&claims, "exp") {
            Ok(Some(exp)) if exp.saturating_add(self.leeway) <= now => {
                return invalid("the token expired");
            }
            Ok(_) => {}
            Err(()) => return invalid("the token's exp is not a number"),
        }
        match time_claim(&claims, "nbf") {
            Ok(Some(nbf)) if nbf > now.saturating_add(self.leeway) => {
                return invalid("the token is not valid yet");
            }
            Ok(_) => {}
            Err(()) => return invalid("the token's nbf is not a number"),
        }
        // `sub` names the caller when present, so one that is not a string
        // is refused rather than replaced by `client_id` (another caller).
        let subject = match claims.get("sub") {
            Some(Value::String(sub)) => Some(sub.as_str()),
            Some(_) => return invalid("the token's sub is not a string"),
            None => claims.get("client_id").and_then(Value::as_str),
        }
        .filter(|s| !s.is_empty());
        let Some(subject) = subject else {
            return invalid("the token names no subject");
        };
        let subject = match issuer {
            Some(iss) if self.issuers.len() > 1 => format!("{iss}#{subject}"),
            _ => subject.to_owned(),
        };
        let scopes = self.widen(granted_scopes(&claims));
        Ok(Principal {
            subject,
            scopes,
            claims,
            token: None,
        })
    }

    /// The granted scopes and everything they imply.
    fn widen(&self, mut scopes: Vec<String>) -> Vec<String> {
        let mut i = 0;
        while i < scopes.len() {
            for (broader, narrower) in &self.implied {
                if *broader == scopes[i] {
                    for n in narrower {
                        if !scopes.contains(n) {
                            scopes.push(n.clone());
                        }
                    }
                }
            }
            i += 1;
        }
        scopes
    }

    /// Every scope `request` needs.
    fn needed(&self, request: &AuthRequest<'_>) -> Vec<String> {
        let mut needed = self.required.clone();
        for rule in &self.rules {
            let applies = rule.method == request.method
                && rule.name.as_deref().is_none_or(|n| Some(n) == request.name);
            if applies {
                extend_unique(&mut needed, rule.scopes.iter().cloned());
            }
        }
        needed
    }
}

impl<F, Fut> TokenValidator for ClaimsValidator<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<JsonObject, AuthError>> + Send + 'static,
{
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let decoded = (self.decode)(token.to_owned());
        Box::pin(async move { self.check(decoded.await?) })
    }

    fn authorize(&self, principal: &Principal, request: &AuthRequest<'_>) -> Result<(), AuthError> {
        let needed = self.needed(request);
        if needed.iter().all(|s| principal.has_scope(s)) {
            Ok(())
        } else {
            // Every scope the operation needs, in one challenge (AUTH-S-07).
            Err(AuthError::InsufficientScope(needed))
        }
    }

    /// The scopes [`authorize`](TokenValidator::authorize) would ask of
    /// this request; the required ones when the request is not known.
    fn scopes_needed(&self, request: Option<&AuthRequest<'_>>) -> Option<Vec<String>> {
        Some(match request {
            Some(request) => self.needed(request),
            None => self.required.clone(),
        })
    }
}

/// The Protected Resource Metadata of this server (RFC 9728; AUTH-S-01).
#[derive(Clone, Debug, PartialEq)]
pub struct ProtectedResource {
    /// The canonical URI of the MCP endpoint, e.g. `https://api.example.com/mcp`.
    pub resource: String,
    /// Issuer URLs of the authorization servers (at least one).
    pub authorization_servers: Vec<String>,
    /// Scopes this server understands; also the `scope` of 401 challenges
    /// when the validator cannot name the scopes a request needs
    /// (AUTH-S-03). `offline_access` is never published (AUTH-S-09).
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
        let scopes = self.published_scopes();
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
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

    /// The `WWW-Authenticate` value for a failure; `None` for one that is
    /// not the client's to fix ([`AuthError::Unavailable`]). A 401 names
    /// `needed`, the scopes the validator says the request needs, or
    /// `scopes_supported` when it cannot tell (`None` or empty).
    pub(crate) fn challenge(
        &self,
        error: &AuthError,
        had_token: bool,
        needed: Option<&[String]>,
    ) -> Option<String> {
        let mut parts = vec![format!(
            "resource_metadata=\"{}\"",
            quote(&self.metadata_url())
        )];
        let scope = |scopes: &[&str], parts: &mut Vec<String>| {
            if !scopes.is_empty() {
                parts.push(format!("scope=\"{}\"", quote(&scopes.join(" "))));
            }
        };
        match error {
            AuthError::Unauthorized(description) => {
                let needed = needed.map(without_offline_access).unwrap_or_default();
                if needed.is_empty() {
                    scope(&self.published_scopes(), &mut parts);
                } else {
                    scope(&needed, &mut parts);
                }
                // RFC 6750 §3.1: no error code when no token was sent.
                if had_token {
                    parts.push("error=\"invalid_token\"".to_owned());
                    parts.push(format!("error_description=\"{}\"", quote(description)));
                }
            }
            AuthError::InsufficientScope(needed) => {
                parts.push("error=\"insufficient_scope\"".to_owned());
                scope(&without_offline_access(needed), &mut parts);
            }
            AuthError::InvalidRequest(description) => {
                parts.push("error=\"invalid_request\"".to_owned());
                parts.push(format!("error_description=\"{}\"", quote(description)));
            }
            AuthError::Unavailable(_) => return None,
        }
        Some(format!("Bearer {}", parts.join(", ")))
    }

    fn published_scopes(&self) -> Vec<&str> {
        without_offline_access(&self.scopes_supported)
    }
}

/// The scopes a resource may ask for: all but `offline_access` (AUTH-S-09).
fn without_offline_access(scopes: &[String]) -> Vec<&str> {
    scopes
        .iter()
        .map(String::as_str)
        .filter(|s| *s != OFFLINE_ACCESS)
        .collect()
}

fn extend_unique<I, S>(into: &mut Vec<String>, more: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    for s in more {
        let s = s.into();
        if !into.contains(&s) {
            into.push(s);
        }
    }
}

/// A NumericDate claim: `Ok(None)` when absent, `Err` when not a number
/// (`null` included: a token whose `exp` is `null` does not last forever).
fn time_claim(claims: &JsonObject, name: &str) -> Result<Option<u64>, ()> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(v), _) => Ok(Some(v)),
            // Fractional or negative seconds: clamp, truncating (saturating
            // float-to-int conversion).
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            (None, Some(f)) => Ok(Some(f.max(0.0) as u64)),
            (None, None) => Err(()),
        },
        Some(_) => Err(()),
    }
}

/// The scopes of `scope` (RFC 7662, RFC 9068) or `scp` (string or array).
fn granted_scopes(claims: &JsonObject) -> Vec<String> {
    let mut scopes = Vec::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(s)) => extend_unique(&mut scopes, s.split_ascii_whitespace()),
            Some(Value::Array(a)) => {
                extend_unique(&mut scopes, a.iter().filter_map(Value::as_str));
            }
            _ => {}
        }
    }
    scopes
}

/// Whether two resource URIs name the same resource: identical, or equal
/// once scheme and host are lower-cased and an empty path is read as `/`
/// (the canonical-URI leniency the spec recommends).
fn same_resource(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let norm = |u: &str| {
        let (origin, path) = split_url(u);
        // What follows the path: query and fragment, compared as is.
        let rest = &u[origin.len() + path.len()..];
        let path = if path.is_empty() { "/" } else { path };
        (
            origin.to_ascii_lowercase(),
            path.to_owned(),
            rest.to_owned(),
        )
    };
    norm(a) == norm(b)
}

/// Splits `scheme://authority/path?query` into origin and path.
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?', '#']) {
        Some(i) => {
            let (origin, rest) = url.split_at(after_scheme + i);
            let path = rest.split(['?', '#']).next().unwrap_or("");
            (origin, path)
        }
        None => (url, ""),
    }
}

/// A quoted-string body that is a valid header value and a valid RFC 6750
/// parameter: printable ASCII only, `"` and `\` escaped, anything else `?`.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_named_by_what_went_wrong() {
        let unauthorized = AuthError::Unauthorized("x".into());
        assert_eq!(Refusal::of(&unauthorized, false), Refusal::MissingToken);
        assert_eq!(Refusal::of(&unauthorized, true), Refusal::InvalidToken);
        let cases = [
            (
                AuthError::InsufficientScope(vec!["a".into()]),
                "insufficient_scope",
            ),
            (AuthError::InvalidRequest("x".into()), "invalid_request"),
            (AuthError::Unavailable("x".into()), "unavailable"),
        ];
        for (error, label) in cases {
            assert_eq!(Refusal::of(&error, true).as_str(), label);
        }
        assert_eq!(Refusal::InvalidProof.as_str(), "invalid_proof");
    }

    #[test]
    fn metadata_location_is_path_inserted() {
        let prm = ProtectedResource::new("https://api.example.com/mcp", "https://auth.example.com")
            .with_scopes(["files:read", "offline_access"]);
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
        // AUTH-S-09: offline_access is not a resource requirement.
        assert_eq!(doc["scopes_supported"], json!(["files:read"]));
        let root = ProtectedResource::new("https://api.example.com", "https://a");
        assert_eq!(
            root.well_known_path(),
            "/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            root.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource"
        );
    }

    // AUTH-S-03/07: challenges carry resource_metadata and the needed scope.
    #[test]
    fn challenges() {
        let prm = ProtectedResource::new("http://127.0.0.1:9/mcp", "http://127.0.0.1:8")
            .with_scopes(["a", "b"]);
        let c = prm
            .challenge(&AuthError::Unauthorized("no token".into()), false, None)
            .unwrap();
        assert_eq!(
            c,
            "Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\", scope=\"a b\""
        );
        let c = prm
            .challenge(&AuthError::InsufficientScope(vec!["b".into()]), true, None)
            .unwrap();
        assert!(c.contains("error=\"insufficient_scope\""));
        assert!(c.contains("scope=\"b\""));
        let c = prm
            .challenge(&AuthError::InvalidRequest("no".into()), true, None)
            .unwrap();
        assert!(c.contains("error=\"invalid_request\""), "{c}");
        assert_eq!(
            prm.challenge(&AuthError::Unavailable("down".into()), true, None),
            None
        );
        // What the validator says the request needs beats scopes_supported,
        // without offline_access (AUTH-S-09); nothing known falls back.
        let unauthorized = AuthError::Unauthorized("expired".into());
        let needed = ["c".to_owned(), "offline_access".to_owned()];
        let c = prm.challenge(&unauthorized, true, Some(&needed)).unwrap();
        assert!(c.contains("scope=\"c\", error=\"invalid_token\""), "{c}");
        for unknown in [None, Some(&[][..]), Some(&needed[1..])] {
            let c = prm.challenge(&unauthorized, true, unknown).unwrap();
            assert!(c.contains("scope=\"a b\""), "{c}");
        }
    }

    // A description with quotes, control or non-ASCII characters still
    // makes a valid header value, so the challenge is never dropped.
    #[test]
    fn challenge_text_is_always_a_valid_header_value() {
        let prm = ProtectedResource::new("http://h/mcp", "http://a");
        let c = prm
            .challenge(
                &AuthError::Unauthorized("caf\u{e9} \"x\"\n\\".into()),
                true,
                None,
            )
            .unwrap();
        assert!(http::HeaderValue::from_str(&c).is_ok(), "{c}");
        assert!(c.contains(r#"error_description="caf? \"x\"?\\""#), "{c}");
    }

    #[test]
    fn resources_compare_leniently_on_scheme_and_host_only() {
        assert!(same_resource(
            "https://a.example/mcp",
            "https://a.example/mcp"
        ));
        assert!(same_resource(
            "HTTPS://A.example/mcp",
            "https://a.example/mcp"
        ));
        assert!(same_resource("https://a.example", "https://a.example/"));
        assert!(!same_resource(
            "https://a.example/MCP",
            "https://a.example/mcp"
        ));
        assert!(!same_resource("https://a.example/mcp", "https://a.example"));
        assert!(!same_resource(
            "https://a.example/mcp/x",
            "https://a.example/mcp"
        ));
        assert!(!same_resource(
            "https://a.example/mcp?x",
            "https://a.example/mcp"
        ));
        assert!(!same_resource(
            "https://a.example:444/mcp",
            "https://a.example/mcp"
        ));
    }

    fn validator() -> ClaimsValidator<
        impl Fn(String) -> std::future::Ready<Result<JsonObject, AuthError>> + Send + Sync,
    > {
        let prm = ProtectedResource::new("https://rs.example/mcp", "https://as.example");
        ClaimsValidator::for_resource(&prm, |_: String| std::future::ready(Ok(JsonObject::new())))
            .clock(|| 1_000_000)
            .leeway(Duration::from_secs(10))
    }

    fn claims(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn good() -> Value {
        json!({"iss": "https://as.example", "aud": "https://rs.example/mcp", "sub": "alice",
               "exp": 1_000_100, "nbf": 999_000, "scope": "a b"})
    }

    fn with(member: &str, value: Value) -> JsonObject {
        let mut c = claims(good());
        c.insert(member.into(), value);
        c
    }

    // AUTH-S-04/05: each claim that makes a token unacceptable here.
    #[test]
    fn claims_are_checked() {
        let v = validator();
        let p = v.check(claims(good())).unwrap();
        assert_eq!(p.subject, "alice");
        assert_eq!(p.scopes, ["a", "b"]);
        assert_eq!(p.issuer(), Some("https://as.example"));
        let cases: Vec<(JsonObject, &str)> = vec![
            (with("active", json!(false)), "not active"),
            (with("iss", json!("https://evil.example")), "not issued by"),
            (
                claims(json!({"aud": "https://rs.example/mcp", "sub": "a"})),
                "not issued by",
            ),
            (
                with("aud", json!("https://other.example/mcp")),
                "not issued for this resource",
            ),
            (
                with("aud", json!(["https://other.example"])),
                "not issued for this resource",
            ),
            (with("aud", Value::Null), "not issued for this resource"),
            (with("exp", json!(999_990)), "expired"),
            (with("exp", json!("soon")), "exp is not a number"),
            // A null exp is not "never expires".
            (with("exp", Value::Null), "exp is not a number"),
            (with("nbf", Value::Null), "nbf is not a number"),
            (with("nbf", json!(1_000_011)), "not valid yet"),
            (with("sub", json!("")), "no subject"),
        ];
        for (c, why) in cases {
            match v.check(c.clone()) {
                Err(AuthError::Unauthorized(m)) => assert!(m.contains(why), "{m} vs {why}"),
                other => panic!("{c:?}: {other:?}"),
            }
        }
        // Within the leeway, and an audience array naming us.
        assert!(v.check(with("exp", json!(999_995))).is_ok());
        assert!(v.check(with("nbf", json!(1_000_009))).is_ok());
        assert!(
            v.check(with("aud", json!(["https://x", "https://RS.example/mcp"])))
                .is_ok()
        );
        // A client-credentials token without sub names its client.
        let mut c = claims(good());
        c.remove("sub");
        c.insert("client_id".into(), json!("agent-7"));
        assert_eq!(v.check(c.clone()).unwrap().subject, "agent-7");
        // A sub that is not a string is refused, not replaced by client_id.
        for sub in [
            json!(42),
            json!({"id": "alice"}),
            json!(["alice"]),
            Value::Null,
        ] {
            c.insert("sub".into(), sub.clone());
            match v.check(c.clone()) {
                Err(AuthError::Unauthorized(m)) => {
                    assert!(m.contains("sub is not a string"), "{m}")
                }
                other => panic!("{sub}: {other:?}"),
            }
        }
    }

    // AUTH-S-07/08: every needed scope in one refusal; hierarchies honoured.
    #[test]
    fn scopes_and_hierarchies() {
        let v = validator()
            .require_scopes(["read"])
            .method_scopes("tools/call", ["call"])
            .tool_scopes("delete", ["write"])
            .implies("admin", ["write"])
            .implies("write", ["read", "call"]);
        let ask = |method, name| AuthRequest { method, name };
        let reader = v.check(with("scope", json!("read"))).unwrap();
        assert!(v.authorize(&reader, &ask("tools/list", None)).is_ok());
        assert_eq!(
            v.authorize(&reader, &ask("tools/call", Some("delete"))),
            Err(AuthError::InsufficientScope(vec![
                "read".into(),
                "call".into(),
                "write".into()
            ]))
        );
        let admin = v.check(with("scope", json!("admin"))).unwrap();
        assert_eq!(admin.scopes, ["admin", "write", "read", "call"]);
        assert!(
            v.authorize(&admin, &ask("tools/call", Some("delete")))
                .is_ok()
        );
        // AUTH-S-03: a 401 names what the 403 would (required ones alone
        // when the request is not known).
        assert_eq!(
            v.scopes_needed(Some(&ask("tools/call", Some("delete")))),
            Some(vec!["read".into(), "call".into(), "write".into()])
        );
        assert_eq!(v.scopes_needed(None), Some(vec!["read".into()]));
        let scp = v.check(with("scp", json!(["read", "call"]))).unwrap();
        assert!(scp.has_scope("call"));
        assert!(v.authorize(&scp, &ask("tools/call", Some("echo"))).is_ok());
    }

    #[test]
    fn several_issuers_qualify_the_subject() {
        let v = validator().issuer("https://as2.example");
        let a = v.check(claims(good())).unwrap();
        let b = v.check(with("iss", json!("https://as2.example"))).unwrap();
        assert_eq!(a.subject, "https://as.example#alice");
        assert_ne!(a.subject, b.subject);
    }
}
