//! Baselines: a run's per-case results saved to a file, and a later run
//! compared with them case by case.
//!
//! A case's status is `pass` (every run passed), `fail` (none did) or
//! `flaky` (some did). A regression is a case whose status got worse
//! (pass → flaky → fail); an improvement the other way. Cases only in one
//! of the two runs are listed as new or gone.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::case::Category;
use super::report::Report;

const FORMAT_VERSION: u32 = 1;

/// A saved run: per case, its category and how many runs passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Baseline {
    /// Format version (1).
    pub version: u32,
    /// The model that was measured.
    pub model: String,
    /// id → result.
    pub cases: BTreeMap<String, BaselineCase>,
}

/// One case of a [`Baseline`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineCase {
    /// Its category.
    pub category: Category,
    /// Runs that passed.
    pub passed: usize,
    /// Runs.
    pub runs: usize,
}

/// How a case did over its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No run passed.
    Fail,
    /// Some runs passed.
    Flaky,
    /// Every run passed.
    Pass,
}

impl Status {
    /// The status of `passed` out of `runs`.
    pub fn of(passed: usize, runs: usize) -> Status {
        if runs > 0 && passed == runs {
            Status::Pass
        } else if passed == 0 {
            Status::Fail
        } else {
            Status::Flaky
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Fail => "fail",
            Status::Flaky => "flaky",
            Status::Pass => "pass",
        })
    }
}

/// What changed for one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Worse than in the baseline.
    Regression,
    /// Better than in the baseline.
    Improvement,
    /// Not in the baseline.
    New,
    /// In the baseline, not in this run.
    Gone,
}

/// One case that differs from the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The case's id.
    pub id: String,
    /// What changed.
    pub kind: ChangeKind,
    /// Its status in the baseline.
    pub before: Option<Status>,
    /// Its status now.
    pub now: Option<Status>,
    /// Runs passed / runs, before (`"2/3"`).
    #[serde(rename = "beforeRuns")]
    pub before_runs: Option<String>,
    /// Runs passed / runs, now.
    #[serde(rename = "nowRuns")]
    pub now_runs: Option<String>,
}

/// Why a baseline could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// The file could not be read or written.
    #[error("baseline {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a baseline.
    #[error("baseline {path} is not a baseline file ({reason}); save one with --save-baseline")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl Baseline {
    /// The baseline of `report`.
    pub fn of(report: &Report) -> Baseline {
        Baseline {
            version: FORMAT_VERSION,
            model: report.model.clone(),
            cases: report
                .cases
                .iter()
                .map(|c| {
                    (
                        c.id.clone(),
                        BaselineCase {
                            category: c.category,
                            passed: c.passed,
                            runs: c.runs,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Reads a baseline file.
    ///
    /// # Errors
    /// [`BaselineError`] when it cannot be read or is not a baseline.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: shown.clone(),
            source,
        })?;
        let b: Baseline = serde_json::from_str(&text).map_err(|e| BaselineError::Damaged {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        if b.version != FORMAT_VERSION {
            return Err(BaselineError::Damaged {
                path: shown,
                reason: format!("format version {} is not {FORMAT_VERSION}", b.version),
            });
        }
        Ok(b)
    }

    /// Writes the baseline (pretty JSON, sorted ids: it diffs well).
    ///
    /// # Errors
    /// [`BaselineError::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), BaselineError> {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        std::fs::write(path, text).map_err(|source| BaselineError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// Every case of `report` that differs from this baseline, regressions
    /// first.
    pub fn compare(&self, report: &Report) -> Vec<Change> {
        let mut changes = Vec::new();
        for c in &report.cases {
            let now = Status::of(c.passed, c.runs);
            let now_runs = Some(format!("{}/{}", c.passed, c.runs));
            match self.cases.get(&c.id) {
                None => changes.push(Change {
                    id: c.id.clone(),
                    kind: ChangeKind::New,
                    before: None,
                    now: Some(now),
                    before_runs: None,
                    now_runs,
                }),
                Some(b) => {
                    let before = Status::of(b.passed, b.runs);
                    let kind = match now.cmp(&before) {
                        std::cmp::Ordering::Less => ChangeKind::Regression,
                        std::cmp::Ordering::Greater => ChangeKind::Improvement,
                        std::cmp::Ordering::Equal => continue,
                    };
                    changes.push(Change {
                        id: c.id.clone(),
                        kind,
                        before: Some(before),
                        now: Some(now),
                        before_runs: Some(format!("{}/{}", b.passed, b.runs)),
                        now_runs,
                    });
                }
            }
        }
        for (id, b) in &self.cases {
            if !report.cases.iter().any(|c| &c.id == id) {
                changes.push(Change {
                    id: id.clone(),
                    kind: ChangeKind::Gone,
                    before: Some(Status::of(b.passed, b.runs)),
                    now: None,
                    before_runs: Some(format!("{}/{}", b.passed, b.runs)),
                    now_runs: None,
                });
            }
        }
        changes.sort_by_key(|c| c.kind != ChangeKind::Regression);
        changes
    }
}

/// The changes as people read them.
pub fn render_changes(changes: &[Change], against: &str) -> String {
    if changes.is_empty() {
        return format!("No case changed against {against}.\n");
    }
    let mut rows = vec![
        ["CASE", "CHANGE", "BEFORE", "NOW"]
            .map(str::to_owned)
            .to_vec(),
    ];
    let show = |s: Option<Status>, runs: &Option<String>| match (s, runs) {
        (Some(s), Some(r)) => format!("{s} ({r})"),
        _ => "-".into(),
    };
    for c in changes {
        rows.push(vec![
            c.id.clone(),
            match c.kind {
                ChangeKind::Regression => "REGRESSION",
                ChangeKind::Improvement => "improvement",
                ChangeKind::New => "new",
                ChangeKind::Gone => "gone",
            }
            .into(),
            show(c.before, &c.before_runs),
            show(c.now, &c.now_runs),
        ]);
    }
    let mut out = format!("Against {against}:\n");
    for line in super::report::columns(&rows) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::eval::report::Policy;
    use crate::eval::report::tests::results;

    fn report(spec: &[(&str, Category, &str)]) -> Report {
        Report::build("mock", &results(spec), &Policy::default(), Duration::ZERO)
    }

    #[test]
    fn a_saved_baseline_shows_regressions_case_by_case() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baseline.json");
        let before = report(&[
            ("h1", Category::Happy, "PP"),
            ("h2", Category::Happy, "PF"),
            ("e1", Category::Edge, "FF"),
            ("t1", Category::Trap, "PP"),
            ("old", Category::Trap, "PP"),
        ]);
        Baseline::of(&before).save(&path).unwrap();
        let baseline = Baseline::load(&path).unwrap();
        assert_eq!(baseline.cases["h2"].passed, 1);

        let now = report(&[
            ("h1", Category::Happy, "PF"),
            ("h2", Category::Happy, "FF"),
            ("e1", Category::Edge, "PP"),
            ("t1", Category::Trap, "PP"),
            ("fresh", Category::Trap, "PP"),
        ]);
        let changes = baseline.compare(&now);
        let kind = |id: &str| changes.iter().find(|c| c.id == id).map(|c| c.kind);
        assert_eq!(kind("h1"), Some(ChangeKind::Regression));
        assert_eq!(kind("h2"), Some(ChangeKind::Regression));
        assert_eq!(kind("e1"), Some(ChangeKind::Improvement));
        assert_eq!(kind("t1"), None);
        assert_eq!(kind("fresh"), Some(ChangeKind::New));
        assert_eq!(kind("old"), Some(ChangeKind::Gone));
        assert_eq!(changes[0].kind, ChangeKind::Regression);
        let text = render_changes(&changes, "baseline.json");
        assert!(
            text.contains("h1     REGRESSION   pass (2/2)   flaky (1/2)"),
            "{text}"
        );
        assert_eq!(
            render_changes(&baseline.compare(&before), "b"),
            "No case changed against b.\n"
        );
    }

    #[test]
    fn a_damaged_baseline_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        std::fs::write(&path, "{\"cases\": 1}").unwrap();
        let e = Baseline::load(&path).unwrap_err();
        assert!(e.to_string().contains("--save-baseline"), "{e}");
        assert!(Baseline::load(&dir.path().join("none")).is_err());
    }
}
