//! `switchboard skills [show ID | accept ID]`: the skills servers offer
//! (the Skills extension), their status against `switchboard.lock`, one
//! skill's entry and (once confirmed) content, and accepting one's files.

use std::io::BufRead;

use serde_json::json;
use switchboard_host::ALLOWED_TOOLS_IGNORED;
use switchboard_host::{Host, SkillReport, SkillStatus};

use crate::exit::Failure;
use crate::{ask, out, terminal};

/// Lists every skill: id, server, status (and why invalid), files.
///
/// # Errors
/// When stdout is closed.
pub(crate) fn list(host: &Host, json: bool) -> anyhow::Result<()> {
    let skills = host.skills();
    if json {
        out::json(&skills)?;
        return Ok(());
    }
    if skills.is_empty() {
        out::line("No server offers skills.")?;
        return Ok(());
    }
    let mut rows = vec![vec![
        "SKILL".to_owned(),
        "SERVER".into(),
        "STATUS".into(),
        "FILES".into(),
        "DESCRIPTION".into(),
    ]];
    for s in &skills {
        rows.push(vec![
            s.id.clone(),
            s.server.clone(),
            s.status.as_str().to_owned(),
            files(s),
            out::clip(&s.description, 60),
        ]);
    }
    for line in out::table(&rows) {
        out::line(line)?;
    }
    for s in &skills {
        notes(s)?;
    }
    Ok(())
}

/// Shows a skill's entry, then, once confirmed (or with `--yes`), its
/// `SKILL.md` as a model would get it (verified first).
///
/// # Errors
/// A usage [`Failure`] for an unknown skill; a tool-error one when its
/// content fails verification or cannot be read.
pub(crate) async fn show(
    host: &Host,
    id: &str,
    yes: bool,
    tty: bool,
    json: bool,
) -> anyhow::Result<()> {
    let (report, skill) = host
        .skill(id)
        .await
        .map_err(|e| Failure::usage(e.to_string()))?;
    if !json {
        entry(&report, &skill)?;
    }
    // The content only once the person asked for it: they may inspect a
    // skill before any model sees it (SK-SEC-15).
    let wanted = match report.status {
        SkillStatus::Invalid => false,
        _ if yes => true,
        _ if tty && !json => {
            confirm(&format!(
                "Show the content of {} (read from server {} and verified)? [y/N] ",
                report.id, report.server
            ))
            .await
        }
        _ => false,
    };
    let text = match wanted {
        true => Some(
            host.inspect_skill_file(id, None)
                .await
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| Failure::new(crate::exit::Code::ToolError, e))?,
        ),
        false => None,
    };
    if json {
        out::json(&json!({"skill": report, "entry": skill, "content": text}))?;
        return Ok(());
    }
    match text {
        Some(text) => {
            out::line(format!(
                "\n--- SKILL.md of {} (from server {}, verified) ---",
                report.id, report.server
            ))?;
            out::line(text.trim_end())?;
            out::line("--- end ---")?;
        }
        None if report.status != SkillStatus::Invalid && !tty => out::line(format!(
            "\n(its content is not shown: run `switchboard skills show {} --yes` to read it)",
            report.id
        ))?,
        None => {}
    }
    Ok(())
}

/// Records a skill's current files in the lockfile.
///
/// # Errors
/// A usage [`Failure`] for an unknown skill, a dynamic or invalid one, or
/// a lockfile that cannot be written.
pub(crate) async fn accept(host: &Host, id: &str, json: bool) -> anyhow::Result<()> {
    let report = host
        .accept_skill(id)
        .await
        .map_err(|e| Failure::usage(e.to_string()))?;
    if json {
        out::json(&json!({"accepted": report}))?;
    } else {
        out::line(format!(
            "accepted {} ({}, from server {}): it loads without asking until its files change",
            report.id,
            files(&report),
            report.server
        ))?;
    }
    Ok(())
}

/// The entry, for people.
fn entry(report: &SkillReport, skill: &switchboard_wire::Skill) -> anyhow::Result<()> {
    out::line(format!("skill:       {}", report.id))?;
    out::line(format!(
        "server:      {} (served over MCP: not a local skill)",
        report.server
    ))?;
    out::line(format!("uri:         {}", report.uri))?;
    out::line(format!("name:        {}", report.name))?;
    out::line(format!("description: {}", report.description))?;
    out::line(format!("status:      {}", report.status.as_str()))?;
    out::line(format!("files:       {}", files(report)))?;
    if let Some(list) = skill.files() {
        for f in list {
            out::line(format!("  {} ({} bytes, {})", f.uri, f.size, f.digest))?;
        }
    }
    notes(report)
}

/// The reason, diff, collisions and `allowed-tools` note of a skill.
fn notes(s: &SkillReport) -> anyhow::Result<()> {
    if let Some(reason) = &s.reason {
        out::line(format!("{}: invalid, it never loads: {reason}", s.id))?;
    }
    if let Some(diff) = &s.diff {
        out::line(format!(
            "{} changed since it was approved (accept with `switchboard skills accept {}`):",
            s.id, s.id
        ))?;
        for l in diff.lines() {
            out::line(format!("  {l}"))?;
        }
    }
    if !s.collisions.is_empty() {
        out::line(format!(
            "{}: its name {:?} is also used by {} (each stays under its own id)",
            s.id,
            s.name,
            s.collisions.join(", ")
        ))?;
    }
    if let Some(tools) = &s.allowed_tools {
        out::line(format!(
            "{}: allowed-tools {tools} ({ALLOWED_TOOLS_IGNORED})",
            s.id
        ))?;
    }
    Ok(())
}

/// `N files, B bytes`, or `dynamic` / `-`.
fn files(s: &SkillReport) -> String {
    match (s.files, s.bytes, s.status) {
        (Some(n), Some(b), _) => format!("{n} files, {b} bytes"),
        (_, _, SkillStatus::Dynamic) => "dynamic".into(),
        _ => "-".into(),
    }
}

/// Asks a yes/no question on the terminal (no is the default).
async fn confirm(question: &str) -> bool {
    let question = question.to_owned();
    terminal::question(async move {
        tokio::task::spawn_blocking(move || {
            eprint_prompt(&question);
            let mut line = String::new();
            let mut lines = ask::stdin_lines();
            lines.read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
        })
        .await
        .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

/// The prompt, on stderr.
fn eprint_prompt(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr();
    let _ = write!(err, "{text}");
    let _ = err.flush();
}
