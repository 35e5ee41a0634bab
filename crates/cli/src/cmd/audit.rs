//! `switchboard audit verify [FILE]`: checks the audit log's hash chain.
//! `switchboard audit stats [FILE]`: per tool, calls, error rate and
//! p50/p95 duration.

use std::path::PathBuf;

use serde_json::json;
use switchboard_host::audit_stats::stats_of_file;
use switchboard_host::{Config, verify_audit};

use crate::exit::Failure;
use crate::out;

/// Verifies `file`, or the config's audit log.
///
/// # Errors
/// A usage [`Failure`] when there is no log to check, it cannot be read,
/// or its chain is broken (after the report is printed).
pub(crate) fn verify(
    config: Option<&Config>,
    file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    let path = log_path(config, file)?;
    let report = verify_audit(&path).map_err(|e| Failure::usage(e.to_string()))?;
    if json {
        out::json(&json!({
            "file": path.display().to_string(),
            "lines": report.lines,
            "intact": report.is_intact(),
            "head": report.head,
            "problems": report
                .problems
                .iter()
                .map(|p| json!({"line": p.line, "problem": p.what}))
                .collect::<Vec<_>>(),
        }))?;
    } else {
        for p in &report.problems {
            out::line(format!("{}:{}: {}", path.display(), p.line, p.what))?;
        }
        if report.is_intact() {
            out::line(format!(
                "{}: {} line(s), chain intact; head {}",
                path.display(),
                report.lines,
                report.head.as_deref().unwrap_or("(empty log)")
            ))?;
        }
    }
    if report.is_intact() {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "{}: the audit chain is broken ({} problem(s))",
            path.display(),
            report.problems.len()
        ))
        .into())
    }
}

/// Prints per-tool figures of `file`, or of the config's audit log: error
/// rate first, then p50/p95/max duration (never a mean). Lines that are not
/// records are named on stderr and do not stop the rest.
///
/// # Errors
/// A usage [`Failure`] when there is no log or it cannot be read.
pub(crate) fn stats(
    config: Option<&Config>,
    file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    let path = log_path(config, file)?;
    let stats = stats_of_file(&path).map_err(|e| Failure::usage(e.to_string()))?;
    for s in &stats.skipped {
        out::note(format!("{}:{}: skipped: {}", path.display(), s.line, s.why));
    }
    if json {
        return Ok(out::json(&json!({
            "file": path.display().to_string(),
            "records": stats.records,
            "skipped": stats.skipped.len(),
            "tools": stats.tools.iter().map(|t| json!({
                "tool": t.tool,
                "server": t.alias,
                "calls": t.calls,
                "errors": t.errors,
                "errorRate": t.error_rate(),
                "denied": t.denied,
                "p50Ms": t.p50_ms,
                "p95Ms": t.p95_ms,
                "maxMs": t.max_ms,
            })).collect::<Vec<_>>(),
        }))?);
    }
    if stats.tools.is_empty() {
        out::line(format!("{}: no calls recorded", path.display()))?;
        return Ok(());
    }
    let ms = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v} ms"));
    let mut rows = vec![
        [
            "TOOL",
            "SERVER",
            "CALLS",
            "ERROR RATE",
            "ERRORS",
            "DENIED",
            "P50",
            "P95",
            "MAX",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for t in &stats.tools {
        rows.push(vec![
            t.tool.clone(),
            t.alias.clone().unwrap_or_else(|| "-".into()),
            t.calls.to_string(),
            format!("{:.1}%", t.error_rate() * 100.0),
            t.errors.to_string(),
            t.denied.to_string(),
            ms(t.p50_ms),
            ms(t.p95_ms),
            ms(t.max_ms),
        ]);
    }
    for line in out::table(&rows) {
        out::line(line)?;
    }
    out::line(format!(
        "{} call(s) in {}; error rate excludes denied calls; durations of calls that ran",
        stats.records,
        path.display()
    ))?;
    Ok(())
}

/// `FILE`, or the config's `audit` path.
fn log_path(config: Option<&Config>, file: Option<PathBuf>) -> Result<PathBuf, Failure> {
    file.or_else(|| config.and_then(|c| c.audit.clone()))
        .ok_or_else(|| {
            Failure::usage("no audit log: give its path, or set \"audit\" in the config")
        })
}
