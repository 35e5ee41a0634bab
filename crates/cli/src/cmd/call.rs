//! `switchboard call TOOL [ARGS_JSON]`: one call through the gate.

use switchboard_host::{CallReport, Host};
use switchboard_wire::{CallToolResult, ContentBlock, JsonObject};

use crate::exit::{Code, Failure};
use crate::out;
use crate::session;
use crate::settings::ApprovalMode;

/// Calls `tool` and prints its result (or the `CallToolResult` as JSON).
///
/// # Errors
/// A [`Failure`] whose code says what went wrong (denied, unreachable,
/// tool error, unknown tool), after the result has been printed.
pub(crate) async fn run(
    host: &Host,
    tool: &str,
    arguments: Option<JsonObject>,
    approval: ApprovalMode,
    json: bool,
    stderr_tty: bool,
) -> anyhow::Result<()> {
    let (options, bar) = session::call_options(session::approver(approval), stderr_tty);
    // Ctrl-C drops the call: a task it started is cancelled (tasks/cancel
    // goes out before the host closes the connection).
    let report = tokio::select! {
        report = host.call_detailed(tool, arguments, options) => report,
        () = crate::shutdown_signal() => {
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            return Err(Failure::new(Code::Interrupted, format!("{tool}: interrupted")).into());
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        out::json(&report.result)?;
    } else {
        out::line(human(&report.result))?;
    }
    match code_of(&report) {
        Code::Ok => Ok(()),
        code => Err(Failure::new(code, failure_message(tool, code, &report, json)).into()),
    }
}

/// The exit code of a finished call: the host's outcome says it all (a
/// tool of a server that is down, paused or waiting for a login comes back
/// as such, not as an unknown tool).
pub(crate) fn code_of(report: &CallReport) -> Code {
    Code::of_outcome(report.outcome)
}

fn failure_message(tool: &str, code: Code, report: &CallReport, json: bool) -> String {
    let first = report
        .result
        .joined_text()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('<'))
        .unwrap_or_default()
        .to_owned();
    let what = match code {
        Code::Denied => "the call was denied",
        Code::Auth => "the server needs authorization",
        Code::Unreachable => "the server could not be reached",
        Code::ToolError => "the tool returned an error",
        _ => "the call failed",
    };
    if json {
        // The JSON error line stands alone: say everything.
        format!("{tool}: {what}: {first}")
    } else {
        // The result's text is already on stdout.
        format!("{tool}: {what}")
    }
}

/// The result as people read it: text without the model's boundary
/// markers, other blocks as one JSON line each.
pub(crate) fn human(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text { text, .. } => parts.push(out::without_markers(text)),
            other => parts.push(serde_json::to_string(other).unwrap_or_default()),
        }
    }
    if let Some(structured) = &result.structured_content {
        if parts.is_empty() {
            parts.push(structured.to_string());
        }
    }
    parts.join("\n")
}
