//! One `mcpServers` entry: its transport (a command line, or an `http` /
//! `sse` URL with headers), environment, timeouts, per-tool settings and
//! rules (its `oauth` settings are read in `oauth`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    IGNORED_SERVER, PERMISSION_KEYS, Parser, RawRules, SERVER_KEYS, did_you_mean, is_http_url,
    key_path,
};
use crate::config::{Identity, OAuthSetting, ProblemKind, ServerConfig, TransportConfig};
use crate::permission::RuleKind;

impl Parser<'_> {
    pub(super) fn server(
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
                env.extend(self.value_map(obj.get("env"), &sub("env"), false));
                let cwd = obj.get("cwd").and_then(|v| self.path(v, &sub("cwd")));
                TransportConfig::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                }
            }
            Some(kind @ ("http" | "sse")) => {
                for k in [
                    "command",
                    "args",
                    "env",
                    "envFile",
                    "cwd",
                    "sandbox",
                    "envPassthrough",
                ] {
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
                let headers = self.value_map(obj.get("headers"), &sub("headers"), true);
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
        if let Some(sandbox) = self.default_sandbox.clone() {
            server.sandbox = sandbox;
        }
        if let Some(v) = obj.get("sandbox") {
            if let Some(sandbox) = self.sandbox(v, &sub("sandbox")) {
                server.sandbox = sandbox;
            }
        }
        server.env_passthrough = self.default_passthrough.clone();
        if let Some(v) = obj.get("envPassthrough") {
            let own = self.passthrough(v, &sub("envPassthrough"));
            server.env_passthrough.extend(own);
        }
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
        if let Some(v) = obj.get("identity") {
            server.identity = self.identity(v, &sub("identity"), &server);
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

        self.server_scale(obj, key, &mut server);

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

    /// A server's `"identity"`: `"gateway"`, `"exchange"` (which needs the
    /// server's OAuth: its authorization server does the exchange) or
    /// `"per-principal"`; HTTP servers only.
    fn identity(&mut self, v: &Value, key: &str, server: &ServerConfig) -> Identity {
        let identity = match v.as_str() {
            Some("gateway") => Identity::Gateway,
            Some("exchange") => Identity::Exchange,
            Some("per-principal") => Identity::PerPrincipal,
            other => {
                let what = other.map_or_else(|| v.to_string(), |s| format!("{s:?}"));
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("unknown identity {what}"),
                    "use \"gateway\" (the default), \"exchange\" or \"per-principal\"",
                );
                return Identity::Gateway;
            }
        };
        if identity == Identity::Gateway {
            return identity;
        }
        if matches!(server.transport, TransportConfig::Stdio { .. }) {
            self.problem(
                ProblemKind::BadValue,
                key,
                "a caller's identity can only be carried to an HTTP server".into(),
                "remove identity, or give each principal its own stdio server entry",
            );
            return Identity::Gateway;
        }
        if identity == Identity::Exchange
            && (server.oauth == OAuthSetting::Off || server.transport.has_authorization_header())
        {
            self.problem(
                ProblemKind::BadValue,
                key,
                "token exchange happens at the server's OAuth authorization server, which this entry does not use".into(),
                "remove \"oauth\": false and the static Authorization header, or use \"per-principal\"",
            );
            return Identity::Gateway;
        }
        identity
    }
}
