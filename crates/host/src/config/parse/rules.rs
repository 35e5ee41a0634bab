//! Rules: the `permissions` lists and each server's own, the `principals`
//! entries (their rules and `limits`, and `callerLimits`), and the
//! patterns they are written in.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{LIMIT_KEYS, MAX_LIMIT, PRINCIPAL_KEYS, Parser, did_you_mean, key_path};
use crate::config::ProblemKind;
use crate::permission::{Pattern, Rule, RuleKind};

/// What `principals` gives, by principal: rules, limits, and credentials
/// by server alias.
type Principals = (
    BTreeMap<String, Vec<Rule>>,
    BTreeMap<String, crate::LimitsOverride>,
    BTreeMap<String, BTreeMap<String, crate::secret::ConfigValue>>,
);

impl Parser<'_> {
    pub(super) fn permission_lists(
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
    pub(super) fn principals(&mut self, value: &Value, aliases: &[String]) -> Principals {
        let mut out = BTreeMap::new();
        let mut limits = BTreeMap::new();
        let mut credentials = BTreeMap::new();
        let Some(obj) = value.as_object() else {
            self.bad_type(
                "principals",
                "an object mapping principal names to allow and deny lists",
            );
            return (out, limits, credentials);
        };
        for (name, entry) in obj {
            let key = key_path("principals", name);
            if let Some(v) = entry.get("credentials") {
                let own = self.principal_credentials(v, &key_path(&key, "credentials"), aliases);
                credentials.insert(name.clone(), own);
            }
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
        (out, limits, credentials)
    }

    /// A principal's `credentials`: `{ALIAS: VALUE}`, each alias a
    /// configured server, each value written out or a `{"secret": …}`
    /// reference (the bearer token sent for that principal's calls).
    fn principal_credentials(
        &mut self,
        value: &Value,
        key: &str,
        aliases: &[String],
    ) -> BTreeMap<String, crate::secret::ConfigValue> {
        let mut out = BTreeMap::new();
        let Some(obj) = value.as_object() else {
            self.bad_type(
                key,
                "an object mapping server aliases to {\"secret\": \"file:PATH\"} references",
            );
            return out;
        };
        for (alias, v) in obj {
            let k = key_path(key, alias);
            if !aliases.iter().any(|a| a == alias) {
                let names: Vec<&str> = aliases.iter().map(String::as_str).collect();
                let fix = match super::did_you_mean(alias, &names) {
                    Some(n) => format!("did you mean {n}? use a server alias of mcpServers"),
                    None => "use a server alias of mcpServers".into(),
                };
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    format!("no server is named {alias:?}"),
                    fix,
                );
                continue;
            }
            if let Some(value) = self.config_value(Some(v), &k) {
                out.insert(alias.clone(), value);
            }
        }
        out
    }

    /// The principals whose entry says `"console": true`: they may open
    /// the gateway's web console (`serve --console`).
    pub(super) fn console_principals(
        &mut self,
        value: &Value,
    ) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let Some(obj) = value.as_object() else {
            return out;
        };
        for (name, entry) in obj {
            match entry.get("console") {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => {
                    out.insert(name.clone());
                }
                Some(_) => self.bad_type(
                    &key_path(&key_path("principals", name), "console"),
                    "true or false",
                ),
            }
        }
        out
    }

    /// A `limits` object (`callerLimits`, or a principal's): each of
    /// `callsPerMinute` and `concurrentCalls` a whole number from 1 up, or
    /// `null` for no limit where `nullable` (a principal lifting one of
    /// `callerLimits`).
    pub(super) fn limits(
        &mut self,
        value: &Value,
        key: &str,
        nullable: bool,
    ) -> crate::LimitsOverride {
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

    pub(super) fn pattern(
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
            // The built-in tools' reserved alias is always there.
            Ok(p)
                if p.alias() != crate::builtin::ALIAS
                    && !aliases.iter().any(|a| a == p.alias()) =>
            {
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
}
