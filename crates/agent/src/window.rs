//! The context window of a model, in tokens, where it is known: what
//! `toolSearch: "auto"` measures the tool definitions against (deferred
//! above 10 % of it).
//!
//! | model (`PROVIDER:MODEL`) | window |
//! |---|---|
//! | `anthropic:claude-*` | 200,000 |
//! | `openai:gpt-4.1*` | 1,047,576 |
//! | `openai:gpt-5*` | 400,000 |
//! | `openai:o1*`, `o3*`, `o4*` | 200,000 |
//! | `openai:gpt-4o*`, `gpt-4-turbo*` | 128,000 |
//! | `openai:gpt-3.5-turbo*` | 16,385 |
//! | anything else (local models, `mock`, `script:FILE`) | [`DEFAULT_CONTEXT_WINDOW`] |

/// The window assumed for a model not in the table: 128,000 tokens (so
/// `auto` defers above 12,800 tokens of tool definitions).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The context window of the model `name` (as [`crate::Model::name`]
/// gives it: `PROVIDER:MODEL`).
pub fn context_window(name: &str) -> u64 {
    let (provider, model) = name.split_once(':').unwrap_or(("", name));
    let model = model.trim().to_ascii_lowercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| model.starts_with(p));
    match provider {
        "anthropic" if model.starts_with("claude") => 200_000,
        "openai" if starts(&["gpt-4.1"]) => 1_047_576,
        "openai" if starts(&["gpt-5"]) => 400_000,
        "openai" if starts(&["o1", "o3", "o4"]) => 200_000,
        "openai" if starts(&["gpt-4o", "gpt-4-turbo"]) => 128_000,
        "openai" if starts(&["gpt-3.5-turbo"]) => 16_385,
        _ => DEFAULT_CONTEXT_WINDOW,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_and_the_default() {
        assert_eq!(context_window("anthropic:claude-sonnet-4-5"), 200_000);
        assert_eq!(context_window("openai:gpt-4.1-mini"), 1_047_576);
        assert_eq!(context_window("openai:gpt-4o"), 128_000);
        assert_eq!(context_window("openai:o3-mini"), 200_000);
        assert_eq!(context_window("openai:llama3"), DEFAULT_CONTEXT_WINDOW);
        assert_eq!(context_window("mock"), DEFAULT_CONTEXT_WINDOW);
        assert_eq!(
            context_window("script:/tmp/x.jsonl"),
            DEFAULT_CONTEXT_WINDOW
        );
    }
}
