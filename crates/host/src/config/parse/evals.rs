//! The top-level `"evals"` setting: the case files `switchboard pins
//! accept` runs against the approved and the changed definitions, and the
//! model that runs them. `["evals/demo.json"]` or
//! `{"files": ["evals/demo.json"], "model": "mock"}`.

use serde_json::Value;

use super::Parser;
use crate::config::{EvalsConfig, ProblemKind};

const EVALS_KEYS: &[&str] = &["files", "model"];

impl Parser<'_> {
    /// Reads `"evals"`; a problem leaves the gate off and is reported.
    pub(super) fn evals(&mut self, value: &Value) -> Option<EvalsConfig> {
        let (files, model) = match value {
            Value::Array(_) => (Some(value), None),
            Value::Object(obj) => {
                let mut ignore = Vec::new();
                self.check_keys(obj, "evals", EVALS_KEYS, &[], &mut ignore);
                (obj.get("files"), obj.get("model"))
            }
            _ => {
                self.bad_type(
                    "evals",
                    "an array of case files or an object like {\"files\": [\"evals/demo.json\"], \"model\": \"mock\"}",
                );
                return None;
            }
        };
        let key = if value.is_array() {
            "evals"
        } else {
            "evals.files"
        };
        let files: Vec<_> = self
            .string_list(files, key, false)
            .into_iter()
            .enumerate()
            .filter_map(|(i, f)| self.path(&Value::String(f), &format!("{key}[{i}]")))
            .collect();
        if files.is_empty() {
            self.problem(
                ProblemKind::BadValue,
                key,
                "names no case file".into(),
                "list at least one case file (e.g. \"evals/demo.json\"), or remove \"evals\" to accept pins without an eval",
            );
            return None;
        }
        let model = match model {
            None => None,
            Some(v) => self.expanded_string(Some(v), "evals.model"),
        };
        Some(EvalsConfig { files, model })
    }
}
