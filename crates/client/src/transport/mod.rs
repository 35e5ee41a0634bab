//! Transports: carry one request to its one response (DESIGN.md, "One
//! transport abstraction").
//!
//! A transport knows how to move bytes to a server and back; everything
//! above it (`_meta`, timeouts, pagination, MRTR, era fallback) lives once in
//! [`crate::Client`].
//!
//! Messages that belong to no request (a notification without a matching
//! progress token or subscription id, or a request a legacy server sends to
//! the client) go to the transport's [`EventSink`], which the `Client`
//! installs with [`Transport::set_events`].

use std::fmt;
use std::sync::Arc;

use switchboard_wire::{CallToolResult, Era, Notification, Request, RequestId, Response};

use crate::error::TransportError;

#[cfg(feature = "http")]
pub mod http;
pub mod sandbox;
pub(crate) mod spawn;
pub mod stdio;

/// A boxed, sendable future (the one alias of the workspace).
pub use switchboard_wire::BoxFuture;

/// Receives the notifications a transport sees for one request (progress,
/// log messages, listen-stream notifications), in arrival order.
///
/// Called from the transport's reader; it must not block.
pub type NotificationSink = Arc<dyn Fn(Notification) + Send + Sync>;

/// A message from the server that belongs to no pending request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A notification no request claimed: `notifications/message` on stdio,
    /// list-changed notifications outside a listen stream, stale progress.
    Notification(Notification),
    /// A request from the server. Only legacy (2025-11-25) servers send
    /// these (sampling, elicitation, roots, ping); the client answers with
    /// [`Transport::respond`]. Modern servers must not (WIRE-13).
    Request(Request),
}

/// Receives [`Incoming`] messages, in arrival order.
///
/// Called from the transport's reader; it must not block (spawn a task for
/// anything slow).
pub type EventSink = Arc<dyn Fn(Incoming) + Send + Sync>;

/// What a transport answers a `tools/call` with ([`Transport::call_tool`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ToolAnswer {
    /// The response, as [`Transport::request`] gives it.
    Response(Response),
    /// A complete result, read straight from the response.
    Complete(CallToolResult),
}

impl ToolAnswer {
    /// The answer as the response to request `id` (a complete result as
    /// its JSON again).
    pub fn into_response(self, id: RequestId) -> Response {
        match self {
            ToolAnswer::Response(response) => response,
            ToolAnswer::Complete(result) => Response::result(id, result_value(result)),
        }
    }
}

/// A typed tool result as JSON again.
pub(crate) fn result_value(result: CallToolResult) -> serde_json::Value {
    // A result of JSON values with string keys always converts.
    serde_json::to_value(result).unwrap_or_default()
}

/// One request on its way out, with what the transport needs besides the
/// JSON-RPC body.
#[derive(Clone)]
pub struct Outgoing {
    /// The JSON-RPC request, `_meta` already in place. Shared, so the
    /// `Client` gets its params back for an MRTR retry without copying them
    /// up front, and transports that retry (HTTP) clone it for free.
    pub request: Arc<Request>,
    /// `Mcp-Param-{Name}` headers to send (HTTP only; stdio ignores them):
    /// lowercase header name and already-encoded value.
    pub param_headers: Vec<(String, String)>,
    /// Where notifications about this request go; dropped when `None`.
    pub sink: Option<NotificationSink>,
    /// For a `tools/call`: keys of the result's `_meta` the transport may
    /// skip unread ([`ClientConfig::leave_out_result_meta`]). The client
    /// removes them whatever the transport does.
    ///
    /// [`ClientConfig::leave_out_result_meta`]: crate::ClientConfig::leave_out_result_meta
    pub leave_out_meta: Option<fn(&str) -> bool>,
}

impl Outgoing {
    /// A request with no headers and no sink.
    pub fn new(request: Request) -> Self {
        Outgoing {
            request: Arc::new(request),
            param_headers: Vec::new(),
            sink: None,
            leave_out_meta: None,
        }
    }
}

impl fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outgoing")
            .field("request", &self.request)
            .field("param_headers", &self.param_headers)
            .field("sink", &self.sink.is_some())
            .field("leave_out_meta", &self.leave_out_meta.is_some())
            .finish()
    }
}

/// A way to reach one MCP server.
///
/// # Cancel safety
/// Dropping the future of [`Transport::request`] cancels the request: stdio
/// sends `notifications/cancelled`, HTTP closes the response stream. A
/// response that arrives afterwards is dropped silently.
pub trait Transport: Send + Sync + fmt::Debug {
    /// Sends one request and resolves with its response (the message whose
    /// id matches), handing every notification about it to `outgoing.sink`.
    ///
    /// # Errors
    /// [`TransportError`] when the request cannot be sent or the channel
    /// breaks before the response arrives.
    fn request(&self, outgoing: Outgoing) -> BoxFuture<'_, Result<Response, TransportError>>;

    /// Sends a `tools/call` like [`Transport::request`]. A transport that
    /// can read a complete result straight into a [`CallToolResult`] (HTTP,
    /// from a JSON body) answers [`ToolAnswer::Complete`] instead of the
    /// response's JSON tree; anything else (errors, tasks, `input_required`,
    /// a stream) comes back as the response. The default always does that.
    ///
    /// # Errors
    /// As [`Transport::request`].
    fn call_tool(&self, outgoing: Outgoing) -> BoxFuture<'_, Result<ToolAnswer, TransportError>> {
        Box::pin(async move { self.request(outgoing).await.map(ToolAnswer::Response) })
    }

    /// Sends one notification.
    ///
    /// # Errors
    /// [`TransportError`] when it cannot be sent.
    fn notify(&self, notification: Notification) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Answers a request the server sent (legacy servers only; see
    /// [`Incoming::Request`]). The default refuses: transports without a
    /// server-to-client channel have nothing to answer.
    ///
    /// # Errors
    /// [`TransportError`] when it cannot be sent.
    fn respond(&self, response: Response) -> BoxFuture<'_, Result<(), TransportError>> {
        let _ = response;
        Box::pin(async {
            Err(TransportError::closed(
                "",
                "this transport cannot answer server requests",
            ))
        })
    }

    /// Installs the sink for messages that belong to no request. The default
    /// drops them (fine for transports that never see any).
    fn set_events(&self, sink: EventSink) {
        let _ = sink;
    }

    /// Whether this transport sends `Mcp-Param-*` headers, so the `Client`
    /// must compute [`Outgoing::param_headers`] and drop tools whose
    /// `x-mcp-header` annotations are invalid (HTTP-C-12). stdio: `false`.
    fn mirrors_param_headers(&self) -> bool {
        false
    }

    /// The era this server was found to speak earlier in this process, if
    /// the transport remembers one (HTTP: per endpoint; VER-07), so the
    /// `Client` can skip the modern probe. `None` by default.
    fn era_hint(&self) -> Option<Era> {
        None
    }

    /// Shuts the transport down; pending requests fail with
    /// [`TransportError::Closed`].
    fn close(&self) -> BoxFuture<'_, ()>;
}
