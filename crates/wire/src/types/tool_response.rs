//! Reading the answer to a `tools/call` straight into a [`CallToolResult`].
//!
//! The general path reads a response into a JSON tree ([`Message`]) and
//! then takes the result apart. A tool call is the hot path of a client and
//! of a gateway, so this reader builds the typed result directly, in two
//! steps:
//! - the usual shape (text blocks, `structuredContent`, `isError`,
//!   `resultType`, `_meta`, nothing else) is read in place with a
//!   [`Cursor`]: no parser state, no tree but for `structuredContent` and
//!   kept `_meta` values, a `_meta` key left out only checked and skipped;
//! - any other complete result is read in one `serde_json` pass, still
//!   with no tree for the envelope, the result object or a text block.
//!
//! It only ever answers for the common case — a well-formed response whose
//! result is complete — and gives up (`None`) on everything else, which
//! the caller then reads the general way. Whenever either step answers, it
//! answers exactly what the general path would (tests check each step on
//! many shapes, and on every one-byte change of them).
//!
//! [`Message`]: crate::Message

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{CallToolResult, ContentBlock, JsonObject, ResultHeader, ResultType};
use crate::cursor::Cursor;
use crate::jsonrpc::{JSONRPC_VERSION, RequestId};

impl CallToolResult {
    /// Reads `bytes` as a JSON-RPC response carrying a complete tool result
    /// (`resultType` `complete` or absent) and returns its id and result.
    ///
    /// `None` for anything else — an error response, a task or
    /// `input_required` result, a message that is not a response, bytes
    /// that are not JSON, duplicate members, a result the general reader
    /// would refuse — so the caller reads those with
    /// [`Message::from_slice`](crate::Message::from_slice) and treats them
    /// as it always does.
    pub fn complete_from_response(bytes: &[u8]) -> Option<(RequestId, CallToolResult)> {
        Self::complete_from_response_leaving_out(bytes, None)
    }

    /// [`CallToolResult::complete_from_response`], leaving out of the
    /// result's `_meta` every key `leave_out` picks, without reading its
    /// value: the same result as reading it whole and then calling
    /// [`CallToolResult::leave_out_meta`].
    pub fn complete_from_response_leaving_out(
        bytes: &[u8],
        leave_out: Option<fn(&str) -> bool>,
    ) -> Option<(RequestId, CallToolResult)> {
        // Validated once as a whole: the readers of a `str` then check no
        // string again, where reading bytes checks each one on its own.
        let text = std::str::from_utf8(bytes).ok()?;
        in_place(text, leave_out).or_else(|| in_one_pass(text, leave_out))
    }

    /// Removes the keys `leave_out` picks from the result's `_meta`; a
    /// `_meta` left empty goes away.
    pub fn leave_out_meta(&mut self, leave_out: fn(&str) -> bool) {
        if let Some(meta) = &mut self.header.meta {
            meta.retain(|key, _| !leave_out(key));
            if meta.is_empty() {
                self.header.meta = None;
            }
        }
    }
}

/// Keys of a result's `_meta` to leave out unread.
type LeaveOut = Option<fn(&str) -> bool>;

/// The first step: the usual answer, read in place. `None` for any other
/// shape, which the second step then reads.
fn in_place(text: &str, leave_out: LeaveOut) -> Option<(RequestId, CallToolResult)> {
    let mut c = Cursor::new(text);
    let (mut version, mut id, mut result) = (None, None, None);
    c.object(|c, key| {
        match key {
            "jsonrpc" if version.is_none() => version = Some(c.plain_string()?),
            "id" if id.is_none() => id = Some(c.id()?),
            "result" if result.is_none() => result = Some(result_in_place(c, leave_out)?),
            _ => return None,
        }
        Some(())
    })?;
    c.end()?;
    (version? == JSONRPC_VERSION).then_some(())?;
    Some((id?, result?))
}

/// A result of text blocks, `structuredContent`, `isError`, `resultType`
/// and `_meta`, each at most once.
fn result_in_place(c: &mut Cursor<'_>, leave_out: LeaveOut) -> Option<CallToolResult> {
    let (mut content, mut structured_content, mut is_error) = (None, None, None);
    let (mut result_type, mut meta) = (None, None);
    c.object(|c, key| {
        match key {
            "content" if content.is_none() => content = Some(text_blocks_in_place(c)?),
            "structuredContent" if structured_content.is_none() => {
                structured_content = Some(value_in_place(c)?);
            }
            "isError" if is_error.is_none() => is_error = Some(c.bool_or_null()?),
            "resultType" if result_type.is_none() => {
                result_type = Some(if c.null() {
                    None
                } else {
                    Some(c.plain_string()?)
                });
            }
            "_meta" if meta.is_none() => meta = Some(meta_in_place(c, leave_out)?),
            _ => return None,
        }
        Some(())
    })?;
    complete(
        content,
        structured_content,
        is_error.flatten(),
        result_type.flatten(),
        meta.flatten(),
        JsonObject::new(),
    )
}

/// The result both steps read, when its `resultType` says it is complete
/// (`complete` or none).
fn complete(
    content: Option<Vec<ContentBlock>>,
    structured_content: Option<Value>,
    is_error: Option<bool>,
    result_type: Option<&str>,
    meta: Option<JsonObject>,
    extra: JsonObject,
) -> Option<CallToolResult> {
    let result_type = result_type.map(ResultType::from);
    if !matches!(result_type, None | Some(ResultType::Complete)) {
        return None;
    }
    Some(CallToolResult {
        content: content.unwrap_or_default(),
        structured_content,
        is_error,
        header: ResultHeader {
            result_type,
            meta,
            extra,
        },
    })
}

/// The next value, read by `serde_json`: an object in the same walk that
/// finds its end ([`Cursor::parsed`]), anything else once the cursor has
/// found and checked it.
fn value_in_place(c: &mut Cursor<'_>) -> Option<Value> {
    if c.peek()? == b'{' {
        return c.parsed().map(Value::Object);
    }
    serde_json::from_str(c.value()?).ok()
}

/// A `content` array of blocks that are `{"type":"text","text":…}` and no
/// more.
fn text_blocks_in_place(c: &mut Cursor<'_>) -> Option<Vec<ContentBlock>> {
    let mut blocks = Vec::new();
    c.array(|c| {
        let (mut kind, mut text) = (None, None);
        c.object(|c, key| {
            match key {
                "type" if kind.is_none() => kind = Some(c.plain_string()?),
                "text" if text.is_none() => text = Some(c.string()?),
                _ => return None,
            }
            Some(())
        })?;
        (kind? == "text").then_some(())?;
        blocks.push(ContentBlock::Text {
            text: text?.into_owned(),
            extra: JsonObject::new(),
        });
        Some(())
    })?;
    Some(blocks)
}

/// A result's `_meta` (`null` or an object): the keys `leave_out` picks
/// checked and skipped, the others read; emptied by `leave_out`, it is
/// `None`, as [`CallToolResult::leave_out_meta`] leaves it.
fn meta_in_place(c: &mut Cursor<'_>, leave_out: LeaveOut) -> Option<Option<JsonObject>> {
    if c.null() {
        return Some(None);
    }
    let mut kept = JsonObject::new();
    c.object(|c, key| {
        // Checked alike whether kept or left out, so that leaving a key
        // out never changes which answers are read here.
        let value = c.value()?;
        if !leave_out.is_some_and(|leave_out| leave_out(key)) {
            kept.insert(key.to_owned(), serde_json::from_str(value).ok()?);
        }
        Some(())
    })?;
    Some(match leave_out {
        None => Some(kept),
        Some(_) => (!kept.is_empty()).then_some(kept),
    })
}

/// The second step: any complete result, read in one `serde_json` pass.
fn in_one_pass(text: &str, leave_out: LeaveOut) -> Option<(RequestId, CallToolResult)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let answer = de.deserialize_map(EnvelopeVisitor { leave_out }).ok()?;
    de.end().ok()?;
    Some(answer)
}

/// Gives up on the fast path: the caller reads the bytes the general way.
fn give_up<E: de::Error>() -> E {
    E::custom("not a plain complete tool result")
}

/// `{"jsonrpc":"2.0","id":…,"result":{…}}`, members in any order.
struct EnvelopeVisitor {
    /// Keys of the result's `_meta` to skip unread.
    leave_out: LeaveOut,
}

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = (RequestId, CallToolResult);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC response")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut version_ok, mut id, mut result) = (None, None, None);
        while let Some(key) = map.next_key::<KeyName<'de>>()? {
            match key.0.as_ref() {
                "jsonrpc" if version_ok.is_none() => {
                    let version: KeyName<'de> = map.next_value()?;
                    version_ok = Some(version.0 == JSONRPC_VERSION);
                }
                "id" if id.is_none() => id = Some(map.next_value_seed(IdSeed)?),
                "result" if result.is_none() => {
                    result = Some(map.next_value_seed(ResultSeed {
                        leave_out: self.leave_out,
                    })?);
                }
                // A second `jsonrpc`, `id` or `result`, or any member a
                // response does not have alone: the general reader decides.
                "jsonrpc" | "id" | "result" | "error" | "method" | "params" => {
                    return Err(give_up());
                }
                _ => {
                    map.next_value::<Unread>()?;
                }
            }
        }
        match (version_ok, id, result) {
            (Some(true), Some(id), Some(result)) => Ok((id, result)),
            _ => Err(give_up()),
        }
    }
}

/// A value skipped but checked as the general reader checks it. Unlike
/// serde's `IgnoredAny`, which only checks a number's grammar, it refuses a
/// number out of the range of `f64` (`1e400`), as reading a tree does.
struct Unread;

impl<'de> de::Deserialize<'de> for Unread {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UnreadVisitor)
    }
}

struct UnreadVisitor;

impl<'de> Visitor<'de> for UnreadVisitor {
    type Value = Unread;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Unread, E> {
        Ok(Unread)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unread, A::Error> {
        while seq.next_element::<Unread>()?.is_some() {}
        Ok(Unread)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unread, A::Error> {
        while map.next_key::<Unread>()?.is_some() {
            map.next_value::<Unread>()?;
        }
        Ok(Unread)
    }
}

/// A string (a member name, `jsonrpc`, `resultType`), borrowed from the
/// input when it has no escapes.
struct KeyName<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for KeyName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = KeyName<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<KeyName<'de>, E> {
        Ok(KeyName(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyName<'de>, E> {
        Ok(KeyName(Cow::Owned(s.to_owned())))
    }
}

/// A request id: a string or an integer that fits in `i64`.
struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = RequestId;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RequestId, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Visitor<'_> for IdSeed {
    type Value = RequestId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an integer")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<RequestId, E> {
        i64::try_from(n)
            .map(RequestId::Number)
            .map_err(|_| give_up())
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(s.to_owned()))
    }
}

/// The `result` object, read into a complete [`CallToolResult`].
struct ResultSeed {
    /// Keys of its `_meta` to skip unread.
    leave_out: LeaveOut,
}

impl<'de> DeserializeSeed<'de> for ResultSeed {
    type Value = CallToolResult;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<CallToolResult, D::Error> {
        // `null` and non-objects are the general reader's to refuse.
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed {
    type Value = CallToolResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
        let mut content = None;
        let mut structured_content = None;
        let mut is_error = None;
        let mut result_type = None;
        let mut meta = None;
        let mut extra = JsonObject::new();
        while let Some(key) = map.next_key::<KeyName<'de>>()? {
            match key.0.as_ref() {
                "content" if content.is_none() => content = Some(map.next_value_seed(BlocksSeed)?),
                "structuredContent" if structured_content.is_none() => {
                    structured_content = Some(map.next_value::<Value>()?);
                }
                "isError" if is_error.is_none() => {
                    is_error = Some(map.next_value::<Option<bool>>()?);
                }
                "resultType" if result_type.is_none() => {
                    result_type = Some(map.next_value::<Option<KeyName<'de>>>()?);
                }
                "_meta" if meta.is_none() => {
                    meta = Some(match self.leave_out {
                        None => map.next_value::<Option<JsonObject>>()?,
                        Some(leave_out) => map.next_value_seed(MetaSeed { leave_out })?,
                    });
                }
                "content" | "structuredContent" | "isError" | "resultType" | "_meta" => {
                    return Err(give_up());
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    extra.insert(key.0.into_owned(), value);
                }
            }
        }
        let result_type = result_type.flatten();
        complete(
            content,
            structured_content,
            is_error.flatten(),
            result_type.as_ref().map(|s| s.0.as_ref()),
            meta.flatten(),
            extra,
        )
        .ok_or_else(give_up)
    }
}

/// A result's `_meta` (`null` or an object), the keys `leave_out` picks
/// skipped unread; emptied, it is `None`, as
/// [`CallToolResult::leave_out_meta`] leaves it.
struct MetaSeed {
    leave_out: fn(&str) -> bool,
}

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = Option<JsonObject>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = Option<JsonObject>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a _meta object or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = JsonObject::new();
        while let Some(key) = map.next_key::<KeyName<'de>>()? {
            if (self.leave_out)(&key.0) {
                map.next_value::<Unread>()?;
            } else {
                let value = map.next_value::<Value>()?;
                kept.insert(key.0.into_owned(), value);
            }
        }
        Ok((!kept.is_empty()).then_some(kept))
    }
}

/// The `content` array.
struct BlocksSeed;

impl<'de> DeserializeSeed<'de> for BlocksSeed {
    type Value = Vec<ContentBlock>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for BlocksSeed {
    type Value = Vec<ContentBlock>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of content blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
        while let Some(block) = seq.next_element_seed(BlockSeed)? {
            blocks.push(block);
        }
        Ok(blocks)
    }
}

/// One content block. A text block is built as it is read; any other
/// block is put back together in its members' order and handed to
/// [`ContentBlock::from_object`], the general reader's own step.
struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = ContentBlock;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ContentBlock, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BlockSeed {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        // `type` and `text` with their positions; the rest in order.
        let mut kind: Option<(usize, Value)> = None;
        let mut text: Option<(usize, Value)> = None;
        let mut others: Vec<(String, Value)> = Vec::new();
        let mut position = 0;
        while let Some(key) = map.next_key::<KeyName<'de>>()? {
            match key.0.as_ref() {
                "type" if kind.is_none() => kind = Some((position, map.next_value()?)),
                "text" if text.is_none() => text = Some((position, map.next_value()?)),
                "type" | "text" => return Err(give_up()),
                _ => others.push((key.0.into_owned(), map.next_value()?)),
            }
            position += 1;
        }
        let (kind, text) = match (kind, text) {
            (Some((_, Value::String(kind))), Some((_, Value::String(text)))) if kind == "text" => {
                return Ok(ContentBlock::Text {
                    text,
                    extra: others.into_iter().collect(),
                });
            }
            other => other,
        };
        // Any other block: the members back in their order, read the
        // general way.
        let mut all = others;
        let mut aside: Vec<(usize, &'static str, Value)> = [("type", kind), ("text", text)]
            .into_iter()
            .filter_map(|(name, member)| member.map(|(at, value)| (at, name, value)))
            .collect();
        aside.sort_by_key(|(at, _, _)| *at);
        for (at, name, value) in aside {
            all.insert(at.min(all.len()), (name.to_owned(), value));
        }
        Ok(ContentBlock::from_object(all.into_iter().collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Response};

    /// What the general path reads from `bytes`, when it is a complete
    /// tool result.
    fn general(bytes: &[u8]) -> Option<(RequestId, CallToolResult)> {
        let Ok(Message::Response(Response {
            id: Some(id),
            outcome: Ok(value),
        })) = Message::from_slice(bytes)
        else {
            return None;
        };
        if ResultType::of(&value) != ResultType::Complete {
            return None;
        }
        let result = CallToolResult::from_value(value).ok()?;
        Some((id, result))
    }

    /// A filter of `_meta` keys for the tests: the MCP-reserved ones.
    fn reserved(key: &str) -> bool {
        key.starts_with("io.modelcontextprotocol/")
    }

    /// One step of the fast reader, or both (the public function).
    type Step = fn(&[u8], LeaveOut) -> Option<(RequestId, CallToolResult)>;

    fn both_steps(bytes: &[u8], leave_out: LeaveOut) -> Option<(RequestId, CallToolResult)> {
        CallToolResult::complete_from_response_leaving_out(bytes, leave_out)
    }

    fn first_step(bytes: &[u8], leave_out: LeaveOut) -> Option<(RequestId, CallToolResult)> {
        in_place(std::str::from_utf8(bytes).ok()?, leave_out)
    }

    fn second_step(bytes: &[u8], leave_out: LeaveOut) -> Option<(RequestId, CallToolResult)> {
        in_one_pass(std::str::from_utf8(bytes).ok()?, leave_out)
    }

    /// Which of the steps answered for some bytes.
    #[derive(Debug, Default, Clone, Copy, PartialEq)]
    struct Answered {
        both: bool,
        in_place: bool,
        in_one_pass: bool,
    }

    /// Every answer of the fast reader, and of each of its steps alone, is
    /// the general reader's, read whole and also with the reserved `_meta`
    /// keys left out.
    fn agrees(bytes: &[u8]) -> Answered {
        let mut answered = Answered::default();
        for (step, flag) in [
            (both_steps as Step, &mut answered.both),
            (first_step, &mut answered.in_place),
            (second_step, &mut answered.in_one_pass),
        ] {
            *flag = agrees_leaving_out(step, bytes, None);
            assert_eq!(*flag, agrees_leaving_out(step, bytes, Some(reserved)));
        }
        answered
    }

    fn agrees_leaving_out(step: Step, bytes: &[u8], leave_out: LeaveOut) -> bool {
        match step(bytes, leave_out) {
            Some(fast) => {
                let general = general(bytes).map(|(id, mut result)| {
                    if let Some(leave_out) = leave_out {
                        result.leave_out_meta(leave_out);
                    }
                    (id, result)
                });
                assert_eq!(
                    Some(&fast),
                    general.as_ref(),
                    "{}",
                    String::from_utf8_lossy(bytes)
                );
                // Maps compare as maps: the members' order is checked on
                // the JSON written again.
                assert_eq!(
                    serde_json::to_string(&fast.1).ok(),
                    general.and_then(|(_, g)| serde_json::to_string(&g).ok()),
                    "{}",
                    String::from_utf8_lossy(bytes)
                );
                true
            }
            None => false,
        }
    }

    const SAMPLES: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"T-1 [high]\nx"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"0.1.0"}}}}"#,
        r#"{"result":{"content":[]},"id":"a\"b","jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":-7,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":9,"result":{"content":[{"annotations":{"priority":1},"text":"hi","type":"text","_meta":{"k":[1,2]}}],"isError":true,"structuredContent":{"a":null},"extra":1}}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"text":"x","type":"hologram","z":1},{"type":"text","text":7},{"type":"resource_link","uri":"a:b","name":"n"}],"isError":null,"_meta":null,"resultType":null}}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"a:b","text":"t"}},{"type":"resource","resource":1}],"structuredContent":null}}"#,
        r#" {"jsonrpc":"2.0","id":4,"ignored":{"x":[1]},"result":{"content":[{"type":"text","text":"\u202e\ud83d\ude00","k":1,"k":2}]}} "#,
        r#"{"jsonrpc":"2.0","id":5,"result":{"_meta":{"a":1,"io.modelcontextprotocol\/serverInfo":{"name":"t"},"b":[{"c":null}],"a":3,"io.modelcontextprotocol/x":1},"content":[{"type":"text","text":"t","_meta":{"io.modelcontextprotocol/y":2}}]}}"#,
        r#"{"jsonrpc":"2.0","id":6,"result":{"content":[],"_meta":{}}}"#,
        r#"{ "id" : "r-1" , "jsonrpc" : "2.0" , "result" : { "_meta" : { "io.modelcontextprotocol/serverInfo" : { "name" : "t\/\"x" , "v" : [ -0.5 , true , null , { } ] } , "k" : [ 1 , "\n" ] , "io.modelcontextprotocol/z" : 12345 } , "isError" : false , "content" : [ { "text" : "a\tb\u00e9\ud83d\ude00" , "type" : "text" } , { "type" : "text" , "text" : "" } ] , "resultType" : null , "structuredContent" : { "n" : [ 1.25 , "s" ] } } }"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"é"}],"isError":true,"resultType":"complete","_meta":null}}"#,
    ];
    /// The samples the first step reads in place (the others have members
    /// or escapes it leaves to the second).
    const IN_PLACE: &[usize] = &[0, 2, 8, 9, 10];

    #[test]
    fn reads_complete_results_like_the_general_path() {
        for (n, sample) in SAMPLES.iter().enumerate() {
            let answered = agrees(sample.as_bytes());
            assert!(answered.both, "the fast reader gave up on {sample}");
            assert!(answered.in_one_pass, "the second step gave up on {sample}");
            assert_eq!(
                answered.in_place,
                IN_PLACE.contains(&n),
                "the first step on {sample}"
            );
        }
    }

    #[test]
    fn gives_up_on_everything_else() {
        for bytes in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","task":{"taskId":"t"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":"yes"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","type":"text","text":"x"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} x"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        ] {
            assert!(
                CallToolResult::complete_from_response(bytes.as_bytes()).is_none(),
                "{bytes}"
            );
        }
    }

    // Every byte of every sample deleted, and replaced by a few others: the
    // fast reader either gives up or agrees with the general one.
    #[test]
    fn mutated_samples_agree_or_give_up() {
        let (mut answered, mut in_place) = (0, 0);
        let mut count = |verdict: Answered| {
            answered += usize::from(verdict.both);
            in_place += usize::from(verdict.in_place);
        };
        for sample in SAMPLES {
            let bytes = sample.as_bytes();
            for at in 0..bytes.len() {
                let mut deleted = bytes.to_vec();
                deleted.remove(at);
                count(agrees(&deleted));
                for b in [
                    b'"', b'1', b'{', b']', b',', b'n', b' ', b'\\', b'e', b'-', 0x01, 0xff, 0xc3,
                ] {
                    let mut replaced = bytes.to_vec();
                    replaced[at] = b;
                    count(agrees(&replaced));
                }
            }
        }
        assert!(answered > 100, "only {answered} mutations were read at all");
        assert!(
            in_place > 100,
            "only {in_place} mutations were read in place"
        );
    }

    #[test]
    fn left_out_meta_keys_are_skipped_and_an_emptied_meta_goes() {
        let bytes = SAMPLES[0].as_bytes();
        let (_, whole) = CallToolResult::complete_from_response(bytes).unwrap();
        assert!(whole.header.meta.is_some());
        let (_, trimmed) =
            CallToolResult::complete_from_response_leaving_out(bytes, Some(reserved)).unwrap();
        assert_eq!(trimmed.header.meta, None);
        assert_eq!(trimmed.content, whole.content);

        // An escaped key is matched as its text; other keys keep their
        // place and the last of a repeated key wins; a block's own `_meta`
        // is not the result's.
        let (_, mixed) = CallToolResult::complete_from_response_leaving_out(
            SAMPLES[7].as_bytes(),
            Some(reserved),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&mixed.header.meta).unwrap(),
            r#"{"a":3,"b":[{"c":null}]}"#
        );
        let ContentBlock::Text { extra, .. } = &mixed.content[0] else {
            panic!("not a text block: {:?}", mixed.content[0]);
        };
        assert!(extra.contains_key("_meta"), "a block's _meta was touched");
    }

    #[test]
    fn members_keep_their_order() {
        let bytes = br#"{"jsonrpc":"2.0","id":1,"result":{"b":1,"content":[{"z":1,"type":"text","a":2,"text":"t","m":3}],"a":2,"c":3}}"#;
        let (_, result) = CallToolResult::complete_from_response(bytes).unwrap();
        let keys: Vec<_> = result.header.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        let ContentBlock::Text { extra, .. } = &result.content[0] else {
            panic!("not a text block: {:?}", result.content[0]);
        };
        let keys: Vec<_> = extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "a", "m"]);
        // The general reader keeps them in the same order.
        assert!(agrees(bytes).both);
    }
}
