//! A fast path for the request every server answers most: a plain
//! `tools/call`.
//!
//! The general path builds a JSON tree of the whole request and then reads
//! it. For a `tools/call` whose members are exactly the usual ones (`name`,
//! `arguments`, and a `_meta` of the known keys, no MRTR members), a
//! [`Cursor`] reads the envelope in place instead: no tree for `params` or
//! `_meta`, no hash lookups, no copies of the member names. Only the values
//! that need a real parser (the capabilities object, client info, nested
//! arguments) go through `serde_json`, each on its own slice. Flat
//! arguments (named scalars) are only checked and kept as text, borrowed
//! from the request: a typed handler whose schema admits them reads its
//! type straight from it.
//!
//! A client writes all its calls alike: the same members in the same
//! order and the same `_meta`, only the id, the tool and its arguments
//! change (and a progress token or W3C trace context, when it sets one for
//! each call). So each thread keeps the [`Shape`] of the last call it read
//! whole: its text with those values cut out. A call whose text matches
//! the shape byte for byte outside them is read by reading just those
//! values; the rest means what it meant last time.
//!
//! It accepts a strict subset of JSON: keys and short strings
//! without escapes, integer ids, each member at most once. Anything else,
//! including every malformed request, returns `None` and falls back to the
//! general path, which owns all error reporting; so both paths answer alike.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, LazyLock};

use memchr::memmem;
use serde::Deserialize;
use serde_json::{Map, Value};
use switchboard_wire::cursor::Cursor;
use switchboard_wire::meta::{
    CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION, TRACEPARENT,
    TRACESTATE,
};
use switchboard_wire::{
    ClientCapabilities, Implementation, LoggingLevel, RequestId, RequestMeta, types::method,
};

/// A `tools/call` read by the fast path.
#[derive(Debug)]
pub(crate) struct ToolCall<'a> {
    pub(crate) id: RequestId,
    /// The tool's name, borrowed from the request (it has no escapes).
    pub(crate) name: Cow<'a, str>,
    /// The arguments object (`{}` when absent).
    pub(crate) arguments: Arguments<'a>,
    /// Shared at once: a `RequestMeta` is large, and moving it by value
    /// through the router costs more than the allocation.
    pub(crate) meta: Arc<RequestMeta>,
}

impl ToolCall<'_> {
    /// The same call, owning all it holds.
    pub(crate) fn into_owned(self) -> ToolCall<'static> {
        ToolCall {
            id: self.id,
            name: Cow::Owned(self.name.into_owned()),
            arguments: self.arguments.into_owned(),
            meta: self.meta,
        }
    }
}

/// The arguments of a [`ToolCall`]: their text when the cursor could check
/// it, so that a typed handler reads them straight from it, else parsed.
#[derive(Debug)]
pub(crate) enum Arguments<'a> {
    /// A flat object's text, checked by [`Cursor::flat_object`]:
    /// `serde_json` reads it without error. Borrowed from the request
    /// until the call has to outlive it.
    Text(Cow<'a, str>),
    /// A parsed object (`{}` for a call without arguments).
    Parsed(Value),
}

impl Arguments<'_> {
    /// The same arguments, owning their text.
    pub(crate) fn into_owned(self) -> Arguments<'static> {
        match self {
            Arguments::Text(text) => Arguments::Text(Cow::Owned(text.into_owned())),
            Arguments::Parsed(value) => Arguments::Parsed(value),
        }
    }

    /// The object as JSON: parsed now when it is text.
    ///
    /// # Errors
    /// Only if the text does not parse, which the check it passed rules out.
    pub(crate) fn value(&self) -> Result<Cow<'_, Value>, serde_json::Error> {
        match self {
            Arguments::Text(text) => serde_json::from_str(text).map(Cow::Owned),
            Arguments::Parsed(value) => Ok(Cow::Borrowed(value)),
        }
    }

    /// Parses the arguments in place when they are text.
    ///
    /// # Errors
    /// As [`Arguments::value`]; they are left as they were.
    pub(crate) fn parse(&mut self) -> Result<(), serde_json::Error> {
        if let Arguments::Text(text) = self {
            *self = Arguments::Parsed(serde_json::from_str(text)?);
        }
        Ok(())
    }

    /// The parsed object, when they are parsed.
    pub(crate) fn parsed(&self) -> Option<&Value> {
        match self {
            Arguments::Parsed(value) => Some(value),
            Arguments::Text(_) => None,
        }
    }

    /// [`Arguments::value`], owned.
    ///
    /// # Errors
    /// As [`Arguments::value`].
    pub(crate) fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Arguments::Text(text) => serde_json::from_str(&text),
            Arguments::Parsed(value) => Ok(value),
        }
    }

    /// Reads the arguments object at `s`: its text when it is flat (the
    /// common case, and the only one a flat schema admits), else parsed
    /// by `serde_json`. Accepts what [`Cursor::parsed`] accepts.
    fn read<'a>(s: &mut Cursor<'a>) -> Option<Arguments<'a>> {
        let mut checked = s.clone();
        if let Some(text) = checked.flat_object(|_, _| Some(())) {
            *s = checked;
            return Some(Arguments::Text(Cow::Borrowed(text)));
        }
        s.parsed().map(Arguments::Parsed)
    }
}

/// Reads `bytes` as a plain `tools/call`; `None` for anything else (the
/// general path then takes it).
pub(crate) fn tool_call(bytes: &[u8]) -> Option<ToolCall<'_>> {
    // Cheap pre-check: only requests naming the method are tried.
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"tools/call\""));
    FINDER.find(bytes)?;
    // One validation for the whole body: every slice below is then `str`.
    let text = std::str::from_utf8(bytes).ok()?;
    SHAPE.with_borrow_mut(|shape| {
        if let Some(call) = shape.read(text) {
            return Some(call);
        }
        let mut spans = Vec::new();
        let call = read_whole(text, &mut spans)?;
        shape.keep(text, &mut spans, &call.meta);
        Some(call)
    })
}

/// Reads all of `text` with the cursor, and adds to `spans` where its
/// varying values are.
fn read_whole<'a>(text: &'a str, spans: &mut Spans) -> Option<ToolCall<'a>> {
    let mut s = Cursor::new(text);
    let (mut jsonrpc, mut id, mut name, mut params) = (None, None, None, None);
    s.object(|s, key| {
        let start = s.offset();
        match key {
            "jsonrpc" if jsonrpc.is_none() => jsonrpc = Some(s.plain_string()?),
            "id" if id.is_none() => {
                id = Some(s.id()?);
                spans.push((start..s.offset(), Hole::Id));
            }
            "method" if name.is_none() => name = Some(s.plain_string()?),
            "params" if params.is_none() => params = Some(Params::scan(s, spans)?),
            _ => return None,
        }
        Some(())
    })?;
    s.end()?;
    if jsonrpc? != "2.0" || name? != method::TOOLS_CALL {
        return None;
    }
    let params = params?;
    Some(ToolCall {
        id: id?,
        name: Cow::Borrowed(params.name),
        arguments: params.arguments,
        meta: params.meta,
    })
}

/// Where the values that differ from call to call sit in a request's
/// text, and which they are.
type Spans = Vec<(Range<usize>, Hole)>;

/// One of the values a [`Shape`] leaves open: those a client changes from
/// call to call.
#[derive(Clone, Copy, Debug)]
enum Hole {
    Id,
    Name,
    Arguments,
    /// The `_meta` members a client may set anew for each call.
    ProgressToken,
    Traceparent,
    Tracestate,
}

/// Longest text (holes left out) a [`Shape`] keeps.
const MOST_SHAPE: usize = 4096;

/// The last plain `tools/call` read whole on this thread, with its id,
/// tool name and arguments cut out (and its progress token and trace
/// context, when it has them).
///
/// A client writes every call the same way: the same members in the same
/// order, the same `_meta`; only the id, the tool and its arguments change
/// (and a progress token or trace context set for each call).
/// A request whose text is this one's, but for values the cursor reads in
/// the holes, would be read whole exactly as this one was (the cursor's
/// reads depend only on the text ahead of them), so only the holes are
/// read and the rest is what this one said. Anything else is read whole
/// and becomes the new shape.
#[derive(Default)]
struct Shape {
    /// The text with the holes' values cut out.
    literal: String,
    /// Each hole: where it sits in `literal`, in order.
    holes: Vec<(usize, Hole)>,
    /// What the `_meta` said; `None` while no shape is kept.
    meta: Option<Arc<RequestMeta>>,
}

impl Shape {
    /// `text` read through this shape; `None` when it does not fit.
    fn read<'a>(&self, text: &'a str) -> Option<ToolCall<'a>> {
        let meta = self.meta.as_ref()?;
        let (mut id, mut name, mut arguments) = (None, None, None);
        let (mut progress_token, mut traceparent, mut tracestate) = (None, None, None);
        let bytes = text.as_bytes();
        let literal = self.literal.as_bytes();
        let (mut from, mut at) = (0, 0);
        for &(cut, hole) in &self.holes {
            let fixed = &literal[from..cut];
            if !bytes.get(at..)?.starts_with(fixed) {
                return None;
            }
            let mut s = Cursor::starting_at(text, at + fixed.len())?;
            match hole {
                Hole::Id => id = Some(s.id()?),
                Hole::Name => name = Some(s.plain_string()?),
                Hole::Arguments => arguments = Some(Arguments::read(&mut s)?),
                Hole::ProgressToken => progress_token = Some(s.id()?),
                Hole::Traceparent => traceparent = Some(s.plain_string()?),
                Hole::Tracestate => tracestate = Some(s.plain_string()?),
            }
            at = s.offset();
            from = cut;
        }
        if bytes.get(at..)? != &literal[from..] {
            return None;
        }
        let meta = if progress_token.is_none() && traceparent.is_none() && tracestate.is_none() {
            Arc::clone(meta)
        } else {
            let mut meta = RequestMeta::clone(meta);
            meta.progress_token = progress_token.or(meta.progress_token);
            meta.traceparent = traceparent.map(str::to_owned).or(meta.traceparent);
            meta.tracestate = tracestate.map(str::to_owned).or(meta.tracestate);
            Arc::new(meta)
        };
        Some(ToolCall {
            id: id?,
            name: Cow::Borrowed(name?),
            arguments: arguments.unwrap_or_else(no_arguments),
            meta,
        })
    }

    /// Keeps `text`, just read whole, as the shape of the next requests.
    fn keep(&mut self, text: &str, spans: &mut Spans, meta: &Arc<RequestMeta>) {
        let cut: usize = spans.iter().map(|(span, _)| span.len()).sum();
        if text.len() - cut > MOST_SHAPE {
            *self = Shape::default();
            return;
        }
        spans.sort_unstable_by_key(|(span, _)| span.start);
        self.literal.clear();
        self.holes.clear();
        let mut from = 0;
        for (span, hole) in spans.drain(..) {
            self.literal.push_str(&text[from..span.start]);
            self.holes.push((self.literal.len(), hole));
            from = span.end;
        }
        self.literal.push_str(&text[from..]);
        self.meta = Some(Arc::clone(meta));
    }
}

/// The arguments of a call that sends none.
fn no_arguments<'a>() -> Arguments<'a> {
    Arguments::Parsed(Value::Object(Map::new()))
}

/// The `params` of a plain `tools/call`.
struct Params<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
    /// Shared as soon as it is read: a `RequestMeta` is large, and each
    /// move on the way to the router would copy it.
    meta: Arc<RequestMeta>,
}

impl<'a> Params<'a> {
    fn scan(s: &mut Cursor<'a>, spans: &mut Spans) -> Option<Self> {
        let (mut name, mut arguments, mut meta) = (None, None, None);
        s.object(|s, key| {
            let start = s.offset();
            match key {
                "name" if name.is_none() => {
                    name = Some(s.plain_string()?);
                    spans.push((start..s.offset(), Hole::Name));
                }
                // Not `null`: the general path decides what that means.
                "arguments" if arguments.is_none() => {
                    arguments = Some(Arguments::read(s)?);
                    spans.push((start..s.offset(), Hole::Arguments));
                }
                "_meta" if meta.is_none() => meta = Some(scan_meta(s, spans)?),
                _ => return None,
            }
            Some(())
        })?;
        Some(Params {
            name: name?,
            arguments: arguments.unwrap_or_else(no_arguments),
            meta: meta?,
        })
    }
}

/// A `_meta` of the known keys, read as `RequestMeta::from_meta_object`
/// would; anything it would refuse goes to the general path, which says why.
fn scan_meta(s: &mut Cursor<'_>, spans: &mut Spans) -> Option<Arc<RequestMeta>> {
    let mut protocol_version = None;
    let mut client_capabilities = None;
    let mut client_info = None;
    let mut log_level = None;
    let mut progress_token = None;
    let mut traceparent = None;
    let mut tracestate = None;
    s.object(|s, key| {
        let start = s.offset();
        match key {
            PROTOCOL_VERSION if protocol_version.is_none() => {
                protocol_version = Some(s.plain_string()?.to_owned());
            }
            CLIENT_CAPABILITIES if client_capabilities.is_none() => {
                // Most clients declare none: no parser for `{}`.
                client_capabilities = Some(if s.empty_object() {
                    ClientCapabilities::default()
                } else {
                    let raw = s.raw_object()?;
                    SEEN.with_borrow_mut(|seen| {
                        seen.capabilities.read(raw, |raw| {
                            let map: Map<String, Value> = serde_json::from_str(raw).ok()?;
                            ClientCapabilities::from_object(map).ok()
                        })
                    })?
                });
            }
            CLIENT_INFO if client_info.is_none() => {
                let raw = s.raw_object()?;
                client_info = Some(SEEN.with_borrow_mut(|seen| {
                    seen.client_info.read(raw, |raw| {
                        let map: Map<String, Value> = serde_json::from_str(raw).ok()?;
                        Implementation::deserialize(Value::Object(map)).ok()
                    })
                })?);
            }
            LOG_LEVEL if log_level.is_none() => {
                log_level = Some(
                    LoggingLevel::deserialize(Value::String(s.plain_string()?.to_owned())).ok()?,
                );
            }
            PROGRESS_TOKEN if progress_token.is_none() => {
                progress_token = Some(s.id()?);
                spans.push((start..s.offset(), Hole::ProgressToken));
            }
            // What a gateway or an instrumented client sends with every
            // call: kept on the fast path (the general one would build a
            // tree of the whole request for it).
            TRACEPARENT if traceparent.is_none() => {
                traceparent = Some(s.plain_string()?.to_owned());
                spans.push((start..s.offset(), Hole::Traceparent));
            }
            TRACESTATE if tracestate.is_none() => {
                tracestate = Some(s.plain_string()?.to_owned());
                spans.push((start..s.offset(), Hole::Tracestate));
            }
            _ => return None,
        }
        Some(())
    })?;
    Some(Arc::new(RequestMeta {
        protocol_version: protocol_version?,
        client_capabilities: client_capabilities?,
        client_info,
        log_level,
        progress_token,
        traceparent,
        tracestate,
        extra: Map::new(),
    }))
}

/// The capabilities and client info last read on this thread, by their
/// text. A client sends the same ones with every request (a gateway's
/// carry its extensions and name), and reading them with `serde_json`
/// costs a tree and a typed pass each time: a request whose text matches
/// gets a copy instead.
#[derive(Default)]
struct Seen {
    capabilities: Recent<ClientCapabilities>,
    client_info: Recent<Implementation>,
}

/// One value and the exact text it was read from.
struct Recent<T>(Option<(Box<str>, T)>);

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Recent(None)
    }
}

/// Longest text kept: larger objects are read every time.
const MOST_SEEN: usize = 1024;

impl<T: Clone> Recent<T> {
    /// The value of `raw`: a copy of the last one when the text is the
    /// same, else `read(raw)`, kept for next time.
    fn read(&mut self, raw: &str, read: impl FnOnce(&str) -> Option<T>) -> Option<T> {
        if let Some((text, value)) = &self.0
            && **text == *raw
        {
            return Some(value.clone());
        }
        let value = read(raw)?;
        if raw.len() <= MOST_SEEN {
            self.0 = Some((raw.into(), value.clone()));
        }
        Some(value)
    }
}

thread_local! {
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::default();
    static SHAPE: std::cell::RefCell<Shape> = std::cell::RefCell::default();
}

/// The general path's reading of `body`, in the fast path's terms; `None`
/// when it is not a plain `tools/call` the fast path may take. Used by the
/// property tests and the differential fuzz target.
fn general(body: &[u8]) -> Option<(RequestId, String, Value, RequestMeta)> {
    let Ok(switchboard_wire::Message::Request(request)) =
        switchboard_wire::Message::from_slice(body)
    else {
        return None;
    };
    let params = request.params.as_ref()?.as_object()?;
    if request.method != method::TOOLS_CALL
        || params
            .keys()
            .any(|k| !["name", "arguments", "_meta"].contains(&k.as_str()))
    {
        return None;
    }
    let arguments = match params.get("arguments") {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return None,
    };
    let meta = RequestMeta::from_params(request.params.as_ref()).ok()?;
    let name = params.get("name")?.as_str()?.to_owned();
    Some((request.id, name, arguments, meta))
}

/// The fast path either declines `body` or reads exactly what the
/// general path reads (`Ok(true)` when it took it); `Err` describes a
/// disagreement.
pub(crate) fn agrees(body: &[u8]) -> Result<bool, String> {
    let Some(fast) = tool_call(body) else {
        return Ok(false);
    };
    let text = String::from_utf8_lossy(body);
    let (id, name, arguments, meta) = general(body)
        .ok_or_else(|| format!("fast path took what the general path refuses: {text}"))?;
    let fast_arguments = fast
        .arguments
        .into_value()
        .map_err(|e| format!("the fast path kept arguments that do not parse ({e}): {text}"))?;
    if (
        fast.id,
        fast.name.into_owned(),
        fast_arguments,
        (*fast.meta).clone(),
    ) != (id, name, arguments, meta)
    {
        return Err(format!("the paths read {text} differently"));
    }
    Ok(true)
}

/// [`agrees`] for `body` read on a thread with no shape, then for each of
/// its lines in turn, each read right after the one before (so through
/// its shape when it has one): the fuzz target's property, the same for
/// the same input.
pub(crate) fn agree_in_a_row(body: &[u8]) -> Result<bool, String> {
    SHAPE.with_borrow_mut(|shape| *shape = Shape::default());
    let whole = agrees(body)?;
    for line in body.split(|&b| b == b'\n') {
        agrees(line)?;
    }
    Ok(whole)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use switchboard_wire::Message;

    fn bytes(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    // A gateway sends the same capabilities and client info with every
    // call: read once per thread, then copied while the text is the same,
    // and read anew the moment it changes.
    #[test]
    fn repeated_capabilities_and_client_info_read_like_the_general_path() {
        let call = |capabilities: Value, name: &str| {
            bytes(
                json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
                "name":"echo","arguments":{},
                "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities":capabilities,
                         "io.modelcontextprotocol/clientInfo":{"name":name,"version":"1"}}}}),
            )
        };
        let tasks = json!({"extensions":{"io.modelcontextprotocol/tasks":{}}});
        let sampling = json!({"sampling":{}});
        for (capabilities, name) in [
            (tasks.clone(), "gateway"),
            (tasks.clone(), "gateway"),
            (sampling.clone(), "gateway"),
            (sampling, "other"),
            (tasks, "gateway"),
        ] {
            let body = call(capabilities.clone(), name);
            assert_eq!(agrees(&body), Ok(true), "{capabilities} {name}");
            let meta = tool_call(&body).unwrap().meta;
            assert_eq!(
                serde_json::to_value(&meta.client_capabilities).unwrap(),
                capabilities
            );
            assert_eq!(meta.client_info.as_ref().unwrap().name, name);
        }
    }

    #[test]
    fn reads_a_plain_call_like_the_general_path() {
        let request = json!({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{
            "name":"echo","arguments":{"text":"hi"},
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                     "io.modelcontextprotocol/clientCapabilities":{"sampling":{}},
                     "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
                     "io.modelcontextprotocol/logLevel":"info","progressToken":7}}});
        let body = bytes(request.clone());
        let fast = tool_call(&body).unwrap();
        let Ok(Message::Request(general)) = Message::from_slice(&bytes(request)) else {
            panic!()
        };
        assert_eq!(fast.id, general.id);
        assert_eq!(fast.name, "echo");
        // Kept as checked text, for a typed handler to read straight.
        assert!(
            matches!(&fast.arguments, Arguments::Text(t) if &**t == r#"{"text":"hi"}"#),
            "{:?}",
            fast.arguments
        );
        assert_eq!(fast.arguments.into_value().unwrap(), json!({"text":"hi"}));
        assert_eq!(
            *fast.meta,
            RequestMeta::from_params(general.params.as_ref()).unwrap()
        );
    }

    #[test]
    fn anything_unusual_takes_the_general_path() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}});
        let cases = [
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"tools/call","_meta":meta}}),
            json!({"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"e","_meta":meta}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":meta,"requestState":"s"}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":meta,"inputResponses":{}}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":[1],"_meta":meta}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":7}}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x-vendor":"t"}}}),
            json!({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"e","_meta":meta}}),
            json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"e","_meta":meta}}),
        ];
        for c in cases {
            assert!(tool_call(&bytes(c.clone())).is_none(), "{c}");
        }
        assert!(tool_call(b"{\"method\":\"tools/call\"").is_none());
    }

    #[test]
    fn the_usual_shapes_take_the_fast_path() {
        let bodies = [
            // The benchmark's request, byte for byte.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
            // Pretty-printed, members reordered, no arguments.
            "{\n  \"params\" : {\n    \"_meta\" : { \"io.modelcontextprotocol/clientCapabilities\" : { } ,\n \"io.modelcontextprotocol/protocolVersion\" : \"2026-07-28\" } ,\n    \"name\" : \"e\"\n  },\n  \"method\" : \"tools/call\",\n  \"id\" : -42,\n  \"jsonrpc\" : \"2.0\"\n}\n",
            // Arguments with brackets, quotes and escapes inside strings; a non-ASCII name.
            // What a gateway sends downstream: the tasks extension, client
            // info and a W3C trace context.
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_ticket","arguments":{"id":"T-1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"0.1.0"},"traceparent":"00-4e3f62e1fd8c0e68b8fd4d02bee05b3e-babc5177cb4d238e-01","tracestate":"a=1"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a b","method":"tools/call","params":{"name":"écho","arguments":{"s":"}]\"{[\\","n":[1,{"x":null}],"t":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"x-y":1},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"debug","progressToken":"p"}}}"#,
        ];
        for body in bodies {
            assert_eq!(agrees(body.as_bytes()), Ok(true), "{body}");
        }
    }

    // The arguments are kept as text when the cursor checks them (for a
    // typed handler to read straight), and parsed otherwise; either way
    // they are what the general path reads.
    #[test]
    fn arguments_are_kept_as_text_when_the_cursor_checks_them() {
        let call = |arguments: &str| BENCH_CALL.replacen(r#"{"text":"hi"}"#, arguments, 1);
        for (arguments, as_text) in [
            (r#"{"text":"hi"}"#, true),
            (r#" { "a" : -1.5, "b": null, "c": "x\ny" } "#, true),
            (r#"{"a":[1,{"b":null}],"c":"x"}"#, false),
            ("{}", true),
            (r#"{"s":"\u00e9"}"#, false),
            (r#"{"n":1e3}"#, false),
            (r#"{"n":123456789012345678901234567890}"#, false),
        ] {
            for fresh in [true, false] {
                if fresh {
                    SHAPE.with_borrow_mut(|shape| *shape = Shape::default());
                }
                let body = call(arguments);
                let read = tool_call(body.as_bytes()).unwrap_or_else(|| panic!("{body}"));
                assert_eq!(
                    matches!(read.arguments, Arguments::Text(_)),
                    as_text,
                    "{arguments}"
                );
                assert_eq!(agrees(body.as_bytes()), Ok(true), "{body}");
            }
        }
    }

    #[test]
    fn declines_what_it_does_not_read_in_full() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let call = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{params}}}}}"#)
        };
        let bodies = [
            // Escapes in a name or version: the general path decodes them.
            call(&format!(r#""name":"e\u0063ho",{meta}"#)),
            call(
                r#""name":"e","_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
            ),
            // A member twice, at each level.
            call(&format!(r#""name":"e","name":"f",{meta}"#)),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            call(
                r#""name":"e","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            // Ids the general path must judge.
            format!(
                r#"{{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":01,"method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":99999999999999999999,"method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{{"name":"e",{meta}}}}}"#
            ),
            // Arguments that are not an object, or broken inside.
            call(&format!(r#""name":"e","arguments":null,{meta}"#)),
            call(&format!(r#""name":"e","arguments":{{"a":]}},{meta}"#)),
            call(&format!(
                r#""name":"e","arguments":{{"a":"unterminated}},{meta}"#
            )),
            // Trailing bytes, a control character, bad UTF-8.
            format!("{} x", call(&format!(r#""name":"e",{meta}"#))),
            call(&format!("\"name\":\"e\u{1}\",{meta}")),
        ];
        for body in &bodies {
            assert_eq!(agrees(body.as_bytes()), Ok(false), "{body}");
        }
        let mut broken = call(&format!(r#""name":"e",{meta}"#)).into_bytes();
        broken[40] = 0xff;
        assert_eq!(agrees(&broken), Ok(false));
    }

    /// `body` read through the thread's shape alone.
    // Bytes that are not UTF-8, in a hole or anywhere else, are never read
    // through a shape or whole: the general path refuses the request.
    #[test]
    fn bytes_that_are_not_utf8_are_never_read() {
        assert!(tool_call(BENCH_CALL.as_bytes()).is_some());
        let body = BENCH_CALL.as_bytes();
        for (after, what) in [
            (&br#""id":"#[..], "the id"),
            (&br#""name":""#[..], "the name"),
            (&br#""text":""#[..], "an argument"),
            (&br#""_meta":{""#[..], "the _meta"),
            (&br#""jsonrpc":""#[..], "the jsonrpc member"),
        ] {
            let at = memmem::find(body, after).unwrap() + after.len();
            for bad in [&[0xff][..], &[0xc3][..], &[0xe2, 0x82][..]] {
                let mut broken = body.to_vec();
                broken.splice(at..at, bad.iter().copied());
                assert!(tool_call(&broken).is_none(), "{what}: {bad:?}");
                assert_eq!(agrees(&broken), Ok(false), "{what}");
            }
        }
        // The shape is still the one of the call read before.
        assert!(read_by_shape(BENCH_CALL).is_some());
    }

    fn read_by_shape(body: &str) -> Option<ToolCall<'_>> {
        SHAPE.with_borrow(|shape| shape.read(body))
    }

    const BENCH_CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

    /// What a gateway sends a server for each call: a trace context of
    /// its own each time.
    const TRACED_CALL: &str = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_ticket","arguments":{"id":"T-1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"0.1.0"},"traceparent":"00-4e3f62e1fd8c0e68b8fd4d02bee05b3e-babc5177cb4d238e-01","tracestate":"a=1"}}}"#;

    /// Requests of several shapes: the bench's, members in another order
    /// with spaces and no arguments, one asking for progress, and a
    /// gateway's.
    const SHAPES: [&str; 4] = [
        BENCH_CALL,
        "{ \"params\" : {\"_meta\":{\"io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{}},\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}, \"name\" : \"e\" },\n \"id\" : \"a\", \"method\":\"tools/call\",\"jsonrpc\":\"2.0\"}\n",
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"switchboard","version":"0.1.0"},"progressToken":3},"arguments":{"id":"T-1","n":[1,{"x":null}]},"name":"get_ticket"}}"#,
        TRACED_CALL,
    ];

    // `serde_json` reads a value alone up to 127 levels deep, but counts
    // the levels around it in a whole request: deep arguments or
    // capabilities it would refuse there were taken by the fast path.
    #[test]
    fn deep_arguments_and_capabilities_are_left_to_the_general_path() {
        let call = |arguments: &str, capabilities: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"e","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}}}}}"#
            )
        };
        let nested =
            |depth: usize| format!(r#"{{"a":{}1{}}}"#, "[".repeat(depth), "]".repeat(depth));
        for depth in [10, 63, 64, 100, 120, 124, 125, 126, 127, 130] {
            for body in [call(&nested(depth), "{}"), call("{}", &nested(depth))] {
                // Read whole, then again through its own shape.
                for _ in 0..2 {
                    let verdict = agrees(body.as_bytes());
                    assert!(verdict.is_ok(), "{depth}: {verdict:?}");
                    assert_eq!(verdict, Ok(depth < 64), "{depth}");
                }
            }
        }
    }

    // Large arguments are a hole and do not count; a shape that is large
    // itself is not kept.
    #[test]
    fn only_small_shapes_are_kept() {
        let big = "x".repeat(2 * MOST_SHAPE);
        let with_big_arguments = BENCH_CALL.replacen("\"hi\"", &format!("\"{big}\""), 1);
        assert_eq!(agrees(with_big_arguments.as_bytes()), Ok(true));
        assert!(read_by_shape(BENCH_CALL).is_some());
        let with_big_meta = BENCH_CALL.replacen(
            "\"io.modelcontextprotocol/clientCapabilities\":{}",
            &format!("\"io.modelcontextprotocol/clientCapabilities\":{{}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"{big}\",\"version\":\"1\"}}"),
            1,
        );
        assert_eq!(agrees(with_big_meta.as_bytes()), Ok(true));
        assert!(read_by_shape(&with_big_meta).is_none());
        assert!(read_by_shape(BENCH_CALL).is_none(), "no shape is kept");
    }

    // A gateway's calls differ in their trace context too, a client's
    // asking for progress in the token: those are read as holes, and the
    // rest of the `_meta` is what it was.
    #[test]
    fn trace_context_and_progress_token_are_holes_too() {
        assert_eq!(agrees(TRACED_CALL.as_bytes()), Ok(true));
        let next = TRACED_CALL
            .replacen(r#""id":5"#, r#""id":6"#, 1)
            .replacen("babc5177cb4d238e", "0123456789abcdef", 1)
            .replacen(r#""a=1""#, r#""b=2,a=1""#, 1);
        let shaped = read_by_shape(&next).expect("a new trace context fits the shape");
        assert_eq!(
            shaped.meta.traceparent.as_deref(),
            Some("00-4e3f62e1fd8c0e68b8fd4d02bee05b3e-0123456789abcdef-01")
        );
        assert_eq!(shaped.meta.tracestate.as_deref(), Some("b=2,a=1"));
        assert_eq!(
            shaped.meta.client_info.as_ref().unwrap().name,
            "switchboard"
        );
        assert_eq!(agrees(next.as_bytes()), Ok(true));
        // An escaped trace context is the general path's to decode.
        let escaped = TRACED_CALL.replacen(r#""a=1""#, r#""a\u003d1""#, 1);
        assert!(read_by_shape(&escaped).is_none());
        assert_eq!(agrees(escaped.as_bytes()), Ok(false));

        let asking = SHAPES[2];
        assert_eq!(agrees(asking.as_bytes()), Ok(true));
        for (token, want) in [
            ("44", Some(RequestId::Number(44))),
            (r#""p-1""#, Some(RequestId::String("p-1".into()))),
            ("1.5", None),
        ] {
            let body = asking.replacen(
                r#""progressToken":3"#,
                &format!(r#""progressToken":{token}"#),
                1,
            );
            let shaped = read_by_shape(&body);
            assert_eq!(
                shaped.and_then(|call| call.meta.progress_token.clone()),
                want,
                "{body}"
            );
            assert!(agrees(body.as_bytes()).is_ok(), "{body}");
        }
    }

    // A client's next call differs from its last only in the id, the tool
    // and the arguments: only those are read, and the result is the
    // general path's.
    #[test]
    fn a_call_of_a_known_shape_is_read_through_its_holes() {
        assert_eq!(agrees(BENCH_CALL.as_bytes()), Ok(true));
        let with = |id: &str, name: &str, arguments: &str| {
            BENCH_CALL
                .replacen(r#""id":1"#, &format!(r#""id":{id}"#), 1)
                .replacen(r#""echo""#, name, 1)
                .replacen(r#"{"text":"hi"}"#, arguments, 1)
        };
        let fits = [
            with("2", r#""echo""#, r#"{"text":"hi"}"#),
            with("-1234567890123", r#""other_tool""#, r#"{"text":"bye"}"#),
            with(r#""req-7""#, r#""é""#, r#"{}"#),
            with(" 9", r#""e""#, r#"{"a":[1,{"b":"}\"{"}],"c":null}"#),
            with("3", r#""""#, r#" { "text" : "hi" }"#),
        ];
        for body in &fits {
            let shaped = read_by_shape(body).unwrap_or_else(|| panic!("not shaped: {body}"));
            assert_eq!(agrees(body.as_bytes()), Ok(true), "{body}");
            let whole = read_whole(body, &mut Vec::new()).unwrap();
            assert_eq!(
                (
                    shaped.id,
                    shaped.name,
                    shaped.arguments.into_value().unwrap(),
                    shaped.meta
                ),
                (
                    whole.id,
                    whole.name,
                    whole.arguments.into_value().unwrap(),
                    whole.meta
                ),
                "{body}"
            );
        }
        // Holes the cursor refuses: the shape does not fit, and the
        // general path decides.
        for body in [
            with("01", r#""echo""#, "{}"),
            with("1.5", r#""echo""#, "{}"),
            with("null", r#""echo""#, "{}"),
            with("1", r#""e\u0063ho""#, "{}"),
            with("1", r#""echo""#, "null"),
            with("1", r#""echo""#, "[1]"),
            with("1", r#""echo""#, r#"{"a":}"#),
        ] {
            assert!(read_by_shape(&body).is_none(), "{body}");
            assert_eq!(agrees(body.as_bytes()), Ok(false), "{body}");
        }
        // A text that differs outside the holes is read whole, and its
        // shape is kept from then on.
        let other_meta = BENCH_CALL.replace("{}}}}", r#"{"sampling":{}}}}}"#);
        assert!(read_by_shape(&other_meta).is_none());
        assert_eq!(agrees(other_meta.as_bytes()), Ok(true));
        let next = other_meta.replacen(r#""id":1"#, r#""id":2"#, 1);
        let shaped = read_by_shape(&next).expect("the new shape is kept");
        assert_eq!(shaped.id, RequestId::Number(2));
        assert!(shaped.meta.client_capabilities.sampling.is_some());
        for tail in ["", " ", "}", "x"] {
            let body = format!("{next}{tail}");
            assert_eq!(read_by_shape(&body).is_some(), tail.is_empty(), "{body}");
        }
    }

    // Every one-byte change of a request, read right after the request
    // itself (so its shape is the thread's), is read as the general path
    // reads it or left to it; and many are read through the shape.
    #[test]
    fn changes_to_a_known_shape_never_disagree_with_the_general_path() {
        let mut shaped = 0;
        for sample in SHAPES {
            let bytes = sample.as_bytes();
            let mut check = |mutant: &[u8]| {
                assert_eq!(agrees(bytes), Ok(true), "{sample}");
                if std::str::from_utf8(mutant).is_ok_and(|text| read_by_shape(text).is_some()) {
                    shaped += 1;
                }
                if let Err(e) = agrees(mutant) {
                    panic!("{e}");
                }
            };
            for at in 0..bytes.len() {
                let mut deleted = bytes.to_vec();
                deleted.remove(at);
                check(&deleted);
                let mut doubled = bytes.to_vec();
                doubled.insert(at, bytes[at]);
                check(&doubled);
                for b in [
                    b'"', b'1', b'{', b'}', b']', b',', b'n', b' ', b'\\', b'e', b'-', b'.', 0x01,
                    0xff,
                ] {
                    let mut replaced = bytes.to_vec();
                    replaced[at] = b;
                    check(&replaced);
                }
            }
        }
        assert!(
            shaped > 200,
            "only {shaped} changes were read through a shape"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// Whatever the spacing, order, ids, names and arguments, the fast
        /// path never reads a request differently from the general path.
        #[test]
        fn never_disagrees_with_the_general_path(
            order in proptest::sample::subsequence(vec![0usize, 1, 2, 3], 4).prop_shuffle(),
            space in proptest::collection::vec(proptest::sample::select(vec!["", " ", "\n", "\t ", "\r\n"]), 40),
            id in prop_oneof![
                proptest::num::i64::ANY.prop_map(|n| n.to_string()),
                "[a-z\\\\\"é]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
                proptest::sample::select(vec!["1.5".to_owned(), "-0".to_owned(), "007".to_owned(), "null".to_owned(), "true".to_owned()]),
            ],
            name in prop_oneof![3 => "[a-zé/_{}\\[\\]]{0,8}", 1 => "[a-zé\\\\\"]{0,4}"],
            arguments in proptest::option::of(proptest::sample::select(vec![
                r#"{}"#, r#"{"text":"hi"}"#, r#"{"a":[1,{"b":"}"}],"c":"\\\"{"}"#, r#"{"x":{"y":{"z":[]}}}"#, "[]", "null", r#"{"a":1"#,
            ])),
            extras in proptest::sample::subsequence(vec![
                r#""io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}"#,
                r#""io.modelcontextprotocol/logLevel":"info""#,
                r#""io.modelcontextprotocol/logLevel":"loud""#,
                r#""progressToken":7"#,
                r#""traceparent":"t""#,
                r#""traceparent":"t\u0041""#,
                r#""tracestate":"a=1""#,
                r#""tracestate":null"#,
                r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#,
            ], 0..3),
            caps in proptest::sample::select(vec![r#"{}"#, r#"{ }"#, r#"{"sampling":{}}"#, r#"{"sampling":1}"#, "[]"]),
        ) {
            let mut sp = space.into_iter().cycle();
            let mut w = || sp.next().unwrap_or("");
            let mut meta = vec![
                format!(r#""io.modelcontextprotocol/protocolVersion"{}:{}"2026-07-28""#, w(), w()),
                format!(r#""io.modelcontextprotocol/clientCapabilities":{}{caps}"#, w()),
            ];
            meta.extend(extras.iter().map(|e| e.to_string()));
            let mut params = vec![
                format!(r#""name"{}:{}{}"#, w(), w(), serde_json::to_string(&name).unwrap()),
                format!(r#""_meta":{{{}{}}}"#, w(), meta.join(&format!(",{}", w()))),
            ];
            if let Some(a) = arguments {
                params.push(format!(r#""arguments":{}{a}"#, w()));
            }
            let members = [
                r#""jsonrpc":"2.0""#.to_owned(),
                format!(r#""id":{}{id}"#, w()),
                r#""method":"tools/call""#.to_owned(),
                format!(r#""params":{{{}}}"#, params.join(",")),
            ];
            let body: Vec<String> = order.iter().map(|&i| members[i].clone()).collect();
            let body = format!("{}{{{}{}}}{}", w(), w(), body.join(&format!("{},", w())), w());
            let verdict = agrees(body.as_bytes());
            prop_assert!(verdict.is_ok(), "{:?}", verdict);
        }

        /// A call read right after another of the same client (the
        /// same `_meta`, other ids, tools and arguments) is read as the
        /// general path reads it.
        #[test]
        fn calls_in_a_row_never_disagree_with_the_general_path(
            calls in proptest::collection::vec((
                prop_oneof![
                    proptest::num::i64::ANY.prop_map(|n| n.to_string()),
                    "[a-z\\\\\"é]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
                    proptest::sample::select(vec!["1.5".to_owned(), "-0".to_owned(), "007".to_owned(), " 7".to_owned()]),
                ],
                prop_oneof![3 => "[a-zé/_{}\\[\\]]{0,8}", 1 => "[a-zé\\\\\"]{0,4}"],
                proptest::sample::select(vec![
                    r#"{}"#, r#"{"text":"hi"}"#, r#"{"a":[1,{"b":"}"}],"c":"\\\"{"}"#, "[]", "null", r#"{"a":1"#, r#"{"a":1}}"#,
                ]),
            ), 2..6),
        ) {
            for (id, name, arguments) in calls {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{},"arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
                    serde_json::to_string(&name).unwrap()
                );
                let verdict = agrees(body.as_bytes());
                prop_assert!(verdict.is_ok(), "{:?}", verdict);
            }
        }
    }
}
