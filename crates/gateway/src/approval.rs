//! Approvals without a terminal: the gate's question put to the upstream
//! client's user through elicitation, or denied with a text saying how to
//! allow the tool.

use serde::Deserialize;
use serde_json::json;
use switchboard_host::approver::BoxFuture;
use switchboard_host::{Approval, ApprovalRequest, Approver, Decider, Host, Verdict};
use switchboard_server::{Elicitation, InputRequired};

/// The key of the approval question in `inputRequests`.
pub(crate) const APPROVAL_KEY: &str = "switchboard_approval";

/// The answer to the approval question, as the form returns it.
#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalForm {
    /// Whether the user allowed the call.
    #[serde(default)]
    pub(crate) approve: bool,
}

/// Whether the gate would ask about `name` (a pin change asks too).
pub(crate) fn gate_asks(host: &Host, name: &str) -> bool {
    host.tools()
        .iter()
        .find(|t| t.name == name)
        .is_some_and(|t| t.status.gate == Verdict::Ask)
}

/// The elicitation that puts the gate's question to the upstream user.
pub(crate) fn ask(name: &str, arguments: Option<&switchboard_wire::JsonObject>) -> InputRequired {
    let args =
        serde_json::to_string_pretty(&arguments.cloned().unwrap_or_default()).unwrap_or_default();
    let message = format!("Switchboard: allow the tool call {name} with these arguments?\n{args}");
    InputRequired::new()
        .elicit(
            APPROVAL_KEY,
            Elicitation::form(
                message,
                json!({
                    "type": "object",
                    "properties": {
                        "approve": {
                            "type": "boolean",
                            "title": "Allow this call",
                            "default": false
                        }
                    },
                    "required": ["approve"]
                }),
            ),
        )
        .state(json!({ "tool": name }))
}

/// An answer already given (through elicitation).
#[derive(Debug)]
pub(crate) struct Answered(pub(crate) Approval);

impl Approver for Answered {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let answer = self.0.clone();
        Box::pin(async move { answer })
    }
}

/// No one upstream can be asked: deny, saying how to allow the tool.
#[derive(Debug)]
pub(crate) struct NoOneUpstream;

impl Approver for NoOneUpstream {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let place = request
            .config_file
            .clone()
            .unwrap_or_else(|| "the config".into());
        let text = format!(
            "This call needs the user's approval, and the gateway cannot ask: its client does not support elicitation. \
             The user can allow the tool by adding {:?} to permissions.allow in {place}, or start the gateway with `switchboard serve --yes`.",
            request.suggested_rule
        );
        Box::pin(async move { Approval::Deny(Some(text)) })
    }

    fn decider(&self) -> Decider {
        Decider::NoApprover
    }
}
