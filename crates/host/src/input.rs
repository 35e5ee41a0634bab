//! Answering servers' questions: elicitation, sampling and roots.
//!
//! [`HostInput`] is the client's [`InputHandler`] the host hands every
//! upstream client (through [`MountOptions::input_handler`]); the client
//! tells it which server asks (the alias, ELIC-07), on both eras (MRTR
//! `input_required` and a legacy server's own requests). It knows no
//! terminal: a person is reached through an [`Asker`], a model through a
//! [`Sampler`], both supplied by the front end. It declares only what it
//! can answer:
//! - elicitation (form and URL) with an [`Asker`];
//! - sampling with a [`Sampler`]; each request is approved first by the
//!   [`Asker`] (or by `--yes`), and declined when no one can approve it;
//! - roots from the config (`"roots"`, default the working directory),
//!   unless the list is empty.
//!
//! [`MountOptions::input_handler`]: crate::MountOptions::input_handler

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport};
use switchboard_wire::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, JsonObject, ListRootsResult, Root,
};

use crate::approver::visible;
use crate::config::Config;
use crate::form::Form;

/// A question of a server for the person at the front end.
#[derive(Clone, Debug, PartialEq)]
pub struct Elicitation {
    /// The server's alias.
    pub server: String,
    /// The server's message, as it sent it (show it with `visible`-style
    /// escaping: [`Elicitation::render`] does).
    pub message: String,
    /// A form to fill in, or a URL to visit.
    pub kind: ElicitationKind,
}

/// What an [`Elicitation`] asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationKind {
    /// Fill in these fields.
    Form(Form),
    /// Complete a flow at this URL, out of band: the front end shows the
    /// full URL and never opens or fetches it by itself (ELIC-14).
    Url {
        /// The URL, exactly as sent.
        url: String,
        /// Its host, for the user to check (ELIC-15).
        host: Option<String>,
    },
}

/// The person's answer to an [`Elicitation`] (ELIC-07: decline and cancel
/// are distinct).
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitAnswer {
    /// Submitted: the form's fields (empty for a URL flow the person agreed
    /// to).
    Accept(JsonObject),
    /// Said no.
    Decline,
    /// Dismissed without choosing (or could not be asked).
    Cancel,
}

/// A server's `sampling/createMessage` request, for the person to approve
/// before the model sees it (SAMP-11).
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingRequest {
    /// The server's alias.
    pub server: String,
    /// The request's params, verbatim.
    pub params: Value,
    /// Who will answer it ([`Sampler::name`]).
    pub answered_by: String,
}

/// Reaches the person: shows a server's question and returns the answer.
/// Implemented by the front end (the CLI asks on the terminal).
pub trait Asker: Send + Sync + fmt::Debug {
    /// Asks an elicitation.
    fn elicit<'a>(&'a self, question: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer>;

    /// Whether the model may answer this sampling request.
    fn approve_sampling<'a>(&'a self, request: &'a SamplingRequest) -> BoxFuture<'a, bool>;

    /// Shows what the model answered, as it goes back to the server
    /// (SAMP-11); by default nothing is shown.
    fn show_sampled<'a>(
        &'a self,
        request: &'a SamplingRequest,
        answer: &'a Value,
    ) -> BoxFuture<'a, ()> {
        let _ = (request, answer);
        Box::pin(async {})
    }
}

/// Answers `sampling/createMessage` with a model. Implemented above the
/// host (the agent's model provider, or a fixed answer for the demo).
pub trait Sampler: Send + Sync + fmt::Debug {
    /// Who answers, in a few words, shown with the approval question
    /// (e.g. `anthropic:claude-…`).
    fn name(&self) -> String;

    /// Produces a `CreateMessageResult` object (`role`, `content`,
    /// `model`, `stopReason`) for the request's `params`, respecting
    /// `maxTokens` (SAMP-07).
    ///
    /// # Errors
    /// A sentence saying why no answer was produced.
    fn create_message<'a>(
        &'a self,
        server: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>>;
}

/// The host's input handler: roots from the config, a person through an
/// [`Asker`], a model through a [`Sampler`].
#[derive(Clone, Debug, Default)]
pub struct HostInput {
    roots: Vec<Root>,
    asker: Option<Arc<dyn Asker>>,
    sampler: Option<Arc<dyn Sampler>>,
    sampling_preapproved: bool,
}

impl HostInput {
    /// A handler that answers `roots/list` with `roots` (and declares
    /// `roots` unless it is empty), and nothing else yet.
    pub fn new(roots: Vec<Root>) -> Self {
        HostInput {
            roots,
            ..HostInput::default()
        }
    }

    /// A handler with the roots of `config` (`roots_of`).
    pub fn for_config(config: &Config) -> Self {
        HostInput::new(roots_of(config))
    }

    /// Asks `asker` elicitations and sampling approvals; elicitation (form
    /// and URL) is declared from now on.
    pub fn with_asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// Answers sampling with `sampler`; sampling is declared from now on.
    /// Each request still needs approval: from the [`Asker`], or
    /// [`HostInput::preapprove_sampling`]; with neither, it is declined.
    pub fn with_sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// `--yes`: sampling requests are answered without asking.
    pub fn preapprove_sampling(mut self, yes: bool) -> Self {
        self.sampling_preapproved = yes;
        self
    }

    /// The roots it answers with.
    pub fn roots_list(&self) -> &[Root] {
        &self.roots
    }
}

impl InputHandler for HostInput {
    fn support(&self) -> InputSupport {
        let person = self.asker.is_some();
        InputSupport {
            elicitation_form: person,
            elicitation_url: person,
            sampling: self.sampler.is_some(),
            sampling_tools: false,
            roots: !self.roots.is_empty(),
        }
    }

    fn elicit(
        &self,
        cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        Box::pin(async move {
            let Some(asker) = &self.asker else {
                return Err(InputError("no one can answer an elicitation here".into()));
            };
            let question = elicitation(&cx.server, params).map_err(InputError)?;
            let answer = asker.elicit(&question).await;
            let result = match answer {
                ElicitAnswer::Accept(content) => {
                    if let ElicitationKind::Form(form) = &question.kind {
                        // Checked before it leaves (ELIC-09).
                        form.check(&content).map_err(|e| {
                            InputError(format!("the form's answer does not fit its schema: {e}"))
                        })?;
                        ElicitResult::accept(Some(content))
                    } else {
                        ElicitResult::accept(None)
                    }
                }
                ElicitAnswer::Decline => ElicitResult::new(ElicitAction::Decline),
                ElicitAnswer::Cancel => ElicitResult::new(ElicitAction::Cancel),
            };
            Ok(result)
        })
    }

    fn sample(
        &self,
        cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, InputError>> {
        Box::pin(async move {
            let Some(sampler) = &self.sampler else {
                return Err(InputError(
                    "no model can answer a sampling request here".into(),
                ));
            };
            let request = SamplingRequest {
                server: cx.server.clone(),
                params: serde_json::to_value(&params).unwrap_or_default(),
                answered_by: sampler.name(),
            };
            let approved = if self.sampling_preapproved {
                true
            } else if let Some(asker) = &self.asker {
                asker.approve_sampling(&request).await
            } else {
                return Err(InputError(format!(
                    "the sampling request of {} was declined: there is no terminal to approve it on \
                     (rerun with --yes to approve sampling requests)",
                    cx.server
                )));
            };
            if !approved {
                return Err(InputError(format!(
                    "the user declined the sampling request of {}",
                    cx.server
                )));
            }
            let answer = sampler
                .create_message(&cx.server, &request.params)
                .await
                .map_err(|e| InputError(format!("the model could not answer: {e}")))?;
            // What goes back to the server is a CreateMessageResult, or
            // nothing: a sampler's answer that is not one is refused here.
            let result = CreateMessageResult::deserialize(&answer)
                .map_err(|e| InputError(format!("the model's answer is malformed: {e}")))?;
            if let Some(asker) = &self.asker {
                asker.show_sampled(&request, &answer).await;
            }
            Ok(result)
        })
    }

    fn roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, InputError>> {
        let roots = ListRootsResult::new(self.roots.clone());
        Box::pin(async move { Ok(roots) })
    }
}

impl Elicitation {
    /// The question as text for a terminal: who asks, the message, and the
    /// URL with its host (invisible characters shown as escapes).
    pub fn render(&self) -> String {
        let mut out = format!(
            "Switchboard: server {} asks for input\n  message: {}\n",
            self.server,
            visible(&self.message).replace('\n', "\n           ")
        );
        if let ElicitationKind::Url { url, host } = &self.kind {
            out.push_str(&format!("  url:     {}\n", visible(url)));
            if let Some(host) = host {
                let note = if host.contains("xn--") || !host.is_ascii() {
                    " (an internationalised name: check it carefully)"
                } else {
                    ""
                };
                out.push_str(&format!("  host:    {}{note}\n", visible(host)));
            }
        }
        out
    }
}

/// The text of a `CreateMessageResult`'s content, for showing it.
pub fn sampled_text(answer: &Value) -> String {
    visible(&content_text(answer.get("content")))
}

impl SamplingRequest {
    /// The request as text for a terminal: who asks, who would answer, the
    /// system prompt, each message's text and the token limit.
    pub fn render(&self) -> String {
        let p = &self.params;
        let mut out = format!(
            "Switchboard: server {} asks the model to write a message (sampling)\n  answered by: {}\n",
            self.server, self.answered_by
        );
        if let Some(system) = p.get("systemPrompt").and_then(Value::as_str) {
            out.push_str(&format!("  system: {}\n", indent(&visible(system))));
        }
        for m in p
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
            out.push_str(&format!(
                "  {role}: {}\n",
                indent(&visible(&shortened(&content_text(m.get("content")))))
            ));
        }
        if let Some(n) = p.get("maxTokens") {
            out.push_str(&format!("  at most {n} tokens\n"));
        }
        out
    }
}

/// The roots of `config`: its `"roots"` entries, or the working directory
/// when it has none; each a `file://` URI (ROOT-03).
pub(crate) fn roots_of(config: &Config) -> Vec<Root> {
    match &config.roots {
        Some(paths) => paths.iter().map(|p| root(p)).collect(),
        None => std::env::current_dir()
            .map(|d| vec![root(&d)])
            .unwrap_or_default(),
    }
}

/// A `file://` root for `path`, named after its last component.
pub fn root(path: &Path) -> Root {
    Root {
        uri: file_uri(path),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .or_else(|| Some(path.display().to_string())),
        extra: JsonObject::new(),
    }
}

/// `file://` and the path, percent-encoded where a URI needs it.
pub(crate) fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::from("file://");
    if !text.starts_with('/') {
        out.push('/');
    }
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn elicitation(server: &str, params: ElicitRequestParams) -> Result<Elicitation, String> {
    let kind = if params.is_url() {
        let Some(url) = params.url else {
            return Err("the URL elicitation has no url".into());
        };
        ElicitationKind::Url {
            host: host_of(&url),
            url,
        }
    } else {
        let schema = params
            .requested_schema
            .as_ref()
            .ok_or("the form elicitation has no requestedSchema")?;
        ElicitationKind::Form(Form::parse(schema)?)
    };
    Ok(Elicitation {
        server: server.to_owned(),
        message: params.message,
        kind,
    })
}

fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    (!host.is_empty()).then(|| host.to_owned())
}

fn content_text(content: Option<&Value>) -> String {
    let blocks: Vec<&Value> = match content {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(other) => vec![other],
        None => Vec::new(),
    };
    blocks
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            Some(other) => format!("[{other} content]"),
            None => "[content]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Characters of one message a sampling question shows.
const SHOWN_CHARS: usize = 1500;

/// `text`, cut to [`SHOWN_CHARS`] with a note saying how much is not shown.
fn shortened(text: &str) -> String {
    let total = text.chars().count();
    if total <= SHOWN_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(SHOWN_CHARS).collect();
    format!(
        "{head}… ({} more characters not shown)",
        total - SHOWN_CHARS
    )
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n    ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;
    use switchboard_wire::Era;

    #[derive(Debug, Default)]
    struct Scripted {
        answers: Mutex<Vec<ElicitAnswer>>,
        approve: bool,
        asked: Mutex<Vec<String>>,
    }

    impl Asker for Scripted {
        fn elicit<'a>(&'a self, q: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer> {
            self.asked.lock().unwrap().push(q.render());
            let a = self.answers.lock().unwrap().remove(0);
            Box::pin(async move { a })
        }
        fn approve_sampling<'a>(&'a self, r: &'a SamplingRequest) -> BoxFuture<'a, bool> {
            self.asked.lock().unwrap().push(r.render());
            Box::pin(async move { self.approve })
        }
    }

    #[derive(Debug)]
    struct Fixed;
    impl Sampler for Fixed {
        fn name(&self) -> String {
            "fixed".into()
        }
        fn create_message<'a>(
            &'a self,
            _server: &'a str,
            _params: &'a Value,
        ) -> BoxFuture<'a, Result<Value, String>> {
            Box::pin(async {
                Ok(
                    json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "fixed"}),
                )
            })
        }
    }

    fn cx() -> InputContext {
        InputContext {
            server: "tickets".into(),
            method: Some("tools/call".into()),
            era: Era::Modern,
        }
    }

    fn form_params() -> ElicitRequestParams {
        ElicitRequestParams::form(
            "Which priority?",
            json!({
                "type": "object",
                "properties": {"priority": {"type": "string", "enum": ["low", "high"]}},
                "required": ["priority"]
            }),
        )
    }

    fn sampling_params() -> CreateMessageRequestParams {
        CreateMessageRequestParams::prompt("Sum up", 50)
    }

    // ELIC-01, SAMP-02, ROOT-02: declared only when answerable.
    #[test]
    fn declares_only_what_it_can_answer() {
        let bare = HostInput::new(Vec::new());
        assert_eq!(bare.support(), InputSupport::NONE);
        let roots = HostInput::new(vec![root(Path::new("/srv/a b"))]);
        assert!(roots.support().roots && !roots.support().sampling);
        let all = roots
            .clone()
            .with_asker(Arc::new(Scripted::default()))
            .with_sampler(Arc::new(Fixed));
        let s = all.support();
        assert!(s.elicitation_form && s.elicitation_url && s.sampling && !s.sampling_tools);
    }

    // ROOT-03: file URIs.
    #[tokio::test]
    async fn roots_are_file_uris() {
        let h = HostInput::new(vec![root(Path::new("/srv/a b"))]);
        let v = Value::from(h.roots(cx()).await.unwrap().roots[0].clone().uri);
        assert_eq!(v, "file:///srv/a%20b");
        let v = serde_json::to_value(h.roots(cx()).await.unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"roots": [{"uri": "file:///srv/a%20b", "name": "a b"}]})
        );
    }

    // ELIC-07, ELIC-09: who asks is shown; decline/cancel map to actions;
    // an answer that does not fit is never sent.
    #[tokio::test]
    async fn elicitation_answers_map_to_actions() {
        let asker = Arc::new(Scripted {
            answers: Mutex::new(vec![
                ElicitAnswer::Accept(json!({"priority": "high"}).as_object().unwrap().clone()),
                ElicitAnswer::Decline,
                ElicitAnswer::Cancel,
                ElicitAnswer::Accept(json!({"priority": "urgent"}).as_object().unwrap().clone()),
            ]),
            ..Scripted::default()
        });
        let h = HostInput::new(Vec::new()).with_asker(asker.clone());
        let got = Value::from(h.elicit(cx(), form_params()).await.unwrap());
        assert_eq!(
            got,
            json!({"action": "accept", "content": {"priority": "high"}})
        );
        assert_eq!(
            Value::from(h.elicit(cx(), form_params()).await.unwrap()),
            json!({"action": "decline"})
        );
        assert_eq!(
            Value::from(h.elicit(cx(), form_params()).await.unwrap()),
            json!({"action": "cancel"})
        );
        assert!(h.elicit(cx(), form_params()).await.is_err());
        assert!(asker.asked.lock().unwrap()[0].contains("server tickets asks"));
        // URL mode shows the URL and its host.
        asker
            .answers
            .lock()
            .unwrap()
            .push(ElicitAnswer::Accept(JsonObject::new()));
        let url = ElicitRequestParams::url("Log in", "https://xn--pple-43d.com/x?y");
        assert_eq!(
            Value::from(h.elicit(cx(), url).await.unwrap()),
            json!({"action": "accept"})
        );
        let shown = asker.asked.lock().unwrap().last().unwrap().clone();
        assert!(
            shown.contains("host:    xn--pple-43d.com (an internationalised"),
            "{shown}"
        );
    }

    // SAMP-11: approved first; declined without anyone to approve.
    #[tokio::test]
    async fn sampling_needs_approval() {
        let params = sampling_params();
        let no_one = HostInput::new(Vec::new()).with_sampler(Arc::new(Fixed));
        let e = no_one.sample(cx(), params.clone()).await.unwrap_err();
        assert!(e.0.contains("declined") && e.0.contains("--yes"), "{e}");
        let yes = no_one.clone().preapprove_sampling(true);
        assert_eq!(
            yes.sample(cx(), params.clone()).await.unwrap().model,
            "fixed"
        );
        let refuses = Arc::new(Scripted::default());
        let asked = HostInput::new(Vec::new())
            .with_sampler(Arc::new(Fixed))
            .with_asker(refuses.clone());
        assert!(
            asked
                .sample(cx(), params.clone())
                .await
                .unwrap_err()
                .0
                .contains("declined")
        );
        let shown = refuses.asked.lock().unwrap()[0].clone();
        assert!(
            shown.contains("server tickets asks the model") && shown.contains("user: Sum up"),
            "{shown}"
        );
        let approves = Arc::new(Scripted {
            approve: true,
            ..Scripted::default()
        });
        let asked = HostInput::new(Vec::new())
            .with_sampler(Arc::new(Fixed))
            .with_asker(approves);
        assert!(asked.sample(cx(), params).await.is_ok());
        // A long message is shown cut, saying how much is left out.
        let long = SamplingRequest {
            server: "notes".into(),
            params: json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x".repeat(2000)}}]}),
            answered_by: "fixed".into(),
        };
        assert!(long.render().contains("(500 more characters not shown)"));
    }
}
