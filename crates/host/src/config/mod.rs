//! The configuration: the `mcpServers` file users already have, plus
//! Switchboard's keys beside it.
//!
//! The format is documented in [`config_format`](crate::config_format). In short: Claude Desktop / Claude Code
//! `{"mcpServers": {ALIAS: {...}}}` or VS Code `{"servers": {ALIAS: {...}}}`,
//! with `${VAR}` / `${VAR:-default}` expansion; every problem is reported
//! with the file, the key and what to do, all at once, before any server
//! starts.

mod edit;
mod expand;
mod jsonc;
mod lookup;
mod parse;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::HostError;
use crate::permission::Rule;
use crate::secret::{ConfigValue, SecretError};
pub(crate) use switchboard_client::{Environment, FsAccess, Sandbox};

pub(crate) use edit::add_allow_rule;
pub use lookup::{ConfigLoader, ConfigOrigin};
pub(crate) use parse::{did_you_mean, key_path};

/// Built-in budget for tool results, in characters of text.
pub(crate) const DEFAULT_BUDGET_CHARS: usize = 8_000;
/// Built-in media allowance of a tool result: decoded bytes of images,
/// audio and binary resources passed on unchanged.
pub(crate) const DEFAULT_BUDGET_MEDIA_BYTES: usize = 1 << 20;
/// Characters per token when `MAX_MCP_OUTPUT_TOKENS` sets the budget.
pub(crate) const CHARS_PER_TOKEN: usize = 4;
/// Built-in time a server has to start and list its tools.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Built-in time a tool call may take.
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default deadline of a call the server turned into a task (the tasks
/// extension), from the call to the task's end.
pub(crate) const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(1800);
/// Built-in number of consecutive failures that trips a server's breaker.
pub(crate) const DEFAULT_BREAKER_FAILURES: u32 = 3;
/// Built-in time a tripped server rests before it is probed again.
pub(crate) const DEFAULT_BREAKER_COOLDOWN: Duration = Duration::from_secs(30);
/// Built-in time an idle lazy server keeps running after its last call.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Name of the pins lockfile, beside the config file.
pub(crate) const LOCKFILE_NAME: &str = "switchboard.lock";

/// A loaded, validated configuration.
///
/// Fields are public so an embedding agent can build one in code
/// ([`Config::new`]) or adjust a loaded one before mounting.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it came from.
    pub origin: ConfigOrigin,
    /// The servers, in the order the file lists them.
    pub servers: Vec<ServerConfig>,
    /// Permission rules, top-level ones first, then each server's.
    pub rules: Vec<Rule>,
    /// Characters of text a tool result may carry to the model.
    pub budget_chars: usize,
    /// Decoded bytes of media (images, audio, binary resources) a tool
    /// result may carry unchanged; media over it are summarised.
    pub budget_media_bytes: usize,
    /// Where the audit log goes; `None` keeps no log.
    pub audit: Option<PathBuf>,
    /// When the audit log is rotated (`auditRotate`); `None`: it grows.
    pub audit_rotate: Option<crate::AuditRotation>,
    /// Where pins are kept; `None` keeps them in memory only.
    pub lockfile: Option<PathBuf>,
    /// Default timeouts.
    pub timeouts: Timeouts,
    /// Breaker settings, shared by every server.
    pub breaker: BreakerConfig,
    /// The folders servers may ask about (`roots/list`); `None`: the
    /// working directory.
    pub roots: Option<Vec<PathBuf>>,
    /// Keys of other tools' formats that were accepted but ignored, each a
    /// sentence naming the key, for `doctor`.
    pub notes: Vec<String>,
    /// The model `switchboard chat` uses unless told otherwise (`"model"`).
    pub model: Option<ModelConfig>,
    /// Enterprise identity providers (`"identityProviders"`), by name; a
    /// server's `"oauth": {"idp": NAME}` signs in through one of them.
    pub identity_providers: BTreeMap<String, IdentityProviderConfig>,
    /// Per-caller rules of an authenticated gateway (`"principals"`), by
    /// principal name: `allow` and `deny` rules that narrow what that
    /// caller may call (see `gate::principal_allows`).
    pub principals: BTreeMap<String, Vec<Rule>>,
    /// Whether an authenticated caller without a `principals` entry is
    /// refused everything (`"principalsDefault": "deny"`) instead of being
    /// narrowed by nothing (`"allow"`, the default): with OAuth, any
    /// subject the issuer vouches for is a caller, so a gateway serving
    /// only the ones it names sets this.
    pub principals_default_deny: bool,
    /// The limits on every authenticated caller's calls
    /// (`"callerLimits"`), each caller counted on its own.
    pub caller_limits: crate::CallLimits,
    /// Principals' own limits (`"principals": {NAME: {"limits": …}}`),
    /// over `caller_limits`.
    pub principal_limits: BTreeMap<String, crate::LimitsOverride>,
    /// Principals' own credentials at servers whose `identity` is
    /// `"per-principal"` (`"principals": {NAME: {"credentials": {ALIAS:
    /// VALUE}}}`), by principal, then by alias: the bearer token sent
    /// for that principal's calls, written out or a secret reference.
    pub principal_credentials: BTreeMap<String, BTreeMap<String, ConfigValue>>,
    /// Approvals decided in the gateway's console (`"approvals"`).
    pub approvals: ApprovalsConfig,
    /// The principals that may open the gateway's web console
    /// (`"principals": {NAME: {"console": true}}`, `serve --console`).
    pub console_principals: std::collections::BTreeSet<String>,
    /// When the model is sent only some tools and finds the rest with
    /// `mcp__switchboard__search_tools` (`"toolSearch"`).
    pub tool_search: crate::ToolSearch,
    /// How long server text in the tool table may be
    /// (`"descriptionLimits"`).
    pub description_limits: crate::table::DescriptionLimits,
    /// How long an idle lazy server keeps running (`"idleTimeoutMs"`;
    /// per server too).
    pub idle_timeout: Duration,
    /// Skills served by servers (`"skills"`).
    pub skills: SkillsConfig,
    /// What happens to a tool, prompt or resource template a server adds
    /// after its first mount (`"newTools"`).
    pub new_tools: NewTools,
    /// The tools local policy says are idempotent (`"idempotent"`, in the
    /// rules' pattern syntax): a call of one whose connection broke before
    /// the answer is retried once, with the same idempotency key. The
    /// server's `idempotentHint` alone never counts.
    pub idempotent: Vec<crate::permission::Pattern>,
    /// The eval gate of `switchboard pins accept` (`"evals"`): case files
    /// run against the approved and the changed definitions before a
    /// change is accepted. `None`: accept without running anything.
    pub evals: Option<EvalsConfig>,
}

/// The `"evals"` setting: `{"files": [PATH…], "model": SPEC}` or just
/// `[PATH…]` (then the config's `model` answers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvalsConfig {
    /// Case files, relative to the config's folder.
    pub files: Vec<PathBuf>,
    /// The model spec that runs them (`mock`, `script:FILE`,
    /// `PROVIDER:MODEL`); `None`: the config's `model`.
    pub model: Option<String>,
}

/// The `"approvals"` setting: approvals that wait for a person in the
/// gateway's console when the caller's client cannot be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalsConfig {
    /// Where a call waiting for a person is announced (a JSON POST to an
    /// `http://` URL on loopback); `None`: such calls are denied as
    /// before.
    pub notify: Option<String>,
    /// How long such a call waits for a decision before it is denied.
    pub timeout: Duration,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            notify: None,
            timeout: Duration::from_secs(120),
        }
    }
}

/// Whether `url` is an `http://` URL on loopback (`127.0.0.1`, `[::1]`,
/// `localhost`), with a port or not.
pub(crate) fn loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    matches!(host, "127.0.0.1" | "::1" | "localhost")
}

/// The `"newTools"` setting: whether a definition a server adds after its
/// first mount reaches the model before `switchboard pins accept`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NewTools {
    /// Not offered to the model, and a call by name asks the user, until
    /// accepted (`"ask"`, the default).
    #[default]
    Ask,
    /// Offered as served from the start (`"allow"`); still pinned as first
    /// seen, so a later change is held back like any other.
    Allow,
}

/// The `"skills"` settings: `{"dynamic": "refuse" | "ask", "cacheDir": PATH}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillsConfig {
    /// Whether a `"dynamic"` skill (no digests, so no approval can be
    /// bound to its content) is refused (the default) or asked about on
    /// every load.
    pub dynamic_ask: bool,
    /// Where verified skill content is cached; `None`: the user's cache
    /// directory (`$XDG_CACHE_HOME/switchboard/skills`).
    pub cache_dir: Option<PathBuf>,
}

/// One entry of `identityProviders`: the enterprise IdP whose ID token is
/// exchanged for an ID-JAG (the enterprise-managed authorization grant).
///
/// ```json
/// "identityProviders": {"corp": {"issuer": "https://idp.example.com", "clientId": "switchboard"}}
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct IdentityProviderConfig {
    /// The IdP's issuer URL (OpenID Connect discovery starts there).
    pub issuer: String,
    /// Switchboard's client id at the IdP.
    pub client_id: String,
    /// Its secret, for a confidential client: written out or a secret
    /// reference, resolved by [`IdentityProviderConfig::resolve_secrets`].
    pub client_secret: Option<ConfigValue>,
    /// Scopes asked for at the login besides `openid`.
    pub scopes: Vec<String>,
}

impl fmt::Debug for IdentityProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret never reaches logs.
        f.debug_struct("IdentityProviderConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// The `model` key: which model `switchboard chat` uses unless told
/// otherwise.
///
/// ```json
/// "model": "anthropic:claude-sonnet-4-5"
/// "model": {"name": "openai:llama3", "baseUrl": "http://127.0.0.1:8080"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// `PROVIDER:MODEL`, or `mock`.
    pub name: String,
    /// Where the provider's API is, overriding its environment variable.
    pub base_url: Option<String>,
}

/// Default timeouts, before per-server and per-tool ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time a server has to start (spawn or connect), discover and list.
    pub startup: Duration,
    /// Time a tool call may take.
    pub call: Duration,
    /// Time a tool call the server turned into a task may take in all.
    pub task: Duration,
}

/// When a server's breaker trips and how long it rests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive transport failures or timeouts that trip it.
    pub failures: u32,
    /// How long calls are refused before a probe.
    pub cooldown: Duration,
}

/// One server entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The user's name for it: the key of its entry.
    pub alias: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// `false` keeps it out of the table (shown as disabled).
    pub enabled: bool,
    /// Call timeout for its tools, overriding the default.
    pub timeout: Option<Duration>,
    /// Start-up timeout, overriding the default.
    pub startup_timeout: Option<Duration>,
    /// Call timeouts of single tools, by original tool name.
    pub tool_timeouts: BTreeMap<String, Duration>,
    /// Deadline of its tasked calls, overriding the default.
    pub task_timeout: Option<Duration>,
    /// Whether and how it authorizes with OAuth (HTTP servers only).
    pub oauth: OAuthSetting,
    /// Whether a gateway is ready only once it is mounted (`"required"`,
    /// default `true`): `/readyz` answers 503 while a required, enabled
    /// server is down.
    pub required: bool,
    /// How a stdio server is confined (`"sandbox"`, else
    /// `defaults.sandbox`, else [`Sandbox::baseline`]: `no_new_privs` and
    /// the seccomp filter). Ignored for remote servers.
    pub sandbox: Sandbox,
    /// Host variables a stdio server gets besides the base set
    /// (`"envPassthrough"` after `defaults.envPassthrough`): names or
    /// `PREFIX_*` patterns; `"*"` passes everything.
    pub env_passthrough: Vec<String>,
    /// Not started at launch (`"lazy": true`): its pinned definitions are
    /// listed and searchable, and the first call starts it.
    pub lazy: bool,
    /// Every tool of it is sent to the model in full even when the table
    /// is deferred (`"alwaysLoad": true`).
    pub always_load: bool,
    /// Characters of text a result of its tools may carry to the model,
    /// overriding the top-level `budgetChars`.
    pub budget_chars: Option<usize>,
    /// How long it keeps running idle when lazy, overriding the default.
    pub idle_timeout: Option<Duration>,
    /// Settings of single tools (`"tools": {NAME: {…}}`), by the tool's
    /// name on the server.
    pub tools: BTreeMap<String, ToolSettings>,
    /// Whose identity a gateway's calls carry to it (`"identity"`, HTTP
    /// servers only).
    pub identity: Identity,
}

/// A server's `"identity"`: who its calls arrive as when they come
/// through a gateway with authenticated callers. Listing its tools (the
/// mount) always uses the gateway's own credentials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Identity {
    /// `"gateway"` (the default): the gateway's own login or headers, for
    /// every caller.
    #[default]
    Gateway,
    /// `"exchange"`: the caller's access token is exchanged (RFC 8693) at
    /// the server's authorization server for a token for the same user
    /// at this server; the caller's own token is never sent on.
    Exchange,
    /// `"per-principal"`: the credentials of the caller's
    /// `principals.NAME.credentials.ALIAS` entry; a caller without one is
    /// refused with what to add.
    PerPrincipal,
}

impl Identity {
    /// The value as written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Identity::Gateway => "gateway",
            Identity::Exchange => "exchange",
            Identity::PerPrincipal => "per-principal",
        }
    }
}

/// One entry of a server's `"tools"`: settings of one of its tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// `"alwaysLoad"`: sent in full even when the table is deferred (over
    /// the server's own setting).
    pub always_load: Option<bool>,
    /// `"budgetChars"`: its results' budget, over the server's.
    pub budget_chars: Option<usize>,
}

/// Whether and how an HTTP server authorizes with OAuth 2.1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OAuthSetting {
    /// OAuth when the server asks for it (a 401 challenge), with a client
    /// identity found at the authorization server (Client ID Metadata
    /// Document or dynamic registration). The default; an `Authorization`
    /// entry in `headers` turns it off (the explicit header wins).
    #[default]
    Auto,
    /// `"oauth": false`: never; a 401 is reported as it is.
    Off,
    /// `"oauth": {…}`: OAuth with these client settings.
    Client(OAuthClientConfig),
}

/// The `oauth` block of a server entry.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthClientConfig {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client: written out or a secret
    /// reference, resolved by [`ServerConfig::resolve_secrets`].
    pub client_secret: Option<ConfigValue>,
    /// The issuer the credentials belong to; unset, they are bound to the
    /// first authorization server the resource names.
    pub issuer: Option<String>,
    /// Scopes asked for at every authorization, besides the ones the
    /// server's challenge names (they replace the `scopes_supported`
    /// fallback).
    pub scopes: Vec<String>,
    /// The HTTPS URL of a Client ID Metadata Document describing
    /// Switchboard, used as the client id where supported.
    pub client_metadata_url: Option<String>,
    /// The loopback port the login listens on for the redirect (a
    /// pre-registered redirect URI); a free one when unset.
    pub callback_port: Option<u16>,
    /// Whether tokens are bound to a DPoP key where the authorization
    /// server offers it (unset: yes; `"dpop": false` opts out).
    pub dpop: Option<bool>,
    /// A workload assertion for the JWT-bearer grant (RFC 7523) instead of
    /// a browser login.
    pub assertion: Option<AssertionConfig>,
    /// The `identityProviders` entry whose login authorizes this server
    /// (the enterprise-managed grant) instead of a browser login at it.
    pub idp: Option<Box<ServerIdp>>,
}

/// A server's `"oauth": {"idp": NAME}`, resolved against
/// `identityProviders`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIdp {
    /// The entry's name (`switchboard auth login --idp NAME`).
    pub name: String,
    /// The entry.
    pub provider: IdentityProviderConfig,
}

/// Where a workload's assertion comes from (`"assertion"` in an `oauth`
/// block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssertionConfig {
    /// `{"file": PATH}`: a file the platform refreshes (e.g. a Kubernetes
    /// projected service-account token).
    File(String),
    /// `{"command": [PROGRAM, ARGS…]}`: its standard output.
    Command(Vec<String>),
}

impl fmt::Debug for OAuthClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret never reaches logs.
        f.debug_struct("OAuthClientConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("issuer", &self.issuer)
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("callback_port", &self.callback_port)
            .field("dpop", &self.dpop)
            .field("assertion", &self.assertion)
            .field("idp", &self.idp)
            .finish()
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportConfig {
    /// A child process speaking newline-delimited JSON on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables given to the server on top of the host's it passes
        /// (see [`ServerConfig::env_passthrough`]): written out or secret
        /// references.
        env: BTreeMap<String, ConfigValue>,
        /// Working directory, relative paths resolved against the config
        /// file's folder.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (falling back to older HTTP transports).
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request: written out or secret
        /// references.
        headers: BTreeMap<String, ConfigValue>,
    },
    /// The deprecated HTTP+SSE transport (GET for the event stream, POST to
    /// the announced endpoint).
    Sse {
        /// The SSE endpoint.
        url: String,
        /// Headers sent with every request: written out or secret
        /// references.
        headers: BTreeMap<String, ConfigValue>,
    },
}

impl TransportConfig {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportConfig::Stdio { .. } => "stdio",
            TransportConfig::Http { .. } => "http",
            TransportConfig::Sse { .. } => "sse",
        }
    }

    /// The endpoint of an HTTP transport.
    pub fn url(&self) -> Option<&str> {
        match self {
            TransportConfig::Stdio { .. } => None,
            TransportConfig::Http { url, .. } | TransportConfig::Sse { url, .. } => Some(url),
        }
    }

    /// Whether `headers` holds an `Authorization` header (any case): a
    /// static credential, which OAuth never replaces.
    pub fn has_authorization_header(&self) -> bool {
        match self {
            TransportConfig::Stdio { .. } => false,
            TransportConfig::Http { headers, .. } | TransportConfig::Sse { headers, .. } => headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization")),
        }
    }
}

impl ServerConfig {
    /// A stdio server entry with defaults.
    pub fn stdio(
        alias: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ServerConfig::new(
            alias,
            TransportConfig::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A Streamable HTTP server entry with defaults.
    pub fn http(alias: impl Into<String>, url: impl Into<String>) -> Self {
        ServerConfig::new(
            alias,
            TransportConfig::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    /// An entry with the given transport and defaults for the rest.
    pub fn new(alias: impl Into<String>, transport: TransportConfig) -> Self {
        ServerConfig {
            alias: alias.into(),
            transport,
            enabled: true,
            timeout: None,
            startup_timeout: None,
            tool_timeouts: BTreeMap::new(),
            task_timeout: None,
            oauth: OAuthSetting::Auto,
            required: true,
            sandbox: Sandbox::baseline(),
            env_passthrough: Vec::new(),
            lazy: false,
            always_load: false,
            budget_chars: None,
            idle_timeout: None,
            tools: BTreeMap::new(),
            identity: Identity::Gateway,
        }
    }

    /// The environment policy of a stdio server: the base set plus
    /// [`ServerConfig::env_passthrough`].
    pub fn environment(&self) -> Environment {
        Environment::scrubbed(self.env_passthrough.iter().cloned())
    }

    /// This entry with every secret reference (in `env`, `headers`, the
    /// OAuth client secret, its identity provider's) replaced by its
    /// value, ready to connect with. Values stay wrapped: `Debug` shows
    /// `<redacted>`.
    ///
    /// # Errors
    /// [`SecretError`] for the first reference that cannot be resolved,
    /// with the key it belongs to in its reference text.
    pub async fn resolve_secrets(&self) -> Result<ServerConfig, SecretError> {
        let mut out = self.clone();
        match &mut out.transport {
            TransportConfig::Stdio { env: map, .. } => resolve_map(map, "env").await?,
            TransportConfig::Http { headers: map, .. }
            | TransportConfig::Sse { headers: map, .. } => {
                resolve_map(map, "headers").await?;
            }
        }
        if let OAuthSetting::Client(client) = &mut out.oauth {
            resolve_value(&mut client.client_secret, "oauth.clientSecret").await?;
            if let Some(idp) = &mut client.idp {
                idp.provider = idp.provider.resolve_secrets().await?;
            }
        }
        Ok(out)
    }

    /// Where each configured value of `env` or `headers` comes from, by
    /// name: `value` (written out) or the reference (`file:…`, `cmd:…`).
    /// Never a value.
    pub fn value_sources(&self) -> Vec<(String, String)> {
        let map = match &self.transport {
            TransportConfig::Stdio { env, .. } => env,
            TransportConfig::Http { headers, .. } | TransportConfig::Sse { headers, .. } => headers,
        };
        map.iter().map(|(k, v)| (k.clone(), v.source())).collect()
    }
}

impl IdentityProviderConfig {
    /// This provider with its client secret resolved.
    ///
    /// # Errors
    /// [`SecretError`] when its reference cannot be resolved.
    pub async fn resolve_secrets(&self) -> Result<IdentityProviderConfig, SecretError> {
        let mut out = self.clone();
        resolve_value(&mut out.client_secret, "clientSecret").await?;
        Ok(out)
    }
}

async fn resolve_map(
    map: &mut BTreeMap<String, ConfigValue>,
    section: &str,
) -> Result<(), SecretError> {
    for (name, value) in map.iter_mut() {
        if matches!(value, ConfigValue::Ref(_)) {
            let secret = value
                .resolve()
                .await
                .map_err(|e| e.within(&format!("{section}.{name}")))?;
            *value = ConfigValue::Plain(secret);
        }
    }
    Ok(())
}

async fn resolve_value(value: &mut Option<ConfigValue>, key: &str) -> Result<(), SecretError> {
    if let Some(v @ ConfigValue::Ref(_)) = value {
        let secret = v.resolve().await.map_err(|e| e.within(key))?;
        *v = ConfigValue::Plain(secret);
    }
    Ok(())
}

/// Every problem found in a config, each naming the file and the key.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigProblems {
    /// The file (or `built-in demo config`, or an environment variable).
    pub file: String,
    /// The problems, in file order.
    pub problems: Vec<ConfigProblem>,
}

impl fmt::Display for ConfigProblems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&self.file)?;
            if let Some((line, column)) = p.position {
                write!(f, ":{line}:{column}")?;
            }
            write!(f, ": {}: {}; {}", p.key, p.problem, p.fix)?;
        }
        Ok(())
    }
}

/// One problem in a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Its class.
    pub kind: ProblemKind,
    /// The key path, e.g. `mcpServers.notes.env.TOKEN`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
    /// Line and column, when the JSON reader knows them.
    pub position: Option<(usize, usize)>,
}

/// Classes of config problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The file cannot be read.
    Io,
    /// The file is not JSON (with comments).
    Syntax,
    /// Two servers share an alias.
    DuplicateAlias,
    /// A key appears twice in one object.
    DuplicateKey,
    /// An alias breaks the alias rules.
    BadAlias,
    /// A key Switchboard does not know.
    UnknownKey,
    /// A key holds a value of the wrong type or range.
    BadValue,
    /// A key that must be there is not.
    MissingKey,
    /// A permission pattern cannot be read or names no server.
    BadPattern,
    /// `${VAR}` of an unset variable, or a malformed reference.
    MissingEnvVar,
    /// No config file and no demo to fall back on.
    NotFound,
}

impl Config {
    /// An empty configuration with built-in defaults.
    pub fn new(origin: ConfigOrigin) -> Self {
        Config {
            origin,
            servers: Vec::new(),
            rules: Vec::new(),
            budget_chars: DEFAULT_BUDGET_CHARS,
            budget_media_bytes: DEFAULT_BUDGET_MEDIA_BYTES,
            audit: None,
            audit_rotate: None,
            lockfile: None,
            timeouts: Timeouts {
                startup: DEFAULT_STARTUP_TIMEOUT,
                call: DEFAULT_CALL_TIMEOUT,
                task: DEFAULT_TASK_TIMEOUT,
            },
            breaker: BreakerConfig {
                failures: DEFAULT_BREAKER_FAILURES,
                cooldown: DEFAULT_BREAKER_COOLDOWN,
            },
            notes: Vec::new(),
            model: None,
            roots: None,
            identity_providers: BTreeMap::new(),
            principals: BTreeMap::new(),
            principals_default_deny: false,
            console_principals: std::collections::BTreeSet::new(),
            approvals: ApprovalsConfig::default(),
            caller_limits: crate::CallLimits::default(),
            principal_limits: BTreeMap::new(),
            principal_credentials: BTreeMap::new(),
            skills: SkillsConfig::default(),
            tool_search: crate::ToolSearch::default(),
            description_limits: crate::table::DescriptionLimits::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            new_tools: NewTools::Ask,
            idempotent: Vec::new(),
            evals: None,
        }
    }

    /// Finds and loads the config the usual way (see [`ConfigLoader`]):
    /// `explicit` (`--config FILE`), `$SWITCHBOARD_CONFIG`, `./.mcp.json`,
    /// the user config dir; with none of them, `demo()`.
    ///
    /// # Errors
    /// [`HostError::Config`] listing every problem of the file that was chosen.
    pub fn load(
        explicit: Option<&Path>,
        demo: impl FnOnce() -> Result<Config, HostError> + 'static,
    ) -> Result<Config, HostError> {
        let mut loader = ConfigLoader::new().demo(demo);
        if let Some(path) = explicit {
            loader = loader.explicit(path);
        }
        loader.load()
    }

    /// Reads a config from its text. Relative paths resolve against the
    /// folder of `origin`'s file (or the current directory without one).
    ///
    /// # Errors
    /// [`HostError::Config`] listing every problem found.
    pub fn parse(
        text: &str,
        origin: ConfigOrigin,
        vars: &BTreeMap<String, String>,
    ) -> Result<Config, HostError> {
        Ok(parse::parse(text, origin, vars)?)
    }

    /// The server entry of `alias`.
    pub fn server(&self, alias: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.alias == alias)
    }

    /// The call timeout of `tool` on `alias`: per tool, else per server,
    /// else the default.
    pub fn call_timeout(&self, alias: &str, tool: &str) -> Duration {
        let server = self.server(alias);
        server
            .and_then(|s| s.tool_timeouts.get(tool).copied())
            .or_else(|| server.and_then(|s| s.timeout))
            .unwrap_or(self.timeouts.call)
    }

    /// The limits on `principal`'s calls: its own `limits` over
    /// `callerLimits`.
    pub fn limits_for(&self, principal: &str) -> crate::CallLimits {
        match self.principal_limits.get(principal) {
            Some(own) => own.over(self.caller_limits),
            None => self.caller_limits,
        }
    }

    /// The deadline of a tasked call on `alias`: per server, else the
    /// default (`taskTimeoutMs`).
    pub fn task_timeout(&self, alias: &str) -> Duration {
        self.server(alias)
            .and_then(|s| s.task_timeout)
            .unwrap_or(self.timeouts.task)
    }

    /// The budget of results of `tool` on `alias`: per tool, else per
    /// server, else `budgetChars`.
    pub fn budget_chars(&self, alias: &str, tool: &str) -> usize {
        let server = self.server(alias);
        server
            .and_then(|s| s.tools.get(tool).and_then(|t| t.budget_chars))
            .or_else(|| server.and_then(|s| s.budget_chars))
            .unwrap_or(self.budget_chars)
    }

    /// Whether `tool` of `alias` is sent in full even when the table is
    /// deferred: per tool, else per server.
    pub fn always_load(&self, alias: &str, tool: &str) -> bool {
        let server = self.server(alias);
        server
            .and_then(|s| s.tools.get(tool).and_then(|t| t.always_load))
            .or_else(|| server.map(|s| s.always_load))
            .unwrap_or(false)
    }

    /// How long `alias` keeps running idle when lazy.
    pub fn idle_timeout(&self, alias: &str) -> Duration {
        self.server(alias)
            .and_then(|s| s.idle_timeout)
            .unwrap_or(self.idle_timeout)
    }

    /// The start-up timeout of `alias`.
    pub fn startup_timeout(&self, alias: &str) -> Duration {
        self.server(alias)
            .and_then(|s| s.startup_timeout)
            .unwrap_or(self.timeouts.startup)
    }
}

#[cfg(test)]
mod tests;
