//! Input schemas as providers accept them.
//!
//! Schemas are sent as the server gave them, except for shapes the
//! providers are known to refuse. Both the Anthropic and the OpenAI tool
//! APIs want a top-level schema of `"type": "object"` and refuse a
//! top-level `anyOf` / `oneOf` / `allOf`; MCP requires an object too, so
//! such a schema is a server's mistake, and the model should still be able
//! to call the tool. The rules, applied to the top level only:
//!
//! 1. An object schema without combinators is sent unchanged.
//! 2. A missing `type` becomes `"object"`.
//! 3. A top-level `anyOf` / `oneOf` / `allOf` whose branches are objects
//!    is merged into one object: the union of the branches' `properties`
//!    (the first branch wins a name), and as `required` the names every
//!    branch requires (`allOf`: any branch requires). A description line
//!    says the server allows several shapes. Nested combinators stay.
//! 4. A non-object `type` (or a combinator with non-object branches) is
//!    replaced by an empty object schema, and a description line says so;
//!    the server validates the arguments it gets.

use serde_json::{Map, Value, json};
use switchboard_wire::JsonObject;

const COMBINATORS: [&str; 3] = ["anyOf", "oneOf", "allOf"];

/// The schema to send for `schema` (see the module docs), and whether it
/// was changed.
pub fn for_provider(schema: &JsonObject) -> (JsonObject, bool) {
    let has_combinator = COMBINATORS.iter().any(|k| schema.contains_key(*k));
    let ty = schema.get("type");
    let is_object_type = matches!(ty, Some(Value::String(t)) if t == "object");
    if is_object_type && !has_combinator {
        return (schema.clone(), false);
    }
    if ty.is_none() && !has_combinator {
        let mut out = schema.clone();
        out.insert("type".into(), json!("object"));
        return (out, true);
    }
    if has_combinator && (ty.is_none() || is_object_type) {
        if let Some(merged) = merge(schema) {
            return (merged, true);
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert(
        "description".into(),
        json!("The server's input schema is not an object schema; pass the arguments the tool description asks for."),
    );
    (out, true)
}

fn merge(schema: &JsonObject) -> Option<JsonObject> {
    let mut out = schema.clone();
    let mut properties = out
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut required: Vec<Value> = out
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for key in COMBINATORS {
        let Some(branches) = out.remove(key) else {
            continue;
        };
        let branches = branches.as_array()?.clone();
        let mut common: Option<Vec<Value>> = None;
        for branch in &branches {
            let b = branch.as_object()?;
            match b.get("type") {
                None => {}
                Some(Value::String(t)) if t == "object" => {}
                Some(_) => return None,
            }
            if let Some(props) = b.get("properties").and_then(Value::as_object) {
                for (name, p) in props {
                    properties.entry(name.clone()).or_insert_with(|| p.clone());
                }
            }
            let req: Vec<Value> = b
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if key == "allOf" {
                for r in req {
                    if !required.contains(&r) {
                        required.push(r);
                    }
                }
            } else {
                common = Some(match common {
                    None => req,
                    Some(c) => c.into_iter().filter(|r| req.contains(r)).collect(),
                });
            }
        }
        for r in common.unwrap_or_default() {
            if !required.contains(&r) {
                required.push(r);
            }
        }
    }
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(properties));
    if required.is_empty() {
        out.remove("required");
    } else {
        out.insert("required".into(), Value::Array(required));
    }
    let note = "The server allows several argument shapes; give the properties one of them needs.";
    let description = match out.get("description").and_then(Value::as_str) {
        Some(d) => format!("{d}\n{note}"),
        None => note.to_owned(),
    };
    out.insert("description".into(), json!(description));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_object_schema_is_sent_unchanged() {
        let s = obj(
            json!({"type": "object", "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
        );
        assert_eq!(for_provider(&s), (s.clone(), false));
    }

    #[test]
    fn a_missing_type_becomes_object() {
        let (s, changed) = for_provider(&obj(json!({"properties": {"q": {}}})));
        assert!(changed);
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"], json!({"q": {}}));
    }

    #[test]
    fn top_level_one_of_is_merged() {
        let (s, changed) = for_provider(&obj(json!({
            "type": "object",
            "oneOf": [
                {"properties": {"id": {"type": "string"}, "v": {"type": "integer"}}, "required": ["id", "v"]},
                {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "string"}}, "required": ["name", "v"]}
            ]
        })));
        assert!(changed);
        assert!(s.get("oneOf").is_none());
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["v"], json!({"type": "integer"}));
        assert!(s["properties"].get("name").is_some());
        assert_eq!(s["required"], json!(["v"]));
        assert!(s["description"].as_str().unwrap().contains("several"));
    }

    #[test]
    fn top_level_all_of_requires_everything() {
        let (s, _) = for_provider(&obj(json!({
            "allOf": [
                {"properties": {"a": {}}, "required": ["a"]},
                {"properties": {"b": {}}, "required": ["b"]}
            ]
        })));
        assert_eq!(s["required"], json!(["a", "b"]));
    }

    #[test]
    fn a_non_object_schema_becomes_an_empty_object() {
        for bad in [
            json!({"type": "string"}),
            json!({"type": ["object", "null"]}),
            json!({"anyOf": [{"type": "string"}, {"type": "object"}]}),
        ] {
            let (s, changed) = for_provider(&obj(bad.clone()));
            assert!(changed, "{bad}");
            assert_eq!(s["type"], "object", "{bad}");
            assert!(s.get("anyOf").is_none());
        }
    }
}
