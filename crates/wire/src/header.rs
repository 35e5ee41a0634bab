//! The HTTP headers that mirror the body on Streamable HTTP: names, the
//! `=?base64?…?=` value codec, and the `x-mcp-header` schema extension.
//!
//! Clients mirror `params` into `Mcp-Method`, `Mcp-Name` and
//! `Mcp-Param-{Name}` headers; servers decode and compare them with the body
//! (transports/streamable-http, "Standard Request Headers", "Custom Headers
//! from Tool Parameters").

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// `MCP-Protocol-Version`: equal to the body's `_meta` protocolVersion.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`: equal to the body's `method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name` (tools/call, prompts/get), `params.uri`
/// (resources/read) or `params.taskId` (tasks/get, tasks/update,
/// tasks/cancel).
pub const NAME: &str = "mcp-name";
/// Prefix of the headers that mirror `x-mcp-header` arguments.
pub const PARAM_PREFIX: &str = "mcp-param-";
/// Legacy (2025-11-25) session header.
pub const SESSION_ID: &str = "mcp-session-id";
/// The `x-mcp-header` schema keyword.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The names above as [`http::HeaderName`]s, made at compile time: a
/// `&str` name is parsed and checked again on every insert and lookup.
pub mod names {
    use http::HeaderName;

    /// [`super::PROTOCOL_VERSION`].
    pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(super::PROTOCOL_VERSION);
    /// [`super::METHOD`].
    pub const METHOD: HeaderName = HeaderName::from_static(super::METHOD);
    /// [`super::NAME`].
    pub const NAME: HeaderName = HeaderName::from_static(super::NAME);
    /// [`super::SESSION_ID`].
    pub const SESSION_ID: HeaderName = HeaderName::from_static(super::SESSION_ID);
}

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// The largest integer a header may carry: 2^53 − 1 (TOOL-10).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The body member `Mcp-Name` mirrors for `method`, if any.
pub fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension routes its methods by task (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Whether `value` can travel as a plain header value: visible ASCII and
/// inner spaces only, no leading or trailing whitespace, and not shaped like
/// the sentinel (HTTP-C-09, HTTP-C-10).
pub fn is_plain_safe(value: &str) -> bool {
    let bytes = value.as_bytes();
    let edge_ok = |b: Option<&u8>| b.is_none_or(|b| *b != b' ');
    edge_ok(bytes.first())
        && edge_ok(bytes.last())
        && bytes
            .iter()
            .all(|b| (0x21..=0x7e).contains(b) || *b == b' ')
        && !looks_like_sentinel(value)
}

/// Encodes a value for a header: as-is when safe, otherwise
/// `=?base64?{base64 of the UTF-8}?=`.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if is_plain_safe(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            STANDARD.encode(value)
        ))
    }
}

/// A header value that cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderValueError {
    /// The sentinel wraps something that is not base64.
    #[error("header value {0:?} has the base64 sentinel but its payload is not base64")]
    BadBase64(String),
    /// The decoded bytes are not UTF-8.
    #[error("header value {0:?} decodes to bytes that are not UTF-8")]
    NotUtf8(String),
    /// A plain value holds characters a header may not carry.
    #[error("header value holds characters outside visible ASCII")]
    InvalidCharacters,
}

/// Decodes a header value: unwraps the sentinel, checks a plain value's
/// characters (HTTP-S-21, HTTP-S-22).
///
/// # Errors
/// [`HeaderValueError`] for a malformed sentinel or invalid characters.
pub fn decode_value(raw: &[u8]) -> Result<Cow<'_, str>, HeaderValueError> {
    let Ok(text) = std::str::from_utf8(raw) else {
        return Err(HeaderValueError::InvalidCharacters);
    };
    if looks_like_sentinel(text) {
        let payload = &text[SENTINEL_PREFIX.len()..text.len() - SENTINEL_SUFFIX.len()];
        let bytes = STANDARD
            .decode(payload)
            .map_err(|_| HeaderValueError::BadBase64(text.to_owned()))?;
        return String::from_utf8(bytes)
            .map(Cow::Owned)
            .map_err(|_| HeaderValueError::NotUtf8(text.to_owned()));
    }
    if raw.iter().all(|b| (0x20..=0x7e).contains(b) || *b == b'\t') {
        Ok(Cow::Borrowed(text))
    } else {
        Err(HeaderValueError::InvalidCharacters)
    }
}

fn looks_like_sentinel(value: &str) -> bool {
    value.len() >= SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len()
        && value.starts_with(SENTINEL_PREFIX)
        && value.ends_with(SENTINEL_SUFFIX)
}

/// Whether `name` is an RFC 9110 token (`1*tchar`).
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// The JSON type an `x-mcp-header` property holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A string, sent as-is (or base64 when unsafe).
    String,
    /// An integer within ±(2^53 − 1), sent in decimal.
    Integer,
    /// A boolean, sent as `true` / `false`.
    Boolean,
}

/// One argument a tool mirrors into a `Mcp-Param-{name}` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `x-mcp-header` value: the `{name}` of `Mcp-Param-{name}`.
    pub name: String,
    /// The chain of `properties` keys from the schema root to the argument.
    pub path: Vec<String>,
    /// Its JSON type.
    pub kind: ParamKind,
}

impl HeaderParam {
    /// The full header name, lowercase: `mcp-param-{name}`.
    pub fn header_name(&self) -> String {
        format!("{PARAM_PREFIX}{}", self.name.to_ascii_lowercase())
    }

    /// The argument at this parameter's path; `None` when absent or `null`.
    pub fn lookup<'a>(&self, arguments: Option<&'a Map<String, Value>>) -> Option<&'a Value> {
        let mut current = arguments?;
        let (last, parents) = self.path.split_last()?;
        for key in parents {
            current = current.get(key)?.as_object()?;
        }
        current.get(last).filter(|v| !v.is_null())
    }

    /// The unencoded header value for these arguments (HTTP-C-08, HTTP-C-11).
    ///
    /// # Returns
    /// `Ok(None)` when the argument is absent or `null` (no header).
    ///
    /// # Errors
    /// [`ParamValueError`] when the argument's type does not match the schema.
    pub fn value(
        &self,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<Option<String>, ParamValueError> {
        let Some(v) = self.lookup(arguments) else {
            return Ok(None);
        };
        let mismatch = || ParamValueError {
            header: self.name.clone(),
            expected: self.kind,
        };
        match self.kind {
            ParamKind::String => v.as_str().map(str::to_owned).ok_or_else(mismatch).map(Some),
            ParamKind::Boolean => v
                .as_bool()
                .map(|b| b.to_string())
                .ok_or_else(mismatch)
                .map(Some),
            ParamKind::Integer => integer_of(v)
                .filter(|n| n.abs() <= MAX_SAFE_INTEGER)
                .map(|n| Some(n.to_string()))
                .ok_or_else(mismatch),
        }
    }

    /// Whether a decoded header value matches the body's argument; integers
    /// compare numerically, so `42` matches `42.0` (HTTP-S-24).
    pub fn matches(&self, header: &str, body: &Value) -> bool {
        match self.kind {
            ParamKind::String => body.as_str() == Some(header),
            ParamKind::Boolean => {
                body.as_bool().map(|b| if b { "true" } else { "false" }) == Some(header)
            }
            ParamKind::Integer => match (header.trim().parse::<f64>(), body.as_f64()) {
                (Ok(h), Some(b)) => h == b,
                _ => false,
            },
        }
    }
}

/// An argument whose JSON type does not fit its `x-mcp-header` property.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "argument mirrored into Mcp-Param-{header} must be {expected:?} (an integer within ±(2^53−1))"
)]
pub struct ParamValueError {
    /// The header name part.
    pub header: String,
    /// The type the schema declares.
    pub expected: ParamKind,
}

/// Why a tool's `x-mcp-header` annotations are invalid (TOOL-09…11).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidHeaderAnnotation {
    /// The value is not a non-empty string.
    #[error("x-mcp-header at {path} is empty or not a string")]
    Empty {
        /// Where it sits.
        path: String,
    },
    /// The value is not an HTTP token.
    #[error("x-mcp-header {name:?} at {path} is not a valid HTTP header token")]
    NotToken {
        /// The value.
        name: String,
        /// Where it sits.
        path: String,
    },
    /// Two properties use the same name, ignoring case.
    #[error("x-mcp-header {name:?} is used twice (names are case-insensitive)")]
    Duplicate {
        /// The value.
        name: String,
    },
    /// The property is not a string, integer or boolean.
    #[error(
        "x-mcp-header {name:?} at {path} is on a property that is not a string, integer or boolean"
    )]
    NotPrimitive {
        /// The value.
        name: String,
        /// Where it sits.
        path: String,
    },
    /// The property's integer bounds exceed ±(2^53 − 1).
    #[error("x-mcp-header {name:?} at {path} allows integers outside ±(2^53−1)")]
    UnsafeInteger {
        /// The value.
        name: String,
        /// Where it sits.
        path: String,
    },
    /// The property is not reachable through `properties` keys alone.
    #[error(
        "x-mcp-header at {path} is not reachable from the schema root through properties alone"
    )]
    Unreachable {
        /// Where it sits.
        path: String,
    },
}

/// Reads and checks the `x-mcp-header` annotations of a tool's input schema.
///
/// # Errors
/// [`InvalidHeaderAnnotation`] naming the first rule broken; a client drops
/// such a tool from its list (HTTP-C-12).
pub fn header_params(
    input_schema: &Map<String, Value>,
) -> Result<Vec<HeaderParam>, InvalidHeaderAnnotation> {
    let mut found = Vec::new();
    walk(input_schema, &mut Vec::new(), true, "#", &mut found)?;
    for (i, a) in found.iter().enumerate() {
        if found[..i]
            .iter()
            .any(|b| b.name.eq_ignore_ascii_case(&a.name))
        {
            return Err(InvalidHeaderAnnotation::Duplicate {
                name: a.name.clone(),
            });
        }
    }
    Ok(found)
}

/// Keywords whose value is one subschema.
const SINGLE_SUBSCHEMA: &[&str] = &[
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is an array of subschemas.
const ARRAY_SUBSCHEMAS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas (other than `properties`).
const MAP_SUBSCHEMAS: &[&str] = &[
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

fn walk(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    reachable: bool,
    location: &str,
    found: &mut Vec<HeaderParam>,
) -> Result<(), InvalidHeaderAnnotation> {
    if let Some(annotation) = schema.get(X_MCP_HEADER) {
        if !reachable || path.is_empty() {
            return Err(InvalidHeaderAnnotation::Unreachable {
                path: location.to_owned(),
            });
        }
        found.push(check_annotation(annotation, schema, path, location)?);
    }
    for (keyword, value) in schema {
        match (keyword.as_str(), value) {
            ("properties", Value::Object(props)) => {
                for (name, sub) in props {
                    if let Value::Object(sub) = sub {
                        path.push(name.clone());
                        let loc = format!("{location}/properties/{name}");
                        walk(sub, path, reachable, &loc, found)?;
                        path.pop();
                    }
                }
            }
            (k, Value::Object(sub)) if SINGLE_SUBSCHEMA.contains(&k) => {
                walk(
                    sub,
                    &mut Vec::new(),
                    false,
                    &format!("{location}/{k}"),
                    found,
                )?;
            }
            (k, Value::Array(subs)) if ARRAY_SUBSCHEMAS.contains(&k) => {
                for (i, sub) in subs.iter().enumerate() {
                    if let Value::Object(sub) = sub {
                        walk(
                            sub,
                            &mut Vec::new(),
                            false,
                            &format!("{location}/{k}/{i}"),
                            found,
                        )?;
                    }
                }
            }
            (k, Value::Object(subs)) if MAP_SUBSCHEMAS.contains(&k) => {
                for (name, sub) in subs {
                    if let Value::Object(sub) = sub {
                        walk(
                            sub,
                            &mut Vec::new(),
                            false,
                            &format!("{location}/{k}/{name}"),
                            found,
                        )?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_annotation(
    annotation: &Value,
    schema: &Map<String, Value>,
    path: &[String],
    location: &str,
) -> Result<HeaderParam, InvalidHeaderAnnotation> {
    let name = match annotation.as_str() {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => {
            return Err(InvalidHeaderAnnotation::Empty {
                path: location.to_owned(),
            });
        }
    };
    if !is_token(&name) {
        return Err(InvalidHeaderAnnotation::NotToken {
            name,
            path: location.to_owned(),
        });
    }
    let not_primitive = || InvalidHeaderAnnotation::NotPrimitive {
        name: name.clone(),
        path: location.to_owned(),
    };
    if schema.contains_key("$ref") {
        return Err(not_primitive());
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => kind_of(t),
        Some(Value::Array(types)) => {
            let mut kinds = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .map(kind_of);
            match (kinds.next(), kinds.next()) {
                (Some(k), None) if types.iter().all(Value::is_string) => k,
                _ => None,
            }
        }
        _ => None,
    }
    .ok_or_else(not_primitive)?;
    if kind == ParamKind::Integer {
        for bound in [
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "const",
        ] {
            if let Some(v) = schema.get(bound).and_then(Value::as_f64) {
                if v.abs() > MAX_SAFE_INTEGER as f64 {
                    return Err(InvalidHeaderAnnotation::UnsafeInteger {
                        name,
                        path: location.to_owned(),
                    });
                }
            }
        }
    }
    Ok(HeaderParam {
        name,
        path: path.to_vec(),
        kind,
    })
}

fn kind_of(t: &str) -> Option<ParamKind> {
    match t {
        "string" => Some(ParamKind::String),
        "integer" => Some(ParamKind::Integer),
        "boolean" => Some(ParamKind::Boolean),
        _ => None,
    }
}

fn integer_of(v: &Value) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    // The encoding examples table of transports/streamable-http, "Value Encoding".
    #[test]
    fn encodes_like_the_spec_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode_value("a\tb"), "=?base64?YQli?=");
        assert_eq!(encode_value(""), "");
        assert_eq!(encode_value("inner space"), "inner space");
    }

    #[test]
    fn decodes_what_it_encodes() {
        for v in [
            "us-west1",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?literal?=",
            "",
        ] {
            assert_eq!(decode_value(encode_value(v).as_bytes()).unwrap(), v);
        }
        assert!(matches!(
            decode_value(b"=?base64?***?="),
            Err(HeaderValueError::BadBase64(_))
        ));
        assert!(matches!(
            decode_value(b"=?base64?/w==?="),
            Err(HeaderValueError::NotUtf8(_))
        ));
        assert_eq!(
            decode_value(b"a\x01b"),
            Err(HeaderValueError::InvalidCharacters)
        );
    }

    #[test]
    fn finds_params_along_properties_chains() {
        let s = schema(json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":["boolean","null"],"x-mcp-header":"Flag"}}},
            "x-mcp-header":{"type":"string"},
            "plain":{"type":"string","default":{"x-mcp-header":"data, not an annotation"}}
        }}));
        let params = header_params(&s).unwrap();
        assert_eq!(params.len(), 3);
        assert_eq!(params[1].path, vec!["opts".to_owned(), "n".to_owned()]);
        let args = json!({"region":"eu","opts":{"n":42,"b":null}});
        let args = args.as_object();
        assert_eq!(params[0].value(args).unwrap().as_deref(), Some("eu"));
        assert_eq!(params[1].value(args).unwrap().as_deref(), Some("42"));
        assert_eq!(params[2].value(args).unwrap(), None);
        assert!(params[1].matches("42", &json!(42.0)));
        assert!(!params[1].matches("42", &json!("42")));
        assert_eq!(params[0].header_name(), "mcp-param-region");
    }

    // TOOL-09..11: every way an annotation can be invalid.
    #[test]
    fn rejects_invalid_annotations() {
        let cases = [
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"has space"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Colon:"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Ünï"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\r\nB"}}}),
            json!({"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}),
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"integer","maximum":1e16,"x-mcp-header":"A"}}}),
            json!({"type":"object","x-mcp-header":"Root"}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}),
        ];
        for c in cases {
            assert!(header_params(c.as_object().unwrap()).is_err(), "{c}");
        }
    }

    #[test]
    fn integer_values_outside_the_safe_range_are_refused() {
        let p = HeaderParam {
            name: "N".into(),
            path: vec!["n".into()],
            kind: ParamKind::Integer,
        };
        let args = json!({"n": 9007199254740993_i64});
        assert!(p.value(args.as_object()).is_err());
        let args = json!({"n": "7"});
        assert!(p.value(args.as_object()).is_err());
    }
}
