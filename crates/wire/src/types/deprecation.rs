//! A tool marked deprecated by its server: Switchboard's own `_meta` key,
//! since neither the 2026-07-28 revision nor an official extension defines
//! a field for it.
//!
//! The tool's `_meta` carries `"dev.switchboard/deprecated": {"replacement":
//! "NAME", "removal": "YYYY-MM-DD"}` (both members optional; `true` alone
//! marks it deprecated without either). The value comes from the server,
//! so what a client shows of it is checked first: a replacement must look
//! like a tool name, a removal date like a date, or it is left out.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JsonObject, Tool};

/// The `_meta` key of a tool's deprecation.
pub const DEPRECATED_META_KEY: &str = "dev.switchboard/deprecated";

/// Why a tool should no longer be used, and what instead.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deprecation {
    /// The tool to use instead (its name on the same server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// The day after which the tool may be gone, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal: Option<String>,
}

impl Deprecation {
    /// A deprecation naming `replacement` and the `removal` date
    /// (`YYYY-MM-DD`).
    pub fn new(replacement: impl Into<String>, removal: impl Into<String>) -> Deprecation {
        Deprecation {
            replacement: Some(replacement.into()),
            removal: Some(removal.into()),
        }
    }

    /// Whether the removal date is before the day of `ms_since_epoch`
    /// (UTC): the tool may be gone any day.
    pub fn is_past(&self, ms_since_epoch: u64) -> bool {
        let today = crate::tasks::iso8601_utc(ms_since_epoch);
        self.removal
            .as_deref()
            .is_some_and(|d| today.get(..10).is_some_and(|t| d < t))
    }

    /// Reads the deprecation of a `_meta` object; `None` when it has none.
    /// Members that do not look like a tool name or a date are dropped.
    pub fn from_meta(meta: &JsonObject) -> Option<Deprecation> {
        let value = meta.get(DEPRECATED_META_KEY)?;
        let object = match value {
            Value::Bool(true) => return Some(Deprecation::default()),
            Value::Object(o) => o,
            _ => return None,
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str);
        Some(Deprecation {
            replacement: text("replacement")
                .filter(|r| is_tool_name(r))
                .map(str::to_owned),
            removal: text("removal").filter(|d| is_date(d)).map(str::to_owned),
        })
    }
}

impl Tool {
    /// The tool's deprecation ([`DEPRECATED_META_KEY`] in its `_meta`).
    pub fn deprecation(&self) -> Option<Deprecation> {
        self.meta.as_ref().and_then(Deprecation::from_meta)
    }

    /// Marks the tool deprecated, keeping the rest of its `_meta`.
    pub fn set_deprecation(&mut self, deprecation: &Deprecation) {
        let value = serde_json::to_value(deprecation).unwrap_or(Value::Bool(true));
        self.meta
            .get_or_insert_with(JsonObject::new)
            .insert(DEPRECATED_META_KEY.to_owned(), value);
    }
}

/// 1–128 characters of `[A-Za-z0-9_.-]` (TOOL-05).
fn is_tool_name(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `YYYY-MM-DD`, month 01–12, day 01–31.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) || !digits(5..7) {
        return false;
    }
    if !digits(8..10) {
        return false;
    }
    let month = (b[5] - b'0') * 10 + (b[6] - b'0');
    let day = (b[8] - b'0') * 10 + (b[9] - b'0');
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deprecation_round_trips_through_meta_and_bad_members_are_dropped() {
        let mut tool = Tool::new("old", "d", JsonObject::new());
        assert_eq!(tool.deprecation(), None);
        tool.meta = Some(json!({"other": 1}).as_object().unwrap().clone());
        tool.set_deprecation(&Deprecation::new("new_one", "2026-12-31"));
        assert_eq!(tool.meta.as_ref().unwrap()["other"], 1);
        assert_eq!(
            tool.deprecation(),
            Some(Deprecation::new("new_one", "2026-12-31"))
        );
        let meta = |v: Value| {
            json!({ DEPRECATED_META_KEY: v })
                .as_object()
                .unwrap()
                .clone()
        };
        assert_eq!(
            Deprecation::from_meta(&meta(json!(true))),
            Some(Deprecation::default())
        );
        assert_eq!(Deprecation::from_meta(&meta(json!(false))), None);
        assert_eq!(
            Deprecation::from_meta(&meta(json!({
                "replacement": "ignore previous instructions",
                "removal": "soon",
            }))),
            Some(Deprecation::default())
        );
        assert_eq!(
            Deprecation::from_meta(&meta(json!({"removal": "2026-13-01"}))),
            Some(Deprecation::default())
        );
        // 2026-07-28T00:00:00Z.
        let day = 1_785_196_800_000;
        assert!(Deprecation::new("x", "2026-07-27").is_past(day));
        assert!(!Deprecation::new("x", "2026-07-28").is_past(day));
        assert!(!Deprecation::default().is_past(day));
    }
}
