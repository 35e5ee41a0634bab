//! Per-tool figures from the audit log: calls, error rate, and the p50 and
//! p95 of their durations (`switchboard audit stats`).
//!
//! A pure function over the log's lines ([`stats`]), so it reads a log that
//! another process is appending to without taking its lock, and tests need
//! no file. The figures pair with evals: an eval says whether the model
//! picks a tool, these say what happens when it does.
//!
//! - **Errors** are every outcome except `ok`, `denied` and `limited` (a
//!   tool error, a protocol error, a timeout, an unreachable server, an
//!   open breaker, an unknown tool, a missing login), counted by kind too
//!   ([`Figures::errors_by_kind`]). A denial is the
//!   user's decision, and a call over its caller's limits a policy's, not a
//!   failure of the tool: both are counted as refused and left out of the
//!   error rate and of the durations (a denied call's time is mostly
//!   someone reading a prompt).
//! - A request handed back to its caller (`asked`, `input_required`:
//!   [`Outcome::is_handed_back`]) is not a call: its answered retry has a
//!   line of its own. The gateway's `/metrics` count the same way.
//! - **Durations** are the wall time the host recorded, as percentiles by
//!   the nearest-rank method; never a mean, which one slow call drags away
//!   from what most calls take.
//! - A line that is not an audit record is skipped and reported with its
//!   line number; the rest still count.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::HostError;
use crate::audit::{AuditRecord, Outcome};

/// The figures of a group of calls (one tool's, or one caller's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figures {
    /// Every recorded call.
    pub calls: u64,
    /// Calls that failed (any outcome but `ok`, `denied` and `limited`).
    pub errors: u64,
    /// `errors` by kind: the audit outcome (`tool_error`, `transport`,
    /// `timeout`, `protocol_error`, `breaker`, …) and its count.
    pub errors_by_kind: BTreeMap<&'static str, u64>,
    /// Calls the gate refused, or the caller's limits.
    pub denied: u64,
    /// Of `denied`, the calls over the caller's limits (`limited`).
    pub limited: u64,
    /// Median duration of the calls that were not denied, in ms.
    pub p50_ms: Option<u64>,
    /// 95th percentile of the same durations, in ms.
    pub p95_ms: Option<u64>,
    /// The longest of them, in ms.
    pub max_ms: Option<u64>,
}

impl Figures {
    /// The errors of one kind (`outcome`), 0 when there were none.
    pub fn errors_of(&self, outcome: Outcome) -> u64 {
        self.errors_by_kind
            .get(outcome.as_str())
            .copied()
            .unwrap_or(0)
    }

    /// Errors over the calls that were not denied; 0 when every call was
    /// denied.
    pub fn error_rate(&self) -> f64 {
        let attempted = self.calls - self.denied;
        if attempted == 0 {
            0.0
        } else {
            self.errors as f64 / attempted as f64
        }
    }
}

/// The figures of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStats {
    /// The model-facing name called.
    pub tool: String,
    /// The server's alias, as recorded (`None` for an unknown tool).
    pub alias: Option<String>,
    /// Its calls' figures.
    pub figures: Figures,
}

/// The figures of one caller of a gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct PrincipalStats {
    /// The caller, as recorded; `None` for calls without one (stdio, an
    /// unauthenticated gateway, `switchboard call`).
    pub principal: Option<String>,
    /// Its calls' figures.
    pub figures: Figures,
}

/// What [`stats`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuditStats {
    /// Records read.
    pub records: usize,
    /// One entry per tool, highest error rate first, then most calls.
    pub tools: Vec<ToolStats>,
    /// One entry per caller, most calls first.
    pub principals: Vec<PrincipalStats>,
    /// Lines that are not audit records, with why.
    pub skipped: Vec<SkippedLine>,
}

/// A line [`stats`] could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// The file holding it ([`stats_of_files`]); `None` for [`stats`].
    pub file: Option<PathBuf>,
    /// 1-based line number.
    pub line: usize,
    /// Why it was skipped.
    pub why: String,
}

/// The figures of the log whose lines are `lines` (blank lines are
/// ignored).
pub fn stats<'a>(lines: impl IntoIterator<Item = &'a str>) -> AuditStats {
    let mut tally = Tally::default();
    tally.add(None, lines);
    tally.finish()
}

/// [`stats`] of the log file at `path`.
///
/// # Errors
/// [`HostError::AuditIo`] when the file cannot be read.
pub fn stats_of_file(path: &Path) -> Result<AuditStats, HostError> {
    stats_of_files(&[path.to_path_buf()])
}

/// [`stats`] of the lines of every file of `paths` together (a log and its
/// archives), read one file at a time.
///
/// # Errors
/// [`HostError::AuditIo`] when a file cannot be read.
pub fn stats_of_files(paths: &[PathBuf]) -> Result<AuditStats, HostError> {
    let mut tally = Tally::default();
    for path in paths {
        let bytes = std::fs::read(path).map_err(|source| HostError::AuditIo {
            path: path.clone(),
            source,
        })?;
        // A line that is not UTF-8 becomes a skipped line, not a failed read.
        let text = String::from_utf8_lossy(&bytes);
        tally.add(Some(path), text.split('\n'));
    }
    Ok(tally.finish())
}

/// The figures as lines are read.
#[derive(Default)]
struct Tally {
    by_tool: HashMap<String, (Option<String>, Acc)>,
    by_principal: HashMap<Option<String>, Acc>,
    out: AuditStats,
}

/// One group's figures as lines are read.
#[derive(Default)]
struct Acc {
    calls: u64,
    errors: u64,
    errors_by_kind: BTreeMap<&'static str, u64>,
    denied: u64,
    limited: u64,
    durations: Vec<u64>,
}

impl Acc {
    /// Counts one call that ended with `outcome` after `duration_ms`.
    fn count(&mut self, outcome: Outcome, duration_ms: u64) {
        self.calls += 1;
        match outcome {
            Outcome::Ok => self.durations.push(duration_ms),
            refused if refused.is_refusal() => {
                self.denied += 1;
                if refused == Outcome::Limited {
                    self.limited += 1;
                }
            }
            failed => {
                self.errors += 1;
                *self.errors_by_kind.entry(failed.as_str()).or_default() += 1;
                self.durations.push(duration_ms);
            }
        }
    }

    /// The figures, percentiles worked out.
    fn figures(mut self) -> Figures {
        self.durations.sort_unstable();
        Figures {
            calls: self.calls,
            errors: self.errors,
            errors_by_kind: self.errors_by_kind,
            denied: self.denied,
            limited: self.limited,
            p50_ms: percentile(&self.durations, 50),
            p95_ms: percentile(&self.durations, 95),
            max_ms: self.durations.last().copied(),
        }
    }
}

impl Tally {
    /// Counts the lines of one file (`None`: lines from no file).
    fn add<'a>(&mut self, file: Option<&Path>, lines: impl IntoIterator<Item = &'a str>) {
        for (i, line) in lines.into_iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record: AuditRecord = match serde_json::from_str(line) {
                Ok(r) => r,
                Err(e) => {
                    self.out.skipped.push(SkippedLine {
                        file: file.map(Path::to_path_buf),
                        line: i + 1,
                        why: format!("not an audit record: {e}"),
                    });
                    continue;
                }
            };
            self.out.records += 1;
            // A question handed back to the caller is not a call: the
            // answered retry has its own line.
            // Nor is a person's acceptance of a changed definition.
            if record.outcome.is_handed_back()
                || record.method.as_deref() == Some(crate::audit::PINS_ACCEPT_METHOD)
            {
                continue;
            }
            let (alias, acc) = self.by_tool.entry(record.tool).or_default();
            if alias.is_none() {
                *alias = record.alias;
            }
            acc.count(record.outcome, record.duration_ms);
            self.by_principal
                .entry(record.principal)
                .or_default()
                .count(record.outcome, record.duration_ms);
        }
    }

    /// The figures of every line counted.
    fn finish(self) -> AuditStats {
        let mut out = self.out;
        out.tools = self
            .by_tool
            .into_iter()
            .map(|(tool, (alias, acc))| ToolStats {
                tool,
                alias,
                figures: acc.figures(),
            })
            .collect();
        out.tools.sort_by(|a, b| {
            b.figures
                .error_rate()
                .total_cmp(&a.figures.error_rate())
                .then_with(|| b.figures.calls.cmp(&a.figures.calls))
                .then_with(|| a.tool.cmp(&b.tool))
        });
        out.principals = self
            .by_principal
            .into_iter()
            .map(|(principal, acc)| PrincipalStats {
                principal,
                figures: acc.figures(),
            })
            .collect();
        out.principals.sort_by(|a, b| {
            b.figures
                .calls
                .cmp(&a.figures.calls)
                .then_with(|| a.principal.cmp(&b.principal))
        });
        out
    }
}

/// The nearest-rank `p`th percentile of `sorted` (ascending).
fn percentile(sorted: &[u64], p: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    // rank = ceil(p/100 · n), at least 1.
    let rank = (p * n).div_ceil(100).max(1);
    let index = usize::try_from(rank - 1).unwrap_or(usize::MAX);
    sorted.get(index).or(sorted.last()).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditLog;

    fn line(tool: &str, outcome: &str, ms: u64) -> String {
        format!(
            r#"{{"seq":1,"prev":"0","time":"2026-12-01T00:00:00.000Z","alias":"notes","tool":"{tool}","originalTool":"x","argumentNames":[],"argumentsSha256":"","decision":"allow","decidedBy":"rule","outcome":"{outcome}","isError":false,"durationMs":{ms},"hash":"0"}}"#
        )
    }

    /// [`line`] of a call made by `principal`.
    fn line_by(principal: &str, outcome: &str, ms: u64) -> String {
        line("t", outcome, ms).replace(
            r#""hash":"0""#,
            &format!(r#""principal":"{principal}","hash":"0""#),
        )
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 95), Some(95));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[1, 2], 50), Some(1));
        assert_eq!(percentile(&[1, 2], 95), Some(2));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn per_tool_calls_error_rate_and_p95_with_denials_apart() {
        let mut lines = Vec::new();
        // search: 20 calls, 19 fast and one very slow; p95 is not dragged
        // to the slow one the way a mean would be.
        for _ in 0..19 {
            lines.push(line("mcp__notes__search", "ok", 10));
        }
        lines.push(line("mcp__notes__search", "ok", 5000));
        // read: 4 calls, one timeout, one tool error, one denied.
        lines.push(line("mcp__notes__read_note", "ok", 30));
        lines.push(line("mcp__notes__read_note", "timeout", 1000));
        lines.push(line("mcp__notes__read_note", "tool_error", 20));
        lines.push(line("mcp__notes__read_note", "denied", 90000));
        lines.push(String::new());
        lines.push("not json".into());
        let s = stats(lines.iter().map(String::as_str));
        assert_eq!(s.records, 24);
        assert_eq!(s.skipped.len(), 1);
        assert_eq!(s.skipped[0].line, 26);
        // Highest error rate first.
        let read = &s.tools[0];
        assert_eq!(read.tool, "mcp__notes__read_note");
        assert_eq!(
            (read.figures.calls, read.figures.errors, read.figures.denied),
            (4, 2, 1)
        );
        assert!((read.figures.error_rate() - 2.0 / 3.0).abs() < 1e-9);
        // The denied call's 90 s are not a duration of the tool.
        assert_eq!(read.figures.max_ms, Some(1000));
        assert_eq!(read.figures.p50_ms, Some(30));
        let search = &s.tools[1];
        assert_eq!((search.figures.calls, search.figures.errors), (20, 0));
        assert_eq!(search.figures.p50_ms, Some(10));
        assert_eq!(search.figures.p95_ms, Some(10));
        assert_eq!(search.figures.max_ms, Some(5000));
        assert_eq!(search.alias.as_deref(), Some("notes"));
    }

    #[test]
    fn only_denied_calls_have_no_durations_and_no_error_rate() {
        let l = line("t", "denied", 5);
        let s = stats([l.as_str()]);
        assert_eq!(s.tools[0].figures.error_rate(), 0.0);
        assert_eq!(s.tools[0].figures.p95_ms, None);
    }

    #[test]
    fn calls_over_a_callers_limits_are_refusals_not_errors() {
        let lines = [line("t", "limited", 0), line("t", "ok", 7)];
        let s = stats(lines.iter().map(String::as_str));
        let t = &s.tools[0];
        assert_eq!(
            (
                t.figures.calls,
                t.figures.errors,
                t.figures.denied,
                t.figures.limited
            ),
            (2, 0, 1, 1)
        );
        assert_eq!(t.figures.error_rate(), 0.0);
        assert_eq!(t.figures.p50_ms, Some(7));
    }

    #[test]
    fn each_caller_has_its_figures() {
        let lines = [
            line_by("ci-bot", "ok", 5),
            line_by("ci-bot", "limited", 0),
            line_by("ci-bot", "limited", 0),
            line_by("ci-bot", "timeout", 900),
            line_by("alice", "denied", 0),
            line("t", "ok", 3),
        ];
        let s = stats(lines.iter().map(String::as_str));
        let who: Vec<Option<&str>> = s
            .principals
            .iter()
            .map(|p| p.principal.as_deref())
            .collect();
        // Most calls first; calls without a caller are a group of their own.
        assert_eq!(who, [Some("ci-bot"), None, Some("alice")]);
        let bot = &s.principals[0].figures;
        assert_eq!(
            (bot.calls, bot.errors, bot.denied, bot.limited),
            (4, 1, 2, 2)
        );
        assert!((bot.error_rate() - 0.5).abs() < 1e-9);
        assert_eq!(bot.max_ms, Some(900));
        let alice = &s.principals[2].figures;
        assert_eq!((alice.calls, alice.denied, alice.limited), (1, 1, 0));
        // The same lines by tool.
        assert_eq!(s.tools[0].figures.calls, 6);
    }

    #[test]
    fn a_question_handed_back_is_not_a_call() {
        let asked = line("t", "asked", 5);
        let ok = line("t", "ok", 7);
        let s = stats([asked.as_str(), ok.as_str()]);
        assert_eq!(s.records, 2);
        assert_eq!(
            (s.tools[0].figures.calls, s.tools[0].figures.errors),
            (1, 0)
        );
        assert_eq!(s.tools[0].figures.p50_ms, Some(7));
    }

    #[test]
    fn errors_are_split_by_kind_and_relayed_questions_are_not_calls() {
        let lines = [
            line("t", "tool_error", 1),
            line("t", "tool_error", 1),
            line("t", "transport", 1),
            line("t", "timeout", 1),
            line("t", "protocol_error", 1),
            line("t", "input_required", 1),
            line("t", "ok", 1),
        ];
        let s = stats(lines.iter().map(String::as_str));
        let f = &s.tools[0].figures;
        assert_eq!((f.calls, f.errors), (6, 5));
        assert_eq!(f.errors_of(Outcome::ToolError), 2);
        assert_eq!(f.errors_of(Outcome::Transport), 1);
        assert_eq!(f.errors_of(Outcome::Timeout), 1);
        assert_eq!(f.errors_of(Outcome::ProtocolError), 1);
        assert_eq!(f.errors_of(Outcome::Breaker), 0);
    }

    #[test]
    fn reads_what_the_audit_log_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        for (outcome, ms) in [(Outcome::Ok, 3), (Outcome::Transport, 8)] {
            let mut r = AuditRecord::new("mcp__a__t", None);
            r.alias = Some("a".into());
            r.outcome = outcome;
            r.duration_ms = ms;
            log.append(&r).unwrap();
        }
        let s = stats_of_file(&path).unwrap();
        assert!(s.skipped.is_empty(), "{:?}", s.skipped);
        assert_eq!(s.tools.len(), 1);
        assert_eq!(
            (s.tools[0].figures.calls, s.tools[0].figures.errors),
            (2, 1)
        );
        assert_eq!(s.tools[0].figures.p95_ms, Some(8));
        assert!(stats_of_file(&dir.path().join("missing")).is_err());
    }
}
