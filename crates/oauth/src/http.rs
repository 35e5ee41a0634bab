//! The small HTTP client the OAuth flow uses for metadata, registration and
//! token requests: the same hyper + rustls (ring) stack as the transport,
//! bounded bodies, one timeout per exchange, no redirects followed, and the
//! rule that authorization traffic goes over HTTPS (plain HTTP only to
//! loopback hosts, where tests and local servers live).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use http::{Method, Request};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde_json::Value;

use super::error::OAuthError;
use super::uri::HttpUrl;
use switchboard_client::net::{default_tls, error_chain};

/// Largest metadata, registration or token response accepted: 1 MiB.
const MAX_BODY: usize = 1024 * 1024;

const UA: &str = concat!("switchboard/", env!("CARGO_PKG_VERSION"));

/// One HTTP answer.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Reply {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as a JSON object.
    pub(crate) fn json_object(&self) -> Result<serde_json::Map<String, Value>, String> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err("the body is not a JSON object".into()),
            Err(e) => Err(format!("the body is not JSON: {e}")),
        }
    }
}

/// The HTTP client of the OAuth flow.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    allow_insecure: bool,
}

impl std::fmt::Debug for OAuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHttp")
            .field("timeout", &self.timeout)
            .field("allow_insecure", &self.allow_insecure)
            .finish_non_exhaustive()
    }
}

impl OAuthHttp {
    pub(crate) fn new(
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
        allow_insecure: bool,
    ) -> Result<OAuthHttp, OAuthError> {
        let tls = match tls {
            Some(config) => config,
            None => default_tls().map_err(OAuthError::Config)?,
        };
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(timeout));
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config((*tls).clone())
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = HyperClient::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(OAuthHttp {
            client,
            timeout,
            allow_insecure,
        })
    }

    /// Parses `url` and checks it may carry authorization traffic: HTTPS,
    /// or HTTP to a loopback host (security considerations, "Communication
    /// Security").
    pub(crate) fn check_url(&self, url: &str, what: &'static str) -> Result<HttpUrl, OAuthError> {
        let parsed = HttpUrl::parse(url).map_err(|reason| OAuthError::InvalidDocument {
            what,
            url: url.to_owned(),
            reason,
        })?;
        if parsed.scheme() != "https" && !parsed.is_loopback() && !self.allow_insecure {
            return Err(OAuthError::InvalidDocument {
                what,
                url: url.to_owned(),
                reason: "authorization endpoints must use https (plain http is accepted for loopback hosts only)".into(),
            });
        }
        Ok(parsed)
    }

    /// `GET url` with `Accept: application/json`.
    pub(crate) async fn get_json(&self, url: &str) -> Result<Reply, OAuthError> {
        self.send(Method::GET, url, "application/json", None, None)
            .await
    }

    /// `GET url` without following a redirect.
    pub(crate) async fn get(&self, url: &str) -> Result<Reply, OAuthError> {
        self.send(Method::GET, url, "text/html, */*", None, None)
            .await
    }

    /// `POST url` with a form body, and an `Authorization` header when given.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        authorization: Option<HeaderValue>,
    ) -> Result<Reply, OAuthError> {
        self.post_form_with(url, form, authorization, None).await
    }

    /// [`OAuthHttp::post_form`] with a `DPoP` proof header when given.
    pub(crate) async fn post_form_with(
        &self,
        url: &str,
        form: &[(&str, &str)],
        authorization: Option<HeaderValue>,
        dpop: Option<&str>,
    ) -> Result<Reply, OAuthError> {
        let body = {
            let mut serializer = form_urlencoded::Serializer::new(String::new());
            for (name, value) in form {
                serializer.append_pair(name, value);
            }
            serializer.finish()
        };
        let content = ("application/x-www-form-urlencoded", Bytes::from(body));
        self.send_with(
            Method::POST,
            url,
            "application/json",
            Some(content),
            authorization,
            dpop,
        )
        .await
    }

    /// `POST url` with a JSON body.
    pub(crate) async fn post_json(&self, url: &str, body: &Value) -> Result<Reply, OAuthError> {
        let bytes = Bytes::from(body.to_string());
        self.send(
            Method::POST,
            url,
            "application/json",
            Some(("application/json", bytes)),
            None,
        )
        .await
    }

    /// `POST url` with a raw body of `content_type`, for probing a server.
    pub(crate) async fn post_raw(
        &self,
        url: &str,
        content_type: &'static str,
        accept: &'static str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Result<Reply, OAuthError> {
        let target = shown(url);
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(CONTENT_TYPE, content_type)
            .header(ACCEPT, accept)
            .header(USER_AGENT, UA);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| http_error(&target, e.to_string()))?;
        self.exchange(request, &target).await
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        accept: &'static str,
        body: Option<(&'static str, Bytes)>,
        authorization: Option<HeaderValue>,
    ) -> Result<Reply, OAuthError> {
        self.send_with(method, url, accept, body, authorization, None)
            .await
    }

    async fn send_with(
        &self,
        method: Method,
        url: &str,
        accept: &'static str,
        body: Option<(&'static str, Bytes)>,
        authorization: Option<HeaderValue>,
        dpop: Option<&str>,
    ) -> Result<Reply, OAuthError> {
        let target = shown(url);
        let mut request = Request::builder()
            .method(method.clone())
            .uri(url)
            .header(ACCEPT, accept)
            .header(USER_AGENT, UA);
        if let Some(value) = authorization {
            request = request.header(AUTHORIZATION, value);
        }
        if let Some(proof) = dpop {
            let mut value = HeaderValue::from_str(proof)
                .map_err(|_| http_error(&target, "the DPoP proof is not a header value".into()))?;
            value.set_sensitive(true);
            request = request.header("dpop", value);
        }
        let request = match body {
            Some((content_type, bytes)) => request
                .header(CONTENT_TYPE, content_type)
                .body(Full::new(bytes)),
            None => request.body(Full::new(Bytes::new())),
        }
        .map_err(|e| http_error(&target, e.to_string()))?;
        tracing::debug!(%method, url = %target, "oauth request");
        self.exchange(request, &target).await
    }

    async fn exchange(
        &self,
        request: Request<Full<Bytes>>,
        target: &str,
    ) -> Result<Reply, OAuthError> {
        let work = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| http_error(target, error_chain(&e)))?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_BODY)
                .collect()
                .await
                .map_err(|e| http_error(target, format!("reading the body failed: {e}")))?
                .to_bytes();
            Ok(Reply {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(http_error(
                target,
                format!("no answer within {} s", self.timeout.as_secs_f32()),
            )),
        }
    }
}

/// A URL as it may appear in messages: without query or fragment, which
/// can carry codes and state.
pub(crate) fn shown(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].to_owned()
}

fn http_error(url: &str, cause: String) -> OAuthError {
    OAuthError::Http {
        url: url.to_owned(),
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_lose_query_and_fragment() {
        assert_eq!(shown("http://h/cb?code=SECRET#x"), "http://h/cb");
        assert_eq!(shown("http://h/a#b"), "http://h/a");
    }

    #[tokio::test]
    async fn only_https_or_loopback() {
        let http = OAuthHttp::new(None, Duration::from_secs(5), false).unwrap();
        assert!(http.check_url("https://as.example.com/token", "x").is_ok());
        assert!(http.check_url("http://127.0.0.1:4000/token", "x").is_ok());
        assert!(http.check_url("http://localhost:4000/token", "x").is_ok());
        let err = http
            .check_url("http://as.example.com/token", "x")
            .unwrap_err();
        assert!(err.to_string().contains("https"), "{err}");
        let lax = OAuthHttp::new(None, Duration::from_secs(5), true).unwrap();
        assert!(lax.check_url("http://as.example.com/token", "x").is_ok());
    }
}
