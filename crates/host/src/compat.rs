//! Versions of a tool: its deprecation as people and the model are told
//! it, and how a changed definition compares with the approved one.
//!
//! A change is **breaking** when a call written for the approved
//! definition may now fail or mean something else: a property removed (or
//! renamed, which is the same to a caller), a property's type changed, a
//! property newly required, an enum narrowed, the tool removed, or the
//! server's hints turned more dangerous (destructive, no longer read-only,
//! open world). Anything else is **compatible**: descriptions, an optional
//! property added, an enum widened, a type widened. The gate asks again for
//! every change until `pins accept`; the class says how much to look.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_wire::{namespaced_tool_name, types::Deprecation};

/// The short note the model reads at the start of a deprecated tool's
/// description, e.g. `[deprecated: use mcp__notes__search_v2 instead; may
/// be removed after 2026-12-31]`. Only checked members reach it
/// ([`Deprecation::from_meta`]).
pub fn deprecation_note(alias: &str, deprecation: &Deprecation) -> String {
    let mut note = "[deprecated".to_owned();
    let mut sep = ": ";
    if let Some(r) = &deprecation.replacement {
        note.push_str(&format!(
            "{sep}use {} instead",
            namespaced_tool_name(alias, r)
        ));
        sep = "; ";
    }
    if let Some(d) = &deprecation.removal {
        note.push_str(&format!("{sep}may be removed after {d}"));
    }
    note.push(']');
    note
}

/// How a changed definition compares with the approved one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeClass {
    /// Whether any part of the change is breaking.
    pub breaking: bool,
    /// What changed, one short phrase each, breaking ones first.
    pub reasons: Vec<String>,
}

impl ChangeClass {
    /// `breaking` or `compatible`.
    pub fn as_str(&self) -> &'static str {
        if self.breaking {
            "breaking"
        } else {
            "compatible"
        }
    }

    /// The class of a tool that is gone from its server's listing.
    pub fn removed() -> ChangeClass {
        ChangeClass {
            breaking: true,
            reasons: vec!["tool removed".into()],
        }
    }
}

/// Classifies the change from the approved `(description, inputSchema,
/// annotations)` to the current one.
pub(crate) fn classify(
    approved: (Option<&str>, &Value, &Value),
    now: (Option<&str>, &Value, &Value),
) -> ChangeClass {
    let mut breaking = Vec::new();
    let mut compatible = Vec::new();
    if approved.0 != now.0 {
        compatible.push("description changed".to_owned());
    }
    schema_changes("", approved.1, now.1, &mut breaking, &mut compatible);
    hint_changes(approved.2, now.2, &mut breaking, &mut compatible);
    ChangeClass {
        breaking: !breaking.is_empty(),
        reasons: breaking.into_iter().chain(compatible).collect(),
    }
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn required(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A schema's `type` as a set (`"string"` or `["string", "null"]`); empty
/// when absent (any type).
fn types(schema: &Value) -> BTreeSet<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => BTreeSet::from([t.as_str()]),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => BTreeSet::new(),
    }
}

/// Compares two (sub)schemas at `path` (`""` for the arguments object,
/// `a.b` for nested properties, `a[]` for array items).
fn schema_changes(
    path: &str,
    old: &Value,
    new: &Value,
    breaking: &mut Vec<String>,
    compatible: &mut Vec<String>,
) {
    let at = |name: &str| {
        if path.is_empty() {
            format!("`{name}`")
        } else {
            format!("`{path}.{name}`")
        }
    };
    let here = if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("`{path}`")
    };
    // Type: any type the approved one accepted must still be accepted.
    let (old_t, new_t) = (types(old), types(new));
    if old_t != new_t {
        let widened = new_t.is_empty() || (!old_t.is_empty() && old_t.is_subset(&new_t));
        if widened {
            compatible.push(format!("type of {here} widened"));
        } else {
            breaking.push(format!("type of {here} changed"));
        }
    }
    // Enum: every approved value must still be allowed.
    let values = |s: &Value| s.get("enum").and_then(Value::as_array).cloned();
    match (values(old), values(new)) {
        (Some(o), Some(n)) if o != n => {
            if o.iter().all(|v| n.contains(v)) {
                compatible.push(format!("enum of {here} widened"));
            } else {
                breaking.push(format!("enum of {here} narrowed"));
            }
        }
        (None, Some(_)) => breaking.push(format!("enum of {here} narrowed")),
        (Some(_), None) => compatible.push(format!("enum of {here} widened")),
        _ => {}
    }
    let empty = Map::new();
    let (old_p, new_p) = (
        properties(old).unwrap_or(&empty),
        properties(new).unwrap_or(&empty),
    );
    let (old_r, new_r) = (required(old), required(new));
    for (name, schema) in old_p {
        match new_p.get(name) {
            None => breaking.push(format!("property {} removed or renamed", at(name))),
            Some(now) => {
                let nested = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                schema_changes(&nested, schema, now, breaking, compatible);
            }
        }
    }
    for name in new_p.keys().filter(|n| !old_p.contains_key(*n)) {
        if new_r.contains(name.as_str()) {
            breaking.push(format!("new required property {}", at(name)));
        } else {
            compatible.push(format!("optional property {} added", at(name)));
        }
    }
    for name in new_r.difference(&old_r) {
        if old_p.contains_key(*name) {
            breaking.push(format!("property {} now required", at(name)));
        }
    }
    for name in old_r.difference(&new_r) {
        compatible.push(format!("property {} no longer required", at(name)));
    }
    if let (Some(o), Some(n)) = (old.get("items"), new.get("items")) {
        schema_changes(&format!("{path}[]"), o, n, breaking, compatible);
    }
}

/// The server's hints: turning more dangerous is breaking (the gate's
/// reading of the tool changes), anything else compatible.
fn hint_changes(
    old: &Value,
    new: &Value,
    breaking: &mut Vec<String>,
    compatible: &mut Vec<String>,
) {
    if old == new {
        return;
    }
    let hint = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool);
    let mut worse = Vec::new();
    if hint(new, "destructiveHint") == Some(true) && hint(old, "destructiveHint") != Some(true) {
        worse.push("now marked destructive");
    }
    if hint(old, "readOnlyHint") == Some(true) && hint(new, "readOnlyHint") != Some(true) {
        worse.push("no longer marked read-only");
    }
    if hint(new, "openWorldHint") == Some(true) && hint(old, "openWorldHint") != Some(true) {
        worse.push("now marked open-world");
    }
    if worse.is_empty() {
        compatible.push("annotations changed".into());
    } else {
        breaking.extend(worse.into_iter().map(str::to_owned));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(old: Value, new: Value) -> ChangeClass {
        classify(
            (Some("d"), &old, &Value::Null),
            (Some("d"), &new, &Value::Null),
        )
    }

    fn base() -> Value {
        json!({"type": "object", "properties": {
            "q": {"type": "string"},
            "mode": {"type": "string", "enum": ["fast", "full"]},
        }, "required": ["q"]})
    }

    // Issue 39, item 3: each breaking kind of change is breaking.
    #[test]
    fn breaking_changes_are_classified_breaking() {
        let mut removed = base();
        removed["properties"]
            .as_object_mut()
            .unwrap()
            .remove("mode");
        let mut renamed = base();
        let q = renamed["properties"]
            .as_object_mut()
            .unwrap()
            .remove("q")
            .unwrap();
        renamed["properties"]["query"] = q;
        renamed["required"] = json!(["query"]);
        let mut retyped = base();
        retyped["properties"]["q"]["type"] = json!("integer");
        let mut required = base();
        required["properties"]["limit"] = json!({"type": "integer"});
        required["required"] = json!(["q", "limit"]);
        let mut now_required = base();
        now_required["required"] = json!(["q", "mode"]);
        let mut narrowed = base();
        narrowed["properties"]["mode"]["enum"] = json!(["fast"]);
        for (new, reason) in [
            (removed, "property `mode` removed or renamed"),
            (renamed, "property `q` removed or renamed"),
            (retyped, "type of `q` changed"),
            (required, "new required property `limit`"),
            (now_required, "property `mode` now required"),
            (narrowed, "enum of `mode` narrowed"),
        ] {
            let c = class(base(), new);
            assert!(c.breaking, "{reason}: {c:?}");
            assert_eq!(c.as_str(), "breaking");
            assert!(c.reasons.contains(&reason.to_owned()), "{reason}: {c:?}");
        }
        let hints = classify(
            (None, &base(), &json!({"readOnlyHint": true})),
            (None, &base(), &json!({"readOnlyHint": false})),
        );
        assert!(hints.breaking, "{hints:?}");
        assert!(ChangeClass::removed().breaking);
    }

    // Issue 39, item 3: descriptions, optional additions and widenings are
    // compatible.
    #[test]
    fn compatible_changes_are_classified_compatible() {
        let mut optional = base();
        optional["properties"]["limit"] = json!({"type": "integer"});
        let mut widened = base();
        widened["properties"]["mode"]["enum"] = json!(["fast", "full", "deep"]);
        let mut described = base();
        described["properties"]["q"]["description"] = json!("what to find");
        let mut nullable = base();
        nullable["properties"]["q"]["type"] = json!(["string", "null"]);
        for (new, reason) in [
            (optional, Some("optional property `limit` added")),
            (widened, Some("enum of `mode` widened")),
            (described, None),
            (nullable, Some("type of `q` widened")),
        ] {
            let c = class(base(), new);
            assert!(!c.breaking, "{c:?}");
            if let Some(reason) = reason {
                assert!(c.reasons.contains(&reason.to_owned()), "{reason}: {c:?}");
            }
        }
        let text = classify(
            (Some("old"), &base(), &Value::Null),
            (Some("new"), &base(), &Value::Null),
        );
        assert_eq!(text.as_str(), "compatible");
        assert_eq!(text.reasons, ["description changed"]);
        // A nested property removed is breaking too.
        let nested = |inner: Value| json!({"type": "object", "properties": {"f": {"type": "object", "properties": inner}}});
        let c = class(nested(json!({"a": {}, "b": {}})), nested(json!({"a": {}})));
        assert!(
            c.reasons
                .contains(&"property `f.b` removed or renamed".to_owned()),
            "{c:?}"
        );
    }

    #[test]
    fn the_deprecation_note_names_the_replacement_as_the_model_calls_it() {
        assert_eq!(
            deprecation_note("notes", &Deprecation::new("search_v2", "2026-12-31")),
            "[deprecated: use mcp__notes__search_v2 instead; may be removed after 2026-12-31]"
        );
        assert_eq!(
            deprecation_note("notes", &Deprecation::default()),
            "[deprecated]"
        );
    }
}
