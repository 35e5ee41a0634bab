//! Who answers when the gate asks.
//!
//! The host asks through an [`Approver`], showing the server, the original
//! tool name, the reasons for asking and the **actual arguments**. Three
//! approvers come with the crate:
//! - [`PromptApprover`]: an interactive prompt on a terminal (allow once,
//!   allow this tool for the rest of the session, allow always — a rule
//!   written into the config file —, deny);
//! - [`AssumeYes`]: `--yes`, answers every question with yes (it never
//!   sees denials: `deny` rules are settled before anyone is asked);
//! - [`NoApprover`]: no terminal and no `--yes`: every question is denied,
//!   with a message saying how to approve.

use std::collections::HashSet;
use std::fmt;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_wire::ToolAnnotations;
use switchboard_wire::shared::lock;

use crate::audit::Decider;
use crate::sanitize;

/// A boxed, sendable future (the one alias of the workspace).
pub(crate) use switchboard_wire::BoxFuture;

/// A question for the user about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The model-facing name.
    pub local_name: String,
    /// The server's alias.
    pub alias: String,
    /// The tool's name on the server.
    pub original_name: String,
    /// The arguments the call will carry, exactly.
    pub arguments: Value,
    /// Why the gate asks (rules, annotations, a changed definition).
    pub reasons: Vec<String>,
    /// Line diff of the tool's definition when it changed since approval.
    pub diff: Option<String>,
    /// The server's (untrusted) annotations.
    pub annotations: Option<ToolAnnotations>,
    /// The rule "allow always" would add (`mcp__alias__tool`).
    pub suggested_rule: String,
    /// Where "allow always" writes it; `None` when the config has no file
    /// (the option should not be offered).
    pub config_file: Option<String>,
    /// When the question is about loading a skill served by `alias`
    /// rather than about a tool call: what the user approves.
    pub skill: Option<SkillQuestion>,
}

/// What a question about loading a skill shows: "allow always" records
/// the skill's files (their `{uri, digest}` set) in the lockfile instead
/// of adding a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillQuestion {
    /// `ALIAS:SKILL_PATH`.
    pub id: String,
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Files its entry lists, and their bytes (`None` for a dynamic skill).
    pub files: Option<(usize, u64)>,
    /// The lockfile "allow always" records the approval in; `None` when it
    /// cannot be recorded (no lockfile, or a dynamic skill).
    pub lockfile: Option<String>,
    /// Its frontmatter's `allowed-tools`, shown as ignored.
    pub allowed_tools: Option<String>,
}

impl ApprovalRequest {
    /// The arguments as every approval surface shows them (the terminal
    /// prompt, the gateway's elicitation, the console): pretty JSON with
    /// each invisible or text-direction character escaped
    /// ([`sanitize::show_arguments`]); when any was,
    /// [`sanitize::HIDDEN_NOTICE`] must be shown beside them.
    pub fn shown_arguments(&self) -> sanitize::Shown {
        sanitize::show_arguments(&self.arguments)
    }

    /// The question as text for a terminal: server, tool, arguments
    /// (pretty JSON, invisible characters shown as `\u{…}` escapes so the
    /// model cannot hide anything from the person reading, with a sentence
    /// saying so when there were any), reasons, diff.
    pub fn render(&self) -> String {
        if let Some(skill) = &self.skill {
            return self.render_skill(skill);
        }
        let mut out = String::new();
        out.push_str("Switchboard: a tool call needs your approval\n");
        out.push_str(&format!("  server:    {}\n", self.alias));
        out.push_str(&format!(
            "  tool:      {} (model name {})\n",
            visible(&self.original_name),
            self.local_name
        ));
        let args = self.shown_arguments();
        let shown = args.text.replace('\n', "\n             ");
        out.push_str(&format!("  arguments: {shown}\n"));
        if args.escaped {
            out.push_str(&format!("  {}\n", sanitize::HIDDEN_NOTICE));
        }
        for reason in &self.reasons {
            out.push_str(&format!("  why asked: {}\n", visible(reason)));
        }
        if let Some(diff) = &self.diff {
            out.push_str("  the tool's definition changed since you approved it:\n");
            for line in diff.lines() {
                out.push_str(&format!("    {}\n", visible(line)));
            }
        }
        out
    }
}

impl ApprovalRequest {
    fn render_skill(&self, skill: &SkillQuestion) -> String {
        let mut out = String::new();
        out.push_str("Switchboard: loading a skill needs your approval\n");
        out.push_str(&format!("  skill:     {}\n", visible(&skill.id)));
        out.push_str(&format!(
            "  served by: {} (an MCP server, not a local skill)\n",
            self.alias
        ));
        out.push_str(&format!("  uri:       {}\n", visible(&skill.uri)));
        match skill.files {
            Some((files, bytes)) => {
                out.push_str(&format!("  files:     {files} ({bytes} bytes)\n"));
            }
            None => out.push_str(
                "  files:     dynamic (no digests: this approval covers this load only)\n",
            ),
        }
        if let Some(tools) = &skill.allowed_tools {
            out.push_str(&format!(
                "  allowed-tools: {} (ignored: a served skill never widens any permission)\n",
                visible(tools)
            ));
        }
        for reason in &self.reasons {
            out.push_str(&format!("  why asked: {}\n", visible(reason)));
        }
        if let Some(diff) = &self.diff {
            out.push_str("  its files changed since you approved it:\n");
            for line in diff.lines() {
                out.push_str(&format!("    {}\n", visible(line)));
            }
        }
        out.push_str(&format!(
            "  inspect it first with `switchboard skills show {}`\n",
            skill.id
        ));
        out
    }

    /// What "allow always" does, when it is offered: where it is recorded.
    fn always(&self) -> Option<String> {
        match &self.skill {
            Some(skill) => skill
                .lockfile
                .as_ref()
                .map(|lock| format!("records the skill's files in {lock}")),
            None => self.config_file.as_ref().map(|file| {
                format!(
                    "adds {} to permissions.allow in {file}",
                    self.suggested_rule
                )
            }),
        }
    }

    /// What "for the session" allows: the tool, or the skill.
    fn session_key(&self) -> &str {
        match &self.skill {
            Some(skill) => &skill.id,
            None => &self.local_name,
        }
    }
}

/// Shows invisible characters as `\u{…}` escapes
/// ([`sanitize::show_invisible`]).
pub(crate) fn visible(text: &str) -> String {
    sanitize::show_invisible(text).text
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    AllowOnce,
    /// Run this call, and add an allow rule for the tool to the config.
    AllowAlways,
    /// Do not run it; the text (if any) says why, for the model.
    Deny(Option<String>),
    /// No one here can answer: the call does not run, and ends with the
    /// question in [`crate::CallReport::approval_needed`] so the caller can
    /// put it to someone else (the gateway asks its upstream user) and call
    /// again with the answer. The audit line's outcome is `asked`.
    Defer,
}

/// Answers the gate's questions.
pub trait Approver: Send + Sync + fmt::Debug {
    /// Answers one question. Questions come one at a time per approver
    /// only if the approver serialises them; [`PromptApprover`] does.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;

    /// Who this approver is, for the audit log.
    fn decider(&self) -> Decider {
        Decider::Human
    }
}

/// `--yes`: every question is answered with "allow once".
#[derive(Debug, Clone, Copy, Default)]
pub struct AssumeYes;

impl Approver for AssumeYes {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async { Approval::AllowOnce })
    }

    fn decider(&self) -> Decider {
        Decider::Yes
    }
}

/// No one to ask: every question is denied with a message saying how to
/// approve the call.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoApprover;

impl Approver for NoApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let place = request
            .config_file
            .as_deref()
            .map_or_else(|| "the config".to_owned(), |f| f.to_owned());
        let text = format!(
            "This call needs the user's approval, but there is no terminal to ask on. \
             The user can rerun with --yes, or allow the tool by adding {:?} to permissions.allow in {place}.",
            request.suggested_rule
        );
        Box::pin(async move { Approval::Deny(Some(text)) })
    }

    fn decider(&self) -> Decider {
        Decider::NoApprover
    }
}

type Io = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// An interactive prompt: writes the question to `output` and reads one
/// line from `input`: `y` allow once, `s` allow this tool for the rest of
/// the session, `a` allow always (only when the config has a file to
/// write the rule into), anything else (or end of input) denies.
/// Questions are asked one at a time.
///
/// The session's allowances live in the approver (and its clones): keep
/// one for the whole session. They are consulted only when the gate asks,
/// so `deny` rules still win; a tool whose definition changed is asked
/// about again.
#[derive(Clone)]
pub struct PromptApprover {
    io: Arc<Mutex<Io>>,
    session: Arc<Mutex<HashSet<String>>>,
}

impl fmt::Debug for PromptApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptApprover").finish_non_exhaustive()
    }
}

impl PromptApprover {
    /// A prompt reading answers from `input` and writing questions to
    /// `output` (a terminal: stdin and stderr, or `/dev/tty`).
    pub fn new(input: impl BufRead + Send + 'static, output: impl Write + Send + 'static) -> Self {
        PromptApprover {
            io: Arc::new(Mutex::new((Box::new(input), Box::new(output)))),
            session: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// Whether `request`'s tool was allowed for the session (and its
    /// definition has not changed since).
    fn allowed_for_session(&self, request: &ApprovalRequest) -> bool {
        request.diff.is_none() && lock(&self.session).contains(request.session_key())
    }

    fn ask_blocking(io: &Mutex<Io>, request: &ApprovalRequest) -> Answer {
        let mut guard = lock(io);
        let (input, output) = &mut *guard;
        let always = request.always();
        let what = if request.skill.is_some() {
            "skill"
        } else {
            "tool"
        };
        let choices = match &always {
            Some(always) => format!(
                "[y] allow once, [s] allow this {what} for the session, \
                 [a] allow always ({always}), [N] deny: "
            ),
            None if request.skill.is_some() => format!(
                "(allow always is not offered: there is no lockfile to record it in, or the skill is dynamic)\n\
                 [y] allow once, [s] allow this {what} for the session, [N] deny: "
            ),
            None => format!(
                "(allow always is not offered: there is no config file to write the rule to)\n\
                 [y] allow once, [s] allow this {what} for the session, [N] deny: "
            ),
        };
        let always = always.is_some();
        if write!(output, "{}{choices}", request.render())
            .and_then(|()| output.flush())
            .is_err()
        {
            return Answer::Once(Approval::Deny(Some(
                "the approval prompt could not be shown".into(),
            )));
        }
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = writeln!(output);
                Answer::Once(Approval::Deny(Some(
                    "no answer was given to the approval prompt".into(),
                )))
            }
            Ok(_) => match line.trim() {
                "y" | "Y" | "yes" => Answer::Once(Approval::AllowOnce),
                "s" | "S" | "session" => Answer::Session,
                "a" | "A" | "always" if always => Answer::Once(Approval::AllowAlways),
                _ => Answer::Once(Approval::Deny(None)),
            },
        }
    }
}

/// What was typed at the prompt.
enum Answer {
    Once(Approval),
    Session,
}

impl Approver for PromptApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            if self.allowed_for_session(request) {
                return Approval::AllowOnce;
            }
            let io = self.io.clone();
            let asked = request.clone();
            // Terminal I/O blocks: keep it off the async workers.
            let answer =
                tokio::task::spawn_blocking(move || PromptApprover::ask_blocking(&io, &asked))
                    .await;
            match answer {
                Ok(Answer::Once(approval)) => approval,
                Ok(Answer::Session) => {
                    lock(&self.session).insert(request.session_key().to_owned());
                    Approval::AllowOnce
                }
                Err(_) => Approval::Deny(Some("the approval prompt failed".into())),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            local_name: "mcp__notes__search".into(),
            alias: "notes".into(),
            original_name: "search".into(),
            arguments: serde_json::json!({"q": "pay\u{202e}ment"}),
            reasons: vec!["no rule allows this tool".into()],
            diff: None,
            annotations: None,
            suggested_rule: "mcp__notes__search".into(),
            config_file: Some("/p/.mcp.json".into()),
            skill: None,
        }
    }

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

    #[test]
    fn render_shows_arguments_with_invisible_characters_escaped() {
        let text = request().render();
        assert!(text.contains("server:    notes"), "{text}");
        assert!(text.contains("tool:      search"), "{text}");
        assert!(text.contains("\"q\": \"pay\\u{202e}ment\""), "{text}");
        assert!(!text.contains('\u{202e}'));
        // Issue 36: and says the arguments held such characters.
        assert!(text.contains(sanitize::HIDDEN_NOTICE), "{text}");
        let mut plain = request();
        plain.arguments = serde_json::json!({"q": "payment"});
        assert!(!plain.render().contains(sanitize::HIDDEN_NOTICE));
    }

    #[tokio::test]
    async fn prompt_answers() {
        for (answer, want) in [
            ("y\n", Approval::AllowOnce),
            ("a\n", Approval::AllowAlways),
            ("n\n", Approval::Deny(None)),
            ("\n", Approval::Deny(None)),
        ] {
            let out = Shared::default();
            let p = PromptApprover::new(Cursor::new(answer.as_bytes().to_vec()), out.clone());
            assert_eq!(p.approve(&request()).await, want, "{answer:?}");
            let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
            assert!(shown.contains("allow always"), "{shown}");
        }
        // End of input denies.
        let p = PromptApprover::new(Cursor::new(Vec::new()), Shared::default());
        assert!(matches!(
            p.approve(&request()).await,
            Approval::Deny(Some(_))
        ));
        // "s" allows the tool for the rest of the session: asked once only,
        // unless its definition changed.
        let out = Shared::default();
        let p = PromptApprover::new(Cursor::new(b"s\n".to_vec()), out.clone());
        assert_eq!(p.approve(&request()).await, Approval::AllowOnce);
        assert_eq!(p.clone().approve(&request()).await, Approval::AllowOnce);
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(shown.matches("needs your approval").count(), 1, "{shown}");
        let mut other = request();
        other.local_name = "mcp__notes__read".into();
        assert!(matches!(p.approve(&other).await, Approval::Deny(Some(_))));
        let mut changed = request();
        changed.diff = Some("-a\n+b".into());
        assert!(matches!(p.approve(&changed).await, Approval::Deny(Some(_))));
        // Without a config file, "always" is not offered nor accepted.
        let mut r = request();
        r.config_file = None;
        let out = Shared::default();
        let p = PromptApprover::new(Cursor::new(b"a\n".to_vec()), out.clone());
        assert_eq!(p.approve(&r).await, Approval::Deny(None));
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("no config file to write"), "{shown}");
        assert!(!shown.contains("[a] allow always"), "{shown}");
    }

    #[tokio::test]
    async fn yes_and_no_approvers() {
        assert_eq!(AssumeYes.approve(&request()).await, Approval::AllowOnce);
        assert_eq!(AssumeYes.decider(), Decider::Yes);
        let Approval::Deny(Some(text)) = NoApprover.approve(&request()).await else {
            panic!("not denied")
        };
        assert!(
            text.contains("--yes") && text.contains("/p/.mcp.json"),
            "{text}"
        );
        assert_eq!(NoApprover.decider(), Decider::NoApprover);
    }
}
