//! Skills served by MCP servers (the `io.modelcontextprotocol/skills`
//! extension), as the host holds and governs them.
//!
//! - The registry is keyed by the server's alias and the skill's `uri`,
//!   never by either alone (SK-ENT-1/2): a skill's id is
//!   `ALIAS:SKILL_PATH` ([`skill_id`]), e.g. `notes:meeting-notes` for
//!   `skill://meeting-notes/SKILL.md` of server `notes`. Two skills with the
//!   same name, on one server or on two, are both kept under their own ids
//!   and shown as colliding (SK-ENT-9/10/11, SK-SEC-10).
//! - Only entries are held: nothing of a skill is read on connect, on
//!   listing or on approval (SK-VER-6); a file is fetched when a load or a
//!   read needs it, from the skill's own server only (SK-SEC-7), and used
//!   only once verified against the held entry (SK-VER-1/2/5).
//! - Each skill has a [`SkillStatus`]: `new`, `approved` (its full
//!   `{uri, digest}` set is recorded in `switchboard.lock`), `changed`
//!   (recorded with another set), `dynamic` (no digests: never bound to
//!   content) or `invalid` (never loads, with the reason).
//! - `cache`: the verified-content cache on disk.
//! - `tools`: the built-in tools `mcp__switchboard__load_skill` and
//!   `mcp__switchboard__read_skill_file`.

use serde::Serialize;
use serde_json::Value;
use switchboard_wire::Skill;

pub(crate) mod cache;
pub(crate) mod tools;

/// The built-in tool that loads a skill.
pub(crate) const LOAD_SKILL: &str = "load_skill";
/// The built-in tool that reads one file of a skill.
pub(crate) const READ_SKILL_FILE: &str = "read_skill_file";

/// Where a skill stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillStatus {
    /// Never approved: loading it asks.
    New,
    /// Approved with its current `{uri, digest}` set: loads without asking.
    Approved,
    /// Approved with another set: loading asks again, with the diff.
    Changed,
    /// `resources: "dynamic"`: no digests, so no approval covers it.
    Dynamic,
    /// The entry is invalid or over the limits: it never loads.
    Invalid,
}

impl SkillStatus {
    /// `new`, `approved`, `changed`, `dynamic` or `invalid`.
    pub fn as_str(self) -> &'static str {
        match self {
            SkillStatus::New => "new",
            SkillStatus::Approved => "approved",
            SkillStatus::Changed => "changed",
            SkillStatus::Dynamic => "dynamic",
            SkillStatus::Invalid => "invalid",
        }
    }
}

/// A skill as `switchboard skills` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillReport {
    /// `ALIAS:SKILL_PATH`.
    pub id: String,
    /// The alias of the server serving it (its origin).
    pub server: String,
    /// The URI of its `SKILL.md` on that server.
    pub uri: String,
    /// The frontmatter `name` (cleaned of invisible characters).
    pub name: String,
    /// The frontmatter `description` (cleaned of invisible characters).
    pub description: String,
    /// Where it stands.
    pub status: SkillStatus,
    /// Why it is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many files its entry lists (`None` for a dynamic or invalid one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
    /// The sum of their sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The files added, removed and changed since approval (`changed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Other skills with the same name (ids): shown, never shadowed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collisions: Vec<String>,
    /// Its frontmatter's `allowed-tools`, when it has one: shown, and
    /// ignored (a served skill never widens any permission).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Value>,
}

/// What is said wherever a skill's `allowed-tools` is shown.
pub const ALLOWED_TOOLS_IGNORED: &str =
    "allowed-tools is ignored: a skill served over MCP never widens any permission";

/// The path part of a skill's id: the `SKILL.md` URI's directory without
/// the `skill://` scheme (`skill://acme/billing/refunds/SKILL.md` →
/// `acme/billing/refunds`); another scheme stays in
/// (`github://o/r/refunds`); a URI without a skill directory stays whole.
pub(crate) fn skill_path(uri: &str) -> &str {
    let root = switchboard_wire::skills::skill_root(uri).unwrap_or(uri);
    root.strip_prefix("skill://").unwrap_or(root)
}

/// The id of the skill at `uri` of server `alias`: `ALIAS:SKILL_PATH`.
pub fn skill_id(alias: &str, uri: &str) -> String {
    format!("{alias}:{}", skill_path(uri))
}

/// The alias and the path of an id (`notes:meeting-notes`); `None` when it
/// has no `:` (aliases never contain one, so the first ends the alias).
pub(crate) fn split_id(id: &str) -> Option<(&str, &str)> {
    id.split_once(':')
        .filter(|(a, p)| !a.is_empty() && !p.is_empty())
}

/// The URI a skill path names when it is not in the registry: a `skill://`
/// `SKILL.md` (a path with another scheme is one already).
pub(crate) fn uri_of_path(path: &str) -> String {
    if path.contains("://") {
        format!("{path}/{}", switchboard_wire::skills::SKILL_MD)
    } else {
        format!("skill://{path}/{}", switchboard_wire::skills::SKILL_MD)
    }
}

/// The frontmatter `allowed-tools` of an entry, if any.
pub(crate) fn allowed_tools(skill: &Skill) -> Option<Value> {
    skill.frontmatter.get("allowed-tools").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    // SK-ENT-1/2: an id carries the server and the skill's path; the same
    // URI on two servers gives two ids.
    #[test]
    fn ids_carry_the_alias_and_the_skill_path() {
        assert_eq!(
            skill_id("notes", "skill://meeting-notes/SKILL.md"),
            "notes:meeting-notes"
        );
        assert_eq!(
            skill_id("a", "skill://acme/billing/refunds/SKILL.md"),
            "a:acme/billing/refunds"
        );
        assert_ne!(
            skill_id("a", "skill://x/SKILL.md"),
            skill_id("b", "skill://x/SKILL.md")
        );
        assert_eq!(
            skill_id("gh", "github://o/r/refunds/SKILL.md"),
            "gh:github://o/r/refunds"
        );
        assert_eq!(split_id("notes:acme/x"), Some(("notes", "acme/x")));
        assert_eq!(split_id("gh:github://o/r"), Some(("gh", "github://o/r")));
        assert_eq!(split_id("nocolon"), None);
        assert_eq!(split_id(":x"), None);
        assert_eq!(uri_of_path("acme/x"), "skill://acme/x/SKILL.md");
        assert_eq!(uri_of_path("github://o/r"), "github://o/r/SKILL.md");
    }
}
