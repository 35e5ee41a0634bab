//! One request's path through the runner: the checks in the order the
//! module docs give, then where it goes (a plain route, the fast
//! `tools/call` path, the general path, a legacy session, a peer replica).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use switchboard_wire::meta::PROTOCOL_VERSION;
use switchboard_wire::types::method;
use switchboard_wire::{ErrorCode, ErrorObject, Message, Request, version};

use super::auth::{Recheck, auth_failure, has_query_token};
use super::options::PlainRoute;
use super::request_body::{BodyError, DISCARD_AT_MOST, discard, read_body};
use super::respond::{
    fault_response, json_response, post_only, refuse, status_only, too_large, too_slow,
};
use super::session::UNKNOWN_SESSION;
use super::stream::{Routed, wants_notifications};
use super::{HttpResponse, State};
use crate::auth::{AuthError, Principal};
use crate::dispatch::frame_error;
use crate::error::Fault;
use crate::fast::{self, ToolCall};
use crate::legacy::Session;
use crate::runner::body::Body;
use crate::runner::headers::{self, Mirror};

impl State {
    /// Answers one request: a path other than the MCP endpoint, or the
    /// endpoint's checks in order ([`State::endpoint`]).
    pub(super) async fn handle(
        self: Arc<Self>,
        req: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> HttpResponse {
        // HTTP-S-02, on every path: DNS rebinding would read whatever is
        // served here, health and metrics included.
        let host = match self.guard.check_host(req.headers()) {
            Ok(host) => host,
            Err(refusal) => return self.refuse_guard(refusal, peer),
        };
        if req.uri().path() != self.options.path {
            let path = req.uri().path();
            if let Some((_, app)) = self
                .options
                .apps
                .iter()
                .find(|(p, _)| super::app::under(path, p))
            {
                return Box::pin(self.app(app, req, peer)).await;
            }
            return self.off_endpoint(&req).await;
        }
        if let Err(refusal) = self.guard.check_origin(req.headers(), host) {
            return self.refuse_guard(refusal, peer);
        }
        match self.endpoint(req, peer).await {
            Ok(answer) | Err(answer) => answer,
        }
    }

    /// The refusal of a foreign (or malformed) `Host` or `Origin`.
    fn refuse_guard(&self, (status, reason): (u16, &str), peer: SocketAddr) -> HttpResponse {
        tracing::warn!(%peer, "refused: {reason}");
        refuse(
            StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
            reason,
        )
    }

    /// The MCP endpoint: each step either lets the request on or answers
    /// it with a refusal (the `Err`), in the order the module docs give.
    async fn endpoint(
        self: Arc<Self>,
        req: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> Result<HttpResponse, HttpResponse> {
        self.admit(&req, peer)?;
        let ending_session = match *req.method() {
            Method::POST => {
                json_content(req.headers())?;
                false
            }
            // Ending a session is a request like any other.
            Method::DELETE => true,
            _ => return Err(post_only()),
        };
        let principal = self.caller(&req, peer).await?;
        if ending_session {
            return Ok(self.end_session(req, principal.as_deref(), peer).await);
        }
        let (parts, mut body) = req.into_parts();
        let body = self.request_body(&parts.headers, &mut body).await?;
        Ok(self.deliver(parts, body, principal, peer).await)
    }

    /// A path other than the MCP endpoint: a plain route, the Protected
    /// Resource Metadata document, or 404.
    async fn off_endpoint(&self, req: &http::Request<hyper::body::Incoming>) -> HttpResponse {
        let path = req.uri().path();
        if let Some((_, route)) = self.options.routes.iter().find(|(p, _)| p == path) {
            return plain_route(req.method(), route).await;
        }
        self.other_path(req)
    }

    /// Never a token in the URL (`Host` and `Origin` are checked before).
    // The refusal is the response itself, returned by value as an answer
    // is: boxing it would only add an allocation.
    #[allow(clippy::result_large_err)]
    pub(super) fn admit(
        &self,
        req: &http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> Result<(), HttpResponse> {
        if let Some(auth) = &self.options.auth {
            // AUTH-C-21 / RFC 6750 §2.3: never a token in the URL, not even
            // next to a good header (AUTH-S-06).
            if has_query_token(req.uri().query()) {
                let error = AuthError::InvalidRequest(
                    "access tokens are not accepted in the URL; send them in the Authorization header".into(),
                );
                return Err(auth_failure(auth, &error, true, None, Some(peer)));
            }
        }
        Ok(())
    }

    /// The body of a POST, read within [`HttpOptions::max_body`]: 413 past
    /// it (declared or streamed), 400 when the connection fails under it,
    /// 408 (and the connection closed) when it is not all there within
    /// [`HttpOptions::body_timeout`].
    ///
    /// [`HttpOptions::max_body`]: super::HttpOptions::max_body
    /// [`HttpOptions::body_timeout`]: super::HttpOptions::body_timeout
    pub(super) async fn request_body(
        &self,
        headers: &HeaderMap,
        body: &mut hyper::body::Incoming,
    ) -> Result<Bytes, HttpResponse> {
        let limit = self.options.max_body;
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(declared) = declared.filter(|n| *n > limit as u64) {
            if declared - limit as u64 <= DISCARD_AT_MOST as u64 {
                discard(body).await;
            }
            return Err(too_large(limit));
        }
        let deadline = self.options.body_timeout;
        let Ok(read) = tokio::time::timeout(deadline, read_body(body, limit)).await else {
            tracing::debug!("refused: the request body was not all there within {deadline:?}");
            return Err(too_slow(deadline));
        };
        match read {
            Ok(b) => Ok(b),
            Err(BodyError::TooLarge) => {
                discard(body).await;
                Err(too_large(limit))
            }
            Err(BodyError::Unreadable) => Err(refuse(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            )),
        }
    }

    /// Where a read POST goes: the replica holding its session, the fast
    /// `tools/call` path, or by JSON-RPC message kind.
    async fn deliver(
        self: Arc<Self>,
        parts: http::request::Parts,
        body: Bytes,
        principal: Option<Arc<Principal>>,
        peer: SocketAddr,
    ) -> HttpResponse {
        // A legacy session lives in the replica that opened it.
        if let Some((replica, url)) = self.session_holder(&parts.headers) {
            return Box::pin(self.send_on(None, &replica, &url, &parts, body)).await;
        }
        if let Some(call) = fast::tool_call(&body) {
            return self.tool_call(call, &parts.headers, principal).await;
        }
        let message = match Message::from_slice(&body) {
            Ok(m) => m,
            Err(e) => {
                let error = ErrorObject::new(e.code(), e.to_string());
                return json_response(400, frame_error(e.id(), &error));
            }
        };
        match message {
            // Boxed: the general path's future is several times the fast
            // path's, and hyper moves the request future by value.
            Message::Request(request) => {
                if let Some((replica, url)) = self.holder_of(&request, &parts.headers) {
                    let id = Some(&request.id);
                    return Box::pin(self.send_on(id, &replica, &url, &parts, body)).await;
                }
                Box::pin(self.request(request, &parts.headers, principal, peer)).await
            }
            Message::Notification(_) => {
                // HTTP-S-06: accepted, nothing to say.
                status_only(StatusCode::ACCEPTED)
            }
            Message::Response(response) => {
                let session = self.session(&parts.headers, principal.as_deref(), peer);
                if session.is_some_and(|s| s.resolve(response)) {
                    status_only(StatusCode::ACCEPTED)
                } else {
                    refuse(
                        StatusCode::BAD_REQUEST,
                        "a JSON-RPC response here must answer a request this server sent",
                    )
                }
            }
        }
    }

    /// Answers the paths the server does not know.
    pub(super) fn other_path(&self, req: &http::Request<hyper::body::Incoming>) -> HttpResponse {
        if let Some(auth) = &self.options.auth {
            let path = req.uri().path();
            let well_known = auth.metadata.well_known_path();
            if path == well_known || path == "/.well-known/oauth-protected-resource" {
                if req.method() != Method::GET {
                    return status_only(StatusCode::METHOD_NOT_ALLOWED);
                }
                let doc = serde_json::to_vec(&auth.metadata.document()).unwrap_or_default();
                return json_response(200, doc);
            }
        }
        let mut r = Response::new(Body::full("not found"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        r
    }

    pub(super) async fn request(
        self: Arc<Self>,
        request: Request,
        headers: &HeaderMap,
        principal: Option<Arc<Principal>>,
        peer: SocketAddr,
    ) -> HttpResponse {
        let legacy_on = self.server.inner.sessions.is_some();
        let header_version = headers
            .get(&headers::VERSION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        let modern_header = header_version.is_some_and(|v| !version::LEGACY_ACCEPTED.contains(&v));
        let modern_meta = request
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(PROTOCOL_VERSION))
            .is_some();
        if legacy_on && !modern_header && !modern_meta {
            // Legacy requests skip the mirrored headers, not the scopes.
            if let Some(r) = self.authorize_request(&request, principal.as_deref()) {
                return r;
            }
            if request.method == method::INITIALIZE {
                return self.initialize(&request, principal.as_deref());
            }
            if headers.contains_key(&headers::SESSION_ID) {
                return match self.session(headers, principal.as_deref(), peer) {
                    Some(session) => self.route(request, principal, Some(session), None).await,
                    // Legacy rule: an unknown session is 404.
                    None => fault_response(
                        Some(&request.id),
                        &Fault::new(
                            crate::error::FaultKind::MethodNotFound,
                            ErrorObject::new(ErrorCode::InvalidRequest, UNKNOWN_SESSION),
                        ),
                    ),
                };
            }
        }
        let registry = self.server.registry();
        if let Err(fault) = headers::validate(headers, &Mirror::of(&request), &registry) {
            return fault_response(Some(&request.id), &fault);
        }
        drop(registry);
        if let Some(r) = self.authorize_request(&request, principal.as_deref()) {
            return r;
        }
        let recheck = self.recheck(&request, headers, principal.as_deref());
        self.route(request, principal, None, recheck).await
    }

    /// Routes a request through the general path.
    pub(super) async fn route(
        self: Arc<Self>,
        request: Request,
        principal: Option<Arc<Principal>>,
        session: Option<Arc<Session>>,
        recheck: Option<Recheck>,
    ) -> HttpResponse {
        let id = request.id.clone();
        let streams = session.is_some()
            || request.method == method::SUBSCRIPTIONS_LISTEN
            || wants_notifications(request.params.as_ref());
        self.run(
            Routed {
                id,
                streams,
                principal,
                session,
                recheck,
            },
            move |server, incoming| async move { server.dispatch(request, incoming).await },
        )
        .await
    }

    /// A `tools/call` read by the fast path: the same header checks and
    /// authorization as any request, then the router's fast entry.
    pub(super) async fn tool_call(
        self: Arc<Self>,
        mut call: ToolCall<'_>,
        headers: &HeaderMap,
        principal: Option<Arc<Principal>>,
    ) -> HttpResponse {
        let registry = self.server.registry();
        // Arguments kept as text stay so only for a tool that reads its
        // type from them and mirrors none of them in headers; for any
        // other they are parsed once, here, rather than copied and parsed
        // later.
        let keeps_text = registry
            .tool(&call.name)
            .is_none_or(|entry| entry.flat.is_some() && entry.header_params.is_empty());
        if !keeps_text && let Err(e) = call.arguments.parse() {
            let fault = Fault::internal(format!("the call's arguments could not be read: {e}"));
            return fault_response(Some(&call.id), &fault);
        }
        let mirror = Mirror {
            method: method::TOOLS_CALL,
            meta_version: Some(&call.meta.protocol_version),
            name: Some(&call.name),
            arguments: call
                .arguments
                .parsed()
                .and_then(serde_json::Value::as_object),
        };
        if let Err(fault) = headers::validate(headers, &mirror, &registry) {
            return fault_response(Some(&call.id), &fault);
        }
        drop(registry);
        if let Some(r) = self.authorize(method::TOOLS_CALL, Some(&call.name), principal.as_deref())
        {
            return r;
        }
        let routed = Routed {
            id: call.id.clone(),
            streams: call.meta.progress_token.is_some() || call.meta.log_level.is_some(),
            principal,
            session: None,
            recheck: None,
        };
        let call = call.into_owned();
        self.run(routed, move |server, incoming| async move {
            server.dispatch_tool_call(call, incoming).await
        })
        .await
    }
}

/// Runs a plain route for a GET or HEAD; anything else is 405.
pub(super) async fn plain_route(method: &Method, route: &PlainRoute) -> HttpResponse {
    if *method != Method::GET && *method != Method::HEAD {
        let mut r = status_only(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let answer = route().await;
    let mut r = Response::new(Body::full(answer.body));
    *r.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&answer.content_type) {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

/// A POST body must be JSON when its type is given at all.
// As `State::admit`: the refusal is the response itself.
#[allow(clippy::result_large_err)]
fn json_content(headers: &HeaderMap) -> Result<(), HttpResponse> {
    let Some(ct) = headers.get(CONTENT_TYPE) else {
        return Ok(());
    };
    let json = ct
        .as_bytes()
        .trim_ascii_start()
        .get(..16)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"application/json"));
    if json {
        Ok(())
    } else {
        Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the request body must be application/json",
        ))
    }
}
