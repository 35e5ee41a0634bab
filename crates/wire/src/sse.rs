//! Server-Sent Events: a decoder for `text/event-stream` bodies and the
//! small encoder servers use.
//!
//! The decoder follows the WHATWG event-stream rules: lines end in CRLF, LF
//! or a lone CR (also when the CR and LF arrive in different chunks); a line
//! starting with `:` is a comment (a keep-alive, not an error); `data:`
//! lines of one event are joined with `\n`; a blank line dispatches the
//! event; an event without data is not dispatched; a leading BOM is skipped.

use memchr::memchr2;

/// Default bound on one event's data: 64 MiB.
pub const DEFAULT_MAX_EVENT: usize = 64 * 1024 * 1024;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name; `message` when none was given.
    pub event: String,
    /// The joined `data:` lines.
    pub data: String,
    /// The last `id:` seen on the stream, if any.
    pub id: Option<String>,
    /// The `retry:` reconnection delay in milliseconds, if this event set one.
    pub retry: Option<u64>,
}

/// A stream that cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event (or one line) grew past the bound.
    #[error("server-sent event larger than the {limit}-byte limit")]
    EventTooLarge {
        /// The bound in force.
        limit: usize,
    },
}

/// Incremental `text/event-stream` decoder.
#[derive(Debug)]
pub struct SseDecoder {
    /// Undecoded bytes; `buf[start..]` is unread.
    buf: Vec<u8>,
    start: usize,
    /// The previous chunk ended in `\r`: a leading `\n` belongs to it.
    after_cr: bool,
    /// Nothing decoded yet (a BOM may come).
    at_stream_start: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    comments: u64,
    max_event: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new()
    }
}

impl SseDecoder {
    /// A decoder with the default bound.
    pub fn new() -> Self {
        SseDecoder::with_max_event(DEFAULT_MAX_EVENT)
    }

    /// A decoder that refuses events larger than `max_event` bytes.
    pub fn with_max_event(max_event: usize) -> Self {
        SseDecoder {
            buf: Vec::new(),
            start: 0,
            after_cr: false,
            at_stream_start: true,
            event: None,
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
            comments: 0,
            max_event,
        }
    }

    /// How many comment lines (keep-alives) went by.
    pub fn comments_seen(&self) -> u64 {
        self.comments
    }

    /// Feeds a chunk of bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Returns the next complete event.
    ///
    /// # Returns
    /// `Ok(Some(event))`, or `Ok(None)` when more bytes are needed.
    ///
    /// # Errors
    /// [`SseError::EventTooLarge`] when an event or line passes the bound;
    /// the stream cannot be trusted after that.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        loop {
            if self.at_stream_start {
                let rest = &self.buf[self.start..];
                if rest.len() < 3 && b"\xEF\xBB\xBF".starts_with(rest) {
                    return Ok(None);
                }
                if rest.starts_with(b"\xEF\xBB\xBF") {
                    self.start += 3;
                }
                self.at_stream_start = false;
            }
            if self.after_cr && self.start < self.buf.len() {
                if self.buf[self.start] == b'\n' {
                    self.start += 1;
                }
                self.after_cr = false;
            }
            let rest = &self.buf[self.start..];
            let Some(pos) = memchr2(b'\n', b'\r', rest) else {
                if rest.len() > self.max_event {
                    return Err(SseError::EventTooLarge {
                        limit: self.max_event,
                    });
                }
                return Ok(None);
            };
            let line_start = self.start;
            let line_end = self.start + pos;
            if self.buf[line_end] == b'\r' {
                if line_end + 1 < self.buf.len() {
                    self.start = line_end + 1 + usize::from(self.buf[line_end + 1] == b'\n');
                } else {
                    self.start = line_end + 1;
                    self.after_cr = true;
                }
            } else {
                self.start = line_end + 1;
            }
            if let Some(event) = self.process_line(line_start, line_end)? {
                return Ok(Some(event));
            }
        }
    }

    /// Ends the stream. An event not closed by a blank line is discarded, as
    /// the event-stream rules say; returns whether one was.
    pub fn finish(&mut self) -> bool {
        let dropped = self.has_data || self.start < self.buf.len();
        self.buf.clear();
        self.start = 0;
        self.data.clear();
        self.has_data = false;
        self.event = None;
        dropped
    }

    fn process_line(&mut self, start: usize, end: usize) -> Result<Option<SseEvent>, SseError> {
        if start == end {
            return Ok(self.dispatch());
        }
        let line = String::from_utf8_lossy(&self.buf[start..end]);
        if line.starts_with(':') {
            self.comments += 1;
            return Ok(None);
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.data.len() + value.len() + 1 > self.max_event {
                    return Err(SseError::EventTooLarge {
                        limit: self.max_event,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let retry = self.retry.take();
        if !self.has_data {
            self.data.clear();
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event: event
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "message".to_owned()),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry,
        })
    }
}

/// Appends one SSE event carrying `data` (split on newlines into several
/// `data:` lines) to `out`.
pub fn encode_event(out: &mut Vec<u8>, event: Option<&str>, id: Option<&str>, data: &str) {
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix('\r').unwrap_or(line).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Appends a comment line (a keep-alive) to `out`.
pub fn encode_comment(out: &mut Vec<u8>, text: &str) {
    out.push(b':');
    if !text.is_empty() {
        out.push(b' ');
        out.extend_from_slice(text.replace(['\r', '\n'], " ").as_bytes());
    }
    out.extend_from_slice(b"\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.push(c);
            while let Some(e) = d.next_event().unwrap() {
                out.push(e);
            }
        }
        out
    }

    #[test]
    fn decodes_all_line_endings_and_multiline_data() {
        let events = decode_all(&[b"event: message\r\ndata: a\rdata: b\n\ndata:c\r\n\r\n"]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "a\nb");
        assert_eq!(events[0].event, "message");
        assert_eq!(events[1].data, "c");
    }

    // HTTP-C-18: comments are keep-alives, not malformed input.
    #[test]
    fn comments_and_dataless_events_are_skipped() {
        let mut d = SseDecoder::new();
        d.push(b": keep-alive\n\nevent: ping\n\n: x\ndata: {}\n\n");
        let e = d.next_event().unwrap().unwrap();
        assert_eq!(e.data, "{}");
        assert_eq!(e.event, "message");
        assert_eq!(d.comments_seen(), 2);
        assert_eq!(d.next_event().unwrap(), None);
    }

    #[test]
    fn cr_and_lf_split_across_chunks_make_one_line_end() {
        let events = decode_all(&[b"data: x\r", b"\n", b"\r", b"\ndata: y\n\n"]);
        assert_eq!(
            events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
    }

    #[test]
    fn bom_id_retry_and_event_names() {
        let events = decode_all(&[
            b"\xEF\xBB",
            b"\xBFid: 7\nretry: 500\nevent: custom\ndata\n\n",
        ]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].retry, Some(500));
        assert_eq!(events[0].event, "custom");
        assert_eq!(events[0].data, "");
    }

    #[test]
    fn unterminated_event_is_dropped_at_eof() {
        let mut d = SseDecoder::new();
        d.push(b"data: partial");
        assert_eq!(d.next_event().unwrap(), None);
        assert!(d.finish());
    }

    #[test]
    fn bounds_event_size() {
        let mut d = SseDecoder::with_max_event(8);
        d.push(b"data: 0123456789\n\n");
        assert_eq!(d.next_event(), Err(SseError::EventTooLarge { limit: 8 }));
    }

    #[test]
    fn encoder_output_decodes_back() {
        let mut out = Vec::new();
        encode_comment(&mut out, "hi");
        encode_event(&mut out, Some("message"), Some("1"), "{\"a\":1}\nsecond");
        let events = decode_all(&[&out]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "{\"a\":1}\nsecond");
    }
}
