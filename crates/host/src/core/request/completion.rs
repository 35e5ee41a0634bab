//! `completion/complete` on the governed path: the reference (a served
//! prompt, or a served resource template) is routed through the catalog
//! to its server, with the server's names; a server that does not declare
//! `completions` suggests nothing.

use serde_json::Value;
use switchboard_wire::types::method;
use switchboard_wire::{CompleteResult, JsonObject};

use super::outcome::{End, Governed};
use super::{CallOptions, Kind, Named, OfferError, Start, Target};
use crate::core::Host;

/// What a completion is for: an argument of a served prompt, or a variable
/// of a served resource template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionRef<'a> {
    /// A prompt, by its served name (`ref/prompt`).
    Prompt(&'a str),
    /// A resource template, by its served `uriTemplate` (`ref/resource`).
    Template(&'a str),
}

/// One `completion/complete`.
struct Complete<'a> {
    reference: CompletionRef<'a>,
    argument: &'a str,
    value: &'a str,
    context: Option<JsonObject>,
    /// The argument and its value so far, as the audit line hashes them.
    audited: JsonObject,
}

impl<'a> Complete<'a> {
    /// The served name of the prompt or template completed.
    fn name(&self) -> &'a str {
        match self.reference {
            CompletionRef::Prompt(name) | CompletionRef::Template(name) => name,
        }
    }
}

impl Kind for Complete<'_> {
    type Answer = CompleteResult;
    type Route = ();
    const METHOD: Option<&'static str> = Some(method::COMPLETE);

    fn named(&self) -> Named<'_> {
        match self.reference {
            CompletionRef::Prompt(name) => Named::Prompt(name),
            CompletionRef::Template(template) => Named::Template(template),
        }
    }

    fn arguments(&self) -> Option<&JsonObject> {
        Some(&self.audited)
    }

    fn refused(&self) -> String {
        format!("completing {} was refused", self.name())
    }

    fn forbidden(&self, principal: &str, _why: &str) -> String {
        let what = match self.reference {
            CompletionRef::Prompt(name) => format!("prompt {name}"),
            CompletionRef::Template(template) => format!("resource {template}"),
        };
        format!("The user's permission rules for {principal} do not allow {what}.")
    }

    async fn route(&self, host: &Host) -> Result<(Target, ()), Governed<CompleteResult>> {
        if let Some(target) = host.target(self.named()) {
            return Ok((target, ()));
        }
        Err(match self.reference {
            CompletionRef::Prompt(name) => Governed::unknown(format!(
                "unknown prompt {name:?}; prompts/list names the prompts on offer"
            )),
            CompletionRef::Template(template) => Governed::unknown_template(template),
        })
    }

    async fn run(
        self,
        host: &Host,
        (target, ()): (Target, ()),
        options: &CallOptions,
        _start: Start<'_>,
    ) -> Governed<CompleteResult> {
        if !host.catalog().completes(&target.alias) {
            let nothing = CompleteResult {
                completion: switchboard_wire::Completion::default(),
                header: switchboard_wire::types::ResultHeader::complete(),
            };
            return Governed::at(Some(&target), None, End::Answered(nothing));
        }
        let reference = match self.reference {
            CompletionRef::Prompt(_) => {
                serde_json::json!({"type": "ref/prompt", "name": target.original})
            }
            CompletionRef::Template(_) => {
                serde_json::json!({"type": "ref/resource", "uri": target.original})
            }
        };
        host.ask_server(&target, options, |client| async move {
            client
                .complete_with(
                    reference,
                    self.argument,
                    self.value,
                    self.context,
                    &options.request,
                )
                .await
        })
        .await
    }
}

impl Host {
    /// Completes `argument` (its value so far: `value`) of a served prompt
    /// or resource template through the owning server, on the governed
    /// path: the caller's limits and `principals` rules, one audit line
    /// (tool = the served name; the argument and value hashed). `context`
    /// holds arguments already given. A server that does not declare
    /// `completions` suggests nothing.
    ///
    /// # Errors
    /// [`OfferError`]: an unknown prompt or template, a refusal, the
    /// server's error, or its failure to answer.
    pub async fn complete(
        &self,
        reference: CompletionRef<'_>,
        (argument, value): (&str, &str),
        context: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<CompleteResult, OfferError> {
        let mut audited = JsonObject::new();
        audited.insert(argument.to_owned(), Value::from(value));
        let request = Complete {
            reference,
            argument,
            value,
            context,
            audited,
        };
        let name = request.name();
        self.govern(name, request, &options)
            .await
            .into_offer_result()
    }
}
