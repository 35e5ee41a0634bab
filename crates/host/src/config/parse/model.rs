//! Parsing the `model` key ([`ModelConfig`]): the host only checks its
//! shape; the agent layer knows the providers.
//!
//! ```json
//! "model": "anthropic:claude-sonnet-4-5"
//! "model": {"name": "openai:llama3", "baseUrl": "http://127.0.0.1:8080"}
//! ```

use serde_json::Value;

use super::Parser;
use crate::config::{ModelConfig, ProblemKind};

const MODEL_KEYS: &[&str] = &["name", "baseUrl"];

impl Parser<'_> {
    pub(super) fn model(&mut self, v: &Value) -> Option<ModelConfig> {
        let fix = "write \"model\": \"anthropic:MODEL\" or {\"name\": \"openai:MODEL\", \"baseUrl\": \"http://…\"}";
        let (name, base_url) = match v {
            Value::String(s) => (Some(s.clone()), None),
            Value::Object(o) => {
                let mut notes = Vec::new();
                self.check_keys(o, "model", MODEL_KEYS, &[], &mut notes);
                let base = match o.get("baseUrl") {
                    None => None,
                    Some(Value::String(u))
                        if u.starts_with("http://") || u.starts_with("https://") =>
                    {
                        Some(u.clone())
                    }
                    Some(_) => {
                        self.problem(
                            ProblemKind::BadValue,
                            "model.baseUrl",
                            "must be an http:// or https:// URL".into(),
                            fix,
                        );
                        None
                    }
                };
                (
                    o.get("name").and_then(Value::as_str).map(str::to_owned),
                    base,
                )
            }
            _ => (None, None),
        };
        let Some(name) = name.filter(|n| n == "mock" || n.contains(':')) else {
            self.problem(
                ProblemKind::BadValue,
                "model",
                "must name a model as PROVIDER:MODEL (anthropic:…, openai:…, script:FILE) or mock"
                    .into(),
                fix,
            );
            return None;
        };
        Some(ModelConfig { name, base_url })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::config::{Config, ConfigOrigin, ModelConfig};

    fn parse(model: &str) -> Result<Config, crate::HostError> {
        let text = format!(r#"{{"mcpServers": {{"a": {{"command": "x"}}}}, "model": {model}}}"#);
        Config::parse(&text, ConfigOrigin::Demo, &BTreeMap::new())
    }

    #[test]
    fn a_model_by_name_or_with_a_base_url() {
        let c = parse(r#""anthropic:claude-x""#).unwrap();
        assert_eq!(
            c.model,
            Some(ModelConfig {
                name: "anthropic:claude-x".into(),
                base_url: None
            })
        );
        let c = parse(r#"{"name": "openai:llama", "baseUrl": "http://127.0.0.1:8080"}"#).unwrap();
        let m = c.model.unwrap();
        assert_eq!(m.name, "openai:llama");
        assert_eq!(m.base_url.as_deref(), Some("http://127.0.0.1:8080"));
    }

    #[test]
    fn a_bad_model_is_a_problem_with_a_fix() {
        for bad in [
            r#""claude""#,
            "3",
            r#"{"nme": "mock"}"#,
            r#"{"name": "mock", "baseUrl": "ftp://x"}"#,
        ] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.config_problems()
                    .is_some_and(|c| c.problems.iter().any(|p| p.key.starts_with("model"))),
                "{bad}: {e}"
            );
        }
    }
}
