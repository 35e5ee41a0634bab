//! The skills the Skills extension's scenarios (`sep-2640-skills-*`) find:
//! `acme/billing/refunds` (a prefixed skill with subdirectories),
//! `release-checklist` (a binary file, and the nested skill `hotfix`), and
//! `reports/daily`, whose content is generated (`"dynamic"`).
//!
//! The files live in this crate's `skills/` directory. By default they are
//! compiled in and served from code; `--skills-dir` serves a directory
//! from disk instead (the same files, so the suite checks both paths of
//! the framework). The generated skill comes from code either way.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use switchboard_server::{HandlerError, ServerBuilder, SkillSpec};

/// Adds the fixture skills: from `dir` when given, else compiled in.
pub(crate) fn skills(b: ServerBuilder, dir: Option<&Path>) -> ServerBuilder {
    let b = match dir {
        Some(dir) => b.skills_dir(dir),
        None => embedded(b),
    };
    let frontmatter = json!({"name": "daily", "description": "Assemble today's operational report from live figures."});
    b.skill(SkillSpec::dynamic(
        "reports/daily",
        frontmatter.as_object().cloned().unwrap_or_default(),
        ["figures/today.md"],
        daily,
    ))
}

fn embedded(b: ServerBuilder) -> ServerBuilder {
    macro_rules! file {
        ($path:literal) => {
            include_bytes!(concat!("../skills/", $path)).to_vec()
        };
    }
    b.skill(
        SkillSpec::new(
            "acme/billing/refunds",
            file!("acme/billing/refunds/SKILL.md"),
        )
        .file(
            "examples/email.md",
            file!("acme/billing/refunds/examples/email.md"),
        )
        .file(
            "policy/limits.md",
            file!("acme/billing/refunds/policy/limits.md"),
        ),
    )
    .skill(
        SkillSpec::new("release-checklist", file!("release-checklist/SKILL.md"))
            .file(
                "scripts/verify.sh",
                file!("release-checklist/scripts/verify.sh"),
            )
            .file(
                "assets/badge.png",
                file!("release-checklist/assets/badge.png"),
            ),
    )
    .skill(
        SkillSpec::new(
            "release-checklist/hotfix",
            file!("release-checklist/hotfix/SKILL.md"),
        )
        .file("steps.md", file!("release-checklist/hotfix/steps.md")),
    )
}

/// How many reports were generated: each read makes a new one.
static REPORTS: AtomicU64 = AtomicU64::new(0);

async fn daily(path: String) -> Result<Option<Vec<u8>>, HandlerError> {
    let n = REPORTS.fetch_add(1, Ordering::Relaxed) + 1;
    Ok(match path.as_str() {
        "SKILL.md" => Some(
            format!(
                "---\nname: daily\ndescription: Assemble today's operational report from live figures.\n---\n\n# Daily report\n\nThis is report {n}; the figures are in `figures/today.md`.\n"
            )
            .into_bytes(),
        ),
        "figures/today.md" => Some(format!("Requests served: {}\n", n * 1000).into_bytes()),
        _ => None,
    })
}
