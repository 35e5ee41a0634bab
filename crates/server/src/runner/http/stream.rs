//! Running a routed request and shaping its answer: inline JSON when
//! nothing can be streamed, else SSE as soon as the handler sends a
//! notification; listen streams with keep-alive comments; a closed stream
//! cancels its handler.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use switchboard_wire::RequestId;
use switchboard_wire::meta::{LOG_LEVEL, PROGRESS_TOKEN};
use tokio::sync::mpsc;

use super::auth::Recheck;
use super::respond::{fault_response, json_response, keep_alive_frame, sse_frame, sse_response};
use super::{HttpResponse, State};
use crate::auth::Principal;
use crate::cancel::Cancellation;
use crate::dispatch::{Incoming, Reply, frame_error, frame_result};
use crate::legacy::Session;
use crate::notify::Subscription;
use crate::server::Server;
use crate::sink::Sink;

/// How many notifications a handler may queue ahead of a slow client.
pub(super) const NOTIFICATION_QUEUE: usize = 64;
/// How many SSE frames may wait for the socket.
pub(super) const FRAME_QUEUE: usize = 16;

/// Cancels a token when dropped: a request whose connection closed before
/// it finished is cancelled.
pub(super) struct CancelOnDrop(Option<Cancellation>);

impl CancelOnDrop {
    pub(super) fn new(token: &Cancellation) -> Self {
        CancelOnDrop(Some(token.clone()))
    }

    /// Hands responsibility to someone else.
    pub(super) fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.cancel();
        }
    }
}

impl State {
    /// Routes a validated request and shapes the answer: JSON, or SSE once
    /// something is streamed. `routed.streams` says whether anything may be
    /// sent before the answer; `route` starts the router.
    pub(super) async fn run<F, Fut>(self: Arc<Self>, routed: Routed, route: F) -> HttpResponse
    where
        F: FnOnce(Server, Incoming) -> Fut,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let Routed {
            id,
            streams,
            principal,
            session,
            recheck,
        } = routed;
        let cancel = Cancellation::new();
        if !streams {
            // The common case: nothing can be streamed, answer inline.
            let guard = CancelOnDrop::new(&cancel);
            let incoming = Incoming {
                principal,
                sink: Sink::Discard,
                cancel,
                session,
            };
            let reply = route(self.server.clone(), incoming).await;
            guard.defuse();
            return self.reply_response(&id, reply, recheck);
        }
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(NOTIFICATION_QUEUE);
        let incoming = Incoming {
            principal,
            sink: Sink::Channel(tx),
            cancel: cancel.clone(),
            session,
        };
        let mut fut = Box::pin(route(self.server.clone(), incoming));
        let guard = CancelOnDrop::new(&cancel);
        let (first, done) = tokio::select! {
            biased;
            reply = &mut fut => {
                match rx.try_recv() {
                    // Notifications queued before the answer: stream them.
                    Ok(first) => (first, Some(reply)),
                    Err(_) => {
                        guard.defuse();
                        return self.reply_response(&id, reply, recheck);
                    }
                }
            }
            Some(first) = rx.recv() => (first, None),
        };
        let (frames_tx, frames_rx) = mpsc::channel::<Bytes>(FRAME_QUEUE);
        let state = Arc::clone(&self);
        guard.defuse();
        tokio::spawn(async move {
            state
                .stream(id, first, done, fut, rx, frames_tx, cancel, recheck)
                .await;
        });
        sse_response(frames_rx)
    }

    pub(super) fn reply_response(
        &self,
        id: &RequestId,
        reply: Reply,
        recheck: Option<Recheck>,
    ) -> HttpResponse {
        match reply {
            Reply::Result(bytes) => json_response(200, frame_result(id, &bytes, 0)),
            Reply::Error(fault) => fault_response(Some(id), &fault),
            Reply::Listen(subscription) => {
                let (frames_tx, frames_rx) = mpsc::channel::<Bytes>(FRAME_QUEUE);
                let keep_alive = self.options.keep_alive;
                tokio::spawn(pump(*subscription, frames_tx, keep_alive, recheck));
                sse_response(frames_rx)
            }
        }
    }

    /// Drives a streamed request: forwards its notifications as SSE events,
    /// then its answer; stops and cancels the handler if the client closes
    /// the stream.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn stream(
        self: Arc<Self>,
        id: RequestId,
        first: Vec<u8>,
        done: Option<Reply>,
        mut fut: std::pin::Pin<Box<impl Future<Output = Reply> + Send>>,
        mut rx: mpsc::Receiver<Vec<u8>>,
        frames: mpsc::Sender<Bytes>,
        cancel: Cancellation,
        recheck: Option<Recheck>,
    ) {
        let _cancel_on_exit = CancelOnDrop::new(&cancel);
        if frames.send(sse_frame(&first)).await.is_err() {
            return self.abandon(fut, cancel).await;
        }
        let reply = match done {
            Some(reply) => reply,
            None => {
                let mut tick = tokio::time::interval(self.options.keep_alive);
                tick.reset();
                loop {
                    tokio::select! {
                        biased;
                        () = frames.closed() => return self.abandon(fut, cancel).await,
                        Some(m) = rx.recv() => {
                            if frames.send(sse_frame(&m)).await.is_err() {
                                return self.abandon(fut, cancel).await;
                            }
                        }
                        reply = &mut fut => break reply,
                        _ = tick.tick() => {
                            if frames.send(keep_alive_frame()).await.is_err() {
                                return self.abandon(fut, cancel).await;
                            }
                        }
                    }
                }
            }
        };
        // Notifications sent before the answer go first.
        while let Ok(m) = rx.try_recv() {
            if frames.send(sse_frame(&m)).await.is_err() {
                return;
            }
        }
        match reply {
            Reply::Result(bytes) => {
                let _ = frames.send(sse_frame(&frame_result(&id, &bytes, 0))).await;
            }
            Reply::Error(fault) => {
                let _ = frames
                    .send(sse_frame(&frame_error(Some(&id), &fault.error)))
                    .await;
            }
            Reply::Listen(subscription) => {
                pump(*subscription, frames, self.options.keep_alive, recheck).await;
            }
        }
    }

    /// The client closed the stream: cancel the handler and let it wind
    /// down without sending anything (HTTP-S-12/14).
    pub(super) async fn abandon(
        &self,
        fut: std::pin::Pin<Box<impl Future<Output = Reply> + Send>>,
        cancel: Cancellation,
    ) {
        cancel.cancel();
        let _ = tokio::time::timeout(self.options.cancel_grace, fut).await;
    }
}

/// What a request is routed with.
pub(super) struct Routed {
    pub(super) id: RequestId,
    /// Whether anything may be sent before the answer.
    pub(super) streams: bool,
    pub(super) principal: Option<Arc<Principal>>,
    pub(super) session: Option<Arc<Session>>,
    /// For a listen stream opened with a token: the token, checked again.
    pub(super) recheck: Option<Recheck>,
}

/// Runs a listen stream on SSE: acknowledgment, notifications, keep-alive
/// comments; a graceful closing result when the server shuts down. With
/// `recheck`, a stream whose token is refused now ends without one.
pub(super) async fn pump(
    mut subscription: Subscription,
    frames: mpsc::Sender<Bytes>,
    keep_alive: Duration,
    recheck: Option<Recheck>,
) {
    if frames.send(sse_frame(&subscription.ack())).await.is_err() {
        return;
    }
    let mut tick = tokio::time::interval(keep_alive);
    tick.reset();
    let mut recheck_tick = recheck.as_ref().map(|r| {
        let mut t = tokio::time::interval(r.every);
        t.reset();
        t
    });
    let recheck_due = async |t: &mut Option<tokio::time::Interval>| match t {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    };
    loop {
        tokio::select! {
            () = frames.closed() => return,
            () = recheck_due(&mut recheck_tick) => {
                if let Some(r) = &recheck {
                    if r.refused().await {
                        tracing::info!(
                            principal = %r.subject,
                            "a listen stream's token is refused now: the stream is ended"
                        );
                        return;
                    }
                }
            }
            next = subscription.next() => match next {
                Some(m) => {
                    if frames.send(sse_frame(&m)).await.is_err() {
                        return;
                    }
                }
                None => {
                    let _ = frames.send(sse_frame(&subscription.closing())).await;
                    return;
                }
            },
            _ = tick.tick() => {
                if frames.send(keep_alive_frame()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether the request's `_meta` asks for progress or logs, i.e. whether
/// the answer may have to stream.
pub(super) fn wants_notifications(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(PROGRESS_TOKEN) || m.contains_key(LOG_LEVEL))
}
