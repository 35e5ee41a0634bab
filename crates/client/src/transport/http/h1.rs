//! HTTP/1.1 on the wire, client side (RFC 9112): the request head, the
//! response head, and the framing of the response body. No I/O here: the
//! pool feeds these bytes and writes what they make. Public only so the
//! fuzz target can reach it (`switchboard-fuzzing`'s `http1`).

use std::mem::MaybeUninit;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

/// Most header fields a response head may carry.
const MAX_HEADERS: usize = 100;
/// Longest chunk-size line, extensions included, and most trailer bytes.
const MAX_CHUNK_LINE: usize = 4096;
const MAX_TRAILERS: usize = 16 * 1024;

/// Appends the head of a request to `out`: the request line, `headers`,
/// and the body's `content-length` when there is a body or the method is
/// one that carries one.
pub fn write_head(
    out: &mut Vec<u8>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body_len: usize,
) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let carries_body = !matches!(*method, Method::GET | Method::HEAD | Method::DELETE);
    if (body_len > 0 || carries_body) && !headers.contains_key(CONTENT_LENGTH) {
        out.extend_from_slice(b"content-length: ");
        push_decimal(out, body_len);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// How the body after a response head ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body: `HEAD`, `204`, `304`, or `content-length: 0`.
    Empty,
    /// `content-length` bytes.
    Length(u64),
    /// `transfer-encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// A response head, parsed.
#[derive(Debug)]
pub struct Head {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub framing: Framing,
    /// Whether the connection may carry another request after this body.
    pub keep_alive: bool,
}

/// Why a response head was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// Longer than the limit and still not complete.
    TooLarge,
    /// Not HTTP/1.x, or a field that makes no sense; what is wrong.
    Invalid(String),
}

/// Parses the response head at the start of `buf`: `Ok(None)` when more
/// bytes are needed, otherwise the head and how many bytes it took.
/// `method` is the request's: a `HEAD` response has no body.
///
/// # Errors
/// [`HeadError::TooLarge`] when the head runs past `max` bytes,
/// [`HeadError::Invalid`] when it is not a valid HTTP/1.x response head.
pub fn parse_head(
    buf: &[u8],
    max: usize,
    method: &Method,
) -> Result<Option<(Head, usize)>, HeadError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        &mut slots,
    );
    let used = match parsed {
        Ok(httparse::Status::Complete(used)) if used > max => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) if buf.len() > max => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HeadError::Invalid(format!(
                "more than {MAX_HEADERS} header fields"
            )));
        }
        Err(e) => return Err(HeadError::Invalid(e.to_string())),
    };
    let code = response.code.unwrap_or(0);
    let status = StatusCode::from_u16(code)
        .map_err(|_| HeadError::Invalid(format!("status code {code}")))?;
    let mut headers = HeaderMap::with_capacity(response.headers.len());
    for field in response.headers.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| HeadError::Invalid(format!("header name {:?}", field.name)))?;
        let value = HeaderValue::from_bytes(field.value)
            .map_err(|_| HeadError::Invalid(format!("the value of {name}")))?;
        headers.append(name, value);
    }
    let mut keep_alive = response.version == Some(1) && !has_token(&headers, &CONNECTION, "close");
    let framing = if *method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        Framing::Empty
    } else if headers.contains_key(TRANSFER_ENCODING) {
        // A length beside a transfer coding is a smuggling attempt or a
        // broken proxy: the coding wins and the connection is not reused
        // (RFC 9112 §6.3).
        if headers.contains_key(CONTENT_LENGTH) {
            keep_alive = false;
        }
        if last_coding_is_chunked(&headers) {
            Framing::Chunked
        } else {
            keep_alive = false;
            Framing::UntilClose
        }
    } else if let Some(length) = content_length(&headers)? {
        if length == 0 {
            Framing::Empty
        } else {
            Framing::Length(length)
        }
    } else {
        keep_alive = false;
        Framing::UntilClose
    };
    Ok(Some((
        Head {
            status,
            headers,
            framing,
            keep_alive,
        },
        used,
    )))
}

/// Whether a comma-separated header holds `token` (case-insensitive).
fn has_token(headers: &HeaderMap, name: &HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|value| {
        value.to_str().is_ok_and(|v| {
            v.split(',')
                .any(|part| part.trim().eq_ignore_ascii_case(token))
        })
    })
}

fn last_coding_is_chunked(headers: &HeaderMap) -> bool {
    headers
        .get_all(TRANSFER_ENCODING)
        .iter()
        .next_back()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
}

/// The one length every `content-length` field agrees on.
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, HeadError> {
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let part = part.trim_ascii();
            let parsed = std::str::from_utf8(part)
                .ok()
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|p| p.parse::<u64>().ok())
                .ok_or_else(|| HeadError::Invalid("content-length is not a number".into()))?;
            match length {
                Some(seen) if seen != parsed => {
                    return Err(HeadError::Invalid("content-length fields disagree".into()));
                }
                _ => length = Some(parsed),
            }
        }
    }
    Ok(length)
}

/// Takes a response body out of the bytes read after its head.
#[derive(Debug)]
pub struct Decoder {
    state: State,
}

#[derive(Debug)]
enum State {
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailers(usize),
    UntilClose,
    Done,
}

/// What [`Decoder::decode`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A piece of the body.
    Data(Bytes),
    /// More bytes are needed.
    More,
    /// The body is complete.
    End,
}

impl Decoder {
    /// A decoder for a body framed as `framing`.
    pub fn new(framing: Framing) -> Decoder {
        let state = match framing {
            Framing::Empty => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::ChunkSize,
            Framing::UntilClose => State::UntilClose,
        };
        Decoder { state }
    }

    /// Whether the whole body has been taken.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// The body's exact remaining length, when the framing says it.
    pub fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length(n) => Some(n),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// Takes the next piece of the body from the unread bytes `input`;
    /// `taken` is how many of them it used.
    ///
    /// # Errors
    /// A chunked body that breaks its framing: what is wrong.
    pub fn decode(&mut self, input: &[u8], taken: &mut usize) -> Result<Decoded, String> {
        *taken = 0;
        loop {
            let rest = &input[*taken..];
            match &mut self.state {
                State::Done => return Ok(Decoded::End),
                State::Length(0) => self.state = State::Done,
                State::Length(_) | State::ChunkData(_) if rest.is_empty() => {
                    return Ok(Decoded::More);
                }
                State::Length(left) => {
                    let n = usize::try_from(*left).map_or(rest.len(), |l| l.min(rest.len()));
                    *left -= n as u64;
                    *taken += n;
                    return Ok(Decoded::Data(Bytes::copy_from_slice(&rest[..n])));
                }
                State::ChunkData(left) => {
                    let n = usize::try_from(*left).map_or(rest.len(), |l| l.min(rest.len()));
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = State::ChunkEnd;
                    }
                    *taken += n;
                    return Ok(Decoded::Data(Bytes::copy_from_slice(&rest[..n])));
                }
                State::UntilClose if rest.is_empty() => return Ok(Decoded::More),
                State::UntilClose => {
                    *taken += rest.len();
                    return Ok(Decoded::Data(Bytes::copy_from_slice(rest)));
                }
                State::ChunkSize => {
                    let Some(line) = line(rest, MAX_CHUNK_LINE)? else {
                        return Ok(Decoded::More);
                    };
                    *taken += line.len;
                    let size = chunk_size(line.text)?;
                    self.state = if size == 0 {
                        State::Trailers(0)
                    } else {
                        State::ChunkData(size)
                    };
                }
                State::ChunkEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        *taken += 2;
                        self.state = State::ChunkSize;
                    }
                    [b'\n', ..] => {
                        *taken += 1;
                        self.state = State::ChunkSize;
                    }
                    [] | [b'\r'] => return Ok(Decoded::More),
                    _ => return Err("a chunk runs past its declared size".into()),
                },
                State::Trailers(seen) => {
                    let Some(line) = line(rest, MAX_CHUNK_LINE)? else {
                        return Ok(Decoded::More);
                    };
                    *taken += line.len;
                    *seen += line.len;
                    if line.text.is_empty() {
                        self.state = State::Done;
                    } else if *seen > MAX_TRAILERS {
                        return Err(format!("trailers longer than {MAX_TRAILERS} bytes"));
                    }
                }
            }
        }
    }

    /// The connection closed: the end of a body framed by the close, and
    /// an error for any other that was not complete.
    ///
    /// # Errors
    /// The body was cut short.
    pub fn at_close(&mut self) -> Result<(), String> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err("the connection closed before the end of the body".into()),
        }
    }
}

/// One line of a chunked body: its text without the line end, and the
/// bytes it took with it.
struct Line<'a> {
    text: &'a [u8],
    len: usize,
}

fn line(input: &[u8], max: usize) -> Result<Option<Line<'_>>, String> {
    match input.iter().position(|&b| b == b'\n') {
        Some(end) if end > max => Err(format!("a chunk line longer than {max} bytes")),
        Some(end) => {
            let text = &input[..end];
            Ok(Some(Line {
                text: text.strip_suffix(b"\r").unwrap_or(text),
                len: end + 1,
            }))
        }
        None if input.len() > max => Err(format!("a chunk line longer than {max} bytes")),
        None => Ok(None),
    }
}

/// The size on a chunk-size line, extensions ignored.
fn chunk_size(text: &[u8]) -> Result<u64, String> {
    let digits = text.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = text[digits..].trim_ascii_start();
    if digits == 0 || !(rest.is_empty() || rest.starts_with(b";")) {
        return Err("a chunk size is not a hexadecimal number".into());
    }
    text[..digits].iter().try_fold(0u64, |size, &b| {
        let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
        size.checked_mul(16)
            .and_then(|s| s.checked_add(digit))
            .ok_or_else(|| "a chunk size overflows".to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Result<Option<(Head, usize)>, HeadError> {
        parse_head(raw.as_bytes(), 8192, &Method::POST)
    }

    /// Decodes `input` fed `step` bytes at a time; the body and whether it
    /// ended.
    fn decode_in_steps(
        framing: Framing,
        input: &[u8],
        step: usize,
    ) -> Result<(Vec<u8>, bool), String> {
        let mut decoder = Decoder::new(framing);
        let mut pending = Vec::new();
        let mut body = Vec::new();
        for piece in input.chunks(step) {
            pending.extend_from_slice(piece);
            loop {
                let mut taken = 0;
                let decoded = decoder.decode(&pending, &mut taken)?;
                pending.drain(..taken);
                match decoded {
                    Decoded::Data(data) => body.extend_from_slice(&data),
                    Decoded::More => break,
                    Decoded::End => return Ok((body, true)),
                }
            }
        }
        Ok((body, decoder.is_done()))
    }

    #[test]
    fn a_request_head_carries_the_length_of_its_body() {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("127.0.0.1:1"));
        let mut out = Vec::new();
        write_head(&mut out, &Method::POST, "/mcp?x=1", &headers, 12);
        assert_eq!(
            out,
            b"POST /mcp?x=1 HTTP/1.1\r\nhost: 127.0.0.1:1\r\ncontent-length: 12\r\n\r\n"
        );
        out.clear();
        write_head(&mut out, &Method::GET, "/mcp", &headers, 0);
        assert_eq!(out, b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n");
    }

    #[test]
    fn a_head_is_parsed_once_complete_and_frames_its_body() {
        let raw =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5\r\n\r\nhello";
        assert_eq!(head(&raw[..20]).unwrap().map(|(h, _)| h.status), None);
        let (parsed, used) = head(raw).unwrap().expect("complete");
        assert_eq!(parsed.status, StatusCode::OK);
        assert_eq!(parsed.framing, Framing::Length(5));
        assert!(parsed.keep_alive);
        assert_eq!(&raw[used..], "hello");
        assert_eq!(parsed.headers["content-type"], "application/json");
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let framing = |raw: &str| head(raw).unwrap().unwrap().0;
        let chunked = framing("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n");
        assert_eq!(
            (chunked.framing, chunked.keep_alive),
            (Framing::Chunked, true)
        );
        // A length beside a coding: the coding wins, the connection ends.
        let both =
            framing("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n");
        assert_eq!((both.framing, both.keep_alive), (Framing::Chunked, false));
        let close = framing("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(
            (close.framing, close.keep_alive),
            (Framing::UntilClose, false)
        );
        let old = framing("HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n");
        assert!(!old.keep_alive);
        let asked = framing("HTTP/1.1 200 OK\r\nconnection: Close\r\ncontent-length: 2\r\n\r\n");
        assert!(!asked.keep_alive);
        assert_eq!(
            framing("HTTP/1.1 204 No Content\r\n\r\n").framing,
            Framing::Empty
        );
        assert_eq!(
            framing("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n").framing,
            Framing::Empty
        );
        let (to_head, _) = parse_head(
            b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n",
            8192,
            &Method::HEAD,
        )
        .unwrap()
        .unwrap();
        assert_eq!(to_head.framing, Framing::Empty);
    }

    #[test]
    fn a_bad_or_oversized_head_is_refused() {
        assert!(matches!(
            head("HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n"),
            Err(HeadError::Invalid(_))
        ));
        assert!(matches!(
            head("HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n"),
            Err(HeadError::Invalid(_))
        ));
        assert!(matches!(
            head("SSH-2.0-OpenSSH\r\n\r\n"),
            Err(HeadError::Invalid(_))
        ));
        let long = format!("HTTP/1.1 200 OK\r\nx: {}\r\n", "a".repeat(200));
        assert_eq!(
            parse_head(long.as_bytes(), 100, &Method::POST).unwrap_err(),
            HeadError::TooLarge
        );
        let done = format!("{long}\r\n");
        assert_eq!(
            parse_head(done.as_bytes(), 100, &Method::POST).unwrap_err(),
            HeadError::TooLarge
        );
        let many: String = (0..=MAX_HEADERS).map(|i| format!("x{i}: 1\r\n")).collect();
        let many = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert!(matches!(
            parse_head(many.as_bytes(), 1 << 20, &Method::POST),
            Err(HeadError::Invalid(_))
        ));
    }

    #[test]
    fn a_chunked_body_decodes_whatever_the_reads_split() {
        let wire = b"5;ext=1\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\ntrailer: x\r\n\r\n";
        for step in [1, 2, 3, 7, wire.len()] {
            let (body, ended) = decode_in_steps(Framing::Chunked, wire, step).unwrap();
            assert_eq!(body, b"hello world!", "step {step}");
            assert!(ended, "step {step}");
        }
    }

    #[test]
    fn a_broken_chunked_body_is_an_error() {
        assert!(decode_in_steps(Framing::Chunked, b"zz\r\n", 4).is_err());
        assert!(decode_in_steps(Framing::Chunked, b"2\r\nabc\r\n", 8).is_err());
        assert!(decode_in_steps(Framing::Chunked, b"ffffffffffffffffff\r\n", 32).is_err());
        let long = vec![b'1'; MAX_CHUNK_LINE + 2];
        assert!(decode_in_steps(Framing::Chunked, &long, long.len()).is_err());
    }

    #[test]
    fn a_sized_body_ends_at_its_length_and_a_short_one_is_cut() {
        let (body, ended) = decode_in_steps(Framing::Length(3), b"abcdef", 2).unwrap();
        assert_eq!((body.as_slice(), ended), (&b"abc"[..], true));
        let mut decoder = Decoder::new(Framing::Length(3));
        let mut taken = 0;
        assert_eq!(
            decoder.decode(b"ab", &mut taken).unwrap(),
            Decoded::Data(Bytes::from_static(b"ab"))
        );
        assert!(decoder.at_close().is_err());
        let mut until_close = Decoder::new(Framing::UntilClose);
        assert!(until_close.at_close().is_ok());
        assert!(until_close.is_done());
    }
}
