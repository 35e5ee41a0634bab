//! `switchboard pins list|accept`: the lockfile of approved tool, prompt
//! and resource template definitions.

use serde_json::json;
use switchboard_agent::eval::{PinComparison, PinnedViews, Policy, RunOptions, load};
use switchboard_host::Config;
use switchboard_host::Pins;
use switchboard_host::{EvalsConfig, Host, Pattern, PinState};

use crate::exit::Failure;
use crate::out;

/// Lists every tool's, prompt's and resource template's pin; a changed one
/// with its diff.
///
/// # Errors
/// When stdout is closed.
pub(crate) fn list(host: &Host, json: bool) -> anyhow::Result<()> {
    let pins = host.pins();
    let lockfile = host.config().lockfile.map(|p| p.display().to_string());
    if json {
        let items: Vec<_> = pins
            .iter()
            .map(|p| {
                json!({
                    "kind": p.kind,
                    "name": p.name,
                    "server": p.server,
                    "originalName": p.original_name,
                    "state": p.state.as_str(),
                    "change": p.change.as_ref().map(|c| json!({
                        "class": c.as_str(),
                        "reasons": c.reasons,
                    })),
                    "diff": match &p.state {
                        PinState::Changed { diff } => Some(diff.as_str()),
                        _ => None,
                    },
                })
            })
            .collect();
        out::json(&items)?;
        return Ok(());
    }
    match &lockfile {
        Some(path) => out::line(format!("lockfile: {path}"))?,
        None => out::line("lockfile: none (the built-in demo keeps pins in memory)")?,
    }
    let mut rows = vec![vec![
        "NAME".to_owned(),
        "KIND".into(),
        "SERVER".into(),
        "PIN".into(),
        "CHANGE".into(),
    ]];
    for p in &pins {
        rows.push(vec![
            p.name.clone(),
            p.kind.to_owned(),
            p.server.clone(),
            p.state.as_str().to_owned(),
            p.change
                .as_ref()
                .map_or_else(String::new, |c| c.as_str().to_owned()),
        ]);
    }
    for line in out::table(&rows) {
        out::line(line)?;
    }
    let new: Vec<&str> = pins
        .iter()
        .filter(|p| p.state == PinState::New)
        .map(|p| p.name.as_str())
        .collect();
    if !new.is_empty() {
        out::line(format!(
            "\nnew since the server was first mounted, not offered to the model under \"newTools\": \"ask\" \
             until accepted (`switchboard pins accept NAME`): {}",
            new.join(", ")
        ))?;
    }
    for p in &pins {
        if p.state == PinState::Removed {
            out::line(format!(
                "\n{} was approved but its server no longer serves it (a breaking change).",
                p.name
            ))?;
        }
        if let PinState::Changed { diff } = &p.state {
            let class = p
                .change
                .as_ref()
                .map(|c| format!(" — {}: {}", c.as_str(), c.reasons.join(", ")))
                .unwrap_or_default();
            out::line(format!(
                "\n{} changed since it was approved{class} (accept with `switchboard pins accept {}`):",
                p.name, p.name
            ))?;
            for l in diff.lines() {
                out::line(format!("  {l}"))?;
            }
        }
    }
    Ok(())
}

/// Accepts the current definition of a tool or of a server's tools. With
/// `evals` in the config, the changed tools among them are first run
/// through the case files with the approved and with the new definitions
/// (`eval --against-pins`), and a regression refuses the accept unless
/// `force`.
///
/// # Errors
/// A usage [`Failure`] when nothing matches, the lockfile cannot be
/// written, or the eval gate refuses.
pub(crate) async fn accept(
    host: &Host,
    target: &str,
    force: bool,
    json: bool,
) -> anyhow::Result<()> {
    let config = host.config();
    if let Some(evals) = &config.evals {
        match eval_gate(host, target, evals, &config).await {
            Ok(()) => {}
            Err(refused) if force => out::warning(format!("{refused}\naccepting anyway (--force)")),
            Err(refused) => return Err(Failure::usage(refused).into()),
        }
    }
    let accepted = host
        .accept_pins(target)
        .map_err(|e| Failure::usage(e.to_string()))?;
    if json {
        out::json(&json!({ "accepted": accepted }))?;
    } else {
        for name in &accepted {
            out::line(format!("accepted {name}"))?;
        }
    }
    Ok(())
}

/// Runs the config's `evals` against the approved and the current
/// definitions of the changed tools `target` names; `Err` says why the
/// accept is refused (a regression, or an eval that cannot run).
async fn eval_gate(
    host: &Host,
    target: &str,
    evals: &EvalsConfig,
    config: &Config,
) -> Result<(), String> {
    // Without a lockfile nothing was approved, so nothing changed.
    let Some(path) = &config.lockfile else {
        return Ok(());
    };
    let pins = Pins::open(path).map_err(|e| format!("the eval gate cannot read pins: {e}"))?;
    let pattern = Pattern::parse(target).ok();
    let named: Vec<String> = host
        .all_tools()
        .into_iter()
        .filter(|t| {
            t.name == target
                || t.server == target
                || pattern
                    .as_ref()
                    .is_some_and(|p| p.matches(&t.server, &t.original_name))
        })
        .map(|t| t.name)
        .collect();
    let views = PinnedViews::new(host, &pins).only(|name| named.iter().any(|n| n == name));
    if views.changed.is_empty() {
        return Ok(());
    }
    let cases = load(&evals.files).map_err(|e| format!("the eval gate cannot run: {e}"))?;
    let model = crate::cmd::eval::model(evals.model.as_deref(), config.model.as_ref())
        .map_err(|e| format!("the eval gate cannot run: {e}"))?;
    // One run at a time: a `script:FILE` model answers in file order.
    let options = RunOptions {
        concurrency: 1,
        ..RunOptions::default()
    };
    let comparison = PinComparison::run(model, &cases, &views, &options, &Policy::default()).await;
    out::note(comparison.render().trim_end());
    if comparison.broken.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = comparison.broken.iter().map(|c| c.id.as_str()).collect();
    Err(format!(
        "pins accept refused: the new definitions of {} break {} eval case(s) that pass with the approved ones: {}; \
         fix the server or the cases, or accept anyway with --force",
        views.changed.join(", "),
        ids.len(),
        ids.join(", ")
    ))
}
