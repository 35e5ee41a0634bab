//! Servers' questions on the terminal: elicitation forms and URLs, and
//! approval of sampling requests (questions on stderr, answers on stdin),
//! plus the built-in demo sampler used while no model is configured.
//!
//! The host decides what is declared and what an answer means
//! ([`HostInput`]); this module only shows and reads, through the shared
//! stdin of [`terminal`] (one question at a time; a question whose call is
//! dropped is withdrawn at once).

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_agent::{ModelSampler, ModelSettings, ProcessEnv, model_from_spec_with};
use switchboard_client::{BoxFuture, InputHandler};
use switchboard_host::BoxFuture as ApproveFuture;
use switchboard_host::sampled_text;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, Asker, Config, ConfigOrigin, Decider, ElicitAnswer,
    Elicitation, ElicitationKind, Form, HostInput, PromptApprover, Sampler, SamplingRequest,
};
use switchboard_wire::JsonObject;
use switchboard_wire::shared::lock;

use crate::settings::{ApprovalMode, Command, Settings};
use crate::terminal;

/// The input handler for `settings`' command, if it answers servers'
/// questions: `serve` does not (its stdin may be the protocol, and the
/// questions belong to the agent upstream).
pub(crate) fn for_command(settings: &Settings, config: &Config) -> Option<Arc<dyn InputHandler>> {
    let (person, yes) = match &settings.command {
        // The gateway relays servers' questions to its own client.
        Command::Serve { .. } => return Some(switchboard_gateway::relay_input_handler(None)),
        Command::Call { approval, .. } => (
            settings.stdin_tty && *approval != ApprovalMode::NoOne,
            *approval == ApprovalMode::Yes,
        ),
        Command::Demo { yes } => (settings.stdin_tty, *yes),
        _ => (settings.stdin_tty, false),
    };
    Some(input_handler(config, person, yes))
}

/// The input handler of a command, with the config's model answering
/// sampling ([`config_sampler`]).
pub(crate) fn input_handler(config: &Config, person: bool, yes: bool) -> Arc<dyn InputHandler> {
    input_handler_with(config, person, yes, config_sampler(config))
}

/// Who answers sampling outside `chat`: the config's `"model"` when it
/// names one (a model that cannot be built declines every request, saying
/// why); on the built-in demo, the demo sampler's fixed, labelled answer;
/// otherwise no one, and sampling is not declared to servers at all (a
/// capability is declared only when it can be answered).
pub(crate) fn config_sampler(config: &Config) -> Option<Arc<dyn Sampler>> {
    let Some(model) = &config.model else {
        return (config.origin == ConfigOrigin::Demo).then(|| Arc::new(DemoSampler) as _);
    };
    let settings = ModelSettings {
        base_url: model.base_url.clone(),
    };
    Some(
        match model_from_spec_with(&model.name, &settings, &ProcessEnv) {
            Ok(model) => Arc::new(ModelSampler::new(model)),
            Err(e) => Arc::new(UnusableModel {
                name: model.name.clone(),
                reason: e.to_string(),
            }),
        },
    )
}

/// The config's model, when it cannot be used: every sampling request is
/// declined with the reason.
#[derive(Debug)]
struct UnusableModel {
    name: String,
    reason: String,
}

impl Sampler for UnusableModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn create_message<'a>(
        &'a self,
        _server: &'a str,
        _params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            Err(format!(
                "the config's model {} cannot be used: {}",
                self.name, self.reason
            ))
        })
    }
}

/// The input handler of a command: roots from `config`, the terminal for
/// questions when a person is there (`person`: stdin is a terminal the
/// command does not read data from), and `sampler` for sampling, approved
/// on the terminal or by `--yes` (`yes`), declined otherwise; without a
/// sampler, sampling is not declared.
pub(crate) fn input_handler_with(
    config: &Config,
    person: bool,
    yes: bool,
    sampler: Option<Arc<dyn Sampler>>,
) -> Arc<dyn InputHandler> {
    let mut input = HostInput::for_config(config).preapprove_sampling(yes);
    if let Some(sampler) = sampler {
        input = input.with_sampler(sampler);
    }
    if person {
        input = input.with_asker(Arc::new(TerminalAsker::new(
            stdin_lines(),
            std::io::stderr(),
        )));
    }
    Arc::new(input)
}

/// Lines of stdin for a prompt's answers: every prompt shares one reader
/// (see [`terminal`]), so none swallows another's answer, and a withdrawn
/// question's read ends at once.
pub(crate) fn stdin_lines() -> impl BufRead + Send + 'static {
    terminal::StdinLines::default()
}

/// The gate's approval prompt on the terminal (questions on stderr,
/// answers on stdin).
pub(crate) fn terminal_approver() -> Arc<dyn Approver> {
    Arc::new(TerminalApprover {
        prompt: PromptApprover::new(stdin_lines(), std::io::stderr()),
    })
}

/// [`PromptApprover`] taking its turn on the terminal: its questions come
/// one at a time with every other question (calls of one model turn run
/// together), and a question whose call is dropped (Ctrl-C) is withdrawn
/// at once, answered as denied, instead of leaving a read waiting for the
/// next line typed.
#[derive(Debug, Clone)]
struct TerminalApprover {
    prompt: PromptApprover,
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApproveFuture<'a, Approval> {
        let prompt = self.prompt.clone();
        let request = request.clone();
        Box::pin(async move {
            terminal::question(async move { prompt.approve(&request).await })
                .await
                .unwrap_or_else(|| Approval::Deny(Some("the approval prompt failed".into())))
        })
    }

    fn decider(&self) -> Decider {
        self.prompt.decider()
    }
}

type Io = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Asks on a terminal, one question at a time.
#[derive(Clone)]
pub(crate) struct TerminalAsker {
    io: Arc<Mutex<Io>>,
}

impl std::fmt::Debug for TerminalAsker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalAsker").finish_non_exhaustive()
    }
}

impl TerminalAsker {
    /// Questions to `output`, answers from `input`.
    pub(crate) fn new(
        input: impl BufRead + Send + 'static,
        output: impl Write + Send + 'static,
    ) -> Self {
        TerminalAsker {
            io: Arc::new(Mutex::new((Box::new(input), Box::new(output)))),
        }
    }

    /// Runs `ask` on the terminal, off the async workers, in its turn
    /// with every other question; `fallback` when the input ended or the
    /// question was withdrawn (its future dropped).
    async fn with_io<T: Send + 'static>(
        &self,
        fallback: T,
        ask: impl FnOnce(&mut Terminal<'_>) -> Option<T> + Send + 'static,
    ) -> T {
        let io = self.io.clone();
        // Started inside the question, so only once it is its turn.
        let blocking = async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = lock(&io);
                let (input, output) = &mut *guard;
                let mut t = Terminal {
                    input: input.as_mut(),
                    output: output.as_mut(),
                };
                ask(&mut t)
            })
            .await
            .ok()
            .flatten()
        };
        terminal::question(blocking)
            .await
            .flatten()
            .unwrap_or(fallback)
    }
}

/// One locked terminal; `None` from a method means the input ended (or
/// the terminal failed).
struct Terminal<'a> {
    input: &'a mut (dyn BufRead + Send),
    output: &'a mut (dyn Write + Send),
}

impl Terminal<'_> {
    fn say(&mut self, text: &str) -> Option<()> {
        self.output.write_all(text.as_bytes()).ok()?;
        self.output.flush().ok()
    }

    fn ask(&mut self, prompt: &str) -> Option<String> {
        self.say(prompt)?;
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = self.say("\n");
                None
            }
            Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        }
    }

    /// Fills `form` field by field (a wrong answer is explained and asked
    /// again), shows the answers, then send / decline / cancel.
    fn form(&mut self, form: &Form) -> Option<ElicitAnswer> {
        let mut content = JsonObject::new();
        for field in &form.fields {
            let mut label = field.name.clone();
            if let Some(d) = field.description.as_ref().or(field.title.as_ref()) {
                label.push_str(&format!(" ({d})"));
            }
            let default = match &field.default {
                Some(Value::String(s)) => format!(" [{s}]"),
                Some(v) => format!(" [{v}]"),
                None if !field.required => " [leave empty to skip]".to_owned(),
                None => String::new(),
            };
            loop {
                let typed = self.ask(&format!("  {label}, {}{default}: ", field.hint()))?;
                match field.read(&typed) {
                    Ok(Some(v)) => {
                        content.insert(field.name.clone(), v);
                        break;
                    }
                    Ok(None) => break,
                    Err(e) => self.say(&format!("    not accepted: {e}\n"))?,
                }
            }
        }
        let shown = serde_json::to_string(&content).unwrap_or_default();
        let choice = self.ask(&format!(
            "  answer: {shown}\n  [Y] send it, [d] decline, [c] cancel: "
        ))?;
        Some(match choice.trim() {
            "" | "y" | "Y" | "yes" => ElicitAnswer::Accept(content),
            "d" | "D" | "decline" => ElicitAnswer::Decline,
            _ => ElicitAnswer::Cancel,
        })
    }
}

impl Asker for TerminalAsker {
    fn elicit<'a>(&'a self, question: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer> {
        let question = question.clone();
        Box::pin(self.with_io(ElicitAnswer::Cancel, move |t| {
            t.say(&question.render())?;
            match &question.kind {
                ElicitationKind::Form(form) => t.form(form),
                ElicitationKind::Url { .. } => {
                    let choice = t.ask(
                        "  Switchboard does not open it: open it in your browser yourself if you trust it.\n  \
                         [y] accept (I will open it), [d] decline, [c] cancel: ",
                    )?;
                    Some(match choice.trim() {
                        "y" | "Y" | "yes" => ElicitAnswer::Accept(JsonObject::new()),
                        "d" | "D" | "decline" => ElicitAnswer::Decline,
                        _ => ElicitAnswer::Cancel,
                    })
                }
            }
        }))
    }

    fn approve_sampling<'a>(&'a self, request: &'a SamplingRequest) -> BoxFuture<'a, bool> {
        let request = request.clone();
        Box::pin(self.with_io(false, move |t| {
            let choice = t.ask(&format!(
                "{}  [y] let the model answer, [N] decline: ",
                request.render()
            ))?;
            Some(matches!(choice.trim(), "y" | "Y" | "yes"))
        }))
    }

    fn show_sampled<'a>(
        &'a self,
        request: &'a SamplingRequest,
        answer: &'a Value,
    ) -> BoxFuture<'a, ()> {
        let text = format!(
            "  the model's answer, sent to {}: {}\n",
            request.server,
            sampled_text(answer).replace('\n', "\n    ")
        );
        Box::pin(self.with_io((), move |t| t.say(&text)))
    }
}

/// The model of `sampling/createMessage` while no model is configured: a
/// fixed, clearly labelled answer that does not read the request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DemoSampler;

/// The `model` the demo sampler reports.
pub(crate) const DEMO_SAMPLER_MODEL: &str = "switchboard-demo-sampler";

impl Sampler for DemoSampler {
    fn name(&self) -> String {
        format!("{DEMO_SAMPLER_MODEL} (no model is configured: a fixed answer)")
    }

    fn create_message<'a>(
        &'a self,
        _server: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        let messages = params
            .get("messages")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let text = format!(
            "[demo sampler] No model is configured, so this is a fixed answer, not a summary \
             ({messages} message(s) received)."
        );
        Box::pin(async move {
            Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": text},
                "model": DEMO_SAMPLER_MODEL,
                "stopReason": "endTurn",
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use switchboard_host::FormField;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn question() -> Elicitation {
        let form = Form::parse(&json!({
            "type": "object",
            "properties": {
                "priority": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
                "count": {"type": "integer"}
            },
            "required": ["count"]
        }))
        .unwrap();
        let _: &FormField = &form.fields[0];
        Elicitation {
            server: "tickets".into(),
            message: "Details?".into(),
            kind: ElicitationKind::Form(form),
        }
    }

    async fn answer(typed: &str) -> (ElicitAnswer, String) {
        let out = Shared::default();
        let asker = TerminalAsker::new(Cursor::new(typed.as_bytes().to_vec()), out.clone());
        let a = asker.elicit(&question()).await;
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        (a, shown)
    }

    // ELIC-07, ELIC-08, ELIC-09.
    #[tokio::test]
    async fn forms_are_asked_field_by_field() {
        let (a, shown) = answer("\nmany\n3\n\n").await;
        let ElicitAnswer::Accept(content) = a else {
            panic!("{a:?}")
        };
        assert_eq!(json!(content), json!({"priority": "normal", "count": 3}));
        assert!(shown.contains("server tickets asks"), "{shown}");
        assert!(shown.contains("not accepted"), "{shown}");
        assert_eq!(answer("high\n3\nd\n").await.0, ElicitAnswer::Decline);
        assert_eq!(answer("high\n3\nc\n").await.0, ElicitAnswer::Cancel);
        // The input ending is a cancel.
        assert_eq!(answer("high\n").await.0, ElicitAnswer::Cancel);
    }

    #[tokio::test]
    async fn sampling_is_approved_with_y_only() {
        let request = SamplingRequest {
            server: "notes".into(),
            params: json!({"messages": []}),
            answered_by: DemoSampler.name(),
        };
        for (typed, want) in [("y\n", true), ("\n", false), ("", false)] {
            let asker =
                TerminalAsker::new(Cursor::new(typed.as_bytes().to_vec()), Shared::default());
            assert_eq!(asker.approve_sampling(&request).await, want, "{typed:?}");
        }
        let v = DemoSampler
            .create_message("notes", &request.params)
            .await
            .unwrap();
        assert_eq!(v["model"], DEMO_SAMPLER_MODEL);
    }
}
