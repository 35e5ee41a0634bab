//! Prompt and resource text held to the same rules as a tool result: the
//! server's text inside boundary markers naming the server, cleaned of
//! invisible characters, and cut to the server's result budget
//! (`budgetChars`, per server or global) with one note, outside the
//! markers, saying how much was cut. Binary contents and images pass as
//! they came.

use switchboard_wire::{ContentBlock, GetPromptResult, PromptMessage, ReadResourceResult};

use super::Host;
use crate::budget::{Allowance, Budget};
use crate::sanitize;

impl Host {
    /// The budget a prompt's or resource's text of `alias` is held to.
    fn offered_allowance(&self, alias: &str) -> Allowance {
        Budget::new(self.config_read().budget_chars(alias, "")).allowance()
    }

    /// `result` of a `resources/read` on `alias`, its text contents
    /// wrapped and cut to the budget (the note ends the last text kept).
    pub(in crate::core) fn fit_resource(
        &self,
        alias: &str,
        mut result: ReadResourceResult,
    ) -> ReadResourceResult {
        let mut allowance = self.offered_allowance(alias);
        let contents = std::mem::take(&mut result.contents);
        for mut c in contents {
            match c.text.take() {
                None => result.contents.push(c),
                Some(text) => {
                    if let Some(kept) =
                        allowance.take(sanitize::strip_invisible(&text).into_owned())
                    {
                        c.text = Some(sanitize::wrap(alias, None, &kept));
                        result.contents.push(c);
                    }
                }
            }
        }
        if let Some(note) = allowance.cut_note() {
            let note = format!("[switchboard: {note}]");
            match result
                .contents
                .iter_mut()
                .rev()
                .find_map(|c| c.text.as_mut())
            {
                Some(text) => {
                    text.push('\n');
                    text.push_str(&note);
                }
                None => {
                    if let Some(first) = result.contents.first_mut() {
                        first.text = Some(note);
                    }
                }
            }
        }
        result
    }

    /// `result` of a `prompts/get` on `alias`, its texts (text messages and
    /// embedded text resources) wrapped and cut to the budget; a message
    /// with nothing left is dropped, and the note ends the last text kept
    /// (or is a user message of its own).
    pub(in crate::core) fn fit_prompt(
        &self,
        alias: &str,
        mut result: GetPromptResult,
    ) -> GetPromptResult {
        let mut allowance = self.offered_allowance(alias);
        let present = |text: String| sanitize::wrap(alias, None, &text);
        let messages = std::mem::take(&mut result.messages);
        for mut message in messages {
            let keep = match &mut message.content {
                ContentBlock::Text { text, .. } => {
                    let taken = allowance.take(sanitize::strip_invisible(text).into_owned());
                    taken.map(|kept| *text = present(kept)).is_some()
                }
                ContentBlock::Resource { resource, .. } => match resource.text.take() {
                    None => true,
                    Some(text) => {
                        let taken = allowance.take(sanitize::strip_invisible(&text).into_owned());
                        taken
                            .map(|kept| resource.text = Some(present(kept)))
                            .is_some()
                    }
                },
                _ => true,
            };
            if keep {
                result.messages.push(message);
            }
        }
        if let Some(note) = allowance.cut_note() {
            let note = format!("[switchboard: {note}]");
            let last = result
                .messages
                .iter_mut()
                .rev()
                .find_map(|m| match &mut m.content {
                    ContentBlock::Text { text, .. } => Some(text),
                    _ => None,
                });
            match last {
                Some(text) => {
                    text.push('\n');
                    text.push_str(&note);
                }
                None => result.messages.push(PromptMessage {
                    role: "user".into(),
                    content: ContentBlock::text(note),
                    extra: Default::default(),
                }),
            }
        }
        result
    }
}
