//! The deprecated HTTP+SSE transport of protocol revision 2024-11-05, kept
//! only to reach old servers (HTTP-S-26: never adopted, only spoken to).
//!
//! A GET to the server URL opens one long-lived event stream whose first
//! event, `endpoint`, names the URL to POST messages to. Every response and
//! server message then arrives on that one stream; a reader task matches
//! responses to waiting requests by id, like the stdio transport does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Uri;
use http::header::HeaderMap;
use serde_json::Value;
use switchboard_wire::{Message, Notification, RequestId, Response, meta, types::method};
use tokio::sync::oneshot;

use super::failure::Failure;
use super::response::{self, EventStream, StreamItem};
use super::{Events, Inner, accept_one_way, emit, one_way_parts, request_headers};
use crate::transport::{Incoming, NotificationSink, Outgoing};
use switchboard_wire::shared::lock;

/// How long the server may take to send the `endpoint` event.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// An open HTTP+SSE connection.
#[derive(Debug)]
pub(crate) struct SseSession {
    /// Where messages are POSTed (from the `endpoint` event).
    post_url: Uri,
    state: Arc<State>,
    reader: tokio::task::JoinHandle<()>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests waiting for their response, by id.
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    waiters: HashMap<RequestId, Waiter>,
    /// Why the stream is gone, once it is.
    dead: Option<String>,
}

struct Waiter {
    tx: oneshot::Sender<Result<Response, Failure>>,
    sink: Option<NotificationSink>,
    progress_token: Option<Value>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("sink", &self.sink.is_some())
            .field("progress_token", &self.progress_token)
            .finish()
    }
}

impl Drop for SseSession {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseSession {
    /// GETs the server URL and waits for the `endpoint` event.
    ///
    /// # Errors
    /// [`Failure`] when the GET is refused, is not an event stream, or
    /// names no usable endpoint in time.
    pub(crate) async fn open(inner: &Inner) -> Result<SseSession, Failure> {
        let answer = inner
            .get_event_stream(HeaderMap::new(), "for an HTTP+SSE stream")
            .await?;
        let mut stream = EventStream::new(answer.into_body(), inner.http.limits.max_body);
        let endpoint = tokio::time::timeout(ENDPOINT_TIMEOUT, async {
            loop {
                match stream.next(&inner.server).await? {
                    Some(StreamItem::Other { event, data }) if event == "endpoint" => {
                        return Ok(data);
                    }
                    Some(StreamItem::Other { .. }) => {}
                    Some(StreamItem::Message(m)) => {
                        return Err(Failure::Protocol(format!(
                            "the HTTP+SSE stream sent {} before its endpoint event",
                            m.method().unwrap_or("a response")
                        )));
                    }
                    None => {
                        return Err(Failure::Stream(
                            "the HTTP+SSE stream ended before its endpoint event".into(),
                            None,
                        ));
                    }
                }
            }
        })
        .await
        .map_err(|_| {
            Failure::Protocol(format!(
                "no endpoint event within {}s of opening the HTTP+SSE stream",
                ENDPOINT_TIMEOUT.as_secs()
            ))
        })??;
        let post_url = resolve_endpoint(&inner.endpoint, endpoint.trim())?;
        tracing::info!(server = %inner.server, endpoint = %post_url, "speaking the deprecated HTTP+SSE transport");
        let state = Arc::new(State::default());
        let reader = tokio::spawn(read_stream(
            stream,
            state.clone(),
            inner.events.clone(),
            inner.server.clone(),
        ));
        Ok(SseSession {
            post_url,
            state,
            reader,
        })
    }

    pub(crate) fn is_alive(&self) -> bool {
        lock(&self.state.pending).dead.is_none()
    }

    pub(crate) fn dead_failure(&self) -> Failure {
        let cause = lock(&self.state.pending)
            .dead
            .clone()
            .unwrap_or_else(|| "the HTTP+SSE stream is gone".into());
        Failure::Stream(cause, None)
    }

    /// Sends a request and waits for its response on the stream.
    pub(crate) async fn request(
        &self,
        inner: &Inner,
        outgoing: Outgoing,
    ) -> Result<Response, Failure> {
        let Outgoing { request, sink, .. } = outgoing;
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.state.pending);
            if let Some(cause) = &pending.dead {
                return Err(Failure::Stream(cause.clone(), None));
            }
            if pending.waiters.contains_key(&request.id) {
                return Err(Failure::Invalid(format!(
                    "request id {} is already in flight",
                    request.id
                )));
            }
            let progress_token = request
                .params
                .as_ref()
                .and_then(|p| p.get(meta::META))
                .and_then(|m| m.get(meta::PROGRESS_TOKEN))
                .cloned();
            pending.waiters.insert(
                request.id.clone(),
                Waiter {
                    tx,
                    sink,
                    progress_token,
                },
            );
        }
        // Dropping the request future (cancellation) forgets the waiter.
        let _forget = Forget {
            state: &self.state,
            id: &request.id,
        };
        let headers = request_headers(&request.method, request.params.as_ref())?;
        let out = inner.post_to(
            self.post_url.clone(),
            headers,
            &*request,
            Some(request.method.clone()),
        );
        let answer = inner.http.send(out).await?;
        if !answer.status().is_success() {
            return match response::error_status(answer, Some(&request.id)).await {
                Err(Failure::Status(s)) => match s.error {
                    Some(e) if !matches!(s.status, 401 | 403) => {
                        Ok(Response::error(Some(request.id.clone()), e))
                    }
                    _ => Err(Failure::Status(s)),
                },
                other => other,
            };
        }
        // The POST's own body is an acknowledgement ("Accepted"); read it so
        // the connection goes back to the pool.
        let _ = response::read_limited(answer.into_body(), 64 * 1024).await;
        match rx.await {
            Ok(result) => result,
            Err(_) => Err(self.dead_failure()),
        }
    }

    /// POSTs a notification or a response to the endpoint.
    pub(crate) async fn post_one_way(
        &self,
        inner: &Inner,
        message: &Message,
    ) -> Result<(), Failure> {
        let (method, _, headers) = one_way_parts(message)?;
        let out = inner.post_to(self.post_url.clone(), headers, message, method);
        accept_one_way(inner.http.send(out).await?).await
    }

    /// Closes the stream; waiting requests fail at once.
    pub(crate) fn shut_down(&self) {
        self.reader.abort();
        fail_all(&self.state, "transport closed".into());
    }
}

/// Removes a waiter when its request future ends, however it ends.
struct Forget<'a> {
    state: &'a State,
    id: &'a RequestId,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.state.pending).waiters.remove(self.id);
    }
}

/// The reader task: routes every message of the stream.
async fn read_stream(mut stream: EventStream, state: Arc<State>, events: Events, server: String) {
    let cause = loop {
        match stream.next(&server).await {
            Ok(Some(StreamItem::Message(Message::Response(r)))) => {
                let waiter =
                    r.id.as_ref()
                        .and_then(|id| lock(&state.pending).waiters.remove(id));
                match waiter {
                    Some(w) => {
                        let _ = w.tx.send(Ok(r));
                    }
                    // A late answer to a cancelled request (DESIGN.md item 2).
                    None => {
                        tracing::debug!(server, id = ?r.id, "dropping a response nobody waits for")
                    }
                }
            }
            Ok(Some(StreamItem::Message(Message::Notification(n)))) => {
                route_notification(&state, &events, &server, n);
            }
            Ok(Some(StreamItem::Message(Message::Request(r)))) => {
                emit(&events, &server, Incoming::Request(r));
            }
            Ok(Some(StreamItem::Other { event, .. })) => {
                tracing::debug!(server, event, "skipping a non-message SSE event");
            }
            Ok(None) => break "the HTTP+SSE stream ended".to_owned(),
            Err(Failure::Stream(c, _) | Failure::Protocol(c)) => break c,
            Err(other) => break format!("{other:?}"),
        }
    };
    tracing::warn!(server, cause, "HTTP+SSE stream lost; pending requests fail");
    fail_all(&state, cause);
}

/// Progress goes to the request whose token it names; the rest to the
/// event sink.
fn route_notification(state: &State, events: &Events, server: &str, n: Notification) {
    if n.method == method::PROGRESS {
        let token = n.params.as_ref().and_then(|p| p.get(meta::PROGRESS_TOKEN));
        let sink = token.and_then(|t| {
            lock(&state.pending)
                .waiters
                .values()
                .find(|w| w.progress_token.as_ref() == Some(t))
                .and_then(|w| w.sink.clone())
        });
        if let Some(sink) = sink {
            sink(n);
            return;
        }
    }
    emit(events, server, Incoming::Notification(n));
}

fn fail_all(state: &State, cause: String) {
    let waiters = {
        let mut pending = lock(&state.pending);
        if pending.dead.is_none() {
            pending.dead = Some(cause.clone());
        }
        std::mem::take(&mut pending.waiters)
    };
    for (_, w) in waiters {
        let _ = w.tx.send(Err(Failure::Stream(cause.clone(), None)));
    }
}

/// Resolves the `endpoint` event's URI reference against the server URL.
/// It must stay on the server's origin: credentials go with every POST.
fn resolve_endpoint(base: &Uri, reference: &str) -> Result<Uri, Failure> {
    let bad = |why: &str| Failure::Protocol(format!("endpoint event {reference:?} {why}"));
    let resolved: Uri = if reference.starts_with("http://") || reference.starts_with("https://") {
        reference.parse().map_err(|_| bad("is not a valid URL"))?
    } else {
        let scheme = base.scheme_str().unwrap_or("http");
        let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
        let path = if reference.starts_with('/') {
            reference.to_owned()
        } else {
            let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
            format!("{dir}/{reference}")
        };
        format!("{scheme}://{authority}{path}")
            .parse()
            .map_err(|_| bad("is not a valid URI reference"))?
    };
    let same_origin = resolved.scheme() == base.scheme()
        && resolved.host().map(str::to_ascii_lowercase) == base.host().map(str::to_ascii_lowercase)
        && resolved.port_u16().or_else(|| default_port(&resolved))
            == base.port_u16().or_else(|| default_port(base));
    if !same_origin {
        return Err(bad(
            "points to another origin; refusing to send messages there",
        ));
    }
    Ok(resolved)
}

fn default_port(uri: &Uri) -> Option<u16> {
    match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let base: Uri = "http://127.0.0.1:9/sse".parse().unwrap();
        assert_eq!(
            resolve_endpoint(&base, "/messages?sessionId=a").unwrap(),
            "http://127.0.0.1:9/messages?sessionId=a"
        );
        assert_eq!(
            resolve_endpoint(&base, "messages").unwrap(),
            "http://127.0.0.1:9/messages"
        );
        assert_eq!(
            resolve_endpoint(&base, "http://127.0.0.1:9/m").unwrap(),
            "http://127.0.0.1:9/m"
        );
        assert!(resolve_endpoint(&base, "http://evil.example/m").is_err());
        assert!(resolve_endpoint(&base, "https://127.0.0.1:9/m").is_err());
    }
}
