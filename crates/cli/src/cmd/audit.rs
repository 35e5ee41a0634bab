//! `switchboard audit verify [FILE...]`: checks each audit log's hash chain
//! (a rotated log together with its archives).
//! `switchboard audit stats [FILE]`: per tool, calls, error rate and
//! p50/p95 duration, errors by kind (of the config's log with its archives, or of FILE).

use std::path::PathBuf;

use serde_json::{Value, json};
use switchboard_host::{Config, Outcome, audit_archives, verify_audit};
use switchboard_host::{Figures, audit_stats_of_files};

use crate::exit::Failure;
use crate::flags::StatsBy;
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

/// Prints per-tool (or per-caller, `by`) figures of `file`, or of the
/// config's audit log with its archives (`auditRotate`): error rate first,
/// then p50/p95/max duration (never a mean). Lines that are not records
/// are named on stderr and do not stop the rest.
///
/// # Errors
/// A usage [`Failure`] when there is no log or it cannot be read.
pub(crate) fn stats(
    config: Option<&Config>,
    file: Option<PathBuf>,
    by: StatsBy,
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
    let stats = audit_stats_of_files(&files).map_err(|e| Failure::usage(e.to_string()))?;
    for s in &stats.skipped {
        let file = s.file.as_deref().unwrap_or(&path);
        out::note(format!("{}:{}: skipped: {}", file.display(), s.line, s.why));
    }
    // Each row: its naming columns, then its figures.
    let groups: Vec<(Names, &Figures)> = match by {
        StatsBy::Tool => stats
            .tools
            .iter()
            .map(|t| {
                let names = vec![("tool", Some(t.tool.clone())), ("server", t.alias.clone())];
                (names, &t.figures)
            })
            .collect(),
        StatsBy::Principal => stats
            .principals
            .iter()
            .map(|p| (vec![("principal", p.principal.clone())], &p.figures))
            .collect(),
    };
    let key = match by {
        StatsBy::Tool => "tools",
        StatsBy::Principal => "principals",
    };
    if json {
        let rows: Vec<Value> = groups
            .iter()
            .map(|(names, f)| {
                let mut row = json!({
                    "calls": f.calls,
                    "errors": f.errors,
                    "errorsByKind": f.errors_by_kind,
                    "errorRate": f.error_rate(),
                    "denied": f.denied,
                    "limited": f.limited,
                    "p50Ms": f.p50_ms,
                    "p95Ms": f.p95_ms,
                    "maxMs": f.max_ms,
                });
                for (k, v) in names {
                    row[*k] = json!(v);
                }
                row
            })
            .collect();
        let mut summary = json!({
            "file": path.display().to_string(),
            "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
            "records": stats.records,
            "skipped": stats.skipped.len(),
        });
        summary[key] = Value::Array(rows);
        return Ok(out::json(&summary)?);
    }
    if groups.is_empty() {
        out::line(format!("{}: no calls recorded", path.display()))?;
        return Ok(());
    }
    let ms = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v} ms"));
    let mut head: Vec<String> = groups[0].0.iter().map(|(k, _)| k.to_uppercase()).collect();
    head.extend(
        [
            "CALLS",
            "ERROR RATE",
            "ERRORS",
            "TOOL ERR",
            "PROTOCOL",
            "TIMEOUT",
            "TRANSPORT",
            "DENIED",
            "LIMITED",
            "P50",
            "P95",
            "MAX",
        ]
        .map(str::to_owned),
    );
    let mut rows = vec![head];
    for (names, f) in &groups {
        let mut row: Vec<String> = names
            .iter()
            .map(|(_, v)| v.clone().unwrap_or_else(|| "-".into()))
            .collect();
        row.extend([
            f.calls.to_string(),
            format!("{:.1}%", f.error_rate() * 100.0),
            f.errors.to_string(),
            f.errors_of(Outcome::ToolError).to_string(),
            f.errors_of(Outcome::ProtocolError).to_string(),
            f.errors_of(Outcome::Timeout).to_string(),
            f.errors_of(Outcome::Transport).to_string(),
            f.denied.to_string(),
            f.limited.to_string(),
            ms(f.p50_ms),
            ms(f.p95_ms),
            ms(f.max_ms),
        ]);
        rows.push(row);
    }
    for line in out::table(&rows) {
        out::line(line)?;
    }
    out::line(format!(
        "{} call(s) in {}; error rate excludes denied calls (by the rules or the caller's limits: LIMITED) and requests handed back to the caller (asked, input_required); ERRORS counts every kind, the four beside it the common ones; durations of calls that ran",
        stats.records,
        path.display()
    ))?;
    Ok(())
}

/// The columns that name a row of `audit stats` (JSON key and value; `-`
/// in the table for none).
type Names = Vec<(&'static str, Option<String>)>;

/// `FILE`, or the config's `audit` path.
fn log_path(config: Option<&Config>, file: Option<PathBuf>) -> Result<PathBuf, Failure> {
    file.or_else(|| config.and_then(|c| c.audit.clone()))
        .ok_or_else(|| {
            Failure::usage("no audit log: give its path, or set \"audit\" in the config")
        })
}
