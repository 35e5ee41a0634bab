//! OpenTelemetry traces over OTLP/HTTP (protobuf), on when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
//! set; the SDK reads its other standard variables itself
//! (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, …).
//!
//! Each upstream `tools/call` is a server span (`tools/call TOOL`, TOOL
//! the namespaced name), the parent the downstream server sees. One span
//! per proxied call, as proxies usually record: the span's work (building
//! it here, converting and encoding it on the SDK's export thread) is most
//! of what tracing costs per call. With `SWITCHBOARD_OTEL_DOWNSTREAM_SPANS`
//! set (`1`/`true`), the downstream call is a client span of its own under
//! it as well, as OpenTelemetry's MCP conventions model a gateway
//! (`tools/call ORIGINAL`, with the server alias and the gate's decision),
//! recorded by the host's [`CallObserver`] with the span id the downstream
//! request carried in its `traceparent`: downstream time apart from the
//! gateway's, for about twice the cost. Names and attributes follow
//! OpenTelemetry's MCP conventions (`mcp.method.name`, `gen_ai.tool.name`,
//! `error.type`, for failures only); a call that did not end ok also has
//! `switchboard.outcome` (the audit log's word for it). The commands that
//! call tools themselves (`switchboard call`, `chat`, [`crate::Telemetry::for_commands`])
//! record each call as a root client span of a new trace. Attributes are
//! kept to those: each one is converted and encoded again for every span
//! exported. Batches go out through the workspace's hyper client
//! (rustls with ring), not a second HTTP stack.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry::KeyValue;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags,
    TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use switchboard_host::{CallEvent, CallObserver, Outcome};

use crate::trace::{CallTrace, unhex};

/// The variables that turn tracing on.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The variable that adds a client span per downstream call.
const DOWNSTREAM_SPANS_VAR: &str = "SWITCHBOARD_OTEL_DOWNSTREAM_SPANS";

/// The tracer and its provider (flushed at shutdown).
pub(crate) struct Otel {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// Whether each downstream call is a client span of its own.
    downstream_spans: bool,
    /// Whether a call made without a trace context (a command's own call:
    /// `switchboard call`, `chat`) is a root client span of its own.
    root_calls: bool,
}

impl std::fmt::Debug for Otel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Otel(..)")
    }
}

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up OpenTelemetry tracing: {0}")]
pub struct OtelError(String);

impl Otel {
    /// Tracing as the environment asks: `None` when no OTLP endpoint is
    /// set (nothing is set up then, and nothing costs anything).
    ///
    /// # Errors
    /// [`OtelError`] when the endpoint or the TLS setup is unusable.
    pub(crate) fn from_env() -> Result<Option<Otel>, OtelError> {
        if !ENDPOINT_VARS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
        {
            return Ok(None);
        }
        let client = HyperClient::new()?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| OtelError(e.to_string()))?;
        let mut resource = Resource::builder();
        let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| {
                a.split(',')
                    .any(|kv| kv.trim().starts_with("service.name="))
            });
        if !named {
            resource = resource.with_service_name("switchboard");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer_with_scope(
            opentelemetry::InstrumentationScope::builder("switchboard-gateway")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        );
        let downstream_spans = match std::env::var(DOWNSTREAM_SPANS_VAR) {
            Err(_) => false,
            Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "0" | "false" | "no" | "off" => false,
                "1" | "true" | "yes" | "on" => true,
                other => {
                    return Err(OtelError(format!(
                        "{DOWNSTREAM_SPANS_VAR}={other:?}: use 1 or true (a client span per downstream call) or 0 or false"
                    )));
                }
            },
        };
        Ok(Some(Otel {
            provider,
            tracer,
            downstream_spans,
            root_calls: false,
        }))
    }

    /// The same, recording every call made without a trace context as a
    /// root client span (the commands that call tools themselves).
    pub(crate) fn with_root_calls(mut self) -> Otel {
        self.root_calls = true;
        self
    }

    /// Whether each downstream call is a client span of its own.
    pub(crate) fn downstream_spans(&self) -> bool {
        self.downstream_spans
    }

    /// Records the gateway's span for one upstream request.
    pub(crate) fn upstream_span(
        &self,
        trace: &CallTrace,
        tool: &str,
        started: SystemTime,
        ended: SystemTime,
        outcome: Outcome,
    ) {
        let trace_id = TraceId::from_bytes(trace.trace_id);
        let parent = match trace.remote_parent {
            Some(parent) => {
                opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
                    trace_id,
                    SpanId::from_bytes(parent),
                    flags(trace.sampled),
                    true,
                    TraceState::default(),
                ))
            }
            None => opentelemetry::Context::new(),
        };
        let mut attributes = Vec::with_capacity(4);
        attributes.push(KeyValue::new(METHOD, TOOLS_CALL));
        attributes.push(KeyValue::new(TOOL, tool.to_owned()));
        push_outcome(&mut attributes, outcome);
        let mut builder = SpanBuilder::from_name(span_name(tool))
            .with_kind(SpanKind::Server)
            .with_trace_id(trace_id)
            .with_start_time(started)
            .with_attributes(attributes);
        builder.span_id = Some(SpanId::from_bytes(trace.span_id));
        builder.status = status(outcome);
        let mut span = builder.start_with_context(&self.tracer, &parent);
        span.end_with_timestamp(ended);
    }

    /// Flushes what is queued and stops the exporter.
    pub(crate) fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::debug!(error = %e, "the trace exporter did not shut down cleanly");
        }
    }
}

impl CallObserver for Otel {
    fn call_ended(&self, call: &CallEvent<'_>) {
        // Only calls made with a trace context (the gateway's) that names
        // the gateway's span as the downstream call's parent are spans.
        let Some(context) = call.trace else {
            if self.root_calls {
                // The SDK gives a span without a parent a new trace.
                let mut span = self
                    .client_span(call)
                    .start_with_context(&self.tracer, &opentelemetry::Context::new());
                span.end_with_timestamp(call.started + call.duration);
            }
            return;
        };
        let Some(parent) = context.parent_span_id.as_deref().and_then(span_id) else {
            return;
        };
        let Some((trace_id, own, flags)) = parse_traceparent(&context.traceparent) else {
            return;
        };
        let parent = opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
            trace_id,
            parent,
            flags,
            false,
            TraceState::default(),
        ));
        let mut builder = self.client_span(call);
        builder.span_id = Some(own);
        let mut span = builder.start_with_context(&self.tracer, &parent);
        span.end_with_timestamp(call.started + call.duration);
    }
}

impl Otel {
    /// The client span of the downstream call `call` (`tools/call
    /// ORIGINAL`, with the server alias and the gate's decision), ids not
    /// yet set.
    fn client_span(&self, call: &CallEvent<'_>) -> SpanBuilder {
        let alias = call.alias.unwrap_or("");
        let original = call.original_tool.unwrap_or(call.tool);
        let mut attributes = Vec::with_capacity(6);
        attributes.push(KeyValue::new(METHOD, TOOLS_CALL));
        attributes.push(KeyValue::new(TOOL, original.to_owned()));
        attributes.push(KeyValue::new("switchboard.server", alias.to_owned()));
        if let Some(decision) = call.decision {
            attributes.push(KeyValue::new("switchboard.decision", decision.as_str()));
        }
        push_outcome(&mut attributes, call.outcome);
        let mut builder = SpanBuilder::from_name(span_name(original))
            .with_kind(SpanKind::Client)
            .with_start_time(call.started)
            .with_attributes(attributes);
        builder.status = status(call.outcome);
        builder
    }
}

/// The MCP method attribute, and the method both spans are about.
const METHOD: &str = "mcp.method.name";
const TOOLS_CALL: &str = "tools/call";
/// The tool attribute.
const TOOL: &str = "gen_ai.tool.name";

/// What a call that did not end ok adds: its outcome, and for a failure
/// its `error.type`.
fn push_outcome(attributes: &mut Vec<KeyValue>, outcome: Outcome) {
    if outcome == Outcome::Ok {
        return;
    }
    attributes.push(KeyValue::new("switchboard.outcome", outcome.as_str()));
    if outcome.is_error() {
        attributes.push(KeyValue::new("error.type", outcome.as_str()));
    }
}

// Ids are decoded byte by byte (`unhex`): the SDK's `from_hex` goes
// through an integer parse, which showed in profiles at one span per call.
fn trace_id(hex: &str) -> Option<TraceId> {
    unhex::<16>(hex)
        .map(TraceId::from_bytes)
        .filter(|t| *t != TraceId::INVALID)
}

fn span_id(hex: &str) -> Option<SpanId> {
    unhex::<8>(hex)
        .map(SpanId::from_bytes)
        .filter(|s| *s != SpanId::INVALID)
}

/// `tools/call TOOL`, the spans' name.
fn span_name(tool: &str) -> String {
    let mut name = String::with_capacity(TOOLS_CALL.len() + 1 + tool.len());
    name.push_str(TOOLS_CALL);
    name.push(' ');
    name.push_str(tool);
    name
}

fn flags(sampled: bool) -> TraceFlags {
    if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    }
}

/// `00-TRACE-SPAN-FLAGS` as the gateway writes it.
fn parse_traceparent(text: &str) -> Option<(TraceId, SpanId, TraceFlags)> {
    let mut parts = text.split('-');
    let _version = parts.next()?;
    let trace = trace_id(parts.next()?)?;
    let span = span_id(parts.next()?)?;
    let flags = match parts.next()? {
        "01" => TraceFlags::SAMPLED,
        _ => TraceFlags::default(),
    };
    Some((trace, span, flags))
}

fn status(outcome: Outcome) -> Status {
    match outcome {
        failed if failed.is_error() => Status::error(failed.as_str()),
        _ => Status::Unset,
    }
}

/// The exporter's HTTP client: the workspace's hyper stack. The SDK's
/// batch processor runs on a thread of its own and drives exports with a
/// plain executor, so each request is run on the runtime the gateway was
/// started in and awaited from there.
#[derive(Debug, Clone)]
struct HyperClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
}

impl HyperClient {
    fn new() -> Result<HyperClient, OtelError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| OtelError("no tokio runtime to send traces from".into()))?;
        let tls = switchboard_client::default_tls().map_err(OtelError)?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(EXPORT_TIMEOUT));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(std::sync::Arc::unwrap_or_clone(tls))
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        Ok(HyperClient {
            client: Client::builder(TokioExecutor::new()).build(connector),
            runtime,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for HyperClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client.request(request.map(Full::new)).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        });
        sent.await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A call refused by policy (the rules, the caller's limits) is not an
    // error of the span: its outcome is said, without `error.type`.
    #[test]
    fn refusals_are_outcomes_and_failures_are_errors() {
        for refused in [Outcome::Denied, Outcome::Limited] {
            let mut attributes = Vec::new();
            push_outcome(&mut attributes, refused);
            assert_eq!(attributes.len(), 1, "{refused:?}");
            assert_eq!(attributes[0].key.as_str(), "switchboard.outcome");
            assert_eq!(status(refused), Status::Unset);
        }
        let mut attributes = Vec::new();
        push_outcome(&mut attributes, Outcome::Timeout);
        assert!(attributes.iter().any(|kv| kv.key.as_str() == "error.type"));
        assert!(matches!(status(Outcome::Timeout), Status::Error { .. }));
        let mut none = Vec::new();
        push_outcome(&mut none, Outcome::Ok);
        assert!(none.is_empty());
        assert_eq!(status(Outcome::Ok), Status::Unset);
    }
}
