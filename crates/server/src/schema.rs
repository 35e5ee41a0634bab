//! JSON Schema for tool arguments: deriving it from a Rust type, checking a
//! schema before it is published, and validating arguments against it.
//!
//! Validation uses the `jsonschema` crate built without remote resolvers: a
//! `$ref` resolves inside the document only, and a schema whose `$ref`
//! points elsewhere is refused when the tool is registered (JSCH-05/07).
//! Regular expressions use the linear-time `regex` engine, and schemas are
//! bounded in depth and size (JSCH-08), so a schema cannot make validation
//! expensive. A schema without `$schema` is 2020-12 (JSCH-01); a `$schema`
//! naming a dialect the validator does not know is refused (JSCH-02).

use std::fmt::Write as _;

use jsonschema::{PatternOptions, Validator};
use schemars::JsonSchema;
use serde_json::{Map, Value};

/// Deepest nesting of schema objects accepted.
const MAX_DEPTH: usize = 64;
/// Most schema objects accepted in one schema.
const MAX_NODES: usize = 10_000;
/// Most validation errors named in one message.
const MAX_REPORTED: usize = 5;

/// The input schema derived from `T`: a 2020-12 object schema.
pub(crate) fn schema_for<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let mut map = match schema.to_value() {
        Value::Object(map) => map,
        // `true` / `false` schemas: accept any object.
        _ => Map::new(),
    };
    // The Rust type name says nothing to a model.
    map.remove("title");
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        _ => false,
    };
    if !is_object {
        // TOOL-04: the root of an input schema is an object schema.
        let mut wrapped = Map::new();
        wrapped.insert("type".into(), Value::from("object"));
        for (k, v) in map {
            if k != "type" {
                wrapped.insert(k, v);
            }
        }
        map = wrapped;
    }
    map
}

/// A compiled argument validator.
pub(crate) struct ArgValidator {
    validator: Validator,
}

impl std::fmt::Debug for ArgValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgValidator")
    }
}

impl ArgValidator {
    /// Checks and compiles a schema.
    ///
    /// # Errors
    /// A sentence saying why the schema is refused.
    pub(crate) fn compile(schema: &Map<String, Value>) -> Result<ArgValidator, String> {
        check_bounds(schema)?;
        let value = Value::Object(schema.clone());
        let validator = jsonschema::options()
            .offline()
            .with_pattern_options(PatternOptions::regex())
            .build(&value)
            .map_err(|e| format!("schema is not usable: {e}"))?;
        Ok(ArgValidator { validator })
    }

    /// Validates `instance`; on failure, a message naming each failing path
    /// and what was expected there, for the model to fix its call.
    pub(crate) fn validate(&self, instance: &Value) -> Result<(), String> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut message = String::from("The arguments do not match the tool's input schema:");
        let mut count = 0;
        for error in self.validator.iter_errors(instance) {
            count += 1;
            if count > MAX_REPORTED {
                continue;
            }
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            let _ = write!(message, "\n- at {path}: {error}");
        }
        if count > MAX_REPORTED {
            let _ = write!(message, "\n- … and {} more", count - MAX_REPORTED);
        }
        message.push_str("\nFix the arguments and call the tool again.");
        Err(message)
    }
}

fn check_bounds(schema: &Map<String, Value>) -> Result<(), String> {
    let mut nodes = 0usize;
    let mut stack: Vec<(&Value, usize)> = schema.values().map(|v| (v, 1)).collect();
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!("schema is nested deeper than {MAX_DEPTH} levels"));
        }
        match value {
            Value::Object(map) => {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(format!("schema has more than {MAX_NODES} subschemas"));
                }
                stack.extend(map.values().map(|v| (v, depth + 1)));
            }
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(v: Value) -> Result<ArgValidator, String> {
        ArgValidator::compile(v.as_object().unwrap())
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// The text.
        text: String,
        count: Option<u32>,
    }

    #[test]
    fn derived_schema_is_a_2020_12_object() {
        let s = schema_for::<Args>();
        assert_eq!(s["type"], "object");
        assert!(s.get("title").is_none());
        assert_eq!(s["required"], json!(["text"]));
        assert_eq!(s["properties"]["text"]["description"], "The text.");
        let unit = schema_for::<()>();
        assert_eq!(unit["type"], "object");
    }

    #[test]
    fn failures_name_path_and_expectation() {
        let v = compile(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
            "required": ["text"]
        }))
        .unwrap();
        assert!(v.validate(&json!({"text": "hi"})).is_ok());
        let m = v.validate(&json!({"n": 0})).unwrap_err();
        assert!(m.contains("at /: \"text\" is a required property"), "{m}");
        assert!(m.contains("at /n:"), "{m}");
        let m = v.validate(&json!({"text": 5})).unwrap_err();
        assert!(m.contains("at /text: 5 is not of type \"string\""), "{m}");
    }

    // JSCH-05/07: a network $ref is never fetched; the schema is refused.
    #[test]
    fn remote_refs_are_refused() {
        let e = compile(
            json!({"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:9/x.json"}}}),
        );
        assert!(e.is_err());
        let ok = compile(json!({
            "type": "object",
            "$defs": {"a": {"type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/a"}}
        }))
        .unwrap();
        assert!(ok.validate(&json!({"a": 1})).is_err());
    }

    // JSCH-02: unknown dialects are refused with a clear error.
    #[test]
    fn unknown_dialect_is_refused() {
        let e = compile(json!({"$schema": "https://example.com/my-dialect", "type": "object"}));
        assert!(e.is_err());
        let ok = compile(
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
        );
        assert!(ok.is_ok());
    }

    // JSCH-08: bounded schemas.
    #[test]
    fn huge_or_deep_schemas_are_refused() {
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"allOf": [deep]});
        }
        let root = json!({"type": "object", "properties": {"a": deep}});
        assert!(compile(root).unwrap_err().contains("deeper"));
    }
}
