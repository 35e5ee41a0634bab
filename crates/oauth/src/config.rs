//! What an [`OAuthProvider`](super::OAuthProvider) is told: the server,
//! how the client identifies itself, which grant, where tokens live, and
//! who (if anyone) can approve an authorization.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::assertion::{AssertionSource, IdentityProvider};
use super::registration::PreRegisteredClient;
use super::store::TokenStore;
use super::user_agent::UserAgent;

/// How tokens are obtained.
#[derive(Clone, Debug, Default)]
pub enum Grant {
    /// Authorization code with PKCE, on behalf of a person (the default).
    #[default]
    AuthorizationCode,
    /// Client credentials, for an agent acting on its own behalf
    /// (machine to machine); the client authenticates with these
    /// credentials (secret or `private_key_jwt`).
    ClientCredentials(PreRegisteredClient),
    /// The JWT-bearer grant (RFC 7523 §2.1) for a workload: a platform
    /// issued JWT is exchanged for an access token; no browser, no secret.
    JwtBearer(JwtBearerGrant),
    /// Enterprise-managed authorization (SEP-990): the user's ID token from
    /// the enterprise identity provider is exchanged there for an ID-JAG,
    /// which the authorization server takes with the JWT-bearer grant.
    EnterpriseManaged(EnterpriseGrant),
}

impl Grant {
    /// The method's name for `switchboard auth status`.
    pub fn describe(&self) -> &'static str {
        match self {
            Grant::AuthorizationCode => "authorization code",
            Grant::ClientCredentials(_) => "client credentials",
            Grant::JwtBearer(_) => "JWT bearer",
            Grant::EnterpriseManaged(_) => "enterprise-managed",
        }
    }
}

/// The JWT-bearer grant's settings.
#[derive(Clone, Debug)]
pub struct JwtBearerGrant {
    /// The client at the authorization server (often a public client id;
    /// a secret or key authenticates it where required).
    pub client: PreRegisteredClient,
    /// Where the workload's JWT comes from (read for every token request).
    pub assertion: AssertionSource,
}

/// The enterprise-managed grant's settings.
#[derive(Clone, Debug)]
pub struct EnterpriseGrant {
    /// The identity provider holding the user's login.
    pub idp: IdentityProvider,
    /// The client at the MCP server's authorization server.
    pub client: PreRegisteredClient,
}

/// Configuration of one server's OAuth client.
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) server: String,
    pub(crate) url: String,
    pub(crate) client_name: String,
    pub(crate) pre_registered: Vec<PreRegisteredClient>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) grant: Grant,
    pub(crate) user_agent: Option<Arc<dyn UserAgent>>,
    pub(crate) store: Option<TokenStore>,
    pub(crate) refresh_tokens: bool,
    pub(crate) max_step_ups: usize,
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    pub(crate) timeout: Duration,
    pub(crate) allow_insecure_http: bool,
    pub(crate) dpop: bool,
    pub(crate) principal: Option<String>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("server", &self.server)
            .field("url", &self.url)
            .field("client_name", &self.client_name)
            .field("pre_registered", &self.pre_registered)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("user_agent", &self.user_agent)
            .field("store", &self.store)
            .field("refresh_tokens", &self.refresh_tokens)
            .field("max_step_ups", &self.max_step_ups)
            .field("timeout", &self.timeout)
            .field("dpop", &self.dpop)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// OAuth for the MCP server `server` (its alias, for messages) at `url`:
    /// authorization code grant, no user agent (a login is reported as
    /// needed until one is set), no persistent store, refresh tokens wanted,
    /// at most two step-ups per operation, 30 s per HTTP exchange.
    pub fn new(server: impl Into<String>, url: impl Into<String>) -> OAuthConfig {
        OAuthConfig {
            server: server.into(),
            url: url.into(),
            client_name: "Switchboard".into(),
            pre_registered: Vec::new(),
            client_metadata_url: None,
            scopes: Vec::new(),
            grant: Grant::AuthorizationCode,
            user_agent: None,
            store: None,
            refresh_tokens: true,
            max_step_ups: 2,
            tls: None,
            timeout: Duration::from_secs(30),
            allow_insecure_http: false,
            dpop: true,
            principal: None,
        }
    }

    /// The `client_name` sent when registering.
    pub fn client_name(mut self, name: impl Into<String>) -> OAuthConfig {
        self.client_name = name.into();
        self
    }

    /// Adds pre-registered credentials (preferred over everything else
    /// at the issuer they belong to).
    pub fn pre_registered(mut self, client: PreRegisteredClient) -> OAuthConfig {
        self.pre_registered.push(client);
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as
    /// `client_id` where the authorization server supports it.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> OAuthConfig {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Scopes the user configured: asked for at every authorization along
    /// with the challenge's `scope`, in place of the `scopes_supported`
    /// fallback (AUTH-C-19 still decides when none are configured).
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> OAuthConfig {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How tokens are obtained (default: authorization code).
    pub fn grant(mut self, grant: Grant) -> OAuthConfig {
        self.grant = grant;
        self
    }

    /// Who approves authorizations. Without one, a needed login fails with
    /// [`OAuthError::NeedsLogin`](super::OAuthError::NeedsLogin).
    pub fn user_agent(mut self, agent: Arc<dyn UserAgent>) -> OAuthConfig {
        self.user_agent = Some(agent);
        self
    }

    /// Keeps tokens and registrations in `store` (default: memory only).
    pub fn store(mut self, store: TokenStore) -> OAuthConfig {
        self.store = Some(store);
        self
    }

    /// Whether to ask for refresh tokens (`refresh_token` grant type when
    /// registering, `offline_access` where advertised). Default true.
    pub fn refresh_tokens(mut self, wanted: bool) -> OAuthConfig {
        self.refresh_tokens = wanted;
        self
    }

    /// How many step-up authorizations one operation may trigger after its
    /// first authorization (default 2, so at most three in all).
    pub fn max_step_ups(mut self, limit: usize) -> OAuthConfig {
        self.max_step_ups = limit;
        self
    }

    /// TLS configuration for authorization traffic (default: Mozilla and
    /// platform roots).
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> OAuthConfig {
        self.tls = Some(config);
        self
    }

    /// Bound on each HTTP exchange with the servers (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> OAuthConfig {
        self.timeout = timeout;
        self
    }

    /// Whether to bind tokens to a DPoP key (RFC 9449) where the
    /// authorization server advertises `dpop_signing_alg_values_supported`
    /// with ES256 (default true; `"oauth": {"dpop": false}` opts out).
    pub fn dpop(mut self, enabled: bool) -> OAuthConfig {
        self.dpop = enabled;
        self
    }

    /// Makes this the login of a gateway's principal `name` at the server
    /// (`switchboard auth login ALIAS --principal NAME`): its tokens are
    /// kept in the store under
    /// [`principal_login_key`](super::principal_login_key), beside (never
    /// in place of) the server's own login.
    pub fn principal(mut self, name: impl Into<String>) -> OAuthConfig {
        self.principal = Some(name.into());
        self
    }

    /// Allows plain `http` authorization endpoints on non-loopback hosts.
    /// Only for closed test networks: tokens and codes travel in clear.
    pub fn allow_insecure_http(mut self, allow: bool) -> OAuthConfig {
        self.allow_insecure_http = allow;
        self
    }
}
