//! YAML frontmatter of a `SKILL.md`: the block between a leading `---`
//! line and the next `---` line, read as a JSON object.
//!
//! The Skills extension sends a skill's frontmatter "rendered verbatim as
//! a JSON object" and a host compares it field by field with the
//! frontmatter of the `SKILL.md` it fetches (SK-ENT-4, SK-VER-5). Both
//! sides of that comparison come through here, so a server and a host
//! built on this crate read a file the same way.
//!
//! The YAML is read with the 1.2 core schema (`true`, `null`, `12`,
//! `1.5`; `yes` is a string), from the parser's events rather than its
//! document tree, so that:
//! - aliases are refused (an alias expands to a copy of its anchor, and a
//!   few lines of nested aliases expand to gigabytes);
//! - nesting deeper than [`MAX_DEPTH`] is refused;
//! - only the first document is read, and its top level must be a mapping;
//! - mapping keys are scalars, kept as written (`1: x` has the key `"1"`),
//!   and a key given twice is an error, as YAML says;
//! - numbers that JSON cannot carry (`.inf`, `.nan`) are an error.

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::types::JsonObject;

/// How deeply frontmatter values may nest (mappings and sequences).
pub const MAX_DEPTH: usize = 64;

/// The longest frontmatter block read, in bytes. Real frontmatter is a
/// few hundred bytes; the bound keeps a hostile file from making the
/// parser work on megabytes.
pub const MAX_FRONTMATTER_BYTES: usize = 256 * 1024;

/// A `SKILL.md` split at its frontmatter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the fences, without the fences and without the
    /// line break before the closing one.
    pub yaml: &'a str,
    /// Everything after the closing fence's line.
    pub body: &'a str,
}

/// Why a frontmatter block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The text does not start with a `---` line, or no `---` line closes
    /// the block.
    #[error("the file does not start with a YAML frontmatter block fenced by --- lines")]
    Missing,
    /// The block is longer than [`MAX_FRONTMATTER_BYTES`].
    #[error("the frontmatter is {0} bytes, over the limit of {MAX_FRONTMATTER_BYTES}")]
    TooLong(usize),
    /// The YAML does not parse.
    #[error("the frontmatter is not valid YAML: {0}")]
    Yaml(String),
    /// The YAML parses, but its top level is not a mapping.
    #[error("the frontmatter is {0}, not a mapping of fields")]
    NotAMapping(&'static str),
    /// The YAML uses a feature refused here (aliases, complex keys, deep
    /// nesting, duplicate keys, numbers JSON cannot carry).
    #[error("the frontmatter uses what is not accepted here: {0}")]
    Unsupported(String),
}

/// Splits a `SKILL.md` at its frontmatter: a first line `---` (after an
/// optional byte-order mark), then the YAML, then the first line that is
/// `---` (trailing spaces or tabs allowed). Lines end in `\n` or `\r\n`.
///
/// # Returns
/// `None` when there is no such block.
pub fn split(text: &str) -> Option<Split<'_>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        if content
            .strip_prefix("---")
            .is_some_and(|tail| tail.chars().all(|c| c == ' ' || c == '\t'))
        {
            let yaml = &rest[..offset];
            let yaml = yaml.strip_suffix('\n').unwrap_or(yaml);
            let yaml = yaml.strip_suffix('\r').unwrap_or(yaml);
            return Some(Split {
                yaml,
                body: &rest[offset + line.len()..],
            });
        }
        offset += line.len();
    }
    None
}

/// The frontmatter of a `SKILL.md` as a JSON object.
///
/// # Errors
/// [`FrontmatterError`] when there is no frontmatter block or it cannot be
/// read (see the module docs for what is refused).
pub fn parse(text: &str) -> Result<JsonObject, FrontmatterError> {
    let split = split(text).ok_or(FrontmatterError::Missing)?;
    parse_yaml(split.yaml)
}

/// A YAML mapping (the inside of a frontmatter block) as a JSON object. An
/// empty block is an empty object.
///
/// # Errors
/// As [`parse`], less [`FrontmatterError::Missing`].
pub fn parse_yaml(yaml: &str) -> Result<JsonObject, FrontmatterError> {
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(FrontmatterError::TooLong(yaml.len()));
    }
    let mut builder = Builder::default();
    Parser::new_from_str(yaml)
        .load(&mut builder, false)
        .map_err(|e| FrontmatterError::Yaml(e.to_string()))?;
    if let Some(e) = builder.error {
        return Err(e);
    }
    match builder.document {
        None | Some(Value::Null) => Ok(JsonObject::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(FrontmatterError::NotAMapping(crate::types::value_kind(
            &other,
        ))),
    }
}

/// One open collection while the events are read.
enum Frame {
    Sequence(Vec<Value>),
    /// The mapping so far and, between a key and its value, the key.
    Mapping(Map<String, Value>, Option<String>),
}

/// Builds a JSON value from parser events; keeps the first error and
/// ignores what follows it.
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    document: Option<Value>,
    error: Option<FrontmatterError>,
}

impl Builder {
    fn fail(&mut self, reason: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(FrontmatterError::Unsupported(reason.into()));
        }
    }

    fn open(&mut self, frame: Frame) {
        if self.stack.len() >= MAX_DEPTH {
            self.fail(format!("values nested deeper than {MAX_DEPTH} levels"));
            return;
        }
        if let Some(Frame::Mapping(_, None)) = self.stack.last() {
            self.fail("a mapping key that is not a scalar");
            return;
        }
        self.stack.push(frame);
    }

    /// Puts a finished value where it belongs: the document, a sequence,
    /// or a mapping (as the key, or as the value of the pending key).
    fn place(&mut self, value: Value, key_text: Option<String>) {
        match self.stack.last_mut() {
            None => {
                if self.document.is_none() {
                    self.document = Some(value);
                }
            }
            Some(Frame::Sequence(items)) => items.push(value),
            Some(Frame::Mapping(map, pending)) => match pending.take() {
                Some(key) => {
                    if map.contains_key(&key) {
                        let reason = format!("the key {key:?} appears twice in one mapping");
                        self.fail(reason);
                    } else {
                        map.insert(key, value);
                    }
                }
                None => match key_text {
                    Some(text) => *pending = Some(text),
                    None => self.fail("a mapping key that is not a scalar"),
                },
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, _mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::SequenceStart(..) => self.open(Frame::Sequence(Vec::new())),
            Event::MappingStart(..) => self.open(Frame::Mapping(Map::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match self.stack.pop() {
                    Some(Frame::Sequence(items)) => Value::Array(items),
                    Some(Frame::Mapping(map, _)) => Value::Object(map),
                    None => return,
                };
                self.place(value, None);
            }
            Event::Scalar(text, style, _anchor, tag) => match scalar(&text, style, tag.as_ref()) {
                Ok(value) => self.place(value, Some(text)),
                Err(reason) => self.fail(reason),
            },
            Event::Alias(_) => self.fail("YAML aliases (*name)"),
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

/// A scalar's JSON value under the YAML 1.2 core schema: quoted and block
/// scalars are strings; plain ones may be null, booleans or numbers; the
/// core tags (`!!str`, `!!int`, …) are honoured and other tags ignored.
fn scalar(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if style != TScalarStyle::Plain {
        return Ok(Value::String(text.to_owned()));
    }
    if let Some(tag) = tag.filter(|t| t.handle == "tag:yaml.org,2002:") {
        return match tag.suffix.as_str() {
            "str" => Ok(Value::String(text.to_owned())),
            "null" => Ok(Value::Null),
            "bool" => match text {
                "true" | "True" | "TRUE" => Ok(Value::Bool(true)),
                "false" | "False" | "FALSE" => Ok(Value::Bool(false)),
                _ => Err(format!("{text:?} tagged !!bool is not a boolean")),
            },
            "int" => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{text:?} tagged !!int is not an integer")),
            "float" => float(text),
            _ => Ok(Value::String(text.to_owned())),
        };
    }
    match yaml_rust2::Yaml::from_str(text) {
        yaml_rust2::Yaml::Null => Ok(Value::Null),
        yaml_rust2::Yaml::Boolean(b) => Ok(Value::Bool(b)),
        yaml_rust2::Yaml::Integer(i) => Ok(Value::from(i)),
        yaml_rust2::Yaml::Real(r) => float(&r),
        _ => Ok(Value::String(text.to_owned())),
    }
}

/// A YAML float as a JSON number; infinities and NaN have no JSON form.
fn float(text: &str) -> Result<Value, String> {
    let lower = text.to_ascii_lowercase();
    if lower.ends_with(".inf") || lower == ".nan" {
        return Err(format!("the number {text} has no JSON form"));
    }
    let number = text
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .ok_or_else(|| format!("the number {text} has no JSON form"))?;
    Ok(Value::Number(number))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(text: &str) -> Result<Value, FrontmatterError> {
        parse(text).map(Value::Object)
    }

    #[test]
    fn splits_at_the_first_closing_fence() {
        let s = split("---\nname: a\n---\nbody\n---\nmore").unwrap();
        assert_eq!(s.yaml, "name: a");
        assert_eq!(s.body, "body\n---\nmore");
        // CRLF, a BOM, trailing blanks on the closing fence, no body.
        let s = split("\u{feff}---\r\nname: a\r\n--- \t\r\n").unwrap();
        assert_eq!(s.yaml, "name: a");
        assert_eq!(s.body, "");
        let s = split("---\nname: a\n---").unwrap();
        assert_eq!(s.body, "");
        // `----` does not close; an indented `---` does not open.
        assert_eq!(split("---\nname: a\n----\n"), None);
        assert_eq!(split(" ---\nname: a\n---\n"), None);
        assert_eq!(split("# Title\n---\nname: a\n---\n"), None);
        assert_eq!(split("---\nname: a\n"), None);
    }

    // SK-FMT-2 / SK-ENT-4: every field the author wrote comes through, in order.
    #[test]
    fn reads_every_field_verbatim() {
        let text = "---\nname: pdf-tools\ndescription: \"Fill: forms\"\nlicense: Apache-2.0\nmetadata:\n  version: 2.1\n  tags: [a, b]\n  io.modelcontextprotocol/x: 1\nallowed-tools: Bash(git:*) Read\ncount: 12\nratio: 0.5\nyes-is-text: yes\nnothing: ~\nquoted-number: '12'\nblock: |\n  line one\n  line two\n---\n# Body";
        let v = parsed(text).unwrap();
        assert_eq!(
            v,
            json!({
                "name": "pdf-tools",
                "description": "Fill: forms",
                "license": "Apache-2.0",
                "metadata": {"version": 2.1, "tags": ["a", "b"], "io.modelcontextprotocol/x": 1},
                "allowed-tools": "Bash(git:*) Read",
                "count": 12,
                "ratio": 0.5,
                "yes-is-text": "yes",
                "nothing": null,
                "quoted-number": "12",
                "block": "line one\nline two\n"
            })
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "name");
        assert_eq!(keys[10], "block");
    }

    #[test]
    fn core_tags_and_scalar_keys() {
        let v = parsed("---\na: !!str 12\nb: !!int '7'\n1: one\ntrue: t\n---\n").unwrap();
        assert_eq!(v, json!({"a": "12", "b": "7", "1": "one", "true": "t"}));
    }

    // Hostile frontmatter is refused with a reason, never expanded.
    #[test]
    fn refuses_aliases_depth_duplicates_and_non_json_numbers() {
        let bomb = "---\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n---\n";
        assert!(
            matches!(parsed(bomb), Err(FrontmatterError::Unsupported(m)) if m.contains("aliases"))
        );
        let deep = format!("---\nk: {}{}\n---\n", "[".repeat(100), "]".repeat(100));
        assert!(
            matches!(parsed(&deep), Err(FrontmatterError::Unsupported(m)) if m.contains("deeper"))
        );
        assert!(matches!(
            parsed("---\nname: a\nname: b\n---\n"),
            Err(FrontmatterError::Unsupported(m)) if m.contains("twice")
        ));
        assert!(matches!(
            parsed("---\nx: .inf\n---\n"),
            Err(FrontmatterError::Unsupported(m)) if m.contains("JSON")
        ));
        assert!(matches!(
            parsed("---\n[a]: b\n---\n"),
            Err(FrontmatterError::Unsupported(m)) if m.contains("key")
        ));
        assert!(matches!(
            parsed("---\n- a\n- b\n---\n"),
            Err(FrontmatterError::NotAMapping("an array"))
        ));
        assert!(matches!(
            parsed("---\nname: [\n---\n"),
            Err(FrontmatterError::Yaml(_))
        ));
        assert_eq!(parsed("no fence"), Err(FrontmatterError::Missing));
        let long = format!("---\nk: {}\n---\n", "x".repeat(MAX_FRONTMATTER_BYTES));
        assert!(matches!(parsed(&long), Err(FrontmatterError::TooLong(_))));
    }

    #[test]
    fn an_empty_block_is_an_empty_object() {
        assert_eq!(parsed("---\n\n---\nbody").unwrap(), json!({}));
    }
}
