//! `switchboard tools`: the tools the model sees.

use serde::Serialize;
use serde_json::Value;
use switchboard_host::{CHANGED_NOTICE, Host, ModelTool, ToolStatus, Verdict};
use switchboard_wire::{JsonObject, ToolAnnotations, types::Deprecation};

use crate::out;

/// One tool in `tools --json`: a stable shape, every key always present.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolView<'a> {
    name: &'a str,
    title: Option<&'a str>,
    server: &'a str,
    original_name: &'a str,
    description: &'a str,
    input_schema: &'a JsonObject,
    annotations: Option<&'a ToolAnnotations>,
    /// `{replacement?, removal?}` when the server marks it deprecated.
    deprecated: Option<&'a Deprecation>,
    status: &'a ToolStatus,
}

impl<'a> From<&'a ModelTool> for ToolView<'a> {
    fn from(t: &'a ModelTool) -> Self {
        ToolView {
            name: &t.name,
            title: t.title.as_deref(),
            server: &t.server,
            original_name: &t.original_name,
            description: &t.description,
            input_schema: &t.input_schema,
            annotations: t.annotations.as_ref(),
            deprecated: t.deprecation.as_ref(),
            status: &t.status,
        }
    }
}

/// Prints the tool table the model sees (or with `all`, every tool as
/// served now, denied ones included; with `principal`, what a gateway
/// lists to that caller), or its JSON, and, for people, the outages.
///
/// # Errors
/// When stdout is closed.
pub(crate) fn run(
    host: &Host,
    json: bool,
    all: bool,
    principal: Option<&str>,
) -> std::io::Result<()> {
    let mut tools = if all { host.all_tools() } else { host.tools() };
    let mut refused = 0;
    if let Some(principal) = principal {
        let before = tools.len();
        tools.retain(|t| host.principal_may_call(principal, &t.name));
        refused = before - tools.len();
    }
    if json {
        let views: Vec<ToolView<'_>> = tools.iter().map(ToolView::from).collect();
        return out::json(&views);
    }
    for line in human(&tools) {
        out::line(line)?;
    }
    if !all {
        let denied = host
            .all_tools()
            .iter()
            .filter(|t| t.status.gate == Verdict::Deny)
            .count();
        if denied > 0 {
            out::note(format!(
                "{denied} tool(s) denied by the permission rules are not shown (the model does not see them); `switchboard tools --all` lists them."
            ));
        }
    }
    if let (Some(principal), true) = (principal, refused > 0) {
        out::note(format!(
            "{refused} more tool(s) are not listed to {principal}: its principals rules refuse them."
        ));
    }
    if let Some(outages) = host.outage_text() {
        out::note(outages);
    }
    Ok(())
}

/// Prints the best `limit` tools for `query` (as `principal` would find
/// them through a gateway), best first, in the shape of [`run`].
///
/// # Errors
/// When stdout is closed.
pub(crate) fn search(
    host: &Host,
    json: bool,
    query: &str,
    limit: usize,
    principal: Option<&str>,
) -> std::io::Result<()> {
    let tools: Vec<ModelTool> = host
        .search_tools(query, limit, principal)
        .into_iter()
        .map(|f| f.tool)
        .collect();
    if json {
        let views: Vec<ToolView<'_>> = tools.iter().map(ToolView::from).collect();
        return out::json(&views);
    }
    if tools.is_empty() {
        out::note(format!("No tool matches {query:?}."));
        return Ok(());
    }
    for line in human(&tools) {
        out::line(line)?;
    }
    Ok(())
}

/// The table people read.
pub(crate) fn human(tools: &[ModelTool]) -> Vec<String> {
    if tools.is_empty() {
        return vec!["No tools: no server is up (see `switchboard servers`).".into()];
    }
    let mut rows = vec![vec![
        "TOOL".to_owned(),
        "SERVER".into(),
        "NAME ON SERVER".into(),
        "GATE".into(),
        "DESCRIPTION".into(),
    ]];
    for t in tools {
        let mut gate = t.status.gate.as_str().to_owned();
        if t.status.pin == "changed" {
            gate.push_str(" (changed)");
        }
        // The gate column says "changed": the notice would fill the column;
        // a deprecation is said under the table.
        let text = t
            .description
            .strip_prefix(CHANGED_NOTICE)
            .unwrap_or(&t.description)
            .trim_start();
        let note = t
            .deprecation
            .as_ref()
            .map(|d| switchboard_host::deprecation_note(&t.server, d));
        let text = note
            .as_deref()
            .and_then(|n| text.strip_prefix(n))
            .unwrap_or(text)
            .trim_start();
        let mut description = out::clip(&out::plain_description(text), 64);
        if let Some(hints) = hints(t.annotations.as_ref()) {
            description.push_str(&format!(" [{hints}]"));
        }
        rows.push(vec![
            t.name.clone(),
            t.server.clone(),
            t.original_name.clone(),
            gate,
            description,
        ]);
    }
    let mut lines = out::table(&rows);
    // Deprecations, under the table: the description column is too narrow.
    for t in tools {
        if let Some(d) = &t.deprecation {
            lines.push(format!(
                "{} is {}",
                t.name,
                switchboard_host::deprecation_note(&t.server, d)
                    .trim_start_matches('[')
                    .trim_end_matches(']')
            ));
        }
    }
    lines
}

/// The annotations a server set to true, as `readOnlyHint, …`.
fn hints(annotations: Option<&ToolAnnotations>) -> Option<String> {
    let a = annotations?;
    let v = serde_json::to_value(a).ok()?;
    let set: Vec<&str> = v
        .as_object()?
        .iter()
        .filter(|(k, v)| k.ends_with("Hint") && **v == Value::Bool(true))
        .map(|(k, _)| k.as_str())
        .collect();
    (!set.is_empty()).then(|| set.join(", "))
}
