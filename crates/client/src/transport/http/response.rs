//! Reading what a server answers to one POST: a JSON body, an SSE stream,
//! `202 Accepted`, or an HTTP error (HTTP-C-04).
//!
//! On a stream the response is the message whose id matches the request,
//! not the last one (DESIGN.md item 5); notifications before it go to the
//! request's sink, and so do those after it, which a background task keeps
//! reading for a short grace period. A stream that ends or breaks without
//! the response fails the request at once.

use std::time::Duration;

use super::pool::PooledBody as Body;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use http_body_util::BodyExt;
use switchboard_wire::{
    CallToolResult, ErrorCode, ErrorObject, Message, Notification, Request, RequestId, Response,
    SseDecoder,
};

use super::conn::HttpResponse;
use super::failure::{Failure, StatusFailure};
use crate::error::Source;
use crate::transport::{NotificationSink, ToolAnswer};

/// How much of an error body is read, and how much of it is quoted.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
const SNIPPET_CHARS: usize = 200;

/// The kind of body a successful answer carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    EventStream,
}

/// What is done with messages that are not the awaited response.
pub(crate) struct Routing<'a> {
    /// The server's alias, for log lines.
    pub(crate) server: &'a str,
    /// The request's notification sink.
    pub(crate) sink: Option<&'a NotificationSink>,
    /// Requests the server sends on the stream (legacy servers only); `None`
    /// means they are a protocol violation, logged and skipped.
    pub(crate) on_request: Option<&'a (dyn Fn(Request) + Send + Sync)>,
}

impl Routing<'_> {
    fn notification(&self, notification: Notification) {
        if let Some(sink) = self.sink {
            sink(notification);
        } else {
            tracing::trace!(server = self.server, method = %notification.method, "notification without a sink dropped");
        }
    }

    fn request(&self, request: Request) {
        match self.on_request {
            Some(handle) => handle(request),
            None => tracing::warn!(
                server = self.server,
                method = %request.method,
                "server sent a JSON-RPC request on a response stream; ignored (servers must not, WIRE-13)"
            ),
        }
    }
}

/// The body kind of a success status, from `Content-Type`.
///
/// # Errors
/// [`Failure::Protocol`] for any other content type.
pub(crate) fn body_kind(response: &HttpResponse) -> Result<BodyKind, Failure> {
    let ct = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = ct
        .bytes()
        .position(|b| b == b';')
        .map_or(ct, |semicolon| &ct[..semicolon])
        .trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(BodyKind::Json)
    } else if essence.eq_ignore_ascii_case("text/event-stream") {
        Ok(BodyKind::EventStream)
    } else {
        Err(Failure::Protocol(format!(
            "HTTP {} with content type {:?}; expected application/json or text/event-stream",
            response.status().as_u16(),
            ct
        )))
    }
}

/// Reads a whole body, refusing more than `limit` bytes.
///
/// # Errors
/// [`Failure::Protocol`] past the limit, [`Failure::Stream`] when the body
/// breaks.
pub(crate) async fn read_limited(mut body: Body, limit: usize) -> Result<Bytes, Failure> {
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            Failure::Stream(
                format!("response body broke: {}", crate::net::error_chain(&e)),
                Some(Source::new(e)),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let total = first.as_ref().map_or(0, Bytes::len) + rest.len() + data.len();
        if total > limit {
            return Err(Failure::Protocol(format!(
                "response body larger than the {limit}-byte limit"
            )));
        }
        match &first {
            None if rest.is_empty() => first = Some(data),
            _ => {
                if let Some(f) = first.take() {
                    rest.extend_from_slice(&f);
                }
                rest.extend_from_slice(&data);
            }
        }
    }
    Ok(match first {
        Some(f) => f,
        None => Bytes::from(rest),
    })
}

/// Turns a non-success answer into the outcome the caller sees: the
/// JSON-RPC error of the body as the response when the body holds a modern
/// error (or the status is not one that may mean "another era"), otherwise
/// [`Failure::Status`] with the error and a snippet of the body.
pub(crate) async fn error_status(
    response: HttpResponse,
    id: Option<&RequestId>,
) -> Result<Response, Failure> {
    let status = response.status().as_u16();
    let www_authenticate = response
        .headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let kind = body_kind(&response).ok();
    let bytes = read_limited(response.into_body(), ERROR_BODY_LIMIT)
        .await
        .unwrap_or_default();
    let error = match kind {
        Some(BodyKind::EventStream) => first_error_in_stream(&bytes),
        _ => error_in_json(&bytes),
    };
    let snippet = snippet(&bytes);
    if let Some(error) = &error {
        if passes_as_response(status, error) {
            let id = id.cloned();
            return Ok(Response::error(id, error.clone()));
        }
    }
    Err(Failure::Status(StatusFailure {
        status,
        error,
        snippet,
        www_authenticate,
    }))
}

/// Whether an HTTP error carrying `error` is answered to the caller as that
/// JSON-RPC error. 400, 404 and 405 are how servers of another era (or
/// plain web servers) refuse a modern POST, so there only an error that
/// proves a modern server counts: -32020/-32021/-32022, or -32601 on a 404
/// (HTTP-C-16). Everywhere else the body's error is the answer.
pub(crate) fn passes_as_response(status: u16, error: &ErrorObject) -> bool {
    if !matches!(status, 400 | 404 | 405) {
        return !matches!(status, 401 | 403);
    }
    match error.known_code() {
        Some(code) if code.is_modern() => true,
        Some(ErrorCode::MethodNotFound) => status == 404,
        _ => false,
    }
}

fn error_in_json(bytes: &[u8]) -> Option<ErrorObject> {
    match Message::from_slice(bytes) {
        Ok(Message::Response(Response {
            outcome: Err(e), ..
        })) => Some(e),
        _ => None,
    }
}

fn first_error_in_stream(bytes: &[u8]) -> Option<ErrorObject> {
    let mut decoder = SseDecoder::new();
    decoder.push(bytes);
    while let Ok(Some(event)) = decoder.next_event() {
        if let Some(e) = error_in_json(event.data.as_bytes()) {
            return Some(e);
        }
    }
    None
}

/// The start of a body as one line of text, for error messages.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut last_space = true;
    for c in text.chars() {
        if out.chars().count() >= SNIPPET_CHARS {
            out.push('…');
            break;
        }
        if c.is_whitespace() || c.is_control() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
    }
    out.trim_end().to_owned()
}

/// Reads an `application/json` body holding the response to `id`.
///
/// # Errors
/// [`Failure::Protocol`] for a body that is not the response (a different
/// id, not JSON-RPC, over the limit).
pub(crate) async fn read_json(
    response: HttpResponse,
    id: &RequestId,
    limit: usize,
    routing: &Routing<'_>,
) -> Result<Response, Failure> {
    let bytes = read_json_body(response, limit).await?;
    json_response(&bytes, id, routing)
}

/// Reads an `application/json` body holding the response to `tools/call`
/// request `id`: a complete result straight into its type, the `_meta`
/// keys `leave_out` picks skipped unread
/// ([`CallToolResult::complete_from_response_leaving_out`]), anything else
/// as [`read_json`] does.
///
/// # Errors
/// As [`read_json`].
pub(crate) async fn read_json_tool(
    response: HttpResponse,
    id: &RequestId,
    limit: usize,
    routing: &Routing<'_>,
    leave_out: Option<fn(&str) -> bool>,
) -> Result<ToolAnswer, Failure> {
    let bytes = read_json_body(response, limit).await?;
    match CallToolResult::complete_from_response_leaving_out(&bytes, leave_out) {
        Some((got, result)) if got == *id => Ok(ToolAnswer::Complete(result)),
        _ => json_response(&bytes, id, routing).map(ToolAnswer::Response),
    }
}

/// The bytes of a JSON body, refused over `limit`.
async fn read_json_body(response: HttpResponse, limit: usize) -> Result<Bytes, Failure> {
    if let Some(len) = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limit as u64 {
            return Err(Failure::Protocol(format!(
                "response body of {len} bytes is larger than the {limit}-byte limit"
            )));
        }
    }
    read_limited(response.into_body(), limit).await
}

/// The response to `id` a JSON body holds.
fn json_response(bytes: &[u8], id: &RequestId, routing: &Routing<'_>) -> Result<Response, Failure> {
    match Message::from_slice(bytes) {
        Ok(Message::Response(r)) => match &r.id {
            Some(got) if got == id => Ok(r),
            // An error that could not name the request is about this one:
            // the body answers this POST and nothing else.
            None => Ok(Response {
                id: Some(id.clone()),
                ..r
            }),
            Some(got) => Err(Failure::Protocol(format!(
                "the JSON body answers request {got}, not request {id}"
            ))),
        },
        Ok(Message::Notification(n)) => {
            let method = n.method.clone();
            routing.notification(n);
            Err(Failure::Protocol(format!(
                "the JSON body holds a {method} notification instead of the response to request {id}"
            )))
        }
        Ok(Message::Request(r)) => Err(Failure::Protocol(format!(
            "the JSON body holds a {} request instead of the response to request {id}",
            r.method
        ))),
        Err(e) => Err(Failure::Protocol(format!(
            "the JSON body is not a JSON-RPC message ({e}): {}",
            snippet(bytes)
        ))),
    }
}

/// The state of an SSE response stream being read.
pub(crate) struct EventStream {
    body: Body,
    decoder: SseDecoder,
    /// The last `id:` seen (legacy resumption).
    pub(crate) last_event_id: Option<String>,
    /// The last `retry:` seen, in milliseconds (legacy resumption).
    pub(crate) retry_ms: Option<u64>,
    ended: bool,
}

/// What one step of an event stream produced.
pub(crate) enum StreamItem {
    /// A JSON-RPC message.
    Message(Message),
    /// An event named something other than `message` (e.g. `endpoint`).
    Other { event: String, data: String },
}

impl EventStream {
    pub(crate) fn new(body: Body, max_event: usize) -> Self {
        EventStream {
            body,
            decoder: SseDecoder::with_max_event(max_event),
            last_event_id: None,
            retry_ms: None,
            ended: false,
        }
    }

    /// The next message or foreign event; `Ok(None)` at a clean end.
    ///
    /// Keep-alive comments, events without data (priming events) and data
    /// that is not JSON-RPC are skipped; the latter with a warning.
    ///
    /// # Errors
    /// [`Failure::Stream`] when the body breaks, [`Failure::Protocol`] when
    /// an event is over the limit.
    pub(crate) async fn next(&mut self, server: &str) -> Result<Option<StreamItem>, Failure> {
        loop {
            match self.decoder.next_event() {
                Ok(Some(event)) => {
                    if event.id.is_some() {
                        self.last_event_id.clone_from(&event.id);
                    }
                    if let Some(retry) = event.retry {
                        self.retry_ms = Some(retry);
                    }
                    if event.event != "message" {
                        return Ok(Some(StreamItem::Other {
                            event: event.event,
                            data: event.data,
                        }));
                    }
                    if event.data.trim().is_empty() {
                        continue;
                    }
                    match Message::from_slice(event.data.as_bytes()) {
                        Ok(message) => return Ok(Some(StreamItem::Message(message))),
                        Err(e) => {
                            tracing::warn!(server, error = %e, data = %snippet(event.data.as_bytes()), "skipping an SSE event that is not a JSON-RPC message");
                            continue;
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => return Err(Failure::Protocol(e.to_string())),
            }
            if self.ended {
                self.decoder.finish();
                return Ok(None);
            }
            match self.body.frame().await {
                None => self.ended = true,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.decoder.push(&data);
                    }
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Err(Failure::Stream(
                        format!("response stream broke: {}", crate::net::error_chain(&e)),
                        Some(Source::new(e)),
                    ));
                }
            }
        }
    }

    /// Reads until the response to `id`, routing everything else.
    ///
    /// # Errors
    /// [`Failure::Stream`] when the stream ends or breaks first.
    pub(crate) async fn response_for(
        &mut self,
        id: &RequestId,
        routing: &Routing<'_>,
    ) -> Result<Response, Failure> {
        loop {
            let item = match self.next(routing.server).await? {
                Some(item) => item,
                None => {
                    return Err(Failure::Stream(
                        format!("response stream ended before the response to request {id}"),
                        None,
                    ));
                }
            };
            match item {
                StreamItem::Message(Message::Response(r)) => match &r.id {
                    Some(got) if got == id => return Ok(r),
                    None if r.outcome.is_err() => {
                        return Ok(Response {
                            id: Some(id.clone()),
                            ..r
                        });
                    }
                    other => tracing::warn!(
                        server = routing.server,
                        expected = %id,
                        got = ?other.as_ref().map(ToString::to_string),
                        "skipping a response for another request on this stream"
                    ),
                },
                StreamItem::Message(Message::Notification(n)) => routing.notification(n),
                StreamItem::Message(Message::Request(r)) => routing.request(r),
                StreamItem::Other { event, .. } => {
                    tracing::debug!(
                        server = routing.server,
                        event,
                        "skipping a non-message SSE event"
                    );
                }
            }
        }
    }

    /// Whether the body has ended.
    pub(crate) fn is_done(&self) -> bool {
        self.ended || http_body::Body::is_end_stream(&self.body)
    }

    /// Reads what is left of the stream after its response, handing
    /// notifications to `sink`, so those a server sends after the response
    /// still arrive and the connection can go back to the pool. What has
    /// already arrived (usually just the end of the stream) is read at once;
    /// the rest in the background, for at most `grace`.
    pub(crate) async fn drain(
        mut self,
        server: String,
        sink: Option<NotificationSink>,
        grace: Duration,
    ) {
        loop {
            if self.is_done() {
                return;
            }
            match poll_once(self.next(&server)).await {
                Some(Ok(Some(StreamItem::Message(Message::Notification(n))))) => {
                    if let Some(sink) = &sink {
                        sink(n);
                    }
                }
                Some(Ok(Some(_))) => {}
                Some(Ok(None) | Err(_)) => return,
                None => break,
            }
        }
        tokio::spawn(async move {
            let routing = Routing {
                server: &server,
                sink: sink.as_ref(),
                on_request: None,
            };
            let read = async {
                while let Ok(Some(item)) = self.next(&server).await {
                    if let StreamItem::Message(Message::Notification(n)) = item {
                        routing.notification(n);
                    }
                }
            };
            let _ = tokio::time::timeout(grace, read).await;
        });
    }
}

/// Polls `future` once: its output if it is ready now, `None` otherwise.
async fn poll_once<F: std::future::Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
        std::task::Poll::Ready(out) => std::task::Poll::Ready(Some(out)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_modern_errors_pass_on_statuses_that_may_mean_another_era() {
        let e = |code| ErrorObject {
            code,
            message: "x".into(),
            data: None,
        };
        assert!(passes_as_response(400, &e(-32022)));
        assert!(passes_as_response(400, &e(-32020)));
        assert!(!passes_as_response(400, &e(-32000)));
        assert!(!passes_as_response(400, &e(-32602)));
        assert!(passes_as_response(404, &e(-32601)));
        assert!(!passes_as_response(405, &e(-32601)));
        assert!(passes_as_response(500, &e(-32603)));
        assert!(!passes_as_response(401, &e(-32001)));
    }

    #[test]
    fn snippets_are_one_bounded_line() {
        assert_eq!(
            snippet(b"<html>\r\n  <b>502</b>\n</html>"),
            "<html> <b>502</b> </html>"
        );
        let long = "x".repeat(1000);
        assert_eq!(snippet(long.as_bytes()).chars().count(), SNIPPET_CHARS + 1);
    }
}
