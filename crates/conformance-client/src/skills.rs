//! The Skills extension's client scenarios (`sep-2640-client-*`): what a
//! host does with a server's skills, through the library's client and the
//! wire crate's checks.
//!
//! Listing reads no file (`no-prefetch`). Loading a skill fetches its
//! `SKILL.md` and verifies it against the held entry (size, then digest,
//! then the frontmatter field by field); a skill that fails is refused,
//! its failure printed, and none of its files is read (`verify-digest`,
//! `verify-size`, `verify-frontmatter`). A refusal is the right outcome
//! of those scenarios, so it is not an error of this program.

use anyhow::Context;
use switchboard_client::{Client, SkillFetchError};
use switchboard_wire::Skill;

use crate::say;

/// Every entry the server lists, each shown with whether it could load.
pub(crate) async fn list(client: &Client) -> anyhow::Result<Vec<Skill>> {
    let skills = client.list_skills().await.context("skills/list")?.items;
    for skill in &skills {
        let status = match skill.check() {
            Ok(()) if skill.is_dynamic() => "dynamic".to_owned(),
            Ok(()) => format!("{} file(s)", skill.files().map_or(0, <[_]>::len)),
            Err(e) => format!("refused ({}): {e}", e.kind()),
        };
        say(&format!("skills/list: {} ({status})", skill.uri));
    }
    Ok(skills)
}

/// Loads `skill`: its verified `SKILL.md`, then each other listed file,
/// verified. Stops at the first verification failure.
pub(crate) async fn load(client: &Client, skill: &Skill) -> anyhow::Result<()> {
    match client.fetch_skill_file(skill, &skill.uri).await {
        Ok(bytes) => say(&format!(
            "loaded {} ({} bytes, verified)",
            skill.uri,
            bytes.len()
        )),
        Err(SkillFetchError::Verify(e)) => {
            say(&format!("refused {}: {} failure: {e}", skill.uri, e.kind()));
            return Ok(());
        }
        Err(e) => return Err(e).context(format!("reading {}", skill.uri)),
    }
    for file in skill.files().unwrap_or_default() {
        if file.uri == skill.uri {
            continue;
        }
        match client.fetch_skill_file(skill, &file.uri).await {
            Ok(bytes) => say(&format!(
                "read {} ({} bytes, verified)",
                file.uri,
                bytes.len()
            )),
            Err(SkillFetchError::Verify(e)) => {
                say(&format!("refused {}: {} failure: {e}", file.uri, e.kind()));
                return Ok(());
            }
            Err(e) => return Err(e).context(format!("reading {}", file.uri)),
        }
    }
    Ok(())
}
