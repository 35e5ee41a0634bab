//! The scripted model: a JSON-lines file, one model turn per line, for
//! tests and evals that must run offline and the same every time.
//!
//! Each line is an object:
//! - `text`: what the model says (optional);
//! - `tool_calls`: `[{"name": "mcp__alias__tool", "arguments": {…}, "id"?: "…"}]`
//!   (optional; ids default to `call_LINE_N`);
//! - `expect`: checks on the tool results the model is given before this
//!   turn, in order: `[{"is_error"?: bool, "contains"?: "text"}]`; a
//!   mismatch fails the turn with [`ModelError::Script`];
//! - `system_contains`: texts the system prompt of this turn must contain
//!   (optional; e.g. a skill the model should be offered);
//! - `system_lacks`: texts it must not contain (optional);
//! - `user_contains`: texts the last user message must contain (optional;
//!   e.g. a resource the user attached);
//! - `tools_include`: `{"mcp__alias__tool": "text"}`, tools the request
//!   must offer, each with a description containing the text (optional;
//!   checks the model is shown the servers' real definitions);
//! - `usage`: `{"input_tokens": n, "output_tokens": n}` (optional);
//! - `stop`: `end_turn` (default without tool calls), `max_tokens`, ….
//!
//! Blank lines and lines starting with `#` are skipped. Turns are taken in
//! order across the whole session; past the last one, the model says it
//! has nothing more to say.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;
use switchboard_wire::shared::lock;

use crate::message::{Content, Role};
use crate::model::{
    BoxFuture, Collector, EventFn, Model, ModelError, ModelEvent, ModelRequest, StopReason,
    ToolCall, TurnOutput, Usage,
};

/// One turn of a script.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// What the model says.
    #[serde(default)]
    pub text: Option<String>,
    /// The tool calls it makes.
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    /// Checks on the results given before this turn.
    #[serde(default)]
    pub expect: Vec<Expectation>,
    /// Texts the system prompt must contain.
    #[serde(default)]
    pub system_contains: Vec<String>,
    /// Texts the system prompt must not contain.
    #[serde(default)]
    pub system_lacks: Vec<String>,
    /// Texts the last user message must contain.
    #[serde(default)]
    pub user_contains: Vec<String>,
    /// Tools the request must offer: name → text its description contains.
    #[serde(default)]
    pub tools_include: std::collections::BTreeMap<String, String>,
    /// Token counts to report.
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// The stop reason to report.
    #[serde(default)]
    pub stop: Option<String>,
}

/// A scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The model-facing tool name.
    pub name: String,
    /// The arguments.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call id.
    #[serde(default)]
    pub id: Option<String>,
}

/// A check on one tool result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Whether the result must be (or must not be) an error.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// Text the result must contain.
    #[serde(default)]
    pub contains: Option<String>,
}

/// Scripted token counts.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A model that plays a script.
#[derive(Debug)]
pub struct ScriptedModel {
    file: String,
    /// (line number, turn).
    turns: Vec<(usize, ScriptTurn)>,
    next: Mutex<usize>,
}

impl ScriptedModel {
    /// Reads a script file.
    ///
    /// # Errors
    /// [`ModelError::Script`] naming the line that is not a valid turn, or
    /// [`ModelError::Spec`] when the file cannot be read.
    pub fn load(path: &Path) -> Result<ScriptedModel, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::Spec(format!("cannot read the script {}: {e}", path.display()))
        })?;
        ScriptedModel::parse(&path.display().to_string(), &text)
    }

    /// Parses a script's text; `file` names it in errors.
    ///
    /// # Errors
    /// [`ModelError::Script`] naming the line that is not a valid turn.
    pub fn parse(file: &str, text: &str) -> Result<ScriptedModel, ModelError> {
        let mut turns = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let turn: ScriptTurn = serde_json::from_str(line).map_err(|e| ModelError::Script {
                file: file.to_owned(),
                line: i + 1,
                message: format!("not a valid turn: {e}"),
            })?;
            turns.push((i + 1, turn));
        }
        Ok(ScriptedModel {
            file: file.to_owned(),
            turns,
            next: Mutex::new(0),
        })
    }

    fn take(&self) -> Option<(usize, ScriptTurn)> {
        let mut next = lock(&self.next);
        let turn = self.turns.get(*next).cloned();
        if turn.is_some() {
            *next += 1;
        }
        turn
    }

    fn play(&self, request: &ModelRequest, sink: EventFn<'_>) -> Result<TurnOutput, ModelError> {
        let mut out = Collector::default();
        let Some((line, turn)) = self.take() else {
            out.emit(
                ModelEvent::TextDelta("(the script has no more turns)".into()),
                sink,
            );
            return Ok(out.finish());
        };
        check(&self.file, line, &turn.expect, request)?;
        check_system(&self.file, line, &turn, &request.system)?;
        check_tools(&self.file, line, &turn, request)?;
        check_user(&self.file, line, &turn, request)?;
        if let Some(text) = &turn.text {
            out.emit(ModelEvent::TextDelta(text.clone()), sink);
        }
        for (n, call) in turn.tool_calls.iter().enumerate() {
            out.emit(
                ModelEvent::ToolCall(ToolCall {
                    id: call
                        .id
                        .clone()
                        .unwrap_or_else(|| format!("call_{line}_{n}")),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }),
                sink,
            );
        }
        if let Some(u) = turn.usage {
            out.emit(
                ModelEvent::Usage(Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    ..Usage::default()
                }),
                sink,
            );
        }
        let stop = match turn.stop.as_deref() {
            None if turn.tool_calls.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolUse,
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.emit(ModelEvent::Stop(stop), sink);
        Ok(out.finish())
    }
}

/// The system prompt against the turn's `system_contains` and
/// `system_lacks`.
fn check_system(
    file: &str,
    line: usize,
    turn: &ScriptTurn,
    system: &str,
) -> Result<(), ModelError> {
    let fail = |message: String| ModelError::Script {
        file: file.to_owned(),
        line,
        message,
    };
    for want in &turn.system_contains {
        if !system.contains(want.as_str()) {
            return Err(fail(format!(
                "expected the system prompt to contain {want:?}, got: {system}"
            )));
        }
    }
    for unwanted in &turn.system_lacks {
        if system.contains(unwanted.as_str()) {
            return Err(fail(format!(
                "expected the system prompt not to contain {unwanted:?}, got: {system}"
            )));
        }
    }
    Ok(())
}

/// The last user message's text against the turn's `user_contains`.
fn check_user(
    file: &str,
    line: usize,
    turn: &ScriptTurn,
    request: &ModelRequest,
) -> Result<(), ModelError> {
    if turn.user_contains.is_empty() {
        return Ok(());
    }
    let text: String = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| {
            m.content
                .iter()
                .filter_map(|c| match c {
                    Content::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    for want in &turn.user_contains {
        if !text.contains(want.as_str()) {
            return Err(ModelError::Script {
                file: file.to_owned(),
                line,
                message: format!("expected the user's message to contain {want:?}, got: {text}"),
            });
        }
    }
    Ok(())
}

/// The request's tool list against the turn's `tools_include`.
fn check_tools(
    file: &str,
    line: usize,
    turn: &ScriptTurn,
    request: &ModelRequest,
) -> Result<(), ModelError> {
    for (name, text) in &turn.tools_include {
        let fail = |message: String| ModelError::Script {
            file: file.to_owned(),
            line,
            message,
        };
        let Some(tool) = request.tools.iter().find(|t| &t.name == name) else {
            let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(fail(format!(
                "expected the tool {name} to be offered, got: {}",
                offered.join(", ")
            )));
        };
        if !tool.description.contains(text.as_str()) {
            return Err(fail(format!(
                "expected the description of {name} to contain {text:?}, got: {}",
                tool.description
            )));
        }
    }
    Ok(())
}

/// The tool results of the request's last message, checked in order.
fn check(
    file: &str,
    line: usize,
    expect: &[Expectation],
    request: &ModelRequest,
) -> Result<(), ModelError> {
    if expect.is_empty() {
        return Ok(());
    }
    let results: Vec<(&str, bool)> = request
        .messages
        .last()
        .filter(|m| m.role == Role::User)
        .map(|m| {
            m.content
                .iter()
                .filter_map(|c| match c {
                    Content::ToolResult {
                        content, is_error, ..
                    } => Some((content.as_str(), *is_error)),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let fail = |message: String| ModelError::Script {
        file: file.to_owned(),
        line,
        message,
    };
    if results.len() < expect.len() {
        return Err(fail(format!(
            "expected {} tool result(s), got {}",
            expect.len(),
            results.len()
        )));
    }
    for (i, (e, (text, is_error))) in expect.iter().zip(&results).enumerate() {
        if let Some(want) = e.is_error {
            if want != *is_error {
                return Err(fail(format!(
                    "result {}: expected is_error {want}, got {is_error}: {text}",
                    i + 1
                )));
            }
        }
        if let Some(needle) = &e.contains {
            if !text.contains(needle.as_str()) {
                return Err(fail(format!(
                    "result {}: expected it to contain {needle:?}, got: {text}",
                    i + 1
                )));
            }
        }
    }
    Ok(())
}

impl Model for ScriptedModel {
    fn name(&self) -> String {
        format!("script:{}", self.file)
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        Box::pin(async move { self.play(request, events) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn a_bad_line_is_named() {
        let e =
            ScriptedModel::parse("s.jsonl", "# c\n{\"text\":\"hi\"}\n{\"txt\":1}\n").unwrap_err();
        assert!(e.to_string().contains("s.jsonl, line 3"), "{e}");
    }

    #[tokio::test]
    async fn turns_play_in_order_and_expectations_are_checked() {
        let m = ScriptedModel::parse(
            "s",
            r#"{"text":"a","tool_calls":[{"name":"t","arguments":{"x":1}}]}
{"expect":[{"is_error":false,"contains":"ok"}],"text":"b"}"#,
        )
        .unwrap();
        let mut req = ModelRequest::prompt("", "go");
        let mut seen = Vec::new();
        let out = m.turn(&req, &mut |e| seen.push(e)).await.unwrap();
        assert_eq!(out.text, "a");
        assert_eq!(out.tool_calls[0].id, "call_1_0");
        assert_eq!(out.stop, StopReason::ToolUse);
        req.messages.push(out.message().unwrap());
        req.messages.push(Message {
            role: Role::User,
            content: vec![Content::ToolResult {
                tool_use_id: "call_1_0".into(),
                content: "not good".into(),
                is_error: false,
            }],
        });
        let e = m.turn(&req, &mut |_| {}).await.unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(e.to_string().contains("\"ok\""), "{e}");
    }

    #[tokio::test]
    async fn user_contains_checks_the_last_user_message() {
        let m = ScriptedModel::parse(
            "s",
            r#"{"user_contains":["go"],"text":"ok"}
{"user_contains":["stop"]}"#,
        )
        .unwrap();
        let req = ModelRequest::prompt("", "go on");
        assert_eq!(m.turn(&req, &mut |_| {}).await.unwrap().text, "ok");
        let e = m.turn(&req, &mut |_| {}).await.unwrap_err();
        assert!(e.to_string().contains("\"stop\""), "{e}");
    }

    #[tokio::test]
    async fn tools_include_checks_the_offered_tools_and_their_descriptions() {
        let m = ScriptedModel::parse(
            "s",
            r#"{"tools_include":{"mcp__a__t":"Finds"},"text":"ok"}
{"tools_include":{"mcp__a__t":"Deletes"}}
{"tools_include":{"mcp__a__gone":""}}"#,
        )
        .unwrap();
        let mut req = ModelRequest::prompt("", "go");
        req.tools = vec![crate::model::ToolSpec {
            name: "mcp__a__t".into(),
            description: "Finds things.".into(),
            input_schema: Default::default(),
            server: None,
        }]
        .into();
        assert_eq!(m.turn(&req, &mut |_| {}).await.unwrap().text, "ok");
        let e = m.turn(&req, &mut |_| {}).await.unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(e.to_string().contains("Finds things."), "{e}");
        let e = m.turn(&req, &mut |_| {}).await.unwrap_err();
        assert!(
            e.to_string().contains("tool mcp__a__gone to be offered"),
            "{e}"
        );
    }
}
