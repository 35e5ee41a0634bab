//! A cursor over JSON text for the hot paths' own readers.
//!
//! The server's `tools/call` reader and the client's reader of a tool's
//! answer take the message they see most in place, without a tree. Both
//! walk the text with this [`Cursor`], which reads a strict subset of JSON:
//! every method answers `None` on anything it does not accept, and the
//! caller then hands the bytes to the general parser, which owns every
//! error. So a cursor may refuse more than JSON does, never less: whatever
//! it accepts, `serde_json` reads the same way (but for
//! [`Cursor::raw_object`], which only finds an object's end and leaves its
//! content to whoever parses it).
//!
//! ```
//! use switchboard_wire::cursor::Cursor;
//! let mut c = Cursor::new(r#" {"a": "x", "b": [1, {"c": null}]} "#);
//! let (mut a, mut b) = (None, None);
//! c.object(|c, key| {
//!     match key {
//!         "a" => a = Some(c.plain_string()?),
//!         "b" => b = Some(c.value()?),
//!         _ => return None,
//!     }
//!     Some(())
//! })
//! .unwrap();
//! c.end().unwrap();
//! assert_eq!((a, b), (Some("x"), Some(r#"[1, {"c": null}]"#)));
//! ```

use std::borrow::Cow;

use serde::Deserialize;

use crate::jsonrpc::RequestId;

/// Where the first byte that ends a plain stretch of a JSON string is: a
/// `"`, a `\\` or a control character (which JSON bars from strings).
/// Eight bytes at a time in a plain word: the strings read here are mostly
/// short (member names, versions, tool names), too short for a vector
/// search to pay for its set-up.
fn special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    // A byte of `x` is below `n` (at most 0x80) where the high bit of
    // `below(x, n)` is set; the lowest such bit is exact (a borrow only
    // sets bits above a byte that was below `n`).
    let below = |x: u64, n: u64| x.wrapping_sub(n) & !x & HIGHS;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let found =
            below(word ^ QUOTES, ONES) | below(word ^ BACKSLASHES, ONES) | below(word, SPACES);
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|p| at + p)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// What a one-character escape (`\\n`, …) stands for; `None` for `\\u`
/// and for what is no escape.
fn unescaped(b: u8) -> Option<char> {
    Some(match b {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// Deepest nesting [`Cursor::value`] follows (one bit of a word per level);
/// `serde_json` itself stops at 128.
const MOST_DEPTH: u32 = 64;

/// Longest number [`Cursor::value`] accepts. Longer ones, and every
/// exponent, are left to the general parser, which refuses a number out of
/// the range of `f64`: a short one without an exponent never is.
const LONGEST_NUMBER: usize = 24;

/// A position in a JSON text, read forwards. See the [module](self) for
/// what it accepts.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Cursor { text, at: 0 }
    }

    /// A cursor at byte `offset` of `text`; `None` when that is not the
    /// start of a character.
    pub fn starting_at(text: &'a str, offset: usize) -> Option<Self> {
        text.is_char_boundary(offset)
            .then_some(Cursor { text, at: offset })
    }

    /// Where the next read starts, in bytes from the start of the text.
    pub fn offset(&self) -> usize {
        self.at
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while self.bytes().get(self.at).copied().is_some_and(is_space) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    /// Consumes `byte`, which must come next after whitespace.
    pub fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Nothing but whitespace is left.
    pub fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// An object, calling `member` with each member's name (a
    /// [`plain_string`](Self::plain_string)) and the cursor placed on its
    /// value, which `member` must consume.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.items(b'{', b'}', |c| {
            let key = c.plain_string()?;
            c.expect(b':')?;
            member(c, key)
        })
    }

    /// An array, calling `element` with the cursor placed on each element,
    /// which `element` must consume.
    pub fn array(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.items(b'[', b']', element)
    }

    /// What `open` and `close` enclose, separated by commas: `item` reads
    /// each one.
    fn items(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.expect(open)?;
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                end if end == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string without escapes or control characters, as it stands.
    pub fn plain_string(&mut self) -> Option<&'a str> {
        let bytes = self.bytes();
        self.open_quote()?;
        let start = self.at;
        let len = special(bytes.get(start..)?)?;
        let end = start + len;
        if bytes[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        self.text.get(start..end)
    }

    /// Consumes the `"` that opens a string. What machines write has no
    /// space before it: the quote is looked for first.
    fn open_quote(&mut self) -> Option<()> {
        if self.bytes().get(self.at) == Some(&b'"') {
            self.at += 1;
            Some(())
        } else {
            self.expect(b'"')
        }
    }

    /// Any string, decoded: borrowed when it has no escapes. A `\\u`
    /// escape is read by `serde_json`.
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        self.open_quote()?;
        let start = self.at;
        let bytes = self.bytes();
        let mut at = start + special(&bytes[start..])?;
        if bytes[at] == b'"' {
            self.at = at + 1;
            return Some(Cow::Borrowed(&self.text[start..at]));
        }
        // Room for the rest of the text, up to a bound: a long text grows.
        let mut decoded = String::with_capacity((bytes.len() - start).min(4096));
        decoded.push_str(&self.text[start..at]);
        // Each pass: an escape at `at`, then a plain stretch.
        loop {
            if bytes[at] != b'\\' {
                return None;
            }
            let Some(c) = unescaped(*bytes.get(at + 1)?) else {
                self.at = start - 1;
                return self.string_read_by_serde();
            };
            decoded.push(c);
            at += 2;
            let len = special(&bytes[at..])?;
            decoded.push_str(&self.text[at..at + len]);
            at += len;
            if bytes[at] == b'"' {
                self.at = at + 1;
                return Some(Cow::Owned(decoded));
            }
        }
    }

    /// A string token with a `\\u` escape, read by `serde_json` (which also
    /// pairs surrogates and refuses lone ones).
    fn string_read_by_serde(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        self.skip_string(true)?;
        serde_json::from_str(&self.text[start..self.at])
            .ok()
            .map(Cow::Owned)
    }

    /// Consumes an empty object (`{}`, perhaps with spaces inside) if one
    /// comes next.
    pub fn empty_object(&mut self) -> bool {
        let at = self.at;
        if self.expect(b'{').is_some() && self.expect(b'}').is_some() {
            return true;
        }
        self.at = at;
        false
    }

    /// `true`, `false` or `null` (`None`).
    pub fn bool_or_null(&mut self) -> Option<Option<bool>> {
        self.skip_space();
        let rest = &self.bytes()[self.at..];
        let (value, len) = if rest.starts_with(b"true") {
            (Some(true), 4)
        } else if rest.starts_with(b"false") {
            (Some(false), 5)
        } else if rest.starts_with(b"null") {
            (None, 4)
        } else {
            return None;
        };
        self.at += len;
        Some(value)
    }

    /// Consumes `null` if it comes next.
    pub fn null(&mut self) -> bool {
        self.skip_space();
        let hit = self.bytes()[self.at..].starts_with(b"null");
        self.at += if hit { 4 } else { 0 };
        hit
    }

    /// A request id or progress token: a plain string, or an integer that
    /// fits in `i64` (as `RequestId::from_value` reads them).
    pub fn id(&mut self) -> Option<RequestId> {
        if self.peek()? == b'"' {
            return Some(RequestId::String(self.plain_string()?.to_owned()));
        }
        let bytes = self.bytes();
        let negative = bytes[self.at] == b'-';
        let first = self.at + usize::from(negative);
        // Summed below zero, so that `i64::MIN` fits; `None` past the range.
        let mut value: i64 = 0;
        let mut at = first;
        while let Some(digit) = bytes
            .get(at)
            .and_then(|b| b.checked_sub(b'0'))
            .filter(|d| *d < 10)
        {
            value = value.checked_mul(10)?.checked_sub(i64::from(digit))?;
            at += 1;
        }
        // JSON has no leading zeros, and `-0` reads as a float; those,
        // fractions and exponents are left to the general parser.
        let digits = at - first;
        if digits == 0 || (bytes[first] == b'0' && (digits > 1 || negative)) {
            return None;
        }
        if matches!(bytes.get(at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.at = at;
        let value = if negative {
            value
        } else {
            value.checked_neg()?
        };
        Some(RequestId::Number(value))
    }

    /// The text of the next value, which must be an object nested at most
    /// 64 levels deep: found by matching brackets outside strings. Its
    /// content is not checked otherwise: whoever uses it parses it.
    pub fn raw_object(&mut self) -> Option<&'a str> {
        if self.peek()? != b'{' {
            return None;
        }
        let bytes = self.bytes();
        let start = self.at;
        let mut depth = 0usize;
        let mut i = start;
        loop {
            match *bytes.get(i)? {
                b'"' => loop {
                    i += 1;
                    match *bytes.get(i)? {
                        b'\\' => i += 1,
                        b'"' => break,
                        _ => {}
                    }
                },
                b'{' | b'[' => {
                    depth += 1;
                    if depth > MOST_DEPTH as usize {
                        return None;
                    }
                }
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.at = i + 1;
        Some(&self.text[start..self.at])
    }

    /// The next value, which must be an object nested at most 64 levels
    /// deep, parsed with `serde_json` (which also finds where it ends: the
    /// text is walked once).
    pub fn parsed<T: for<'de> Deserialize<'de>>(&mut self) -> Option<T> {
        if self.peek()? != b'{' {
            return None;
        }
        let start = self.at;
        let mut values = serde_json::Deserializer::from_str(&self.text[start..]).into_iter();
        let value = values.next()?.ok()?;
        self.at += values.byte_offset();
        // Nested no deeper than 64 levels, like every value the cursor
        // reads: `serde_json` read this one alone, and counts the levels
        // around it when it reads the whole message. Only a text with more
        // than 64 opening brackets (so twice as many bytes) can be deeper.
        let text = &self.text[start..self.at];
        let deep = MOST_DEPTH as usize;
        if text.len() > 2 * deep
            && memchr::memchr2_iter(b'{', b'[', text.as_bytes()).count() > deep
            && Cursor::new(text).raw_object().is_none()
        {
            return None;
        }
        Some(value)
    }

    /// The text of the next object when it is flat: each member's value a
    /// scalar (a string without `\u` escapes, a number as
    /// [`value`](Self::value) takes them, `true`, `false` or `null`).
    /// `member` sees each member's name and the text of its value, and may
    /// refuse it. `None` for anything else, a nested value included.
    pub fn flat_object(
        &mut self,
        mut member: impl FnMut(&'a str, &'a str) -> Option<()>,
    ) -> Option<&'a str> {
        if self.peek()? != b'{' {
            return None;
        }
        let start = self.at;
        self.object(|c, key| {
            let value = c.scalar()?;
            member(key, value)
        })?;
        Some(&self.text[start..self.at])
    }

    /// The text of the next value when it is a scalar, checked as
    /// [`value`](Self::value) checks it.
    fn scalar(&mut self) -> Option<&'a str> {
        let first = self.peek()?;
        let start = self.at;
        match first {
            b'"' => self.skip_string(false)?,
            b't' | b'f' | b'n' => {
                self.bool_or_null()?;
            }
            b'-' | b'0'..=b'9' => self.skip_number()?,
            _ => return None,
        }
        Some(&self.text[start..self.at])
    }

    /// The text of the next value, of any kind, checked as JSON on the way:
    /// what it returns `serde_json` reads without error (nesting up to 64
    /// levels, numbers without exponents up to 24 characters, strings
    /// without `\u` escapes; anything beyond is refused).
    pub fn value(&mut self) -> Option<&'a str> {
        self.skip_space();
        let start = self.at;
        // One bit per open container: set for an object, clear for an
        // array.
        let mut objects: u64 = 0;
        let mut depth = 0u32;
        loop {
            // A value starts here.
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.at += 1;
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.at += 1;
                    } else {
                        if depth == MOST_DEPTH {
                            return None;
                        }
                        objects = (objects << 1) | u64::from(open == b'{');
                        depth += 1;
                        if open == b'{' {
                            self.skip_string(false)?;
                            self.expect(b':')?;
                        }
                        continue;
                    }
                }
                b'"' => self.skip_string(false)?,
                b't' | b'f' | b'n' => {
                    self.bool_or_null()?;
                }
                b'-' | b'0'..=b'9' => self.skip_number()?,
                _ => return None,
            }
            // A value ended: close what it ends, or go on to the next one.
            loop {
                if depth == 0 {
                    return Some(&self.text[start..self.at]);
                }
                let in_object = objects & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if in_object {
                            self.skip_string(false)?;
                            self.expect(b':')?;
                        }
                        break;
                    }
                    b'}' if in_object => {}
                    b']' if !in_object => {}
                    _ => return None,
                }
                self.at += 1;
                objects >>= 1;
                depth -= 1;
            }
        }
    }

    /// Consumes a string token: no control characters, escapes among
    /// `\\" \\\\ \\/ \\b \\f \\n \\r \\t`, and `\\u` only when `unicode` is
    /// set (the caller then has the token read by `serde_json`, which
    /// checks it).
    fn skip_string(&mut self, unicode: bool) -> Option<()> {
        self.open_quote()?;
        let bytes = self.bytes();
        loop {
            self.at += special(&bytes[self.at..])?;
            match bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    let escape = *bytes.get(self.at + 1)?;
                    if unescaped(escape).is_none() && !(unicode && escape == b'u') {
                        return None;
                    }
                    self.at += 2;
                }
                _ => return None,
            }
        }
    }

    /// Consumes a number without an exponent: `-?(0|[1-9][0-9]*)(.[0-9]+)?`.
    fn skip_number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let start = self.at;
        let mut at = start + usize::from(bytes[start] == b'-');
        let digits = |from: usize| {
            bytes[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let whole = digits(at);
        if whole == 0 || (bytes[at] == b'0' && whole > 1) {
            return None;
        }
        at += whole;
        if bytes.get(at) == Some(&b'.') {
            let fraction = digits(at + 1);
            if fraction == 0 {
                return None;
            }
            at += 1 + fraction;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) || at - start > LONGEST_NUMBER {
            return None;
        }
        self.at = at;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::de::IgnoredAny;
    use serde_json::Value;

    use super::*;

    /// Values within the cursor's subset: integers, strings whose escapes
    /// are short ones, nesting of a few levels.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1000i32..1000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
            "[a\"\\\\/\n\té]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[a\"é]{0,3}", inner), 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// [`Cursor::value`] of a whole text, and nothing after it.
    fn whole_value(text: &str) -> Option<&str> {
        let mut c = Cursor::new(text);
        let value = c.value()?;
        c.end()?;
        Some(value)
    }

    #[test]
    fn values_are_read_whole_and_checked() {
        for text in [
            "0",
            "-1.25",
            r#""a\"b\\\/\b\f\n\r\t""#,
            "true",
            "false",
            "null",
            "[]",
            "{}",
            r#" { "a" : [ 1 , { "b" : [ [ ] , { } , "x" ] } ] , "c" : null } "#,
        ] {
            assert_eq!(whole_value(text), Some(text.trim()), "{text}");
        }
        for text in [
            "",
            "01",
            "-",
            "1.",
            ".5",
            "1e5",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "[1 2]",
            "{1:2}",
            "\"\\x\"",
            "\"\\u0041\"",
            "\"a\u{1}\"",
            "[}",
            "{]",
            "[[1]",
            "\"open",
        ] {
            assert_eq!(whole_value(text), None, "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(whole_value(&deep).is_some());
        let deeper = format!("{}1{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(whole_value(&deeper), None);
        assert_eq!(whole_value(&"1".repeat(25)), None);
    }

    #[test]
    fn objects_nested_deeper_than_the_cursor_goes_are_refused() {
        type Object = serde_json::Map<String, serde_json::Value>;
        // `serde_json` reads up to 127 levels alone, fewer inside a
        // message: the cursor stops at 64 wherever the object sits.
        let nested = |depth: usize| {
            let inner = depth - 1;
            format!(r#"{{"a":{}"x"{}}}"#, "[".repeat(inner), "]".repeat(inner))
        };
        for depth in [1, 2, 63, 64, 65, 66, 100] {
            let text = nested(depth);
            assert!(
                serde_json::from_str::<Object>(&text).is_ok(),
                "{depth}: {text}"
            );
            let fits = depth <= 64;
            assert_eq!(Cursor::new(&text).raw_object().is_some(), fits, "{depth}");
            assert_eq!(
                Cursor::new(&text).parsed::<Object>().is_some(),
                fits,
                "{depth}"
            );
        }
        // Brackets inside strings are no nesting.
        let quoted = format!(r#"{{"a":"{}"}}"#, "{[".repeat(100));
        assert!(Cursor::new(&quoted).parsed::<Object>().is_some());
    }

    #[test]
    fn parsed_objects_end_where_the_object_does() {
        type Object = serde_json::Map<String, serde_json::Value>;
        for (text, rest) in [
            (r#"{"a":"}{\"","b":[{}]},"c":1"#, Some(r#","c":1"#)),
            (r#" {} }"#, Some(" }")),
            (r#"{"a":1}"#, Some("")),
            (r#"{"a":1"#, None),
            (r#"{"a":}"#, None),
            (r#"[{"a":1}]"#, None),
            ("null", None),
        ] {
            let mut cursor = Cursor::new(text);
            let read = cursor.parsed::<Object>();
            assert_eq!(read.is_some(), rest.is_some(), "{text}");
            if let Some(rest) = rest {
                assert_eq!(&text[cursor.offset()..], rest, "{text}");
                let whole = text[..text.len() - rest.len()].trim();
                assert_eq!(read, serde_json::from_str(whole).ok(), "{text}");
            }
        }
    }

    #[test]
    fn ids_are_read_as_request_ids_read_them() {
        for text in [
            "0",
            "7",
            "-7",
            "999999999999999999",
            "-999999999999999999",
            "1000000000000000000",
            "-1000000000000000000",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999999",
            "01",
            "-0",
            "-",
            "1.0",
            "1e2",
            "1E2",
            r#""a""#,
            r#""a\"b""#,
            "- 1",
            "1 ",
            "12,",
            "12}",
        ] {
            let mut cursor = Cursor::new(text);
            let read = cursor.id();
            let rest = &text[cursor.offset()..];
            // What serde reads from the same value (the rest being what
            // follows it in a message).
            let value = text.trim_end_matches([',', '}', ' ']);
            let general = serde_json::from_str::<serde_json::Value>(value)
                .ok()
                .and_then(|v| RequestId::from_value(&v));
            match read {
                Some(id) => {
                    assert_eq!(Some(id), general, "{text}");
                    assert_eq!(rest, &text[value.len()..], "{text}");
                }
                // Refused: either serde refuses too, or it is one the
                // general path must judge (escapes, fractions, `-0`).
                None => assert!(
                    general.is_none() || ["-0", "1.0", "1e2", "1E2", r#""a\"b""#].contains(&text),
                    "{text}"
                ),
            }
        }
    }

    #[test]
    fn strings_are_decoded_like_serde_json() {
        for (text, want) in [
            (r#""plain""#, Some("plain")),
            (r#""a\nb""#, Some("a\nb")),
            (r#""\u00e9\ud83d\ude00""#, Some("é😀")),
            (r#""\ud83d""#, None),
            (r#""a\"#, None),
            (r#""a\""#, None),
            ("\"tab\there\"", None),
        ] {
            let got = Cursor::new(text).string();
            assert_eq!(got.as_deref(), want, "{text}");
        }
    }

    proptest! {
        /// The word-at-a-time search finds the first `"` or `\\` wherever
        /// it is (in the first word, across words, in the tail), or none.
        #[test]
        fn finds_the_first_quote_backslash_or_control(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![
                    b'a', b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x22 ^ 0x80, 0x5c ^ 0x01, 0x9f, 0xa0, 0xff, b'!',
                ]),
                0..40,
            ),
        ) {
            let naive = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
            prop_assert_eq!(special(&bytes), naive);
        }

        /// A flat object (plain names, scalar values) is taken whole, each
        /// member seen as it is, and reads back as itself; any other value
        /// is refused. Whatever is
        /// taken, `serde_json` reads.
        #[test]
        fn flat_objects_and_only_those_are_taken(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            }
            .unwrap();
            // Names are read plain (no escapes), values must be scalars.
            let flat = value.as_object().is_some_and(|members| {
                members
                    .iter()
                    .all(|(k, v)| !k.contains(['"', '\\']) && !v.is_object() && !v.is_array())
            });
            let mut seen = serde_json::Map::new();
            let mut c = Cursor::new(&text);
            let taken = c.flat_object(|key, raw| {
                seen.insert(key.to_owned(), serde_json::from_str(raw).ok()?);
                Some(())
            });
            prop_assert_eq!(taken.is_some(), flat, "{}", text);
            if let Some(taken) = taken {
                prop_assert_eq!(taken, text.as_str());
                prop_assert!(c.end().is_some());
                prop_assert_eq!(serde_json::from_str::<Value>(taken).ok(), Some(value.clone()));
                prop_assert_eq!(Value::Object(seen), value);
            }
        }

        /// Whatever the flat reader takes from any text, `serde_json`
        /// reads.
        #[test]
        fn taken_flat_objects_are_json(
            text in "[{}:, \"a\\\\/nu0-9.eE+tfl-]{0,24}",
        ) {
            let mut c = Cursor::new(&text);
            if let Some(taken) = c.flat_object(|_, _| Some(())) {
                let parsed: Result<Value, _> = serde_json::from_str(taken);
                prop_assert!(parsed.is_ok(), "{:?}: {:?}", text, parsed);
            }
        }

        /// Whatever the cursor accepts as a value, `serde_json` reads as
        /// one.
        #[test]
        fn accepted_values_are_json(
            text in "[\\[\\]{}:, \"a\\\\/nu0-9.eE+tfl-]{0,24}",
        ) {
            if let Some(value) = whole_value(&text) {
                let parsed: Result<Value, _> = serde_json::from_str(value);
                prop_assert!(parsed.is_ok(), "{text:?}: {parsed:?}");
                prop_assert!(serde_json::from_str::<IgnoredAny>(&text).is_ok());
            }
        }

        /// JSON as a writer spaces it, within the cursor's subset, is
        /// accepted whole.
        #[test]
        fn written_values_are_accepted(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            prop_assert_eq!(whole_value(&text), Some(text.as_str()));
        }
    }
}
