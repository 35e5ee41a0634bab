//! Model-facing tool names: `mcp__{alias}__{tool}` (DESIGN.md item 7).
//!
//! The alias is the user's name for a server, never the server's
//! self-reported name. Characters outside `[A-Za-z0-9_-]` become `_`; a name
//! over 64 characters keeps its first 57, then `_` and six hex digits of
//! `sha1("{alias}::{tool}")`, so distinct tools stay distinct. The host maps
//! names back through its table, never by splitting the string.

use sha1::{Digest, Sha1};

/// Longest name a model-facing tool may have.
pub const MAX_TOOL_NAME: usize = 64;

/// Prefix of every namespaced tool name.
pub const PREFIX: &str = "mcp__";

/// Separator between the alias and the tool.
pub const SEPARATOR: &str = "__";

/// Builds the namespaced name of `tool` on the server the user calls `alias`.
///
/// ```
/// use switchboard_wire::namespaced_tool_name;
/// assert_eq!(namespaced_tool_name("notes", "search"), "mcp__notes__search");
/// assert_eq!(namespaced_tool_name("my notes", "grep.v2"), "mcp__my_notes__grep_v2");
/// ```
pub fn namespaced_tool_name(alias: &str, tool: &str) -> String {
    let full: String = format!("{PREFIX}{alias}{SEPARATOR}{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    let digest = Sha1::digest(format!("{alias}::{tool}").as_bytes());
    let hex: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
    format!("{}_{hex}", &full[..MAX_TOOL_NAME - 7])
}

/// Whether `alias` is acceptable: `[A-Za-z0-9_-]+` without `__`.
pub fn is_valid_alias(alias: &str) -> bool {
    !alias.is_empty()
        && !alias.contains(SEPARATOR)
        && alias
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_illegal_characters() {
        assert_eq!(
            namespaced_tool_name("a", "tool.name/x y"),
            "mcp__a__tool_name_x_y"
        );
        assert_eq!(namespaced_tool_name("t", "créer"), "mcp__t__cr_er");
    }

    #[test]
    fn sixty_four_is_kept_and_sixty_five_is_hashed() {
        let tool64 = "x".repeat(64 - "mcp__a__".len());
        let n = namespaced_tool_name("a", &tool64);
        assert_eq!(n.len(), 64);
        assert_eq!(n, format!("mcp__a__{tool64}"));

        let tool65 = format!("{tool64}y");
        let n = namespaced_tool_name("a", &tool65);
        assert_eq!(n.len(), 64);
        assert_eq!(&n[..57], &format!("mcp__a__{tool65}")[..57]);
        assert_eq!(&n[57..58], "_");
        let digest = Sha1::digest(format!("a::{tool65}").as_bytes());
        assert_eq!(
            &n[58..],
            format!("{:02x}{:02x}{:02x}", digest[0], digest[1], digest[2])
        );
    }

    #[test]
    fn long_names_differing_only_at_the_end_stay_distinct() {
        let base = "z".repeat(80);
        assert_ne!(
            namespaced_tool_name("a", &format!("{base}1")),
            namespaced_tool_name("a", &format!("{base}2"))
        );
    }

    #[test]
    fn alias_rules() {
        assert!(is_valid_alias("notes"));
        assert!(is_valid_alias("my-server_2"));
        assert!(!is_valid_alias(""));
        assert!(!is_valid_alias("a__b"));
        assert!(!is_valid_alias("a.b"));
        assert!(!is_valid_alias("a b"));
    }
}
