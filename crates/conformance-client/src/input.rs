//! The input handler the conformance scenarios need: it accepts every
//! form-mode elicitation with the schema's defaults filled in (SEP-1034),
//! as a user pressing "OK" on a pre-filled form would (ELIC-08).

use serde_json::{Map, Value, json};
use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport};
use switchboard_wire::types::{ElicitRequestParams, ElicitResult};

/// Accepts form elicitations with defaults; supports nothing else.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Defaults;

impl InputHandler for Defaults {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_form: true,
            ..InputSupport::NONE
        }
    }

    fn elicit(
        &self,
        cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        Box::pin(async move {
            let content = fill(params.requested_schema.as_ref());
            crate::say(&format!(
                "elicitation from {} ({} era): accepting with {}",
                cx.server,
                cx.era,
                Value::Object(content.clone())
            ));
            Ok(ElicitResult::accept(Some(content)))
        })
    }
}

/// The answer to a requested schema: each property's `default`; a
/// required property without one gets a value of its type.
fn fill(schema: Option<&Value>) -> Map<String, Value> {
    let mut content = Map::new();
    let Some(properties) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return content;
    };
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        if let Some(default) = property.get("default") {
            content.insert(name.clone(), default.clone());
        } else if required.contains(&name.as_str())
            || property.get("type").and_then(Value::as_str) == Some("boolean")
        {
            content.insert(name.clone(), placeholder(property));
        }
    }
    content
}

/// A value of the property's type (the first `enum` member when there is one).
pub(crate) fn placeholder(property: &Value) -> Value {
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = match property.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match kind {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "object" => json!({}),
        "array" => json!([]),
        _ => json!("example"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SEP-1034: every default is applied; required fields get a value.
    #[test]
    fn fills_defaults_and_required_fields() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "confirmed": {"type": "boolean"},
            "note": {"type": "string"},
            "must": {"type": "integer"}
        }, "required": ["must"]});
        let content = fill(Some(&schema));
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active",
                   "verified": true, "confirmed": true, "must": 1})
        );
    }
}
