//! What the gateway reports about itself: Prometheus metrics and
//! OpenTelemetry traces, each optional. Both hear of calls through one
//! [`CallObserver`] given to the host at mount; with neither on, the host
//! has no observer and nothing is recorded.

use std::sync::Arc;
use std::time::SystemTime;

use switchboard_host::{CallEvent, CallObserver, Host, Outcome};

use crate::metrics::Metrics;
use crate::otel::{Otel, OtelError};
use crate::trace::CallTrace;

/// The gateway's metrics and traces. Build it before mounting the host,
/// give [`Telemetry::observer`] to the host's `MountOptions::observer`,
/// and the same value to `GatewayOptions::telemetry`.
#[derive(Debug, Clone, Default)]
pub struct Telemetry {
    metrics: Option<Arc<Metrics>>,
    otel: Option<Arc<Otel>>,
}

impl Telemetry {
    /// Metrics when `metrics` is true; traces when the environment names
    /// an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). Call it inside the tokio
    /// runtime the gateway runs on (exports are sent from there).
    ///
    /// # Errors
    /// [`OtelError`] when tracing is asked for and cannot be set up.
    pub fn from_env(metrics: bool) -> Result<Telemetry, OtelError> {
        Ok(Telemetry {
            metrics: metrics.then(|| Arc::new(Metrics::new())),
            otel: Otel::from_env()?.map(Arc::new),
        })
    }

    /// Traces when the environment names an OTLP endpoint, as
    /// [`Telemetry::from_env`], for a command that calls tools itself
    /// (`switchboard call`, `chat`): each call is a root client span of a
    /// trace of its own. No metrics (nothing would scrape them). Call it
    /// inside the tokio runtime, and [`Telemetry::shutdown`] before exiting
    /// so queued spans are sent.
    ///
    /// # Errors
    /// [`OtelError`] when tracing is asked for and cannot be set up.
    pub fn for_commands() -> Result<Telemetry, OtelError> {
        Ok(Telemetry {
            metrics: None,
            otel: Otel::from_env()?.map(|o| Arc::new(o.with_root_calls())),
        })
    }

    /// The observer to mount the host with; `None` when nothing is on.
    #[must_use]
    pub fn observer(&self) -> Option<Arc<dyn CallObserver>> {
        match (&self.metrics, &self.otel) {
            (None, None) => None,
            (Some(m), None) => Some(m.clone()),
            (None, Some(o)) => Some(o.clone()),
            (Some(_), Some(_)) => Some(Arc::new(self.clone())),
        }
    }

    /// Whether metrics are kept (and `/metrics` served).
    #[must_use]
    pub fn has_metrics(&self) -> bool {
        self.metrics.is_some()
    }

    /// Whether traces are exported.
    #[must_use]
    pub fn has_traces(&self) -> bool {
        self.otel.is_some()
    }

    /// Reports the shared store's state and errors (metrics on).
    pub(crate) fn attach_state(&self, state: &crate::SharedState) {
        if let Some(m) = &self.metrics {
            m.attach_state(state);
        }
    }

    /// Counts a task of `server`'s picked up again after a restart.
    pub(crate) fn task_resumed(&self, server: &str) {
        if let Some(m) = &self.metrics {
            m.task_resumed(server);
        }
    }

    /// Counts a reload of `file` (`config`, `tokens` or `tls`), applied or
    /// rejected (metrics on).
    pub(crate) fn reloaded(&self, file: &'static str, applied: bool) {
        if let Some(m) = &self.metrics {
            m.reloaded(file, applied);
        }
    }

    /// Counts a request refused for its authorization (metrics on).
    pub(crate) fn auth_refused(&self, refusal: switchboard_server::Refusal) {
        if let Some(m) = &self.metrics {
            m.auth_refused(refusal);
        }
    }

    /// The metrics exposition, with server states read from `host`.
    #[must_use]
    pub fn render_metrics(&self, host: &Host) -> Option<String> {
        self.metrics.as_ref().map(|m| m.render(host))
    }

    /// The metrics exposition without the server states (for tests of what
    /// the gateway counts outside a host).
    #[cfg(test)]
    pub(crate) fn metrics_without_host(&self) -> Option<String> {
        self.metrics.as_ref().map(|m| m.encode())
    }

    /// Flushes queued spans and stops the exporter.
    pub async fn shutdown(&self) {
        if let Some(otel) = self.otel.clone() {
            // The SDK's shutdown blocks until its export thread is done.
            let _ = tokio::task::spawn_blocking(move || otel.shutdown()).await;
        }
    }

    /// Whether each downstream call gets a span of its own (traces on and
    /// `SWITCHBOARD_OTEL_DOWNSTREAM_SPANS` set).
    pub(crate) fn downstream_spans(&self) -> bool {
        self.otel.as_ref().is_some_and(|o| o.downstream_spans())
    }

    /// Records the gateway's span for one upstream request (traces on).
    pub(crate) fn upstream_span(
        &self,
        trace: &CallTrace,
        tool: &str,
        started: SystemTime,
        outcome: Outcome,
    ) {
        if let Some(otel) = &self.otel {
            otel.upstream_span(trace, tool, started, SystemTime::now(), outcome);
        }
    }
}

impl CallObserver for Telemetry {
    fn call_ended(&self, call: &CallEvent<'_>) {
        if let Some(m) = &self.metrics {
            m.call_ended(call);
        }
        if let Some(o) = &self.otel {
            o.call_ended(call);
        }
    }
}
