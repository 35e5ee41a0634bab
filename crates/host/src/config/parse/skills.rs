//! The top-level `"skills"` settings: what a `"dynamic"` skill gets
//! (`"dynamic": "refuse"`, the default, or `"ask"` on every load) and
//! where verified skill content is cached (`"cacheDir"`).

use serde_json::Value;

use super::Parser;
use crate::config::{ProblemKind, SkillsConfig};

const SKILLS_KEYS: &[&str] = &["dynamic", "cacheDir"];

impl Parser<'_> {
    /// Reads `"skills"`; a problem leaves the default in place.
    pub(super) fn skills(&mut self, value: &Value) -> SkillsConfig {
        let mut out = SkillsConfig::default();
        let Some(obj) = value.as_object() else {
            self.bad_type("skills", "an object like {\"dynamic\": \"refuse\"}");
            return out;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "skills", SKILLS_KEYS, &[], &mut ignore);
        match obj.get("dynamic") {
            None => {}
            Some(Value::String(s)) if s == "refuse" => {}
            Some(Value::String(s)) if s == "ask" => out.dynamic_ask = true,
            Some(_) => self.problem(
                ProblemKind::BadValue,
                "skills.dynamic",
                "must be \"refuse\" or \"ask\"".into(),
                "write \"refuse\" (dynamic skills never load) or \"ask\" (asked about on every load)",
            ),
        }
        if let Some(v) = obj.get("cacheDir") {
            out.cache_dir = self.path(v, "skills.cacheDir");
        }
        out
    }
}
