//! The keys of a table at scale: `toolSearch` at the top level, and per
//! server `lazy`, `alwaysLoad`, `budgetChars`, `idleTimeoutMs` and `tools`
//! (`{NAME: {"alwaysLoad": …, "budgetChars": …}}`).
//!
//! ```json
//! "toolSearch": "auto",
//! "mcpServers": {"github": {"command": "…", "lazy": true,
//!   "tools": {"search_code": {"alwaysLoad": true, "budgetChars": 20000}}}}
//! ```

use serde_json::{Map, Value};

use super::{Parser, key_path};
use crate::ToolSearch;
use crate::config::{ProblemKind, ServerConfig, ToolSettings};

const TOOL_KEYS: &[&str] = &["alwaysLoad", "budgetChars"];

impl Parser<'_> {
    /// `toolSearch`: `"auto"`, `true`, `false`, or a number of tokens.
    pub(super) fn tool_search(&mut self, v: &Value) -> ToolSearch {
        match v {
            Value::Bool(true) => ToolSearch::On,
            Value::Bool(false) => ToolSearch::Off,
            Value::String(s) if s == "auto" => ToolSearch::Auto,
            Value::Number(n) if n.as_u64().is_some_and(|n| n > 0) => {
                ToolSearch::Tokens(n.as_u64().unwrap_or(u64::MAX))
            }
            _ => {
                self.problem(
                    ProblemKind::BadValue,
                    "toolSearch",
                    format!("{v} is not \"auto\", true, false or a number of tokens"),
                    "write \"auto\" (defer above 10 % of the model's context), true, false, \
                     or a positive number of tokens to defer above",
                );
                ToolSearch::Auto
            }
        }
    }

    /// A server entry's `lazy`, `alwaysLoad`, `budgetChars`,
    /// `idleTimeoutMs` and `tools`.
    pub(super) fn server_scale(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        server: &mut ServerConfig,
    ) {
        let sub = |k: &str| key_path(key, k);
        if let Some(v) = obj.get("lazy") {
            match v.as_bool() {
                Some(b) => server.lazy = b,
                None => self.bad_type(&sub("lazy"), "true or false"),
            }
        }
        if let Some(v) = obj.get("alwaysLoad") {
            match v.as_bool() {
                Some(b) => server.always_load = b,
                None => self.bad_type(&sub("alwaysLoad"), "true or false"),
            }
        }
        if let Some(v) = obj.get("budgetChars") {
            server.budget_chars = self
                .positive(v, &sub("budgetChars"), u64::MAX)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        }
        if let Some(v) = obj.get("idleTimeoutMs") {
            server.idle_timeout = self.millis(v, &sub("idleTimeoutMs"));
        }
        if let Some(v) = obj.get("tools") {
            let k = sub("tools");
            let Some(map) = v.as_object() else {
                self.bad_type(&k, "an object mapping tool names to their settings");
                return;
            };
            for (tool, settings) in map {
                let tk = key_path(&k, tool);
                let Some(settings) = settings.as_object() else {
                    self.bad_type(&tk, "an object such as {\"alwaysLoad\": true}");
                    continue;
                };
                let mut notes = Vec::new();
                self.check_keys(settings, &tk, TOOL_KEYS, &[], &mut notes);
                let mut own = ToolSettings::default();
                if let Some(v) = settings.get("alwaysLoad") {
                    match v.as_bool() {
                        Some(b) => own.always_load = Some(b),
                        None => self.bad_type(&key_path(&tk, "alwaysLoad"), "true or false"),
                    }
                }
                if let Some(v) = settings.get("budgetChars") {
                    own.budget_chars = self
                        .positive(v, &key_path(&tk, "budgetChars"), u64::MAX)
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
                }
                server.tools.insert(tool.clone(), own);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use crate::ToolSearch;
    use crate::config::{Config, ConfigOrigin};

    fn parse(text: &str) -> Result<Config, crate::HostError> {
        Config::parse(text, ConfigOrigin::Demo, &BTreeMap::new())
    }

    #[test]
    fn tool_search_and_the_per_server_and_per_tool_keys() {
        let c = parse(
            r#"{"toolSearch": 5000, "idleTimeoutMs": 1000, "budgetChars": 100,
                "mcpServers": {"a": {"command": "x", "lazy": true, "alwaysLoad": true,
                  "budgetChars": 50, "idleTimeoutMs": 2000,
                  "tools": {"t": {"alwaysLoad": false, "budgetChars": 7}}},
                  "b": {"command": "y"}}}"#,
        )
        .unwrap();
        assert_eq!(c.tool_search, ToolSearch::Tokens(5000));
        assert_eq!(c.idle_timeout, Duration::from_secs(1));
        let a = c.server("a").unwrap();
        assert!(a.lazy);
        assert_eq!(c.idle_timeout("a"), Duration::from_secs(2));
        assert_eq!(c.idle_timeout("b"), Duration::from_secs(1));
        // Per tool over per server over the top level.
        assert_eq!(c.budget_chars("a", "t"), 7);
        assert_eq!(c.budget_chars("a", "u"), 50);
        assert_eq!(c.budget_chars("b", "t"), 100);
        assert!(!c.always_load("a", "t"));
        assert!(c.always_load("a", "u"));
        assert!(!c.always_load("b", "u"));
        for (text, want) in [
            (r#""auto""#, ToolSearch::Auto),
            ("true", ToolSearch::On),
            ("false", ToolSearch::Off),
        ] {
            let c = parse(&format!(
                r#"{{"toolSearch": {text}, "mcpServers": {{"a": {{"command": "x"}}}}}}"#
            ))
            .unwrap();
            assert_eq!(c.tool_search, want);
        }
        // The default: auto.
        assert_eq!(
            parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#)
                .unwrap()
                .tool_search,
            ToolSearch::Auto
        );
    }

    #[test]
    fn bad_values_are_problems_naming_the_key() {
        for (bad, key) in [
            (r#""toolSearch": "sometimes""#, "toolSearch"),
            (r#""toolSearch": 0"#, "toolSearch"),
            (
                r#""mcpServers": {"a": {"command": "x", "lazy": "yes"}}"#,
                "mcpServers.a.lazy",
            ),
            (
                r#""mcpServers": {"a": {"command": "x", "tools": {"t": {"alwaysLoad": 1}}}}"#,
                "mcpServers.a.tools.t.alwaysLoad",
            ),
            (
                r#""mcpServers": {"a": {"command": "x", "tools": {"t": {"budget": 1}}}}"#,
                "mcpServers.a.tools.t.budget",
            ),
            (
                r#""mcpServers": {"a": {"command": "x", "budgetChars": 0}}"#,
                "mcpServers.a.budgetChars",
            ),
        ] {
            let text = if bad.starts_with(r#""mcpServers""#) {
                format!("{{{bad}}}")
            } else {
                format!(r#"{{{bad}, "mcpServers": {{"a": {{"command": "x"}}}}}}"#)
            };
            let e = parse(&text).unwrap_err();
            let problems = e.config_problems().unwrap();
            assert!(
                problems.problems.iter().any(|p| p.key == key),
                "{bad}: {problems}"
            );
        }
    }
}
