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
use switchboard_wire::cursor::Cursor;

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

/// The dialect a flat schema may name (the default one).
const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// An input schema simple enough to be checked on the arguments' text, for
/// the arguments most calls send: an object of named scalars.
///
/// It is an object schema whose properties each allow some of the scalar
/// types (`string`, `integer`, `number`, `boolean`, `null`), perhaps with
/// integer `minimum`/`maximum` bounds or an `enum` of strings, and
/// annotations (`description`, `format`, which 2020-12 does not assert,
/// …); the schemas `schemars` derives for a struct of such fields are.
///
/// [`FlatSchema::admits`] only says yes when the validator would: a flat
/// object of known, distinct members whose values are of their allowed
/// types, with every required member present. Anything else (a nested
/// value, an unknown member, a decimal where an integer is asked for, …)
/// is left to [`ArgValidator`], which owns every refusal and its words.
#[derive(Debug)]
pub(crate) struct FlatSchema {
    properties: Vec<FlatProperty>,
    /// One bit per property (by index) that must be present.
    required: u64,
}

/// One property of a [`FlatSchema`].
#[derive(Debug)]
struct FlatProperty {
    name: String,
    /// The JSON types allowed, as [`kind`] bits.
    kinds: u8,
    minimum: Option<i64>,
    maximum: Option<i64>,
    /// `enum`: the strings allowed, when the schema lists them.
    strings: Option<Vec<String>>,
}

/// The bits of [`FlatProperty::kinds`].
mod kind {
    pub(super) const STRING: u8 = 1;
    pub(super) const INTEGER: u8 = 2;
    pub(super) const NUMBER: u8 = 4;
    pub(super) const BOOLEAN: u8 = 8;
    pub(super) const NULL: u8 = 16;
}

/// Most properties a flat schema has (one bit each in a word).
const MOST_FLAT_PROPERTIES: usize = 64;

impl FlatSchema {
    /// `schema` as a flat schema; `None` when it asks for more than one
    /// can check.
    pub(crate) fn of(schema: &Map<String, Value>) -> Option<FlatSchema> {
        const ROOT: &[&str] = &[
            "type",
            "properties",
            "required",
            "additionalProperties",
            "$schema",
            "title",
            "description",
            "$comment",
            "default",
            "examples",
        ];
        // Unknown members are never admitted, so `additionalProperties`
        // (whatever it says) never decides an admitted object.
        if schema.keys().any(|k| !ROOT.contains(&k.as_str()))
            || schema.get("type")? != "object"
            || schema
                .get("$schema")
                .is_some_and(|d| d.as_str() != Some(DIALECT_2020_12))
        {
            return None;
        }
        let properties = match schema.get("properties") {
            None => Vec::new(),
            Some(Value::Object(properties)) => properties
                .iter()
                .map(|(name, property)| FlatProperty::of(name, property))
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        if properties.len() > MOST_FLAT_PROPERTIES {
            return None;
        }
        let mut required = 0u64;
        for name in schema
            .get("required")
            .map_or(Some(&[][..]), |r| r.as_array().map(Vec::as_slice))?
        {
            let index = properties
                .iter()
                .position(|p| Some(p.name.as_str()) == name.as_str())?;
            required |= 1 << index;
        }
        Some(FlatSchema {
            properties,
            required,
        })
    }

    /// Whether `text`, a JSON object, is certainly valid: each member a
    /// property of the schema, at most once, with a scalar value it
    /// allows, and every required one present. `false` says nothing: the
    /// arguments are then parsed and validated in full.
    pub(crate) fn admits(&self, text: &str) -> bool {
        let mut seen = 0u64;
        let mut c = Cursor::new(text);
        let members = c.flat_object(|key, value| {
            let index = self.properties.iter().position(|p| p.name == key)?;
            let bit = 1 << index;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            self.properties[index].admits(value).then_some(())
        });
        members.is_some() && c.end().is_some() && seen & self.required == self.required
    }
}

impl FlatProperty {
    fn of(name: &str, schema: &Value) -> Option<FlatProperty> {
        const KEYWORDS: &[&str] = &[
            "type",
            "minimum",
            "maximum",
            "enum",
            "format",
            "title",
            "description",
            "$comment",
            "default",
            "examples",
            "deprecated",
            "readOnly",
            "writeOnly",
        ];
        // A property of any type (`true`, or no `type`) may be read by a
        // type that keeps its text as it stands (`RawValue`), which would
        // differ from the JSON reading's: not flat.
        let Value::Object(schema) = schema else {
            return None;
        };
        if schema.keys().any(|k| !KEYWORDS.contains(&k.as_str())) {
            return None;
        }
        let types = match schema.get("type")? {
            types @ Value::String(_) => std::slice::from_ref(types),
            Value::Array(many) if !many.is_empty() => many.as_slice(),
            _ => return None,
        };
        let mut kinds = 0;
        for t in types {
            kinds |= match t.as_str()? {
                "string" => kind::STRING,
                "integer" => kind::INTEGER,
                // An integer is a number too.
                "number" => kind::NUMBER | kind::INTEGER,
                "boolean" => kind::BOOLEAN,
                "null" => kind::NULL,
                // Never a scalar: admits nothing more.
                "object" | "array" => 0,
                _ => return None,
            };
        }
        let mut property = FlatProperty {
            name: name.to_owned(),
            kinds,
            minimum: None,
            maximum: None,
            strings: None,
        };
        let bound = |key| match schema.get(key) {
            None => Some(None),
            Some(v) => v.as_i64().map(Some),
        };
        property.minimum = bound("minimum")?;
        property.maximum = bound("maximum")?;
        if let Some(allowed) = schema.get("enum") {
            let allowed = allowed.as_array()?;
            property.strings = Some(
                allowed
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?,
            );
        }
        if schema.get("format").is_some_and(|f| !f.is_string()) {
            return None;
        }
        Some(property)
    }

    /// Whether `raw`, the text of one JSON value, is certainly allowed.
    fn admits(&self, raw: &str) -> bool {
        let has = |k| self.kinds & k != 0;
        let bounded = self.minimum.is_some() || self.maximum.is_some();
        match raw.as_bytes().first() {
            Some(b'"') => {
                has(kind::STRING)
                    && self.strings.as_ref().is_none_or(|allowed| {
                        Cursor::new(raw)
                            .string()
                            .is_some_and(|s| allowed.iter().any(|a| *a == s))
                    })
            }
            Some(b't' | b'f') => has(kind::BOOLEAN) && self.strings.is_none(),
            Some(b'n') => has(kind::NULL) && self.strings.is_none(),
            Some(b'-' | b'0'..=b'9') if self.strings.is_none() => {
                if raw.contains('.') {
                    // A decimal may still be an integer (`1.0`), and is
                    // not compared with bounds here: the validator decides.
                    return has(kind::NUMBER) && !bounded;
                }
                // An integer JSON reads as a float (`-0`, or one beyond 64
                // bits) is left to the validator and the JSON reading: a
                // 128-bit type read from the text would take it.
                let beyond_64_bits = raw.trim_start_matches('-').len() > 18
                    && raw.parse::<i64>().is_err()
                    && raw.parse::<u64>().is_err();
                if !has(kind::INTEGER) || raw == "-0" || beyond_64_bits {
                    return false;
                }
                if !bounded {
                    return true;
                }
                raw.parse::<i64>().is_ok_and(|n| {
                    self.minimum.is_none_or(|m| n >= m) && self.maximum.is_none_or(|m| n <= m)
                })
            }
            _ => false,
        }
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

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Scalars {
        /// A text.
        text: String,
        count: u32,
        limit: Option<u8>,
        flag: bool,
        ratio: f64,
        offset: i64,
        note: Option<String>,
    }

    fn flat(schema: Value) -> Option<FlatSchema> {
        FlatSchema::of(schema.as_object().unwrap())
    }

    // The schemas schemars derives for structs of scalars are flat, and the
    // arguments models send for them are admitted on their text.
    #[test]
    fn derived_schemas_of_scalar_structs_are_flat() {
        let schema = schema_for::<Scalars>();
        let flat = FlatSchema::of(&schema).unwrap_or_else(|| panic!("not flat: {schema:?}"));
        let validator = ArgValidator::compile(&schema).unwrap();
        for admitted in [
            r#"{"text":"hi","count":3,"flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{ "offset" : 0 , "ratio" : 2 , "flag" : false , "count" : 0 , "text" : "a\nb\"" , "limit" : 255 , "note" : null }"#,
            r#"{"text":"é","count":4294967295,"flag":true,"ratio":-1.25,"offset":1,"limit":null,"note":"n"}"#,
        ] {
            assert!(flat.admits(admitted), "{admitted}");
            assert!(
                validator
                    .validate(&serde_json::from_str(admitted).unwrap())
                    .is_ok()
            );
        }
        let args = schema_for::<Args>();
        assert!(FlatSchema::of(&args).unwrap().admits(r#"{"text":"hi"}"#));
        // Not admitted (the validator decides): a bound broken, a member
        // missing, unknown, twice, nested or of another type, a decimal
        // where an integer is asked for, an escape the cursor leaves to
        // serde, a text that is no object.
        for refused in [
            r#"{"text":"hi","count":3,"flag":true,"ratio":0.5,"offset":-7,"limit":256}"#,
            r#"{"text":"hi","count":-1,"flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{"text":"hi","count":3,"flag":true,"ratio":0.5}"#,
            r#"{"text":"hi","count":3,"flag":true,"ratio":0.5,"offset":-7,"other":1}"#,
            r#"{"text":"hi","text":"ho","count":3,"flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{"text":["hi"],"count":3,"flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{"text":"hi","count":"3","flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{"text":"hi","count":3.0,"flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{"text":"\u00e9","count":3,"flag":true,"ratio":0.5,"offset":-7}"#,
            r#"{"text":"hi","count":3,"flag":true,"ratio":1e3,"offset":-7}"#,
            r#"{"text":"hi","count":3,"flag":true,"ratio":0.5,"offset":-7} x"#,
            r#"["text"]"#,
        ] {
            assert!(!flat.admits(refused), "{refused}");
        }
    }

    #[test]
    fn schemas_that_ask_for_more_are_not_flat() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}),
            json!({"type": "object", "properties": {"a": {"enum": ["x", 1]}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0.5}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "exclusiveMinimum": 0}}}),
            json!({"type": "object", "properties": {"a": {"type": "thing"}}}),
            json!({"type": "object", "properties": {"a": false}}),
            // Any type: a `RawValue` would keep the text as it stands.
            json!({"type": "object", "properties": {"a": true}}),
            json!({"type": "object", "properties": {"a": {"description": "anything"}}}),
            json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}}),
            json!({"type": "object", "minProperties": 1}),
            json!({"type": "object", "required": ["a"]}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            json!({"type": "array"}),
        ] {
            assert!(flat(schema.clone()).is_none(), "{schema}");
        }
        assert!(flat(json!({"type": "object", "additionalProperties": false})).is_some());
    }

    // A flat schema treats `format` as an annotation, as the validator does
    // in 2020-12: if the validator ever asserted formats, this fails.
    #[test]
    fn formats_are_annotations_to_the_validator() {
        let schema = json!({"type": "object", "properties": {
            "e": {"type": "string", "format": "email"},
            "d": {"type": "string", "format": "date-time"},
            "u": {"type": "string", "format": "uri"},
            "n": {"type": "integer", "format": "uint32"}
        }});
        let validator = compile(schema.clone()).unwrap();
        let args = r#"{"e":"not an address","d":"yesterday","u":"::","n":-1}"#;
        assert!(flat(schema).unwrap().admits(args));
        assert!(
            validator
                .validate(&serde_json::from_str(args).unwrap())
                .is_ok()
        );
    }

    proptest::proptest! {
        /// Whatever a flat schema admits, the validator accepts: over
        /// schemas of the shapes it knows (and some it does not), and
        /// objects of every kind of member.
        #[test]
        fn a_flat_schema_admits_only_what_the_validator_accepts(
            properties in proptest::collection::vec((0usize..4, 0usize..16), 0..4),
            required in proptest::collection::vec(0usize..4, 0..3),
            closed in proptest::option::of(proptest::bool::ANY),
            members in proptest::collection::vec((0usize..5, 0usize..24), 0..5),
        ) {
            const NAMES: [&str; 5] = ["a", "b", "c", "é", "d"];
            let property_schemas = [
                json!({"type": "string"}),
                json!({"type": "integer"}),
                json!({"type": "number"}),
                json!({"type": "boolean"}),
                json!({"type": "null"}),
                json!({"type": ["string", "null"], "description": "x"}),
                json!({"type": "integer", "minimum": 0, "maximum": 10}),
                json!({"type": "string", "enum": ["x", "y"]}),
                json!({"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255}),
                json!(true),
                json!({"description": "anything"}),
                json!({"type": "string", "format": "email"}),
                json!({"type": "number", "minimum": -1}),
                json!({"enum": ["x", 1]}),
                json!({"type": ["object", "null"]}),
                json!({"type": "integer", "maximum": -1}),
            ];
            let values = [
                r#""x""#, r#""y""#, r#""z\n""#, r#""\u0078""#, "0", "-0", "7", "11", "-3",
                "300", "1.0", "1.5", "-0.5", "true", "false", "null", "[1]", "{}",
                r#"{"a":1}"#, "99999999999999999999", r#""not-an-email""#, "255", "256",
                "-1",
            ];
            let mut props = serde_json::Map::new();
            for (name, schema) in &properties {
                props.insert(NAMES[*name].to_owned(), property_schemas[*schema].clone());
            }
            let mut required: Vec<&str> = required
                .iter()
                .map(|r| NAMES[*r])
                .filter(|r| props.contains_key(*r))
                .collect();
            required.sort_unstable();
            required.dedup();
            let mut schema = json!({"type": "object", "properties": props, "required": required});
            if let Some(closed) = closed {
                schema["additionalProperties"] = json!(!closed);
            }
            let text = format!(
                "{{{}}}",
                members
                    .iter()
                    .map(|(k, v)| format!("\"{}\":{}", NAMES[*k], values[*v]))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let validator = compile(schema.clone()).unwrap();
            if let Some(flat) = flat(schema.clone()) {
                if flat.admits(&text) {
                    let value: Value = serde_json::from_str(&text).unwrap();
                    proptest::prop_assert!(
                        validator.validate(&value).is_ok(),
                        "admitted {} for {}", text, schema
                    );
                }
            }
        }
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
