//! Approvals without a terminal: the gate's question put to the upstream
//! client's user through elicitation, or denied with a text saying how to
//! allow the tool.

use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_host::BoxFuture;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, Decider, HIDDEN_NOTICE, show_arguments, show_invisible,
};
use switchboard_server::{Elicitation, InputRequired};

use crate::console::Approvals;

/// The key of the approval question in `inputRequests`.
pub(crate) const APPROVAL_KEY: &str = "switchboard_approval";

/// The answer to the approval question, as the form returns it.
#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalForm {
    /// Whether the user allowed the call.
    #[serde(default)]
    pub(crate) approve: bool,
}

/// The elicitation that puts the gate's question to the upstream user:
/// the tool, the exact arguments, and why the gate asks (a changed
/// definition's diff included: the user is the reviewer). Invisible and
/// text-direction characters in the arguments, reasons and diff are
/// shown escaped ([`show_invisible`]), with a sentence saying
/// the arguments held some: the question shows what will run.
pub(crate) fn ask(
    name: &str,
    arguments: &Value,
    request: Option<&ApprovalRequest>,
) -> InputRequired {
    let args = show_arguments(arguments);
    let mut message = format!(
        "Switchboard: allow the tool call {name} with these arguments?\n{}",
        args.text
    );
    if args.escaped {
        message.push('\n');
        message.push_str(HIDDEN_NOTICE);
    }
    if let Some(request) = request {
        for reason in &request.reasons {
            message.push_str("\nWhy asked: ");
            message.push_str(&show_invisible(reason).text);
        }
        if let Some(diff) = &request.diff {
            message.push_str("\nThe tool's definition changed since it was approved:\n");
            message.push_str(&show_invisible(diff).text);
        }
    }
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

/// The gate's question as a link to the console's approval page for
/// this call (URL elicitation, for a client that cannot show a form): the
/// retry's sealed `requestState` names the approval `id`, which the
/// console's decision is redeemed by (`console::approvals`).
pub(crate) fn ask_url(name: &str, id: &str, url: &str) -> InputRequired {
    InputRequired::new()
        .elicit(
            APPROVAL_KEY,
            Elicitation::url(
                format!(
                    "Switchboard: the tool call {name} needs a person's approval. Open the link to approve or deny it in the gateway's console, then continue."
                ),
                url,
            ),
        )
        .state(json!({ "tool": name, "approval": id }))
}

/// The gate's question about `request` (a call of `name` by `caller`),
/// as the upstream client can take it: a link to the console's page for
/// this call when `console` is given (the client opens URLs but shows no
/// forms, and the console is served), else the form.
pub(crate) async fn question(
    name: &str,
    request: &ApprovalRequest,
    caller: Option<&str>,
    console: Option<&Approvals>,
) -> InputRequired {
    if let Some(approvals) = console {
        if let Some((id, url)) = approvals.open(request, caller).await {
            return ask_url(name, &id, &url);
        }
    }
    ask(name, &request.arguments, Some(request))
}

/// The upstream user can be asked: the host hands the gate's question back
/// ([`Approval::Defer`]) and the gateway turns it into an elicitation.
#[derive(Debug)]
pub(crate) struct AskUpstream;

impl Approver for AskUpstream {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async { Approval::Defer })
    }

    fn decider(&self) -> Decider {
        Decider::Upstream
    }
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
        // The file's name only: its folder (a home directory, a user
        // name) is not the caller's to learn.
        let place = request
            .config_file
            .as_deref()
            .and_then(|path| std::path::Path::new(path).file_name())
            .map_or_else(
                || "the gateway's config".to_owned(),
                |name| format!("the gateway's config file ({})", name.to_string_lossy()),
            );
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
