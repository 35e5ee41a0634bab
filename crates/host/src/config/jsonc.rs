//! JSON with comments, as VS Code writes it, read strictly.
//!
//! VS Code's `mcp.json` allows `//` and `/* */` comments and trailing
//! commas; Claude's files are plain JSON. [`strip`] blanks comments and
//! trailing commas with spaces (newlines kept), so byte offsets, lines and
//! columns of the result are those of the file. [`parse`] then reads the
//! plain JSON and refuses a key that appears twice in one object (serde_json
//! would keep the last one silently, hiding a duplicated alias).
//! [`object_members`] finds where a value sits in the text, for edits that
//! keep the user's formatting.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A syntax problem, with its 1-based position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// 1-based line.
    pub(crate) line: usize,
    /// 1-based column.
    pub(crate) column: usize,
    /// What is wrong.
    pub(crate) message: String,
    /// The key path of a duplicated key, when that is the problem.
    pub(crate) duplicate: Option<String>,
}

/// Blanks comments and trailing commas; everything else is kept in place.
///
/// # Errors
/// An unterminated block comment.
pub(crate) fn strip(text: &str) -> Result<String, SyntaxError> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut in_string = false;
    // Position of the last significant byte outside strings and comments.
    let mut last_significant: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                last_significant = Some(i);
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    blank(&mut out, i);
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                blank(&mut out, i);
                blank(&mut out, i + 1);
                i += 2;
                loop {
                    if i >= bytes.len() {
                        let (line, column) = position(text, start);
                        return Err(SyntaxError {
                            line,
                            column,
                            message: "comment opened with /* is never closed".into(),
                            duplicate: None,
                        });
                    }
                    if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        blank(&mut out, i);
                        blank(&mut out, i + 1);
                        i += 2;
                        break;
                    }
                    blank(&mut out, i);
                    i += 1;
                }
            }
            b'}' | b']' => {
                if let Some(p) = last_significant.filter(|p| bytes[*p] == b',') {
                    out[p] = b' ';
                }
                last_significant = Some(i);
                i += 1;
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => {
                last_significant = Some(i);
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced by ASCII spaces, so this stays UTF-8.
    String::from_utf8(out).map_err(|_| SyntaxError {
        line: 1,
        column: 1,
        message: "the file is not UTF-8".into(),
        duplicate: None,
    })
}

fn blank(out: &mut [u8], i: usize) {
    // Newlines stay, so line numbers do not move; other bytes of a comment
    // (including the bytes of multi-byte characters) become spaces.
    if out[i] != b'\n' && out[i] != b'\r' {
        out[i] = b' ';
    }
}

/// 1-based line and column of byte `offset`.
pub(crate) fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
    (line, column)
}

/// Reads comment-free JSON, refusing duplicate keys.
///
/// # Errors
/// [`SyntaxError`] with the position serde_json reports; `duplicate` names
/// the key path when a key appears twice in one object.
pub(crate) fn parse(plain: &str) -> Result<Value, SyntaxError> {
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(plain);
    let result = StrictSeed {
        path: String::new(),
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    result.map_err(|e| {
        let duplicate = duplicate.into_inner();
        let message = match &duplicate {
            Some(path) => format!("key {path} appears twice"),
            None => strip_position(&e.to_string()),
        };
        SyntaxError {
            line: e.line(),
            column: e.column(),
            message,
            duplicate,
        }
    })
}

fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// Builds a [`Value`], remembering the key path so a duplicate can be named.
struct StrictSeed<'a> {
    path: String,
    duplicate: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let seed = StrictSeed {
                path: format!("{}[{}]", self.path, out.len()),
                duplicate: self.duplicate,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = super::key_path(&self.path, &key);
            if out.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(path.clone());
                return Err(de::Error::custom(format!("key {path} appears twice")));
            }
            let value = map.next_value_seed(StrictSeed {
                path,
                duplicate: self.duplicate,
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Where a value sits in the text: byte range `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// First byte.
    pub(crate) start: usize,
    /// One past the last byte.
    pub(crate) end: usize,
}

/// One member of an object: where its key starts and where its value sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// The decoded key.
    pub(crate) key: String,
    /// Byte offset of the key's opening quote.
    pub(crate) key_start: usize,
    /// The value.
    pub(crate) value: Span,
}

/// The members of the object at `span` in `plain` (comment-free, valid JSON).
///
/// Returns `None` when the span does not hold an object.
pub(crate) fn object_members(plain: &str, span: Span) -> Option<Vec<Member>> {
    let b = plain.as_bytes();
    let mut i = skip_ws(b, span.start);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut members = Vec::new();
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => return Some(members),
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {
                let key_start = i;
                let key_end = skip_string(b, i)?;
                let key: String = serde_json::from_str(&plain[key_start..key_end]).ok()?;
                i = skip_ws(b, key_end);
                if b.get(i) != Some(&b':') {
                    return None;
                }
                let value_start = skip_ws(b, i + 1);
                let value_end = skip_value(b, value_start)?;
                members.push(Member {
                    key,
                    key_start,
                    value: Span {
                        start: value_start,
                        end: value_end,
                    },
                });
                i = value_end;
            }
            _ => return None,
        }
    }
}

/// The elements of the array at `span` in `plain` (comment-free, valid JSON).
///
/// Returns `None` when the span does not hold an array.
pub(crate) fn array_elements(plain: &str, span: Span) -> Option<Vec<Span>> {
    let b = plain.as_bytes();
    let mut i = skip_ws(b, span.start);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b']' => return Some(out),
            b',' => i += 1,
            _ => {
                let end = skip_value(b, i)?;
                out.push(Span { start: i, end });
                i = end;
            }
        }
    }
}

/// The span of the whole document's value.
pub(crate) fn root_span(plain: &str) -> Option<Span> {
    let b = plain.as_bytes();
    let start = skip_ws(b, 0);
    let end = skip_value(b, start)?;
    Some(Span { start, end })
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    debug_assert_eq!(b.get(i), Some(&b'"'));
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_become_spaces() {
        let text = "{\n  // a comment \"with quotes\"\n  \"a\": \"//not a comment\", /* block\n */ \"b\": [1, 2,],\n}\n";
        let plain = strip(text).unwrap();
        assert_eq!(plain.len(), text.len());
        assert_eq!(plain.lines().count(), text.lines().count());
        let v = parse(&plain).unwrap();
        assert_eq!(v, serde_json::json!({"a": "//not a comment", "b": [1, 2]}));
    }

    #[test]
    fn unterminated_block_comment_is_reported_where_it_starts() {
        let err = strip("{\n  /* open\n}").unwrap_err();
        assert_eq!((err.line, err.column), (2, 3));
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        let err = parse("{\"mcpServers\": {\"a\": {}, \"a\": {}}}").unwrap_err();
        assert_eq!(err.duplicate.as_deref(), Some("mcpServers.a"));
        assert_eq!(err.line, 1);
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        let err = parse("{\n\"a\": 1\n\"b\": 2}").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.duplicate.is_none());
        assert!(!err.message.contains("at line"));
    }

    #[test]
    fn members_and_spans() {
        let text = "{ \"a\" : [1, {\"x\": \"}\"}], \"b\": true }";
        let root = root_span(text).unwrap();
        let members = object_members(text, root).unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].key, "a");
        assert_eq!(
            &text[members[0].value.start..members[0].value.end],
            "[1, {\"x\": \"}\"}]"
        );
        assert_eq!(&text[members[1].value.start..members[1].value.end], "true");
    }
}
