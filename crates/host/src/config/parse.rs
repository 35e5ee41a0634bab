//! The config file's parser: it walks the JSON value and collects every
//! problem (file, key, what is wrong, the fix) instead of stopping at the
//! first one. The types it fills in are in the parent module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use switchboard_wire::is_valid_alias;

use super::{
    AssertionConfig, BreakerConfig, CHARS_PER_TOKEN, Config, ConfigOrigin, ConfigProblem,
    ConfigProblems, LOCKFILE_NAME, OAuthClientConfig, OAuthSetting, ProblemKind, ServerConfig,
    TransportConfig, expand, jsonc,
};
use crate::permission::{Pattern, Rule, RuleKind};

mod idp;
mod model;
mod roots;

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
    "callerLimits",
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
];
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
const PRINCIPAL_KEYS: &[&str] = &["allow", "ask", "deny", "limits"];
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

        if let Some(v) = root.get("principals") {
            (config.principals, config.principal_limits) = self.principals(v, &aliases);
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

    fn server(
        &mut self,
        alias: &str,
        entry: &Value,
        key: &str,
        notes: &mut Vec<String>,
    ) -> Option<(ServerConfig, RawRules)> {
        let Some(obj) = entry.as_object() else {
            self.problem(
                ProblemKind::BadValue,
                key,
                "a server entry must be an object".into(),
                "write {\"command\": \"...\", \"args\": [...]} or {\"type\": \"http\", \"url\": \"...\"}",
            );
            return None;
        };
        self.check_keys(obj, key, SERVER_KEYS, IGNORED_SERVER, notes);
        let sub = |k: &str| key_path(key, k);

        let declared = obj
            .get("type")
            .map(|v| (v, sub("type")))
            .or_else(|| obj.get("transportType").map(|v| (v, sub("transportType"))));
        let kind = match declared {
            Some((v, k)) => match v.as_str() {
                Some("stdio") => Some("stdio"),
                Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => {
                    Some("http")
                }
                Some("sse") => Some("sse"),
                other => {
                    let what = other.map_or_else(|| v.to_string(), |s| format!("{s:?}"));
                    let fix = match other.and_then(|s| did_you_mean(s, &["stdio", "http", "sse"])) {
                        Some(s) => {
                            format!("did you mean {s:?}? use \"stdio\", \"http\" or \"sse\"")
                        }
                        None => "use \"stdio\", \"http\" or \"sse\"".into(),
                    };
                    self.problem(
                        ProblemKind::BadValue,
                        &k,
                        format!("unknown transport type {what}"),
                        fix,
                    );
                    return None;
                }
            },
            None if obj.contains_key("url") && !obj.contains_key("command") => Some("http"),
            None if obj.contains_key("command") => Some("stdio"),
            None => None,
        };

        let transport = match kind {
            Some("stdio") => {
                for k in ["url", "headers", "oauth"] {
                    if obj.contains_key(k) {
                        self.problem(
                            ProblemKind::BadValue,
                            &sub(k),
                            format!("{k} does not apply to a stdio server"),
                            "remove it, or set \"type\": \"http\" and drop command/args",
                        );
                    }
                }
                let Some(command) = self.expanded_string(obj.get("command"), &sub("command"))
                else {
                    if !obj.contains_key("command") {
                        self.problem(
                            ProblemKind::MissingKey,
                            &sub("command"),
                            "a stdio server needs a command".into(),
                            "add \"command\": \"program\" (and \"args\": [...])",
                        );
                    }
                    return None;
                };
                if command.trim().is_empty() {
                    self.problem(
                        ProblemKind::BadValue,
                        &sub("command"),
                        "the command is empty".into(),
                        "name the program to run",
                    );
                }
                let args = self.string_list(obj.get("args"), &sub("args"), true);
                let mut env = BTreeMap::new();
                if let Some(v) = obj.get("envFile") {
                    if let Some(path) = self.path(v, &sub("envFile")) {
                        self.env_file(&path, &sub("envFile"), &mut env);
                    }
                }
                env.extend(self.string_map(obj.get("env"), &sub("env"), true, false));
                let cwd = obj.get("cwd").and_then(|v| self.path(v, &sub("cwd")));
                TransportConfig::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                }
            }
            Some(kind @ ("http" | "sse")) => {
                for k in ["command", "args", "env", "envFile", "cwd"] {
                    if obj.contains_key(k) {
                        self.problem(
                            ProblemKind::BadValue,
                            &sub(k),
                            format!("{k} does not apply to an {kind} server"),
                            "remove it, or drop \"type\"/\"url\" to run a stdio server",
                        );
                    }
                }
                let Some(url) = self.expanded_string(obj.get("url"), &sub("url")) else {
                    if !obj.contains_key("url") {
                        self.problem(
                            ProblemKind::MissingKey,
                            &sub("url"),
                            format!("an {kind} server needs a url"),
                            "add \"url\": \"https://host/mcp\"",
                        );
                    }
                    return None;
                };
                if !is_http_url(&url) {
                    self.problem(
                        ProblemKind::BadValue,
                        &sub("url"),
                        format!("{url:?} is not an http:// or https:// URL"),
                        "write the server's full endpoint URL, e.g. https://host/mcp",
                    );
                }
                let headers = self.string_map(obj.get("headers"), &sub("headers"), true, true);
                if kind == "http" {
                    TransportConfig::Http { url, headers }
                } else {
                    TransportConfig::Sse { url, headers }
                }
            }
            _ => {
                self.problem(
                    ProblemKind::MissingKey,
                    key,
                    "the entry has neither command nor url".into(),
                    "add \"command\" for a stdio server or \"url\" for an HTTP server",
                );
                return None;
            }
        };

        let mut server = ServerConfig::new(alias, transport);
        if let Some(v) = obj.get("oauth") {
            if !matches!(server.transport, TransportConfig::Stdio { .. }) {
                server.oauth = self.oauth(v, &sub("oauth"));
                if server.oauth != OAuthSetting::Off && server.transport.has_authorization_header()
                {
                    self.problem(
                        ProblemKind::BadValue,
                        &sub("oauth"),
                        "the entry also sends a static Authorization header, which always wins over OAuth".into(),
                        "remove the Authorization header to log in with OAuth, or remove oauth to keep the static token",
                    );
                }
            }
        }
        if let Some(v) = obj.get("enabled") {
            match v.as_bool() {
                Some(b) => server.enabled = b,
                None => self.bad_type(&sub("enabled"), "true or false"),
            }
        }
        if let Some(v) = obj.get("required") {
            match v.as_bool() {
                Some(b) => server.required = b,
                None => self.bad_type(&sub("required"), "true or false"),
            }
        }
        if let Some(v) = obj.get("disabled") {
            match v.as_bool() {
                Some(b) if obj.contains_key("enabled") && server.enabled == b => self.problem(
                    ProblemKind::BadValue,
                    &sub("disabled"),
                    "disabled contradicts enabled".into(),
                    "keep only \"enabled\"",
                ),
                Some(b) => server.enabled = !b,
                None => self.bad_type(&sub("disabled"), "true or false"),
            }
        }
        if let Some(v) = obj.get("timeoutMs") {
            server.timeout = self.millis(v, &sub("timeoutMs"));
        }
        if let Some(v) = obj.get("startupTimeoutMs") {
            server.startup_timeout = self.millis(v, &sub("startupTimeoutMs"));
        }
        if let Some(v) = obj.get("taskTimeoutMs") {
            server.task_timeout = self.millis(v, &sub("taskTimeoutMs"));
        }
        if let Some(v) = obj.get("toolTimeouts") {
            let k = sub("toolTimeouts");
            match v.as_object() {
                Some(map) => {
                    for (tool, ms) in map {
                        if let Some(d) = self.millis(ms, &key_path(&k, tool)) {
                            server.tool_timeouts.insert(tool.clone(), d);
                        }
                    }
                }
                None => self.bad_type(&k, "an object mapping tool names to milliseconds"),
            }
        }

        let mut rules = RawRules {
            alias: alias.to_owned(),
            lists: Vec::new(),
        };
        if let Some(p) = obj.get("permissions") {
            rules.lists = self.permission_lists(p, &sub("permissions"), PERMISSION_KEYS);
        }
        if let Some(v) = obj.get("disabledTools") {
            let k = sub("disabledTools");
            for (i, tool) in self.string_list(Some(v), &k, false).into_iter().enumerate() {
                rules
                    .lists
                    .push((RuleKind::Deny, tool, format!("{k}[{i}]")));
            }
        }
        Some((server, rules))
    }

    fn oauth(&mut self, value: &Value, key: &str) -> OAuthSetting {
        let obj = match value {
            Value::Bool(false) => return OAuthSetting::Off,
            Value::Bool(true) => return OAuthSetting::Auto,
            Value::Object(obj) => obj,
            _ => {
                self.bad_type(
                    key,
                    "false, or an object like {\"clientId\": \"...\", \"scopes\": [...]}",
                );
                return OAuthSetting::Auto;
            }
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, OAUTH_KEYS, &[], &mut ignore);
        let sub = |k: &str| key_path(key, k);
        let mut client = OAuthClientConfig {
            client_id: self.expanded_string(obj.get("clientId"), &sub("clientId")),
            client_secret: self.expanded_string(obj.get("clientSecret"), &sub("clientSecret")),
            issuer: self.expanded_string(obj.get("issuer"), &sub("issuer")),
            scopes: self.string_list(obj.get("scopes"), &sub("scopes"), true),
            client_metadata_url: self
                .expanded_string(obj.get("clientMetadataUrl"), &sub("clientMetadataUrl")),
            callback_port: None,
            dpop: None,
            assertion: None,
            idp: None,
        };
        match obj.get("dpop") {
            None => {}
            Some(Value::Bool(b)) => client.dpop = Some(*b),
            Some(_) => self.bad_type(&sub("dpop"), "true or false"),
        }
        if let Some(v) = obj.get("assertion") {
            let k = sub("assertion");
            match v.as_object() {
                Some(a) if a.len() == 1 && a.contains_key("file") => {
                    client.assertion = self
                        .expanded_string(a.get("file"), &key_path(&k, "file"))
                        .map(AssertionConfig::File);
                }
                Some(a) if a.len() == 1 && a.contains_key("command") => {
                    let argv = self.string_list(a.get("command"), &key_path(&k, "command"), true);
                    if argv.is_empty() {
                        self.bad_type(&key_path(&k, "command"), "a program and its arguments");
                    } else {
                        client.assertion = Some(AssertionConfig::Command(argv));
                    }
                }
                _ => self.bad_type(
                    &k,
                    "{\"file\": \"/path/to/token\"} or {\"command\": [\"program\", \"arg\"]}",
                ),
            }
            if client.assertion.is_some() && client.client_id.is_none() {
                self.problem(
                    ProblemKind::MissingKey,
                    &sub("clientId"),
                    "the JWT-bearer grant needs the client id the assertion is presented as".into(),
                    "add \"clientId\" next to \"assertion\"",
                );
            }
        }
        if let Some(v) = obj.get("idp") {
            let k = sub("idp");
            match v.as_str() {
                Some(name) if !name.is_empty() => {
                    client.idp = self.idps.get(name).map(|provider| {
                        Box::new(super::ServerIdp {
                            name: name.to_owned(),
                            provider: provider.clone(),
                        })
                    });
                    self.idp_refs.push((k.clone(), name.to_owned()));
                }
                _ => self.bad_type(&k, "the name of an identityProviders entry"),
            }
            if client.assertion.is_some() {
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    "a server signs in either with a workload assertion or through an identity provider, not both".into(),
                    "remove \"assertion\" or \"idp\"",
                );
            }
            if obj.get("idp").is_some_and(Value::is_string) && client.client_id.is_none() {
                self.problem(
                    ProblemKind::MissingKey,
                    &sub("clientId"),
                    "the enterprise-managed grant needs Switchboard's client id at the server's authorization server".into(),
                    "add \"clientId\" next to \"idp\"",
                );
            }
        }
        if client.client_id.as_deref().is_some_and(str::is_empty) {
            self.bad_type(&sub("clientId"), "a non-empty client id");
        }
        if client.client_secret.is_some() && client.client_id.is_none() {
            self.problem(
                ProblemKind::MissingKey,
                &sub("clientId"),
                "a client secret needs the client id it belongs to".into(),
                "add \"clientId\" next to \"clientSecret\"",
            );
        }
        if let Some(issuer) = &client.issuer {
            if !is_http_url(issuer) {
                self.problem(
                    ProblemKind::BadValue,
                    &sub("issuer"),
                    format!("{issuer:?} is not an http:// or https:// URL"),
                    "write the authorization server's issuer URL, e.g. https://auth.example.com",
                );
            }
        }
        if let Some(url) = &client.client_metadata_url {
            let path = url
                .strip_prefix("https://")
                .and_then(|rest| rest.split_once('/'));
            if !path.is_some_and(|(host, path)| !host.is_empty() && !path.is_empty()) {
                self.problem(
                    ProblemKind::BadValue,
                    &sub("clientMetadataUrl"),
                    format!("{url:?} is not an https:// URL with a path"),
                    "write the https URL your client metadata document is served at, e.g. https://example.com/switchboard.json",
                );
            }
        }
        for (i, scope) in client.scopes.iter().enumerate() {
            if scope.is_empty() || scope.contains(char::is_whitespace) {
                self.problem(
                    ProblemKind::BadValue,
                    &format!("{}[{i}]", sub("scopes")),
                    format!("{scope:?} is not one scope"),
                    "write each scope as its own string, e.g. [\"read\", \"write\"]",
                );
            }
        }
        if let Some(v) = obj.get("callbackPort") {
            match v.as_u64().and_then(|n| u16::try_from(n).ok()) {
                Some(port) if port > 0 => client.callback_port = Some(port),
                _ => self.bad_type(&sub("callbackPort"), "a port number between 1 and 65535"),
            }
        }
        OAuthSetting::Client(client)
    }

    fn permission_lists(
        &mut self,
        value: &Value,
        key: &str,
        known: &[&str],
    ) -> Vec<(RuleKind, String, String)> {
        let Some(obj) = value.as_object() else {
            self.bad_type(key, "an object with allow, ask and deny lists");
            return Vec::new();
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, known, &[], &mut ignore);
        let mut out = Vec::new();
        for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
            let k = key_path(key, kind.key());
            for (i, text) in self
                .string_list(obj.get(kind.key()), &k, false)
                .into_iter()
                .enumerate()
            {
                out.push((kind, text, format!("{k}[{i}]")));
            }
        }
        out
    }

    /// `"principals": {"NAME": {"allow": [...], "deny": [...], "limits":
    /// {...}}}`: rules in the syntax of the top-level `permissions` (`ask`
    /// has no meaning for a caller's narrowing and is refused), and the
    /// caller's own limits.
    fn principals(
        &mut self,
        value: &Value,
        aliases: &[String],
    ) -> (
        BTreeMap<String, Vec<Rule>>,
        BTreeMap<String, crate::LimitsOverride>,
    ) {
        let mut out = BTreeMap::new();
        let mut limits = BTreeMap::new();
        let Some(obj) = value.as_object() else {
            self.bad_type(
                "principals",
                "an object mapping principal names to allow and deny lists",
            );
            return (out, limits);
        };
        for (name, entry) in obj {
            let key = key_path("principals", name);
            if let Some(v) = entry.get("limits") {
                limits.insert(
                    name.clone(),
                    self.limits(v, &key_path(&key, "limits"), true),
                );
            }
            let mut rules = Vec::new();
            for (kind, text, source) in self.permission_lists(entry, &key, PRINCIPAL_KEYS) {
                if kind == RuleKind::Ask {
                    self.problem(
                        ProblemKind::BadValue,
                        &source,
                        "a principal's rules only allow or deny".into(),
                        "move the pattern to allow or deny (questions are asked by the top-level rules)",
                    );
                    continue;
                }
                if let Some(pattern) = self.pattern(&text, &source, aliases, None) {
                    rules.push(Rule {
                        kind,
                        pattern,
                        source,
                    });
                }
            }
            out.insert(name.clone(), rules);
        }
        (out, limits)
    }

    /// A `limits` object (`callerLimits`, or a principal's): each of
    /// `callsPerMinute` and `concurrentCalls` a whole number from 1 up, or
    /// `null` for no limit where `nullable` (a principal lifting one of
    /// `callerLimits`).
    fn limits(&mut self, value: &Value, key: &str, nullable: bool) -> crate::LimitsOverride {
        let mut out = crate::LimitsOverride::default();
        let Some(obj) = value.as_object() else {
            self.bad_type(
                key,
                "an object like {\"callsPerMinute\": 60, \"concurrentCalls\": 4}",
            );
            return out;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, LIMIT_KEYS, &[], &mut ignore);
        for (name, field) in [
            ("callsPerMinute", &mut out.calls_per_minute),
            ("concurrentCalls", &mut out.concurrent_calls),
        ] {
            let Some(v) = obj.get(name) else { continue };
            let path = key_path(key, name);
            if v.is_null() && nullable {
                *field = Some(None);
                continue;
            }
            if let Some(n) = self.positive(v, &path, MAX_LIMIT) {
                *field = Some(Some(u32::try_from(n).unwrap_or(u32::MAX)));
            }
        }
        out
    }

    fn pattern(
        &mut self,
        text: &str,
        source: &str,
        aliases: &[String],
        only: Option<&str>,
    ) -> Option<Pattern> {
        match Pattern::parse(text) {
            Err(e) => {
                self.problem(
                    ProblemKind::BadPattern,
                    source,
                    e.to_string(),
                    "fix the pattern (Claude Code syntax: mcp__ALIAS, mcp__ALIAS__*, mcp__ALIAS__TOOL)",
                );
                None
            }
            Ok(p) if only.is_some_and(|a| a != p.alias()) => {
                self.problem(
                    ProblemKind::BadPattern,
                    source,
                    format!(
                        "pattern {text:?} names server {:?}, not this one",
                        p.alias()
                    ),
                    "move it to the top-level permissions, or write a tool name of this server",
                );
                None
            }
            Ok(p) if !aliases.iter().any(|a| a == p.alias()) => {
                let names: Vec<&str> = aliases.iter().map(String::as_str).collect();
                let fix = match did_you_mean(p.alias(), &names) {
                    Some(s) => format!(
                        "did you mean mcp__{s}? configured aliases: {}",
                        names.join(", ")
                    ),
                    None => format!("configured aliases: {}", names.join(", ")),
                };
                self.problem(
                    ProblemKind::BadPattern,
                    source,
                    format!(
                        "pattern {text:?} names server {:?}, which is not configured",
                        p.alias()
                    ),
                    fix,
                );
                None
            }
            Ok(p) => Some(p),
        }
    }

    fn breaker(&mut self, value: &Value, out: &mut BreakerConfig) {
        let Some(obj) = value.as_object() else {
            self.bad_type(
                "breaker",
                "an object like {\"failures\": 3, \"cooldownMs\": 30000}",
            );
            return;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "breaker", BREAKER_KEYS, &[], &mut ignore);
        if let Some(v) = obj.get("failures") {
            if let Some(n) = self.positive(v, "breaker.failures", 1_000) {
                out.failures = u32::try_from(n).unwrap_or(u32::MAX);
            }
        }
        if let Some(v) = obj.get("cooldownMs") {
            if let Some(d) = self.millis(v, "breaker.cooldownMs") {
                out.cooldown = d;
            }
        }
    }

    fn audit_rotate(&mut self, value: &Value) -> Option<crate::AuditRotation> {
        let Some(obj) = value.as_object() else {
            self.bad_type(
                "auditRotate",
                "an object like {\"maxBytes\": 104857600, \"keep\": 10}",
            );
            return None;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "auditRotate", AUDIT_ROTATE_KEYS, &[], &mut ignore);
        let Some(max) = obj.get("maxBytes") else {
            self.problem(
                ProblemKind::BadValue,
                "auditRotate",
                "has no \"maxBytes\"".into(),
                "give the size at which the log is archived, e.g. \"maxBytes\": 104857600",
            );
            return None;
        };
        let max = self.positive(max, "auditRotate.maxBytes", u64::MAX)?;
        let mut rotation = crate::AuditRotation::at(max);
        if let Some(v) = obj.get("keep") {
            let keep = self.positive(v, "auditRotate.keep", 1_000_000)?;
            rotation = rotation.keeping(usize::try_from(keep).unwrap_or(usize::MAX));
        }
        Some(rotation)
    }

    fn bad_type(&mut self, key: &str, want: &str) {
        self.problem(
            ProblemKind::BadValue,
            key,
            format!("must be {want}"),
            format!("write {want}"),
        );
    }

    fn positive(&mut self, value: &Value, key: &str, max: u64) -> Option<u64> {
        match value.as_u64() {
            Some(n) if n > 0 && n <= max => Some(n),
            _ => {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("{value} is not a whole number between 1 and {max}"),
                    "write a positive whole number",
                );
                None
            }
        }
    }

    fn millis(&mut self, value: &Value, key: &str) -> Option<Duration> {
        match value.as_u64() {
            Some(n) if n > 0 && n <= MAX_MS => Some(Duration::from_millis(n)),
            _ => {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("{value} is not a number of milliseconds between 1 and {MAX_MS}"),
                    "write a whole number of milliseconds, e.g. 30000 for 30 s",
                );
                None
            }
        }
    }

    fn expand(&mut self, raw: &str, key: &str) -> Option<String> {
        match expand::expand(raw, self.vars) {
            Ok(s) => Some(s),
            Err(e) => {
                let (problem, fix) = e.describe();
                self.problem(ProblemKind::MissingEnvVar, key, problem, fix);
                None
            }
        }
    }

    fn expanded_string(&mut self, value: Option<&Value>, key: &str) -> Option<String> {
        match value? {
            Value::String(s) => self.expand(s, key),
            _ => {
                self.bad_type(key, "a string");
                None
            }
        }
    }

    fn string_list(&mut self, value: Option<&Value>, key: &str, expand: bool) -> Vec<String> {
        let Some(value) = value else {
            return Vec::new();
        };
        let Some(items) = value.as_array() else {
            self.bad_type(key, "an array of strings");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let k = format!("{key}[{i}]");
            match item.as_str() {
                Some(s) if expand => {
                    if let Some(s) = self.expand(s, &k) {
                        out.push(s);
                    }
                }
                Some(s) => out.push(s.to_owned()),
                None => self.bad_type(&k, "a string"),
            }
        }
        out
    }

    fn string_map(
        &mut self,
        value: Option<&Value>,
        key: &str,
        expand: bool,
        headers: bool,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(value) = value else {
            return out;
        };
        let Some(obj) = value.as_object() else {
            self.bad_type(key, "an object mapping names to strings");
            return out;
        };
        for (name, v) in obj {
            let k = key_path(key, name);
            let name_ok = if headers {
                switchboard_wire::header::is_token(name)
            } else {
                !name.is_empty() && !name.contains(['=', '\0'])
            };
            if !name_ok {
                let what = if headers {
                    "an HTTP header name"
                } else {
                    "an environment variable name"
                };
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    format!("{name:?} is not a valid {what}"),
                    "rename it",
                );
                continue;
            }
            let Some(raw) = v.as_str() else {
                self.bad_type(&k, "a string");
                continue;
            };
            let Some(s) = (if expand {
                self.expand(raw, &k)
            } else {
                Some(raw.to_owned())
            }) else {
                continue;
            };
            if headers && s.contains(['\r', '\n', '\0']) {
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    "a header value cannot contain line breaks".into(),
                    "remove the line break (check the variable it expands)",
                );
                continue;
            }
            out.insert(name.clone(), s);
        }
        out
    }

    fn path(&mut self, value: &Value, key: &str) -> Option<PathBuf> {
        let s = self.expanded_string(Some(value), key)?;
        if s.is_empty() {
            self.bad_type(key, "a non-empty path");
            return None;
        }
        let p = PathBuf::from(s);
        Some(if p.is_absolute() {
            p
        } else {
            self.base_dir.join(p)
        })
    }

    fn env_file(&mut self, path: &Path, key: &str, env: &mut BTreeMap<String, String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                self.problem(
                    ProblemKind::Io,
                    key,
                    format!("cannot read {}: {e}", path.display()),
                    "create the file or fix the path",
                );
                return;
            }
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((name, value)) = line.split_once('=') else {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("{} line {}: expected NAME=value", path.display(), n + 1),
                    "fix or remove that line",
                );
                continue;
            };
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            env.insert(name.trim().to_owned(), value.to_owned());
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
