//! Selectors that stand in for a model during an eval. Each is a
//! [`Model`], so it goes through the same runner as a real provider.
//!
//! - [`KeywordSelector`] (`--model mock` in `switchboard eval`): reads the
//!   utterance with a small keyword lexicon and picks one of the offered
//!   tools, deterministically and offline. It is a **stand-in** that makes
//!   the demo set runnable without a key (and in CI); it measures nothing
//!   about any real model, and a set written for it proves only that the
//!   cases and the plumbing work.
//! - [`WrongSelector`] (`--selector always:TOOL`, `--selector never`): a
//!   deliberately wrong selector. `always:TOOL` calls TOOL on every case,
//!   with a decoy for every argument its schema names; `never` calls
//!   nothing. A case that still passes under one of them cannot fail in
//!   that direction, so its assertion is broken
//!   ([`super::check_assertions`]).

use serde_json::{Map, Value, json};

use crate::message::{Content, Role};
use crate::model::{
    BoxFuture, Collector, EventFn, Model, ModelError, ModelEvent, ModelRequest, StopReason,
    ToolCall, ToolSpec, TurnOutput,
};

/// The string `always:TOOL` puts in every string argument.
pub const DECOY: &str = "switchboard-eval-decoy";
/// The number it puts in every numeric argument.
pub const DECOY_NUMBER: i64 = -987_654_321;

/// A deliberately wrong selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WrongSelector {
    /// Always calls this tool (model-facing name), with decoy arguments.
    Always(String),
    /// Never calls anything.
    Never,
}

impl WrongSelector {
    /// Reads `always:TOOL` or `never`.
    ///
    /// # Errors
    /// A message giving the two forms.
    pub fn parse(spec: &str) -> Result<WrongSelector, String> {
        match spec.trim() {
            "never" => Ok(WrongSelector::Never),
            s => match s.strip_prefix("always:") {
                Some(tool) if !tool.trim().is_empty() => {
                    Ok(WrongSelector::Always(tool.trim().to_owned()))
                }
                _ => Err(format!(
                    "selector {spec:?}: write always:TOOL (a tool's mcp__ALIAS__TOOL name) or never"
                )),
            },
        }
    }
}

impl Model for WrongSelector {
    fn name(&self) -> String {
        match self {
            WrongSelector::Always(t) => format!("selector always:{t}"),
            WrongSelector::Never => "selector never".into(),
        }
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        Box::pin(async move {
            let call = match self {
                WrongSelector::Always(name) if !answered(request) => {
                    let schema = request
                        .tools
                        .iter()
                        .find(|t| &t.name == name)
                        .map(|t| &t.input_schema);
                    Some((name.clone(), schema.map_or_else(|| json!({}), decoys)))
                }
                _ => None,
            };
            Ok(emit(call, "Nothing to call.", events))
        })
    }
}

/// Decoy arguments for a schema: every named property gets a value that a
/// sensible matcher rejects (strings [`DECOY`], numbers [`DECOY_NUMBER`],
/// booleans `true`, arrays and objects empty).
pub fn decoys(schema: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, prop) in props {
            let kind = prop.get("type").and_then(|t| match t {
                Value::String(s) => Some(s.as_str()),
                Value::Array(a) => a.iter().filter_map(Value::as_str).find(|s| *s != "null"),
                _ => None,
            });
            let value = match kind {
                Some("integer" | "number") => json!(DECOY_NUMBER),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!(DECOY),
            };
            out.insert(name.clone(), value);
        }
    }
    Value::Object(out)
}

/// The deterministic keyword selector (`--model mock` for evals). See the
/// module docs: a stand-in, not a measurement.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeywordSelector;

impl Model for KeywordSelector {
    fn name(&self) -> String {
        "mock (keyword selector)".into()
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        Box::pin(async move {
            let search = crate::toolbox::search_tool_name();
            let searchable = request.tools.iter().any(|t| t.name == search);
            let searched = last_call_was(request, &search);
            let call = if answered(request) && !searched {
                None
            } else {
                let utterance = last_user_text(request);
                let others: Vec<ToolSpec> = request
                    .tools
                    .iter()
                    .filter(|t| t.name != search)
                    .cloned()
                    .collect();
                match select(&utterance, &others) {
                    Some(call) => Some(call),
                    // With a deferred table, look for the tool first.
                    None if searchable && !searched => {
                        Some((search, serde_json::json!({"query": utterance})))
                    }
                    None => None,
                }
            };
            let text =
                "I can search, list and read the notes, and search, read, open and sum up tickets.";
            Ok(emit(call, text, events))
        })
    }
}

/// What the keyword selector would call for `utterance` among `tools`.
pub fn select(utterance: &str, tools: &[ToolSpec]) -> Option<(String, Value)> {
    let text = utterance.to_lowercase();
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches('\'').to_owned())
        .collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    // A cue of one word matches a word; a cue of several, the text.
    let cue = |p: &&str| {
        if p.contains(' ') {
            text.contains(*p)
        } else {
            has(p)
        }
    };
    // Thanks and greetings with no request in them call nothing.
    if words.first().is_some_and(|w| THANKS.contains(&w.as_str())) {
        return None;
    }
    let ticket_id = words.iter().find_map(|w| ticket_id(w));
    let action = if ticket_id.is_some() {
        Action::Get
    } else if READ.iter().any(cue) {
        Action::Read
    } else if LIST.iter().any(cue) {
        Action::List
    } else if CREATE.iter().any(cue) {
        Action::Create
    } else if SUMMARY.iter().any(cue) {
        Action::Summary
    } else if SEARCH.iter().any(cue) {
        Action::Search
    } else {
        return None;
    };
    let domain = if ticket_id.is_some() || TICKET_WORDS.iter().any(|w| has(w)) {
        Some("ticket")
    } else if NOTE_WORDS.iter().any(|w| has(w)) {
        Some("note")
    } else {
        None
    };
    let candidates: Vec<&ToolSpec> = tools
        .iter()
        .filter(|t| action.fits(&name_words(&t.name), &t.description.to_lowercase()))
        .filter(|t| domain.is_none_or(|d| mentions(t, d)))
        .collect();
    // Two tools fit and nothing tells them apart: ask instead of guessing.
    let [tool] = candidates.as_slice() else {
        return None;
    };
    let mut args = Map::new();
    if let Some(Value::Object(props)) = tool.input_schema.get("properties") {
        for name in props.keys() {
            let value = match name.as_str() {
                "query" => topic(&words),
                "id" => ticket_id.clone().or_else(|| slug(utterance, &words)),
                "title" => title(utterance),
                _ => None,
            };
            if let Some(v) = value {
                args.insert(name.clone(), Value::String(v));
            }
        }
    }
    Some((tool.name.clone(), Value::Object(args)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Get,
    Read,
    List,
    Create,
    Summary,
    Search,
}

impl Action {
    /// Whether a tool whose name has `words` and whose description is
    /// `description` does this.
    fn fits(self, words: &[String], description: &str) -> bool {
        let named = |w: &str| words.iter().any(|x| x == w);
        match self {
            Action::Get => named("get"),
            Action::Read => named("read"),
            Action::List => named("list"),
            Action::Create => named("create"),
            Action::Summary => description.contains("summary"),
            Action::Search => named("search"),
        }
    }
}

const THANKS: &[&str] = &[
    "thanks", "thank", "thx", "cheers", "great", "hello", "hi", "hey",
];
const READ: &[&str] = &[
    "read",
    "full text",
    "pull up",
    "contents of",
    "open the note",
];
const LIST: &[&str] = &[
    "list",
    "which notes",
    "what notes",
    "all notes",
    "all the notes",
];
const CREATE: &[&str] = &[
    "create",
    "open a ticket",
    "new ticket",
    "file a ticket",
    "raise a ticket",
];
const SUMMARY: &[&str] = &["summary", "summarize", "summarise", "overview"];
const SEARCH: &[&str] = &[
    "search",
    "find",
    "look for",
    "look up",
    "what did we",
    "did we say",
    "anybody",
    "anyone",
    "is there",
    "are there",
    "any",
];
const NOTE_WORDS: &[&str] = &[
    "note",
    "notes",
    "standup",
    "stand-up",
    "meeting",
    "minutes",
    "memo",
    "wrote",
    "checklist",
];
const TICKET_WORDS: &[&str] = &[
    "ticket", "tickets", "issue", "issues", "bug", "bugs", "reported", "queue", "incident",
    "jamming", "broken",
];
const STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "my",
    "our",
    "me",
    "for",
    "about",
    "on",
    "in",
    "of",
    "to",
    "is",
    "are",
    "was",
    "were",
    "that",
    "this",
    "it",
    "at",
    "we",
    "us",
    "i",
    "you",
    "please",
    "and",
    "or",
    "any",
    "anything",
    "something",
    "did",
    "do",
    "does",
    "say",
    "said",
    "what",
    "with",
    "has",
    "have",
    "already",
    "keeps",
    "s",
    "thursday's",
    "problems",
    "problem",
    "there",
];

/// The words of a model-facing name (`mcp__notes__read_note` →
/// `mcp`, `notes`, `read`, `note`), as a model reads it.
fn name_words(name: &str) -> Vec<String> {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a tool is about `domain` (`note`, `ticket`) by its name or
/// description.
fn mentions(tool: &ToolSpec, domain: &str) -> bool {
    tool.name.to_lowercase().contains(domain) || tool.description.to_lowercase().contains(domain)
}

/// `T-12` → `T-12`.
fn ticket_id(word: &str) -> Option<String> {
    let digits = word.strip_prefix("t-")?;
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("T-{digits}"))
}

/// What to search for: up to three content words after the first `for`,
/// `about`, `regarding` or `that` (or from the start).
fn topic(words: &[String]) -> Option<String> {
    let start = words
        .iter()
        .position(|w| matches!(w.as_str(), "for" | "about" | "regarding" | "that"))
        .map_or(0, |i| i + 1);
    let content: Vec<&str> = words[start..]
        .iter()
        .map(String::as_str)
        .filter(|w| {
            !STOP.contains(w)
                && !NOTE_WORDS.contains(w)
                && !TICKET_WORDS.contains(w)
                && !SEARCH.contains(w)
        })
        .take(3)
        .collect();
    (!content.is_empty()).then(|| content.join(" "))
}

/// A note's id: a quoted or back-ticked word, the word after `slug`, `id`,
/// `called` or `named`, or the word before `note`.
fn slug(utterance: &str, words: &[String]) -> Option<String> {
    for quote in ['`', '"'] {
        let mut parts = utterance.split(quote);
        if let (Some(_), Some(inner), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            if !inner.trim().is_empty() {
                return Some(inner.trim().to_owned());
            }
        }
    }
    for (i, w) in words.iter().enumerate() {
        if matches!(w.as_str(), "slug" | "id" | "called" | "named") {
            if let Some(next) = words.get(i + 1).filter(|n| !STOP.contains(&n.as_str())) {
                return Some(next.clone());
            }
        }
        if w == "note" && i > 0 && !STOP.contains(&words[i - 1].as_str()) {
            return Some(words[i - 1].clone());
        }
    }
    None
}

/// A new ticket's title: what follows a colon, or `that`/`saying`.
fn title(utterance: &str) -> Option<String> {
    let rest = utterance
        .split_once(':')
        .map(|(_, r)| r)
        .or_else(|| utterance.split_once(" that ").map(|(_, r)| r))
        .or_else(|| utterance.split_once(" saying ").map(|(_, r)| r))?;
    let t = rest.trim().trim_end_matches(['.', '!']);
    (!t.is_empty()).then(|| t.to_owned())
}

/// Whether the conversation already ends with tool results (the selector
/// made its call and got an answer: it stops there).
/// Whether the model's last turn called `name`.
fn last_call_was(request: &ModelRequest, name: &str) -> bool {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .is_some_and(|m| {
            m.content
                .iter()
                .any(|c| matches!(c, Content::ToolUse { name: n, .. } if n == name))
        })
        && answered(request)
}

fn answered(request: &ModelRequest) -> bool {
    request.messages.last().is_some_and(|m| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|c| matches!(c, Content::ToolResult { .. }))
    })
}

fn last_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        // Past tool results (a search's), to what the user said.
        .filter(|m| m.role == Role::User)
        .map(|m| m.text())
        .find(|t| !t.is_empty())
        .unwrap_or_default()
}

/// Streams one call (or `text` when there is none) as a turn.
fn emit(call: Option<(String, Value)>, text: &str, events: EventFn<'_>) -> TurnOutput {
    let mut out = Collector::default();
    match call {
        Some((name, arguments)) => {
            out.emit(
                ModelEvent::ToolCall(ToolCall {
                    id: "eval_call_1".into(),
                    name,
                    arguments,
                }),
                events,
            );
            out.emit(ModelEvent::Stop(StopReason::ToolUse), events);
        }
        None => {
            out.emit(ModelEvent::TextDelta(text.to_owned()), events);
            out.emit(ModelEvent::Stop(StopReason::EndTurn), events);
        }
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        let spec = |name: &str, description: &str, props: Value| ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": props})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            server: None,
        };
        vec![
            spec(
                "mcp__notes__search",
                "[from notes] Searches the notes for words.",
                json!({"query": {"type": "string"}}),
            ),
            spec(
                "mcp__notes__read_note",
                "[from notes] Returns the full text of one note.",
                json!({"id": {"type": "string"}}),
            ),
            spec(
                "mcp__notes__list_notes",
                "[from notes] Lists every note.",
                json!({}),
            ),
            spec(
                "mcp__tickets__search",
                "[from tickets] Searches tickets.",
                json!({"query": {"type": "string"}}),
            ),
            spec(
                "mcp__tickets__get_ticket",
                "[from tickets] Returns one ticket by id.",
                json!({"id": {"type": "string"}}),
            ),
            spec(
                "mcp__tickets__create_ticket",
                "[from tickets] Opens a new ticket.",
                json!({"title": {"type": "string"}, "priority": {"type": "string"}}),
            ),
            spec(
                "mcp__tickets__r_sum_",
                "[from tickets] A one-paragraph summary of the open tickets.",
                json!({}),
            ),
        ]
    }

    #[test]
    fn keyword_choices() {
        let t = tools();
        let cases: &[(&str, Option<(&str, Value)>)] = &[
            (
                "Search my notes for the printer.",
                Some(("mcp__notes__search", json!({"query": "printer"}))),
            ),
            (
                "Search the tickets for VPN problems.",
                Some(("mcp__tickets__search", json!({"query": "vpn"}))),
            ),
            (
                "Read the note with id handbook.",
                Some(("mcp__notes__read_note", json!({"id": "handbook"}))),
            ),
            (
                "Show me ticket T-2.",
                Some(("mcp__tickets__get_ticket", json!({"id": "T-2"}))),
            ),
            (
                "Which notes do we have?",
                Some(("mcp__notes__list_notes", json!({}))),
            ),
            (
                "Open a ticket: the door squeaks",
                Some((
                    "mcp__tickets__create_ticket",
                    json!({"title": "the door squeaks"}),
                )),
            ),
            (
                "Give me an overview of the open tickets",
                Some(("mcp__tickets__r_sum_", json!({}))),
            ),
            // Both search tools fit and nothing tells them apart.
            ("Search for printer", None),
            ("Thanks, that note about the printer was helpful!", None),
            ("What can you do?", None),
        ];
        for (utterance, want) in cases {
            let got = select(utterance, &t);
            let want = want.clone().map(|(n, a)| (n.to_owned(), a));
            assert_eq!(got, want, "{utterance}");
        }
    }

    #[test]
    fn decoys_fill_every_property() {
        let schema = json!({"properties": {
            "q": {"type": "string"}, "n": {"type": "integer"}, "b": {"type": "boolean"},
            "o": {"type": ["null", "object"]}, "x": {}
        }});
        assert_eq!(
            decoys(schema.as_object().unwrap()),
            json!({"q": DECOY, "n": DECOY_NUMBER, "b": true, "o": {}, "x": DECOY})
        );
        assert_eq!(WrongSelector::parse("never"), Ok(WrongSelector::Never));
        assert_eq!(
            WrongSelector::parse("always:mcp__a__b"),
            Ok(WrongSelector::Always("mcp__a__b".into()))
        );
        assert!(WrongSelector::parse("sometimes").is_err());
        assert!(WrongSelector::parse("always:").is_err());
    }
}
