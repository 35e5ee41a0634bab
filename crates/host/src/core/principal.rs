//! Callers of an authenticated gateway: their `principals` rules, asked
//! about what a request names ([`Named`]). The rules step of every
//! governed request asks them, and so do the lists a gateway shows each
//! caller, so that what a caller is listed and what it may use agree.

use super::Host;
use super::request::{Named, Target};
use crate::gate;
use crate::permission::{Rule, RuleKind};

impl Host {
    /// Whether `principal` may reach `named` as far as its `principals`
    /// rules go: a tool's or prompt's name as the rules name tools
    /// (`gate::principal_allows`), a resource or template as its whole
    /// server (`gate::principal_reaches`). A caller without an entry
    /// may reach anything, or nothing under `"principalsDefault":
    /// "deny"`; for one with an entry, a name neither the table nor the
    /// catalog holds is refused. The ordinary rules, approvals and limits
    /// still apply to a request this allows.
    pub fn principal_may(&self, principal: &str, named: Named<'_>) -> bool {
        let config = self.config_read();
        let Some(rules) = config.principals.get(principal) else {
            return !config.principals_default_deny;
        };
        if let Named::Skill { server, uri } = named {
            drop(config);
            let path = crate::skills::skill_path(uri);
            return self.server(server).is_some()
                && self.principal_may_skill(principal, server, path);
        }
        self.looked_up(named, |alias, original, by_name| {
            refusal(rules, alias, original, by_name).is_none()
        })
        .unwrap_or(false)
    }

    /// Whether `principal` may reach the skill `path` of server `alias`
    /// as far as its `principals` rules go: a deny rule naming the skill
    /// (`skill:ALIAS:…`) or the whole server refuses; with allow rules, a
    /// skill rule or a rule granting the whole server must take it in. A
    /// caller without an entry may reach every skill, or none under
    /// `"principalsDefault": "deny"`.
    pub fn principal_may_skill(&self, principal: &str, alias: &str, path: &str) -> bool {
        let config = self.config_read();
        let Some(rules) = config.principals.get(principal) else {
            return !config.principals_default_deny;
        };
        let takes = |r: &&Rule| {
            r.pattern.matches_skill(alias, path)
                || (r.pattern.alias() == alias && r.pattern.is_whole_server())
        };
        if rules
            .iter()
            .filter(|r| r.kind == RuleKind::Deny)
            .any(|r| takes(&r))
        {
            return false;
        }
        let mut allows = rules
            .iter()
            .filter(|r| r.kind == RuleKind::Allow)
            .peekable();
        allows.peek().is_none() || allows.any(|r| takes(&r))
    }

    /// Whether `principal` may call the table's tool `local_name` as far as
    /// its `principals` rules go: [`Host::principal_may`] for a tool, and
    /// `false` for a name not in the table.
    pub fn principal_may_call(&self, principal: &str, local_name: &str) -> bool {
        self.looked_up(Named::Tool(local_name), |_, _, _| ())
            .is_some()
            && self.principal_may(principal, Named::Tool(local_name))
    }

    /// Whether `principal` may reach anything of server `alias` as far as
    /// its `principals` rules go: some tool or prompt of it
    /// (`gate::principal_allows` could let one through), or its
    /// resources. What a gateway tells that caller about the server (its
    /// status, its outages) follows this: a caller is told nothing of a
    /// server it cannot use. A caller without an entry reaches every
    /// server, or none under `"principalsDefault": "deny"`.
    pub fn principal_may_reach(&self, principal: &str, alias: &str) -> bool {
        let config = self.config_read();
        let Some(rules) = config.principals.get(principal) else {
            return !config.principals_default_deny;
        };
        gate::principal_reaches_any(rules, alias)
    }

    /// The refusal of `principal`'s rules for `target`: `Some(rule)` with
    /// the refusing rule's place and pattern (`None` inside when no allow
    /// rule grants it; [`PRINCIPALS_DEFAULT`] for a caller without an entry
    /// under `"principalsDefault": "deny"`); `None` when they let it
    /// through.
    pub(super) fn principal_rule(
        &self,
        principal: &str,
        target: &Target,
    ) -> Option<Option<(String, String)>> {
        if target.skill {
            // Asked by the skill request's route, which knows the skill.
            return None;
        }
        let config = self.config_read();
        let Some(rules) = config.principals.get(principal) else {
            return config
                .principals_default_deny
                .then(|| Some((PRINCIPALS_DEFAULT.to_owned(), "deny".to_owned())));
        };
        refusal(rules, &target.alias, &target.original, target.by_name)
            .map(|rule| rule.map(|r| (r.source.clone(), r.pattern.as_str().to_owned())))
    }
}

/// Where the refusal of a caller without a `principals` entry comes from,
/// under `"principalsDefault": "deny"` (the audit line's `rule`).
pub(super) const PRINCIPALS_DEFAULT: &str = "principalsDefault";

/// The refusal of a caller's `rules` for `original` of server `alias`
/// (picked out `by_name`, or by its whole server): `Some` with the
/// refusing rule, if any; `None` when they let it through.
fn refusal<'r>(
    rules: &'r [Rule],
    alias: &str,
    original: &str,
    by_name: bool,
) -> Option<Option<&'r Rule>> {
    let refused = if by_name {
        gate::principal_allows(rules, alias, original)
    } else {
        gate::principal_reaches(rules, alias)
    };
    refused.err()
}
