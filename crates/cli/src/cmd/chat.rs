//! `switchboard chat`: a model using the governed tools, interactively on
//! a terminal or for one prompt (`-p`). The loop is `switchboard-agent`'s;
//! this module only renders its events (or, under `--json`, writes one
//! JSON object per event and line) and maps Ctrl-C to cancellation. On a
//! terminal, the prompt's line is edited in place, with Tab completion of
//! resources, prompts and slash commands (`chat_complete`).

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use switchboard_agent::{
    Agent, AgentEvent, AgentOptions, CancelToken, EventSink, HostToolbox, Model, ModelSampler,
    ModelSettings, ProcessEnv, TurnStop, Usage, context_window, model_from_spec_with,
};
use switchboard_host::{Host, MountOptions};
use switchboard_wire::shared::lock;
use tokio::sync::watch;

use crate::ask;
use crate::cmd::chat_complete::ChatCompleter;
use crate::cmd::chat_input::{self, Prepared};
use crate::cmd::demo;
use crate::exit::Failure;
use crate::line_editor::{self, Completer, RestoreOnDrop};
use crate::out;
use crate::session::{self, Session, to_count};
use crate::settings::{ApprovalMode, Chat, Settings};

/// Runs `chat`.
///
/// # Errors
/// A usage [`Failure`] for no usable model or config; with `-p`, one for a
/// turn the model could not finish.
pub(crate) async fn run(settings: &Settings, chat: &Chat) -> anyhow::Result<()> {
    let mut loaded = settings.load_config()?;
    let (spec, model_settings) = match (&chat.model, &loaded.config.model) {
        (Some(spec), _) => (spec.clone(), ModelSettings::default()),
        (None, Some(m)) => (
            m.name.clone(),
            ModelSettings {
                base_url: m.base_url.clone(),
            },
        ),
        (None, None) => {
            return Err(Failure::usage(
                "no model: give --model PROVIDER:MODEL (anthropic:…, openai:…, script:FILE), \
                 or set \"model\" in the config; `switchboard chat --model mock` tries it offline",
            )
            .into());
        }
    };
    let model = model_from_spec_with(&spec, &model_settings, &ProcessEnv)
        .map_err(|e| Failure::usage(e.to_string()))?;
    // The mock's conversation meets an outage: on the built-in demo it
    // gets the demo's server that is down on purpose, as `switchboard demo`.
    if spec == "mock" && loaded.is_demo() {
        loaded = demo::demo_loaded()?;
    }
    // Servers' questions are asked on the terminal; sampling requests,
    // once approved, are answered by the chat's own model.
    let mut options = MountOptions::default();
    options.input_handler = Some(ask::input_handler_with(
        &loaded.config,
        settings.stdin_tty,
        chat.approval == ApprovalMode::Yes,
        Some(Arc::new(ModelSampler::new(model.clone()))),
    ));
    let session = Session::mount(loaded, options).await?;
    let result = converse(settings, chat, &session.host, model).await;
    session.close().await;
    result
}

async fn converse(
    settings: &Settings,
    chat: &Chat,
    host: &Host,
    model: Arc<dyn Model>,
) -> anyhow::Result<()> {
    let json = settings.json;
    // A large table is deferred (toolSearch): the model gets the
    // always-loaded tools and search_tools, measured against its window.
    let toolbox = Arc::new(
        HostToolbox::new(host.clone(), Some(session::approver(chat.approval)))
            .with_tool_search(host.config().tool_search, context_window(&model.name())),
    );
    let mut options = AgentOptions::default();
    options.max_model_calls = chat.max_turns;
    options.loop_guard = chat.loop_guard;
    let name = model.name();
    let mut agent = Agent::new(model, toolbox, options);
    let render = Arc::new(Render::new(json, settings.stderr_tty));
    let sink = {
        let render = render.clone();
        EventSink::new(move |e| render.event(e))
    };
    let signals = Signals::start();

    if let Some(prompt) = &chat.prompt {
        let prompt = match chat_input::prepare(host, prompt.trim()).await {
            Ok(Prepared::Send(text)) => text,
            Ok(Prepared::Show(text)) => return Ok(out::line(text)?),
            Err(e) => return Err(Failure::usage(e).into()),
        };
        let cancel = signals.begin_turn();
        let end = agent.run(&prompt, &sink, &cancel).await;
        signals.end_turn();
        return match end.stop {
            TurnStop::Error => Err(Failure::usage(end.error.unwrap_or_default()).into()),
            _ => Ok(()),
        };
    }

    let tools = host.tools().len();
    // On a terminal the line is edited in place, with Tab completion; the
    // terminal is put back however the chat ends.
    let editor: Option<Arc<dyn Completer>> =
        (!json && settings.stdin_tty && settings.stderr_tty && line_editor::available())
            .then(|| Arc::new(ChatCompleter::new(host.clone())) as _);
    let _restore = editor.as_ref().map(|_| RestoreOnDrop::new());
    if !json {
        let tab = if editor.is_some() {
            " Tab completes them."
        } else {
            ""
        };
        out::note(format!(
            "switchboard chat: {name} with {tools} tools. @ALIAS:URI attaches a resource, /ALIAS:PROMPT runs a prompt \
             (/resources, /prompts list them).{tab} Ctrl-C cancels a turn; Ctrl-D or Ctrl-C at the prompt exits."
        ));
    }
    loop {
        if !json && editor.is_none() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{PROMPT}");
            let _ = err.flush();
        }
        let line = tokio::select! {
            line = read_line(editor.clone()) => line,
            () = signals.quit() => None,
        };
        let Some(line) = line else {
            if !json {
                out::note("");
            }
            return Ok(());
        };
        let prompt = line.trim();
        if prompt.is_empty() {
            continue;
        }
        // Resources and prompts the user names are read first; a list
        // asked for is shown, and nothing goes to the model.
        let prompt = match chat_input::prepare(host, prompt).await {
            Ok(Prepared::Send(text)) => text,
            Ok(Prepared::Show(text)) => {
                out::line(text)?;
                continue;
            }
            Err(e) => {
                out::warning(e);
                continue;
            }
        };
        let cancel = signals.begin_turn();
        agent.run(&prompt, &sink, &cancel).await;
        signals.end_turn();
        if signals.quitting() {
            return Ok(());
        }
    }
}

/// The chat prompt.
const PROMPT: &str = "> ";

/// One line of stdin, without blocking the runtime; `None` at the end.
/// Read in its turn with the other prompts' questions (see
/// [`crate::terminal`]): dropped at Ctrl-C, the read is given up. With
/// `editor`, the line is edited in place (the editor draws the prompt).
async fn read_line(editor: Option<Arc<dyn Completer>>) -> Option<String> {
    // Started inside the question, so only once it is its turn.
    let read = async {
        tokio::task::spawn_blocking(move || {
            if let Some(completer) = editor {
                return crate::terminal::edited_line(PROMPT, completer)
                    .ok()
                    .flatten();
            }
            let mut line = String::new();
            match ask::stdin_lines().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            }
        })
        .await
        .ok()
        .flatten()
    };
    crate::terminal::question(read).await.flatten()
}

/// Ctrl-C: cancels the turn in flight; at the prompt (or a second time
/// while a cancelled turn winds down) it quits.
struct Signals {
    turn: Arc<Mutex<Option<CancelToken>>>,
    quit: watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Signals {
    fn start() -> Signals {
        let turn: Arc<Mutex<Option<CancelToken>>> = Arc::new(Mutex::new(None));
        let (tx, quit) = watch::channel(false);
        let current = turn.clone();
        let task = tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let token = lock(&current).clone();
                match token {
                    Some(t) if !t.is_cancelled() => {
                        out::note("\n(cancelled; Ctrl-C again to quit)");
                        t.cancel();
                    }
                    Some(t) => {
                        t.cancel();
                        tx.send_replace(true);
                    }
                    None => {
                        tx.send_replace(true);
                    }
                }
            }
        });
        Signals { turn, quit, task }
    }

    fn begin_turn(&self) -> CancelToken {
        let token = CancelToken::new();
        *lock(&self.turn) = Some(token.clone());
        token
    }

    fn end_turn(&self) {
        *lock(&self.turn) = None;
    }

    fn quitting(&self) -> bool {
        *self.quit.borrow()
    }

    async fn quit(&self) {
        let mut rx = self.quit.clone();
        let _ = rx.wait_for(|q| *q).await;
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Renders events: the model's text on stdout as it streams; tool calls,
/// results, progress and token counts on stderr. Under `--json`, every
/// event is one JSON line on stdout.
struct Render {
    json: bool,
    stderr_tty: bool,
    state: Mutex<RenderState>,
}

#[derive(Default)]
struct RenderState {
    /// The model's text ended without a newline.
    mid_line: bool,
    bar: Option<ProgressBar>,
}

impl Render {
    fn new(json: bool, stderr_tty: bool) -> Render {
        Render {
            json,
            stderr_tty,
            state: Mutex::new(RenderState::default()),
        }
    }

    fn event(&self, event: &AgentEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = out::line(line);
            }
            return;
        }
        let mut state = lock(&self.state);
        if !matches!(event, AgentEvent::Text { .. }) && state.mid_line {
            let _ = out::line("");
            state.mid_line = false;
        }
        match event {
            AgentEvent::Text { text } => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                state.mid_line = !text.ends_with('\n');
            }
            AgentEvent::ToolCall {
                name,
                server,
                arguments,
                ..
            } => {
                let from = server
                    .as_deref()
                    .map(|s| format!(" [{s}]"))
                    .unwrap_or_default();
                out::note(format!(
                    "→ {name}{from} {}",
                    out::clip(&arguments.to_string(), 200)
                ));
            }
            AgentEvent::Progress {
                progress,
                total,
                message,
                ..
            } => {
                if !self.stderr_tty {
                    return;
                }
                let bar = state.bar.get_or_insert_with(|| {
                    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                    let style = match total {
                        Some(_) => {
                            ProgressStyle::with_template("  {spinner} [{bar:30}] {pos}/{len} {msg}")
                        }
                        None => ProgressStyle::with_template("  {spinner} {pos} {msg}"),
                    };
                    if let Ok(style) = style {
                        bar.set_style(style.progress_chars("=> "));
                    }
                    bar
                });
                if let Some(t) = total {
                    bar.set_length(to_count(*t));
                }
                bar.set_position(to_count(*progress));
                if let Some(m) = message {
                    bar.set_message(m.clone());
                }
            }
            AgentEvent::ToolResult {
                is_error,
                outcome,
                text,
                ..
            } => {
                if let Some(bar) = state.bar.take() {
                    bar.finish_and_clear();
                }
                let first = out::without_markers(text)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let mark = if *is_error {
                    format!("✗ {outcome}")
                } else {
                    "✓".to_owned()
                };
                out::note(format!("  {mark} {}", out::clip(&first, 200)));
            }
            AgentEvent::Approval { .. } => {}
            AgentEvent::Usage { usage, model_calls } => {
                out::note(usage_line(usage, *model_calls));
            }
            AgentEvent::Error { message } => out::note(format!("switchboard: {message}")),
            AgentEvent::Done {
                message: Some(m), ..
            } => out::note(format!("switchboard: {m}")),
            _ => {}
        }
    }
}

fn usage_line(u: &Usage, calls: u32) -> String {
    let mut line = format!(
        "[tokens: {} in, {} out",
        u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
        u.output_tokens
    );
    if u.cache_read_tokens > 0 || u.cache_write_tokens > 0 {
        line.push_str(&format!(
            " ({} read from cache, {} written to it)",
            u.cache_read_tokens, u.cache_write_tokens
        ));
    }
    line.push_str(&format!(
        "; {calls} model call{}]",
        if calls == 1 { "" } else { "s" }
    ));
    line
}
