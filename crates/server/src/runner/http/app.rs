//! App routes: a path prefix served by the embedding application (the
//! gateway's console) with the whole request in hand — method, path,
//! query, headers, body — and an answer with its own headers, whole or
//! streamed (server-sent events). The runner still checks `Host` first,
//! refuses a token in the URL, and resolves a bearer token when one is
//! sent (a bad one is refused as on the MCP endpoint); a request without
//! one reaches the route with no principal, and the route decides (a
//! session cookie, a login page). No `Origin` check: the route makes its
//! own, since it serves browsers.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode};
use tokio::sync::mpsc;

use super::auth::authenticate;
use super::{HttpResponse, State};
use crate::auth::Principal;
use crate::runner::body::Body;

/// A request to an app route.
#[derive(Debug)]
#[non_exhaustive]
pub struct AppRequest {
    /// The method.
    pub method: Method,
    /// The path (starting with the route's prefix).
    pub path: String,
    /// The query string, without `?`.
    pub query: Option<String>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The body (empty for GET), read within the runner's body limit.
    pub body: Bytes,
    /// The caller behind the request's bearer token, when it sent one and
    /// the runner checks tokens.
    pub principal: Option<Arc<Principal>>,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Whether the connection is HTTPS.
    pub tls: bool,
}

/// An app route's answer.
#[derive(Debug)]
#[non_exhaustive]
pub struct AppResponse {
    /// The HTTP status.
    pub status: u16,
    /// The response headers (names lower-case); one that is not a valid
    /// header is dropped.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: AppBody,
}

/// An app route's answer body.
#[derive(Debug)]
pub enum AppBody {
    /// A complete body.
    Full(Vec<u8>),
    /// Chunks as they are produced (server-sent events); ends when the
    /// sender is dropped, and the receiver is dropped when the client
    /// goes away (the feeding task sees its send fail).
    Stream(mpsc::Receiver<Bytes>),
}

impl AppResponse {
    /// A whole answer with `status`, `content_type` and `body`.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> AppResponse {
        AppResponse {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: AppBody::Full(body.into()),
        }
    }

    /// The same answer with one more header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> AppResponse {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// An application's handler of every path under a prefix.
pub type AppRoute =
    Arc<dyn Fn(AppRequest) -> Pin<Box<dyn Future<Output = AppResponse> + Send>> + Send + Sync>;

/// Whether `path` is `prefix` or under it (`prefix/...`).
pub(super) fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl State {
    /// Runs the app route for `req` (whose path is under its prefix).
    pub(super) async fn app(
        &self,
        route: &AppRoute,
        req: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> HttpResponse {
        if let Err(refusal) = self.admit(&req, peer) {
            return refusal;
        }
        let principal = match &self.options.auth {
            Some(auth) if req.headers().contains_key(AUTHORIZATION) => {
                match Box::pin(authenticate(
                    auth,
                    &self.options.dpop,
                    req.method(),
                    req.headers(),
                    peer,
                ))
                .await
                {
                    Ok(p) => Some(Arc::new(p)),
                    Err(refusal) => return refusal,
                }
            }
            _ => None,
        };
        let (parts, mut body) = req.into_parts();
        let body = if parts.method == Method::POST {
            match self.request_body(&parts.headers, &mut body).await {
                Ok(b) => b,
                Err(refusal) => return refusal,
            }
        } else {
            Bytes::new()
        };
        let request = AppRequest {
            method: parts.method,
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers,
            body,
            principal,
            peer,
            tls: self.options.tls.is_some(),
        };
        let answer = route(request).await;
        let mut r = Response::new(match answer.body {
            AppBody::Full(bytes) => Body::full(bytes),
            AppBody::Stream(rx) => Body::Stream(rx),
        });
        *r.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
        for (name, value) in answer.headers {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                r.headers_mut().append(n, v);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::under;

    #[test]
    fn a_prefix_covers_itself_and_what_is_below_it_only() {
        assert!(under("/console", "/console"));
        assert!(under("/console/tools", "/console"));
        assert!(!under("/consoles", "/console"));
        assert!(!under("/mcp", "/console"));
    }
}
