//! Resolving the raw flags into what the commands run on: the command with
//! its checked arguments, the output mode, who answers approval questions,
//! and the config (a file, or the built-in demo with its tickets server).

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_agent::eval::{Policy, RunOptions, WrongSelector, parse_per_category};
use switchboard_host::{Config, ConfigOrigin};
use switchboard_wire::JsonObject;
use switchboard_wire::shared::lock;
use switchboard_wire::types::value_kind;

use crate::demo_env::{self, DemoTickets, SharedTickets};
use crate::exit::Failure;
use crate::flags::{
    AuditAction, AuthAction, ConfigAction, DemoServerKind, EvalArgs, InspectArgs, PinsAction,
    RawArgs, RawCommand, SkillsAction, StatsBy,
};

/// Everything a command needs, resolved.
#[derive(Debug)]
pub(crate) struct Settings {
    /// `--config FILE`.
    pub(crate) config_path: Option<PathBuf>,
    /// `--json`.
    pub(crate) json: bool,
    /// The command.
    pub(crate) command: Command,
    /// Whether stdin is a terminal (a person can answer a prompt).
    pub(crate) stdin_tty: bool,
    /// Whether stderr is a terminal (progress bars may be drawn).
    pub(crate) stderr_tty: bool,
}

/// A command with its arguments checked.
#[derive(Debug)]
pub(crate) enum Command {
    Demo {
        yes: bool,
    },
    Chat(Chat),
    Tools {
        all: bool,
        principal: Option<String>,
        /// `--search QUERY` and `--limit K`.
        search: Option<(String, usize)>,
    },
    Servers,
    Call {
        tool: String,
        arguments: Option<JsonObject>,
        approval: ApprovalMode,
    },
    PinsList,
    PinsAccept {
        target: String,
        force: bool,
    },
    SkillsList,
    SkillsShow {
        id: String,
        yes: bool,
    },
    SkillsAccept {
        id: String,
    },
    AuditVerify {
        files: Vec<PathBuf>,
    },
    AuditStats {
        file: Option<PathBuf>,
        by: StatsBy,
    },
    ConfigCheck {
        tokens_file: Option<PathBuf>,
    },
    AuthLogin {
        alias: String,
        principal: Option<String>,
        open_browser: bool,
        wait: std::time::Duration,
    },
    AuthLoginIdp {
        name: String,
        open_browser: bool,
        wait: std::time::Duration,
    },
    AuthStatus {
        alias: Option<String>,
        principal: Option<String>,
    },
    AuthLogout {
        alias: String,
        principal: Option<String>,
    },
    Doctor,
    Console {
        no_open: bool,
    },
    Inspect(InspectTarget),
    // Boxed: its settings are many times any other command's.
    Serve(Box<crate::cmd::serve::ServeSettings>),
    DemoServer {
        which: DemoServerKind,
        port: u16,
    },
    Selftest,
    Health {
        url: String,
        timeout: std::time::Duration,
    },
    Eval(EvalSettings),
}

/// `eval`, checked.
#[derive(Debug)]
pub(crate) struct EvalSettings {
    /// The case files.
    pub(crate) files: Vec<PathBuf>,
    /// What is measured.
    pub(crate) subject: EvalSubject,
    /// Repeat, concurrency, follow.
    pub(crate) options: RunOptions,
    /// Thresholds and weights.
    pub(crate) policy: Policy,
    /// `--junit FILE`.
    pub(crate) junit: Option<PathBuf>,
    /// `--save-baseline FILE`.
    pub(crate) save_baseline: Option<PathBuf>,
    /// `--save-report FILE`.
    pub(crate) save_report: Option<PathBuf>,
    /// `--baseline FILE`.
    pub(crate) baseline: Option<PathBuf>,
    /// `--against-pins`.
    pub(crate) against_pins: bool,
    /// `--tool-search`.
    pub(crate) tool_search: Option<crate::flags::SearchMode>,
}

/// What `eval` measures.
#[derive(Debug)]
pub(crate) enum EvalSubject {
    /// A model spec (`mock` is the keyword selector); without one, the
    /// config's `model`.
    Model(Option<String>),
    /// A deliberately wrong selector.
    Selector(WrongSelector),
    /// The cases themselves (`--check-assertions`).
    Assertions,
}

/// `chat`, resolved.
#[derive(Debug)]
pub(crate) struct Chat {
    /// `--model`, or `mock` under `MOCK=1`; else the config decides.
    pub(crate) model: Option<String>,
    /// `-p`: one prompt, then exit.
    pub(crate) prompt: Option<String>,
    /// Who answers the gate.
    pub(crate) approval: ApprovalMode,
    /// Most model calls per prompt.
    pub(crate) max_turns: u32,
    /// The loop guard's count.
    pub(crate) loop_guard: u32,
}

/// Who answers when the gate asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApprovalMode {
    /// `--yes`.
    Yes,
    /// A person at the terminal.
    Prompt,
    /// No one: questions are denied with a message saying how to approve.
    NoOne,
}

/// What `inspect` connects to.
#[derive(Debug, Clone)]
pub(crate) enum InspectTarget {
    /// A command line, already split.
    Stdio(Vec<String>),
    /// An endpoint with headers.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl Settings {
    /// Checks and resolves the raw flags.
    ///
    /// # Errors
    /// A usage [`Failure`] for arguments clap cannot check (JSON, command
    /// lines, headers).
    pub(crate) fn resolve(raw: RawArgs) -> Result<Settings, Failure> {
        let stdin_tty = std::io::stdin().is_terminal();
        let stderr_tty = std::io::stderr().is_terminal();
        let approval = |yes: bool| {
            if yes {
                ApprovalMode::Yes
            } else if stdin_tty {
                ApprovalMode::Prompt
            } else {
                ApprovalMode::NoOne
            }
        };
        let command = match raw.command {
            RawCommand::Demo(a) => Command::Demo { yes: a.yes },
            RawCommand::Chat(a) => {
                if a.max_turns == 0 {
                    return Err(Failure::usage("--max-turns must be at least 1"));
                }
                let mock = std::env::var("MOCK").is_ok_and(|v| !v.is_empty() && v != "0");
                Command::Chat(Chat {
                    model: a.model.or_else(|| mock.then(|| "mock".to_owned())),
                    prompt: a.prompt,
                    approval: approval(a.yes),
                    max_turns: a.max_turns,
                    loop_guard: a.loop_guard,
                })
            }
            RawCommand::Tools(t) => Command::Tools {
                all: t.all,
                principal: t.principal,
                search: t.search.map(|q| (q, t.limit)),
            },
            RawCommand::Servers => Command::Servers,
            RawCommand::Call(a) => {
                let reads_stdin = a.args.as_deref() == Some("-");
                let arguments = parse_arguments(a.args.as_deref())?;
                // Arguments read from stdin leave no one to answer there.
                let approval = match approval(a.yes) {
                    ApprovalMode::Prompt if reads_stdin => ApprovalMode::NoOne,
                    other => other,
                };
                Command::Call {
                    tool: a.tool,
                    arguments,
                    approval,
                }
            }
            RawCommand::Pins(p) => match p.action {
                PinsAction::List => Command::PinsList,
                PinsAction::Accept { target, force } => Command::PinsAccept { target, force },
            },
            RawCommand::Skills(s) => match s.action {
                None => Command::SkillsList,
                Some(SkillsAction::Show { id, yes }) => Command::SkillsShow { id, yes },
                Some(SkillsAction::Accept { id }) => Command::SkillsAccept { id },
            },
            RawCommand::Config(c) => match c.action {
                ConfigAction::Check { tokens_file } => Command::ConfigCheck { tokens_file },
            },
            RawCommand::Audit(a) => match a.action {
                AuditAction::Verify { files } => Command::AuditVerify { files },
                AuditAction::Stats { file, by } => Command::AuditStats { file, by },
            },
            RawCommand::Auth(a) => match a.action {
                AuthAction::Login {
                    alias,
                    idp,
                    principal,
                    no_browser,
                    timeout,
                } => {
                    if timeout == 0 {
                        return Err(Failure::usage("--timeout must be at least 1 second"));
                    }
                    let wait = std::time::Duration::from_secs(timeout);
                    match (alias, idp) {
                        (None, Some(name)) => Command::AuthLoginIdp {
                            name,
                            open_browser: !no_browser,
                            wait,
                        },
                        (Some(alias), None) => Command::AuthLogin {
                            alias,
                            principal,
                            open_browser: !no_browser,
                            wait,
                        },
                        _ => {
                            return Err(Failure::usage(
                                "name a server (auth login ALIAS) or an identity provider (auth login --idp NAME), not both",
                            ));
                        }
                    }
                }
                AuthAction::Status { alias, principal } => Command::AuthStatus { alias, principal },
                AuthAction::Logout { alias, principal } => Command::AuthLogout { alias, principal },
            },
            RawCommand::Doctor => Command::Doctor,
            RawCommand::Console { no_open } => Command::Console { no_open },
            RawCommand::Inspect(a) => Command::Inspect(inspect_target(a)?),
            RawCommand::Serve(a) => Command::Serve(Box::new(crate::cmd::serve::resolve(*a)?)),
            RawCommand::DemoServer(a) => Command::DemoServer {
                which: a.which,
                port: a.port,
            },
            RawCommand::Selftest => Command::Selftest,
            RawCommand::Health(a) => Command::Health {
                url: a.url,
                timeout: std::time::Duration::from_millis(a.timeout_ms),
            },
            RawCommand::Eval(a) => Command::Eval(eval_settings(a)?),
        };
        Ok(Settings {
            config_path: raw.config,
            json: raw.json,
            command,
            stdin_tty,
            stderr_tty,
        })
    }

    /// Loads the config the usual way (`--config`, `$SWITCHBOARD_CONFIG`,
    /// `./.mcp.json`, the user config dir) or, with none of them, the
    /// built-in demo, whose tickets port is reserved (the server starts
    /// when the config is mounted).
    ///
    /// # Errors
    /// A usage [`Failure`] listing every problem of the config.
    pub(crate) fn load_config(&self) -> Result<Loaded, Failure> {
        let tickets: SharedTickets = Arc::new(Mutex::new(DemoTickets::default()));
        let config = Config::load(
            self.config_path.as_deref(),
            demo_env::provider(tickets.clone()),
        )
        .map_err(|e| Failure::usage(e.to_string()))?;
        let tickets = std::mem::take(&mut *lock(&tickets));
        Ok(Loaded { config, tickets })
    }
}

/// A loaded config, and the demo's tickets server when the demo is used.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The config.
    pub(crate) config: Config,
    /// The demo's tickets server, not started yet (empty unless the demo
    /// is used).
    pub(crate) tickets: DemoTickets,
}

impl Loaded {
    /// Whether this is the built-in demo.
    pub(crate) fn is_demo(&self) -> bool {
        self.config.origin == ConfigOrigin::Demo
    }
}

/// `ARGS_JSON`: a JSON object, `-` for stdin, or nothing.
fn parse_arguments(text: Option<&str>) -> Result<Option<JsonObject>, Failure> {
    let text = match text {
        None => return Ok(None),
        Some("-") => {
            let mut buf = String::new();
            std::io::stdin().read_to_string(&mut buf).map_err(|e| {
                Failure::usage(format!("cannot read the arguments from stdin: {e}"))
            })?;
            buf
        }
        Some(t) => t.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(Failure::usage(format!(
            "ARGS_JSON must be a JSON object like '{{\"query\": \"printer\"}}', not {}",
            value_kind(&other)
        ))),
        Err(e) => Err(Failure::usage(format!(
            "ARGS_JSON is not valid JSON ({e}); write an object like '{{\"query\": \"printer\"}}'"
        ))),
    }
}

fn eval_settings(a: EvalArgs) -> Result<EvalSettings, Failure> {
    let subject = if a.check_assertions {
        EvalSubject::Assertions
    } else if let Some(s) = a.selector {
        EvalSubject::Selector(WrongSelector::parse(&s).map_err(Failure::usage)?)
    } else {
        EvalSubject::Model(a.model)
    };
    if a.repeat == 0 || a.concurrency == 0 {
        return Err(Failure::usage(
            "--repeat and --concurrency must be at least 1",
        ));
    }
    let defaults = Policy::default();
    let min = match &a.min {
        Some(text) => parse_per_category(text, &defaults.min, true)
            .map_err(|e| Failure::usage(format!("--min {e}")))?,
        None => defaults.min,
    };
    let weights = match &a.weights {
        Some(text) => parse_per_category(text, &defaults.weights, false)
            .map_err(|e| Failure::usage(format!("--weights {e}")))?,
        None => defaults.weights,
    };
    let files = if a.files.is_empty() {
        default_case_files()?
    } else {
        a.files
    };
    Ok(EvalSettings {
        files,
        subject,
        options: RunOptions {
            repeat: a.repeat,
            concurrency: a.concurrency,
            follow: a.follow,
            ..RunOptions::default()
        },
        policy: Policy { min, weights },
        junit: a.junit,
        save_baseline: a.save_baseline,
        save_report: a.save_report,
        baseline: a.baseline,
        against_pins: a.against_pins,
        tool_search: a.tool_search,
    })
}

/// Every `evals/*.json` but `schema.json`, in name order.
fn default_case_files() -> Result<Vec<PathBuf>, Failure> {
    let none = || {
        Failure::usage(
            "no case files: give them (e.g. evals/demo.json), or run where evals/*.json are",
        )
    };
    let entries = std::fs::read_dir("evals").map_err(|_| none())?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name().is_some_and(|n| n != "schema.json")
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(none());
    }
    Ok(files)
}

fn inspect_target(a: InspectArgs) -> Result<InspectTarget, Failure> {
    if let Some(cmd) = a.stdio {
        let words = shell_words::split(&cmd)
            .map_err(|e| Failure::usage(format!("--stdio {cmd:?}: {e}")))?;
        if words.is_empty() {
            return Err(Failure::usage(
                "--stdio needs a command, e.g. --stdio 'switchboard demo-server notes'",
            ));
        }
        return Ok(InspectTarget::Stdio(words));
    }
    let url = a
        .http
        .ok_or_else(|| Failure::usage("give --stdio 'CMD ARGS…' or --http URL"))?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(Failure::usage(format!(
            "--http {url:?}: the URL must start with http:// or https://"
        )));
    }
    let mut headers = Vec::new();
    for h in a.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(Failure::usage(format!(
                "--header {h:?}: write it as 'Name: value'"
            )));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(InspectTarget::Http { url, headers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments(None).unwrap(), None);
        let args = parse_arguments(Some(r#"{"q": 1}"#)).unwrap().unwrap();
        assert_eq!(args["q"], 1);
        let e = parse_arguments(Some("[1]")).unwrap_err();
        assert!(e.message.contains("not an array"), "{}", e.message);
        let e = parse_arguments(Some("{nope")).unwrap_err();
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
    }

    #[test]
    fn inspect_targets() {
        let t = inspect_target(InspectArgs {
            stdio: Some("switchboard demo-server 'notes'".into()),
            http: None,
            headers: vec![],
        })
        .unwrap();
        assert!(
            matches!(t, InspectTarget::Stdio(w) if w == ["switchboard", "demo-server", "notes"])
        );
        let e = inspect_target(InspectArgs {
            stdio: None,
            http: Some("127.0.0.1:1/mcp".into()),
            headers: vec![],
        })
        .unwrap_err();
        assert!(e.message.contains("http://"));
        let t = inspect_target(InspectArgs {
            stdio: None,
            http: Some("http://127.0.0.1:1/mcp".into()),
            headers: vec!["Authorization: Bearer x".into()],
        })
        .unwrap();
        assert!(
            matches!(t, InspectTarget::Http { headers, .. } if headers == [("Authorization".to_owned(), "Bearer x".to_owned())])
        );
    }
}
