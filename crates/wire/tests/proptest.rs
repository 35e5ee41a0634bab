//! Property tests of the byte-level parts: the line framer, the SSE decoder
//! and message parsing. Any bytes, any chunking: never a panic, and the same
//! lines, events and messages come out however the bytes are split.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};
use switchboard_wire::sse::SseDecoder;
use switchboard_wire::{
    ErrorObject, FrameError, LineFramer, Message, Notification, Request, RequestId, Response,
};

/// What the framer produced: lines and errors, in order, then the EOF line.
#[derive(Clone, Debug, PartialEq)]
enum Out {
    Line(Vec<u8>),
    Error(FrameError),
}

/// Splits `bytes` at the given cut points (taken modulo the length).
fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            if bytes.is_empty() {
                0
            } else {
                c % (bytes.len() + 1)
            }
        })
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for p in points {
        out.push(&bytes[start..p]);
        start = p;
    }
    out.push(&bytes[start..]);
    out
}

/// What a framer bound to `max_line` gives, `feed` giving it bytes until
/// it says the stream ended.
fn framed(max_line: usize, mut feed: impl FnMut(&mut LineFramer) -> bool) -> Vec<Out> {
    let mut framer = LineFramer::with_max_line(max_line);
    let mut out = Vec::new();
    while feed(&mut framer) {
        loop {
            match framer.next_line() {
                Ok(Some(line)) => out.push(Out::Line(line.to_vec())),
                Ok(None) => break,
                Err(e) => out.push(Out::Error(e)),
            }
        }
    }
    loop {
        match framer.finish() {
            Ok(Some(line)) => out.push(Out::Line(line.to_vec())),
            Ok(None) => break,
            Err(e) => {
                out.push(Out::Error(e));
                break;
            }
        }
    }
    out
}

/// The framer handed `pieces` one after another.
fn frame(pieces: &[&[u8]], max_line: usize) -> Vec<Out> {
    let mut rest = pieces.iter();
    framed(max_line, |framer| match rest.next() {
        Some(piece) => {
            framer.push(piece);
            // Memory stays bounded by the limit plus one chunk.
            assert!(framer.buffered() <= max_line + piece.len() + 1);
            true
        }
        None => false,
    })
}

/// A reader that hands out `pieces`, one per `read`.
struct Pieces<'a>(std::collections::VecDeque<&'a [u8]>);

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(piece) = self.0.pop_front() else {
            return Ok(0);
        };
        let n = piece.len().min(buf.len());
        buf[..n].copy_from_slice(&piece[..n]);
        if n < piece.len() {
            self.0.push_front(&piece[n..]);
        }
        Ok(n)
    }
}

/// [`frame`], with the framer reading the pieces itself
/// ([`LineFramer::read_from`]) instead of being handed them.
fn frame_read(pieces: &[&[u8]], max_line: usize) -> Vec<Out> {
    // Empty pieces would read as the end of the stream.
    let mut reader = Pieces(pieces.iter().copied().filter(|p| !p.is_empty()).collect());
    framed(max_line, |framer| {
        let n = framer
            .read_from(&mut reader)
            .expect("pieces read without error");
        assert!(framer.buffered() <= max_line + 64 * 1024 + 1);
        n > 0
    })
}

/// Bytes biased towards line ends, so lines of every length occur.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    vec(
        prop_oneof![
            4 => any::<u8>(),
            2 => Just(b'\n'),
            1 => Just(b'\r'),
            2 => Just(b'a'),
        ],
        0..400,
    )
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        "[ -~é\u{2028}]{0,8}".prop_map(RequestId::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~\n\r\té\u{0}]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::from),
            vec(("[a-z_/]{0,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        vec(("[a-zA-Z_]{1,6}", json_value()), 0..4)
            .prop_map(|kv| Some(Value::Object(kv.into_iter().collect()))),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (request_id(), "[a-z/_]{1,20}", params())
            .prop_map(|(id, m, p)| Message::Request(Request::new(id, m, p))),
        ("[a-z/_]{1,20}", params())
            .prop_map(|(m, p)| Message::Notification(Notification::new(m, p))),
        (request_id(), json_value()).prop_map(|(id, v)| {
            // A result is never null.
            let v = if v.is_null() { json!({}) } else { v };
            Message::Response(Response::result(id, v))
        }),
        (
            proptest::option::of(request_id()),
            any::<i64>(),
            "[ -~]{0,16}",
            proptest::option::of(json_value())
        )
            .prop_map(|(id, code, text, data)| {
                // `"data": null` reads back as absent data: not generated.
                let data = data.filter(|d| !d.is_null());
                Message::Response(Response::error(
                    id,
                    ErrorObject {
                        code,
                        message: text,
                        data,
                    },
                ))
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    // Any bytes, any chunking, any bound: no panic, and the same output as
    // one big chunk.
    #[test]
    fn framer_output_does_not_depend_on_chunking(
        bytes in stream(),
        cuts in vec(any::<usize>(), 0..40),
        max_line in prop_oneof![1usize..16, Just(1 << 20)],
    ) {
        let whole = frame(&[&bytes], max_line);
        let split = frame(&chunks(&bytes, &cuts), max_line);
        prop_assert_eq!(&whole, &split);
        let one_byte: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(&whole, &frame(&one_byte, max_line));
        // Read by the framer itself: the same lines and errors.
        prop_assert_eq!(&whole, &frame_read(&chunks(&bytes, &cuts), max_line));
        prop_assert_eq!(&whole, &frame_read(&one_byte, max_line));
    }

    // Lines joined with \n or \r\n come back as written (blank ones skipped).
    #[test]
    fn framer_returns_the_lines_written(
        lines in vec(vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..30), 0..20),
        crlf in any::<bool>(),
        cuts in vec(any::<usize>(), 0..20),
    ) {
        let mut bytes = Vec::new();
        for line in &lines {
            bytes.extend_from_slice(line);
            bytes.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        }
        let expected: Vec<Out> = lines
            .iter()
            .map(|l| if crlf { l.clone() } else { l.strip_suffix(b"\r").unwrap_or(l).to_vec() })
            .filter(|l| !l.is_empty())
            .map(Out::Line)
            .collect();
        prop_assert_eq!(frame(&chunks(&bytes, &cuts), 1 << 20), expected);
    }

    // Oversized lines are reported with their size and lose nothing after.
    #[test]
    fn framer_reports_long_lines_with_their_size(
        lens in vec(0usize..40, 1..12),
        cuts in vec(any::<usize>(), 0..20),
    ) {
        let max = 10;
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for (i, len) in lens.iter().enumerate() {
            let line: Vec<u8> = std::iter::repeat_n(b'a' + (i % 26) as u8, *len).collect();
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
            if *len > max {
                expected.push(Out::Error(FrameError::LineTooLong { size: *len, limit: max }));
            } else if *len > 0 {
                expected.push(Out::Line(line));
            }
        }
        prop_assert_eq!(frame(&chunks(&bytes, &cuts), max), expected.clone());
        prop_assert_eq!(frame_read(&chunks(&bytes, &cuts), max), expected);
    }

    // Parsing arbitrary bytes never panics; an error carries a JSON-RPC code.
    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in vec(any::<u8>(), 0..200)) {
        if let Err(e) = Message::from_slice(&bytes) {
            prop_assert!(matches!(e.code().code(), -32700 | -32600));
        }
    }

    // Parsing arbitrary JSON never panics.
    #[test]
    fn parsing_arbitrary_json_never_panics(v in json_value()) {
        let bytes = serde_json::to_vec(&v).unwrap();
        let _ = Message::from_slice(&bytes);
        let _ = Message::from_value(v);
    }

    // Messages survive serialisation, framing in any chunking, and parsing.
    #[test]
    fn messages_round_trip_through_the_framer(
        messages in vec(message(), 0..12),
        cuts in vec(any::<usize>(), 0..30),
    ) {
        let mut bytes = Vec::new();
        for m in &messages {
            bytes.extend_from_slice(&m.to_line());
        }
        let out = frame(&chunks(&bytes, &cuts), 1 << 20);
        let parsed: Vec<Message> = out
            .into_iter()
            .map(|o| match o {
                Out::Line(l) => Message::from_slice(&l).unwrap(),
                Out::Error(e) => panic!("{e}"),
            })
            .collect();
        prop_assert_eq!(parsed, messages);
    }

    // The SSE decoder: any bytes, any chunking, the same events and no panic.
    #[test]
    fn sse_events_do_not_depend_on_chunking(
        bytes in vec(prop_oneof![
            3 => any::<u8>(),
            2 => Just(b'\n'),
            1 => Just(b'\r'),
            1 => Just(b':'),
            2 => prop::sample::select(b"data: x".to_vec()),
        ], 0..300),
        cuts in vec(any::<usize>(), 0..30),
    ) {
        let decode = |pieces: &[&[u8]]| {
            let mut d = SseDecoder::with_max_event(64);
            let mut events = Vec::new();
            for piece in pieces {
                d.push(piece);
                loop {
                    match d.next_event() {
                        Ok(Some(e)) => events.push(Ok(e)),
                        Ok(None) => break,
                        Err(e) => {
                            events.push(Err(e));
                            return events;
                        }
                    }
                }
            }
            d.finish();
            events
        };
        let whole = decode(&[&bytes]);
        prop_assert_eq!(&whole, &decode(&chunks(&bytes, &cuts)));
    }
}
