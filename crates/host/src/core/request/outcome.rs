//! What one governed request came to ([`Governed`]): where it went, the
//! decision, and how it ended. The audit line ([`Governed::record`]), the
//! observer's event and the caller's answer (a tool's result, or a
//! prompt's, a read's or a completion's [`Result`]) are all derived from
//! it, so they cannot disagree.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use switchboard_client::ClientError;
use switchboard_wire::{
    CallToolResult, CompleteResult, ErrorObject, GetPromptResult, InputRequiredResult,
    ReadResourceResult,
};

use super::Target;
use crate::approver::ApprovalRequest;
use crate::audit::{AuditRecord, Decider, Outcome};
use crate::gate::Verdict;
use crate::observe::{CallEvent, TraceContext};

/// What one governed request came to.
#[derive(Debug)]
pub(crate) struct Governed<T> {
    /// The server's alias, once the name led to one.
    pub(super) alias: Option<String>,
    /// The name (or URI) on the server, once the table or catalog gave it.
    pub(super) original: Option<String>,
    /// The decision, once one was made.
    pub(super) decision: Option<Decision>,
    /// The task the server turned a tool call into (the tasks extension).
    pub(super) task_id: Option<String>,
    /// The gate's question handed back by the approver
    /// ([`Approval::Defer`](crate::Approval::Defer)).
    pub(super) asked: Option<Box<ApprovalRequest>>,
    /// How the request ended.
    pub(super) end: End<T>,
    /// Sent a second time after the connection broke before the answer
    /// (an idempotent tool).
    pub(super) retried: bool,
    /// The caller's identity the request carried to its server
    /// (`exchange:NAME`, `principal:NAME`), when the server takes one.
    pub(super) identity: Option<String>,
}

/// The decision on one request (a question is answered by then).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Decision {
    /// [`Verdict::Allow`] or [`Verdict::Deny`] ([`Verdict::Ask`] for a
    /// question handed back).
    pub(super) verdict: Verdict,
    /// Who decided.
    pub(super) decided_by: Decider,
    /// Where the deciding rule is written, when a rule decided.
    pub(super) rule: Option<String>,
}

impl Decision {
    /// A denial by the rule written at `rule`.
    pub(super) fn denied_by_rule(rule: Option<String>) -> Decision {
        Decision {
            verdict: Verdict::Deny,
            decided_by: Decider::Rule,
            rule,
        }
    }
}

/// How a request ended.
// The answered variant is the common one: boxing it would cost every call
// an allocation to save a few hundred bytes on the stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum End<T> {
    /// The server answered: its result (for a tool, wrapped and within the
    /// budget, `isError` or not).
    Answered(T),
    /// The server asked a question, handed back to the caller.
    InputRequired(Box<InputRequiredResult>),
    /// The host ended the request: what happened, and what the caller
    /// reads.
    Stopped {
        /// As in the audit line.
        outcome: Outcome,
        /// For the caller (a model, for a tool): what happened and what it
        /// can do.
        text: String,
        /// Why the server's sandbox stopped it, when that is why the
        /// request failed (the audit line's `sandbox`).
        sandbox: Option<String>,
    },
    /// The server answered with a JSON-RPC error (or a tool call's task
    /// failed with one): the error, and the text a caller reads.
    Rejected(Box<ErrorObject>, String),
}

impl<T> End<T> {
    pub(super) fn stopped(outcome: Outcome, text: impl Into<String>) -> End<T> {
        End::Stopped {
            outcome,
            text: text.into(),
            sandbox: None,
        }
    }

    /// A stop the server's sandbox caused, with its reason.
    pub(super) fn stopped_by_sandbox(
        outcome: Outcome,
        text: impl Into<String>,
        reason: &str,
    ) -> End<T> {
        End::Stopped {
            outcome,
            text: text.into(),
            sandbox: Some(reason.to_owned()),
        }
    }

    /// The server's failure to answer a request other than a tool call:
    /// its question, its JSON-RPC error, or the failure in the client's
    /// words.
    pub(super) fn failed(error: ClientError) -> End<T> {
        if let ClientError::InputRequired { result, .. } = error {
            return End::InputRequired(result);
        }
        let text = error.to_string();
        let sandbox = error
            .transport_error()
            .and_then(|t| t.sandbox_stop())
            .map(|s| s.reason.clone());
        if let Some(rejected) = error.protocol_error() {
            return End::Rejected(Box::new(rejected.clone()), text);
        }
        let outcome = if error.is_timeout() {
            Outcome::Timeout
        } else if error.is_protocol() {
            Outcome::ProtocolError
        } else {
            Outcome::Transport
        };
        End::Stopped {
            outcome,
            text,
            sandbox,
        }
    }
}

/// A server's answer, as the audit line sees it.
pub(crate) trait Answer: Send {
    /// Whether it reports an error (a tool's `isError`).
    fn is_error(&self) -> bool {
        false
    }
}

impl Answer for CallToolResult {
    fn is_error(&self) -> bool {
        CallToolResult::is_error(self)
    }
}

impl Answer for GetPromptResult {}

impl Answer for ReadResourceResult {}

impl Answer for CompleteResult {}

impl<T> Governed<T> {
    /// A request that ended before it reached a server.
    pub(super) fn unrouted(end: End<T>) -> Governed<T> {
        Governed {
            alias: None,
            original: None,
            decision: None,
            task_id: None,
            asked: None,
            end,
            retried: false,
            identity: None,
        }
    }

    /// A request naming nothing on offer: `text` says what is unknown and
    /// where the caller finds what is.
    pub(super) fn unknown(text: impl Into<String>) -> Governed<T> {
        Governed::unrouted(End::stopped(Outcome::UnknownTool, text))
    }

    /// The answer to a reference to `template` that no server offers.
    pub(super) fn unknown_template(template: &str) -> Governed<T> {
        Governed::unknown(format!(
            "unknown resource template {template:?}; resources/templates/list names them"
        ))
    }

    /// A request that ended at `target` (or before, without one).
    pub(super) fn at(target: Option<&Target>, decision: Option<Decision>, end: End<T>) -> Self {
        Governed {
            alias: target.map(|t| t.alias.clone()),
            original: target.map(|t| t.original.clone()),
            decision,
            ..Governed::unrouted(end)
        }
    }

    /// Who allowed or denied the request ([`Decider::None`] when no one
    /// had to).
    pub(super) fn decided_by(&self) -> Decider {
        self.decision
            .as_ref()
            .map_or(Decider::None, |d| d.decided_by.clone())
    }
}

impl<T: Answer> Governed<T> {
    /// The audit line's outcome.
    pub(super) fn outcome(&self) -> Outcome {
        match &self.end {
            End::Answered(result) if result.is_error() => Outcome::ToolError,
            End::Answered(_) => Outcome::Ok,
            End::InputRequired(_) => Outcome::InputRequired,
            End::Stopped { outcome, .. } => *outcome,
            End::Rejected(..) => Outcome::ProtocolError,
        }
    }

    /// Fills in the audit line: where the request went, the decision, the
    /// outcome and `isError`.
    pub(super) fn record(&self, record: &mut AuditRecord) {
        record.alias.clone_from(&self.alias);
        record.original_tool.clone_from(&self.original);
        if let Some(decision) = &self.decision {
            record.decision = Some(decision.verdict.as_str().to_owned());
            record.decided_by = decision.decided_by.clone();
            record.rule.clone_from(&decision.rule);
        }
        record.task_id.clone_from(&self.task_id);
        record.retried = self.retried;
        if let End::Stopped { sandbox, .. } = &self.end {
            record.sandbox.clone_from(sandbox);
        }
        record.outcome = self.outcome();
        record.is_error = match &self.end {
            End::Answered(result) => result.is_error(),
            End::InputRequired(_) => false,
            End::Stopped { .. } | End::Rejected(..) => true,
        };
    }

    /// What an observer hears of the request.
    pub(super) fn event<'a>(
        &'a self,
        tool: &'a str,
        (started, duration): (SystemTime, Duration),
        trace: Option<&'a TraceContext>,
    ) -> CallEvent<'a> {
        CallEvent {
            tool,
            alias: self.alias.as_deref(),
            original_tool: self.original.as_deref(),
            // A rule decides without asking; anyone else was asked.
            gate: self.decision.as_ref().map(|d| match d.decided_by {
                Decider::Rule => d.verdict,
                _ => Verdict::Ask,
            }),
            decision: self.decision.as_ref().map(|d| d.verdict),
            decided_by: self.decided_by(),
            outcome: self.outcome(),
            started,
            duration,
            trace,
        }
    }

    /// The answer of a request other than a tool call: the server's
    /// result, or why there is none.
    ///
    /// # Errors
    /// The [`OfferError`] the end comes to.
    pub(super) fn into_offer_result(self) -> Result<T, OfferError> {
        match self.end {
            End::Answered(result) => Ok(result),
            End::InputRequired(asked) => Err(OfferError::InputRequired(asked)),
            End::Rejected(error, text) => Err(OfferError::Rejected { error, text }),
            End::Stopped {
                outcome: Outcome::UnknownTool,
                text,
                ..
            } => Err(OfferError::Unknown(text)),
            End::Stopped { outcome, text, .. } if outcome.is_refusal() => {
                Err(OfferError::Refused { outcome, text })
            }
            End::Stopped { outcome, text, .. } => Err(OfferError::Failed { outcome, text }),
        }
    }
}

/// Why a prompt get, a read or a completion has no answer. Each one was
/// audited as it ended (its outcome is the audit line's); the texts are
/// the host's words for the caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfferError {
    /// Nothing is served under the name, URI or template asked for.
    #[error("{0}")]
    Unknown(String),
    /// Refused by policy: the user's deny rules, the caller's `principals`
    /// rules ([`Outcome::Denied`]) or its limits ([`Outcome::Limited`]).
    /// The server never heard of it.
    #[error("{text}")]
    Refused {
        /// Denied or limited, as in the audit line.
        outcome: Outcome,
        /// Which rule or limit, in words.
        text: String,
    },
    /// The server asked a question before it can answer, handed back to
    /// the caller (`relay_input` in [`CallOptions::request`]).
    ///
    /// [`CallOptions::request`]: crate::CallOptions::request
    #[error("the server asked a question before it can answer; it was handed to the caller")]
    InputRequired(Box<InputRequiredResult>),
    /// The server answered with a JSON-RPC error.
    #[error("{text}")]
    Rejected {
        /// The server's error, verbatim.
        error: Box<ErrorObject>,
        /// The same, in words.
        text: String,
    },
    /// The server could not be reached, or did not answer properly
    /// (transport, timeout, protocol error, authorization).
    #[error("{text}")]
    Failed {
        /// As in the audit line.
        outcome: Outcome,
        /// What went wrong.
        text: String,
    },
}
