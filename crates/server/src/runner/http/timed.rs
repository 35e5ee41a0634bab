//! A connection's deadlines, kept by its I/O: hyper reads and writes
//! through [`Timed`], which fails the read or write that finds a deadline
//! passed, and hyper closes the connection.
//!
//! - A request head must be complete within the header timeout of its
//!   first byte (for the connection's first head, of the connection's
//!   start: after the TLS handshake, when there is one), so a head
//!   trickled a line at a time is cut off.
//! - Between requests, a kept-alive connection may stay silent for the
//!   idle timeout.
//! - An answer the client reads nothing of (the socket takes no byte) for
//!   the write timeout ends the connection, so a client that stops reading
//!   cannot hold it busy.
//!
//! While a request is in flight no reading deadline runs: its body has
//! the body timeout of its own (`route`), and an answer may stream as long
//! as it has something to say.
//!
//! hyper's own `header_read_timeout` is not used: it starts when hyper
//! begins to wait for a head, which on a kept-alive connection is the
//! start of its idle period, so it cannot give a trickled head less time
//! than an idle connection. The timer here is set when a read or a write
//! has to wait and when an answer's end is flushed (hyper then waits for
//! the socket without reading again, so nothing else would arm the idle
//! deadline), and moved rather than rebuilt.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::limits::Slot;

/// The deadlines of one connection ([`super::HttpOptions`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadlines {
    pub(super) header: Duration,
    pub(super) idle: Duration,
    pub(super) write: Duration,
}

/// A connection's byte stream with its deadlines.
#[derive(Debug)]
pub(super) struct Timed<I> {
    io: I,
    slot: Arc<Slot>,
    deadlines: Deadlines,
    /// The number of answers done when the reading state below was last
    /// brought up to date ([`Slot::answers`]): another number means a new
    /// idle period.
    answers: u64,
    /// When the head being read began: the connection's start for its
    /// first head, the first byte after an answer for the others.
    head_from: Option<Instant>,
    /// Since when the socket has taken no byte of what hyper writes.
    stalled_since: Option<Instant>,
    /// Set to the nearest deadline whenever a read or write waits.
    timer: Option<Pin<Box<Sleep>>>,
}

/// Which deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lapse {
    Header,
    Idle,
    Write,
}

impl<I> Timed<I> {
    /// `io`, started now (its first head is due within the header
    /// timeout).
    pub(super) fn new(io: I, slot: Arc<Slot>, deadlines: Deadlines) -> Timed<I> {
        Timed {
            io,
            answers: slot.answers(),
            slot,
            deadlines,
            head_from: Some(Instant::now()),
            stalled_since: None,
            timer: None,
        }
    }

    /// Starts a new idle period when an answer was done since last seen.
    fn catch_up(&mut self) {
        let answers = self.slot.answers();
        if answers != self.answers {
            self.answers = answers;
            self.head_from = None;
        }
    }

    /// The nearest deadline now, and which one it is.
    fn deadline(&mut self) -> Option<(Instant, Lapse)> {
        let reading = if self.slot.is_busy() {
            None
        } else {
            self.catch_up();
            Some(match self.head_from {
                Some(from) => (from + self.deadlines.header, Lapse::Header),
                None => (self.slot.idle_since() + self.deadlines.idle, Lapse::Idle),
            })
        };
        let writing = self
            .stalled_since
            .map(|since| (since + self.deadlines.write, Lapse::Write));
        match (reading, writing) {
            (Some(r), Some(w)) => Some(if w.0 < r.0 { w } else { r }),
            (r, w) => r.or(w),
        }
    }

    /// After a read or write had to wait: the error ending the connection
    /// when a deadline passed; otherwise the timer is set to wake the
    /// connection at the nearest one.
    fn lapsed(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let (deadline, lapse) = self.deadline()?;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        if timer.as_mut().poll(cx).is_pending() {
            return None;
        }
        let Deadlines {
            header,
            idle,
            write,
        } = self.deadlines;
        let why = match lapse {
            Lapse::Header => format!("no complete request head within {header:?}"),
            Lapse::Idle => format!("idle for {idle:?} between requests"),
            Lapse::Write => format!("the client read nothing of the answer for {write:?}"),
        };
        Some(io::Error::new(io::ErrorKind::TimedOut, why))
    }

    /// What a write returned, with the stall it tells of recorded.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Pending => {
                self.stalled_since.get_or_insert_with(Instant::now);
                match self.lapsed(cx) {
                    Some(e) => Poll::Ready(Err(e)),
                    None => Poll::Pending,
                }
            }
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.stalled_since = None;
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Timed<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before && !this.slot.is_busy() {
                    this.catch_up();
                    // The first byte of a head: from now on the header
                    // timeout runs.
                    this.head_from.get_or_insert_with(Instant::now);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.lapsed(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Timed<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.wrote(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // TLS keeps records back until the socket takes them: a flush
        // that waits is a stall as a write that waits is.
        let r = Pin::new(&mut this.io).poll_flush(cx).map_ok(|()| 1);
        match this.wrote(cx, r) {
            Poll::Ready(Ok(_)) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
        // hyper flushes the end of every answer, and then waits for the
        // socket without reading again: the idle deadline is set here, or
        // nothing would wake the connection when it passes.
        if !this.slot.is_busy() {
            if let Some(e) = this.lapsed(cx) {
                return Poll::Ready(Err(e));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
