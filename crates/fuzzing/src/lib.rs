//! The bodies of Switchboard's fuzz targets.
//!
//! Every parser that reads bytes from outside the process has one function
//! here taking arbitrary bytes. It panics when a property breaks (that is
//! how libFuzzer sees a failure) and returns otherwise. The cargo-fuzz
//! binaries in `fuzz/` call these on nightly; `tests/corpus.rs` replays
//! every file of `fuzz/corpus/` and `fuzz/regressions/` through them on
//! stable, so the properties are checked in CI without libFuzzer.
//!
//! | target | parser |
//! |---|---|
//! | `framer` | stdio line framer, any chunking and bound |
//! | `sse` | SSE decoder, any chunking |
//! | `message` | JSON-RPC message parsing and its round trip; the typed reading of a tool result against the general one; the id scan for unparseable answers |
//! | `header` | the `=?base64?…?=` header-value codec |
//! | `x_mcp_header` | `x-mcp-header` extraction from a tool schema and the values mirrored from arguments |
//! | `www_authenticate` | `WWW-Authenticate` challenges |
//! | `oauth_metadata` | protected-resource and authorization-server metadata, the URLs in them |
//! | `uri_template` | RFC 6570 templates and matching |
//! | `config` | the config file (JSON with comments, `${VAR}` expansion, every key) |
//! | `cursor` | pagination cursor unsealing (forged and altered tokens) |
//! | `request_state` | MRTR `requestState` unsealing (forged, altered, misbound tokens) |
//! | `fast_path` | differential: the server's `tools/call` fast path against the general path |
//! | `skill` | a Skills entry (JSON) and a `SKILL.md` checked against it: frontmatter YAML, digests, sizes |
//! | `http1` | the HTTP client's response head parser and body decoder (sized, chunked, to the close), any chunking |
//!
//! # Example
//! ```
//! // Any bytes: a target returns, or panics when a property breaks.
//! let framer = switchboard_fuzzing::target("framer").expect("a known target");
//! framer(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n\xff\n");
//! assert!(switchboard_fuzzing::target("no-such-target").is_none());
//! ```

#![allow(clippy::print_stderr)]

use std::collections::BTreeMap;

use serde_json::Value;
use switchboard_host::{Config, ConfigOrigin};
use switchboard_server::UriTemplate;
use switchboard_wire::header::{decode_value, encode_value, header_params};
use switchboard_wire::types::ResultType;
use switchboard_wire::{
    CallToolResult, FrameError, LineFramer, Message, Response, SseDecoder, scan,
};

/// A fuzz target: its name (the binary's and the corpus folder's) and body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name.
pub const TARGETS: &[Target] = &[
    ("framer", framer),
    ("sse", sse),
    ("message", message),
    ("header", header),
    ("x_mcp_header", x_mcp_header),
    ("www_authenticate", www_authenticate),
    ("oauth_metadata", oauth_metadata),
    ("uri_template", uri_template),
    ("config", config),
    ("cursor", cursor),
    ("request_state", request_state),
    ("fast_path", fast_path),
    ("skill", skill),
    ("http1", http1),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The lines and errors a framer bound to `max_line` gives, `feed` giving
/// it bytes until it says the stream ended.
fn framed(
    max_line: usize,
    mut feed: impl FnMut(&mut LineFramer) -> bool,
) -> Vec<Result<Vec<u8>, FrameError>> {
    let mut framer = LineFramer::with_max_line(max_line);
    let mut out = Vec::new();
    while feed(&mut framer) {
        loop {
            match framer.next_line() {
                Ok(Some(line)) => out.push(Ok(line.to_vec())),
                Ok(None) => break,
                Err(e) => out.push(Err(e)),
            }
        }
    }
    match framer.finish() {
        Ok(Some(line)) => out.push(Ok(line.to_vec())),
        Ok(None) => {}
        Err(e) => out.push(Err(e)),
    }
    out
}

/// The framer handed `pieces` one after another.
fn frame(pieces: &[&[u8]], max_line: usize) -> Vec<Result<Vec<u8>, FrameError>> {
    let mut rest = pieces.iter();
    framed(max_line, |framer| match rest.next() {
        Some(piece) => {
            framer.push(piece);
            assert!(framer.buffered() <= max_line + piece.len() + 1);
            true
        }
        None => false,
    })
}

/// The framer reading `stream` itself ([`LineFramer::read_from`]), at
/// most `chunk` bytes a read.
fn frame_read(stream: &[u8], chunk: usize, max_line: usize) -> Vec<Result<Vec<u8>, FrameError>> {
    struct Chunked<'a> {
        data: &'a [u8],
        chunk: usize,
    }
    impl std::io::Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.data.len().min(self.chunk).min(buf.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }
    let mut reader = Chunked {
        data: stream,
        chunk,
    };
    framed(max_line, |framer| {
        framer.read_from(&mut reader).is_ok_and(|n| n > 0)
    })
}

/// The line framer: no panic, bounded memory, the same lines and errors
/// however the bytes are split, and whether it is handed them or reads
/// them itself. First byte: the bound; second: the chunk
/// size; the rest: the stream.
pub fn framer(data: &[u8]) {
    let [bound, chunk, stream @ ..] = data else {
        return;
    };
    let max_line = usize::from(*bound) + 1;
    let chunk = usize::from(*chunk).max(1);
    let whole = frame(&[stream], max_line);
    let pieces: Vec<&[u8]> = stream.chunks(chunk).collect();
    assert_eq!(whole, frame(&pieces, max_line));
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(whole, frame(&bytes, max_line));
    assert_eq!(whole, frame_read(stream, chunk, max_line));
}

fn decode_sse(pieces: &[&[u8]]) -> Vec<String> {
    let mut decoder = SseDecoder::with_max_event(4096);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        loop {
            match decoder.next_event() {
                Ok(Some(e)) => out.push(format!("{e:?}")),
                Ok(None) => break,
                Err(e) => {
                    out.push(format!("error {e}"));
                    return out;
                }
            }
        }
    }
    decoder.finish();
    out
}

/// The SSE decoder: no panic, the same events however the bytes are
/// split. First byte: the chunk size.
pub fn sse(data: &[u8]) {
    let [chunk, stream @ ..] = data else {
        return;
    };
    let chunk = usize::from(*chunk).max(1);
    let whole = decode_sse(&[stream]);
    let pieces: Vec<&[u8]> = stream.chunks(chunk).collect();
    assert_eq!(whole, decode_sse(&pieces));
}

/// Message parsing: no panic; an error carries -32700 or -32600; a parsed
/// message serialises to one line that parses back to itself. A complete
/// tool result read straight into its type
/// (`CallToolResult::complete_from_response`) is the one the general path
/// reads from the same bytes. The id scan
/// for unparseable answers (`scan::response_id`) never panics, finds the id
/// of every response that parses (a prefix finds the same or nothing), and
/// reads nothing from a request or a notification. The bytes, when they
/// are text, are written as a JSON string by `json_text::write_str`
/// exactly as serde_json writes them.
pub fn message(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut ours = Vec::new();
        switchboard_wire::json_text::write_str(&mut ours, text);
        assert_eq!(ours, serde_json::to_vec(text).unwrap_or_default());
    }
    let scanned = scan::response_id(data);
    let early = scan::response_id(&data[..data.len() / 2]);
    if let Some((id, fast)) = CallToolResult::complete_from_response(data) {
        let Ok(Message::Response(Response {
            id: Some(general_id),
            outcome: Ok(value),
        })) = Message::from_slice(data)
        else {
            panic!("the fast reader read a tool result the general path does not see");
        };
        assert_eq!(general_id, id);
        assert_eq!(ResultType::of(&value), ResultType::Complete);
        assert_eq!(CallToolResult::from_value(value).ok(), Some(fast));
    }
    match Message::from_slice(data) {
        Ok(Message::Response(Response { id: Some(id), .. })) => {
            assert_eq!(scanned.as_ref(), Some(&id));
            // With one `"id"` in the bytes, a prefix finds it or nothing.
            if data.windows(4).filter(|w| w == b"\"id\"").count() == 1 {
                assert!(
                    early.is_none() || early == scanned,
                    "{early:?} from a prefix"
                );
            }
        }
        Ok(Message::Request(_) | Message::Notification(_)) => assert_eq!(scanned, None),
        _ => {}
    }
    match Message::from_slice(data) {
        Ok(message) => {
            let line = message.to_line();
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            let again = match Message::from_slice(&line[..line.len() - 1]) {
                Ok(m) => m,
                Err(e) => panic!("our own output does not parse: {e}"),
            };
            assert_eq!(again.to_vec(), message.to_vec());
        }
        Err(e) => assert!(matches!(e.code().code(), -32700 | -32600), "{e}"),
    }
}

/// The header-value codec: a value that decodes re-encodes to something
/// that decodes to it again; any text encodes to a plain-safe header that
/// decodes back to it.
pub fn header(data: &[u8]) {
    if let Ok(decoded) = decode_value(data) {
        let encoded = encode_value(&decoded);
        match decode_value(encoded.as_bytes()) {
            Ok(again) => assert_eq!(again, decoded),
            Err(e) => panic!("re-encoded {decoded:?} as {encoded:?}, which fails: {e}"),
        }
    }
    let text = String::from_utf8_lossy(data);
    let encoded = encode_value(&text);
    assert!(
        encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "encoded {text:?} to {encoded:?}, not visible ASCII"
    );
    match decode_value(encoded.as_bytes()) {
        Ok(back) => assert_eq!(back, text),
        Err(e) => panic!("encoded {text:?} as {encoded:?}, which fails: {e}"),
    }
}

/// `x-mcp-header` extraction: the input is a tool's input schema, a
/// newline, and arguments. The annotations either fail with a reason or
/// give unique, valid header names; every value mirrored from the
/// arguments round-trips through the codec and matches the argument the
/// way a server compares them.
pub fn x_mcp_header(data: &[u8]) {
    let (schema, args) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(Value::Object(schema)) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let Ok(params) = header_params(&schema) else {
        return;
    };
    for (i, p) in params.iter().enumerate() {
        assert!(switchboard_wire::header::is_token(&p.name), "{:?}", p.name);
        assert!(
            params[..i]
                .iter()
                .all(|q| !q.name.eq_ignore_ascii_case(&p.name))
        );
    }
    let args = match serde_json::from_slice::<Value>(args) {
        Ok(Value::Object(a)) => a,
        _ => return,
    };
    for p in &params {
        let Ok(Some(value)) = p.value(Some(&args)) else {
            continue;
        };
        let encoded = encode_value(&value);
        let decoded = match decode_value(encoded.as_bytes()) {
            Ok(d) => d,
            Err(e) => panic!("header value {value:?} does not decode: {e}"),
        };
        let body = p.lookup(Some(&args));
        assert!(
            body.is_some_and(|b| p.matches(&decoded, b)),
            "header {} = {decoded:?} does not match its own argument {body:?}",
            p.name
        );
    }
}

/// `WWW-Authenticate` values.
pub fn www_authenticate(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = switchboard_oauth::fuzzing::www_authenticate(text) {
        panic!("{e}");
    }
}

/// OAuth metadata documents and the URLs in them.
pub fn oauth_metadata(data: &[u8]) {
    if let Err(e) = switchboard_oauth::fuzzing::metadata(data) {
        panic!("{e}");
    }
}

/// URI templates: the input is a template, a newline, and a URI. A
/// template that parses keeps its text; a match reports the URI it
/// matched and only variables the template names.
pub fn uri_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(t) = UriTemplate::parse(template) else {
        return;
    };
    assert_eq!(t.as_str(), template);
    if let Some(m) = t.matches(uri) {
        assert_eq!(m.uri, uri);
        for name in m.vars.keys() {
            assert!(
                template.contains(&format!("{{{name}}}"))
                    || template.contains(&format!("{{+{name}}}")),
                "variable {name:?} is not in {template:?}"
            );
        }
    }
    let _ = t.matches(template);
}

/// The config file: any text is either a config or a list of problems,
/// never a panic, and an error always names at least one problem.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars: BTreeMap<String, String> = [
        ("HOME", "/home/user"),
        ("TOKEN", "secret-${TOKEN}"),
        ("EMPTY", ""),
        ("PORT", "8080"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let origin = ConfigOrigin::Flag("fuzz/config.json".into());
    if let Err(e) = Config::parse(text, origin, &vars) {
        let problems = e.config_problems().map_or(0, |p| p.problems.len());
        assert!(problems > 0, "a config error without problems: {e}");
    }
}

/// Cursor unsealing never accepts a forged or altered cursor.
pub fn cursor(data: &[u8]) {
    if let Err(e) = switchboard_server::fuzzing::cursors(data) {
        panic!("{e}");
    }
}

/// `requestState` unsealing never accepts a forged, altered or misbound
/// token.
pub fn request_state(data: &[u8]) {
    if let Err(e) = switchboard_server::fuzzing::request_state(data) {
        panic!("{e}");
    }
}

/// The server's `tools/call` fast path never reads a request differently
/// from the general path.
pub fn fast_path(data: &[u8]) {
    if let Err(e) = switchboard_server::fuzzing::fast_path_agrees(data) {
        panic!("{e}");
    }
}

/// A Skills entry and a `SKILL.md`: the input is an entry as JSON, a
/// newline, and the file's bytes. The frontmatter reads as JSON that
/// round-trips; an entry that parses round-trips too; checking the entry
/// and verifying the file never panic, and a file that verifies against a
/// file list has the listed size and digest.
pub fn skill(data: &[u8]) {
    let (entry, file) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    if let Ok(text) = std::str::from_utf8(file) {
        if let Ok(frontmatter) = switchboard_wire::frontmatter::parse(text) {
            let json = serde_json::to_vec(&frontmatter).unwrap_or_default();
            let back: serde_json::Map<String, Value> =
                serde_json::from_slice(&json).expect("frontmatter JSON parses back");
            assert_eq!(back, frontmatter);
        }
    }
    let Ok(skill) = serde_json::from_slice::<switchboard_wire::Skill>(entry) else {
        return;
    };
    let json = serde_json::to_vec(&skill).unwrap_or_default();
    let again: switchboard_wire::Skill =
        serde_json::from_slice(&json).expect("a parsed entry parses again");
    assert_eq!(
        serde_json::to_value(&again).ok(),
        serde_json::to_value(&skill).ok()
    );
    let _ = skill.check();
    let _ = skill.resolve("templates/../a.md");
    if skill.verify_file(&skill.uri, file).is_ok() {
        if let Some(listed) = skill
            .files()
            .and_then(|f| f.iter().find(|f| f.uri == skill.uri))
        {
            assert_eq!(listed.size, file.len() as u64);
            assert!(
                switchboard_wire::Sha256Digest::parse(&listed.digest)
                    .is_ok_and(|d| d.matches(file))
            );
        }
    }
}

/// The HTTP client's HTTP/1.1 codec: a response head is refused, or taken
/// whole within the limit; the body after it decodes to the same bytes and
/// the same end (complete, cut short, broken) however the reads split it,
/// and never to more bytes than arrived (or than its length says).
///
/// The first byte picks the head limit, the chunking and whether the
/// request was a `HEAD`.
pub fn http1(data: &[u8]) {
    use switchboard_client::transport::http::h1::{Framing, HeadError, parse_head};
    let [knobs, response @ ..] = data else {
        return;
    };
    let max = 32 + usize::from(*knobs) * 8;
    let method = if knobs & 0x80 == 0 {
        http::Method::POST
    } else {
        http::Method::HEAD
    };
    let (head, used) = match parse_head(response, max, &method) {
        Err(HeadError::TooLarge) => {
            assert!(
                response.len() > max,
                "a head within the limit was too large"
            );
            return;
        }
        Err(HeadError::Invalid(_)) | Ok(None) => return,
        Ok(Some(parsed)) => parsed,
    };
    assert!(used <= response.len() && used <= max);
    let body = &response[used..];
    let whole = decode_http1_body(head.framing, &[body]);
    let step = usize::from(knobs % 13) + 1;
    let mut pieces: Vec<&[u8]> = body.chunks(step).collect();
    if pieces.is_empty() {
        // An empty body is still one (empty) read.
        pieces.push(body);
    }
    assert_eq!(whole, decode_http1_body(head.framing, &pieces));
    let (taken, _, left) = &whole;
    assert!(taken.len() + left <= body.len());
    if let Framing::Length(n) = head.framing {
        assert!(taken.len() as u64 <= n);
    }
}

/// Feeds `pieces` to a body decoder: the body, how it ended, and how many
/// bytes were left unread after its end.
fn decode_http1_body(
    framing: switchboard_client::transport::http::h1::Framing,
    pieces: &[&[u8]],
) -> (Vec<u8>, String, usize) {
    use switchboard_client::transport::http::h1::{Decoded, Decoder};
    let mut decoder = Decoder::new(framing);
    let mut pending: Vec<u8> = Vec::new();
    let mut body = Vec::new();
    for (at, piece) in pieces.iter().enumerate() {
        pending.extend_from_slice(piece);
        loop {
            let mut taken = 0;
            let decoded = decoder.decode(&pending, &mut taken);
            assert!(taken <= pending.len());
            pending.drain(..taken);
            match decoded {
                Ok(Decoded::Data(data)) => {
                    assert!(!data.is_empty(), "an empty data frame");
                    body.extend_from_slice(&data);
                }
                Ok(Decoded::More) => break,
                Ok(Decoded::End) => {
                    let unread: usize = pieces[at + 1..].iter().map(|p| p.len()).sum();
                    return (body, "end".into(), pending.len() + unread);
                }
                Err(e) => return (body, format!("error: {e}"), 0),
            }
        }
    }
    let end = match decoder.at_close() {
        Ok(()) => "closed".to_owned(),
        Err(e) => format!("cut: {e}"),
    };
    (body, end, 0)
}
