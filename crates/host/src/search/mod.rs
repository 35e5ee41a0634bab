//! Tool search: a ranked index over what the model may see of the tool
//! table, so a model that is sent only a few tools can find the others.
//!
//! Ranking is BM25F (BM25 over several fields, each with its own weight
//! and length normalisation): a word in a tool's name counts more than one
//! in its title, which counts more than one in its description, which
//! counts more than one in a parameter's name or description. Every text
//! goes through `text::terms` (identifiers split at `_`, `-` and case
//! changes, lowercased, stop words dropped, light stemming), and a query
//! word also searches for its related words from `thesaurus` at a lower
//! weight, so a request that shares no word with a tool's description can
//! still find it.
//!
//! Why a module of our own rather than a search crate: the index is a few
//! thousand short documents rebuilt whole when the table changes, and the
//! parts that decide quality here (identifier splitting, the thesaurus,
//! field weights) are ours in any case; full-text engines (tantivy and
//! the like) bring a storage layer, a query language and a large tree of
//! dependencies for what is a few hundred lines of scoring.
//!
//! The index is built from plain [`Document`]s; the host builds them from
//! its model view of the table (`core/search.rs`), so denied tools are
//! never indexed and a changed tool is indexed with its approved text.

pub(crate) mod evaluation;
mod text;
mod thesaurus;

use std::collections::HashMap;

use serde_json::Value;
use switchboard_wire::JsonObject;

/// What is indexed of one tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    /// The tool's name on its server (`create_issue`): the strongest field.
    pub name: String,
    /// The server's alias.
    pub server: String,
    /// The tool's title, if it has one.
    pub title: Option<String>,
    /// Its description (the text the model reads, without markers).
    pub description: String,
    /// Its parameters' names and descriptions, in one text.
    pub parameters: String,
}

impl Document {
    /// The parameters text of an input schema: each property's name and
    /// description, and those of nested objects, as one text (bounded
    /// depth: schemas can nest without end).
    pub fn parameters_of(schema: &JsonObject) -> String {
        let mut out = String::new();
        collect_parameters(schema, &mut out, 0);
        out
    }
}

/// The index fields, with their weights and length normalisation (`b`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    /// A word of the tool's name.
    pub name: f32,
    /// A word of the server's alias.
    pub server: f32,
    /// A word of the title.
    pub title: f32,
    /// A word of the description.
    pub description: f32,
    /// A word of a parameter's name or description.
    pub parameters: f32,
}

impl Default for FieldWeights {
    fn default() -> Self {
        FieldWeights {
            name: 4.0,
            server: 1.0,
            title: 2.0,
            description: 1.0,
            parameters: 0.4,
        }
    }
}

/// One result: the document's position in the list the index was built
/// from, and its score (higher is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Position of the document.
    pub doc: usize,
    /// Its score.
    pub score: f32,
}

/// A ranked index over documents.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// Term → its id.
    terms: HashMap<String, u32>,
    /// Per term: the documents holding it, each with its saturated,
    /// weighted term frequency (BM25F's `tf (k1 + 1) / (k1 + tf)`).
    postings: Vec<Vec<(u32, f32)>>,
    /// Per term: its inverse document frequency.
    idf: Vec<f32>,
    /// Number of documents.
    len: usize,
}

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// Length normalisation per field, in the order of `FIELDS`.
const B: [f32; FIELDS] = [0.3, 0.0, 0.5, 0.75, 0.75];
const FIELDS: usize = 5;
/// How much meeting every word of the query adds to a score (meeting
/// half of them adds half as much).
const COVERAGE: f32 = 0.5;

/// The ranking's knobs besides the field weights.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    /// A related word's weight against the query's own.
    related: f32,
    /// See [`COVERAGE`].
    coverage: f32,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            related: thesaurus::RELATED_WEIGHT,
            coverage: COVERAGE,
        }
    }
}

impl SearchIndex {
    /// Builds the index of `docs` with the default field weights.
    pub fn build(docs: &[Document]) -> SearchIndex {
        SearchIndex::build_with(docs, FieldWeights::default())
    }

    /// Builds the index of `docs` with `weights`.
    pub fn build_with(docs: &[Document], weights: FieldWeights) -> SearchIndex {
        let weight = [
            weights.name,
            weights.server,
            weights.title,
            weights.description,
            weights.parameters,
        ];
        // Each document's fields as terms.
        let fields: Vec<[Vec<String>; FIELDS]> = docs
            .iter()
            .map(|d| {
                [
                    text::terms(&d.name),
                    text::terms(&d.server),
                    d.title.as_deref().map(text::terms).unwrap_or_default(),
                    text::terms(&d.description),
                    text::terms(&d.parameters),
                ]
            })
            .collect();
        let n = docs.len().max(1) as f32;
        let mut average = [0f32; FIELDS];
        for f in &fields {
            for (i, terms) in f.iter().enumerate() {
                average[i] += terms.len() as f32 / n;
            }
        }
        let mut index = SearchIndex {
            len: docs.len(),
            ..SearchIndex::default()
        };
        let mut weighted: HashMap<u32, f32> = HashMap::new();
        for (doc, f) in fields.iter().enumerate() {
            weighted.clear();
            for (i, terms) in f.iter().enumerate() {
                if terms.is_empty() || weight[i] == 0.0 {
                    continue;
                }
                let norm = 1.0 - B[i] + B[i] * terms.len() as f32 / average[i].max(1.0);
                for term in terms {
                    let id = index.term_id(term);
                    *weighted.entry(id).or_default() += weight[i] / norm;
                }
            }
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            for (&id, &tf) in &weighted {
                let saturated = tf * (K1 + 1.0) / (K1 + tf);
                index.postings[id as usize].push((doc, saturated));
            }
        }
        index.idf = index
            .postings
            .iter()
            .map(|p| {
                let df = p.len() as f32;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        index
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The best `limit` documents for `query`, best first (ties in the
    /// order the documents were given). Documents that match no word of
    /// the query, nor a related one, are not returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.search_where(query, limit, |_| true)
    }

    /// [`SearchIndex::search`] over the documents `keep` accepts (a
    /// caller's own view of the table).
    pub fn search_where(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        self.rank(query, limit, keep, Tuning::default())
    }

    fn rank(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(usize) -> bool,
        tuning: Tuning,
    ) -> Vec<Hit> {
        if limit == 0 || self.len == 0 {
            return Vec::new();
        }
        let words = self.query_words(query, tuning.related);
        let mut scores = vec![0f32; self.len];
        let mut matched = vec![0u16; self.len];
        // Per query word: each document's best match among the word and
        // its related words (a document holding five synonyms of one word
        // is not five times as good).
        let mut best = vec![0f32; self.len];
        let mut touched: Vec<u32> = Vec::new();
        for expansions in &words {
            for (id, weight) in expansions {
                let idf = self.idf[*id as usize] * weight;
                for &(doc, saturated) in &self.postings[*id as usize] {
                    let slot = &mut best[doc as usize];
                    if *slot == 0.0 {
                        touched.push(doc);
                    }
                    *slot = slot.max(idf * saturated);
                }
            }
            for doc in touched.drain(..) {
                let d = doc as usize;
                scores[d] += best[d];
                matched[d] += 1;
                best[d] = 0.0;
            }
        }
        // Documents meeting more of the query's words rank higher than
        // ones meeting a single rare word many times.
        let words_len = words.len().max(1) as f32;
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(doc, score)| **score > 0.0 && keep(*doc))
            .map(|(doc, &score)| Hit {
                doc,
                score: score * (1.0 + tuning.coverage * f32::from(matched[doc]) / words_len),
            })
            .collect();
        let by_rank = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, by_rank);
            hits.truncate(limit);
        }
        hits.sort_by(by_rank);
        hits
    }

    /// The query's words (distinct, in order), each with the index terms
    /// it searches: itself at 1.0 and its related words at
    /// [`thesaurus::RELATED_WEIGHT`]; terms the index does not hold are
    /// left out, and so are words with none.
    fn query_words(&self, query: &str, related_weight: f32) -> Vec<Vec<(u32, f32)>> {
        let mut own: Vec<u32> = Vec::new();
        let words: Vec<String> = text::terms(query);
        for word in &words {
            if let Some(&id) = self.terms.get(word) {
                own.push(id);
            }
        }
        // A term is searched once: two words of the query related to the
        // same term (make, build → create) do not count it twice.
        let mut claimed: std::collections::HashSet<u32> = own.iter().copied().collect();
        let mut seen = std::collections::HashSet::new();
        words
            .iter()
            .filter(|w| seen.insert(w.as_str()))
            .map(|word| {
                let mut terms: Vec<(u32, f32)> = Vec::new();
                if let Some(&id) = self.terms.get(word) {
                    terms.push((id, 1.0));
                }
                let number = word
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then_some(thesaurus::NUMBER);
                // A number in a request is about numbers.
                for related in thesaurus::related(word)
                    .iter()
                    .map(String::as_str)
                    .chain(number)
                {
                    if let Some(&id) = self.terms.get(related) {
                        if claimed.insert(id) {
                            terms.push((id, related_weight));
                        }
                    }
                }
                terms
            })
            .filter(|terms| !terms.is_empty())
            .collect()
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.terms.get(term) {
            return id;
        }
        let id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
        self.terms.insert(term.to_owned(), id);
        self.postings.push(Vec::new());
        id
    }
}

/// Deepest schema nesting whose property names are indexed.
const MAX_SCHEMA_DEPTH: usize = 4;

fn collect_parameters(schema: &JsonObject, out: &mut String, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            out.push_str(name);
            out.push(' ');
            if let Value::Object(property) = property {
                if let Some(Value::String(d)) = property.get("description") {
                    out.push_str(d);
                    out.push(' ');
                }
                collect_parameters(property, out, depth + 1);
                if let Some(Value::Object(items)) = property.get("items") {
                    collect_parameters(items, out, depth + 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
