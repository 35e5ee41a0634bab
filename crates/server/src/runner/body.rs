//! The HTTP response body: a whole buffer, nothing, a stream of SSE
//! frames fed by a task, or a peer replica's answer passed on. Dropping a
//! streamed body (the client went away) closes its channel, which the
//! feeding task reads as cancellation.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;

/// A response body.
#[derive(Debug)]
pub(crate) enum Body {
    /// A complete body, sent once.
    Full(Option<Bytes>),
    /// SSE frames as they are produced; ends when the sender is dropped.
    Stream(mpsc::Receiver<Bytes>),
    /// A peer replica's answer, passed on as it arrives (its trailers
    /// dropped; a broken one ends where it broke).
    Peer(hyper::body::Incoming),
}

impl Body {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
        Body::Full(Some(bytes.into()))
    }

    pub(crate) fn empty() -> Body {
        Body::Full(None)
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            Body::Peer(incoming) => loop {
                match std::task::ready!(Pin::new(&mut *incoming).poll_frame(cx)) {
                    Some(Ok(frame)) if frame.is_data() => return Poll::Ready(Some(Ok(frame))),
                    Some(Ok(_trailers)) => {}
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "a peer replica's answer broke off");
                        return Poll::Ready(None);
                    }
                    None => return Poll::Ready(None),
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(data) => data.is_none(),
            Body::Stream(_) => false,
            Body::Peer(incoming) => incoming.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
            Body::Peer(incoming) => incoming.size_hint(),
        }
    }
}
