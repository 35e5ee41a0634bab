//! A call of a built-in tool ([`crate::builtin`]) on the governed path:
//! routed through the table like any tool, past the caller's limits and
//! `principals` rules, then the gate with the tool's own default (the
//! approver when it asks), then its handler in this process instead of a
//! server; the result is held to the shared budget, and the one audit
//! line is written by the path as for every request.

use std::sync::Arc;

use switchboard_wire::{CallToolResult, JsonObject};

use super::outcome::{Decision, End, Governed};
use super::tool::Gate;
use super::{CallOptions, Target};
use crate::audit::Outcome;
use crate::builtin::{BuiltinCall, BuiltinEnd, BuiltinTool};
use crate::core::Host;
use crate::pins::PinState;
use crate::table::TableEntry;

/// One built-in call, as the tool path hands it on: the model-facing
/// name, the table entry, the tool, and the arguments.
pub(super) type BuiltinRequest<'a> = (
    &'a str,
    &'a TableEntry,
    Arc<dyn BuiltinTool>,
    Option<JsonObject>,
);

impl Host {
    /// The gate and the handler of a built-in call routed to `target`.
    pub(super) async fn run_builtin(
        &self,
        (local_name, entry, builtin, arguments): BuiltinRequest<'_>,
        target: &Target,
        options: &CallOptions,
    ) -> Governed<CallToolResult> {
        let (decision, gate) = self
            .decide(
                local_name,
                entry,
                &PinState::Pinned,
                arguments.as_ref(),
                options,
            )
            .await;
        let (decision, end, asked) = match gate {
            Gate::Refuse(text) => (decision, End::stopped(Outcome::Denied, text), None),
            Gate::Defer(request) => (decision, asked_end(local_name), Some(request)),
            Gate::Pass => {
                let call = BuiltinCall {
                    host: self,
                    local_name,
                    arguments,
                    options,
                };
                let outcome = builtin.call(call).await;
                // A handler that asked its own question decided the call.
                let decision = outcome.decision.map_or(decision, |d| Decision {
                    verdict: d.verdict,
                    decided_by: d.decided_by,
                    rule: d.rule,
                });
                match outcome.end {
                    BuiltinEnd::Result(result) => (
                        decision,
                        End::Answered(self.inner.budget.apply(result)),
                        None,
                    ),
                    BuiltinEnd::Denied(text) => {
                        (decision, End::stopped(Outcome::Denied, text), None)
                    }
                    BuiltinEnd::Asked(request) => (decision, asked_end(local_name), Some(request)),
                }
            }
        };
        Governed {
            asked,
            ..Governed::at(Some(target), Some(decision), end)
        }
    }
}

/// The end of a call whose question was handed back.
fn asked_end(local_name: &str) -> End<CallToolResult> {
    End::stopped(
        Outcome::Asked,
        format!(
            "{local_name} needs the user's approval, which has been asked for; the call did not run."
        ),
    )
}
