//! `mcp__switchboard__read_result`: the rest of a result that was over its
//! budget, by the handle its note named: a slice (`offset` and `length` in
//! characters) or the lines containing a text (`grep`), each within the
//! budget itself. Only the caller that made the call reads its results
//! (see [`crate::results`]).

use serde_json::{Value, json};
use switchboard_wire::{CallToolResult, ContentBlock, JsonObject, Tool};

use super::{BuiltinCall, BuiltinGate, BuiltinOutcome, BuiltinTool};
use crate::approver::BoxFuture;
use crate::results;
use crate::sanitize;

/// The name after `mcp__switchboard__`.
pub const READ_RESULT: &str = "read_result";

/// Characters of the budget left for the host's own lines and markers.
const OWN_TEXT: usize = 400;

/// Reading kept results, as a built-in tool.
#[derive(Debug, Default)]
pub(crate) struct ReadResult;

impl BuiltinTool for ReadResult {
    fn definition(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "handle": {"type": "string", "description": "The handle a cut result's note gave."},
                "offset": {"type": "integer", "minimum": 0, "description": "First character to read (default 0)."},
                "length": {"type": "integer", "minimum": 1, "description": "Characters to read (default and most: what the budget allows)."},
                "grep": {"type": "string", "description": "Instead of a slice: the lines containing this text (any case), with their line numbers."}
            },
            "required": ["handle"]
        });
        let mut tool = Tool::new(
            READ_RESULT,
            "Read more of a tool result that was too long to show whole: a slice of it by \
             character offset, or the lines containing a text. The handle is in the result's note.",
            match schema {
                Value::Object(o) => o,
                _ => JsonObject::new(),
            },
        );
        tool.title = Some("Read a kept result".into());
        tool
    }

    fn gate(&self) -> BuiltinGate {
        // It reads what the caller's own allowed call returned.
        BuiltinGate::Allow
    }

    fn call<'a>(&'a self, call: BuiltinCall<'a>) -> BoxFuture<'a, BuiltinOutcome> {
        Box::pin(async move {
            let handle = match call.string_argument("handle") {
                Ok(h) => h.to_owned(),
                Err(e) => return BuiltinOutcome::error(e),
            };
            let arguments = call.arguments.clone().unwrap_or_default();
            let number = |key: &str| -> Result<Option<usize>, String> {
                match arguments.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => v
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .map(Some)
                        .ok_or_else(|| format!("{key} must be a whole number of characters.")),
                }
            };
            let (offset, length) = match (number("offset"), number("length")) {
                (Ok(o), Ok(l)) => (o.unwrap_or(0), l),
                (Err(e), _) | (_, Err(e)) => return BuiltinOutcome::error(e),
            };
            let grep = match arguments.get("grep") {
                None | Some(Value::Null) => None,
                Some(Value::String(g)) if !g.is_empty() => Some(g.clone()),
                Some(_) => return BuiltinOutcome::error("grep must be a non-empty string."),
            };
            let kept = match call.host.results().read(call.principal(), &handle) {
                Ok(kept) => kept,
                Err(e) => return BuiltinOutcome::error(format!("Cannot read the result: {e}.")),
            };
            let room = call.host.budget().chars().saturating_sub(OWN_TEXT).max(100);
            let total = kept.text.chars().count();
            let (head, body) = match grep {
                Some(pattern) => {
                    let (lines, matched) = results::grep(&kept.text, &pattern, room);
                    let lines_in_all = kept.text.lines().count();
                    let more = if matched > lines.len() {
                        format!(
                            "; showing the first {}: narrow the text, or read by offset",
                            lines.len()
                        )
                    } else {
                        String::new()
                    };
                    (
                        format!(
                            "{matched} of the {lines_in_all} lines of result {handle} contain {pattern:?}{more}."
                        ),
                        lines.join("\n"),
                    )
                }
                None => {
                    if offset >= total && total > 0 {
                        return BuiltinOutcome::error(format!(
                            "offset {offset} is past the end: result {handle} has {total} characters."
                        ));
                    }
                    let length = length.unwrap_or(room).min(room);
                    let slice = results::slice(&kept.text, offset, length);
                    let end = offset + slice.chars().count();
                    let next = if end < total {
                        format!("; to read on, offset {end}")
                    } else {
                        "; that is the end".to_owned()
                    };
                    (
                        format!(
                            "Characters {offset} to {end} of the {total} of result {handle}{next}."
                        ),
                        slice.to_owned(),
                    )
                }
            };
            BuiltinOutcome::result(CallToolResult {
                content: vec![
                    ContentBlock::text(head),
                    ContentBlock::text(sanitize::wrap(
                        &kept.alias,
                        Some(&kept.tool),
                        &sanitize::strip_invisible(&body),
                    )),
                ],
                ..CallToolResult::text("")
            })
        })
    }
}
