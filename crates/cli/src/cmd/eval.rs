//! `switchboard eval [FILES…]`: measures tool selection on the governed
//! tool list (see `switchboard_agent::eval`). Prints the report per
//! category, writes JUnit and baselines, compares with the approved pins,
//! or tests the cases themselves. Exit 1 when a category is below its
//! threshold, a case regressed, or a case is broken.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use switchboard_agent::eval::{
    AssertionCheck, Baseline, Case, ChangeKind, EvalTools, KeywordSelector, PinComparison,
    PinnedViews, Report, check_assertions, junit, load, render_changes, run_cases,
};
use switchboard_agent::{Model, ModelSettings, ProcessEnv, model_from_spec_with};
use switchboard_host::ModelConfig;
use switchboard_host::Pins;
use switchboard_host::{Host, MountOptions};

use crate::exit::Failure;
use crate::flags::SearchMode;
use crate::out;
use crate::session::Session;
use crate::settings::{EvalSettings, EvalSubject, Settings};

/// Runs `switchboard eval`.
///
/// # Errors
/// A usage [`Failure`] for bad case files, an unusable model spec or
/// files that cannot be written, and when the run fails its gate.
pub(crate) async fn run(settings: &Settings, eval: &EvalSettings) -> anyhow::Result<()> {
    let cases = load(&eval.files).map_err(|e| Failure::usage(e.to_string()))?;
    let loaded = settings.load_config()?;
    let model: Option<Arc<dyn Model>> = match &eval.subject {
        EvalSubject::Model(spec) => Some(model(spec.as_deref(), loaded.config.model.as_ref())?),
        EvalSubject::Selector(s) => Some(Arc::new(s.clone())),
        EvalSubject::Assertions => None,
    };
    let session = Session::mount(loaded, MountOptions::default()).await?;
    let result = on_host(&session.host, &cases, model, eval, settings.json).await;
    session.close().await;
    result
}

/// `--model SPEC`, else the config's `model`; `mock` is the keyword
/// selector (a stand-in for offline runs, not `chat`'s fixed mock
/// conversation).
pub(crate) fn model(
    spec: Option<&str>,
    config: Option<&ModelConfig>,
) -> Result<Arc<dyn Model>, Failure> {
    let (spec, model_settings) = match (spec, config) {
        (Some(spec), _) => (spec.trim().to_owned(), ModelSettings::default()),
        (None, Some(m)) => (
            m.name.clone(),
            ModelSettings {
                base_url: m.base_url.clone(),
            },
        ),
        (None, None) => {
            return Err(Failure::usage(
                "eval needs a model: --model PROVIDER:MODEL (anthropic:…, openai:…, script:FILE), \
                 \"model\" in the config, --model mock (an offline keyword selector), \
                 --selector always:TOOL|never, or --check-assertions",
            ));
        }
    };
    if spec == "mock" {
        return Ok(Arc::new(KeywordSelector));
    }
    model_from_spec_with(&spec, &model_settings, &ProcessEnv)
        .map_err(|e| Failure::usage(e.to_string()))
}

async fn on_host(
    host: &Host,
    cases: &[Case],
    model: Option<Arc<dyn Model>>,
    eval: &EvalSettings,
    json: bool,
) -> anyhow::Result<()> {
    let tools = EvalTools::from_host(host);
    if let Some(outages) = host.outage_text() {
        out::note(outages);
    }
    let Some(model) = model else {
        let checks = check_assertions(cases, &tools, eval.options.concurrency).await;
        return assertions(&checks, json);
    };
    if eval.against_pins {
        let Some(path) = host.config().lockfile else {
            return Err(Failure::usage(
                "--against-pins compares with the definitions approved in switchboard.lock, and this config has no lockfile (the built-in demo keeps none)",
            )
            .into());
        };
        let pins = Pins::open(&path).map_err(|e| Failure::usage(e.to_string()))?;
        let views = PinnedViews::new(host, &pins);
        if views.changed.is_empty() {
            out::note(format!(
                "No tool differs from its approved definition in {}: one run with the tools as they are.",
                path.display()
            ));
        } else {
            return against_pins(model, cases, &views, eval, json).await;
        }
    }
    if let Some(mode) = eval.tool_search {
        return tool_search(host, model, cases, mode, eval, json).await;
    }
    let started = Instant::now();
    let results = run_cases(model.clone(), cases, &tools, &eval.options).await;
    let report = Report::build(&model.name(), &results, &eval.policy, started.elapsed());
    finish(&report, eval, json)
}

/// `--tool-search on|off|both`: the set with the table deferred, whole, or
/// both (each report says the tokens of tool definitions sent per case).
async fn tool_search(
    host: &Host,
    model: Arc<dyn Model>,
    cases: &[Case],
    mode: SearchMode,
    eval: &EvalSettings,
    json: bool,
) -> anyhow::Result<()> {
    let modes: &[(&str, bool)] = match mode {
        SearchMode::On => &[("on", true)],
        SearchMode::Off => &[("off", false)],
        SearchMode::Both => &[("off", false), ("on", true)],
    };
    let mut reports = Vec::new();
    for (label, deferred) in modes {
        let tools = if *deferred {
            EvalTools::deferred(host)
        } else {
            EvalTools::from_host(host)
        };
        let started = Instant::now();
        let results = run_cases(model.clone(), cases, &tools, &eval.options).await;
        let name = format!("{} (tool search {label})", model.name());
        reports.push((
            *label,
            Report::build(&name, &results, &eval.policy, started.elapsed()),
        ));
    }
    if json {
        let by_mode: serde_json::Map<String, serde_json::Value> = reports
            .iter()
            .map(|(label, r)| ((*label).to_owned(), json!(r)))
            .collect();
        out::json(&json!({"toolSearch": by_mode}))?;
    } else {
        for (i, (_, report)) in reports.iter().enumerate() {
            if i > 0 {
                out::line("")?;
            }
            out::line(report.render().trim_end())?;
        }
    }
    // Each mode is held to the thresholds.
    for (_, report) in &reports {
        gate(report, 0)?;
    }
    Ok(())
}

/// Prints the report, writes the files, and applies the gate.
fn finish(report: &Report, eval: &EvalSettings, json: bool) -> anyhow::Result<()> {
    if let Some(path) = &eval.junit {
        std::fs::write(path, junit(report)).map_err(|e| {
            Failure::usage(format!(
                "cannot write the JUnit file {}: {e}",
                path.display()
            ))
        })?;
    }
    if let Some(path) = &eval.save_baseline {
        Baseline::of(report)
            .save(path)
            .map_err(|e| Failure::usage(e.to_string()))?;
    }
    let changes = match &eval.baseline {
        Some(path) => {
            let baseline = Baseline::load(path).map_err(|e| Failure::usage(e.to_string()))?;
            Some((path, baseline.compare(report)))
        }
        None => None,
    };
    let whole = json!({
        "report": report,
        "baseline": changes.as_ref().map(|(path, c)| json!({
            "file": path.display().to_string(),
            "changes": c,
        })),
    });
    if let Some(path) = &eval.save_report {
        let text = serde_json::to_string_pretty(&whole)?;
        std::fs::write(path, text + "\n").map_err(|e| {
            Failure::usage(format!(
                "cannot write the report file {}: {e}",
                path.display()
            ))
        })?;
    }
    if json {
        out::json(&whole)?;
    } else {
        out::line(report.render().trim_end())?;
        if let Some((path, c)) = &changes {
            out::line("")?;
            out::line(render_changes(c, &path.display().to_string()).trim_end())?;
        }
    }
    let regressions = changes.as_ref().map_or(0, |(_, c)| {
        c.iter()
            .filter(|c| c.kind == ChangeKind::Regression)
            .count()
    });
    gate(report, regressions)
}

/// Exit 1 unless every category is at or above its threshold and no case
/// regressed.
fn gate(report: &Report, regressions: usize) -> anyhow::Result<()> {
    let below: Vec<String> = report
        .categories
        .iter()
        .filter(|c| !c.ok)
        .map(|c| {
            format!(
                "{} {:.1}% < {:.1}%",
                c.category,
                c.rate.unwrap_or(0.0) * 100.0,
                c.min * 100.0
            )
        })
        .collect();
    let mut why = Vec::new();
    if !below.is_empty() {
        why.push(format!("below the threshold: {}", below.join(", ")));
    }
    if regressions > 0 {
        why.push(format!(
            "{regressions} case(s) regressed against the baseline"
        ));
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(Failure::usage(format!("eval failed: {}", why.join("; "))).into())
    }
}

async fn against_pins(
    model: Arc<dyn Model>,
    cases: &[Case],
    views: &PinnedViews,
    eval: &EvalSettings,
    json: bool,
) -> anyhow::Result<()> {
    let comparison = PinComparison::run(model, cases, views, &eval.options, &eval.policy).await;
    if let Some(path) = &eval.junit {
        std::fs::write(path, junit(&comparison.now)).map_err(|e| {
            Failure::usage(format!(
                "cannot write the JUnit file {}: {e}",
                path.display()
            ))
        })?;
    }
    if json {
        out::json(&comparison)?;
    } else {
        out::line(comparison.render().trim_end())?;
    }
    if !comparison.broken.is_empty() {
        let ids: Vec<&str> = comparison.broken.iter().map(|c| c.id.as_str()).collect();
        return Err(Failure::usage(format!(
            "the changed definitions break {} case(s): {}",
            ids.len(),
            ids.join(", ")
        ))
        .into());
    }
    gate(&comparison.now, 0)
}

fn assertions(checks: &[AssertionCheck], json: bool) -> anyhow::Result<()> {
    let broken = checks.iter().filter(|c| !c.broken.is_empty()).count();
    if json {
        out::json(&json!({"cases": checks, "broken": broken}))?;
    } else {
        for c in checks {
            if c.broken.is_empty() {
                out::line(format!("ok      {} ({})", c.id, c.category))?;
            } else {
                out::line(format!(
                    "BROKEN  {} ({}): {}",
                    c.id,
                    c.category,
                    c.broken.join("; ")
                ))?;
            }
            for n in &c.notes {
                out::line(format!("        note: {n}"))?;
            }
        }
        out::line(format!(
            "{} case(s) checked under never and always:TOOL for every tool; {broken} broken",
            checks.len()
        ))?;
    }
    if broken > 0 {
        return Err(Failure::usage(format!(
            "{broken} case(s) cannot fail: fix their expectations (a case that passes under a wrong selector measures nothing)"
        ))
        .into());
    }
    Ok(())
}
