//! The gate: allow, ask or deny one call, before anyone is asked.
//!
//! 1. The user's rules: any matching `deny` wins, then `ask`, then `allow`.
//! 2. No rule: ask. Every tool of an MCP server is treated as
//!    state-changing (DESIGN.md item 8).
//! 3. Annotations come from the server and are untrusted: they may only
//!    make the verdict stricter. `destructiveHint: true` turns an allow from
//!    a broad rule (`mcp__alias`, `mcp__alias__*`, a prefix) into a
//!    question; only a rule naming the tool itself allows it outright. A
//!    `readOnlyHint` never skips a question, and cannot waive
//!    `destructiveHint`.
//! 4. Pins: a tool whose definition changed since it was approved is asked
//!    about again, with the diff, whatever the rules say (short of deny).
//!
//! Before all this, a call made by a gateway's authenticated caller meets
//! that caller's `principals` rules ([`principal_allows`]): they can only
//! narrow, never allow what the rules above would not.

use serde::{Deserialize, Serialize};
use switchboard_wire::Tool;

use crate::builtin::BuiltinGate;
use crate::permission::{self, Rule, RuleKind, RuleVerdict};
use crate::pins::PinState;

/// The gate's verdict before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Call without asking.
    Allow,
    /// Ask the approver.
    Ask,
    /// Refuse.
    Deny,
}

impl Verdict {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// The verdict with its reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// Allow, ask or deny.
    pub verdict: Verdict,
    /// The deciding rule's place in the config and pattern, when a rule
    /// decided (allow or deny).
    pub rule: Option<(String, String)>,
    /// Why, one sentence each.
    pub reasons: Vec<String>,
    /// The pin diff, when the definition changed.
    pub diff: Option<String>,
}

/// Assesses a call of `tool` on server `alias`.
pub fn assess(rules: &[Rule], alias: &str, tool: &Tool, pin: &PinState) -> Assessment {
    let mut reasons = Vec::new();
    let mut rule_ref = None;
    let destructive = tool.annotations.as_ref().and_then(|a| a.destructive_hint) == Some(true);
    let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);

    let mut verdict = match permission::decide(rules, alias, &tool.name) {
        RuleVerdict::Matched(rule) => {
            // Only the reasons name the rule; an allowed call has none.
            let at = || format!("{} ({})", rule.source, rule.pattern);
            match rule.kind {
                RuleKind::Deny => {
                    reasons.push(format!("denied by the rule at {}", at()));
                    rule_ref = Some((rule.source.clone(), rule.pattern.as_str().to_owned()));
                    Verdict::Deny
                }
                RuleKind::Ask => {
                    reasons.push(format!("the rule at {} says to ask", at()));
                    Verdict::Ask
                }
                RuleKind::Allow if destructive && !rule.pattern.is_exact() => {
                    reasons.push(format!(
                        "the server marks this tool destructive, and the rule at {} allows it only as part of a group; allow it by name to skip this question",
                        at()
                    ));
                    Verdict::Ask
                }
                RuleKind::Allow => {
                    rule_ref = Some((rule.source.clone(), rule.pattern.as_str().to_owned()));
                    Verdict::Allow
                }
            }
        }
        RuleVerdict::None => {
            reasons.push(
                "no permission rule allows this tool; tools of MCP servers are asked about by default"
                    .into(),
            );
            Verdict::Ask
        }
    };
    if verdict == Verdict::Ask && read_only {
        reasons.push(
            "the server says the tool is read-only; that claim comes from the server and is not trusted"
                .into(),
        );
    }
    let diff = match pin {
        PinState::Changed { diff } if verdict != Verdict::Deny => {
            reasons.push(
                "the tool's definition changed since it was approved; accept it with `switchboard pins accept`"
                    .into(),
            );
            if verdict == Verdict::Allow {
                verdict = Verdict::Ask;
                rule_ref = None;
            }
            Some(diff.clone())
        }
        PinState::New if verdict != Verdict::Deny => {
            reasons.push(
                "the server added this tool after it was first mounted, and it has not been accepted; accept it with `switchboard pins accept`"
                    .into(),
            );
            if verdict == Verdict::Allow {
                verdict = Verdict::Ask;
                rule_ref = None;
            }
            None
        }
        _ => None,
    };
    Assessment {
        verdict,
        rule: rule_ref,
        reasons,
        diff,
    }
}

/// Assesses a call of the built-in tool `tool` (alias
/// [`crate::builtin::ALIAS`]), whose default when no rule names it is
/// `default`: a deny rule refuses; for [`BuiltinGate::PerCall`] nothing
/// else is decided here (the verdict is `allow` for the tool itself: its
/// handler asks its own question); otherwise an `ask` or
/// `allow` rule decides, then the default. Built-ins carry no pins and no
/// server annotations.
///
/// [`BuiltinGate::PerCall`]: crate::builtin::BuiltinGate::PerCall
pub(crate) fn assess_builtin(rules: &[Rule], tool: &Tool, default: BuiltinGate) -> Assessment {
    let alias = crate::builtin::ALIAS;
    let matched = match permission::decide(rules, alias, &tool.name) {
        RuleVerdict::Matched(rule) => Some(rule),
        RuleVerdict::None => None,
    };
    let by_rule = |rule: &Rule, verdict, reason: String| Assessment {
        verdict,
        rule: (verdict != Verdict::Ask)
            .then(|| (rule.source.clone(), rule.pattern.as_str().to_owned())),
        reasons: vec![reason],
        diff: None,
    };
    match (matched, default) {
        (Some(rule), _) if rule.kind == RuleKind::Deny => by_rule(
            rule,
            Verdict::Deny,
            format!("denied by the rule at {} ({})", rule.source, rule.pattern),
        ),
        (_, BuiltinGate::PerCall) => Assessment {
            verdict: Verdict::Allow,
            rule: None,
            reasons: vec![
                "a built-in tool of Switchboard that asks about what each call names".into(),
            ],
            diff: None,
        },
        (Some(rule), _) => {
            let verdict = if rule.kind == RuleKind::Ask {
                Verdict::Ask
            } else {
                Verdict::Allow
            };
            by_rule(
                rule,
                verdict,
                format!("the rule at {} ({}) decides", rule.source, rule.pattern),
            )
        }
        (None, BuiltinGate::Allow) => Assessment {
            verdict: Verdict::Allow,
            rule: None,
            reasons: vec!["a built-in tool of Switchboard, allowed by default".into()],
            diff: None,
        },
        (None, _) => Assessment {
            verdict: Verdict::Ask,
            rule: None,
            reasons: vec![
                "no permission rule allows this built-in tool of Switchboard; it is asked about by default"
                    .into(),
            ],
            diff: None,
        },
    }
}

/// Whether a caller whose `principals` entry holds `rules` may call tool
/// `original` of server `alias`: `Err` with the refusing rule (its place
/// and pattern), or `None` when no allow rule names the tool.
///
/// A matching `deny` refuses; when the entry has `allow` rules, a tool none
/// of them matches is refused; otherwise the call goes on to the ordinary
/// gate ([`assess`]), which may still ask or deny. A caller without an
/// entry is narrowed by nothing.
///
/// # Errors
/// The refusal, as above.
pub(crate) fn principal_allows<'a>(
    rules: &'a [Rule],
    alias: &str,
    original: &str,
) -> Result<(), Option<&'a Rule>> {
    let mut allow_rules = false;
    let mut allowed = false;
    for rule in rules {
        let matches = rule.pattern.matches(alias, original);
        match rule.kind {
            RuleKind::Deny if matches => return Err(Some(rule)),
            RuleKind::Allow => {
                allow_rules = true;
                allowed |= matches;
            }
            _ => {}
        }
    }
    if allow_rules && !allowed {
        Err(None)
    } else {
        Ok(())
    }
}

/// Whether a caller whose `principals` entry holds `rules` may reach what
/// server `alias` offers beyond tools and prompts (its resources and
/// resource templates): these have no names the rules could pick out, so
/// they follow the rules for the whole server. `Err(Some(rule))` for a
/// deny rule taking the whole server; `Err(None)` when the entry has allow
/// rules and none grants the whole server (a caller narrowed to some
/// tools of it reads none of its resources).
///
/// # Errors
/// The refusal, as described.
pub(crate) fn principal_reaches<'a>(
    rules: &'a [Rule],
    alias: &str,
) -> Result<(), Option<&'a Rule>> {
    let whole = |rule: &&Rule| rule.pattern.alias() == alias && rule.pattern.is_whole_server();
    if let Some(rule) = rules
        .iter()
        .filter(|r| r.kind == RuleKind::Deny)
        .find(whole)
    {
        return Err(Some(rule));
    }
    let allows: Vec<&Rule> = rules.iter().filter(|r| r.kind == RuleKind::Allow).collect();
    if !allows.is_empty() && !allows.iter().any(whole) {
        return Err(None);
    }
    Ok(())
}

/// Whether a caller whose `principals` entry holds `rules` may reach
/// anything of server `alias`: no deny rule takes the whole server, and
/// either the entry has no allow rules or one of them names the server
/// (a tool of it, a prefix, or all of it).
pub(crate) fn principal_reaches_any(rules: &[Rule], alias: &str) -> bool {
    let names = |rule: &&Rule| rule.pattern.alias() == alias;
    let whole_denied = rules
        .iter()
        .filter(|r| r.kind == RuleKind::Deny)
        .filter(names)
        .any(|r| r.pattern.is_whole_server());
    if whole_denied {
        return false;
    }
    let mut allows = rules
        .iter()
        .filter(|r| r.kind == RuleKind::Allow)
        .peekable();
    allows.peek().is_none() || allows.any(|r| r.pattern.alias() == alias)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Pattern;
    use serde_json::json;
    use switchboard_wire::ToolAnnotations;

    fn rule(kind: RuleKind, p: &str) -> Rule {
        Rule {
            kind,
            pattern: Pattern::parse(p).unwrap(),
            source: format!("permissions.{}[0]", kind.key()),
        }
    }

    fn tool(read_only: Option<bool>, destructive: Option<bool>) -> Tool {
        let mut t = Tool::new(
            "wipe",
            "d",
            json!({"type": "object"}).as_object().unwrap().clone(),
        );
        t.annotations = Some(ToolAnnotations {
            read_only_hint: read_only,
            destructive_hint: destructive,
            ..ToolAnnotations::default()
        });
        t
    }

    #[test]
    fn default_is_ask_even_for_read_only_tools() {
        let a = assess(&[], "s", &tool(Some(true), None), &PinState::Unpinned);
        assert_eq!(a.verdict, Verdict::Ask);
        assert!(a.reasons.iter().any(|r| r.contains("not trusted")));
    }

    #[test]
    fn read_only_cannot_waive_destructive() {
        // Both hints at once: the destructive one counts.
        let t = tool(Some(true), Some(true));
        let broad = [rule(RuleKind::Allow, "mcp__s")];
        assert_eq!(
            assess(&broad, "s", &t, &PinState::Pinned).verdict,
            Verdict::Ask
        );
        let wildcard = [rule(RuleKind::Allow, "mcp__s__*")];
        assert_eq!(
            assess(&wildcard, "s", &t, &PinState::Pinned).verdict,
            Verdict::Ask
        );
        // Naming the tool is the user's explicit choice.
        let exact = [rule(RuleKind::Allow, "mcp__s__wipe")];
        let a = assess(&exact, "s", &t, &PinState::Pinned);
        assert_eq!(a.verdict, Verdict::Allow);
        assert_eq!(a.rule.unwrap().0, "permissions.allow[0]");
        // A non-destructive tool is allowed by the broad rule.
        assert_eq!(
            assess(&broad, "s", &tool(None, Some(false)), &PinState::Pinned).verdict,
            Verdict::Allow
        );
    }

    #[test]
    fn annotations_never_relax_deny_or_ask() {
        let t = tool(Some(true), Some(false));
        assert_eq!(
            assess(
                &[rule(RuleKind::Deny, "mcp__s")],
                "s",
                &t,
                &PinState::Pinned
            )
            .verdict,
            Verdict::Deny
        );
        assert_eq!(
            assess(&[rule(RuleKind::Ask, "mcp__s")], "s", &t, &PinState::Pinned).verdict,
            Verdict::Ask
        );
    }

    #[test]
    fn a_changed_pin_turns_allow_into_ask_with_the_diff() {
        let t = tool(None, None);
        let rules = [rule(RuleKind::Allow, "mcp__s__wipe")];
        let changed = PinState::Changed {
            diff: "-old\n+new\n".into(),
        };
        let a = assess(&rules, "s", &t, &changed);
        assert_eq!(a.verdict, Verdict::Ask);
        assert_eq!(a.diff.as_deref(), Some("-old\n+new\n"));
        assert!(a.rule.is_none());
        // Deny stays deny and shows no diff.
        let a = assess(&[rule(RuleKind::Deny, "mcp__s")], "s", &t, &changed);
        assert_eq!(a.verdict, Verdict::Deny);
        assert!(a.diff.is_none());
    }

    #[test]
    fn principal_rules_narrow() {
        let none: Vec<Rule> = Vec::new();
        assert!(principal_allows(&none, "fs", "read").is_ok());
        let rules = vec![
            rule(RuleKind::Allow, "mcp__fs"),
            rule(RuleKind::Deny, "mcp__fs__write"),
        ];
        assert!(principal_allows(&rules, "fs", "read").is_ok());
        let denied = principal_allows(&rules, "fs", "write")
            .unwrap_err()
            .unwrap();
        assert_eq!(denied.pattern.as_str(), "mcp__fs__write");
        assert_eq!(principal_allows(&rules, "git", "log"), Err(None));
        // Deny alone: everything else passes on to the ordinary gate.
        let deny_only = vec![rule(RuleKind::Deny, "mcp__git")];
        assert!(principal_allows(&deny_only, "fs", "write").is_ok());
        assert!(principal_allows(&deny_only, "git", "log").is_err());
    }

    // A server is told of to a caller some of whose rules reach it.
    #[test]
    fn a_server_is_reached_when_any_of_it_is() {
        assert!(principal_reaches_any(&[], "fs"));
        let some = vec![
            rule(RuleKind::Allow, "mcp__fs__read"),
            rule(RuleKind::Deny, "mcp__fs__write"),
        ];
        assert!(principal_reaches_any(&some, "fs"));
        assert!(!principal_reaches_any(&some, "db"));
        let deny_db = vec![rule(RuleKind::Deny, "mcp__db__*")];
        assert!(!principal_reaches_any(&deny_db, "db"));
        assert!(principal_reaches_any(&deny_db, "fs"));
    }

    // Resources follow the rules for the whole server.
    #[test]
    fn a_server_is_reached_when_the_rules_grant_all_of_it() {
        assert!(principal_reaches(&[], "fs").is_ok());
        let whole = vec![
            rule(RuleKind::Allow, "mcp__fs__*"),
            rule(RuleKind::Deny, "mcp__fs__write"),
        ];
        // A tool denied leaves the server's resources readable.
        assert!(principal_reaches(&whole, "fs").is_ok());
        assert_eq!(principal_reaches(&whole, "git"), Err(None));
        // Some tools only: none of its resources.
        let some = vec![rule(RuleKind::Allow, "mcp__fs__read")];
        assert_eq!(principal_reaches(&some, "fs"), Err(None));
        let deny_server = vec![rule(RuleKind::Deny, "mcp__git")];
        let refused = principal_reaches(&deny_server, "git").unwrap_err().unwrap();
        assert_eq!(refused.pattern.as_str(), "mcp__git");
        assert!(principal_reaches(&deny_server, "fs").is_ok());
    }
}
