//! The little HTTP plumbing both servers share: a hyper HTTP/1.1 server on
//! `127.0.0.1:0` that stops when its handle drops, a request record, and
//! response helpers.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Largest request body read: 1 MiB.
const MAX_BODY: usize = 1024 * 1024;

/// One request as the servers saw it, for tests to inspect.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    /// `GET`, `POST`, ….
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// The decoded form body, for form posts.
    pub form: Vec<(String, String)>,
    /// The JSON body, for JSON posts.
    pub json: Option<Value>,
    /// Every header, names lower-cased (last value wins).
    pub headers: BTreeMap<String, String>,
    /// The raw body.
    pub body: Bytes,
}

impl Seen {
    /// The first query parameter `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        first(&self.query, name)
    }

    /// The first form field `name`.
    pub fn form_param(&self, name: &str) -> Option<&str> {
        first(&self.form, name)
    }

    /// A header value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

fn first<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

pub(crate) type Reply = Response<Full<Bytes>>;
pub(crate) type Handler =
    Arc<dyn Fn(Seen) -> Pin<Box<dyn Future<Output = Reply> + Send>> + Send + Sync>;

/// Serves `handle` on 127.0.0.1:0 over state that needs the server's
/// own address (its base URL), so it is built after the bind: until
/// `set_state` is given it, requests are answered 503 "starting".
///
/// # Panics
/// When no loopback port can be bound (a test server cannot go on).
pub(crate) async fn serve_state<S, F>(handle: fn(&S, Seen) -> Reply, state: F) -> (Running, Arc<S>)
where
    S: Send + Sync + 'static,
    F: FnOnce(SocketAddr) -> S,
{
    let slot: Arc<std::sync::OnceLock<Arc<S>>> = Arc::new(std::sync::OnceLock::new());
    let handler_slot = slot.clone();
    let handler: Handler = Arc::new(move |seen| {
        let shared = handler_slot.get().cloned();
        Box::pin(async move {
            match shared {
                Some(shared) => handle(&shared, seen),
                None => text(StatusCode::SERVICE_UNAVAILABLE, "starting"),
            }
        })
    });
    let running = serve(handler).await.expect("bind 127.0.0.1:0");
    let shared = Arc::new(state(running.addr));
    let _ = slot.set(shared.clone());
    (running, shared)
}

/// A running server; dropping it stops accepting and closes connections.
#[derive(Debug)]
pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `127.0.0.1:0` and serves `handler`.
pub(crate) async fn serve(handler: Handler) -> std::io::Result<Running> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let handler = handler.clone();
            connections.spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let handler = handler.clone();
                    async move {
                        let reply = match read(request).await {
                            Ok(seen) => handler(seen).await,
                            Err(status) => text(status, "bad request"),
                        };
                        Ok::<_, Infallible>(reply)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
            // Reap finished connections so the set does not grow forever.
            while connections.try_join_next().is_some() {}
        }
    });
    Ok(Running { addr, task })
}

async fn read(request: Request<Incoming>) -> Result<Seen, StatusCode> {
    let (parts, body) = request.into_parts();
    let body = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|_| StatusCode::PAYLOAD_TOO_LARGE)?
        .to_bytes();
    let query = parts
        .uri
        .query()
        .map(|q| decode_pairs(q.as_bytes()))
        .unwrap_or_default();
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let form = if content_type.starts_with("application/x-www-form-urlencoded") {
        decode_pairs(&body)
    } else {
        Vec::new()
    };
    let json = if content_type.starts_with("application/json") {
        serde_json::from_slice(&body).ok()
    } else {
        None
    };
    Ok(Seen {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query,
        form,
        json,
        headers: headers(&parts.headers),
        body,
    })
}

fn decode_pairs(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn headers(map: &HeaderMap) -> BTreeMap<String, String> {
    map.iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// Decodes one `application/x-www-form-urlencoded` component.
pub(crate) fn form_decode(component: &str) -> String {
    let mut out = Vec::with_capacity(component.len());
    let bytes = component.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let decoded = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match decoded {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn json(status: StatusCode, value: &Value) -> Reply {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-store")
        .body(Full::new(Bytes::from(value.to_string())))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

pub(crate) fn text(status: StatusCode, body: &str) -> Reply {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

pub(crate) fn redirect(location: &str) -> Reply {
    Response::builder()
        .status(StatusCode::FOUND)
        .header(http::header::LOCATION, location)
        .body(Full::new(Bytes::new()))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

pub(crate) fn with_header(mut reply: Reply, name: &'static str, value: &str) -> Reply {
    if let Ok(v) = http::HeaderValue::from_str(value) {
        reply.headers_mut().insert(name, v);
    }
    reply
}

pub(crate) fn is(seen: &Seen, method: Method, path: &str) -> bool {
    seen.method == method.as_str() && seen.path == path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_components_decode() {
        assert_eq!(form_decode("my+client%3A1"), "my client:1");
        assert_eq!(form_decode("p%40ss+w%2Brd%2F%C3%A9"), "p@ss w+rd/é");
        assert_eq!(form_decode("100%"), "100%");
        assert_eq!(form_decode("%zz"), "%zz");
    }
}
