//! The built-in mock model (`--model mock`, or `MOCK=1`): a fixed
//! conversation against the built-in demo, offline and the same every
//! time. For each prompt it lists the notes, searches with both `search`
//! tools (notes' and tickets'), reads the long note (which comes back cut
//! to the budget), calls a tool of a server the outage report names (and
//! is told why it cannot), then sums up. Steps whose tools are missing are
//! skipped, so it also runs on other configs.

use serde_json::{Value, json};

use crate::message::{Content, Role};
use crate::model::{
    BoxFuture, Collector, EventFn, Model, ModelError, ModelEvent, ModelRequest, StopReason,
    ToolCall, TurnOutput, Usage,
};

/// The id of the demo's long note.
const LONG_NOTE: &str = "handbook";

/// The mock model.
#[derive(Debug, Clone, Copy, Default)]
pub struct MockModel;

impl MockModel {
    /// The mock model.
    pub fn new() -> MockModel {
        MockModel
    }
}

struct Step {
    text: String,
    calls: Vec<(String, Value)>,
}

fn plan(request: &ModelRequest) -> Vec<Step> {
    let has = |name: &str| request.tools.iter().any(|t| t.name == name);
    let mut steps = Vec::new();
    if has("mcp__notes__list_notes") {
        steps.push(Step {
            text: "Let me see which notes there are.".into(),
            calls: vec![("mcp__notes__list_notes".into(), json!({}))],
        });
    }
    let searches: Vec<(String, Value)> = request
        .tools
        .iter()
        .filter(|t| t.name.ends_with("__search"))
        .map(|t| (t.name.clone(), json!({"query": "printer"})))
        .collect();
    if !searches.is_empty() {
        steps.push(Step {
            text: format!(
                "{} tools are called search; I'll ask each of them about \"printer\".",
                searches.len()
            ),
            calls: searches,
        });
    }
    if has("mcp__notes__read_note") {
        steps.push(Step {
            text: "The handbook note looks relevant; reading it.".into(),
            calls: vec![("mcp__notes__read_note".into(), json!({"id": LONG_NOTE}))],
        });
    }
    if let Some(alias) = down_server(&request.system) {
        steps.push(Step {
            text: format!("The host says {alias} is unavailable; trying it once to see why."),
            calls: vec![(format!("mcp__{alias}__search"), json!({"query": "printer"}))],
        });
    }
    steps
}

/// The first server the system prompt's outage report names.
fn down_server(system: &str) -> Option<String> {
    let report = system.split("Some tool servers are unavailable").nth(1)?;
    report.lines().find_map(|l| {
        let rest = l.strip_prefix("- ")?;
        let alias: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        (!alias.is_empty()).then_some(alias)
    })
}

/// The results given since the prompt: (call id, first meaningful line,
/// is_error), and how many assistant turns there were.
fn progress(request: &ModelRequest) -> (usize, Vec<(String, String, bool)>) {
    let start = request
        .messages
        .iter()
        .rposition(|m| {
            m.role == Role::User && m.content.iter().any(|c| matches!(c, Content::Text { .. }))
        })
        .unwrap_or(0);
    let mut turns = 0;
    let mut results = Vec::new();
    let mut names = std::collections::HashMap::new();
    for m in &request.messages[start..] {
        for c in &m.content {
            match c {
                Content::ToolUse { id, name, .. } => {
                    names.insert(id.clone(), name.clone());
                }
                Content::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => {
                    let name = names.get(tool_use_id).cloned().unwrap_or_default();
                    results.push((name, summary_line(content), *is_error));
                }
                Content::Text { .. } => {}
            }
        }
        if m.role == Role::Assistant {
            turns += 1;
        }
    }
    (turns, results)
}

fn summary_line(text: &str) -> String {
    let plain = without_markers(text);
    let lines: Vec<&str> = plain
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // A result over the budget ends with the host's line saying so (what
    // was cut, or how to read the rest): that is the news.
    let line = lines
        .iter()
        .rev()
        .find(|l| l.contains("were cut") || l.contains("over the budget of"))
        .map(|l| (*l).to_owned())
        .unwrap_or_else(|| lines.join(" "));
    let line = match line.split_whitespace().collect::<Vec<_>>().join(" ") {
        l if l.is_empty() => "(empty)".to_owned(),
        l => l,
    };
    match line.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

/// The text with the boundary markers' tags taken out (the mock reports
/// what servers said to the user, who does not need them).
fn without_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest
        .find("<untrusted-text")
        .or_else(|| rest.find("</untrusted-text"))
    {
        let first_open = rest.find("<untrusted-text").unwrap_or(usize::MAX);
        let first_close = rest.find("</untrusted-text").unwrap_or(usize::MAX);
        let start = start.min(first_open).min(first_close);
        out.push_str(&rest[..start]);
        rest = match rest[start..].find('>') {
            Some(end) => &rest[start + end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

impl Model for MockModel {
    fn name(&self) -> String {
        "mock".into()
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        Box::pin(async move {
            let mut out = Collector::default();
            let steps = plan(request);
            let (turn, results) = progress(request);
            let (text, calls) = match steps.into_iter().nth(turn) {
                Some(step) => (step.text, step.calls),
                None => {
                    let mut text = String::from("Here is what the tools said:");
                    for (name, line, is_error) in &results {
                        let mark = if *is_error { "failed" } else { "ok" };
                        text.push_str(&format!("\n- {name} ({mark}): {line}"));
                    }
                    if results.is_empty() {
                        text = "I have no tools to try here.".into();
                    }
                    (text, Vec::new())
                }
            };
            // Streamed a line at a time, as real models stream pieces.
            for piece in text.split_inclusive('\n') {
                out.emit(ModelEvent::TextDelta(piece.to_owned()), events);
            }
            for (n, (name, arguments)) in calls.iter().enumerate() {
                out.emit(
                    ModelEvent::ToolCall(ToolCall {
                        id: format!("mock_{turn}_{n}"),
                        name: name.clone(),
                        arguments: arguments.clone(),
                    }),
                    events,
                );
            }
            let chars: usize = request
                .messages
                .iter()
                .flat_map(|m| &m.content)
                .map(|c| match c {
                    Content::Text { text } => text.len(),
                    Content::ToolUse { input, .. } => input.to_string().len(),
                    Content::ToolResult { content, .. } => content.len(),
                })
                .sum::<usize>()
                + request.system.len();
            out.emit(
                ModelEvent::Usage(Usage {
                    input_tokens: (chars / 4) as u64,
                    output_tokens: (text.len() / 4) as u64,
                    ..Usage::default()
                }),
                events,
            );
            let stop = if calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            };
            out.emit(ModelEvent::Stop(stop), events);
            Ok(out.finish())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_down_server_is_read_from_the_outage_report() {
        let system = "You are…\n\nSome tool servers are unavailable. Do not retry.\n- archive is down (connection refused); its tools are not available.";
        assert_eq!(down_server(system).as_deref(), Some("archive"));
        assert_eq!(down_server("all fine"), None);
    }
}
