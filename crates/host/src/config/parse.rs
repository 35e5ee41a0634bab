//! The config file's parser: it walks the JSON value and collects every
//! problem (file, key, what is wrong, the fix) instead of stopping at the
//! first one. The types it fills in are in the parent module.
//!
//! This file reads the top level (the keys, the environment's defaults)
//! and holds the keys each section knows; each section has its own file:
//! `server` (an `mcpServers` entry), `oauth` (its `oauth` settings),
//! `rules` (`permissions`, `principals`, limits, patterns), `idp`
//! (`identityProviders`), `model`, `roots`, `sections` (`breaker`,
//! `auditRotate`), and `values` (checks and conversions every section
//! uses).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use switchboard_wire::is_valid_alias;

use super::{
    CHARS_PER_TOKEN, Config, ConfigOrigin, ConfigProblem, ConfigProblems, LOCKFILE_NAME, NewTools,
    ProblemKind, jsonc,
};
use crate::permission::{Pattern, Rule, RuleKind};

mod descriptions;
mod evals;
mod idp;
mod model;
mod oauth;
mod roots;
mod rules;
mod sandbox;
mod scale;
mod sections;
mod server;
mod skills;
mod values;

/// Reads a config from its text ([`Config::parse`]).
pub(super) fn parse(
    text: &str,
    origin: ConfigOrigin,
    vars: &BTreeMap<String, String>,
) -> Result<Config, ConfigProblems> {
    let file = origin.describe();
    let fail = |problems| ConfigProblems {
        file: file.clone(),
        problems,
    };
    let value = jsonc::strip(text)
        .and_then(|plain| jsonc::parse(&plain))
        .map_err(|e| fail(vec![syntax_problem(e)]))?;
    let base_dir = origin
        .path()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut parser = Parser {
        vars,
        base_dir,
        problems: Vec::new(),
        idp_refs: Vec::new(),
        idps: BTreeMap::new(),
        default_sandbox: None,
        default_passthrough: Vec::new(),
    };
    let config = parser.config(&value, origin);
    if parser.problems.is_empty() {
        Ok(config)
    } else {
        Err(fail(parser.problems))
    }
}

fn syntax_problem(mut e: jsonc::SyntaxError) -> ConfigProblem {
    // serde_json reports column 0 at the very end of the input.
    e.column = e.column.max(1);
    match e.duplicate {
        Some(path) if is_server_entry(&path) => ConfigProblem {
            kind: ProblemKind::DuplicateAlias,
            problem: "this alias is used twice".into(),
            fix: "give each server its own alias (the key of its entry)".into(),
            key: path,
            position: Some((e.line, e.column)),
        },
        Some(path) => ConfigProblem {
            kind: ProblemKind::DuplicateKey,
            problem: "this key appears twice in its object".into(),
            fix: "remove one of them".into(),
            key: path,
            position: Some((e.line, e.column)),
        },
        None => ConfigProblem {
            kind: ProblemKind::Syntax,
            key: "(file)".into(),
            problem: format!("not valid JSON: {}", e.message),
            fix: "fix the syntax at this position".into(),
            position: Some((e.line, e.column)),
        },
    }
}

fn is_server_entry(path: &str) -> bool {
    ["mcpServers.", "servers."]
        .iter()
        .any(|p| path.strip_prefix(p).is_some_and(|rest| !rest.contains('.')))
}

/// Joins a key path: `a.b`, quoting keys that are not plain identifiers.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    let key = if plain {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

/// Keys of other tools' formats: accepted, ignored, with a note saying so.
const IGNORED_TOP_LEVEL: &[(&str, &str)] = &[
    ("$schema", ""),
    (
        "inputs",
        "VS Code input prompts are not asked; use ${VAR} with an environment variable",
    ),
    ("globalShortcut", "a Claude Desktop setting"),
    ("preferences", "a Claude Desktop setting"),
];
const IGNORED_SERVER: &[(&str, &str)] = &[
    (
        "autoApprove",
        "use permissions.allow with mcp__ALIAS__TOOL patterns instead",
    ),
    (
        "alwaysAllow",
        "use permissions.allow with mcp__ALIAS__TOOL patterns instead",
    ),
    ("timeout", "use timeoutMs (milliseconds) instead"),
    ("description", ""),
    ("dev", "a VS Code development setting"),
    ("gallery", "a VS Code setting"),
    ("version", ""),
];
const TOP_LEVEL_KEYS: &[&str] = &[
    "mcpServers",
    "servers",
    "permissions",
    "budgetChars",
    "budgetMediaBytes",
    "audit",
    "auditRotate",
    "lockfile",
    "timeoutMs",
    "startupTimeoutMs",
    "taskTimeoutMs",
    "breaker",
    "model",
    "roots",
    "identityProviders",
    "principals",
    "principalsDefault",
    "callerLimits",
    "skills",
    "defaults",
    "toolSearch",
    "idleTimeoutMs",
    "newTools",
    "idempotent",
    "descriptionLimits",
    "evals",
    "approvals",
];
const SERVER_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "enabled",
    "disabled",
    "timeoutMs",
    "startupTimeoutMs",
    "taskTimeoutMs",
    "toolTimeouts",
    "permissions",
    "disabledTools",
    "transportType",
    "oauth",
    "required",
    "sandbox",
    "envPassthrough",
    "lazy",
    "alwaysLoad",
    "budgetChars",
    "idleTimeoutMs",
    "tools",
    "identity",
];
const DEFAULTS_KEYS: &[&str] = &["sandbox", "envPassthrough"];
const SANDBOX_KEYS: &[&str] = &[
    "fs",
    "network",
    "memoryMiB",
    "processes",
    "cpuSeconds",
    "required",
];
const SANDBOX_FS_KEYS: &[&str] = &["read", "write"];
const OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecret",
    "issuer",
    "scopes",
    "clientMetadataUrl",
    "callbackPort",
    "dpop",
    "assertion",
    "idp",
];
const PERMISSION_KEYS: &[&str] = &["allow", "ask", "deny"];
const PRINCIPAL_KEYS: &[&str] = &["allow", "ask", "deny", "limits", "console", "credentials"];
const LIMIT_KEYS: &[&str] = &["callsPerMinute", "concurrentCalls"];
/// The most a limit may say (a million calls a minute, or at once).
const MAX_LIMIT: u64 = 1_000_000;
const BREAKER_KEYS: &[&str] = &["failures", "cooldownMs"];
const AUDIT_ROTATE_KEYS: &[&str] = &["maxBytes", "keep"];
/// Longest timeout accepted: a day.
const MAX_MS: u64 = 24 * 60 * 60 * 1000;

/// Walks the JSON value, collecting problems instead of stopping at the
/// first one.
struct Parser<'a> {
    vars: &'a BTreeMap<String, String>,
    base_dir: PathBuf,
    problems: Vec<ConfigProblem>,
    /// Every `oauth.idp` seen (key, name), checked against
    /// `identityProviders` once the whole file is read.
    idp_refs: Vec<(String, String)>,
    /// The `identityProviders` entries, read before the servers.
    idps: BTreeMap<String, super::IdentityProviderConfig>,
    /// `defaults.sandbox`, read before the servers.
    default_sandbox: Option<super::Sandbox>,
    /// `defaults.envPassthrough`, read before the servers.
    default_passthrough: Vec<String>,
}

/// A server entry before permissions are resolved.
struct RawRules {
    alias: String,
    lists: Vec<(RuleKind, String, String)>,
}

impl Parser<'_> {
    fn problem(&mut self, kind: ProblemKind, key: &str, problem: String, fix: impl Into<String>) {
        self.problems.push(ConfigProblem {
            kind,
            key: key.to_owned(),
            problem,
            fix: fix.into(),
            position: None,
        });
    }

    fn config(&mut self, value: &Value, origin: ConfigOrigin) -> Config {
        let mut config = Config::new(origin);
        if let Some(path) = config.origin.path() {
            config.lockfile = Some(path.with_file_name(LOCKFILE_NAME));
        }
        self.env_defaults(&mut config);
        let Some(root) = value.as_object() else {
            self.problem(
                ProblemKind::BadValue,
                "(file)",
                "the file is not a JSON object".into(),
                "write {\"mcpServers\": {\"ALIAS\": {\"command\": \"...\"}}}",
            );
            return config;
        };
        self.check_keys(
            root,
            "",
            TOP_LEVEL_KEYS,
            IGNORED_TOP_LEVEL,
            &mut config.notes,
        );

        if let Some(v) = root.get("identityProviders") {
            self.idps = self.identity_providers(v);
        }
        if let Some(v) = root.get("defaults") {
            self.defaults(v);
        }
        let mut raw_rules = Vec::new();
        let mut seen = BTreeSet::new();
        let mut any_list = false;
        for list_key in ["mcpServers", "servers"] {
            let Some(list) = root.get(list_key) else {
                continue;
            };
            any_list = true;
            let Some(list) = list.as_object() else {
                self.problem(
                    ProblemKind::BadValue,
                    list_key,
                    "must be an object mapping aliases to server entries".into(),
                    format!("write \"{list_key}\": {{\"ALIAS\": {{\"command\": \"...\"}}}}"),
                );
                continue;
            };
            for (alias, entry) in list {
                let key = key_path(list_key, alias);
                if !seen.insert(alias.clone()) {
                    self.problem(
                        ProblemKind::DuplicateAlias,
                        &key,
                        format!("alias {alias:?} is also defined in the other server list"),
                        "give each server its own alias (the key of its entry)",
                    );
                    continue;
                }
                if !is_valid_alias(alias) {
                    self.problem(
                        ProblemKind::BadAlias,
                        &key,
                        format!(
                            "alias {alias:?} is not allowed: aliases are letters, digits, _ and -, without __"
                        ),
                        format!("rename it, e.g. {:?}", suggest_alias(alias)),
                    );
                    continue;
                }
                if alias == crate::builtin::ALIAS {
                    self.problem(
                        ProblemKind::BadAlias,
                        &key,
                        format!(
                            "alias {alias:?} is reserved for Switchboard's own tools (mcp__{alias}__NAME)"
                        ),
                        format!("rename it, e.g. {:?}", format!("{alias}-server")),
                    );
                    continue;
                }
                if let Some((server, rules)) = self.server(alias, entry, &key, &mut config.notes) {
                    config.servers.push(server);
                    raw_rules.push(rules);
                }
            }
        }
        if !any_list {
            self.problem(
                ProblemKind::MissingKey,
                "mcpServers",
                "the file lists no servers".into(),
                "add \"mcpServers\": {\"ALIAS\": {\"command\": \"...\"}}",
            );
        }

        let aliases: Vec<String> = seen.into_iter().collect();
        if let Some(p) = root.get("permissions") {
            let lists = self.permission_lists(p, "permissions", PERMISSION_KEYS);
            for (kind, text, source) in lists {
                if let Some(pattern) = self.pattern(&text, &source, &aliases, None) {
                    config.rules.push(Rule {
                        kind,
                        pattern,
                        source,
                    });
                }
            }
        }
        for raw in raw_rules {
            for (kind, text, source) in raw.lists {
                let pattern = if text == "*" {
                    Some(Pattern::server(&raw.alias))
                } else if text.starts_with(switchboard_wire::naming::PREFIX) {
                    self.pattern(&text, &source, &aliases, Some(&raw.alias))
                } else {
                    Some(Pattern::tool(&raw.alias, &text))
                };
                if let Some(pattern) = pattern {
                    config.rules.push(Rule {
                        kind,
                        pattern,
                        source,
                    });
                }
            }
        }

        if let Some(v) = root.get("idempotent") {
            for (i, text) in self
                .string_list(Some(v), "idempotent", false)
                .into_iter()
                .enumerate()
            {
                let source = format!("idempotent[{i}]");
                if let Some(pattern) = self.pattern(&text, &source, &aliases, None) {
                    config.idempotent.push(pattern);
                }
            }
        }
        if let Some(v) = root.get("principals") {
            (
                config.principals,
                config.principal_limits,
                config.principal_credentials,
            ) = self.principals(v, &aliases);
            config.console_principals = self.console_principals(v);
        }
        if let Some(v) = root.get("principalsDefault") {
            match v.as_str() {
                Some("deny") => config.principals_default_deny = true,
                Some("allow") => config.principals_default_deny = false,
                _ => self.problem(
                    ProblemKind::BadValue,
                    "principalsDefault",
                    format!("{v} is neither \"allow\" nor \"deny\""),
                    "write \"deny\" to refuse callers without a principals entry, or \"allow\" (the default)",
                ),
            }
        }
        if let Some(v) = root.get("callerLimits") {
            let own = self.limits(v, "callerLimits", false);
            config.caller_limits = own.over(crate::CallLimits::default());
        }

        if let Some(v) = root.get("budgetChars") {
            if let Some(n) = self.positive(v, "budgetChars", u64::MAX) {
                config.budget_chars = usize::try_from(n).unwrap_or(usize::MAX);
            }
        }
        if let Some(v) = root.get("budgetMediaBytes") {
            match v.as_u64() {
                Some(n) => config.budget_media_bytes = usize::try_from(n).unwrap_or(usize::MAX),
                None => self.problem(
                    ProblemKind::BadValue,
                    "budgetMediaBytes",
                    format!("{v} is not a whole number of bytes"),
                    "write a whole number (0 summarises every image, audio and binary resource)",
                ),
            }
        }
        if let Some(v) = root.get("timeoutMs") {
            if let Some(d) = self.millis(v, "timeoutMs") {
                config.timeouts.call = d;
            }
        }
        if let Some(v) = root.get("startupTimeoutMs") {
            if let Some(d) = self.millis(v, "startupTimeoutMs") {
                config.timeouts.startup = d;
            }
        }
        if let Some(v) = root.get("taskTimeoutMs") {
            if let Some(d) = self.millis(v, "taskTimeoutMs") {
                config.timeouts.task = d;
            }
        }
        if let Some(v) = root.get("audit") {
            config.audit = self.path(v, "audit");
        }
        if let Some(v) = root.get("auditRotate") {
            config.audit_rotate = self.audit_rotate(v);
        }
        if let Some(v) = root.get("lockfile") {
            config.lockfile = self.path(v, "lockfile");
        }
        if let Some(v) = root.get("breaker") {
            self.breaker(v, &mut config.breaker);
        }
        if let Some(v) = root.get("model") {
            config.model = self.model(v);
        }
        if let Some(v) = root.get("roots") {
            config.roots = self.roots(v);
        }
        if let Some(v) = root.get("skills") {
            config.skills = self.skills(v);
        }
        if let Some(v) = root.get("toolSearch") {
            config.tool_search = self.tool_search(v);
        }
        if let Some(v) = root.get("descriptionLimits") {
            config.description_limits = self.description_limits(v);
        }
        if let Some(v) = root.get("idleTimeoutMs") {
            if let Some(d) = self.millis(v, "idleTimeoutMs") {
                config.idle_timeout = d;
            }
        }
        if let Some(v) = root.get("evals") {
            config.evals = self.evals(v);
        }
        if let Some(v) = root.get("approvals") {
            config.approvals = self.approvals(v);
        }
        match root.get("newTools") {
            None => {}
            Some(Value::String(s)) if s == "ask" => config.new_tools = NewTools::Ask,
            Some(Value::String(s)) if s == "allow" => config.new_tools = NewTools::Allow,
            Some(_) => self.problem(
                ProblemKind::BadValue,
                "newTools",
                "must be \"ask\" or \"allow\"".into(),
                "write \"ask\" (a tool added after the first mount waits for `switchboard pins accept`) \
                 or \"allow\" (offered at once)",
            ),
        }
        config.identity_providers = std::mem::take(&mut self.idps);
        let refs = std::mem::take(&mut self.idp_refs);
        self.check_idp_refs(
            refs,
            &config.identity_providers,
            root.contains_key("identityProviders"),
        );
        config
    }

    fn env_defaults(&mut self, config: &mut Config) {
        let mut read = |name: &str| -> Option<u64> {
            let raw = self.vars.get(name)?;
            match raw.trim().parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    self.problem(
                        ProblemKind::BadValue,
                        &format!("${name}"),
                        format!("environment variable {name}={raw:?} is not a positive integer"),
                        format!("set {name} to a whole number, or unset it"),
                    );
                    None
                }
            }
        };
        if let Some(ms) = read("MCP_TIMEOUT") {
            config.timeouts.startup = Duration::from_millis(ms);
        }
        if let Some(ms) = read("MCP_TOOL_TIMEOUT") {
            config.timeouts.call = Duration::from_millis(ms);
        }
        if let Some(tokens) = read("MAX_MCP_OUTPUT_TOKENS") {
            config.budget_chars = usize::try_from(tokens)
                .unwrap_or(usize::MAX)
                .saturating_mul(CHARS_PER_TOKEN);
        }
    }

    /// `"approvals": {"notify": URL, "timeoutMs": N}`: where the gateway
    /// announces a call waiting for a person in its console (an
    /// `http://` URL on loopback), and how long such a call waits.
    fn approvals(&mut self, value: &Value) -> crate::ApprovalsConfig {
        let mut out = crate::ApprovalsConfig::default();
        let Some(obj) = value.as_object() else {
            self.bad_type("approvals", "an object like {\"notify\": \"http://127.0.0.1:9000/approvals\", \"timeoutMs\": 120000}");
            return out;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "approvals", &["notify", "timeoutMs"], &[], &mut ignore);
        match obj.get("notify") {
            None => {}
            Some(Value::String(url)) if crate::config::loopback_http(url) => {
                out.notify = Some(url.clone());
            }
            Some(_) => self.problem(
                ProblemKind::BadValue,
                "approvals.notify",
                "must be an http:// URL on this machine (127.0.0.1, [::1] or localhost)".into(),
                "point it at a local receiver, e.g. \"http://127.0.0.1:9000/approvals\" (the approval payload names the call; keep it on loopback)",
            ),
        }
        if let Some(v) = obj.get("timeoutMs") {
            if let Some(d) = self.millis(v, "approvals.timeoutMs") {
                out.timeout = d;
            }
        }
        out
    }

    fn check_keys(
        &mut self,
        obj: &Map<String, Value>,
        parent: &str,
        known: &[&str],
        ignored: &[(&str, &str)],
        notes: &mut Vec<String>,
    ) {
        for key in obj.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let path = key_path(parent, key);
            if let Some((_, why)) = ignored.iter().find(|(k, _)| k == key) {
                if !why.is_empty() {
                    notes.push(format!("{path} is ignored: {why}"));
                }
                continue;
            }
            let fix = match did_you_mean(key, known) {
                Some(s) => format!("did you mean {s:?}? known keys: {}", known.join(", ")),
                None => format!("remove it; known keys: {}", known.join(", ")),
            };
            self.problem(ProblemKind::UnknownKey, &path, "unknown key".into(), fix);
        }
    }
}

/// Whether `url` is an `http://` or `https://` URL without whitespace.
fn is_http_url(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://"))
        && !url.contains(char::is_whitespace)
}

/// The closest known word, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&word.to_lowercase(), &k.to_lowercase()),
                *k,
            )
        })
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn suggest_alias(alias: &str) -> String {
    let mut out: String = alias
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    if out.is_empty() { "server".into() } else { out }
}
