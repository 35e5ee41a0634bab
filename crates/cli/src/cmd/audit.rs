//! `switchboard audit verify [FILE...]`: checks each audit log's hash chain
//! (a rotated log together with its archives).
//! `switchboard audit stats [FILE]`: per tool, calls, error rate and
//! p50/p95 duration (of the config's log with its archives, or of FILE).

use std::path::PathBuf;

use serde_json::json;
use switchboard_host::audit_stats::stats_of_files;
use switchboard_host::{Config, audit_archives, verify_audit};

use crate::exit::Failure;
use crate::out;

/// Verifies each of `files` (each chain on its own, e.g. one log per
/// replica, a rotated one with its archives), or the config's audit log; a
/// summary line per log.
///
/// # Errors
/// A usage [`Failure`] when there is no log to check, one cannot be read,
/// or a chain is broken (after every file's report is printed).
pub(crate) fn verify(config: Option<&Config>, files: &[PathBuf], json: bool) -> anyhow::Result<()> {
    let paths = if files.is_empty() {
        vec![log_path(config, None)?]
    } else {
        files.to_vec()
    };
    let mut broken = Vec::new();
    let mut reports = Vec::new();
    for path in &paths {
        let report = match verify_audit(path) {
            Ok(report) => report,
            Err(e) => {
                broken.push(format!("{}: {e}", path.display()));
                if json {
                    reports
                        .push(json!({"file": path.display().to_string(), "error": e.to_string()}));
                } else {
                    out::line(format!("{}: cannot be read: {e}", path.display()))?;
                }
                continue;
            }
        };
        if json {
            reports.push(json!({
                "file": path.display().to_string(),
                "files": report.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                "lines": report.lines,
                "intact": report.is_intact(),
                "head": report.head,
                "startsAt": report.starts_at,
                "problems": report
                    .problems
                    .iter()
                    .map(|p| json!({"file": p.file.display().to_string(), "line": p.line, "problem": p.what}))
                    .collect::<Vec<_>>(),
            }));
        } else {
            for p in &report.problems {
                out::line(format!("{}:{}: {}", p.file.display(), p.line, p.what))?;
            }
            // A rotated log: how many files, and where the chain starts
            // when its oldest archives were deleted.
            let mut span = String::new();
            if report.files.len() > 1 {
                span = format!(" in {} files (with its archives)", report.files.len());
            }
            if let Some(seq) = report.starts_at {
                span.push_str(&format!(
                    ", from seq {seq} (older archives deleted, not checked)"
                ));
            }
            if report.is_intact() {
                out::line(format!(
                    "{}: {} line(s){span}, chain intact; head {}",
                    path.display(),
                    report.lines,
                    report.head.as_deref().unwrap_or("(empty log)")
                ))?;
            } else {
                out::line(format!(
                    "{}: {} line(s){span}, chain broken ({} problem(s))",
                    path.display(),
                    report.lines,
                    report.problems.len()
                ))?;
            }
        }
        if !report.is_intact() {
            broken.push(format!(
                "{}: the audit chain is broken ({} problem(s))",
                path.display(),
                report.problems.len()
            ));
        }
    }
    if json {
        // One file keeps the single-object shape it always had.
        match <[serde_json::Value; 1]>::try_from(reports) {
            Ok([one]) => out::json(&one)?,
            Err(many) => out::json(&serde_json::Value::Array(many))?,
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(Failure::usage(broken.join("\n")).into())
    }
}

/// Prints per-tool figures of `file`, or of the config's audit log with its
/// archives (`auditRotate`): error rate first, then p50/p95/max duration
/// (never a mean). Lines that are not records are named on stderr and do
/// not stop the rest.
///
/// # Errors
/// A usage [`Failure`] when there is no log or it cannot be read.
pub(crate) fn stats(
    config: Option<&Config>,
    file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    let given = file.is_some();
    let path = log_path(config, file)?;
    let mut files = Vec::new();
    if !given {
        files = audit_archives(&path).map_err(|e| {
            Failure::usage(format!(
                "cannot list the archives of {}: {e}",
                path.display()
            ))
        })?;
    }
    files.push(path.clone());
    let stats = stats_of_files(&files).map_err(|e| Failure::usage(e.to_string()))?;
    for s in &stats.skipped {
        let file = s.file.as_deref().unwrap_or(&path);
        out::note(format!("{}:{}: skipped: {}", file.display(), s.line, s.why));
    }
    if json {
        return Ok(out::json(&json!({
            "file": path.display().to_string(),
            "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
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
        "{} call(s) in {}; error rate excludes denied calls (by the rules or the caller's limits); durations of calls that ran",
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
