//! The Streamable HTTP runner, on hyper 1.
//!
//! One endpoint accepting POST (HTTP-S-01); GET and DELETE get 405 (legacy
//! sessions may DELETE themselves, with a token when one is required; an
//! unknown session is 404 then). Every request, on any path, first has its
//! `Host` checked (403 foreign, 400 repeated or malformed: DNS rebinding
//! would read health and metrics too). A request to the endpoint is then
//! checked in this order: `Origin` (403), a token in the URL (400), method
//! (405), bearer token (400 malformed, 401, 503), body size (413),
//! JSON-RPC envelope (400), mirrored headers (400 + -32020), scopes (403),
//! then routed. A request whose `_meta` asks for neither progress nor logs is
//! answered inline with `application/json`; otherwise the answer switches
//! to an SSE stream (`X-Accel-Buffering: no`) as soon as the handler sends
//! a notification. Closing that stream cancels the handler (HTTP-S-12).
//! `subscriptions/listen` is always a stream, with keep-alive comments.
//!
//! Layout:
//! - `options`: [`HttpOptions`], the runner's settings, and plain routes;
//! - `connection`: the accept loop, one task per connection, shutdown;
//! - `limits`: the connection cap, eviction of idle connections, per-peer
//!   caps;
//! - `timed`: a connection's header, idle and write deadlines;
//! - `route`: one request's checks in order, then where it goes;
//! - `app`: app routes, a prefix served by the application;
//! - `auth`: bearer tokens, DPoP proofs, scopes, refusals;
//! - `request_body`: reading a request body within its limit;
//! - `stream`: running a routed request, answering in JSON or SSE;
//! - `session`: legacy (2025-11-25) sessions;
//! - `replica`: requests whose work lives on a peer replica;
//! - `respond`: the response shapes shared by all of the above.

use http::Response;

use crate::runner::body::Body;
use crate::runner::forward;
use crate::runner::headers::Guard;
use crate::server::Server;

mod app;
mod auth;
mod connection;
mod limits;
mod options;
mod replica;
mod request_body;
mod respond;
mod route;
mod session;
mod stream;
mod timed;

pub use app::{AppBody, AppRequest, AppResponse, AppRoute};
pub use connection::{bind_and_serve, serve};
pub use options::{HttpOptions, PlainResponse, PlainRoute};

/// What every request of one [`serve`] shares.
struct State {
    server: Server,
    guard: Guard,
    options: HttpOptions,
    /// The open connections to the replica's peers.
    peers: forward::Peers,
}

/// The response every step of the runner answers with.
type HttpResponse = Response<Body>;
