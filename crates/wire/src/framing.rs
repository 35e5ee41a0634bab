//! Newline-delimited framing for stdio: arbitrary chunks in, complete lines
//! out.
//!
//! The framer keeps a half line until the rest arrives, strips a trailing
//! `\r`, skips blank lines, and refuses a line longer than its bound with an
//! error that names the size. Refusing a line does not lose what follows it:
//! the oversized bytes are discarded as they arrive (memory stays bounded)
//! and framing resumes after the next newline. The first bytes of a refused
//! line are kept ([`LineFramer::take_refused_head`]), so a reader can still
//! tell which request the line answered.

use memchr::memchr;

/// Default bound on one line: 64 MiB.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// How much of a refused line's start is kept for
/// [`LineFramer::take_refused_head`]: 64 KiB.
pub const REFUSED_HEAD: usize = 64 * 1024;

/// Start compacting the buffer once this many consumed bytes sit before the
/// unread data, so a long stream of small lines does not grow it.
const COMPACT_THRESHOLD: usize = 64 * 1024;

/// Most bytes one [`LineFramer::read_from`] asks its reader for.
const READ_CHUNK: usize = 64 * 1024;

/// A line that could not be framed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The line is longer than the bound; it was skipped.
    #[error("line of {size} bytes exceeds the {limit}-byte limit and was skipped")]
    LineTooLong {
        /// The line's length in bytes, without its terminator.
        size: usize,
        /// The bound in force.
        limit: usize,
    },
}

/// Splits a byte stream into lines.
///
/// ```
/// use switchboard_wire::LineFramer;
/// let mut f = LineFramer::new();
/// f.push(b"{\"a\":1}\r\n{\"b\"");
/// assert_eq!(f.next_line().unwrap(), Some(&b"{\"a\":1}"[..]));
/// assert_eq!(f.next_line().unwrap(), None); // the half line waits
/// f.push(b":2}");
/// assert_eq!(f.finish().unwrap(), Some(&b"{\"b\":2}"[..]));
/// ```
#[derive(Debug)]
pub struct LineFramer {
    /// Received bytes, `buf[..end]`; `buf[start..end]` is not yet
    /// returned. What lies past `end` is room for the next read, zeroed
    /// once when the buffer grows and reused after.
    buf: Vec<u8>,
    /// Offset of the first unread byte.
    start: usize,
    /// Offset just past the last received byte.
    end: usize,
    /// Offset from which to resume the newline search (everything between
    /// `start` and here is known to hold no newline).
    scanned: usize,
    /// The bound on one line.
    max_line: usize,
    /// While skipping an oversized line: how many of its bytes went by.
    discarding: Option<usize>,
    /// Whether the last byte skipped was `\r` (not counted if a `\n` follows).
    skipped_cr: bool,
    /// An error to report before any further line.
    pending: Option<FrameError>,
    /// The start of the line last refused, until taken.
    refused_head: Option<Vec<u8>>,
    /// Where [`LineFramer::read_from`] reads while skipping an oversized
    /// line (empty until one comes).
    scratch: Vec<u8>,
}

impl Default for LineFramer {
    fn default() -> Self {
        LineFramer::new()
    }
}

impl LineFramer {
    /// A framer with the default 64 MiB bound.
    pub fn new() -> Self {
        LineFramer::with_max_line(DEFAULT_MAX_LINE)
    }

    /// A framer that refuses lines longer than `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        LineFramer {
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            max_line,
            discarding: None,
            skipped_cr: false,
            pending: None,
            refused_head: None,
            scratch: Vec::new(),
        }
    }

    /// Bytes received but not yet returned as lines.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The first bytes (at most [`REFUSED_HEAD`]) of the line last found
    /// too long, once per line.
    ///
    /// They are kept from the moment the framer knows the line is too long,
    /// which may be long before its end arrives (and before
    /// [`LineFramer::next_line`] reports it): call this after every
    /// `next_line`.
    pub fn take_refused_head(&mut self) -> Option<Vec<u8>> {
        self.refused_head.take()
    }

    /// Feeds a chunk of bytes.
    pub fn push(&mut self, mut chunk: &[u8]) {
        if let Some(skipped) = self.discarding {
            match memchr(b'\n', chunk) {
                None => {
                    if let Some(last) = chunk.last() {
                        self.skipped_cr = *last == b'\r';
                    }
                    self.discarding = Some(skipped + chunk.len());
                    return;
                }
                Some(pos) => {
                    let cr = if pos > 0 {
                        chunk[pos - 1] == b'\r'
                    } else {
                        self.skipped_cr
                    };
                    self.discarding = None;
                    self.pending = Some(FrameError::LineTooLong {
                        size: skipped + pos - usize::from(cr),
                        limit: self.max_line,
                    });
                    chunk = &chunk[pos + 1..];
                }
            }
        }
        self.compact();
        self.make_room(chunk.len());
        self.buf[self.end..self.end + chunk.len()].copy_from_slice(chunk);
        self.end += chunk.len();
    }

    /// Reads once from `reader` (at most 64 KiB) straight into the
    /// framer's buffer, as [`push`](Self::push) would take the same bytes
    /// but without copying them through a chunk of the caller's.
    ///
    /// # Errors
    /// The reader's; nothing is kept from a failed read.
    pub fn read_from(&mut self, reader: &mut impl std::io::Read) -> std::io::Result<usize> {
        let n = reader.read(self.spare())?;
        self.filled(n);
        Ok(n)
    }

    /// Room for the next read (64 KiB): write the bytes that arrive at its
    /// start, then say how many with [`filled`](Self::filled). For readers
    /// that [`read_from`](Self::read_from) cannot call, such as
    /// asynchronous ones.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.discarding.is_some() {
            // Skipping an oversized line: its bytes are looked at as they
            // arrive and never kept.
            self.scratch.resize(READ_CHUNK, 0);
            return &mut self.scratch;
        }
        self.compact();
        self.make_room(READ_CHUNK);
        &mut self.buf[self.end..self.end + READ_CHUNK]
    }

    /// Takes the first `n` bytes of the last [`spare`](Self::spare) as
    /// received (at most its length).
    pub fn filled(&mut self, n: usize) {
        let n = n.min(READ_CHUNK);
        if self.discarding.is_some() {
            let chunk = std::mem::take(&mut self.scratch);
            self.push(&chunk[..n.min(chunk.len())]);
            self.scratch = chunk;
        } else {
            self.end = (self.end + n).min(self.buf.len());
        }
    }

    /// Makes room for `more` bytes past `end`. Only the new room is
    /// zeroed (and so touched); the allocation itself grows by doubling.
    fn make_room(&mut self, more: usize) {
        let needed = self.end + more;
        if self.buf.len() < needed {
            self.buf.resize(needed, 0);
        }
    }

    /// Returns the next complete line, without its `\n` or `\r\n`.
    ///
    /// # Returns
    /// `Ok(Some(line))` for a line, `Ok(None)` when more bytes are needed.
    ///
    /// # Errors
    /// [`FrameError::LineTooLong`] once for each oversized line; call again
    /// for the lines after it.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, FrameError> {
        if let Some(err) = self.pending.take() {
            return Err(err);
        }
        loop {
            let Some(offset) = memchr(b'\n', &self.buf[self.scanned..self.end]) else {
                self.scanned = self.end;
                // A line of exactly `max_line` bytes may still be followed by
                // the `\r` of its `\r\n`: allow for it before giving up.
                let slack = usize::from(self.last_byte() == Some(b'\r'));
                if self.buffered() > self.max_line + slack {
                    // Too long already: drop what we hold and skip the rest
                    // of the line as it arrives.
                    self.keep_head(self.start);
                    self.discarding = Some(self.buffered());
                    self.skipped_cr = self.last_byte() == Some(b'\r');
                    self.end = 0;
                    self.start = 0;
                    self.scanned = 0;
                }
                return Ok(None);
            };
            let newline = self.scanned + offset;
            let line_start = self.start;
            self.start = newline + 1;
            self.scanned = self.start;
            let mut end = newline;
            if end > line_start && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            let size = end - line_start;
            if size > self.max_line {
                self.keep_head(line_start);
                return Err(FrameError::LineTooLong {
                    size,
                    limit: self.max_line,
                });
            }
            if size == 0 {
                continue;
            }
            return Ok(Some(&self.buf[line_start..end]));
        }
    }

    /// Ends the stream: returns the last line when it had no terminator.
    ///
    /// Call [`LineFramer::next_line`] until it returns `Ok(None)` first.
    ///
    /// # Errors
    /// [`FrameError::LineTooLong`] when the stream ended inside an oversized
    /// line (or one is still to be reported).
    pub fn finish(&mut self) -> Result<Option<&[u8]>, FrameError> {
        if let Some(err) = self.pending.take() {
            return Err(err);
        }
        if let Some(skipped) = self.discarding.take() {
            return Err(FrameError::LineTooLong {
                size: skipped - usize::from(self.skipped_cr),
                limit: self.max_line,
            });
        }
        let line_start = self.start;
        let mut end = self.end;
        self.start = end;
        self.scanned = end;
        if end > line_start && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        let size = end - line_start;
        if size > self.max_line {
            self.keep_head(line_start);
            return Err(FrameError::LineTooLong {
                size,
                limit: self.max_line,
            });
        }
        Ok((size > 0).then(|| &self.buf[line_start..end]))
    }

    /// Keeps the start of the refused line that begins at `from`.
    fn keep_head(&mut self, from: usize) {
        let end = self.end.min(from + REFUSED_HEAD);
        self.refused_head = Some(self.buf[from..end].to_vec());
    }

    /// Moves unread bytes to the front when enough consumed bytes pile up.
    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        if self.start == self.end {
            self.end = 0;
            self.start = 0;
            self.scanned = 0;
        } else if self.start >= COMPACT_THRESHOLD || self.start * 2 >= self.end {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
    }

    /// The last byte received, if any.
    fn last_byte(&self) -> Option<u8> {
        self.end.checked_sub(1).map(|last| self.buf[last])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lines(f: &mut LineFramer) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut out = Vec::new();
        loop {
            match f.next_line() {
                Ok(Some(l)) => out.push(Ok(l.to_vec())),
                Ok(None) => break,
                Err(e) => out.push(Err(e)),
            }
        }
        out
    }

    #[test]
    fn keeps_the_half_line_and_flushes_it_at_eof() {
        let mut f = LineFramer::new();
        f.push(b"one\ntw");
        assert_eq!(all_lines(&mut f), vec![Ok(b"one".to_vec())]);
        f.push(b"o\r\nthree");
        assert_eq!(all_lines(&mut f), vec![Ok(b"two".to_vec())]);
        assert_eq!(f.finish().unwrap(), Some(&b"three"[..]));
        assert_eq!(f.finish().unwrap(), None);
    }

    #[test]
    fn skips_blank_lines() {
        let mut f = LineFramer::new();
        f.push(b"\n\r\na\n\n");
        assert_eq!(all_lines(&mut f), vec![Ok(b"a".to_vec())]);
    }

    #[test]
    fn refuses_a_long_line_in_one_chunk_and_keeps_the_next() {
        let mut f = LineFramer::with_max_line(4);
        f.push(b"12345\nok\n");
        assert_eq!(
            all_lines(&mut f),
            vec![
                Err(FrameError::LineTooLong { size: 5, limit: 4 }),
                Ok(b"ok".to_vec())
            ]
        );
    }

    #[test]
    fn refuses_a_long_line_across_chunks_with_bounded_memory() {
        let mut f = LineFramer::with_max_line(8);
        f.push(b"first\n0123456789");
        assert_eq!(all_lines(&mut f), vec![Ok(b"first".to_vec())]);
        for _ in 0..1000 {
            f.push(b"0123456789");
            assert!(f.buffered() <= 8 + 10, "buffer grew to {}", f.buffered());
            assert!(all_lines(&mut f).is_empty());
        }
        f.push(b"xy\r\nnext\n");
        assert_eq!(
            all_lines(&mut f),
            vec![
                Err(FrameError::LineTooLong {
                    size: 10 + 10_000 + 2,
                    limit: 8
                }),
                Ok(b"next".to_vec())
            ]
        );
    }

    // Regression (found by the chunking property test): a line of exactly
    // the bound whose `\r` arrives before its `\n` is not too long.
    #[test]
    fn a_full_length_line_split_before_its_crlf_is_accepted() {
        let mut f = LineFramer::with_max_line(4);
        f.push(b"abcd\r");
        assert!(all_lines(&mut f).is_empty());
        f.push(b"\nnext\n");
        assert_eq!(
            all_lines(&mut f),
            vec![Ok(b"abcd".to_vec()), Ok(b"next".to_vec())]
        );
        f.push(b"wxyz\r");
        assert!(all_lines(&mut f).is_empty());
        assert_eq!(f.finish().unwrap(), Some(&b"wxyz"[..]));
    }

    #[test]
    fn eof_inside_a_long_line_reports_it() {
        let mut f = LineFramer::with_max_line(2);
        f.push(b"abcdef");
        assert!(all_lines(&mut f).is_empty());
        f.push(b"gh");
        assert_eq!(
            f.finish(),
            Err(FrameError::LineTooLong { size: 8, limit: 2 })
        );
    }

    #[test]
    fn keeps_the_head_of_a_refused_line_once() {
        // Known too long before its end arrives: the head is there at once.
        let mut f = LineFramer::with_max_line(8);
        f.push(b"ok\n{\"id\":1,\"result\":\"");
        assert_eq!(all_lines(&mut f), vec![Ok(b"ok".to_vec())]);
        assert_eq!(
            f.take_refused_head().as_deref(),
            Some(&b"{\"id\":1,\"result\":\""[..])
        );
        assert_eq!(f.take_refused_head(), None);
        f.push(&[b'x'; 3 * REFUSED_HEAD]);
        assert!(all_lines(&mut f).is_empty());
        assert_eq!(f.take_refused_head(), None);
        // Refused whole, in one chunk: kept, cut to the bound.
        f.push(b"\"}\n");
        f.push(&[b'y'; 2 * REFUSED_HEAD]);
        f.push(b"\n");
        assert_eq!(all_lines(&mut f).len(), 2);
        assert_eq!(f.take_refused_head(), Some(vec![b'y'; REFUSED_HEAD]));
    }

    #[test]
    fn error_message_names_the_size() {
        let e = FrameError::LineTooLong {
            size: 70_000_000,
            limit: DEFAULT_MAX_LINE,
        };
        assert!(e.to_string().contains("70000000"));
    }
}
