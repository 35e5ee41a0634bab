//! `descriptionLimits`: how long server text in the tool table may be
//! (`crate::table::DescriptionLimits`).
//!
//! ```json
//! "descriptionLimits": {"description": 2000, "title": 100, "perServer": 40000}
//! ```
//!
//! Each key is optional (its default otherwise), a positive number of
//! characters.

use serde_json::Value;

use super::{Parser, key_path};
use crate::table::DescriptionLimits;

const KEYS: &[&str] = &["description", "title", "perServer"];

impl Parser<'_> {
    /// `descriptionLimits`: an object of positive character counts.
    pub(super) fn description_limits(&mut self, v: &Value) -> DescriptionLimits {
        let mut limits = DescriptionLimits::default();
        let Some(obj) = v.as_object() else {
            self.bad_type(
                "descriptionLimits",
                "an object such as {\"description\": 2000, \"title\": 100, \"perServer\": 40000}",
            );
            return limits;
        };
        let mut notes = Vec::new();
        self.check_keys(obj, "descriptionLimits", KEYS, &[], &mut notes);
        let mut chars = |key: &str, into: &mut usize| {
            if let Some(v) = obj.get(key) {
                if let Some(n) = self.positive(v, &key_path("descriptionLimits", key), u64::MAX) {
                    *into = usize::try_from(n).unwrap_or(usize::MAX);
                }
            }
        };
        chars("description", &mut limits.description);
        chars("title", &mut limits.title);
        chars("perServer", &mut limits.per_server);
        limits
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::config::{Config, ConfigOrigin};
    use crate::table::DescriptionLimits;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, ConfigOrigin::Demo, &BTreeMap::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_each_key() {
        let c = parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        assert_eq!(c.description_limits, DescriptionLimits::default());
        let c = parse(
            r#"{"descriptionLimits": {"description": 500, "perServer": 9000},
                "mcpServers": {"a": {"command": "x"}}}"#,
        )
        .unwrap();
        assert_eq!(c.description_limits.description, 500);
        assert_eq!(
            c.description_limits.title,
            DescriptionLimits::default().title
        );
        assert_eq!(c.description_limits.per_server, 9000);
    }

    #[test]
    fn bad_values_are_named() {
        for (text, key) in [
            (r#""descriptionLimits": 5"#, "descriptionLimits"),
            (
                r#""descriptionLimits": {"title": 0}"#,
                "descriptionLimits.title",
            ),
            (
                r#""descriptionLimits": {"description": "long"}"#,
                "descriptionLimits.description",
            ),
            (r#""descriptionLimits": {"perserver": 10}"#, "perserver"),
        ] {
            let err = parse(&format!(
                r#"{{{text}, "mcpServers": {{"a": {{"command": "x"}}}}}}"#
            ))
            .unwrap_err();
            assert!(err.contains(key), "{text}: {err}");
        }
    }
}
