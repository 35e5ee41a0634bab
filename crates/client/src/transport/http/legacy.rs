//! Streamable HTTP as protocol revisions 2025-03-26 through 2025-11-25
//! define it: a session the server assigns on `initialize`, sent back in
//! `Mcp-Session-Id` and ended with a DELETE; the negotiated version in
//! `MCP-Protocol-Version`; server requests on response streams; and
//! resumption of a dropped response stream with GET and `Last-Event-ID`
//! after the `retry:` delay the server set.

use std::sync::Arc;
use std::time::Duration;

use http::header::{ACCEPT, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use serde_json::Value;
use switchboard_wire::{Message, Notification, Request, RequestId, Response, types::method};

use super::conn::{HttpResponse, Outbound};
use super::failure::Failure;
use super::response::{self, BodyKind, EventStream, Routing, StreamItem};
use super::{Inner, accept_one_way, emit, header_value, one_way_parts, request_headers};
use crate::transport::{Incoming, NotificationSink, Outgoing};

/// Resumption attempts for one request's stream.
const MAX_RESUMES: usize = 5;
/// The reconnection delay when the server set none.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long the DELETE that ends a session may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long opening the standalone stream may hold up the handshake.
const STANDALONE_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest pause between attempts to reopen the standalone stream.
const STANDALONE_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One legacy session.
#[derive(Debug)]
pub(crate) struct LegacySession {
    /// `Mcp-Session-Id`, when the server assigned one (stateless legacy
    /// servers do not); shared with the standalone stream's task.
    session_id: Arc<std::sync::Mutex<Option<HeaderValue>>>,
    /// The negotiated protocol version, sent as `MCP-Protocol-Version`.
    version: HeaderValue,
    /// The `initialize` request, replayed when the server forgets the
    /// session (HTTP 404).
    init: Request,
    /// Serialises re-handshakes after a 404.
    renewing: tokio::sync::Mutex<()>,
    /// The task reading the standalone GET stream, once opened.
    standalone: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for LegacySession {
    fn drop(&mut self) {
        if let Some(task) = self
            .standalone
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

impl LegacySession {
    /// POSTs `initialize`. Returns the session when the server accepted it,
    /// and the response either way.
    ///
    /// # Errors
    /// [`Failure::Status`] when the server refused the POST without a
    /// JSON-RPC error, which is how an HTTP+SSE server answers.
    pub(crate) async fn initialize(
        inner: &Inner,
        outgoing: Outgoing,
    ) -> Result<(Option<LegacySession>, Response), Failure> {
        let Outgoing { request, sink, .. } = outgoing;
        let (session_id, response) = handshake(inner, &request, sink.as_ref(), None).await?;
        let version = match &response.outcome {
            Ok(result) => result.get("protocolVersion").and_then(Value::as_str),
            Err(_) => return Ok((None, response)),
        };
        let Some(version) = version else {
            return Ok((None, response));
        };
        let version = header_value(version)?;
        let session = LegacySession {
            session_id: Arc::new(std::sync::Mutex::new(session_id)),
            version,
            init: Arc::unwrap_or_clone(request),
            renewing: tokio::sync::Mutex::new(()),
            standalone: std::sync::Mutex::new(None),
        };
        Ok((Some(session), response))
    }

    pub(crate) fn session_id(&self) -> Option<String> {
        self.current_session()
            .and_then(|v| v.to_str().ok().map(str::to_owned))
    }

    fn current_session(&self) -> Option<HeaderValue> {
        self.session_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn headers(&self, session: Option<&HeaderValue>, base: HeaderMap) -> HeaderMap {
        let mut headers = base;
        headers.insert(super::MCP_PROTOCOL_VERSION, self.version.clone());
        if let Some(id) = session {
            headers.insert(super::MCP_SESSION_ID, id.clone());
        }
        headers
    }

    /// One request in the session.
    pub(crate) async fn request(
        &self,
        inner: &Inner,
        outgoing: Outgoing,
    ) -> Result<Response, Failure> {
        let Outgoing { request, sink, .. } = outgoing;
        let mut session = self.current_session();
        for attempt in 0..2 {
            let base = request_headers(&request.method, request.params.as_ref())?;
            let headers = self.headers(session.as_ref(), base);
            let out = inner.post(headers, &*request, Some(request.method.clone()));
            let answer = inner.http.send(out).await?;
            if answer.status() == StatusCode::NOT_FOUND && session.is_some() && attempt == 0 {
                // The server forgot the session: the 2025-11-25 rule is a
                // new `initialize` without the id, then the request again.
                tracing::info!(server = %inner.server, "legacy session expired (HTTP 404); initializing a new one");
                drop(answer);
                session = self.renew(inner, session).await?;
                continue;
            }
            return self
                .read_answer(inner, answer, &request.id, sink.as_ref(), session.as_ref())
                .await;
        }
        Err(Failure::Protocol(
            "the server forgot the new session at once".into(),
        ))
    }

    /// Reads the answer to a request in this session, resuming its stream
    /// when it drops after an event id.
    async fn read_answer(
        &self,
        inner: &Inner,
        answer: HttpResponse,
        id: &RequestId,
        sink: Option<&NotificationSink>,
        session: Option<&HeaderValue>,
    ) -> Result<Response, Failure> {
        let on_request = |r: Request| emit(&inner.events, &inner.server, Incoming::Request(r));
        let routing = Routing {
            server: &inner.server,
            sink,
            on_request: Some(&on_request),
        };
        let status = answer.status();
        if !status.is_success() {
            return legacy_error(answer, id).await;
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Err(Failure::Protocol(format!(
                "HTTP {} to request {id}: a request needs a JSON or SSE response",
                status.as_u16()
            )));
        }
        let max = inner.http.limits.max_body;
        match response::body_kind(&answer)? {
            BodyKind::Json => response::read_json(answer, id, max, &routing).await,
            BodyKind::EventStream => {
                let mut stream = EventStream::new(answer.into_body(), max);
                let mut resumes = 0;
                loop {
                    match stream.response_for(id, &routing).await {
                        Ok(r) => {
                            stream
                                .drain(inner.server.clone(), sink.cloned(), inner.drain_grace)
                                .await;
                            return Ok(r);
                        }
                        Err(Failure::Stream(cause, source)) if resumes < MAX_RESUMES => {
                            let Some(last) = stream.last_event_id.clone() else {
                                return Err(Failure::Stream(cause, source));
                            };
                            resumes += 1;
                            let delay =
                                stream.retry_ms.map_or(DEFAULT_RETRY, Duration::from_millis);
                            tokio::time::sleep(delay).await;
                            let resumed =
                                self.resume(inner, &last, session).await.map_err(|e| {
                                    Failure::Stream(
                                        format!("{cause}; resuming it failed: {e:?}"),
                                        source,
                                    )
                                })?;
                            let retry = stream.retry_ms;
                            stream = EventStream::new(resumed.into_body(), max);
                            stream.last_event_id = Some(last);
                            stream.retry_ms = retry;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }

    /// GET with `Last-Event-ID`: the server replays what followed that event.
    async fn resume(
        &self,
        inner: &Inner,
        last_event_id: &str,
        session: Option<&HeaderValue>,
    ) -> Result<HttpResponse, Failure> {
        let mut headers = HeaderMap::new();
        headers.insert("last-event-id", header_value(last_event_id)?);
        let headers = self.headers(session, headers);
        inner.get_event_stream(headers, "with Last-Event-ID").await
    }

    /// Replays the handshake after the server forgot `stale`; returns the
    /// new session id.
    async fn renew(
        &self,
        inner: &Inner,
        stale: Option<HeaderValue>,
    ) -> Result<Option<HeaderValue>, Failure> {
        let _one_at_a_time = self.renewing.lock().await;
        let current = self.current_session();
        if current != stale {
            // Another request renewed it meanwhile.
            return Ok(current);
        }
        let mut init = self.init.clone();
        init.id = RequestId::String(format!("switchboard-reinitialize-{}", next_serial()));
        let (session_id, response) = handshake(inner, &init, None, None).await?;
        if let Err(e) = response.outcome {
            return Err(Failure::Protocol(format!(
                "re-initializing the expired session failed: {e}"
            )));
        }
        let initialized = Message::Notification(Notification::new(method::INITIALIZED, None));
        let base = request_headers(method::INITIALIZED, None)?;
        let headers = self.headers(session_id.as_ref(), base);
        let out = inner.post(headers, &initialized, Some(method::INITIALIZED.to_owned()));
        accept_one_way(inner.http.send(out).await?).await?;
        *self.session_id.lock().unwrap_or_else(|e| e.into_inner()) = session_id.clone();
        Ok(session_id)
    }

    /// POSTs a notification or a response in the session.
    pub(crate) async fn post_one_way(
        &self,
        inner: &Inner,
        message: &Message,
    ) -> Result<(), Failure> {
        let (method, _, base) = one_way_parts(message)?;
        let headers = self.headers(self.current_session().as_ref(), base);
        let initialized = method.as_deref() == Some(method::INITIALIZED);
        let out = inner.post(headers, message, method);
        accept_one_way(inner.http.send(out).await?).await?;
        if initialized {
            self.open_standalone(inner).await;
        }
        Ok(())
    }

    /// Opens the standalone GET stream on which a 2025-11-25 server sends
    /// requests and notifications that belong to no request (an SDK server
    /// sends a tool's elicitation there). It is open before this returns,
    /// so nothing the server sends during the next call is lost; a server
    /// without one answers 405 and none is used.
    async fn open_standalone(&self, inner: &Inner) {
        let listener = Standalone {
            http: inner.http.clone(),
            endpoint: inner.endpoint.clone(),
            session_id: self.session_id.clone(),
            version: self.version.clone(),
            events: inner.events.clone(),
            server: inner.server.clone(),
        };
        match tokio::time::timeout(STANDALONE_OPEN_TIMEOUT, listener.open(None)).await {
            Ok(Ok(Some(stream))) => {
                let task = tokio::spawn(listener.run(stream));
                let old = self
                    .standalone
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .replace(task);
                if let Some(old) = old {
                    old.abort();
                }
            }
            Ok(Ok(None)) => {
                tracing::debug!(server = %inner.server, "the legacy server offers no standalone stream");
            }
            Ok(Err(e)) => {
                tracing::debug!(server = %inner.server, error = ?e, "could not open the standalone stream");
            }
            Err(_) => {
                tracing::debug!(server = %inner.server, "the standalone stream did not open in time");
            }
        }
    }

    /// Ends the session with a DELETE (best effort: a server may answer 405).
    pub(crate) async fn terminate(&self, inner: &Inner) {
        if let Some(task) = self
            .standalone
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
        let Some(session) = self.current_session() else {
            return;
        };
        let headers = self.headers(Some(&session), HeaderMap::new());
        let out = Outbound {
            method: Method::DELETE,
            uri: inner.endpoint.clone(),
            headers,
            body: bytes::Bytes::new(),
            rpc_method: None,
        };
        match tokio::time::timeout(DELETE_TIMEOUT, inner.http.send(out)).await {
            Ok(Ok(answer)) => {
                tracing::debug!(server = %inner.server, status = answer.status().as_u16(), "legacy session ended");
            }
            Ok(Err(e)) => {
                tracing::debug!(server = %inner.server, error = ?e, "DELETE of the legacy session failed");
            }
            Err(_) => {
                tracing::debug!(server = %inner.server, "DELETE of the legacy session timed out");
            }
        }
    }
}

/// POSTs an `initialize` request; returns the session id the server
/// assigned and the response.
async fn handshake(
    inner: &Inner,
    request: &Request,
    sink: Option<&NotificationSink>,
    session: Option<&HeaderValue>,
) -> Result<(Option<HeaderValue>, Response), Failure> {
    let mut headers = request_headers(&request.method, request.params.as_ref())?;
    if let Some(id) = session {
        headers.insert(super::MCP_SESSION_ID, id.clone());
    }
    let out = inner.post(headers, request, Some(request.method.clone()));
    let answer = inner.http.send(out).await?;
    let status = answer.status();
    if !status.is_success() {
        // Here a refusal may mean "not this era": only a modern error body
        // passes as the answer.
        return response::error_status(answer, Some(&request.id))
            .await
            .map(|r| (None, r));
    }
    let session_id = answer.headers().get(super::MCP_SESSION_ID).cloned();
    let on_request = |r: Request| emit(&inner.events, &inner.server, Incoming::Request(r));
    let routing = Routing {
        server: &inner.server,
        sink,
        on_request: Some(&on_request),
    };
    let max = inner.http.limits.max_body;
    let response = match response::body_kind(&answer)? {
        BodyKind::Json => response::read_json(answer, &request.id, max, &routing).await?,
        BodyKind::EventStream => {
            let mut stream = EventStream::new(answer.into_body(), max);
            let r = stream.response_for(&request.id, &routing).await?;
            stream
                .drain(inner.server.clone(), sink.cloned(), inner.drain_grace)
                .await;
            r
        }
    };
    Ok((session_id, response))
}

/// A legacy server's HTTP error: any JSON-RPC error in the body is the
/// answer (there is no era to tell apart any more).
async fn legacy_error(answer: HttpResponse, id: &RequestId) -> Result<Response, Failure> {
    match response::error_status(answer, Some(id)).await {
        Err(Failure::Status(s)) if !matches!(s.status, 401 | 403) => match s.error {
            Some(error) => Ok(Response::error(Some(id.clone()), error)),
            None => Err(Failure::Status(s)),
        },
        other => other,
    }
}

fn next_serial() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(1);
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// The standalone GET stream of a legacy session.
struct Standalone {
    http: super::conn::Http,
    endpoint: http::Uri,
    session_id: Arc<std::sync::Mutex<Option<HeaderValue>>>,
    version: HeaderValue,
    events: super::Events,
    server: String,
}

impl Standalone {
    /// GETs the stream; `Ok(None)` when the server has none (405, 404…).
    async fn open(&self, last_event_id: Option<&str>) -> Result<Option<EventStream>, Failure> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(super::MCP_PROTOCOL_VERSION, self.version.clone());
        let session = self
            .session_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(id) = session {
            headers.insert(super::MCP_SESSION_ID, id);
        }
        if let Some(last) = last_event_id {
            headers.insert("last-event-id", header_value(last)?);
        }
        let out = Outbound {
            method: Method::GET,
            uri: self.endpoint.clone(),
            headers,
            body: bytes::Bytes::new(),
            rpc_method: None,
        };
        let answer = self.http.send(out).await?;
        if !answer.status().is_success()
            || response::body_kind(&answer).ok() != Some(BodyKind::EventStream)
        {
            return Ok(None);
        }
        Ok(Some(EventStream::new(
            answer.into_body(),
            self.http.limits.max_body,
        )))
    }

    /// Routes the stream's messages to the event sink, reopening it (after
    /// the server's `retry:` delay, backing off on failures) when it ends.
    async fn run(self, mut stream: EventStream) {
        let mut backoff = DEFAULT_RETRY;
        loop {
            let opened = std::time::Instant::now();
            loop {
                match stream.next(&self.server).await {
                    Ok(Some(StreamItem::Message(Message::Request(r)))) => {
                        emit(&self.events, &self.server, Incoming::Request(r));
                    }
                    Ok(Some(StreamItem::Message(Message::Notification(n)))) => {
                        emit(&self.events, &self.server, Incoming::Notification(n));
                    }
                    Ok(Some(StreamItem::Message(Message::Response(r)))) => {
                        tracing::debug!(server = %self.server, id = ?r.id, "response on the standalone stream dropped");
                    }
                    Ok(Some(StreamItem::Other { .. })) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            // A stream the server keeps ending at once is retried ever more
            // slowly, whatever `retry:` it asks for.
            if opened.elapsed() < DEFAULT_RETRY {
                backoff = (backoff * 2).min(STANDALONE_MAX_BACKOFF);
            } else {
                backoff = DEFAULT_RETRY;
            }
            let last = stream.last_event_id.clone();
            let mut delay = stream
                .retry_ms
                .map_or(backoff, Duration::from_millis)
                .max(backoff / 2);
            loop {
                tokio::time::sleep(delay).await;
                match self.open(last.as_deref()).await {
                    Ok(Some(next)) => {
                        stream = next;
                        break;
                    }
                    Ok(None) => {
                        tracing::debug!(server = %self.server, "the standalone stream is gone for good");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(server = %self.server, error = ?e, "reopening the standalone stream failed");
                        backoff = (backoff * 2).min(STANDALONE_MAX_BACKOFF);
                        delay = backoff;
                    }
                }
            }
        }
    }
}
