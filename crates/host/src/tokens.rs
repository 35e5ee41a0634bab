//! Token counts of tool definitions, estimated one way everywhere (`chat`,
//! `eval`, `serve`, `tools --search`, the benchmarks), and the threshold
//! above which the table is deferred ([`ToolSearch`]).
//!
//! The estimate walks the text the way byte-pair tokenizers split it
//! before merging: runs of letters, runs of digits (three to a token),
//! spaces, and punctuation. A word costs one token per
//! [`CHARS_PER_WORD_TOKEN`] letters (at least one), a punctuation mark one
//! token per [`PUNCTUATION_PER_TOKEN`] marks in a row. The constants were
//! calibrated against OpenAI's `o200k_base` (through `tiktoken-rs`, a
//! test-only dependency) on the catalogue of real servers' tools in
//! `bench/catalogue-tools.json`; the host's tests check the estimate stays
//! within 10 % of it there. Anthropic's tokenizer is not public; its counts
//! for the same text run somewhat higher, which the 10 % share of
//! [`ToolSearch::Auto`] leaves room for.
//!
//! Why not the tokenizer itself at run time: its vocabulary is several
//! megabytes linked into the binary and a hundred milliseconds to load,
//! for a count that decides only whether a list is deferred.

use serde::Serialize;
use switchboard_wire::JsonObject;

/// Letters of one word per token (long identifiers take several).
pub(crate) const CHARS_PER_WORD_TOKEN: f64 = 8.0;
/// Punctuation marks in a row per token (`":{"` is mostly one).
pub(crate) const PUNCTUATION_PER_TOKEN: f64 = 4.0;
/// The share of the model's context window the tool definitions may take
/// before [`ToolSearch::Auto`] defers them, in percent.
pub(crate) const AUTO_SHARE_PERCENT: u64 = 10;

/// The estimated tokens of `text`.
pub fn estimate(text: &str) -> u64 {
    estimate_with(text, CHARS_PER_WORD_TOKEN, PUNCTUATION_PER_TOKEN)
}

fn estimate_with(text: &str, per_word: f64, per_mark: f64) -> u64 {
    let mut tokens = 0f64;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphabetic() {
            let mut n = 1usize;
            while chars.peek().is_some_and(|c| c.is_alphabetic()) {
                chars.next();
                n += 1;
            }
            tokens += (n as f64 / per_word).ceil();
        } else if c.is_numeric() {
            let mut n = 1usize;
            while chars.peek().is_some_and(|c| c.is_numeric()) {
                chars.next();
                n += 1;
            }
            tokens += (n as f64 / 3.0).ceil();
        } else if c.is_whitespace() {
            // A space mostly joins the next word's token; runs of
            // newlines and indentation take one.
            if chars.peek().is_some_and(|c| c.is_whitespace()) {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                tokens += 1.0;
            }
        } else if c.is_ascii() {
            let mut n = 1usize;
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_punctuation() && !c.is_alphanumeric())
            {
                chars.next();
                n += 1;
            }
            tokens += (n as f64 / per_mark).ceil();
        } else {
            // Symbols and letters outside the common scripts: a token
            // each (often more, as bytes).
            tokens += 1.0;
        }
    }
    // Truncation is what is wanted: the count is a whole estimate.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = tokens.ceil() as u64;
    whole
}

/// The estimated tokens of one tool definition as a model request carries
/// it: `{"name", "description", "input_schema"}` as JSON.
pub fn tool_tokens(name: &str, description: &str, input_schema: &JsonObject) -> u64 {
    #[derive(Serialize)]
    struct Definition<'a> {
        name: &'a str,
        description: &'a str,
        input_schema: &'a JsonObject,
    }
    let text = serde_json::to_string(&Definition {
        name,
        description,
        input_schema,
    })
    .unwrap_or_default();
    estimate(&text)
}

/// When the model is sent only the always-loaded tools and
/// `mcp__switchboard__search_tools` instead of the whole table (config
/// `toolSearch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolSearch {
    /// `"auto"` (the default): when the table's definitions would take
    /// more than `AUTO_SHARE_PERCENT` of the model's context window.
    #[default]
    Auto,
    /// A number: when the definitions would take more than that many
    /// tokens.
    Tokens(u64),
    /// `true`: always.
    On,
    /// `false`: never.
    Off,
}

impl ToolSearch {
    /// The token count above which the table is deferred, for a model with
    /// `context_window` tokens; `None` when it never is (`false`), zero
    /// when it always is (`true`).
    pub fn threshold(self, context_window: u64) -> Option<u64> {
        match self {
            ToolSearch::Auto => Some(context_window.saturating_mul(AUTO_SHARE_PERCENT) / 100),
            ToolSearch::Tokens(n) => Some(n),
            ToolSearch::On => Some(0),
            ToolSearch::Off => None,
        }
    }

    /// Whether a table whose definitions take `table_tokens` is deferred
    /// for a model with `context_window` tokens.
    pub fn defers(self, table_tokens: u64, context_window: u64) -> bool {
        match self {
            ToolSearch::On => true,
            _ => self
                .threshold(context_window)
                .is_some_and(|t| table_tokens > t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_arithmetic() {
        // Auto: over 10 % of the window.
        assert_eq!(ToolSearch::Auto.threshold(200_000), Some(20_000));
        assert!(!ToolSearch::Auto.defers(20_000, 200_000));
        assert!(ToolSearch::Auto.defers(20_001, 200_000));
        assert!(ToolSearch::Auto.defers(12_801, 128_000));
        assert!(!ToolSearch::Auto.defers(12_800, 128_000));
        // A number of tokens: over it, whatever the window.
        assert!(ToolSearch::Tokens(500).defers(501, 1_000_000));
        assert!(!ToolSearch::Tokens(500).defers(500, 10));
        // Forced either way, even for an empty table.
        assert!(ToolSearch::On.defers(0, 200_000));
        assert!(!ToolSearch::Off.defers(u64::MAX, 1));
        assert_eq!(ToolSearch::Off.threshold(1), None);
        // No overflow on absurd windows.
        assert_eq!(ToolSearch::Auto.threshold(u64::MAX), Some(u64::MAX / 100));
    }

    #[test]
    fn estimates_grow_with_the_text_and_count_words_and_marks() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("hello"), 1);
        assert_eq!(estimate("hello world"), 2);
        // A long identifier takes several.
        assert!(estimate("list_directory_with_sizes") >= 4);
        assert_eq!(estimate("{\"a\":1}"), estimate("{\"b\":2}"));
        let one = tool_tokens("t", "Reads a file.", &JsonObject::new());
        let two = tool_tokens("t", "Reads a file. Reads a file.", &JsonObject::new());
        assert!(two > one);
    }
}

#[cfg(test)]
mod calibration {
    use super::*;

    /// The estimate against `o200k_base` on the catalogue of real servers'
    /// tools: within 10 % over the whole table (what decides deferral),
    /// and never off by more than half for one tool.
    #[test]
    fn the_estimate_is_within_ten_percent_of_a_real_tokenizer_on_the_catalogue() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../bench/catalogue-tools.json");
        let tools: Vec<crate::search::evaluation::CatalogueTool> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let bpe = tiktoken_rs::o200k_base().unwrap();
        let (mut ours, mut real) = (0u64, 0u64);
        let mut worst = 0f64;
        for t in &tools {
            let name = format!("mcp__{}__{}", t.server, t.name);
            let description = t.description.clone().unwrap_or_default();
            let text = serde_json::to_string(&serde_json::json!({
                "name": name, "description": description, "input_schema": t.input_schema,
            }))
            .unwrap();
            let estimate = tool_tokens(&name, &description, &t.input_schema);
            let count = bpe.encode_ordinary(&text).len() as u64;
            ours += estimate;
            real += count;
            worst = worst.max((estimate as f64 / count as f64 - 1.0).abs());
        }
        let ratio = ours as f64 / real as f64;
        // `CALIBRATE=1` prints the grid the constants were chosen on.
        if std::env::var("CALIBRATE").is_ok() {
            let texts: Vec<(String, u64)> = tools.iter().map(|t| {
                let name = format!("mcp__{}__{}", t.server, t.name);
                let text = serde_json::to_string(&serde_json::json!({
                    "name": name, "description": t.description.clone().unwrap_or_default(), "input_schema": t.input_schema,
                })).unwrap();
                let n = bpe.encode_ordinary(&text).len() as u64;
                (text, n)
            }).collect();
            for w in [5.0, 6.0, 7.0, 8.0, 10.0] {
                for p in [2.0, 3.0, 4.0, 6.0] {
                    let mut ours = 0;
                    let mut worst = 0f64;
                    for (text, n) in &texts {
                        let e = estimate_with(text, w, p);
                        ours += e;
                        worst = worst.max((e as f64 / *n as f64 - 1.0).abs());
                    }
                    eprintln!(
                        "word {w} punct {p}: ratio {:.3} worst {:.2}",
                        ours as f64 / real as f64,
                        worst
                    );
                }
            }
        }
        eprintln!(
            "{} tools: estimate {ours}, o200k_base {real}, ratio {ratio:.3}, worst single tool off by {:.0} %",
            tools.len(),
            worst * 100.0
        );
        assert!((0.9..=1.1).contains(&ratio), "ratio {ratio}");
        assert!(worst < 0.5, "worst {worst}");
    }
}
