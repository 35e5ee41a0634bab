//! Measuring the search: a catalogue of tool definitions and a set of
//! queries with the tools they should find, as the repository keeps them
//! (`bench/catalogue-tools.json`, `bench/catalogue-queries.json`), and
//! recall@k over them. The host's tests check the recall; the search
//! benchmark (`crates/host/benches/search.rs`) reports it with latencies.

use serde::Deserialize;
use switchboard_wire::JsonObject;

use super::Document;
#[cfg(test)]
use super::{SearchIndex, text};

/// One tool of a catalogue file: its server's alias and its definition as
/// the server sent it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogueTool {
    /// The server's alias.
    pub server: String,
    /// The tool's name on the server.
    pub name: String,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// Its description.
    #[serde(default)]
    pub description: Option<String>,
    /// Its input schema.
    #[serde(default)]
    pub input_schema: JsonObject,
}

impl CatalogueTool {
    /// `server/name`, how queries name the tools they expect.
    pub fn key(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }

    /// What the index reads of it.
    pub fn document(&self) -> Document {
        Document {
            name: self.name.clone(),
            server: self.server.clone(),
            title: self.title.clone(),
            description: self.description.clone().unwrap_or_default(),
            parameters: Document::parameters_of(&self.input_schema),
        }
    }
}

/// One query with the tools that answer it (any of them counts).
#[derive(Debug, Clone, Deserialize)]
pub struct QueryCase {
    /// What a model or a person would ask.
    pub query: String,
    /// `server/name` of each right answer.
    pub expect: Vec<String>,
    /// `direct` (words of the tool's text) or `paraphrase` (none of them).
    pub kind: String,
    /// `tune` (the thesaurus and weights were adjusted on it) or
    /// `holdout` (never looked at while adjusting).
    pub split: String,
}

/// Recall@k: the share of `cases` with a right answer among the first
/// `k` results (0 for no cases).
#[cfg(test)]
pub(crate) fn recall_at(
    index: &SearchIndex,
    keys: &[String],
    cases: &[&QueryCase],
    k: usize,
) -> f64 {
    if cases.is_empty() {
        return 0.0;
    }
    let found = cases
        .iter()
        .filter(|case| {
            index
                .search(&case.query, k)
                .iter()
                .any(|hit| case.expect.contains(&keys[hit.doc]))
        })
        .count();
    found as f64 / cases.len() as f64
}

/// The words a query shares with a tool's name or description (after
/// stemming and stop words): a paraphrase must share none.
#[cfg(test)]
pub(crate) fn shared_words(query: &str, tool: &CatalogueTool) -> Vec<String> {
    let mut own = text::terms(&tool.name);
    own.extend(text::terms(tool.description.as_deref().unwrap_or_default()));
    let mut shared: Vec<String> = text::terms(query)
        .into_iter()
        .filter(|t| own.contains(t))
        .collect();
    shared.dedup();
    shared
}
