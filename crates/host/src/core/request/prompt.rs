//! `prompts/get` on the governed path: the catalog routes the served name
//! (`mcp__ALIAS__PROMPT`); the user's deny rules apply to it as to a
//! tool's name (allow and ask rules have nothing to ask about: a prompt
//! runs nothing); the server's texts are cleaned of invisible characters,
//! wrapped in boundary markers and held to the server's result budget
//! like a tool result's (`core/offered_text.rs`).

use switchboard_wire::types::method;
use switchboard_wire::{ContentBlock, GetPromptResult, JsonObject};

use super::outcome::{Decision, End, Governed};
use super::{CallOptions, Kind, Named, OfferError, Start, Target};
use crate::audit::Outcome;
use crate::core::Host;
use crate::permission::{self, RuleKind, RuleVerdict};
use crate::sanitize;

/// One `prompts/get`: a prompt of the catalog by its served name.
struct GetPrompt<'a> {
    name: &'a str,
    arguments: Option<JsonObject>,
}

impl Kind for GetPrompt<'_> {
    type Answer = GetPromptResult;
    type Route = ();
    const METHOD: Option<&'static str> = Some(method::PROMPTS_GET);

    fn named(&self) -> Named<'_> {
        Named::Prompt(self.name)
    }

    fn arguments(&self) -> Option<&JsonObject> {
        self.arguments.as_ref()
    }

    fn refused(&self) -> String {
        format!("getting prompt {} was refused", self.name)
    }

    fn forbidden(&self, principal: &str, _why: &str) -> String {
        format!(
            "The user's permission rules for {principal} do not allow prompt {}.",
            self.name
        )
    }

    async fn route(&self, host: &Host) -> Result<(Target, ()), Governed<GetPromptResult>> {
        match host.target(self.named()) {
            Some(target) => Ok((target, ())),
            None => Err(Governed::unknown(format!(
                "unknown prompt {:?}; prompts/list names the prompts on offer",
                self.name
            ))),
        }
    }

    async fn run(
        self,
        host: &Host,
        (target, ()): (Target, ()),
        options: &CallOptions,
        _start: Start<'_>,
    ) -> Governed<GetPromptResult> {
        let denied = {
            let config = host.config_read();
            match permission::decide(&config.rules, &target.alias, &target.original) {
                RuleVerdict::Matched(rule) if rule.kind == RuleKind::Deny => Some((
                    Decision::denied_by_rule(Some(rule.source.clone())),
                    format!(
                        "The user's permission rules deny {} (rule {} at {}).",
                        self.name, rule.pattern, rule.source
                    ),
                )),
                _ => None,
            }
        };
        if let Some((decision, text)) = denied {
            let end = End::stopped(Outcome::Denied, text);
            return Governed::at(Some(&target), Some(decision), end);
        }
        let target = &target;
        host.ask_server(target, options, |client| async move {
            let result = client
                .get_prompt_with(&target.original, self.arguments, &options.request)
                .await?;
            Ok(host.fit_prompt(&target.alias, cleaned(result)))
        })
        .await
    }
}

/// The server's prompt with its texts stripped of invisible characters.
fn cleaned(mut result: GetPromptResult) -> GetPromptResult {
    result.description = result
        .description
        .as_deref()
        .map(sanitize::clean_description);
    for message in &mut result.messages {
        if let ContentBlock::Text { text, .. } = &mut message.content {
            *text = sanitize::strip_invisible(text).into_owned();
        }
    }
    result
}

impl Host {
    /// Gets the prompt served as `name` from its server, with `arguments`
    /// passed through, on the governed path: the caller's limits and
    /// `principals` rules, the user's deny rules, one audit line (tool =
    /// the served name). Texts are stripped of invisible characters,
    /// wrapped in boundary markers naming the server, and cut to its
    /// result budget with a note, as a tool result's.
    ///
    /// # Errors
    /// [`OfferError`]: an unknown name, a refusal, the server's question
    /// (with `relay_input`), its error, or its failure to answer.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<GetPromptResult, OfferError> {
        let request = GetPrompt { name, arguments };
        self.govern(name, request, &options)
            .await
            .into_offer_result()
    }
}
