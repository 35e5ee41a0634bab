//! Callers of an authenticated gateway: their `principals` rules, applied
//! to a call before the gate and to the tool list they see.

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
