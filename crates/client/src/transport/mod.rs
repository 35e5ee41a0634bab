//! Transports: carry one request to its one response (DESIGN.md, "One
//! transport abstraction").
//!
//! A transport knows how to move bytes to a server and back; everything
//! above it (`_meta`, timeouts, pagination, MRTR, era fallback) lives once in
//! [`crate::Client`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use switchboard_wire::{Notification, Request, Response};

use crate::error::TransportError;

/// A boxed, sendable future, so transports can be used as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Receives the notifications a transport sees for one request (progress,
/// log messages, listen-stream notifications), in arrival order.
///
/// Called from the transport's reader; it must not block.
pub type NotificationSink = Arc<dyn Fn(Notification) + Send + Sync>;

/// One request on its way out, with what the transport needs besides the
/// JSON-RPC body.
#[derive(Clone)]
pub struct Outgoing {
    /// The JSON-RPC request, `_meta` already in place.
    pub request: Request,
    /// `Mcp-Param-{Name}` headers to send (HTTP only; stdio ignores them):
    /// lowercase header name and already-encoded value.
    pub param_headers: Vec<(String, String)>,
    /// Where notifications about this request go; dropped when `None`.
    pub sink: Option<NotificationSink>,
}

impl fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outgoing")
            .field("request", &self.request)
            .field("param_headers", &self.param_headers)
            .field("sink", &self.sink.is_some())
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

    /// Sends one notification.
    ///
    /// # Errors
    /// [`TransportError`] when it cannot be sent.
    fn notify(&self, notification: Notification) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Shuts the transport down; pending requests fail with
    /// [`TransportError::Closed`].
    fn close(&self) -> BoxFuture<'_, ()>;
}
