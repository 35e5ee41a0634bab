//! The word search both demos' `search` tools run: the query's words,
//! lower-cased, each of which a matching record's text holds, and the
//! answer listing the matches.

use switchboard_server::HandlerError;

/// A parsed `search` query.
pub(crate) struct Words(Vec<String>);

impl Words {
    /// The words of `query`.
    ///
    /// # Errors
    /// A message for the model when the query has no words.
    pub(crate) fn of(query: &str) -> Result<Words, HandlerError> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return Err(HandlerError::msg(
                "The query is empty. Give one or more words to look for.",
            ));
        }
        Ok(Words(words))
    }

    /// Whether `title` and `body` together hold every word.
    pub(crate) fn match_in(&self, title: &str, body: &str) -> bool {
        let text = format!("{title} {body}").to_lowercase();
        self.0.iter().all(|w| text.contains(w.as_str()))
    }
}

/// The answer to `query`: the `hits`, one line each, counted as `kind`s
/// (`note`, `ticket`), or a sentence saying nothing matched.
pub(crate) fn answer(kind: &str, query: &str, hits: &[String]) -> String {
    if hits.is_empty() {
        return format!("No {kind} contains {query:?}.");
    }
    format!(
        "{} {kind}(s) match {query:?}:\n{}",
        hits.len(),
        hits.join("\n")
    )
}
