//! Who may use the HTTP gateway: bearer tokens checked by the server
//! framework's [`TokenValidator`] hook, so refusals are the framework's
//! (401 with `WWW-Authenticate: Bearer resource_metadata=…`, 403 for
//! missing scope, 400 for a token in the URL) and the Protected Resource
//! Metadata document is served.
//!
//! Two kinds of token:
//! - [`StaticTokens`]: named shared secrets (`serve --auth token`). The
//!   token's name is the principal. Each presented token is hashed and
//!   compared with every configured one in constant time, without stopping
//!   at a match, so timing tells neither which token nor how much of it
//!   matched.
//! - OAuth access tokens (`serve --auth oauth`, [`OAuthInbound`]): JWTs
//!   verified by the framework's [`JwtVerifier`] with the issuer's JWK set
//!   (from `--jwks-url`, else its metadata's `jwks_uri`; `typ` `at+jwt`,
//!   no `crit`, a numeric `exp`; the set cached, fetched once at a time,
//!   again on an unknown `kid` at most once every [`JWKS_MIN_REFETCH`],
//!   with back-off while the issuer fails and the cached keys kept in use
//!   meanwhile), or RFC 7662 introspection answers cached for
//!   [`INTROSPECTION_TTL`]. Then [`ClaimsValidator`] checks `iss`, `aud` =
//!   the gateway's resource URL, `exp`/`nbf` (30 s leeway) and the
//!   required scopes. The principal is `sub` (a string; else, without
//!   `sub`, `client_id`).
//!
//! Tokens never reach logs or handlers: handlers see the principal.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};
use switchboard_oauth::{IssuerClient, Secret};
use switchboard_server::jwt::JwtVerifier;
use switchboard_server::{
    AuthError, AuthRequest, BoxFuture, ClaimsValidator, PresentedToken, Principal,
    ProtectedResource, Refusal, TokenValidator,
};
use switchboard_wire::JsonObject;
use switchboard_wire::shared::{lock, read_lock, write_lock};
use tokio::sync::Mutex;

use crate::{GatewayError, Telemetry};

pub use switchboard_server::jwt::{JWKS_MAX_AGE, JWKS_MIN_REFETCH};

/// The shortest static token accepted, in bytes.
pub const MIN_TOKEN_LEN: usize = 16;
/// How long an introspection answer is reused.
pub const INTROSPECTION_TTL: Duration = Duration::from_secs(30);
/// Introspection answers kept at most; older ones are dropped beyond.
const INTROSPECTION_CACHE: usize = 10_000;
/// Time allowed for one exchange with the authorization server.
const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

/// How the HTTP gateway authenticates its callers.
#[derive(Clone)]
pub struct InboundAuth {
    validator: Arc<dyn TokenValidator>,
    /// The named tokens in use, replaceable while serving (token auth
    /// only).
    tokens: Option<Arc<LiveTokens>>,
    metadata: ProtectedResource,
    kind: &'static str,
}

impl fmt::Debug for InboundAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundAuth")
            .field("kind", &self.kind)
            .field("resource", &self.metadata.resource)
            .finish_non_exhaustive()
    }
}

impl InboundAuth {
    /// Callers present one of `tokens`; `resource` is the gateway's MCP
    /// URL, named in the metadata document (which lists no authorization
    /// server: these tokens are handed out by hand).
    /// The tokens can be replaced while the gateway serves
    /// ([`InboundAuth::replace_tokens`]).
    pub fn tokens(tokens: StaticTokens, resource: impl Into<String>) -> InboundAuth {
        let live = Arc::new(LiveTokens(RwLock::new(Arc::new(tokens))));
        InboundAuth {
            validator: Arc::clone(&live) as Arc<dyn TokenValidator>,
            tokens: Some(live),
            metadata: ProtectedResource {
                resource: resource.into(),
                authorization_servers: Vec::new(),
                scopes_supported: Vec::new(),
                extra: JsonObject::new(),
            },
            kind: "token",
        }
    }

    /// Callers present OAuth access tokens of `settings.issuer`.
    ///
    /// # Errors
    /// [`GatewayError::Auth`] when the HTTP client for the issuer cannot be
    /// built.
    pub fn oauth(settings: OAuthInbound) -> Result<InboundAuth, GatewayError> {
        let client = IssuerClient::new(ISSUER_TIMEOUT)
            .map_err(|e| GatewayError::Auth(format!("cannot reach the issuer: {e}")))?;
        let metadata = ProtectedResource::new(settings.resource.clone(), settings.issuer.clone())
            .with_scopes(settings.scopes.clone());
        let source = Arc::new(match settings.introspection {
            Some(i) => Source::Introspection(Box::new(Introspector {
                client,
                issuer: settings.issuer.clone(),
                endpoint: i.url,
                client_id: i.client_id,
                client_secret: i.client_secret,
                cache: Mutex::new(HashMap::new()),
            })),
            None => Source::Jwks(
                jwt_verifier(client, settings.issuer.clone(), settings.jwks_url)
                    .accept_plain_jwt(settings.accept_plain_jwt),
            ),
        });
        let kind = match *source {
            Source::Introspection(_) => "oauth (introspection)",
            Source::Jwks(_) => "oauth (JWT)",
        };
        let validator = ClaimsValidator::for_resource(&metadata, move |token: String| {
            let source = Arc::clone(&source);
            async move { source.claims(&token).await }
        })
        .require_scopes(settings.scopes);
        Ok(InboundAuth {
            validator: Arc::new(validator),
            tokens: None,
            metadata,
            kind,
        })
    }

    /// The Protected Resource Metadata served.
    pub fn metadata(&self) -> &ProtectedResource {
        &self.metadata
    }

    /// `token`, `oauth (JWT)` or `oauth (introspection)`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Puts `tokens` in place of the named tokens in use: from the next
    /// request on, a token no longer listed is refused (401) and a new one
    /// accepted. Requests already admitted go on. Says which names came
    /// and went.
    ///
    /// # Errors
    /// [`GatewayError::Auth`] when callers present OAuth access tokens,
    /// not named tokens.
    pub fn replace_tokens(&self, tokens: StaticTokens) -> Result<TokenChange, GatewayError> {
        let Some(live) = &self.tokens else {
            return Err(GatewayError::Auth(format!(
                "the gateway takes {} tokens, not named ones",
                self.kind
            )));
        };
        let mut current = write_lock(&live.0);
        let change = TokenChange::between(&current, &tokens);
        *current = Arc::new(tokens);
        Ok(change)
    }

    /// The names `config`'s `principals` give that no named token in use
    /// has (sorted): under `--auth token` such an entry's rules and limits
    /// apply to no caller, so the caller it was meant for (a name misspelt)
    /// gets the whole table. Empty for OAuth, whose principals are subjects
    /// the gateway cannot list.
    #[must_use]
    pub fn principals_without_token(&self, config: &switchboard_host::Config) -> Vec<String> {
        let Some(live) = &self.tokens else {
            return Vec::new();
        };
        let tokens = Arc::clone(&read_lock(&live.0));
        tokens.names_missing_from(config)
    }

    /// The validator, as the HTTP runner takes it; refusals are counted in
    /// `telemetry`'s metrics.
    pub(crate) fn validator(&self, telemetry: &Telemetry) -> SharedValidator {
        SharedValidator {
            validator: Arc::clone(&self.validator),
            telemetry: telemetry.clone(),
            // An OAuth access token can be exchanged for one at a server
            // behind the gateway (`"identity": "exchange"`); a named token
            // is the gateway's own secret and never leaves it.
            keep_token: self.tokens.is_none(),
        }
    }
}

/// One validator shared by every runner of a gateway.
pub(crate) struct SharedValidator {
    validator: Arc<dyn TokenValidator>,
    telemetry: Telemetry,
    /// Whether the principal keeps the presented token, for a token
    /// exchange on the caller's behalf (redacted in every `Debug`).
    keep_token: bool,
}

impl TokenValidator for SharedValidator {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(async move {
            let mut principal = self.validator.validate(token).await?;
            if self.keep_token {
                principal.token = Some(PresentedToken::new(token));
            }
            Ok(principal)
        })
    }

    fn authorize(&self, principal: &Principal, request: &AuthRequest<'_>) -> Result<(), AuthError> {
        self.validator.authorize(principal, request)
    }

    fn scopes_needed(&self, request: Option<&AuthRequest<'_>>) -> Option<Vec<String>> {
        self.validator.scopes_needed(request)
    }

    fn refused(&self, refusal: Refusal) {
        self.telemetry.auth_refused(refusal);
    }
}

// -- static tokens ----------------------------------------------------------

/// Named bearer tokens (`serve --auth token`).
///
/// The text format, of `--tokens-file` and of `SWITCHBOARD_GATEWAY_TOKENS`:
/// one `NAME TOKEN` pair per line (the environment variable may also
/// separate pairs with `;`), blank lines and lines starting with `#`
/// ignored. Names are the principals: letters, digits, `_`, `-`, `.`, `@`.
/// Tokens are at least [`MIN_TOKEN_LEN`] bytes without spaces; names and
/// tokens are each unique.
#[derive(Clone)]
pub struct StaticTokens {
    /// (name, SHA-256 of the token).
    entries: Vec<(String, [u8; 32])>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("StaticTokens")
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

impl StaticTokens {
    /// Reads the pairs of `text`; `source` names it in errors (a file, the
    /// environment variable). Errors name the line, never the token.
    ///
    /// # Errors
    /// [`GatewayError::Auth`] for a malformed line, a short token, a
    /// repeated name or token, or no token at all.
    pub fn parse(text: &str, source: &str) -> Result<StaticTokens, GatewayError> {
        let bad =
            |line: usize, why: &str| GatewayError::Auth(format!("{source}, entry {line}: {why}"));
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (i, line) in text.split(['\n', ';']).enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(name), Some(token), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad(i + 1, "write NAME TOKEN (two words)"));
            };
            let name_ok = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
            if !name_ok {
                return Err(bad(i + 1, "a name is letters, digits, _, -, . and @"));
            }
            if token.len() < MIN_TOKEN_LEN {
                return Err(bad(
                    i + 1,
                    &format!("the token is shorter than {MIN_TOKEN_LEN} characters"),
                ));
            }
            let digest = sha256(token);
            if entries.iter().any(|(n, _)| n == name) {
                return Err(bad(i + 1, &format!("the name {name:?} is given twice")));
            }
            if entries.iter().any(|(_, d)| *d == digest) {
                return Err(bad(i + 1, "this token is also another name's"));
            }
            entries.push((name.to_owned(), digest));
        }
        if entries.is_empty() {
            return Err(GatewayError::Auth(format!("{source} holds no token")));
        }
        Ok(StaticTokens { entries })
    }

    /// The names of `config`'s `principals` entries (rules or limits) that
    /// none of these tokens has, sorted.
    #[must_use]
    pub fn names_missing_from(&self, config: &switchboard_host::Config) -> Vec<String> {
        let mut missing: Vec<String> = config
            .principals
            .keys()
            .chain(config.principal_limits.keys())
            .filter(|name| !self.entries.iter().any(|(n, _)| n == *name))
            .cloned()
            .collect();
        missing.sort();
        missing.dedup();
        missing
    }

    /// The names (principals), in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (never true for a parsed list).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal `token` names, or the refusal of an unknown token.
    fn principal_of(&self, token: &str) -> Result<Principal, AuthError> {
        match self.name_of(token) {
            Some(name) => Ok(Principal::new(name)),
            None => Err(AuthError::Unauthorized("unknown token".into())),
        }
    }

    /// The name of `token`, compared with every entry in constant time.
    fn name_of(&self, token: &str) -> Option<&str> {
        let presented = sha256(token);
        // 0: no match; i + 1: entry i. Every entry is compared.
        let mut found = 0u32;
        for (i, (_, digest)) in self.entries.iter().enumerate() {
            let index = u32::try_from(i + 1).unwrap_or(u32::MAX);
            found.conditional_assign(&index, presented.ct_eq(digest));
        }
        let i = usize::try_from(found).ok()?.checked_sub(1)?;
        self.entries.get(i).map(|(n, _)| n.as_str())
    }
}

impl TokenValidator for StaticTokens {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(std::future::ready(self.principal_of(token)))
    }
}

/// The named tokens in use, replaced whole when the tokens file changes.
struct LiveTokens(RwLock<Arc<StaticTokens>>);

impl TokenValidator for LiveTokens {
    fn validate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let current = Arc::clone(&read_lock(&self.0));
        Box::pin(std::future::ready(current.principal_of(token)))
    }
}

/// What a replacement of the named tokens changed: names only, never
/// tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenChange {
    /// Names that were not there before.
    pub added: Vec<String>,
    /// Names that are gone: their tokens are refused from now on.
    pub removed: Vec<String>,
    /// Names kept with a new token (the old one is refused from now on).
    pub replaced: Vec<String>,
    /// How many tokens are in use now.
    pub count: usize,
}

impl TokenChange {
    fn between(old: &StaticTokens, new: &StaticTokens) -> TokenChange {
        let digest_of = |list: &StaticTokens, name: &str| {
            list.entries
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, d)| *d)
        };
        let mut change = TokenChange {
            count: new.len(),
            ..TokenChange::default()
        };
        for (name, digest) in &new.entries {
            match digest_of(old, name) {
                None => change.added.push(name.clone()),
                Some(d) if d != *digest => change.replaced.push(name.clone()),
                Some(_) => {}
            }
        }
        for (name, _) in &old.entries {
            if digest_of(new, name).is_none() {
                change.removed.push(name.clone());
            }
        }
        change
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.replaced.is_empty()
    }
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

// -- OAuth access tokens ------------------------------------------------------

/// The settings of `serve --auth oauth`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OAuthInbound {
    /// The authorization server's issuer URL (`--issuer`).
    pub issuer: String,
    /// The gateway's canonical MCP URL, the tokens' audience (`--resource`).
    pub resource: String,
    /// Where its keys are (`--jwks-url`); else its metadata's `jwks_uri`.
    pub jwks_url: Option<String>,
    /// Scopes every request needs (`--scope`).
    pub scopes: Vec<String>,
    /// Ask the issuer about each token (RFC 7662) instead of checking a
    /// JWT signature.
    pub introspection: Option<Introspection>,
    /// JWTs whose `typ` is `JWT` (or absent) are accepted too, not only
    /// `at+jwt` ([`JwtVerifier::accept_plain_jwt`]).
    pub accept_plain_jwt: bool,
}

impl OAuthInbound {
    /// Tokens of `issuer` for the gateway at `resource`, checked as JWTs
    /// with the issuer's published keys, no scope required.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> OAuthInbound {
        OAuthInbound {
            issuer: issuer.into(),
            resource: resource.into(),
            jwks_url: None,
            scopes: Vec::new(),
            introspection: None,
            accept_plain_jwt: false,
        }
    }

    /// JWTs whose `typ` is `JWT` (or absent) are accepted too, for an
    /// authorization server that does not mark access tokens `at+jwt`.
    #[must_use]
    pub fn accept_plain_jwt(mut self, accept: bool) -> Self {
        self.accept_plain_jwt = accept;
        self
    }

    /// The keys are at `url`.
    #[must_use]
    pub fn jwks_url(mut self, url: impl Into<String>) -> Self {
        self.jwks_url = Some(url.into());
        self
    }

    /// Every request needs these scopes.
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Tokens are introspected instead.
    #[must_use]
    pub fn introspection(mut self, introspection: Introspection) -> Self {
        self.introspection = Some(introspection);
        self
    }
}

/// Where and as whom tokens are introspected (RFC 7662).
#[derive(Clone, Debug)]
pub struct Introspection {
    /// The introspection endpoint.
    pub url: String,
    /// The gateway's client id at the authorization server.
    pub client_id: String,
    /// Its secret (`client_secret_basic`).
    pub client_secret: Secret,
}

/// Where a token's claims come from.
enum Source {
    Jwks(JwtVerifier),
    // Boxed: the two differ in size, and there is one per gateway.
    Introspection(Box<Introspector>),
}

impl Source {
    async fn claims(&self, token: &str) -> Result<JsonObject, AuthError> {
        match self {
            Source::Jwks(keys) => keys.claims(token).await,
            Source::Introspection(i) => i.claims(token).await,
        }
    }
}

/// The verifier of the issuer's JWTs: its JWK set from `url`, else from
/// the `jwks_uri` of its metadata (found on the first fetch).
fn jwt_verifier(client: IssuerClient, issuer: String, url: Option<String>) -> JwtVerifier {
    let found = Arc::new(std::sync::Mutex::new(url));
    JwtVerifier::new(move || {
        let (client, issuer, found) = (client.clone(), issuer.clone(), Arc::clone(&found));
        Box::pin(async move {
            let known = lock(&found).clone();
            let url = match known {
                Some(url) => url,
                None => {
                    let metadata = client.metadata(&issuer).await.map_err(|e| e.to_string())?;
                    let Some(url) = metadata.jwks_uri else {
                        return Err(format!(
                            "the metadata of {issuer} names no jwks_uri; give --jwks-url"
                        ));
                    };
                    *lock(&found) = Some(url.clone());
                    url
                }
            };
            tracing::debug!(url = %url, "fetching the issuer's JWK set");
            client
                .get_object(&url, "JWK set")
                .await
                .map_err(|e| e.to_string())
        })
    })
}

/// RFC 7662 introspection with a short cache keyed by the token's hash.
struct Introspector {
    client: IssuerClient,
    issuer: String,
    endpoint: String,
    client_id: String,
    client_secret: Secret,
    cache: Mutex<HashMap<[u8; 32], (Instant, JsonObject)>>,
}

impl Introspector {
    async fn claims(&self, token: &str) -> Result<JsonObject, AuthError> {
        let key = sha256(token);
        {
            let cache = self.cache.lock().await;
            if let Some((at, claims)) = cache.get(&key) {
                if at.elapsed() < INTROSPECTION_TTL {
                    return Ok(claims.clone());
                }
            }
        }
        let mut claims = self
            .client
            .introspect(&self.endpoint, &self.client_id, &self.client_secret, token)
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?;
        // The answer comes from the issuer itself: an answer without `iss`
        // is the issuer's.
        claims
            .entry("iss")
            .or_insert_with(|| serde_json::Value::String(self.issuer.clone()));
        let mut cache = self.cache.lock().await;
        if cache.len() >= INTROSPECTION_CACHE {
            cache.retain(|_, (at, _)| at.elapsed() < INTROSPECTION_TTL);
            if cache.len() >= INTROSPECTION_CACHE {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now(), claims.clone()));
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replaced_tokens_take_effect_and_the_change_names_who_came_and_went() {
        let old =
            "ci-bot aaaaaaaaaaaaaaaaaaaa\nalice bbbbbbbbbbbbbbbbbbbbbbbb\nbob cccccccccccccccccccc";
        let auth = InboundAuth::tokens(StaticTokens::parse(old, "f").unwrap(), "http://gw/mcp");
        let validator = auth.validator(&Telemetry::default());
        let who = |token: &'static str| {
            let validator = &validator;
            async move { validator.validate(token).await.ok().map(|p| p.subject) }
        };
        assert_eq!(
            who("bbbbbbbbbbbbbbbbbbbbbbbb").await.as_deref(),
            Some("alice")
        );
        // alice goes, carol comes, bob's token is changed, ci-bot stays.
        let new =
            "ci-bot aaaaaaaaaaaaaaaaaaaa\nbob dddddddddddddddddddd\ncarol eeeeeeeeeeeeeeeeeeee";
        let change = auth
            .replace_tokens(StaticTokens::parse(new, "f").unwrap())
            .unwrap();
        assert_eq!(change.added, ["carol"]);
        assert_eq!(change.removed, ["alice"]);
        assert_eq!(change.replaced, ["bob"]);
        assert_eq!(change.count, 3);
        assert!(!change.is_empty());
        assert_eq!(who("bbbbbbbbbbbbbbbbbbbbbbbb").await, None);
        assert_eq!(who("cccccccccccccccccccc").await, None);
        assert_eq!(who("dddddddddddddddddddd").await.as_deref(), Some("bob"));
        assert_eq!(who("eeeeeeeeeeeeeeeeeeee").await.as_deref(), Some("carol"));
        assert_eq!(who("aaaaaaaaaaaaaaaaaaaa").await.as_deref(), Some("ci-bot"));
        // The same list again changes nothing.
        let again = auth
            .replace_tokens(StaticTokens::parse(new, "f").unwrap())
            .unwrap();
        assert!(again.is_empty(), "{again:?}");
        // A gateway taking OAuth tokens has no named ones to replace.
        let oauth =
            InboundAuth::oauth(OAuthInbound::new("http://127.0.0.1:9/", "http://gw/mcp")).unwrap();
        let refused = oauth.replace_tokens(StaticTokens::parse(new, "f").unwrap());
        assert!(refused.is_err());
    }

    #[test]
    fn static_tokens_parse_and_match() {
        let t = StaticTokens::parse(
            "# team\nci-bot  aaaaaaaaaaaaaaaaaaaa\n\nalice bbbbbbbbbbbbbbbbbbbbbbbb\n",
            "f",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.name_of("aaaaaaaaaaaaaaaaaaaa"), Some("ci-bot"));
        assert_eq!(t.name_of("bbbbbbbbbbbbbbbbbbbbbbbb"), Some("alice"));
        assert_eq!(t.name_of("aaaaaaaaaaaaaaaaaaa"), None);
        assert_eq!(t.name_of(""), None);
        let env = StaticTokens::parse("a 0123456789abcdef; b fedcba9876543210", "env").unwrap();
        assert_eq!(env.name_of("fedcba9876543210"), Some("b"));
        // The Debug form shows names only.
        assert!(!format!("{env:?}").contains("0123456789abcdef"));
    }

    #[test]
    fn bad_token_lists_are_refused_without_quoting_tokens() {
        for (text, why) in [
            ("", "holds no token"),
            ("alice", "two words"),
            ("alice short", "shorter than"),
            ("al!ce 0123456789abcdef", "a name is"),
            ("a 0123456789abcdef\na fedcba9876543210", "given twice"),
            ("a 0123456789abcdef\nb 0123456789abcdef", "also another"),
        ] {
            let e = StaticTokens::parse(text, "tokens.txt")
                .unwrap_err()
                .to_string();
            assert!(e.contains(why) && e.starts_with("tokens.txt"), "{e}");
            assert!(!e.contains("0123456789abcdef"), "{e}");
        }
    }
}
