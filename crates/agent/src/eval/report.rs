//! The report of an eval run: pass rates per category (never one number
//! alone), the weighted score, every failure with what was expected and
//! what the model did, and the flakiness of each case over repeats.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::case::{Case, Category};
use super::matcher::MatchVerdict;

/// Thresholds and weights per category.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The lowest pass rate each category may have (0 to 1).
    pub min: BTreeMap<Category, f64>,
    /// The weight of each category in the overall score.
    pub weights: BTreeMap<Category, f64>,
}

impl Default for Policy {
    /// `--min happy=0.9,edge=0.8,trap=0.9`, weights 4/3/3.
    fn default() -> Policy {
        Policy {
            min: [
                (Category::Happy, 0.9),
                (Category::Edge, 0.8),
                (Category::Trap, 0.9),
            ]
            .into(),
            weights: [
                (Category::Happy, 4.0),
                (Category::Edge, 3.0),
                (Category::Trap, 3.0),
            ]
            .into(),
        }
    }
}

/// Reads `happy=0.9,edge=0.8` into per-category numbers, over `defaults`.
/// With `unit`, each number must lie in 0..=1 (a threshold); otherwise it
/// must be at least 0 (a weight).
///
/// # Errors
/// A message naming the bad part and the right form.
pub fn parse_per_category(
    text: &str,
    defaults: &BTreeMap<Category, f64>,
    unit: bool,
) -> Result<BTreeMap<Category, f64>, String> {
    let mut out = defaults.clone();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = part.split_once('=') else {
            return Err(format!(
                "{part:?}: write CATEGORY=NUMBER, e.g. happy=0.9,edge=0.8,trap=0.9"
            ));
        };
        let Some(category) = Category::parse(name.trim()) else {
            return Err(format!("{part:?}: the categories are happy, edge and trap"));
        };
        let number: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("{part:?}: {value:?} is not a number"))?;
        if !number.is_finite() || number < 0.0 || (unit && number > 1.0) {
            return Err(if unit {
                format!("{part:?}: a pass rate is between 0 and 1 (0.9 means 90%)")
            } else {
                format!("{part:?}: a weight is a number of at least 0")
            });
        }
        out.insert(category, number);
    }
    Ok(out)
}

/// One run of one case, as the runner recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// The verdict.
    #[serde(flatten)]
    pub verdict: MatchVerdict,
    /// What the model did, in a few words.
    pub got: String,
    /// Wall time of the run, provider retries included.
    #[serde(rename = "durationMs", serialize_with = "millis")]
    pub duration: Duration,
    /// Estimated tokens of the tool definitions sent in the run.
    #[serde(rename = "toolTokens")]
    pub tool_tokens: u64,
}

/// Every run of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRuns {
    /// The case.
    pub case: Case,
    /// Its runs, in order.
    pub runs: Vec<RunRecord>,
}

/// A category's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryScore {
    /// The category.
    pub category: Category,
    /// Cases in it.
    pub cases: usize,
    /// Runs (cases × repeats).
    pub runs: usize,
    /// Runs that passed.
    pub passed: usize,
    /// Runs that failed because the provider did.
    pub errors: usize,
    /// `passed / runs` (`None` without cases).
    pub rate: Option<f64>,
    /// The threshold.
    pub min: f64,
    /// The weight in the score.
    pub weight: f64,
    /// Whether the rate is at or above the threshold (true without cases).
    pub ok: bool,
}

/// A case's results over its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseResult {
    /// The case's id.
    pub id: String,
    /// Its file.
    pub file: String,
    /// Its category.
    pub category: Category,
    /// What it expects, in words.
    pub expected: String,
    /// Runs that passed.
    pub passed: usize,
    /// Runs.
    pub runs: usize,
    /// Passed some runs and failed others.
    pub flaky: bool,
    /// Each run.
    pub outcomes: Vec<RunRecord>,
}

/// One failed run, for the failure table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureRow {
    /// The case's id.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// Which run (1-based).
    pub run: usize,
    /// What the case expects.
    pub expected: String,
    /// What the model did.
    pub got: String,
    /// Why that fails.
    pub why: String,
}

/// The report of one run of an eval set.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The model (or selector) measured, e.g. `openai:gpt-4.1-mini`.
    pub model: String,
    /// Runs per case.
    pub repeat: usize,
    /// Wall time of the whole run.
    #[serde(rename = "durationMs", serialize_with = "millis")]
    pub duration: Duration,
    /// One entry per category, happy, edge, trap.
    pub categories: Vec<CategoryScore>,
    /// The weighted mean of the categories' pass rates (those with cases).
    pub score: Option<f64>,
    /// Every category at or above its threshold.
    pub ok: bool,
    /// Every case.
    pub cases: Vec<CaseResult>,
    /// Every failed run.
    pub failures: Vec<FailureRow>,
    /// Mean estimated tokens of the tool definitions sent per run (every
    /// request of the run added up).
    pub tool_tokens_per_case: f64,
}

impl Report {
    /// Builds the report of `results` under `policy`.
    pub fn build(model: &str, results: &[CaseRuns], policy: &Policy, duration: Duration) -> Report {
        let repeat = results.iter().map(|r| r.runs.len()).max().unwrap_or(0);
        let mut categories = Vec::new();
        for category in Category::ALL {
            let of: Vec<&CaseRuns> = results
                .iter()
                .filter(|r| r.case.category == category)
                .collect();
            let runs: usize = of.iter().map(|r| r.runs.len()).sum();
            let passed = of
                .iter()
                .flat_map(|r| &r.runs)
                .filter(|r| r.verdict.pass)
                .count();
            let errors = of
                .iter()
                .flat_map(|r| &r.runs)
                .filter(|r| r.verdict.error)
                .count();
            let rate = (runs > 0).then(|| passed as f64 / runs as f64);
            let min = policy.min.get(&category).copied().unwrap_or(0.0);
            categories.push(CategoryScore {
                category,
                cases: of.len(),
                runs,
                passed,
                errors,
                rate,
                min,
                weight: policy.weights.get(&category).copied().unwrap_or(0.0),
                // A rounding hair below the threshold is not a failure.
                ok: rate.is_none_or(|r| r + 1e-9 >= min),
            });
        }
        let weighted: Vec<(f64, f64)> = categories
            .iter()
            .filter_map(|c| c.rate.map(|r| (r, c.weight)))
            .collect();
        let total_weight: f64 = weighted.iter().map(|(_, w)| w).sum();
        let score = (total_weight > 0.0)
            .then(|| weighted.iter().map(|(r, w)| r * w).sum::<f64>() / total_weight);
        let mut cases = Vec::new();
        let mut failures = Vec::new();
        for r in results {
            let expected = r.case.expect.to_string();
            let passed = r.runs.iter().filter(|x| x.verdict.pass).count();
            for (i, run) in r.runs.iter().enumerate() {
                if !run.verdict.pass {
                    failures.push(FailureRow {
                        id: r.case.id.clone(),
                        category: r.case.category,
                        run: i + 1,
                        expected: expected.clone(),
                        got: run.got.clone(),
                        why: run.verdict.why.clone().unwrap_or_default(),
                    });
                }
            }
            cases.push(CaseResult {
                id: r.case.id.clone(),
                file: r.case.file.display().to_string(),
                category: r.case.category,
                expected,
                passed,
                runs: r.runs.len(),
                flaky: passed > 0 && passed < r.runs.len(),
                outcomes: r.runs.clone(),
            });
        }
        let all_runs: Vec<&RunRecord> = results.iter().flat_map(|r| &r.runs).collect();
        let tool_tokens_per_case = if all_runs.is_empty() {
            0.0
        } else {
            all_runs.iter().map(|r| r.tool_tokens as f64).sum::<f64>() / all_runs.len() as f64
        };
        Report {
            model: model.to_owned(),
            repeat,
            duration,
            tool_tokens_per_case,
            ok: categories.iter().all(|c| c.ok),
            categories,
            score,
            cases,
            failures,
        }
    }

    /// The score of `category`.
    pub fn category(&self, category: Category) -> Option<&CategoryScore> {
        self.categories.iter().find(|c| c.category == category)
    }

    /// The report as people read it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let cases = self.cases.len();
        let _ = writeln!(
            out,
            "{}: {cases} case(s) × {} run(s) in {:.1} s",
            self.model,
            self.repeat,
            self.duration.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "tool definitions sent: about {:.0} tokens per case",
            self.tool_tokens_per_case
        );
        let mut rows = vec![
            ["CATEGORY", "CASES", "PASSED", "RATE", "MIN", "WEIGHT", ""]
                .map(str::to_owned)
                .to_vec(),
        ];
        for c in &self.categories {
            rows.push(vec![
                c.category.to_string(),
                c.cases.to_string(),
                format!("{}/{}", c.passed, c.runs),
                c.rate.map_or_else(|| "-".into(), percent),
                percent(c.min),
                format!("{}", c.weight),
                match (c.rate, c.ok) {
                    (None, _) => "no cases".into(),
                    (Some(_), true) => "ok".into(),
                    (Some(_), false) => "BELOW MIN".into(),
                },
            ]);
        }
        for line in columns(&rows) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "score (weighted): {}",
            self.score.map_or_else(|| "-".into(), percent)
        );
        if !self.failures.is_empty() {
            let _ = writeln!(out, "\nFailures:");
            let mut rows = vec![
                ["CASE", "CATEGORY", "EXPECTED", "GOT", "WHY"]
                    .map(str::to_owned)
                    .to_vec(),
            ];
            for f in &self.failures {
                let id = if self.repeat > 1 {
                    format!("{} (run {})", f.id, f.run)
                } else {
                    f.id.clone()
                };
                rows.push(vec![
                    id,
                    f.category.to_string(),
                    clip(&f.expected, 60),
                    clip(&f.got, 60),
                    f.why.clone(),
                ]);
            }
            for line in columns(&rows) {
                let _ = writeln!(out, "{line}");
            }
        }
        if self.repeat > 1 {
            let flaky: Vec<&CaseResult> = self.cases.iter().filter(|c| c.flaky).collect();
            if flaky.is_empty() {
                let _ = writeln!(out, "\nNo flaky case over {} runs.", self.repeat);
            } else {
                let _ = writeln!(out, "\nFlaky cases (passed some runs, failed others):");
                for c in flaky {
                    let _ = writeln!(
                        out,
                        "  {} ({}): passed {} of {}",
                        c.id, c.category, c.passed, c.runs
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "\n{}",
            if self.ok {
                "Every category is at or above its threshold."
            } else {
                "Some category is below its threshold."
            }
        );
        out
    }
}

/// `0.9` as `90.0%`.
pub(crate) fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// At most `max` characters, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Lays out rows as left-aligned columns two spaces apart (the last
/// column is not padded, trailing blanks trimmed); the CLI's tables use it
/// too.
pub fn columns(rows: &[Vec<String>]) -> Vec<String> {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; n];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i + 1 < row.len() {
                    let pad = widths[i] - cell.chars().count() + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_owned()
        })
        .collect()
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;
    use crate::eval::case::parse;
    use serde_json::json;

    /// Cases `h1..hN`, `e1..`, `t1..` with runs passing as `pattern` says
    /// (`"PF"`: run 1 passed, run 2 failed).
    pub(crate) fn results(spec: &[(&str, Category, &str)]) -> Vec<CaseRuns> {
        spec.iter()
            .map(|(id, category, pattern)| {
                let expect = if *category == Category::Trap {
                    json!({"noTool": true})
                } else {
                    json!({"tool": "mcp__notes__search"})
                };
                let text = json!({"cases": [{"id": id, "category": category, "utterance": "u", "expect": expect}]});
                let case = parse(Path::new("demo.json"), &text.to_string())
                    .unwrap()
                    .remove(0);
                let runs = pattern
                    .chars()
                    .map(|p| RunRecord {
                        verdict: MatchVerdict {
                            pass: p == 'P',
                            why: (p != 'P').then(|| "called no tool".to_owned()),
                            error: p == 'E',
                        },
                        got: if p == 'P' { "ok" } else { "no tool" }.into(),
                        duration: Duration::from_millis(5),
                        tool_tokens: 0,
                    })
                    .collect();
                CaseRuns { case, runs }
            })
            .collect()
    }

    #[test]
    fn per_category_rates_weighted_score_and_thresholds() {
        let r = results(&[
            ("h1", Category::Happy, "P"),
            ("h2", Category::Happy, "P"),
            ("h3", Category::Happy, "P"),
            ("h4", Category::Happy, "F"),
            ("e1", Category::Edge, "P"),
            ("e2", Category::Edge, "E"),
            ("t1", Category::Trap, "P"),
        ]);
        let report = Report::build("mock", &r, &Policy::default(), Duration::from_millis(40));
        let happy = report.category(Category::Happy).unwrap();
        assert_eq!((happy.passed, happy.runs), (3, 4));
        assert_eq!(happy.rate, Some(0.75));
        assert!(!happy.ok);
        let edge = report.category(Category::Edge).unwrap();
        assert_eq!((edge.passed, edge.errors), (1, 1));
        assert!(report.category(Category::Trap).unwrap().ok);
        // (4·0.75 + 3·0.5 + 3·1) / 10
        assert!((report.score.unwrap() - 0.75).abs() < 1e-9);
        assert!(!report.ok);
        assert_eq!(report.failures.len(), 2);
        let text = report.render();
        assert!(
            text.contains("happy     4      3/4     75.0%   90.0%  4       BELOW MIN"),
            "{text}"
        );
        assert!(
            text.contains("h4    happy     mcp__notes__search  no tool  called no tool"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["categories"][0]["rate"], 0.75);
        assert_eq!(json["cases"][0]["outcomes"][0]["pass"], true);
        assert_eq!(json["durationMs"], 40);
    }

    #[test]
    fn flakiness_over_repeats() {
        let r = results(&[
            ("h1", Category::Happy, "PFP"),
            ("t1", Category::Trap, "PPP"),
        ]);
        let report = Report::build("m", &r, &Policy::default(), Duration::ZERO);
        assert_eq!(report.repeat, 3);
        assert!(report.cases[0].flaky);
        assert!(!report.cases[1].flaky);
        let text = report.render();
        assert!(text.contains("h1 (happy): passed 2 of 3"), "{text}");
        assert!(text.contains("h1 (run 2)"), "{text}");
        // No edge cases: reported, not failed.
        assert!(text.contains("no cases"), "{text}");
        assert_eq!(report.category(Category::Edge).unwrap().rate, None);
    }

    #[test]
    fn thresholds_and_weights_parse() {
        let d = Policy::default();
        let min = parse_per_category("happy=1, trap=0.5", &d.min, true).unwrap();
        assert_eq!(min[&Category::Happy], 1.0);
        assert_eq!(min[&Category::Edge], 0.8);
        assert_eq!(min[&Category::Trap], 0.5);
        assert!(
            parse_per_category("happy=90", &d.min, true)
                .unwrap_err()
                .contains("between 0 and 1")
        );
        assert!(
            parse_per_category("happy", &d.min, true)
                .unwrap_err()
                .contains("CATEGORY=NUMBER")
        );
        assert!(
            parse_per_category("sad=1", &d.min, true)
                .unwrap_err()
                .contains("happy, edge and trap")
        );
        assert!(
            parse_per_category("edge=x", &d.weights, false)
                .unwrap_err()
                .contains("not a number")
        );
        let w = parse_per_category("edge=10", &d.weights, false).unwrap();
        assert_eq!(w[&Category::Edge], 10.0);
        assert!(parse_per_category("edge=-1", &d.weights, false).is_err());
    }
}
