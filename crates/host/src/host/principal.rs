//! Callers of an authenticated gateway: their `principals` rules, applied
//! to a call before the gate and to the tool list they see, and to the
//! prompts and resources they may list and use.

use super::Host;
use crate::gate;

impl Host {
    /// Whether `principal` may call the table's tool `local_name` as far as
    /// its `principals` rules go (see [`gate::principal_allows`]): `false`
    /// for a tool they refuse or a name not in the table. The ordinary
    /// rules and approvals still apply to a call this allows.
    pub fn principal_may_call(&self, principal: &str, local_name: &str) -> bool {
        let table = self.table();
        let Some(entry) = table.get(local_name) else {
            return false;
        };
        self.principal_refusal(principal, &entry.alias, &entry.tool.name)
            .is_none()
    }

    /// Whether `principal` may list and get the catalog's prompt `name` (a
    /// served name, `mcp__ALIAS__PROMPT`): its `principals` rules apply to
    /// a prompt's name as to a tool's. `false` for a name not in the
    /// catalog.
    pub fn principal_may_use_prompt(&self, principal: &str, name: &str) -> bool {
        let catalog = self.catalog();
        let Some(prompt) = catalog.prompt(name) else {
            return false;
        };
        self.principal_refusal(principal, &prompt.alias, &prompt.original_name)
            .is_none()
    }

    /// Whether `principal` has a `principals` entry (rules or limits) that
    /// could narrow what it uses.
    pub fn principal_has_rules(&self, principal: &str) -> bool {
        self.config_read().principals.contains_key(principal)
    }

    /// Whether `principal` may list and read server `alias`'s resources and
    /// resource templates (and complete their arguments): see
    /// [`gate::principal_reaches`].
    pub fn principal_may_reach(&self, principal: &str, alias: &str) -> bool {
        let config = self.config_read();
        config
            .principals
            .get(principal)
            .is_none_or(|rules| gate::principal_reaches(rules, alias).is_ok())
    }

    /// The refusal of `principal`'s rules for tool `original` of `alias`:
    /// `Some(rule)` with the refusing rule's place (`None` inside when no
    /// allow rule names the tool); `None` when they let the call through.
    pub(super) fn principal_refusal(
        &self,
        principal: &str,
        alias: &str,
        original: &str,
    ) -> Option<Option<(String, String)>> {
        let config = self.config_read();
        let rules = config.principals.get(principal)?;
        gate::principal_allows(rules, alias, original)
            .err()
            .map(|rule| rule.map(|r| (r.source.clone(), r.pattern.to_string())))
    }
}
