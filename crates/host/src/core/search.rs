//! The table at scale, as the host offers it: the search index over the
//! model's view of the table (rebuilt after any change of it), the tools
//! a session has loaded, and the deferred view of the table (the
//! always-loaded tools, the built-ins and what the session loaded), with
//! the servers' one-line summaries the model searches from.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use switchboard_wire::shared::lock;
use tokio::sync::broadcast;

use super::{Host, ModelTool, TableChange};
use crate::builtin::{ALIAS, SEARCH_TOOLS, SearchTools};
use crate::search::{Document, SearchIndex};
use crate::{CHANGED_NOTICE, sanitize, tokens};

/// A tool a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundTool {
    /// The tool as the model sees it.
    pub tool: ModelTool,
    /// Its description in one line, without markers (server text: wrap it
    /// before a model reads it).
    pub summary: String,
    /// Its score (higher is better).
    pub score: f32,
}

/// The tools a session (a chat, an eval case, one gateway caller) has
/// loaded through `mcp__switchboard__search_tools`: sent in full from then
/// on. Cheap to clone; clones share the set.
#[derive(Clone, Default)]
pub struct LoadedTools {
    inner: Arc<LoadedInner>,
}

#[derive(Default)]
struct LoadedInner {
    names: Mutex<BTreeSet<String>>,
    /// Told of the names each load added (a gateway tells its caller the
    /// list changed).
    on_load: Option<Box<OnLoad>>,
}

/// What is told of the names a load added.
type OnLoad = dyn Fn(&[String]) + Send + Sync;

impl LoadedTools {
    /// An empty set.
    pub fn new() -> LoadedTools {
        LoadedTools::default()
    }

    /// An empty set that calls `on_load` with the names each load added.
    pub fn with_listener(on_load: impl Fn(&[String]) + Send + Sync + 'static) -> LoadedTools {
        LoadedTools {
            inner: Arc::new(LoadedInner {
                names: Mutex::default(),
                on_load: Some(Box::new(on_load)),
            }),
        }
    }

    /// Adds `names`; returns the ones that were not loaded yet.
    pub fn load(&self, names: impl IntoIterator<Item = String>) -> Vec<String> {
        let added: Vec<String> = {
            let mut set = self.lock();
            names
                .into_iter()
                .filter(|n| set.insert(n.clone()))
                .collect()
        };
        if let (false, Some(tell)) = (added.is_empty(), &self.inner.on_load) {
            tell(&added);
        }
        added
    }

    /// Whether `name` is loaded.
    pub fn contains(&self, name: &str) -> bool {
        self.lock().contains(name)
    }

    /// The loaded names, in order.
    pub fn names(&self) -> BTreeSet<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        lock(&self.inner.names)
    }
}

impl std::fmt::Debug for LoadedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTools")
            .field("names", &*self.lock())
            .field("on_load", &self.inner.on_load.is_some())
            .finish()
    }
}

/// The index as last built, and the change feed that says it is stale.
#[derive(Debug, Default)]
pub(super) struct SearchCache {
    changes: Option<broadcast::Receiver<TableChange>>,
    index: Option<Arc<ToolIndex>>,
}

/// The index over the model's view of the table, with the tools it was
/// built from.
#[derive(Debug)]
struct ToolIndex {
    index: SearchIndex,
    tools: Vec<ModelTool>,
    summaries: Vec<String>,
}

/// Longest one-line summary of a tool, in characters.
const SUMMARY_CHARS: usize = 200;

impl Host {
    /// Offers `mcp__switchboard__search_tools` (once; it stays until the
    /// host ends): a front end that defers the table calls this.
    pub fn enable_tool_search(&self) {
        if self.inner.builtins.get(SEARCH_TOOLS).is_none() {
            self.register_builtin(Arc::new(SearchTools));
        }
    }

    /// The best `limit` tools for `query` among those the model may see
    /// (no denied tool; a changed one with its approved text) and, with a
    /// `principal`, those its `principals` rules let it call; best first.
    /// Built-in tools are not searched: they are always sent.
    pub fn search_tools(
        &self,
        query: &str,
        limit: usize,
        principal: Option<&str>,
    ) -> Vec<FoundTool> {
        let index = self.tool_index();
        index
            .index
            .search_where(query, limit, |doc| {
                principal.is_none_or(|p| self.principal_may_call(p, &index.tools[doc].name))
            })
            .into_iter()
            .map(|hit| FoundTool {
                tool: index.tools[hit.doc].clone(),
                summary: index.summaries[hit.doc].clone(),
                score: hit.score,
            })
            .collect()
    }

    /// The tools sent to a model when the table is deferred, in name order
    /// (stable, for prompt caching): the built-in tools, the tools the
    /// config marks `alwaysLoad` (per server or per tool), and those
    /// `loaded` holds, out of `tools` (the model's view).
    pub fn deferred_tools(&self, tools: &[ModelTool], loaded: &LoadedTools) -> Vec<ModelTool> {
        let config = self.config_read();
        let loaded = loaded.names();
        tools
            .iter()
            .filter(|t| {
                t.server == ALIAS
                    || config.always_load(&t.server, &t.original_name)
                    || loaded.contains(&t.name)
            })
            .cloned()
            .collect()
    }

    /// The estimated tokens of `tools` as a model request carries them
    /// ([`tokens::tool_tokens`]).
    pub fn tools_tokens(tools: &[ModelTool]) -> u64 {
        tools
            .iter()
            .map(|t| tokens::tool_tokens(&t.name, &t.description, &t.input_schema))
            .sum()
    }

    /// Every mounted server in one line each, for the system prompt of a
    /// model whose table is deferred: its alias, how many tools it has,
    /// a few of their names, and what it says of itself (inside boundary
    /// markers: server text). `None` without servers.
    pub fn server_summaries(&self) -> Option<String> {
        let table = self.table();
        let mut lines = Vec::new();
        for server in self.upstreams().iter().filter(|s| s.config.enabled) {
            let alias = server.alias();
            let names: Vec<String> = table
                .of(alias)
                .map(|e| sanitize::inline_name(&e.tool.name))
                .collect();
            if names.is_empty() {
                continue;
            }
            let shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
            let more = if names.len() > shown.len() {
                ", …"
            } else {
                ""
            };
            let said = server
                .state()
                .description
                .as_ref()
                .and_then(|d| d.instructions.clone())
                .map(|i| one_line(&sanitize::clean_description(&i), SUMMARY_CHARS))
                .filter(|i| !i.is_empty())
                .map(|i| format!(" {}", sanitize::wrap(alias, None, &i)))
                .unwrap_or_default();
            lines.push(format!(
                "- {alias}: {} tool{} ({}{more}).{said}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                shown.join(", ")
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// The index over the model's view, rebuilt after any table change
    /// (a server's `list_changed`, a reload, `pins accept`).
    fn tool_index(&self) -> Arc<ToolIndex> {
        let mut cache = lock(&self.inner.search);
        let changes = cache
            .changes
            .get_or_insert_with(|| self.inner.changes.subscribe());
        let mut stale = false;
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = changes.try_recv() {
            stale = true;
        }
        match &cache.index {
            Some(index) if !stale => index.clone(),
            _ => {
                let tools: Vec<ModelTool> = self
                    .tools()
                    .into_iter()
                    .filter(|t| t.server != ALIAS)
                    .collect();
                let summaries: Vec<String> = tools
                    .iter()
                    .map(|t| one_line(&plain_description(&t.description), SUMMARY_CHARS))
                    .collect();
                let docs: Vec<Document> = tools
                    .iter()
                    .zip(&summaries)
                    .map(|(t, _)| Document {
                        name: t.original_name.clone(),
                        server: t.server.clone(),
                        title: t.title.clone(),
                        description: plain_description(&t.description),
                        parameters: Document::parameters_of(&t.input_schema),
                    })
                    .collect();
                let index = Arc::new(ToolIndex {
                    index: SearchIndex::build(&docs),
                    tools,
                    summaries,
                });
                cache.index = Some(index.clone());
                index
            }
        }
    }
}

/// A model description without what the host put around the server's
/// text: the changed notice, `[from ALIAS]`, the boundary markers.
pub(crate) fn plain_description(description: &str) -> String {
    let text = description
        .strip_prefix(CHANGED_NOTICE)
        .unwrap_or(description)
        .trim_start();
    let text = text
        .strip_prefix("[from ")
        .and_then(|rest| rest.split_once("] "))
        .map_or(text, |(_, rest)| rest);
    let text = match text.strip_prefix(sanitize::OPEN_TAG) {
        Some(rest) => rest.split_once(">\n").map_or(rest, |(_, body)| body),
        None => text,
    };
    text.strip_suffix(sanitize::CLOSE_TAG)
        .unwrap_or(text)
        .trim()
        .to_owned()
}

/// The first sentence or line of `text`, whitespace folded, cut to `max`
/// characters (with `…`).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let sentence = match first.find(". ") {
        Some(i) => &first[..=i],
        None => first,
    };
    let folded = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= max {
        return folded;
    }
    let mut out: String = folded.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_descriptions_and_one_lines() {
        let d = sanitize::model_description("notes", Some("Searches the notes.\nMore."));
        assert_eq!(plain_description(&d), "Searches the notes.\nMore.");
        let changed = format!("{CHANGED_NOTICE} {d}");
        assert_eq!(plain_description(&changed), "Searches the notes.\nMore.");
        assert_eq!(one_line("  First one. Second.\nThird", 100), "First one.");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("\n\n  spaced   out  ", 100), "spaced out");
    }

    #[test]
    fn loaded_tools_tell_of_what_each_load_added() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let seen = told.clone();
        let loaded = LoadedTools::with_listener(move |names| {
            seen.lock().unwrap().push(names.to_vec());
        });
        assert_eq!(loaded.load(["a".to_owned(), "b".to_owned()]), ["a", "b"]);
        assert_eq!(loaded.load(["b".to_owned()]), Vec::<String>::new());
        assert!(loaded.contains("a"));
        assert_eq!(
            *told.lock().unwrap(),
            [vec!["a".to_owned(), "b".to_owned()]]
        );
    }
}
