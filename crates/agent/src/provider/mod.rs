//! Real providers over HTTP: the shared client, retries and the streaming
//! driver; one module per wire format.
//!
//! A provider is a *dialect*: how to write the request body and headers,
//! and how to read its server-sent events. Everything else (the connection
//! pool, TLS, timeouts, retries with backoff and jitter, `retry-after`,
//! mapping statuses to [`ModelError`]s, a stream that ends too early) is
//! written once here.

pub(crate) mod anthropic;
pub(crate) mod openai;

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use switchboard_wire::sse::{SseDecoder, SseEvent};
use tracing::{debug, warn};

use crate::model::{
    BoxFuture, Collector, EventFn, Model, ModelError, ModelEvent, ModelRequest, TurnOutput,
};

/// Largest error body read (the rest is not needed for a message).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Largest single server-sent event.
const MAX_EVENT: usize = 8 * 1024 * 1024;

/// How a provider is reached.
#[derive(Clone)]
pub struct ProviderOptions {
    /// The model name at the provider.
    pub model: String,
    /// The API key (never logged).
    pub api_key: String,
    /// Where the API is, without the `/v1/...` path (a trailing `/v1` is
    /// accepted too).
    pub base_url: String,
    /// Time allowed for the response to start, and for each later piece
    /// of the stream.
    pub timeout: Duration,
    /// Retries on 429, 5xx and overload, with backoff.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for ProviderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never reaches logs.
        f.debug_struct("ProviderOptions")
            .field("model", &self.model)
            .field("api_key", &"<redacted>")
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl ProviderOptions {
    /// Options for `model` with `api_key` at `base_url`, with the default
    /// timeout (120 s) and retries.
    pub fn new(
        model: impl Into<String>,
        api_key: impl Into<String>,
        base_url: impl Into<String>,
    ) -> ProviderOptions {
        ProviderOptions {
            model: model.into(),
            api_key: api_key.into(),
            base_url: base_url.into(),
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
        }
    }

    /// `{base}/v1/{path}`, whether or not the base already ends in `/v1`.
    fn url(&self, path: &str) -> String {
        let base = self.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/{path}")
    }
}

/// Retries with exponential backoff and full jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The first backoff; each retry doubles it.
    pub base: Duration,
    /// The longest wait, also for a `retry-after`.
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 4,
            base: Duration::from_millis(500),
            max: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `attempt` (0-based): the server's
    /// `retry-after` when it gave one, else a random time up to
    /// `base * 2^attempt`; never more than `max`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max);
        }
        let ceiling = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX))
            .min(self.max);
        let ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        if ms == 0 {
            return Duration::ZERO;
        }
        // A fresh RandomState is seeded randomly: enough for jitter.
        let noise = RandomState::new().build_hasher().finish();
        // Half fixed, half random, so a retry never comes at once.
        Duration::from_millis(ms / 2 + noise % (ms / 2 + 1))
    }
}

/// One provider's model: its options, the shared HTTP client and the
/// dialect; the public model types wrap one and hand [`Model`] to it
/// ([`provider_model`]).
#[derive(Debug, Clone)]
pub(crate) struct Endpoint<D> {
    dialect: D,
    options: ProviderOptions,
    http: Http,
}

impl<D: Dialect> Endpoint<D> {
    /// The model of `dialect` with these options.
    ///
    /// # Errors
    /// [`ModelError::Spec`] when TLS cannot be set up.
    pub(crate) fn new(dialect: D, options: ProviderOptions) -> Result<Endpoint<D>, ModelError> {
        Ok(Endpoint {
            dialect,
            options,
            http: Http::new()?,
        })
    }
}

impl<D: Dialect + fmt::Debug> Model for Endpoint<D> {
    fn name(&self) -> String {
        format!("{}:{}", D::PROVIDER, self.options.model)
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        Box::pin(stream_turn(
            &self.http,
            &self.dialect,
            &self.options,
            request,
            events,
        ))
    }
}

/// Declares a provider's public model type, a newtype over an
/// [`Endpoint`] of its dialect: the type, its constructor, its [`Model`]
/// (handed to the endpoint) and the dialect's unit type, whose
/// [`Dialect`] impl the provider's module writes.
macro_rules! provider_model {
    (
        $(#[$doc:meta])*
        pub struct $model:ident(Endpoint<$dialect:ident>);
        $(#[$new_doc:meta])*
        fn new;
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $model(crate::provider::Endpoint<$dialect>);

        impl $model {
            $(#[$new_doc])*
            ///
            /// # Errors
            /// [`ModelError::Spec`](crate::ModelError::Spec) when TLS cannot be
            /// set up.
            pub fn new(options: crate::ProviderOptions) -> Result<$model, crate::ModelError> {
                crate::provider::Endpoint::new($dialect, options).map($model)
            }
        }

        impl crate::model::Model for $model {
            fn name(&self) -> String {
                crate::model::Model::name(&self.0)
            }

            fn turn<'a>(
                &'a self,
                request: &'a crate::model::ModelRequest,
                events: crate::model::EventFn<'a>,
            ) -> crate::model::BoxFuture<'a, Result<crate::model::TurnOutput, crate::ModelError>>
            {
                crate::model::Model::turn(&self.0, request, events)
            }
        }

        #[doc = concat!("The wire format of [`", stringify!($model), "`].")]
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct $dialect;
    };
}
pub(crate) use provider_model;

/// A provider's wire format.
pub(crate) trait Dialect: Send + Sync {
    /// The stream reader of one turn.
    type Reader: StreamReader + Default;
    /// `anthropic` or `openai`.
    const PROVIDER: &'static str;
    /// The variable the key comes from (for error messages).
    const KEY_VARIABLE: &'static str;
    /// The endpoint's path under `/v1/`.
    const PATH: &'static str;
    /// The request body for the model named `model`.
    const BODY: fn(model: &str, request: &ModelRequest) -> Value;
    /// Provider-specific headers (the key, versions).
    fn headers(&self, options: &ProviderOptions, headers: &mut HeaderMap);
    /// A fresh reader.
    fn reader(&self) -> Self::Reader {
        Self::Reader::default()
    }
}

/// Reads one turn's events.
pub(crate) trait StreamReader: Send {
    /// Handles one event; `Ok(true)` once the stream is complete.
    ///
    /// # Errors
    /// [`Failure`]: retryable (an overload before anything was shown) or
    /// not.
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Collector,
        sink: EventFn<'_>,
    ) -> Result<bool, Failure>;
    /// Whether the stream may end without its final event (some servers
    /// omit it after the stop reason).
    fn may_end_here(&self) -> bool {
        false
    }
}

/// A failed attempt.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another try (after `after`, when the server said).
    Retry {
        status: u16,
        message: String,
        after: Option<Duration>,
    },
    /// Final.
    Fatal(ModelError),
}

/// The HTTP client shared by every provider of the process.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Http {
    pub(crate) fn new() -> Result<Http, ModelError> {
        let tls = switchboard_client::default_tls().map_err(ModelError::Spec)?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(Duration::from_secs(30)));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(Arc::unwrap_or_clone(tls))
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Http { client })
    }
}

/// Runs one turn of `dialect`: sends the request, retrying on 429, 5xx and
/// overload (only while nothing has been passed on), and reads the stream.
pub(crate) async fn stream_turn<D: Dialect>(
    http: &Http,
    dialect: &D,
    options: &ProviderOptions,
    request: &ModelRequest,
    sink: EventFn<'_>,
) -> Result<TurnOutput, ModelError> {
    let url = options.url(D::PATH);
    let uri: Uri = url
        .parse()
        .map_err(|e| ModelError::Spec(format!("bad {} base URL {url:?}: {e}", D::PROVIDER)))?;
    let body =
        Bytes::from(serde_json::to_vec(&D::BODY(&options.model, request)).unwrap_or_default());
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        http::header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    );
    dialect.headers(options, &mut headers);
    let mut attempt = 0u32;
    loop {
        let mut out = Collector::default();
        let mut delivered = false;
        let result = attempt_once(
            http,
            dialect,
            options,
            &uri,
            &headers,
            body.clone(),
            &mut out,
            &mut |e| {
                // Once text or a call was shown, a retry would repeat it.
                if matches!(e, ModelEvent::TextDelta(_) | ModelEvent::ToolCall(_)) {
                    delivered = true;
                }
                sink(e);
            },
        )
        .await;
        match result {
            Ok(()) => return Ok(out.finish()),
            Err(Failure::Retry {
                status,
                message,
                after,
            }) => {
                if delivered || attempt >= options.retry.retries {
                    return Err(ModelError::Busy {
                        provider: D::PROVIDER,
                        status,
                        message,
                        attempts: attempt + 1,
                    });
                }
                let wait = options.retry.delay(attempt, after);
                warn!(provider = D::PROVIDER, status, %message, wait_ms = wait.as_millis() as u64, "retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(Failure::Fatal(e)) => return Err(e),
        }
    }
}

// The pieces of one attempt; grouping them would only move the list.
#[allow(clippy::too_many_arguments)]
async fn attempt_once<D: Dialect>(
    http: &Http,
    dialect: &D,
    options: &ProviderOptions,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
    out: &mut Collector,
    sink: EventFn<'_>,
) -> Result<(), Failure> {
    let provider = D::PROVIDER;
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(uri.clone())
        .body(Full::new(body))
        .map_err(|e| Failure::Fatal(ModelError::Spec(format!("bad request: {e}"))))?;
    *req.headers_mut() = headers.clone();
    let timeout = options.timeout;
    let response = match tokio::time::timeout(timeout, http.client.request(req)).await {
        Err(_) => {
            return Err(Failure::Fatal(ModelError::Timeout {
                provider,
                after: timeout,
            }));
        }
        Ok(Err(e)) => {
            return Err(Failure::Fatal(ModelError::Connect {
                provider,
                url: uri.to_string(),
                message: switchboard_client::net::error_chain(&e),
            }));
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let mut body = response.into_body();
    if !status.is_success() {
        let mut text = Vec::new();
        while text.len() < MAX_ERROR_BODY {
            match tokio::time::timeout(timeout, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        text.extend_from_slice(data);
                    }
                }
                _ => break,
            }
        }
        let (kind, message) = error_of(&text);
        return Err(classify::<D>(options, status, &kind, message, retry_after));
    }
    let mut decoder = SseDecoder::with_max_event(MAX_EVENT);
    let mut reader = dialect.reader();
    loop {
        let frame = match tokio::time::timeout(timeout, body.frame()).await {
            Err(_) => {
                return Err(Failure::Fatal(ModelError::Timeout {
                    provider,
                    after: timeout,
                }));
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(Failure::Fatal(ModelError::Stream {
                    provider,
                    message: switchboard_client::net::error_chain(&e),
                }));
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Some(data) = frame.data_ref() else {
            continue;
        };
        decoder.push(data);
        loop {
            match decoder.next_event() {
                Ok(Some(event)) => {
                    if reader.event(&event, out, sink)? {
                        return Ok(());
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(Failure::Fatal(ModelError::Stream {
                        provider,
                        message: e.to_string(),
                    }));
                }
            }
        }
    }
    let cut = decoder.finish();
    if reader.may_end_here() && !cut {
        debug!(provider, "the stream ended without its final event");
        return Ok(());
    }
    Err(Failure::Fatal(ModelError::Stream {
        provider,
        message: if cut {
            "the stream ended in the middle of an event".into()
        } else {
            "the stream ended before the turn was complete".into()
        },
    }))
}

/// Status to [`Failure`]: the one place provider statuses get a meaning.
fn classify<D: Dialect>(
    options: &ProviderOptions,
    status: StatusCode,
    kind: &str,
    message: String,
    retry_after: Option<Duration>,
) -> Failure {
    let provider = D::PROVIDER;
    let code = status.as_u16();
    let busy = code == 429
        || status.is_server_error()
        || kind == "overloaded_error"
        || kind == "rate_limit_error";
    if busy {
        return Failure::Retry {
            status: code,
            message,
            after: retry_after,
        };
    }
    let fatal = match code {
        401 | 403 => ModelError::Auth {
            provider,
            status: code,
            message,
            variable: D::KEY_VARIABLE,
        },
        404 => ModelError::UnknownModel {
            provider,
            model: options.model.clone(),
            message,
        },
        _ if kind == "model_not_found" || kind.contains("model_not_found") => {
            ModelError::UnknownModel {
                provider,
                model: options.model.clone(),
                message,
            }
        }
        _ => ModelError::Refused {
            provider,
            status: code,
            message,
        },
    };
    Failure::Fatal(fatal)
}

/// The error type (or code) and message of an error body, both providers'
/// shape (`{"error": {"type"|"code", "message"}}`); the raw text otherwise.
pub(crate) fn error_of(body: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(body);
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => {
            let e = v.get("error").unwrap_or(&v);
            let kind = e
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| *t != "error")
                .or_else(|| e.get("code").and_then(Value::as_str))
                .unwrap_or_default()
                .to_owned();
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| clip(&text), clip);
            (kind, message)
        }
        Err(_) => (String::new(), clip(text.trim())),
    }
}

/// How long the server asked to wait: `retry-after-ms` (milliseconds, as
/// OpenAI-compatible servers send it), else `retry-after` in either form
/// RFC 9110 §10.2.3 allows: delay-seconds, or an HTTP date (the wait is
/// the time until then, zero for a date already past). `now` is the
/// clock the date is measured against. A value that is neither is ignored.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    // IMF-fixdate, and the obsolete RFC 850 and asctime forms recipients
    // must still accept.
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn clip(text: &str) -> String {
    const MAX: usize = 500;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A JSON event's data, or a stream failure naming the provider.
pub(crate) fn parse_data(provider: &'static str, event: &SseEvent) -> Result<Value, Failure> {
    serde_json::from_str(&event.data).map_err(|e| {
        Failure::Fatal(ModelError::Stream {
            provider,
            message: format!("an event is not JSON ({e}): {}", clip(&event.data)),
        })
    })
}

/// A number member as u64 (0 when absent).
pub(crate) fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_take_a_base_with_or_without_v1() {
        let mut o = ProviderOptions::new("m", "k", "http://127.0.0.1:1");
        assert_eq!(o.url("messages"), "http://127.0.0.1:1/v1/messages");
        o.base_url = "http://localhost:11434/v1/".into();
        assert_eq!(
            o.url("chat/completions"),
            "http://localhost:11434/v1/chat/completions"
        );
    }

    #[test]
    fn delays_grow_stay_bounded_and_honour_retry_after() {
        let p = RetryPolicy {
            retries: 5,
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        for attempt in 0..10 {
            let d = p.delay(attempt, None);
            assert!(d <= Duration::from_secs(1), "{d:?}");
            assert!(d >= Duration::from_millis(50), "{d:?}");
        }
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(7))),
            Duration::from_secs(1)
        );
        assert_eq!(
            p.delay(3, Some(Duration::from_millis(2))),
            Duration::from_millis(2)
        );
    }

    #[test]
    fn error_bodies_of_both_providers() {
        let (k, m) = error_of(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!((k.as_str(), m.as_str()), ("overloaded_error", "Overloaded"));
        let (k, m) = error_of(
            br#"{"error":{"message":"The model `gpt-x` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
        );
        assert_eq!(k, "invalid_request_error");
        assert!(m.contains("gpt-x"));
        let (k, m) = error_of(b"upstream down");
        assert_eq!((k.as_str(), m.as_str()), ("", "upstream down"));
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_or_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(150)));
        h.clear();
        // 1445412480 is Wed, 21 Oct 2015 07:28:00 GMT: the three forms of
        // a date 90 s later, and one already past.
        for date in [
            "Wed, 21 Oct 2015 07:29:30 GMT",
            "Wednesday, 21-Oct-15 07:29:30 GMT",
            "Wed Oct 21 07:29:30 2015",
        ] {
            h.insert(RETRY_AFTER, HeaderValue::from_static(date));
            assert_eq!(
                retry_after(&h, now),
                Some(Duration::from_secs(90)),
                "{date}"
            );
        }
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:27:00 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::ZERO));
        for junk in ["soon", "-3", "NaN", "Wed, 32 Oct 2015 07:27:00 GMT"] {
            h.insert(RETRY_AFTER, HeaderValue::from_static(junk));
            assert_eq!(retry_after(&h, now), None, "{junk}");
        }
    }
}
