//! `switchboard demo`: the whole system in one run, on the built-in demo
//! (whatever config exists), plus a third server that is down on purpose.
//!
//! It shows, in order: two servers mounted (and the third reported down),
//! the colliding `search` tools side by side, an approval question with the
//! real arguments, a progress bar, a long note cut to the budget, and the
//! outage in the words the model is given. It never waits for input that
//! cannot come: without a terminal (and without `--yes`) the question is
//! shown and denied.

use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use switchboard_demo::notes;
use switchboard_host::BoxFuture;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, AssumeYes, CallOptions, Decider, Host, MountOptions,
    NoApprover,
};
use switchboard_wire::shared::lock;
use switchboard_wire::{CallToolResult, JsonObject, types::ProgressParams};

use crate::ask;
use crate::cmd::{call, servers, tools};
use crate::demo_env::{self, DemoTickets};
use crate::exit::Failure;
use crate::out;
use crate::session::{Session, to_count};
use crate::settings::{Loaded, Settings};

/// The alias of the server that is down on purpose.
const DOWN_ALIAS: &str = "archive";

/// Runs the walkthrough.
///
/// # Errors
/// A [`Failure`] when the demo cannot start (no free port, binary path
/// unknown); the demo's own steps never fail the command.
pub(crate) async fn run(settings: &Settings, yes: bool) -> anyhow::Result<()> {
    let loaded = demo_loaded()?;
    let tickets_url = tickets_url(&loaded);
    let started = Instant::now();
    let mut options = MountOptions::default();
    options.input_handler = Some(ask::input_handler(&loaded.config, settings.stdin_tty, yes));
    let session = Session::mount(loaded, options).await?;
    let took = started.elapsed();
    let result = walk(
        &session.host,
        settings,
        yes,
        &tickets_url,
        took,
        session.stop_demo_tickets(),
    )
    .await;
    session.close().await;
    result
}

/// The demo config with a third entry, `archive`, at a loopback port where
/// nothing listens.
pub(crate) fn demo_loaded() -> Result<Loaded, Failure> {
    let shared = Arc::new(std::sync::Mutex::new(DemoTickets::default()));
    let base = demo_env::provider(shared.clone())().map_err(|e| Failure::usage(e.to_string()))?;
    let port = demo_env::empty_port()
        .map_err(|e| Failure::usage(format!("cannot find a free loopback port: {e}")))?;
    let tickets_url = base
        .server("tickets")
        .and_then(|s| match &s.transport {
            switchboard_host::TransportConfig::Http { url, .. } => Some(url.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let config = demo_env::config(
        &tickets_url,
        &[(
            DOWN_ALIAS,
            json!({"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}),
        )],
    )
    .map_err(|e| Failure::usage(e.to_string()))?;
    let tickets = std::mem::take(&mut *lock(&shared));
    Ok(Loaded { config, tickets })
}

fn tickets_url(loaded: &Loaded) -> String {
    match loaded.config.server("tickets").map(|s| &s.transport) {
        Some(switchboard_host::TransportConfig::Http { url, .. }) => url.clone(),
        _ => String::new(),
    }
}

/// The demo's walk: each step shows one thing the host does, in order.
async fn walk(
    host: &Host,
    settings: &Settings,
    yes: bool,
    tickets_url: &str,
    took: std::time::Duration,
    stop_tickets: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    say("Switchboard demo: three MCP servers behind one governed tool table.")?;
    say("(The built-in demo: notes runs as `switchboard demo-server notes` over stdio,")?;
    say(&format!(
        " tickets is served from this process at {tickets_url}, archive points at an empty port.)"
    ))?;

    mounting(host, took)?;
    namespacing(host)?;
    approval(host, settings, yes).await?;
    progress(host, settings).await?;
    budget(host).await?;
    outage(host, stop_tickets).await?;
    say("")?;
    say(
        "Next: `switchboard tools --json | jq -r '.[].name'`, `switchboard call mcp__notes__search '{\"query\":\"printer\"}' --yes`,",
    )?;
    say("`switchboard selftest`. The README walks through each.")?;
    Ok(())
}

/// Step 1, mounting: all servers in parallel; one down stops none.
fn mounting(host: &Host, took: std::time::Duration) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    say("")?;
    say(&format!(
        "1. Mounting the servers, in parallel ({} ms). One server being down does not stop the others:",
        took.as_millis()
    ))?;
    for line in servers::human(&host.servers()) {
        say(&format!("   {line}"))?;
    }
    Ok(())
}

/// Step 2, namespacing: one table, `mcp__ALIAS__TOOL` names.
fn namespacing(host: &Host) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    let all = host.tools();
    say("")?;
    say(&format!(
        "2. One tool table of {} tools, named mcp__ALIAS__TOOL after your aliases. Both servers have a tool called `search`:",
        all.len()
    ))?;
    let searches: Vec<_> = all
        .iter()
        .filter(|t| t.original_name == "search")
        .cloned()
        .collect();
    for line in tools::human(&searches) {
        say(&format!("   {line}"))?;
    }
    if let Some(other) = all.iter().find(|t| !t.original_name.is_ascii()) {
        say(&format!(
            "   The model sees {} for the tool the server calls {:?}; calls go back under the original name.",
            other.name, other.original_name
        ))?;
    }
    Ok(())
}

/// Step 3, approval: the gate asks, with the real arguments.
async fn approval(host: &Host, settings: &Settings, yes: bool) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    say("")?;
    say(
        "3. The model asks to open a ticket. No rule allows mcp__tickets__create_ticket, so the gate asks,",
    )?;
    say(
        "   showing the real arguments (mcp__notes__search is asked about too: readOnlyHint never waives a question):",
    )?;
    let (approver, how): (Arc<dyn Approver>, &str) = if yes {
        (
            Arc::new(Shown::new(AssumeYes)),
            "   (--yes: approved without asking)",
        )
    } else if settings.stdin_tty {
        (ask::terminal_approver(), "")
    } else {
        (
            Arc::new(Shown::new(NoApprover)),
            "   (no terminal to ask on, so the question is denied; run `switchboard demo --yes` to approve it)",
        )
    };
    let args = object(json!({
        "title": "Printer on floor 3 is on fire",
        "priority": "high",
        "description": "Smoke since 9:40; facilities called.",
    }));
    let mut options = CallOptions::default();
    options.approver = Some(approver);
    let report = host
        .call_detailed("mcp__tickets__create_ticket", Some(args), options)
        .await;
    if !how.is_empty() {
        say(how)?;
    }
    say(&format!(
        "   → {} ({})",
        first_line(&report.result),
        match report.decided_by {
            Decider::Human => "answered at the prompt",
            Decider::Yes => "approved by --yes",
            Decider::NoApprover => "no one to ask",
            _ => "decided by a rule",
        }
    ))?;
    Ok(())
}

/// Step 4, progress: a server's progress notification before its result.
async fn progress(host: &Host, settings: &Settings) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    say("")?;
    say("4. A search on tickets: the server sends a progress notification before its result:")?;
    let (options, bar) = progress_options(settings.stderr_tty);
    let result = host
        .call(
            "mcp__tickets__search",
            Some(object(json!({"query": "printer"}))),
            options,
        )
        .await;
    if let Some(bar) = bar {
        bar.finish();
    }
    for line in call::human(&result).lines() {
        say(&format!("   {line}"))?;
    }
    Ok(())
}

/// Step 5, budget: a long result over the shared budget, its head and
/// tail shown and the rest kept for the model to read on.
async fn budget(host: &Host) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    say("")?;
    let full = notes::long_note().chars().count();
    say(&format!(
        "5. Reading the {full}-character note {:?}: every result shares one budget of {} characters,",
        notes::LONG_NOTE_ID,
        host.budget().chars()
    ))?;
    say("   so the model gets its head and its tail, and a handle to read the rest:")?;
    let result = host
        .call(
            "mcp__notes__read_note",
            Some(object(json!({"id": notes::LONG_NOTE_ID}))),
            CallOptions::default(),
        )
        .await;
    let texts: Vec<&str> = result.content.iter().filter_map(|b| b.as_text()).collect();
    for text in &texts {
        if text.starts_with('[') {
            say(&format!("   | {text}"))?;
            continue;
        }
        let plain = out::without_markers(text);
        let lines: Vec<&str> = plain.lines().collect();
        say(&format!(
            "   | … {} characters of the note in {} lines, from {:?} to {:?}",
            plain.chars().count(),
            lines.len(),
            lines.first().copied().unwrap_or_default(),
            lines.last().copied().unwrap_or_default()
        ))?;
    }
    // The model reads on where the head ended.
    let handle = texts
        .last()
        .and_then(|t| t.split("\"handle\": \"").nth(1))
        .and_then(|rest| rest.split('"').next());
    if let Some(handle) = handle {
        let head = texts
            .first()
            .map_or(0, |t| out::without_markers(t).chars().count());
        say(&format!(
            "   The model calls mcp__switchboard__read_result {{\"handle\": \"{handle}\", \"offset\": {head}, \"length\": 200}}:"
        ))?;
        let page = host
            .call(
                "mcp__switchboard__read_result",
                Some(object(
                    json!({"handle": handle, "offset": head, "length": 200}),
                )),
                CallOptions::default(),
            )
            .await;
        if let Some(said) = page.content.first().and_then(|b| b.as_text()) {
            say(&format!("   | {said}"))?;
        }
    }
    Ok(())
}

/// Step 6, outage: servers that are down, in plain words for the model,
/// while the others keep working.
async fn outage(
    host: &Host,
    stop_tickets: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let say = |text: &str| out::line(text);
    say("")?;
    say(&format!(
        "6. {DOWN_ALIAS} is down. The user sees why (above), and the model is told in plain words:"
    ))?;
    match host.outage_text() {
        Some(text) => {
            for line in text.lines() {
                say(&format!("   > {line}"))?;
            }
        }
        None => say("   (no outage: something is listening on the archive port)")?,
    }
    let result = host
        .call("mcp__notes__list_notes", None, CallOptions::default())
        .await;
    say(&format!(
        "   Meanwhile notes works: mcp__notes__list_notes → {} notes.",
        call::human(&result).lines().count()
    ))?;
    say(
        "   Now tickets goes away too (its server is stopped); its calls become isError results the model can read:",
    )?;
    stop_tickets.await;
    let result = host
        .call(
            "mcp__tickets__get_ticket",
            Some(object(json!({"id": "T-1"}))),
            CallOptions::default(),
        )
        .await;
    say(&format!("   → {}", first_line(&result)))?;
    let result = host
        .call(
            "mcp__notes__read_note",
            Some(object(json!({"id": "standup"}))),
            CallOptions::default(),
        )
        .await;
    say(&format!(
        "   and notes still answers: {}",
        first_line(&result)
    ))?;
    Ok(())
}

fn object(v: serde_json::Value) -> JsonObject {
    match v {
        serde_json::Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn first_line(result: &CallToolResult) -> String {
    let text = call::human(result);
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line.replace(" .", ".");
    let prefix = if result.is_error() { "isError: " } else { "" };
    format!("{prefix}{}", out::clip(&line, 240))
}

/// A progress bar on stderr when it is a terminal; otherwise each
/// notification as a line on stdout, so a log of the demo shows it too.
fn progress_options(stderr_tty: bool) -> (CallOptions, Option<ProgressBar>) {
    if stderr_tty {
        let bar = ProgressBar::with_draw_target(Some(2), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("   {spinner} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        let shown = bar.clone();
        let options = CallOptions::default().with_progress(move |p: ProgressParams| {
            if let Some(total) = p.total {
                shown.set_length(to_count(total));
            }
            shown.set_position(to_count(p.progress));
            if let Some(m) = p.message {
                shown.set_message(m);
            }
        });
        (options, Some(bar))
    } else {
        let options = CallOptions::default().with_progress(|p: ProgressParams| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let _ = out::line(format!(
                "   progress {}{total}: {}",
                p.progress,
                p.message.unwrap_or_default()
            ));
        });
        (options, None)
    }
}

/// Shows the question on stdout, then lets `inner` answer it.
#[derive(Debug)]
struct Shown<A> {
    inner: A,
}

impl<A> Shown<A> {
    fn new(inner: A) -> Self {
        Shown { inner }
    }
}

impl<A: Approver> Approver for Shown<A> {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        for line in request.render().lines() {
            let _ = out::line(format!("   {line}"));
        }
        self.inner.approve(request)
    }

    fn decider(&self) -> Decider {
        self.inner.decider()
    }
}
