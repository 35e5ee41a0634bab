//! Elicitation forms: the `requestedSchema` of a form-mode
//! `elicitation/create` read into fields a front end can ask one by one,
//! each answer parsed and checked against the schema before anything is
//! sent back (ELIC-05, ELIC-08, ELIC-09).
//!
//! The schema is a flat object of primitives: strings (with `minLength`,
//! `maxLength`, `format` email/uri/date/date-time), numbers and integers
//! (`minimum`, `maximum`), booleans, and single-choice enums (`enum`, with
//! optional `enumNames`, or `oneOf` of `{const, title}`).

use serde_json::{Map, Value};
use switchboard_wire::JsonObject;

/// A parsed form: its fields in the order the schema lists them.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    /// The fields.
    pub fields: Vec<FormField>,
}

/// One field of a [`Form`].
#[derive(Clone, Debug, PartialEq)]
pub struct FormField {
    /// The property name (the key in the answer).
    pub name: String,
    /// `title`, when the schema gives one.
    pub title: Option<String>,
    /// `description`, when the schema gives one.
    pub description: Option<String>,
    /// Whether the schema lists it under `required`.
    pub required: bool,
    /// `default`, offered when the answer is left empty.
    pub default: Option<Value>,
    /// What kind of value it takes.
    pub kind: FieldKind,
}

/// The kind of value a [`FormField`] takes.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    /// Free text.
    Text {
        /// `minLength`.
        min_length: Option<u64>,
        /// `maxLength`.
        max_length: Option<u64>,
        /// `format` (`email`, `uri`, `date`, `date-time`).
        format: Option<String>,
    },
    /// A number; `integer` for `"type": "integer"`.
    Number {
        /// Whole numbers only.
        integer: bool,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of a fixed list.
    Choice(Vec<Choice>),
}

/// One option of a [`FieldKind::Choice`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The value sent back.
    pub value: String,
    /// The label shown, when the schema gives one.
    pub label: Option<String>,
}

impl Form {
    /// Reads a `requestedSchema`.
    ///
    /// # Errors
    /// A sentence saying what is not a flat object of primitives.
    pub fn parse(schema: &Value) -> Result<Form, String> {
        let Some(schema) = schema.as_object() else {
            return Err("requestedSchema is not an object".into());
        };
        if let Some(t) = schema.get("type") {
            if t != "object" {
                return Err(format!("requestedSchema has type {t}, not \"object\""));
            }
        }
        let empty = Map::new();
        let properties = match schema.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err("requestedSchema.properties is not an object".into()),
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            let Some(p) = property.as_object() else {
                return Err(format!("property {name:?} is not an object"));
            };
            fields.push(FormField {
                name: name.clone(),
                title: text(p, "title"),
                description: text(p, "description"),
                required: required.contains(&name.as_str()),
                default: p.get("default").cloned(),
                kind: kind_of(name, p)?,
            });
        }
        Ok(Form { fields })
    }

    /// Checks a complete answer: every required field present, every value
    /// valid for its field, no field the form does not have.
    ///
    /// # Errors
    /// A sentence naming the first problem.
    pub fn check(&self, content: &JsonObject) -> Result<(), String> {
        for key in content.keys() {
            if !self.fields.iter().any(|f| &f.name == key) {
                return Err(format!("{key:?} is not a field of the form"));
            }
        }
        for field in &self.fields {
            match content.get(&field.name) {
                Some(v) => field.check(v).map_err(|e| format!("{}: {e}", field.name))?,
                None if field.required => return Err(format!("{} is required", field.name)),
                None => {}
            }
        }
        Ok(())
    }
}

impl FormField {
    /// What the field takes, in a few words: `low, normal, high`,
    /// `a number from 1 to 5`, `yes or no`, `text (an email address)`.
    pub fn hint(&self) -> String {
        match &self.kind {
            FieldKind::Text { format, .. } => match format.as_deref() {
                Some("email") => "text (an email address)".into(),
                Some("uri") => "text (a URI)".into(),
                Some("date") => "text (a date, YYYY-MM-DD)".into(),
                Some("date-time") => "text (a date and time, RFC 3339)".into(),
                _ => "text".into(),
            },
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let what = if *integer {
                    "a whole number"
                } else {
                    "a number"
                };
                match (minimum, maximum) {
                    (Some(a), Some(b)) => format!("{what} from {a} to {b}"),
                    (Some(a), None) => format!("{what}, at least {a}"),
                    (None, Some(b)) => format!("{what}, at most {b}"),
                    (None, None) => what.into(),
                }
            }
            FieldKind::Boolean => "yes or no".into(),
            FieldKind::Choice(choices) => choices
                .iter()
                .map(|c| match &c.label {
                    Some(l) if l != &c.value => format!("{} ({l})", c.value),
                    _ => c.value.clone(),
                })
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Reads what the user typed. An empty answer takes the default, or
    /// leaves an optional field out (`Ok(None)`).
    ///
    /// # Errors
    /// A sentence saying what is wrong, for the user to try again.
    pub fn read(&self, typed: &str) -> Result<Option<Value>, String> {
        let typed = typed.trim();
        if typed.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => self.check(d).map(|()| Some(d.clone())),
                (None, true) => Err("an answer is required".into()),
                (None, false) => Ok(None),
            };
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(typed.to_owned()),
            FieldKind::Number { integer: true, .. } => typed
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{typed:?} is not a whole number"))?,
            FieldKind::Number { integer: false, .. } => typed
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("{typed:?} is not a number"))?,
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err(format!("{typed:?} is not yes or no")),
            },
            FieldKind::Choice(choices) => {
                let lower = typed.to_lowercase();
                let found = choices.iter().find(|c| {
                    c.value.to_lowercase() == lower
                        || c.label.as_ref().is_some_and(|l| l.to_lowercase() == lower)
                });
                match found {
                    Some(c) => Value::String(c.value.clone()),
                    None => return Err(format!("{typed:?} is not one of: {}", self.hint())),
                }
            }
        };
        self.check(&value).map(|()| Some(value))
    }

    /// Checks one value against the field.
    ///
    /// # Errors
    /// A sentence saying what is wrong.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match (&self.kind, value) {
            (
                FieldKind::Text {
                    min_length,
                    max_length,
                    format,
                },
                Value::String(s),
            ) => {
                let n = s.chars().count() as u64;
                if min_length.is_some_and(|m| n < m) {
                    return Err(format!(
                        "needs at least {} characters",
                        min_length.unwrap_or(0)
                    ));
                }
                if max_length.is_some_and(|m| n > m) {
                    return Err(format!(
                        "takes at most {} characters",
                        max_length.unwrap_or(0)
                    ));
                }
                check_format(format.as_deref(), s)
            }
            (
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                },
                Value::Number(n),
            ) => {
                if *integer && n.as_i64().is_none() && n.as_u64().is_none() {
                    return Err(format!("{n} is not a whole number"));
                }
                let x = n.as_f64().unwrap_or(f64::NAN);
                if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                    return Err(format!("{n} is not {}", self.hint()));
                }
                Ok(())
            }
            (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice(choices), Value::String(s)) => {
                if choices.iter().any(|c| &c.value == s) {
                    Ok(())
                } else {
                    Err(format!("{s:?} is not one of: {}", self.hint()))
                }
            }
            (_, other) => Err(format!("{other} is not {}", self.hint())),
        }
    }
}

fn text(p: &JsonObject, key: &str) -> Option<String> {
    p.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn number(p: &JsonObject, key: &str) -> Option<f64> {
    p.get(key).and_then(Value::as_f64)
}

fn kind_of(name: &str, p: &JsonObject) -> Result<FieldKind, String> {
    if let Some(values) = p.get("enum") {
        let Some(values) = values.as_array() else {
            return Err(format!("{name}: enum is not an array"));
        };
        let labels = p.get("enumNames").and_then(Value::as_array);
        let mut choices = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let Some(value) = v.as_str() else {
                return Err(format!("{name}: enum values must be strings"));
            };
            choices.push(Choice {
                value: value.to_owned(),
                label: labels
                    .and_then(|l| l.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        return Ok(FieldKind::Choice(choices));
    }
    if let Some(options) = p.get("oneOf").or_else(|| p.get("anyOf")) {
        let mut choices = Vec::new();
        for o in options.as_array().into_iter().flatten() {
            let Some(value) = o.get("const").and_then(Value::as_str) else {
                return Err(format!("{name}: every oneOf option needs a string const"));
            };
            choices.push(Choice {
                value: value.to_owned(),
                label: o.get("title").and_then(Value::as_str).map(str::to_owned),
            });
        }
        if choices.is_empty() {
            return Err(format!("{name}: oneOf has no options"));
        }
        return Ok(FieldKind::Choice(choices));
    }
    match p.get("type").and_then(Value::as_str) {
        Some("string") => Ok(FieldKind::Text {
            min_length: p.get("minLength").and_then(Value::as_u64),
            max_length: p.get("maxLength").and_then(Value::as_u64),
            format: text(p, "format"),
        }),
        Some(t @ ("number" | "integer")) => Ok(FieldKind::Number {
            integer: t == "integer",
            minimum: number(p, "minimum"),
            maximum: number(p, "maximum"),
        }),
        Some("boolean") => Ok(FieldKind::Boolean),
        Some(other) => Err(format!(
            "{name} has type {other:?}; a form field is a string, number, integer, boolean or enum"
        )),
        None => Err(format!("{name} has no type")),
    }
}

fn check_format(format: Option<&str>, s: &str) -> Result<(), String> {
    let ok = match format {
        Some("email") => s.split_once('@').is_some_and(|(a, b)| {
            !a.is_empty() && b.contains('.') && !s.contains(char::is_whitespace)
        }),
        Some("uri") => s.split_once(':').is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
        }),
        Some("date") => is_date(s),
        Some("date-time") => {
            s.len() > 11 && is_date(&s[..10]) && matches!(&s[10..11], "T" | "t" | " ")
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not {}",
            match format {
                Some("email") => "an email address",
                Some("uri") => "a URI",
                Some("date") => "a date (YYYY-MM-DD)",
                _ => "a date and time (RFC 3339)",
            }
        ))
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Form {
        Form::parse(&json!({
            "type": "object",
            "properties": {
                "priority": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
                "name": {"type": "string", "minLength": 2, "title": "Your name"},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ratio": {"type": "number"},
                "ok": {"type": "boolean"},
                "size": {"oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]}
            },
            "required": ["name", "priority"]
        }))
        .unwrap()
    }

    fn field(name: &str) -> FormField {
        form().fields.into_iter().find(|f| f.name == name).unwrap()
    }

    // ELIC-05: each primitive kind is read.
    #[test]
    fn parses_every_field_kind() {
        let f = form();
        assert_eq!(f.fields.len(), 7);
        assert_eq!(field("priority").hint(), "low, normal, high");
        assert!(field("name").required && !field("email").required);
        assert_eq!(field("age").hint(), "a whole number from 0 to 150");
        assert_eq!(field("ok").kind, FieldKind::Boolean);
        assert_eq!(field("size").hint(), "s (Small), l (Large)");
        assert!(
            Form::parse(&json!({"type": "object", "properties": {"x": {"type": "object"}}}))
                .is_err()
        );
        assert!(Form::parse(&json!([])).is_err());
    }

    // ELIC-08, ELIC-09: defaults fill empty answers; bad answers are refused.
    #[test]
    fn reads_and_validates_answers() {
        assert_eq!(field("priority").read("").unwrap(), Some(json!("normal")));
        assert_eq!(field("priority").read("HIGH").unwrap(), Some(json!("high")));
        assert!(field("priority").read("urgent").is_err());
        assert!(field("name").read("").is_err());
        assert!(field("name").read("A").is_err());
        assert_eq!(field("email").read("").unwrap(), None);
        assert!(field("email").read("not an email").is_err());
        assert_eq!(
            field("email").read("a@b.io").unwrap(),
            Some(json!("a@b.io"))
        );
        assert_eq!(field("age").read("42").unwrap(), Some(json!(42)));
        assert!(field("age").read("4.5").is_err());
        assert!(field("age").read("200").is_err());
        assert_eq!(field("ratio").read("0.5").unwrap(), Some(json!(0.5)));
        assert_eq!(field("ok").read("y").unwrap(), Some(json!(true)));
        assert!(field("ok").read("maybe").is_err());
        assert_eq!(field("size").read("large").unwrap(), Some(json!("l")));
    }

    #[test]
    fn checks_a_whole_answer() {
        let f = form();
        let ok = json!({"name": "Al", "priority": "low"});
        assert!(f.check(ok.as_object().unwrap()).is_ok());
        let missing = json!({"name": "Al"});
        assert!(
            f.check(missing.as_object().unwrap())
                .unwrap_err()
                .contains("priority")
        );
        let extra = json!({"name": "Al", "priority": "low", "x": 1});
        assert!(f.check(extra.as_object().unwrap()).is_err());
        let wrong = json!({"name": "Al", "priority": "low", "age": "old"});
        assert!(f.check(wrong.as_object().unwrap()).is_err());
    }
}
