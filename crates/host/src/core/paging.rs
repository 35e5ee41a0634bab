//! A server's result fitted to its budget (per tool, per server, else
//! `budgetChars`): under it, as before; over it, kept whole in the
//! session's [`ResultStore`](crate::results::ResultStore) and shown as its
//! head and its tail within the budget, with a note naming the handle
//! `mcp__switchboard__read_result` reads the rest by.

use std::borrow::Cow;
use std::sync::Arc;

use switchboard_wire::{CallToolResult, ContentBlock, ResourceContents};
use tracing::warn;

use super::Host;
use crate::budget::Budget;
use crate::builtin::{READ_RESULT, ReadResult};
use crate::sanitize;

impl Host {
    /// Fits a server's `result` of `local_name` (`original` on `alias`) to
    /// its budget, keeping it whole for `principal` when it is over.
    pub(super) fn fit_result(
        &self,
        result: CallToolResult,
        (alias, local_name, original): (&str, &str, &str),
        principal: Option<&str>,
    ) -> CallToolResult {
        let chars = self.config_read().budget_chars(alias, original);
        let budget = Budget::new(chars).with_media_bytes(self.inner.budget.media_bytes());
        let present = |text: String| {
            sanitize::wrap(alias, Some(local_name), &sanitize::strip_invisible(&text))
        };
        // The text is only put together when it is over the budget.
        let parts = result_parts(&result);
        let total = joined_chars(&parts);
        if total <= chars || chars == 0 {
            return budget.apply_with(result, present);
        }
        let text = parts.join("\n");
        // The head and the tail within the budget; the middle is what
        // read_result is for.
        let head_chars = chars * 2 / 3;
        let tail_chars = chars - head_chars;
        let head: String = text.chars().take(head_chars).collect();
        let tail: String = text.chars().skip(total - tail_chars).collect();
        let lines = text.lines().count().max(1);
        let kept = match self.inner.results.keep(principal, alias, local_name, text) {
            Ok(kept) => kept,
            Err(e) => {
                warn!(error = %e, tool = %local_name, "a result over its budget could not be kept; it is cut");
                return budget.apply_with(result, present);
            }
        };
        self.enable_read_result();
        let media: Vec<ContentBlock> = result
            .content
            .iter()
            .filter(|b| !is_text(b))
            .cloned()
            .collect();
        let parts = media.len();
        let shown = CallToolResult {
            content: [ContentBlock::text(head), ContentBlock::text(tail)]
                .into_iter()
                .chain(media)
                .collect(),
            ..result
        };
        let mut fitted = budget.apply_with(shown, present);
        let skipped = total - head_chars - tail_chars;
        fitted.content.insert(
            1,
            ContentBlock::text(format!(
                "[switchboard: {skipped} characters not shown here (characters {head_chars} to {})]",
                total - tail_chars
            )),
        );
        let media_note = match parts {
            0 => String::new(),
            n => format!(" Its {n} non-text part(s) are passed on as they are."),
        };
        fitted.content.push(ContentBlock::text(format!(
            "[switchboard: this result has {total} characters ({lines} lines), over the budget of {chars}: \
             shown are its first {head_chars} and its last {tail_chars}. It is kept whole for this session: \
             call mcp__switchboard__{READ_RESULT} with {{\"handle\": \"{h}\", \"offset\": {head_chars}}} \
             (and optionally \"length\") to read on, or {{\"handle\": \"{h}\", \"grep\": \"TEXT\"}} for the \
             lines containing TEXT with their line numbers.{media_note}]",
            h = kept.handle,
        )));
        fitted
    }

    /// Offers `mcp__switchboard__read_result` (once a result was kept).
    pub(crate) fn enable_read_result(&self) {
        if self.inner.builtins.get(READ_RESULT).is_none() {
            self.register_builtin(Arc::new(ReadResult));
        }
    }

    /// The results kept for this session.
    pub(crate) fn results(&self) -> &crate::results::ResultStore {
        &self.inner.results
    }
}

/// Whether a block is text as the budget counts it (text, an embedded
/// text resource, a resource link).
fn is_text(block: &ContentBlock) -> bool {
    matches!(
        block,
        ContentBlock::Text { .. }
            | ContentBlock::ResourceLink { .. }
            | ContentBlock::Resource {
                resource: ResourceContents { text: Some(_), .. },
                ..
            }
    )
}

/// How many characters `parts` joined by newlines would have, without
/// joining them.
fn joined_chars(parts: &[Cow<'_, str>]) -> usize {
    parts.iter().map(|p| p.chars().count()).sum::<usize>() + parts.len().saturating_sub(1)
}

/// A result's text, as the budget counts it and `read_result` reads it:
/// its text blocks, embedded text resources and resource links (as the
/// line the budget shows for them), to be joined by newlines.
fn result_parts(result: &CallToolResult) -> Vec<Cow<'_, str>> {
    let mut parts = Vec::with_capacity(result.content.len());
    for block in &result.content {
        match block {
            ContentBlock::Text { text, .. } => parts.push(Cow::Borrowed(text.as_str())),
            ContentBlock::Resource {
                resource:
                    ResourceContents {
                        text: Some(text), ..
                    },
                ..
            } => parts.push(Cow::Borrowed(text.as_str())),
            ContentBlock::ResourceLink { fields } => {
                let field = |k: &str| {
                    fields
                        .get(k)
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                parts.push(Cow::Owned(format!(
                    "[resource link: {} {}]",
                    field("uri"),
                    field("name")
                )));
            }
            _ => {}
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget's boundary: the count without joining is the count of
    /// the joined text, so a result exactly at its budget is left whole
    /// and one character more is paged.
    #[test]
    fn the_unjoined_count_is_the_joined_one() {
        let shapes: [&[&str]; 7] = [
            &[],
            &[""],
            &["", ""],
            &["abc"],
            &["ab", "cd", "ef"],
            &["é\u{202e}", "", "日本語\n二行"],
            &["a\n", "\nb"],
        ];
        for shape in shapes {
            let parts: Vec<Cow<'_, str>> = shape.iter().map(|s| Cow::Borrowed(*s)).collect();
            assert_eq!(
                joined_chars(&parts),
                parts.join("\n").chars().count(),
                "{shape:?}"
            );
        }
    }

    #[test]
    fn resource_links_count_as_the_line_shown_for_them() {
        let link: ContentBlock = serde_json::from_value(serde_json::json!(
            {"type": "resource_link", "uri": "file:///ü", "name": "n"}
        ))
        .expect("a resource link");
        let mut result = CallToolResult::text("ab");
        result.content.push(link);
        let parts = result_parts(&result);
        assert_eq!(parts[1], "[resource link: file:///ü n]");
        assert_eq!(
            joined_chars(&parts),
            2 + 1 + "[resource link: file:///ü n]".chars().count()
        );
    }
}
