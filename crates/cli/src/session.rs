//! A mounted host for one command: the config loaded, every server
//! mounted, and everything stopped again at the end (servers, the demo's
//! tickets server, queued trace spans sent). With
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, every call the command makes is
//! exported as a span, through the gateway's telemetry (as `serve`).

use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use switchboard_gateway::Telemetry;
use switchboard_host::{Approver, AssumeYes, CallOptions, Host, MountOptions, NoApprover};
use switchboard_wire::{Implementation, types::ProgressParams};

use crate::ask;
use crate::demo_env::DemoTickets;
use crate::exit::Failure;
use crate::settings::{ApprovalMode, Loaded, Settings};

/// The name and version the host gives servers (`clientInfo`).
pub(crate) fn client_info() -> Implementation {
    Implementation::new("switchboard", env!("CARGO_PKG_VERSION"))
}

/// A mounted host.
#[derive(Debug)]
pub(crate) struct Session {
    /// The host.
    pub(crate) host: Host,
    /// The demo's tickets server, when the demo config is in use.
    tickets: DemoTickets,
    /// Traces of the calls made (on when the environment names an OTLP
    /// endpoint).
    telemetry: Telemetry,
}

impl Session {
    /// Loads the config and mounts every server.
    ///
    /// # Errors
    /// A usage [`Failure`] for a bad config or unusable host files
    /// (lockfile, audit log).
    pub(crate) async fn open(settings: &Settings) -> Result<Session, Failure> {
        let loaded = settings.load_config()?;
        let mut options = MountOptions::default();
        options.input_handler = ask::for_command(settings, &loaded.config);
        Session::mount(loaded, options).await
    }

    /// Starts the demo's tickets server if the config is the demo, then
    /// mounts the config with `options` (client info is filled in).
    ///
    /// # Errors
    /// A usage [`Failure`] for unusable host files (lockfile, audit log),
    /// a tickets server that cannot start, or tracing that cannot be set
    /// up.
    pub(crate) async fn mount(
        loaded: Loaded,
        mut options: MountOptions,
    ) -> Result<Session, Failure> {
        let Loaded {
            config,
            mut tickets,
        } = loaded;
        let telemetry = Telemetry::for_commands().map_err(|e| Failure::usage(e.to_string()))?;
        if options.observer.is_none() {
            options.observer = telemetry.observer();
        }
        if let Err(e) = tickets.start() {
            return Err(Failure::usage(format!("{e:#}")));
        }
        if options.client_info.is_none() {
            options.client_info = Some(client_info());
        }
        match Host::mount(config, options).await {
            Ok(host) => Ok(Session {
                host,
                tickets,
                telemetry,
            }),
            Err(e) => {
                tickets.stop().await;
                Err(Failure::usage(e.to_string()))
            }
        }
    }

    /// Stops the demo's tickets server now (the demo shows an outage);
    /// the returned future completes once it has stopped.
    pub(crate) fn stop_demo_tickets(&self) -> impl std::future::Future<Output = ()> + use<> {
        let running = self.tickets.take_running();
        async move {
            if let Some(r) = running {
                r.stop().await;
            }
        }
    }

    /// Stops every server and the demo's tickets server.
    pub(crate) async fn close(mut self) {
        self.host.shutdown().await;
        self.tickets.stop().await;
        self.telemetry.shutdown().await;
    }
}

/// The approver for `approval`: `--yes`, a prompt on the terminal
/// (answers on stdin, the question on stderr), or no one.
pub(crate) fn approver(approval: ApprovalMode) -> Arc<dyn Approver> {
    match approval {
        ApprovalMode::Yes => Arc::new(AssumeYes),
        ApprovalMode::Prompt => ask::terminal_approver(),
        ApprovalMode::NoOne => Arc::new(NoApprover),
    }
}

/// Call options with `approver` and, when stderr is a terminal, a
/// progress bar drawn on stderr from the call's progress notifications.
/// The bar is returned so the caller can clear it once the call is done.
pub(crate) fn call_options(
    approver: Arc<dyn Approver>,
    stderr_tty: bool,
) -> (CallOptions, Option<ProgressBar>) {
    let mut options = CallOptions::default();
    options.approver = Some(approver);
    if !stderr_tty {
        return (options, None);
    }
    // Hidden until the first notification, so the approval prompt (which
    // comes before any progress) is never drawn over.
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    let shown = bar.clone();
    let options = options.with_progress(move |p: ProgressParams| show_progress(&shown, &p));
    (options, Some(bar))
}

fn show_progress(bar: &ProgressBar, p: &ProgressParams) {
    if bar.is_hidden() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        let style = match p.total {
            Some(_) => ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}"),
            None => ProgressStyle::with_template("{spinner} {pos} {msg}"),
        };
        if let Ok(style) = style {
            bar.set_style(style.progress_chars("=> "));
        }
    }
    if let Some(total) = p.total {
        bar.set_length(to_count(total));
    }
    bar.set_position(to_count(p.progress));
    if let Some(message) = &p.message {
        bar.set_message(message.clone());
    }
}

/// A progress value as a whole count (they are floats on the wire).
pub(crate) fn to_count(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        // Saturating float-to-int conversion is what is wanted here.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = value.round() as u64;
        n
    } else {
        0
    }
}
