//! Legacy (2025-11-25) sessions over HTTP: `initialize` opens one bound
//! to its principal, `Mcp-Session-Id` names it, DELETE ends it.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use switchboard_wire::Request;

use super::respond::{fault_response, json_response, post_only, refuse, status_only};
use super::{HttpResponse, State};
use crate::auth::Principal;
use crate::dispatch::frame_result;
use crate::legacy::Session;
use crate::runner::headers;

/// The answer to a legacy session id that names no session this principal
/// may use.
pub(super) const UNKNOWN_SESSION: &str = "unknown or expired session; send initialize again";

impl State {
    /// The legacy session the request names, if it is live and belongs to
    /// `principal`. A session opened by another principal is `None`, as an
    /// unknown one: its id is not a credential, and the 404 that follows
    /// does not tell whether it exists.
    pub(super) fn session(
        &self,
        headers: &HeaderMap,
        principal: Option<&Principal>,
        peer: SocketAddr,
    ) -> Option<Arc<Session>> {
        let sessions = self.server.inner.sessions.as_ref()?;
        let id = headers.get(&headers::SESSION_ID)?.to_str().ok()?;
        let session = sessions.get(id.trim())?;
        if !session.belongs_to(principal) {
            // Neither the session id nor the token is logged.
            tracing::debug!(
                %peer,
                subject = principal.map_or("", |p| p.subject.as_str()),
                "refused: the legacy session belongs to another principal; answered as unknown"
            );
            return None;
        }
        Some(session)
    }

    /// A DELETE, from a caller already authenticated: sent on to the
    /// replica holding the session it names, else [`State::delete`].
    pub(super) async fn end_session(
        &self,
        req: http::Request<hyper::body::Incoming>,
        principal: Option<&Principal>,
        peer: SocketAddr,
    ) -> HttpResponse {
        if let Some((replica, url)) = self.session_holder(req.headers()) {
            let (head, _) = req.into_parts();
            return Box::pin(self.send_on(None, &replica, &url, &head, Bytes::new())).await;
        }
        self.delete(req.headers(), principal, peer)
    }

    /// A legacy client ending its session: 200, or 404 when the session is
    /// unknown, expired or another principal's; 405 without a session.
    fn delete(
        &self,
        headers: &HeaderMap,
        principal: Option<&Principal>,
        peer: SocketAddr,
    ) -> HttpResponse {
        if let Some(sessions) = &self.server.inner.sessions {
            if headers.contains_key(&headers::SESSION_ID) {
                return match self.session(headers, principal, peer) {
                    Some(session) if sessions.remove(&session.id) => status_only(StatusCode::OK),
                    _ => refuse(StatusCode::NOT_FOUND, UNKNOWN_SESSION),
                };
            }
        }
        post_only()
    }

    /// A legacy `initialize`: opens a session bound to `principal`.
    pub(super) fn initialize(
        &self,
        request: &Request,
        principal: Option<&Principal>,
    ) -> HttpResponse {
        match self.server.initialize(request.params.as_ref(), principal) {
            Ok((session, result)) => {
                let id = session.id.clone();
                if let Some(sessions) = &self.server.inner.sessions {
                    sessions.insert(session);
                }
                let mut r = json_response(200, frame_result(&request.id, &result, 0));
                if let Ok(v) = HeaderValue::from_str(&id) {
                    r.headers_mut().insert(headers::SESSION_ID, v);
                }
                r
            }
            Err(f) => fault_response(Some(&request.id), &f),
        }
    }
}
