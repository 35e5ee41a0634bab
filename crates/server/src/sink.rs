//! Where messages about an in-flight request go: progress and log
//! notifications, and (legacy sessions only) server-to-client requests.
//!
//! On HTTP they go into a bounded channel that becomes the SSE response
//! stream; on stdio they are written as lines straight away.

use std::sync::Arc;

use tokio::sync::mpsc;

/// Writes one complete message as a line (the stdio runner's stdout).
pub(crate) trait LineSink: Send + Sync {
    /// Writes `message` followed by a newline, atomically with respect to
    /// other messages. Returns `false` when the stream is gone.
    fn write_line(&self, message: Vec<u8>) -> bool;
}

/// The outlet of one request.
#[derive(Clone)]
pub(crate) enum Sink {
    /// Nothing may be sent for this request (it asked for no progress and
    /// no logs, or it is a plain JSON exchange).
    Discard,
    /// Into a bounded channel (HTTP). The capacity bounds how far a handler
    /// can run ahead of a slow client before `send` waits.
    Channel(mpsc::Sender<Vec<u8>>),
    /// Straight to a line-oriented stream (stdio).
    Lines(Arc<dyn LineSink>),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sink::Discard => "Sink::Discard",
            Sink::Channel(_) => "Sink::Channel",
            Sink::Lines(_) => "Sink::Lines",
        })
    }
}

impl Sink {
    /// Sends one serialized message; `false` when it cannot be delivered.
    pub(crate) async fn send(&self, message: Vec<u8>) -> bool {
        match self {
            Sink::Discard => false,
            Sink::Channel(tx) => tx.send(message).await.is_ok(),
            Sink::Lines(w) => w.write_line(message),
        }
    }
}
