//! Evals of tool **selection**: given a user's utterance and the governed
//! tool list, does the model call the right tool with the right arguments,
//! or, for a trap, nothing at all?
//!
//! A tool's description is part of its interface: a changed sentence can
//! make a model stop choosing a tool, or choose it when it should not.
//! Evals run on the same [`Model`](crate::Model) implementations and the
//! same tool table (`Host::tools()`, provenance-marked) and system prompt
//! that `switchboard chat` uses. Tools are never executed: the model's
//! first turn is recorded and judged (with `--follow`, calls get canned
//! results for multi-step cases).
//!
//! # Layout
//! - `case`: case files (`evals/*.json`, `evals/schema.json`), read and
//!   checked with every problem reported at once.
//! - `matcher`: a run judged against its case (tool by namespaced name or
//!   alias and original name; arguments exact, subset or per-field
//!   `equals`/`regex`/`present`/`absent`; `noTool`; `mustNotCall`).
//! - `runner`: the tool lists ([`EvalTools`], [`PinnedViews`] for
//!   `--against-pins`), a bounded pool of concurrent runs, retries.
//! - `report`: pass rates per category with thresholds and weights, the
//!   weighted score, failures, flakiness over repeats.
//! - `junit`: the report as JUnit XML.
//! - `baseline`: saved runs and regressions case by case.
//! - `selector`: stand-ins for a model: the offline keyword selector and
//!   the deliberately wrong `always:TOOL` / `never` selectors that
//!   [`check_assertions`] uses to find cases that cannot fail.

mod baseline;
mod case;
mod junit;
mod matcher;
mod report;
mod runner;
mod selector;

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::Model;

pub use baseline::{
    Baseline, BaselineCase, BaselineError, Change, ChangeKind, Status, render_changes,
};
pub use case::{
    ArgMatch, Case, CaseError, Category, Expect, FieldMatch, FollowStep, Speaker, ToolRef, Turn,
    load, parse,
};
pub use junit::render as junit;
pub use matcher::{Call, Catalog, CatalogEntry, MatchVerdict, Observation, judge, match_arguments};
pub use report::{
    CaseResult, CaseRuns, CategoryScore, FailureRow, Policy, Report, RunRecord, columns,
    parse_per_category,
};
pub use runner::{EvalSearch, EvalTools, NOT_RUN, PinnedViews, RunOptions, run_cases};
pub use selector::{DECOY, DECOY_NUMBER, KeywordSelector, WrongSelector, decoys, select};

/// What [`check_assertions`] found about one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssertionCheck {
    /// The case's id.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// Why it is broken: each wrong selector it still passes under (or
    /// why it can never pass). Empty: the case can fail.
    pub broken: Vec<String>,
    /// Things worth knowing that do not break it.
    pub notes: Vec<String>,
}

/// Tests the assertions themselves: runs every case under `never` and
/// under `always:TOOL` for every tool of the list (with decoy arguments).
/// A case expecting a tool must fail under `never` and under every
/// `always:` (its own tool included, unless that tool takes no
/// arguments); a trap must fail under every `always:`. A case that still
/// passes cannot fail in that direction: it is reported as broken.
pub async fn check_assertions(
    cases: &[Case],
    tools: &EvalTools,
    concurrency: usize,
) -> Vec<AssertionCheck> {
    let options = RunOptions {
        concurrency,
        retries: 0,
        ..RunOptions::default()
    };
    let mut selectors = vec![WrongSelector::Never];
    selectors.extend(
        tools
            .specs
            .iter()
            .map(|t| WrongSelector::Always(t.name.clone())),
    );
    let mut checks: Vec<AssertionCheck> = cases
        .iter()
        .map(|c| AssertionCheck {
            id: c.id.clone(),
            category: c.category,
            broken: Vec::new(),
            notes: Vec::new(),
        })
        .collect();
    for (case, check) in cases.iter().zip(&mut checks) {
        if let Expect::Tool { tool, .. } = &case.expect {
            if tools.catalog.resolve(tool).is_none() {
                check.broken.push(format!(
                    "its expected tool {tool} is not in the tool list, so it can never pass"
                ));
            }
        }
    }
    for selector in selectors {
        let name = selector.name_for_report();
        let results = run_cases(Arc::new(selector.clone()), cases, tools, &options).await;
        for ((case, result), check) in cases.iter().zip(results).zip(&mut checks) {
            let passed = result.runs.iter().any(|r| r.verdict.pass);
            match (&case.expect, &selector) {
                // A trap passing under `never` is right.
                (Expect::NoTool, WrongSelector::Never) => {}
                (Expect::Tool { tool, .. }, WrongSelector::Always(always)) if passed => {
                    let own = tools.catalog.resolve(tool).map(|e| e.name.as_str());
                    let takes_arguments = tools
                        .specs
                        .iter()
                        .find(|s| &s.name == always)
                        .and_then(|s| s.input_schema.get("properties"))
                        .and_then(|p| p.as_object())
                        .is_some_and(|p| !p.is_empty());
                    if own == Some(always.as_str()) && !takes_arguments {
                        check.notes.push(format!(
                            "{always} takes no arguments: only the choice of tool is checked"
                        ));
                    } else if own == Some(always.as_str()) {
                        check.broken.push(format!(
                            "passes under {name} with decoy arguments: its argument match accepts anything"
                        ));
                    } else {
                        check.broken.push(format!("passes under {name}"));
                    }
                }
                _ if passed => check.broken.push(format!("passes under {name}")),
                _ => {}
            }
        }
    }
    checks
}

impl WrongSelector {
    fn name_for_report(&self) -> String {
        match self {
            WrongSelector::Always(t) => format!("always:{t}"),
            WrongSelector::Never => "never".into(),
        }
    }
}

/// `--against-pins`: the same set run with the approved tool definitions
/// and with what the servers serve now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PinComparison {
    /// Tools whose definition changed since approval.
    pub changed_tools: Vec<String>,
    /// Changed tools without a recorded approved definition.
    pub unrecorded_tools: Vec<String>,
    /// The run with the approved definitions.
    pub approved: Report,
    /// The run with the current definitions.
    pub now: Report,
    /// Cases that did worse now (regressions of `now` against `approved`).
    pub broken: Vec<Change>,
    /// Every case whose status differs.
    pub changes: Vec<Change>,
}

impl PinComparison {
    /// Compares the two reports of `views`.
    pub fn new(views: &PinnedViews, approved: Report, now: Report) -> PinComparison {
        let changes = Baseline::of(&approved).compare(&now);
        let broken = changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Regression)
            .cloned()
            .collect();
        PinComparison {
            changed_tools: views.changed.clone(),
            unrecorded_tools: views.unrecorded.clone(),
            approved,
            now,
            broken,
            changes,
        }
    }

    /// Runs `cases` with both lists of `views` and compares the reports.
    pub async fn run(
        model: Arc<dyn Model>,
        cases: &[Case],
        views: &PinnedViews,
        options: &RunOptions,
        policy: &Policy,
    ) -> PinComparison {
        let started = Instant::now();
        let approved = run_cases(model.clone(), cases, &views.approved, options).await;
        let approved = Report::build(&model.name(), &approved, policy, started.elapsed());
        let started = Instant::now();
        let now = run_cases(model.clone(), cases, &views.now, options).await;
        let now = Report::build(&model.name(), &now, policy, started.elapsed());
        PinComparison::new(views, approved, now)
    }

    /// The comparison as people read it.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Tools changed since approval: {}\n",
            self.changed_tools.join(", ")
        );
        if !self.unrecorded_tools.is_empty() {
            out.push_str(&format!(
                "No approved definition recorded (hash only) for: {}; they look the same in both runs\n",
                self.unrecorded_tools.join(", ")
            ));
        }
        out.push_str("\n== With the approved definitions\n");
        out.push_str(&self.approved.render());
        out.push_str("\n== With the definitions served now\n");
        out.push_str(&self.now.render());
        out.push('\n');
        out.push_str(&render_changes(&self.changes, "the approved definitions"));
        if self.broken.is_empty() {
            out.push_str("No case got worse with the new definitions.\n");
        } else {
            out.push_str(&format!(
                "{} case(s) got worse with the new definitions: review the change before `switchboard pins accept`.\n",
                self.broken.len()
            ));
        }
        out
    }
}
