//! `switchboard config check`: the config read and checked as every
//! command reads it, and a gateway's tokens file with it, without starting
//! a server. Meant for CI on a team's config: a file with problems fails
//! here, not at the gateway's next reload (which would keep the old one).

use std::path::Path;

use serde_json::{Value, json};
use switchboard_gateway::TokensSource;
use switchboard_host::{CallLimits, Config};

use crate::exit::Failure;
use crate::out;
use crate::settings::Settings;

/// Checks the config (and `tokens_file`) and prints what it holds.
///
/// # Errors
/// [`Failure`] (exit 1) for a config with problems (every one listed), no
/// config file at all, a tokens file that does not load, or a `principals`
/// entry that names none of its tokens.
pub(crate) fn check(
    settings: &Settings,
    tokens_file: Option<&Path>,
    json: bool,
) -> anyhow::Result<()> {
    let loaded = settings.load_config()?;
    let config = &loaded.config;
    let Some(path) = config.origin.path() else {
        return Err(Failure::usage(
            "no config file to check: give --config FILE (or set $SWITCHBOARD_CONFIG); without one, commands use the built-in demo",
        )
        .into());
    };
    let tokens = tokens_file
        .map(|file| TokensSource::new(file).load())
        .transpose()
        .map_err(|e| Failure::usage(e.to_string()))?;
    if let (Some(tokens), Some(file)) = (&tokens, tokens_file) {
        let missing = tokens.names_missing_from(config);
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|n| format!("principals.{n}")).collect();
            return Err(Failure::usage(format!(
                "{} {} no token in {}: {} rules and limits would apply to no caller (a misspelt name leaves \
                 the caller it was meant for with the whole table)",
                names.join(", "),
                if missing.len() == 1 { "names" } else { "name" },
                file.display(),
                if missing.len() == 1 { "its" } else { "their" },
            ))
            .into());
        }
    }
    let names: Option<Vec<&str>> = tokens.as_ref().map(|t| t.names().collect());
    if json {
        let mut summary = summary(config);
        summary["config"] = json!(path.display().to_string());
        if let (Some(names), Some(file)) = (&names, tokens_file) {
            summary["tokens"] = json!({"file": file.display().to_string(), "names": names});
        }
        return Ok(out::json(&summary)?);
    }
    out::line(format!("config ok: {}", path.display()))?;
    for line in text_lines(config) {
        out::line(format!("  {line}"))?;
    }
    if let (Some(names), Some(file)) = (&names, tokens_file) {
        out::line(format!(
            "tokens ok: {}, {} {} ({})",
            file.display(),
            names.len(),
            if names.len() == 1 { "name" } else { "names" },
            names.join(", ")
        ))?;
    }
    Ok(())
}

/// What the config holds, as JSON (`--json`).
fn summary(config: &Config) -> Value {
    let servers: Vec<Value> = config
        .servers
        .iter()
        .map(|s| json!({"alias": s.alias, "transport": s.transport.kind(), "enabled": s.enabled}))
        .collect();
    let principals: Vec<Value> = config
        .principals
        .iter()
        .map(|(name, rules)| {
            json!({"name": name, "rules": rules.len(), "limits": limits_json(config.limits_for(name))})
        })
        .collect();
    json!({
        "servers": servers,
        "rules": config.rules.len(),
        "principals": principals,
        "callerLimits": limits_json(config.caller_limits),
        "audit": config.audit.as_ref().map(|p| p.display().to_string()),
    })
}

fn limits_json(limits: CallLimits) -> Value {
    json!({"callsPerMinute": limits.calls_per_minute, "concurrentCalls": limits.concurrent_calls})
}

/// What the config holds, a line each.
fn text_lines(config: &Config) -> Vec<String> {
    let servers: Vec<String> = config
        .servers
        .iter()
        .map(|s| {
            let off = if s.enabled { "" } else { ", disabled" };
            format!("{} ({}{off})", s.alias, s.transport.kind())
        })
        .collect();
    let mut lines = vec![
        format!("servers: {}", or_none(&servers)),
        format!("rules: {}", config.rules.len()),
    ];
    let principals: Vec<String> = config
        .principals
        .iter()
        .map(|(name, rules)| {
            let limits = config.limits_for(name);
            let limited = if limits == config.caller_limits {
                String::new()
            } else {
                format!("; {}", limits_text(limits))
            };
            let word = if rules.len() == 1 { "rule" } else { "rules" };
            format!("{name} ({} {word}{limited})", rules.len())
        })
        .collect();
    lines.push(format!("principals: {}", or_none(&principals)));
    lines.push(format!(
        "caller limits: {}",
        limits_text(config.caller_limits)
    ));
    lines.push(format!(
        "audit: {}",
        config
            .audit
            .as_ref()
            .map_or("none".to_owned(), |p| p.display().to_string())
    ));
    lines
}

fn limits_text(limits: CallLimits) -> String {
    let rate = limits
        .calls_per_minute
        .map_or("any number of calls a minute".to_owned(), |n| {
            format!("{n} calls a minute")
        });
    let running = limits
        .concurrent_calls
        .map_or("any number at once".to_owned(), |n| format!("{n} at once"));
    format!("{rate}, {running}")
}

fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
