//! The `switchboard` command: many MCP servers behind one governed tool
//! table, from a terminal (`tools`, `servers`, `call`, …), as a gateway
//! (`serve`), and with its own demo and self-test.
//!
//! # Layout
//! - `flags`: the command line as clap reads it (raw flags).
//! - `settings`: the raw flags checked and resolved; the config loaded.
//! - `demo_env`: the built-in demo config and its in-process tickets server.
//! - `session`: a mounted host, approvers and the progress bar.
//! - `ask`, `terminal`: questions on the terminal, and the stdin they share;
//!   `line_editor`: the chat prompt edited in place, with Tab completion.
//! - `cmd`: one module per subcommand.
//! - `exit`: exit codes and the JSON error line.
//! - `out`: writing to stdout and stderr.
//!
//! The binary stays thin: the protocol lives in `switchboard-client` and
//! `switchboard-server`, the policy in `switchboard-host`.

mod ask;
mod cmd;
mod connect;
mod demo_env;
mod exit;
mod flags;
mod line_editor;
mod out;
mod session;
mod settings;
mod terminal;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use tracing_subscriber::EnvFilter;

use crate::exit::{Code, Failure, json_error_line};
use crate::flags::{LogFormat, RawArgs};
use crate::session::Session;
use crate::settings::{Command, Settings};

/// mimalloc rather than the system allocator: the gateway allocates and
/// frees many short-lived buffers per proxied call, which glibc's malloc
/// handles slowly (see `bench/gateway.sh`). `switchboard-alloc` says how it
/// is called.
#[global_allocator]
static ALLOCATOR: switchboard_alloc::Mimalloc = switchboard_alloc::Mimalloc;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let wants_json = args.iter().any(|a| a == "--json");
    let raw = match RawArgs::try_parse_from(&args) {
        Ok(raw) => raw,
        Err(e) => return usage_error(&e, wants_json),
    };
    init_logging(raw.verbose, raw.log_format);
    let json = raw.json;
    let settings = match Settings::resolve(raw) {
        Ok(s) => s,
        Err(f) => return fail(f.code, &f.message, json),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(Code::Usage, &format!("cannot start the runtime: {e}"), json),
    };
    let result = runtime.block_on(run(settings));
    // Background tasks (listeners, refreshers) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                // `switchboard tools | head -1`: the reader left; not an error.
                return ExitCode::SUCCESS;
            }
            match e.downcast_ref::<Failure>() {
                Some(f) => fail(f.code, &f.message, json),
                None => fail(Code::Usage, &format!("{e:#}"), json),
            }
        }
    }
}

/// Runs the command.
async fn run(settings: Settings) -> anyhow::Result<()> {
    let json = settings.json;
    match &settings.command {
        Command::DemoServer { which, port } => cmd::demo_server::run(*which, *port).await,
        Command::Selftest => cmd::selftest::run(json).await,
        Command::Health { url, timeout } => cmd::health::run(url, *timeout, json).await,
        Command::Inspect(target) => cmd::inspect::run(target, json).await,
        Command::AuditVerify { files } => {
            let config = match files.is_empty() {
                false => None,
                true => Some(settings.load_config()?.config),
            };
            cmd::audit::verify(config.as_ref(), files, json)
        }
        Command::AuditStats { file, by } => {
            let config = match file {
                Some(_) => None,
                None => Some(settings.load_config()?.config),
            };
            cmd::audit::stats(config.as_ref(), file.clone(), *by, json)
        }
        Command::ConfigCheck { tokens_file } => {
            cmd::config::check(&settings, tokens_file.as_deref(), json)
        }
        Command::AuthLogin {
            alias,
            principal,
            open_browser,
            wait,
        } => {
            let principal = principal.as_deref();
            cmd::auth::login(&settings, alias, principal, *open_browser, *wait).await
        }
        Command::AuthLoginIdp {
            name,
            open_browser,
            wait,
        } => cmd::auth::login_idp(&settings, name, *open_browser, *wait).await,
        Command::AuthStatus { alias, principal } => {
            cmd::auth::status(&settings, alias.as_deref(), principal.as_deref()).await
        }
        Command::AuthLogout { alias, principal } => {
            cmd::auth::logout(&settings, alias, principal.as_deref()).await
        }
        Command::Demo { yes } => cmd::demo::run(&settings, *yes).await,
        Command::Chat(chat) => cmd::chat::run(&settings, chat).await,
        Command::Doctor => cmd::doctor::run(&settings).await,
        Command::Console { no_open } => cmd::serve::console(&settings, *no_open).await,
        Command::Serve(serve) => cmd::serve::run(&settings, serve).await,
        Command::Eval(eval) => cmd::eval::run(&settings, eval).await,
        Command::Tools { .. }
        | Command::Servers
        | Command::Call { .. }
        | Command::PinsList
        | Command::PinsAccept { .. }
        | Command::SkillsList
        | Command::SkillsShow { .. }
        | Command::SkillsAccept { .. } => {
            let session = Session::open(&settings).await?;
            let result = on_host(&settings, &session).await;
            session.close().await;
            result
        }
    }
}

/// The commands that only need a mounted host.
async fn on_host(settings: &Settings, session: &Session) -> anyhow::Result<()> {
    let host = &session.host;
    let json = settings.json;
    match &settings.command {
        Command::Tools {
            all,
            principal,
            search: None,
        } => Ok(cmd::tools::run(host, json, *all, principal.as_deref())?),
        Command::Tools {
            principal,
            search: Some((query, limit)),
            ..
        } => Ok(cmd::tools::search(
            host,
            json,
            query,
            *limit,
            principal.as_deref(),
        )?),
        Command::Servers => Ok(cmd::servers::run(host, json)?),
        Command::Call {
            tool,
            arguments,
            approval,
        } => {
            cmd::call::run(
                host,
                tool,
                arguments.clone(),
                *approval,
                json,
                settings.stderr_tty,
            )
            .await
        }
        Command::PinsList => cmd::pins::list(host, json),
        Command::PinsAccept { target, force } => {
            cmd::pins::accept(host, target, *force, json).await
        }
        Command::SkillsList => cmd::skills::list(host, json),
        Command::SkillsShow { id, yes } => {
            cmd::skills::show(host, id, *yes, settings.stdin_tty, json).await
        }
        Command::SkillsAccept { id } => cmd::skills::accept(host, id, json).await,
        _ => Ok(()),
    }
}

/// Completes on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    StopSignals::new().next().await;
}

/// Ctrl-C and SIGTERM, listened for from creation on: each
/// [`StopSignals::next`] completes at the next one, so a second signal
/// that arrives while the first is being handled is not missed.
pub(crate) struct StopSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Starts listening (inside the runtime).
    pub(crate) fn new() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            StopSignals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// Completes at the next Ctrl-C or SIGTERM.
    pub(crate) async fn next(&mut self) {
        #[cfg(unix)]
        match (&mut self.interrupt, &mut self.terminate) {
            (Some(interrupt), Some(terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            (Some(only), None) | (None, Some(only)) => {
                only.recv().await;
            }
            (None, None) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Logs go to stderr (stdout is data, or the stdio wire); quiet by default.
fn init_logging(verbose: u8, format: LogFormat) {
    let default = match verbose {
        0 => "error",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let lines = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        // Colours only for a person at a terminal, not in a captured log.
        LogFormat::Text => lines
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        // `message` and the event's fields at the top level, beside
        // `timestamp` and `level`, as log collectors read them.
        LogFormat::Json => {
            out::use_json_logs();
            lines
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .try_init()
        }
    };
}

/// A command line clap refused: help and version exit 0, anything else 1
/// (clap's own 2 is not one of ours).
fn usage_error(e: &clap::Error, json: bool) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ if json => fail(Code::Usage, e.to_string().trim(), true),
        _ => {
            let _ = e.print();
            ExitCode::from(Code::Usage.status())
        }
    }
}

/// Reports a failure on stderr (one JSON line under `--json`) and returns
/// its exit code.
fn fail(code: Code, message: &str, json: bool) -> ExitCode {
    if json {
        // The `--json` error line keeps its own shape whatever the logs'.
        out::stderr_line(&json_error_line(code, message));
    } else {
        out::failure(message);
    }
    ExitCode::from(code.status())
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
