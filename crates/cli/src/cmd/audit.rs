//! `switchboard audit verify [FILE]`: checks the audit log's hash chain.

use std::path::PathBuf;

use serde_json::json;
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
    let path = match file.or_else(|| config.and_then(|c| c.audit.clone())) {
        Some(p) => p,
        None => {
            return Err(Failure::usage(
                "no audit log: give its path, or set \"audit\" in the config",
            )
            .into());
        }
    };
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
