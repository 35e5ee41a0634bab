//! Permission rules in Claude Code's pattern syntax.
//!
//! A pattern names a server or some of its tools by the user's alias:
//! `mcp__alias` (every tool of the server), `mcp__alias__*` (the same),
//! `mcp__alias__tool` (one tool, by its model-facing or its original name)
//! and `mcp__alias__prefix*` (tools whose name starts with `prefix`). The
//! alias is the one in the config, never a server's self-reported name, so a
//! server cannot claim another's rules.
//!
//! Rules come in three kinds; when several match, `deny` wins over `ask`,
//! which wins over `allow`, whatever their order or specificity.

use std::fmt;

use switchboard_wire::naming::{PREFIX, SEPARATOR};
use switchboard_wire::{is_valid_alias, namespaced_tool_name};

/// What a rule says about the tools it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleKind {
    /// Call without asking.
    Allow,
    /// Ask a human first.
    Ask,
    /// Never call.
    Deny,
}

impl RuleKind {
    /// The config key this kind is listed under: `allow`, `ask` or `deny`.
    pub fn key(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// Which tools of a server a pattern covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ToolPattern {
    /// Every tool.
    Any,
    /// One tool, by model-facing or original name.
    Exact(String),
    /// Tools whose name starts with this.
    Prefix(String),
}

/// A parsed pattern: `mcp__alias`, `mcp__alias__*`, `mcp__alias__tool` or
/// `mcp__alias__prefix*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    alias: String,
    tool: ToolPattern,
    text: String,
}

/// Why a pattern cannot be read; `Display` also says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern does not start with `mcp__`.
    #[error(
        "pattern {0:?} does not start with mcp__; write mcp__ALIAS, mcp__ALIAS__* or mcp__ALIAS__TOOL"
    )]
    NoPrefix(String),
    /// The alias part is not a valid alias.
    #[error("pattern {0:?} has no valid alias after mcp__; aliases are letters, digits, _ and -")]
    BadAlias(String),
    /// `mcp__alias__` with nothing after it.
    #[error("pattern {0:?} ends with __ but names no tool; write mcp__ALIAS__* for every tool")]
    EmptyTool(String),
    /// A `*` somewhere other than at the end.
    #[error("pattern {0:?} has a * that is not at the end; only a trailing * is a wildcard")]
    InnerWildcard(String),
}

impl Pattern {
    /// Reads a pattern.
    ///
    /// # Errors
    /// [`PatternError`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        let rest = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| PatternError::NoPrefix(text.to_owned()))?;
        // Aliases never contain `__`, so the first `__` ends the alias.
        let (alias, tool) = match rest.split_once(SEPARATOR) {
            Some((alias, tool)) => (alias, Some(tool)),
            None => (rest, None),
        };
        if !is_valid_alias(alias) {
            return Err(PatternError::BadAlias(text.to_owned()));
        }
        let tool = match tool {
            None | Some("*") => ToolPattern::Any,
            Some("") => return Err(PatternError::EmptyTool(text.to_owned())),
            Some(t) => match t.find('*') {
                None => ToolPattern::Exact(t.to_owned()),
                Some(i) if i == t.len() - 1 => ToolPattern::Prefix(t[..i].to_owned()),
                Some(_) => return Err(PatternError::InnerWildcard(text.to_owned())),
            },
        };
        Ok(Pattern {
            alias: alias.to_owned(),
            tool,
            text: text.to_owned(),
        })
    }

    /// A pattern for every tool of `alias`.
    pub fn server(alias: &str) -> Pattern {
        Pattern {
            alias: alias.to_owned(),
            tool: ToolPattern::Any,
            text: format!("{PREFIX}{alias}"),
        }
    }

    /// A pattern for one tool of `alias`, by its original name.
    pub fn tool(alias: &str, tool: &str) -> Pattern {
        Pattern {
            alias: alias.to_owned(),
            tool: ToolPattern::Exact(tool.to_owned()),
            text: format!("{PREFIX}{alias}{SEPARATOR}{tool}"),
        }
    }

    /// The alias this pattern is about.
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// Whether the pattern takes in a whole server (`mcp__ALIAS` or
    /// `mcp__ALIAS__*`).
    pub fn is_whole_server(&self) -> bool {
        matches!(self.tool, ToolPattern::Any)
    }

    /// Whether the pattern names exactly one tool (not a whole server or a
    /// wildcard).
    pub fn is_exact(&self) -> bool {
        matches!(self.tool, ToolPattern::Exact(_))
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern covers tool `original` of server `alias`.
    pub fn matches(&self, alias: &str, original: &str) -> bool {
        if self.alias != alias {
            return false;
        }
        match &self.tool {
            ToolPattern::Any => true,
            ToolPattern::Exact(t) => {
                t == original || namespaced_tool_name(alias, original) == self.text
            }
            ToolPattern::Prefix(p) => {
                original.starts_with(p.as_str())
                    || namespaced_tool_name(alias, original)
                        .starts_with(&format!("{PREFIX}{alias}{SEPARATOR}{p}"))
            }
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One rule: a kind, a pattern, and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Allow, ask or deny.
    pub kind: RuleKind,
    /// The tools it covers.
    pub pattern: Pattern,
    /// Where it was written, e.g. `permissions.allow[0]` or
    /// `mcpServers.notes.permissions.deny[1]`.
    pub source: String,
}

/// The verdict of the rules alone for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleVerdict<'a> {
    /// No rule matched.
    None,
    /// The strongest matching rule.
    Matched(&'a Rule),
}

/// Finds the deciding rule for tool `original` of `alias`: any `deny` beats
/// any `ask`, which beats any `allow`; among rules of one kind the first
/// written wins (only its `source` differs).
pub fn decide<'a>(rules: &'a [Rule], alias: &str, original: &str) -> RuleVerdict<'a> {
    let mut best: Option<&Rule> = None;
    for rule in rules.iter().filter(|r| r.pattern.matches(alias, original)) {
        if best.is_none_or(|b| rule.kind > b.kind) {
            best = Some(rule);
        }
    }
    match best {
        Some(rule) => RuleVerdict::Matched(rule),
        None => RuleVerdict::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: RuleKind, pattern: &str) -> Rule {
        Rule {
            kind,
            pattern: Pattern::parse(pattern).unwrap(),
            source: format!("permissions.{}", kind.key()),
        }
    }

    #[test]
    fn parsing() {
        let p = Pattern::parse("mcp__notes").unwrap();
        assert_eq!(p.alias(), "notes");
        assert!(!p.is_exact());
        assert!(p.matches("notes", "anything"));
        assert!(!Pattern::parse("mcp__notes__*").unwrap().is_exact());
        assert!(Pattern::parse("mcp__notes__search").unwrap().is_exact());
        assert!(matches!(
            Pattern::parse("notes__search"),
            Err(PatternError::NoPrefix(_))
        ));
        assert!(matches!(
            Pattern::parse("mcp__"),
            Err(PatternError::BadAlias(_))
        ));
        assert!(matches!(
            Pattern::parse("mcp__no tes"),
            Err(PatternError::BadAlias(_))
        ));
        assert!(matches!(
            Pattern::parse("mcp__notes__"),
            Err(PatternError::EmptyTool(_))
        ));
        assert!(matches!(
            Pattern::parse("mcp__notes__a*b"),
            Err(PatternError::InnerWildcard(_))
        ));
    }

    #[test]
    fn exact_matches_original_and_model_facing_names() {
        // The original name has a dot; the model sees it as `_`.
        let by_original = Pattern::parse("mcp__gh__issue.get").unwrap();
        let by_local = Pattern::parse("mcp__gh__issue_get").unwrap();
        assert!(by_original.matches("gh", "issue.get"));
        assert!(by_local.matches("gh", "issue.get"));
        assert!(!by_local.matches("gh", "issue.list"));
        // Hashed long names match through the table's own function.
        let long = "x".repeat(100);
        let local = namespaced_tool_name("gh", &long);
        assert!(Pattern::parse(&local).unwrap().matches("gh", &long));
    }

    #[test]
    fn prefix_wildcard() {
        let p = Pattern::parse("mcp__fs__read_*").unwrap();
        assert!(p.matches("fs", "read_file"));
        assert!(p.matches("fs", "read_"));
        assert!(!p.matches("fs", "write_file"));
    }

    // A server whose alias is `evil` cannot pick up rules written for `notes`,
    // whatever it calls itself or its tools.
    #[test]
    fn alias_is_the_only_identity() {
        let rules = [rule(RuleKind::Allow, "mcp__notes")];
        assert_eq!(decide(&rules, "evil", "search"), RuleVerdict::None);
        assert_eq!(
            decide(&rules, "evil", "mcp__notes__search"),
            RuleVerdict::None
        );
        assert!(matches!(
            decide(&rules, "notes", "search"),
            RuleVerdict::Matched(_)
        ));
        // `mcp__no` must not cover `mcp__notes`.
        let rules = [rule(RuleKind::Allow, "mcp__no")];
        assert_eq!(decide(&rules, "notes", "search"), RuleVerdict::None);
    }

    #[test]
    fn deny_beats_ask_beats_allow_in_any_order() {
        let all = [
            rule(RuleKind::Allow, "mcp__t__search"),
            rule(RuleKind::Ask, "mcp__t"),
            rule(RuleKind::Deny, "mcp__t__*"),
        ];
        for perm in [[0, 1, 2], [2, 1, 0], [1, 0, 2], [1, 2, 0]] {
            let rules: Vec<Rule> = perm.iter().map(|i| all[*i].clone()).collect();
            match decide(&rules, "t", "search") {
                RuleVerdict::Matched(r) => assert_eq!(r.kind, RuleKind::Deny),
                RuleVerdict::None => panic!("no match"),
            }
            let without_deny: Vec<Rule> = rules
                .iter()
                .filter(|r| r.kind != RuleKind::Deny)
                .cloned()
                .collect();
            match decide(&without_deny, "t", "search") {
                RuleVerdict::Matched(r) => assert_eq!(r.kind, RuleKind::Ask),
                RuleVerdict::None => panic!("no match"),
            }
        }
    }
}
