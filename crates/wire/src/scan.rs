//! Recovering the id of an answer that cannot be parsed.
//!
//! A response that is too long to keep, nested deeper than the parser
//! allows, or broken further on still names, near its start, the request
//! it answers. [`response_id`] reads that id from the bytes without
//! parsing the message, so the request can fail at once with the reason
//! instead of waiting for its timeout.
//!
//! The scan walks the members of the top-level object only. Nested values
//! are skipped by counting brackets, never by recursion, so any depth costs
//! the same small stack; strings are skipped with their escapes. It works
//! on any prefix of a message: a value cut off by the end of the bytes is
//! never read as complete.

use crate::jsonrpc::RequestId;

/// The id of the response these bytes begin, if they recognisably begin
/// one.
///
/// Returns the value of the top-level `"id"` member when it is an integer
/// or a string and a `"result"` or `"error"` member is seen in the bytes,
/// and no `"method"` member (other than `null`) (a message with `method` is a request or a
/// notification, whose id belongs to the other side's numbering). Members
/// after the first malformed one, or after the end of the bytes, are not
/// seen. When a member appears more than once the last one seen counts, as
/// in the message parser.
///
/// ```
/// use switchboard_wire::{RequestId, scan::response_id};
/// let cut = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[[[[[[[["#;
/// assert_eq!(response_id(cut), Some(RequestId::from(7)));
/// assert_eq!(response_id(br#"{"id":7,"method":"ping""#), None);
/// assert_eq!(response_id(br#"{"result":{},"id":7"#), None); // 7 may go on
/// ```
pub fn response_id(bytes: &[u8]) -> Option<RequestId> {
    let mut scan = Scan { bytes, at: 0 };
    let mut id = None;
    let mut answer = false;
    let mut method = false;
    scan.space();
    if !scan.eat(b'{') {
        return None;
    }
    scan.space();
    if scan.eat(b'}') {
        return None;
    }
    // Each pass reads one member; any surprise ends the scan with what was
    // seen so far.
    while let Some(key) = scan.string() {
        scan.space();
        if !scan.eat(b':') {
            break;
        }
        scan.space();
        match decoded(key).as_deref() {
            Some("method") => {
                // `"method": null` is no method to the message parser, and
                // the last member of a name counts.
                let at = scan.at;
                if !scan.skip_value() {
                    method = true;
                    break;
                }
                method = &bytes[at..scan.at] != b"null";
            }
            Some("id") => {
                let Some(value) = scan.scalar() else { break };
                id = parse_id(value);
            }
            Some(name) => {
                answer |= name == "result" || name == "error";
                if !scan.skip_value() {
                    break;
                }
            }
            None => break,
        }
        scan.space();
        if !scan.eat(b',') {
            break;
        }
        scan.space();
    }
    if answer && !method { id } else { None }
}

/// A cursor over the bytes.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        self.at += usize::from(hit);
        hit
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// A complete string token, quotes included; `None` when the bytes do
    /// not start one or end inside it.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        if !self.eat(b'"') {
            return None;
        }
        loop {
            let rest = self.bytes.get(self.at..)?;
            let offset = memchr::memchr2(b'"', b'\\', rest)?;
            self.at += offset + 1;
            if rest[offset] == b'"' {
                return Some(&self.bytes[start..self.at]);
            }
            // An escape: its next byte is never the closing quote.
            if self.at >= self.bytes.len() {
                return None;
            }
            self.at += 1;
        }
    }

    /// A complete string or bare token (number, `true`, `null`, …): a bare
    /// token counts only once a delimiter ends it, since the bytes may stop
    /// in the middle of a number.
    fn scalar(&mut self) -> Option<&'a [u8]> {
        if self.peek() == Some(b'"') {
            return self.string();
        }
        let start = self.at;
        loop {
            match self.peek()? {
                b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' => break,
                b'"' | b'{' | b'[' | b':' => return None,
                _ => self.at += 1,
            }
        }
        (self.at > start).then(|| &self.bytes[start..self.at])
    }

    /// Skips one complete value; `false` when the bytes end inside it.
    fn skip_value(&mut self) -> bool {
        if !matches!(self.peek(), Some(b'{' | b'[')) {
            return self.scalar().is_some();
        }
        // Brackets are counted, not matched: the scan only needs to find
        // where the value ends, and a real parser judges the rest.
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    if self.string().is_none() {
                        return false;
                    }
                }
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.at += 1;
                }
                Some(b'}' | b']') => {
                    depth -= 1;
                    self.at += 1;
                    if depth == 0 {
                        return true;
                    }
                }
                Some(_) => self.at += 1,
            }
        }
    }
}

/// A member name as `serde_json` reads it (escapes decoded).
fn decoded(key: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    let inner = &key[1..key.len() - 1];
    if inner.contains(&b'\\') {
        serde_json::from_slice::<String>(key).ok().map(Into::into)
    } else {
        std::str::from_utf8(inner).ok().map(Into::into)
    }
}

/// An id token read the way the message parser reads it.
fn parse_id(token: &[u8]) -> Option<RequestId> {
    let value: serde_json::Value = serde_json::from_slice(token).ok()?;
    RequestId::from_value(&value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::jsonrpc::{Message, Response};

    /// What the scan must find in bytes `serde_json` can read whole.
    fn expected(bytes: &[u8]) -> Option<Option<RequestId>> {
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(bytes) else {
            return None;
        };
        let answer = object.contains_key("result") || object.contains_key("error");
        let method = object.get("method").is_some_and(|m| !m.is_null());
        Some(if method || !answer {
            None
        } else {
            object.get("id").and_then(RequestId::from_value)
        })
    }

    #[test]
    fn table() {
        let n = |i: i64| Some(RequestId::from(i));
        let s = |t: &str| Some(RequestId::from(t));
        let cases: &[(&str, Option<RequestId>)] = &[
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, n(1)),
            (r#" { "id" : -42 , "error" : {"code":1} } "#, n(-42)),
            (r#"{"result":[1,{"id":9}],"id":"a\"b"}"#, s("a\"b")),
            (r#"{"\u0069d":3,"result":1}"#, n(3)),
            (r#"{"id":"\ud83d\ude00","result":1}"#, s("\u{1F600}")),
            (r#"{"id":1,"id":2,"result":1}"#, n(2)),
            (r#"{"id":1,"id":null,"result":1}"#, None),
            (r#"{"id":1.5,"result":1}"#, None),
            (r#"{"id":1,"result":{},"method":"m"}"#, None),
            (r#"{"id":1,"result":{},"method":{}}"#, None),
            (r#"{"id":1,"method":null,"result":{}}"#, n(1)),
            (r#"{"id":1,"params":{}}"#, None),
            (r#"{"id":[1],"result":1}"#, None),
            (r#"{"id":1,"result":{"a":}}"#, n(1)),
            (r#"{"id":1,"result":"#, n(1)),
            (r#"{"id":1,"result":"unterminated"#, n(1)),
            (r#"{"id":12"#, None),
            (r#"{"result":{},"id":12"#, None),
            (r#"{"result":{},"id":"ab"#, None),
            (r#"{"result":{},"id":"a\"#, None),
            (r#"[{"id":1,"result":1}]"#, None),
            ("", None),
            ("{", None),
            ("{}", None),
        ];
        for (input, want) in cases {
            assert_eq!(&response_id(input.as_bytes()), want, "{input}");
        }
    }

    // 100,000 levels cost no stack: brackets are counted.
    #[test]
    fn depth_costs_no_recursion() {
        let depth = 100_000;
        let mut line = String::from(r#"{"jsonrpc":"2.0","result":{"deep":"#);
        line.push_str(&"[".repeat(depth));
        line.push_str(&"]".repeat(depth));
        line.push_str(r#"},"id":"late"}"#);
        assert_eq!(response_id(line.as_bytes()), Some(RequestId::from("late")));
        assert!(Message::from_slice(line.as_bytes()).is_err());
        let open = format!(r#"{{"id":5,"result":{}"#, "{\"a\":[".repeat(depth));
        assert_eq!(response_id(open.as_bytes()), Some(RequestId::from(5)));
    }

    /// JSON-ish text: mostly the characters that matter to the scan.
    fn jsonish() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\\",
            " ",
            "\"id\"",
            "\"result\"",
            "\"error\"",
            "\"method\"",
            "1",
            "-7",
            "\"x\"",
            "null",
            "true",
            "1e2",
            "0.5",
            "\\u0069",
            "é",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|p| p.concat().into_bytes())
    }

    /// Messages serde_json reads, with the members in any order.
    fn message() -> impl Strategy<Value = Vec<u8>> {
        let id = prop_oneof![
            any::<i64>().prop_map(|i| i.to_string()),
            "[a-z\"\\\\]{0,4}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
            Just("null".to_owned()),
            Just("1.0".to_owned()),
        ];
        let value = prop_oneof![
            Just("{}".to_owned()),
            Just(r#"{"id":3,"a":[{"method":"x"},"]}"]}"#.to_owned()),
            Just("[[[[[[1]]]]]]".to_owned()),
            Just("\"s\"".to_owned()),
            Just("0".to_owned()),
        ];
        let member = prop_oneof![
            id.prop_map(|v| format!(r#""id":{v}"#)),
            value.clone().prop_map(|v| format!(r#""result":{v}"#)),
            value.clone().prop_map(|v| format!(r#""error":{v}"#)),
            value.clone().prop_map(|v| format!(r#""params":{v}"#)),
            Just(r#""method":"m""#.to_owned()),
            Just(r#""method":null"#.to_owned()),
            Just(r#""jsonrpc":"2.0""#.to_owned()),
        ];
        prop::collection::vec(member, 0..6)
            .prop_map(|members| format!("{{ {} }}", members.join(" , ")).into_bytes())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        // Any bytes: no panic; where serde_json reads them, the same id.
        #[test]
        fn never_panics_and_agrees_with_serde(bytes in prop_oneof![jsonish(), any::<Vec<u8>>()]) {
            let got = response_id(&bytes);
            if let Some(want) = expected(&bytes) {
                prop_assert_eq!(got, want);
            }
        }

        // Whole messages agree with serde_json and with the message parser;
        // every prefix yields nothing or the same id.
        #[test]
        fn whole_and_cut_messages(bytes in message()) {
            let got = response_id(&bytes);
            if let Some(want) = expected(&bytes) {
                prop_assert_eq!(&got, &want);
            }
            if let Ok(Message::Response(Response { id: Some(id), .. })) = Message::from_slice(&bytes) {
                prop_assert_eq!(got.as_ref(), Some(&id));
            }
            for cut in 0..bytes.len() {
                let early = response_id(&bytes[..cut]);
                if early.is_some() && expected(&bytes).is_some_and(|w| w.is_some()) {
                    // A prefix can only lack members, never invent an id;
                    // with the id repeated it may see an earlier one.
                    let ids = bytes.windows(4).filter(|w| w == b"\"id\"").count();
                    if ids == 1 {
                        prop_assert_eq!(&early, &got);
                    }
                }
            }
        }
    }
}
