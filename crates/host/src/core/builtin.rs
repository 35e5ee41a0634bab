//! The host's side of its built-in tools ([`crate::builtin`]): registering
//! and unregistering them (the table is rebuilt, subscribers hear of it),
//! and what sets them apart in the table: no pins, a gate of their own
//! default, always up.

use std::sync::Arc;

use super::{Host, ServerStatus};
use crate::builtin::{ALIAS, BuiltinGate, BuiltinTool};
use crate::config::NewTools;
use crate::gate::{self, Assessment, Verdict};
use crate::permission::Rule;
use crate::pins::PinState;
use crate::table::TableEntry;

impl Host {
    /// Registers a built-in tool, `mcp__switchboard__NAME` (replacing one
    /// of the same name): the table is rebuilt, and subscribers
    /// ([`Host::subscribe`]) hear of the added (or changed) name.
    pub fn register_builtin(&self, tool: Arc<dyn BuiltinTool>) {
        self.inner.builtins.insert(tool);
        self.rebuild_table();
    }

    /// Unregisters the built-in tool `name` (the part after
    /// `mcp__switchboard__`): the table is rebuilt, and subscribers hear
    /// of the removed name. Whether it was registered.
    pub fn unregister_builtin(&self, name: &str) -> bool {
        let removed = self.inner.builtins.remove(name);
        if removed {
            self.rebuild_table();
        }
        removed
    }

    /// The built-in tool behind a table entry, when the entry is one.
    pub(crate) fn builtin_of(&self, entry: &TableEntry) -> Option<Arc<dyn BuiltinTool>> {
        if entry.alias != ALIAS {
            return None;
        }
        self.inner.builtins.get(&entry.tool.name)
    }

    /// How an entry compares with its pin, as the gate and the model's
    /// view take it. A built-in is the host's own definition: never
    /// pinned, never changed. A `new` tool counts as pinned where the
    /// config says new tools are allowed (`"newTools": "allow"`).
    pub(super) fn pin_of(&self, e: &TableEntry, new_tools: NewTools) -> PinState {
        if e.alias == ALIAS {
            return PinState::Pinned;
        }
        match self.inner.pins.state_of(&e.alias, &e.tool, &e.fingerprint) {
            PinState::New if new_tools == NewTools::Allow => PinState::Pinned,
            state => state,
        }
    }

    /// The gate's assessment of a call of `e` under `rules`: a server's
    /// tool as [`gate::assess`] has it, a built-in with its own default
    /// ([`gate::assess_builtin`]).
    pub(super) fn assess(&self, rules: &[Rule], e: &TableEntry, pin: &PinState) -> Assessment {
        match self.builtin_of(e) {
            Some(builtin) => gate::assess_builtin(rules, &e.tool, builtin.gate()),
            None => {
                let mut assessment = gate::assess(rules, &e.alias, &e.tool, pin);
                // Whatever its class, a change is asked about again; the
                // class says how closely to look.
                if matches!(pin, PinState::Changed { .. }) && assessment.verdict != Verdict::Deny {
                    if let Some(class) = self.inner.pins.change_of(&e.alias, &e.tool) {
                        assessment.reasons.push(format!(
                            "a {} change: {}",
                            class.as_str(),
                            class.reasons.join(", ")
                        ));
                    }
                }
                assessment
            }
        }
    }

    /// The gate's verdict on `e` as lists show it: a built-in whose handler
    /// asks its own question ([`BuiltinGate::PerCall`]) shows `ask`.
    pub(super) fn listed_verdict(&self, rules: &[Rule], e: &TableEntry, pin: &PinState) -> Verdict {
        let verdict = self.assess(rules, e, pin).verdict;
        let per_call = self
            .builtin_of(e)
            .is_some_and(|b| b.gate() == BuiltinGate::PerCall);
        if per_call && verdict == Verdict::Allow {
            Verdict::Ask
        } else {
            verdict
        }
    }

    /// The state of the server behind `e`: built-ins are always up.
    pub(super) fn server_status_of(&self, e: &TableEntry) -> ServerStatus {
        if e.alias == ALIAS {
            return ServerStatus::Up;
        }
        self.server_status(&e.alias)
    }
}
