//! Choosing a model: `PROVIDER:MODEL` specs and the config's `model` key.
//!
//! - `anthropic:MODEL`: the Anthropic Messages API; key from
//!   `ANTHROPIC_API_KEY`, base URL from `ANTHROPIC_BASE_URL`.
//! - `openai:MODEL`: OpenAI-compatible Chat Completions; key from
//!   `OPENAI_API_KEY` (optional when `OPENAI_BASE_URL` points elsewhere,
//!   e.g. a local runtime), base URL from `OPENAI_BASE_URL`.
//! - `script:FILE`: the scripted model ([`crate::ScriptedModel`]).
//! - `mock`: the built-in mock model ([`crate::MockModel`]).

use std::path::Path;
use std::sync::Arc;

use crate::mock::MockModel;
use crate::model::{Model, ModelError};
use crate::provider::ProviderOptions;
use crate::provider::anthropic::{self, AnthropicModel};
use crate::provider::openai::{self, OpenAiModel};
use crate::script::ScriptedModel;

/// Where settings come from: the process environment, or a map in tests.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl<F: Fn(&str) -> Option<String>> Env for F {
    fn var(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Overrides of a spec from the config (`"model": {…}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSettings {
    /// Base URL (wins over the environment variable).
    pub base_url: Option<String>,
}

/// The model a spec names, with keys and base URLs from the process
/// environment.
///
/// # Errors
/// [`ModelError::Spec`] for a spec that names no known provider or no
/// model, [`ModelError::MissingKey`] without a key,
/// [`ModelError::Script`] for a bad script.
pub fn model_from_spec(spec: &str) -> Result<Arc<dyn Model>, ModelError> {
    model_from_spec_with(spec, &ModelSettings::default(), &ProcessEnv)
}

/// [`model_from_spec`] with settings and an environment.
///
/// # Errors
/// As [`model_from_spec`].
pub fn model_from_spec_with(
    spec: &str,
    settings: &ModelSettings,
    env: &dyn Env,
) -> Result<Arc<dyn Model>, ModelError> {
    let spec = spec.trim();
    if spec == "mock" {
        return Ok(Arc::new(MockModel::new()));
    }
    let Some((provider, rest)) = spec.split_once(':') else {
        return Err(ModelError::Spec(format!(
            "model {spec:?} names no provider; write PROVIDER:MODEL, e.g. anthropic:claude-sonnet-4-5, \
             openai:gpt-4.1, script:FILE or mock"
        )));
    };
    if rest.trim().is_empty() {
        return Err(ModelError::Spec(format!(
            "model {spec:?} names no model after {provider}:"
        )));
    }
    match provider {
        "script" => Ok(Arc::new(ScriptedModel::load(Path::new(rest))?)),
        "anthropic" => {
            let key = env.var("ANTHROPIC_API_KEY").ok_or(ModelError::MissingKey {
                provider: "anthropic",
                variable: "ANTHROPIC_API_KEY",
            })?;
            let base = settings
                .base_url
                .clone()
                .or_else(|| env.var("ANTHROPIC_BASE_URL"))
                .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_owned());
            Ok(Arc::new(AnthropicModel::new(ProviderOptions::new(
                rest, key, base,
            ))?))
        }
        "openai" => {
            let base = settings
                .base_url
                .clone()
                .or_else(|| env.var("OPENAI_BASE_URL"));
            let key = match (env.var("OPENAI_API_KEY"), &base) {
                (Some(k), _) => k,
                // A local runtime needs no key.
                (None, Some(_)) => String::new(),
                (None, None) => {
                    return Err(ModelError::MissingKey {
                        provider: "openai",
                        variable: "OPENAI_API_KEY",
                    });
                }
            };
            let base = base.unwrap_or_else(|| openai::DEFAULT_BASE_URL.to_owned());
            Ok(Arc::new(OpenAiModel::new(ProviderOptions::new(
                rest, key, base,
            ))?))
        }
        other => Err(ModelError::Spec(format!(
            "unknown model provider {other:?}; use anthropic:MODEL, openai:MODEL, script:FILE or mock"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn specs() {
        let none = env(&[]);
        let s = ModelSettings::default();
        assert_eq!(
            model_from_spec_with("mock", &s, &none).unwrap().name(),
            "mock"
        );
        let e = model_from_spec_with("claude", &s, &none).unwrap_err();
        assert!(e.to_string().contains("PROVIDER:MODEL"), "{e}");
        let e = model_from_spec_with("anthropic:", &s, &none).unwrap_err();
        assert!(e.to_string().contains("names no model"), "{e}");
        let e = model_from_spec_with("gemini:x", &s, &none).unwrap_err();
        assert!(e.to_string().contains("unknown model provider"), "{e}");
        let e = model_from_spec_with("anthropic:claude-x", &s, &none).unwrap_err();
        assert!(e.to_string().contains("set ANTHROPIC_API_KEY"), "{e}");
        let e = model_from_spec_with("openai:gpt-x", &s, &none).unwrap_err();
        assert!(e.to_string().contains("set OPENAI_API_KEY"), "{e}");
        let with = env(&[("ANTHROPIC_API_KEY", "sk-test")]);
        let m = model_from_spec_with("anthropic:claude-x", &s, &with).unwrap();
        assert_eq!(m.name(), "anthropic:claude-x");
        // The key stays out of the debug text.
        assert!(!format!("{m:?}").contains("sk-test"));
        let local = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")]);
        assert_eq!(
            model_from_spec_with("openai:llama", &s, &local)
                .unwrap()
                .name(),
            "openai:llama"
        );
        let e = model_from_spec_with("script:/nonexistent/x.jsonl", &s, &none).unwrap_err();
        assert!(e.to_string().contains("cannot read the script"), "{e}");
    }
}
