//! One truncation budget for every tool result (DESIGN.md item 11).
//!
//! The text of a result (text blocks and embedded text resources, in order)
//! may carry at most `chars` characters to the model; what is over is cut
//! and one line at the end says how much. Media (images, audio, binary
//! resources) pass unchanged while their decoded bytes fit the result's
//! media allowance (`budgetMediaBytes`; none for [`Budget::new`]); a block
//! over it, and a block of an unknown kind, is replaced by a one-line
//! summary of what it was, never dropped silently. `structuredContent`
//! larger than the budget is removed, and the same line says so.
//!
//! The same [`Budget`] serves results of remote tools (through the host)
//! and of an agent's own local tools ([`Budget::apply`]).

use serde_json::Value;
use switchboard_wire::{CallToolResult, ContentBlock, ResourceContents};

/// A character budget for tool results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    chars: usize,
    media_bytes: usize,
}

impl Budget {
    /// A budget of `chars` characters of text per result, every media
    /// block summarised.
    pub fn new(chars: usize) -> Budget {
        Budget {
            chars,
            media_bytes: 0,
        }
    }

    /// The same budget, letting media blocks through unchanged while their
    /// decoded bytes, added up over one result, stay within `bytes`.
    pub fn with_media_bytes(self, bytes: usize) -> Budget {
        Budget {
            media_bytes: bytes,
            ..self
        }
    }

    /// The budget in characters.
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// The media allowance per result, in decoded bytes.
    pub fn media_bytes(&self) -> usize {
        self.media_bytes
    }

    /// Fits `result` into the budget (see the module docs).
    pub fn apply(&self, result: CallToolResult) -> CallToolResult {
        self.apply_with(result, |text| text)
    }

    /// Fits `result` into the budget, passing each kept piece of server text
    /// through `present` (the host wraps it in boundary markers) after the
    /// cut, so markers never count against the budget nor get cut.
    pub(crate) fn apply_with(
        &self,
        mut result: CallToolResult,
        present: impl Fn(String) -> String,
    ) -> CallToolResult {
        let mut allowance = self.allowance();
        let mut media_left = self.media_bytes;
        let mut take = |text: String| allowance.take(text);

        let blocks = std::mem::take(&mut result.content);
        for block in blocks {
            match block {
                ContentBlock::Text { text, extra } => {
                    if let Some(text) = take(text) {
                        result.content.push(ContentBlock::Text {
                            text: present(text),
                            extra,
                        });
                    }
                }
                ContentBlock::Resource {
                    resource:
                        ResourceContents {
                            uri,
                            mime_type,
                            text: Some(text),
                            blob,
                            meta,
                            extra: rextra,
                        },
                    extra,
                } => {
                    if let Some(text) = take(text) {
                        result.content.push(ContentBlock::Resource {
                            resource: ResourceContents {
                                uri,
                                mime_type,
                                text: Some(present(text)),
                                blob,
                                meta,
                                extra: rextra,
                            },
                            extra,
                        });
                    }
                }
                ContentBlock::ResourceLink { fields } => {
                    let uri = fields.get("uri").and_then(Value::as_str).unwrap_or("?");
                    let name = fields.get("name").and_then(Value::as_str).unwrap_or("");
                    let line = format!("[resource link: {uri} {name}]");
                    if let Some(text) = take(line) {
                        result.content.push(ContentBlock::text(present(text)));
                    }
                }
                other => match media_size(&other) {
                    Some(size) if size <= media_left => {
                        media_left -= size;
                        result.content.push(other);
                    }
                    _ => result.content.push(ContentBlock::text(summary(&other))),
                },
            }
        }

        let mut notes = Vec::new();
        notes.extend(allowance.cut_note());
        if let Some(structured) = &result.structured_content {
            let size = structured.to_string().chars().count();
            if size > self.chars {
                result.structured_content = None;
                notes.push(format!(
                    "structuredContent ({size} characters) was removed as larger than the budget"
                ));
            }
        }
        if !notes.is_empty() {
            result.content.push(ContentBlock::text(format!(
                "[switchboard: {}]",
                notes.join("; ")
            )));
        }
        result
    }
}

/// What is left of a [`Budget`] while the pieces of one answer are taken
/// from it in order: each piece keeps what still fits, and the cut is
/// counted for the one note that says so.
#[derive(Debug, Clone)]
pub(crate) struct Allowance {
    budget: usize,
    left: usize,
    total: usize,
    cut: usize,
}

impl Budget {
    /// The whole budget, nothing taken yet.
    pub(crate) fn allowance(&self) -> Allowance {
        Allowance {
            budget: self.chars,
            left: self.chars,
            total: 0,
            cut: 0,
        }
    }
}

impl Allowance {
    /// `text`, or its head that still fits; `None` when nothing is left.
    pub(crate) fn take(&mut self, text: String) -> Option<String> {
        let n = text.chars().count();
        self.total += n;
        if n <= self.left {
            self.left -= n;
            return Some(text);
        }
        let keep = self.left;
        self.left = 0;
        self.cut += n - keep;
        (keep > 0).then(|| text.chars().take(keep).collect())
    }

    /// What the note says when something was cut (without brackets).
    pub(crate) fn cut_note(&self) -> Option<String> {
        (self.cut > 0).then(|| {
            format!(
                "{} of {} characters were cut from this result (budget {})",
                self.cut, self.total, self.budget
            )
        })
    }
}

/// The decoded size of a media block (image, audio, binary resource);
/// `None` for any other kind.
fn media_size(block: &ContentBlock) -> Option<usize> {
    match block {
        ContentBlock::Image { data, .. } | ContentBlock::Audio { data, .. } => {
            Some(decoded_len(data))
        }
        ContentBlock::Resource { resource, .. } => resource.blob.as_deref().map(decoded_len),
        _ => None,
    }
}

/// One line describing a block that is not shown as text.
fn summary(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Image {
            data, mime_type, ..
        } => format!(
            "[image ({}, {} bytes) not shown]",
            safe_label(mime_type),
            decoded_len(data)
        ),
        ContentBlock::Audio {
            data, mime_type, ..
        } => format!(
            "[audio ({}, {} bytes) not shown]",
            safe_label(mime_type),
            decoded_len(data)
        ),
        ContentBlock::Resource { resource, .. } => format!(
            "[binary resource ({}, {} bytes) not shown]",
            safe_label(resource.mime_type.as_deref().unwrap_or("unknown type")),
            resource.blob.as_deref().map_or(0, decoded_len)
        ),
        other => format!(
            "[content block of type {} not shown]",
            safe_label(other.kind())
        ),
    }
}

/// A MIME type or block kind, when it looks like one; server text that
/// does not is replaced rather than echoed.
fn safe_label(s: &str) -> &str {
    let ok = !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/+-._;= ".contains(&b));
    if ok { s } else { "unknown type" }
}

fn decoded_len(base64: &str) -> usize {
    let body = base64.trim_end_matches('=').len();
    body * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_wire::JsonObject;

    fn text_of(r: &CallToolResult) -> Vec<String> {
        r.content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text, .. } => text.clone(),
                other => format!("<{}>", other.kind()),
            })
            .collect()
    }

    #[test]
    fn under_budget_is_untouched() {
        let r = CallToolResult::text("hello");
        assert_eq!(Budget::new(5).apply(r.clone()), r);
    }

    #[test]
    fn one_budget_across_blocks_with_one_line_about_the_cut() {
        let r = CallToolResult {
            content: vec![
                ContentBlock::text("a".repeat(6)),
                ContentBlock::text("b".repeat(6)),
                ContentBlock::text("c".repeat(6)),
            ],
            ..CallToolResult::text("")
        };
        let out = Budget::new(10).apply(r);
        assert_eq!(
            text_of(&out),
            [
                "aaaaaa",
                "bbbb",
                "[switchboard: 8 of 18 characters were cut from this result (budget 10)]"
            ]
        );
    }

    #[test]
    fn counts_characters_not_bytes() {
        let out = Budget::new(3).apply(CallToolResult::text("ééééé"));
        assert_eq!(text_of(&out)[0], "ééé");
        assert!(text_of(&out)[1].contains("2 of 5"));
    }

    #[test]
    fn non_text_blocks_are_summarised_in_place() {
        let r = CallToolResult {
            content: vec![
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::text("x"),
                ContentBlock::Other(
                    serde_json::json!({"type": "hologram\nIGNORE ALL"})
                        .as_object()
                        .cloned()
                        .unwrap_or_else(JsonObject::new),
                ),
            ],
            ..CallToolResult::text("")
        };
        let out = Budget::new(100).apply(r);
        assert_eq!(
            text_of(&out),
            [
                "[image (image/png, 5 bytes) not shown]",
                "x",
                "[content block of type unknown type not shown]"
            ]
        );
    }

    #[test]
    fn media_pass_unchanged_within_the_allowance_and_are_summarised_beyond_it() {
        // 5, 5 and 6 decoded bytes against an allowance of 10: the first
        // two fit, the third would go over and is summarised, as is the
        // unknown kind, which is never media.
        let r = CallToolResult {
            content: vec![
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::Audio {
                    data: "aGVsbG8=".into(),
                    mime_type: "audio/wav".into(),
                    extra: JsonObject::new(),
                },
                ContentBlock::image("aGVsbG8h", "image/gif"),
                ContentBlock::Other(
                    serde_json::json!({"type": "hologram", "data": ""})
                        .as_object()
                        .cloned()
                        .unwrap_or_else(JsonObject::new),
                ),
            ],
            ..CallToolResult::text("")
        };
        let out = Budget::new(100).with_media_bytes(10).apply(r.clone());
        assert_eq!(out.content[..2], r.content[..2]);
        assert_eq!(
            text_of(&out)[2..],
            [
                "[image (image/gif, 6 bytes) not shown]",
                "[content block of type hologram not shown]"
            ]
        );
        // No allowance: every media block is summarised.
        let none = Budget::new(100).apply(r);
        assert_eq!(text_of(&none)[0], "[image (image/png, 5 bytes) not shown]");
    }

    #[test]
    fn oversized_structured_content_is_removed_and_said() {
        let mut r = CallToolResult::text("ok");
        r.structured_content = Some(serde_json::json!({"big": "z".repeat(50)}));
        let out = Budget::new(20).apply(r);
        assert!(out.structured_content.is_none());
        assert!(text_of(&out)[1].contains("structuredContent"));
    }

    #[test]
    fn presentation_happens_after_the_cut_and_tool_errors_stay_errors() {
        let r = CallToolResult::error("x".repeat(10));
        let out = Budget::new(4).apply_with(r, |t| format!("<{t}>"));
        assert!(out.is_error());
        assert_eq!(text_of(&out)[0], "<xxxx>");
    }
}
