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
//!
//! Skills served by a server (the Skills extension) are named apart:
//! `skill:ALIAS` or `skill:ALIAS:*` (every skill of the server),
//! `skill:ALIAS:SKILL_PATH` (one skill, by the path in its id, e.g.
//! `skill:notes:meeting-notes`) and `skill:ALIAS:PREFIX*`. A tool pattern
//! never matches a skill, nor a skill pattern a tool.

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
/// `mcp__alias__prefix*` for tools; `skill:alias`, `skill:alias:*`,
/// `skill:alias:path` or `skill:alias:prefix*` for skills.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    alias: String,
    tool: ToolPattern,
    text: String,
    /// Whether it names skills (`skill:…`) rather than tools.
    skills: bool,
}

/// What skill patterns start with.
pub(crate) const SKILL_PREFIX: &str = "skill:";

/// Why a pattern cannot be read; `Display` also says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern does not start with `mcp__`.
    #[error(
        "pattern {0:?} does not start with mcp__ or skill:; write mcp__ALIAS, mcp__ALIAS__*, mcp__ALIAS__TOOL or skill:ALIAS:SKILL_PATH"
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
        if let Some(rest) = text.strip_prefix(SKILL_PREFIX) {
            // `skill:ALIAS[:PATH]`.
            return Pattern::parse_parts(text, rest.split_once(':').ok_or(rest), true);
        }
        let rest = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| PatternError::NoPrefix(text.to_owned()))?;
        // Aliases never contain `__`, so the first `__` ends the alias.
        Pattern::parse_parts(text, rest.split_once(SEPARATOR).ok_or(rest), false)
    }

    /// The pattern `text`, split into its alias and what follows it (`Err`
    /// holds a bare alias); `skills` for a `skill:` pattern.
    fn parse_parts(
        text: &str,
        parts: Result<(&str, &str), &str>,
        skills: bool,
    ) -> Result<Pattern, PatternError> {
        let (alias, name) = match parts {
            Ok((alias, name)) => (alias, Some(name)),
            Err(alias) => (alias, None),
        };
        if !is_valid_alias(alias) {
            return Err(PatternError::BadAlias(text.to_owned()));
        }
        let tool = match name {
            None | Some("*") => ToolPattern::Any,
            Some("") => return Err(PatternError::EmptyTool(text.to_owned())),
            Some(n) => match n.find('*') {
                None => ToolPattern::Exact(n.to_owned()),
                Some(i) if i == n.len() - 1 => ToolPattern::Prefix(n[..i].to_owned()),
                Some(_) => return Err(PatternError::InnerWildcard(text.to_owned())),
            },
        };
        Ok(Pattern {
            alias: alias.to_owned(),
            tool,
            text: text.to_owned(),
            skills,
        })
    }

    /// A pattern for one skill of `alias`, by the path in its id.
    pub fn skill(alias: &str, path: &str) -> Pattern {
        Pattern {
            alias: alias.to_owned(),
            tool: ToolPattern::Exact(path.to_owned()),
            text: format!("{SKILL_PREFIX}{alias}:{path}"),
            skills: true,
        }
    }

    /// Whether the pattern names skills (`skill:…`) rather than tools.
    pub fn is_skill(&self) -> bool {
        self.skills
    }

    /// Whether the pattern covers the skill whose id is `alias:path`.
    pub fn matches_skill(&self, alias: &str, path: &str) -> bool {
        if !self.skills || self.alias != alias {
            return false;
        }
        match &self.tool {
            ToolPattern::Any => true,
            ToolPattern::Exact(p) => p == path,
            ToolPattern::Prefix(p) => path.starts_with(p.as_str()),
        }
    }

    /// A pattern for every tool of `alias`.
    pub fn server(alias: &str) -> Pattern {
        Pattern {
            alias: alias.to_owned(),
            tool: ToolPattern::Any,
            text: format!("{PREFIX}{alias}"),
            skills: false,
        }
    }

    /// A pattern for one tool of `alias`, by its original name.
    pub fn tool(alias: &str, tool: &str) -> Pattern {
        Pattern {
            alias: alias.to_owned(),
            tool: ToolPattern::Exact(tool.to_owned()),
            text: format!("{PREFIX}{alias}{SEPARATOR}{tool}"),
            skills: false,
        }
    }

    /// The alias this pattern is about.
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// Whether the pattern takes in a whole server (`mcp__ALIAS` or
    /// `mcp__ALIAS__*`; a skill pattern never does).
    pub fn is_whole_server(&self) -> bool {
        !self.skills && matches!(self.tool, ToolPattern::Any)
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

    /// Whether the pattern covers tool `original` of server `alias` (a
    /// skill pattern covers no tool).
    pub fn matches(&self, alias: &str, original: &str) -> bool {
        if self.skills || self.alias != alias {
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
pub(crate) enum RuleVerdict<'a> {
    /// No rule matched.
    None,
    /// The strongest matching rule.
    Matched(&'a Rule),
}

/// Finds the deciding rule for tool `original` of `alias`: any `deny` beats
/// any `ask`, which beats any `allow`; among rules of one kind the first
/// written wins (only its `source` differs).
pub(crate) fn decide<'a>(rules: &'a [Rule], alias: &str, original: &str) -> RuleVerdict<'a> {
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

/// Finds the deciding rule for the skill whose id is `alias:path`, as
/// [`decide`] does for tools, among the skill patterns.
pub(crate) fn decide_skill<'a>(rules: &'a [Rule], alias: &str, path: &str) -> RuleVerdict<'a> {
    let mut best: Option<&Rule> = None;
    for rule in rules
        .iter()
        .filter(|r| r.pattern.matches_skill(alias, path))
    {
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

    pub(super) fn rule(kind: RuleKind, pattern: &str) -> Rule {
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

#[cfg(test)]
mod skill_tests {
    use super::tests::rule;
    use super::*;

    // Rules can name skills with the wildcards tools have; the two kinds
    // of pattern never cover each other.
    #[test]
    fn skill_patterns_name_skills_and_only_skills() {
        let one = Pattern::parse("skill:notes:meeting-notes").unwrap();
        assert!(one.is_skill() && one.is_exact() && !one.is_whole_server());
        assert!(one.matches_skill("notes", "meeting-notes"));
        assert!(!one.matches_skill("other", "meeting-notes"));
        assert!(!one.matches("notes", "meeting-notes"));
        for all in ["skill:notes", "skill:notes:*"] {
            let p = Pattern::parse(all).unwrap();
            assert!(p.matches_skill("notes", "acme/billing/refunds"), "{all}");
            assert!(!p.matches("notes", "search"), "{all}");
        }
        let prefix = Pattern::parse("skill:notes:acme/*").unwrap();
        assert!(prefix.matches_skill("notes", "acme/billing/refunds"));
        assert!(!prefix.matches_skill("notes", "meeting-notes"));
        assert!(
            !Pattern::parse("mcp__notes")
                .unwrap()
                .matches_skill("notes", "x")
        );
        assert!(matches!(
            Pattern::parse("skill:"),
            Err(PatternError::BadAlias(_))
        ));
        assert!(matches!(
            Pattern::parse("skill:notes:"),
            Err(PatternError::EmptyTool(_))
        ));
        assert!(matches!(
            Pattern::parse("skill:notes:a*b"),
            Err(PatternError::InnerWildcard(_))
        ));
        assert_eq!(Pattern::skill("notes", "x").as_str(), "skill:notes:x");

        let rules = [
            rule(RuleKind::Allow, "skill:notes"),
            rule(RuleKind::Deny, "skill:notes:evil"),
            rule(RuleKind::Allow, "mcp__notes"),
        ];
        assert!(
            matches!(decide_skill(&rules, "notes", "evil"), RuleVerdict::Matched(r) if r.kind == RuleKind::Deny)
        );
        assert!(
            matches!(decide_skill(&rules, "notes", "good"), RuleVerdict::Matched(r) if r.kind == RuleKind::Allow)
        );
        assert_eq!(decide_skill(&rules, "tickets", "good"), RuleVerdict::None);
        // A deny of a skill never touches the server's tools.
        assert!(
            matches!(decide(&rules, "notes", "evil"), RuleVerdict::Matched(r) if r.kind == RuleKind::Allow)
        );
    }
}
