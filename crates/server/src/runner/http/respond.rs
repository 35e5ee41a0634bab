//! The shapes of the runner's responses: JSON, refusals with an id-less
//! JSON-RPC error, SSE streams and their frames.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};
use switchboard_wire::sse::{encode_comment, encode_event};
use switchboard_wire::{ErrorCode, ErrorObject, RequestId};
use tokio::sync::mpsc;

use super::HttpResponse;
use crate::dispatch::frame_error;
use crate::error::Fault;
use crate::runner::body::Body;

pub(super) fn json_response(status: u16, body: Vec<u8>) -> HttpResponse {
    let mut r = Response::new(Body::full(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// An HTTP-level refusal with an id-less JSON-RPC error body.
pub(super) fn refuse(status: StatusCode, message: &str) -> HttpResponse {
    let error = ErrorObject::new(ErrorCode::InvalidRequest, message);
    json_response(status.as_u16(), frame_error(None, &error))
}

pub(super) fn fault_response(id: Option<&RequestId>, fault: &Fault) -> HttpResponse {
    json_response(fault.http_status(), frame_error(id, &fault.error))
}

pub(super) fn sse_response(rx: mpsc::Receiver<Bytes>) -> HttpResponse {
    let mut r = Response::new(Body::Stream(rx));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // HTTP-S-11: no proxy buffering.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

pub(super) fn sse_frame(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 8);
    encode_event(&mut out, None, None, &String::from_utf8_lossy(message));
    Bytes::from(out)
}

pub(super) fn keep_alive_frame() -> Bytes {
    let mut out = Vec::with_capacity(4);
    encode_comment(&mut out, "");
    Bytes::from(out)
}

pub(super) fn status_only(status: StatusCode) -> HttpResponse {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

pub(super) fn too_large(limit: usize) -> HttpResponse {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the request body exceeds this server's limit of {limit} bytes"),
    )
}

/// The 405 of the MCP endpoint: POST is what it takes.
pub(super) fn post_only() -> HttpResponse {
    let mut r = refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        "this MCP endpoint accepts POST only",
    );
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    r
}

/// The 408 of a request body that did not arrive in time: the connection
/// is closed after it, since the rest of the body may still come.
pub(super) fn too_slow(deadline: Duration) -> HttpResponse {
    let mut r = refuse(
        StatusCode::REQUEST_TIMEOUT,
        &format!("the request body was not all there within {deadline:?}"),
    );
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}
