//! `switchboard pins list|accept`: the lockfile of approved tool, prompt
//! and resource template definitions.

use serde_json::json;
use switchboard_host::{Host, PinState};

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

/// Accepts the current definition of a tool or of a server's tools.
///
/// # Errors
/// A usage [`Failure`] when nothing matches or the lockfile cannot be
/// written.
pub(crate) fn accept(host: &Host, target: &str, json: bool) -> anyhow::Result<()> {
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
