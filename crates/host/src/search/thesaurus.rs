//! A compact thesaurus of the words tool text and requests use for the same
//! thing: the verbs of tools (get, fetch, read, retrieve, show…), their
//! objects (issue, ticket, bug; repo, repository; file, document;
//! message, email, mail…), and the nouns of common services.
//!
//! A query word also searches for the other words of every group it is in,
//! at a lower weight ([`RELATED_WEIGHT`]), so "find the open bugs" reaches
//! `list_issues` although it shares no word with it. Groups are small and
//! close in meaning on purpose: a group that is too wide ranks unrelated
//! tools together. Words are written plainly; they go through the same
//! stemmer as the text ([`super::text::stem`]) when the map is built.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::text;

/// The weight of a related word against the query's own (1.0).
pub(crate) const RELATED_WEIGHT: f32 = 0.45;

/// The groups. One line each; a word may be in several.
const GROUPS: &[&[&str]] = &[
    // Verbs of reading.
    &[
        "get", "fetch", "read", "retrieve", "show", "view", "obtain", "load", "display", "see",
        "look", "open", "inspect", "check", "return", "download", "print",
    ],
    &["content", "contents", "body", "text", "inside", "data"],
    // Verbs of making.
    &[
        "create", "add", "new", "make", "insert", "generate", "build", "compose", "start",
        "register", "open", "file", "raise", "submit", "write",
    ],
    &["write", "save", "store", "put", "persist", "record", "overwrite", "upload", "push"],
    // Verbs of removing.
    &[
        "delete", "remove", "drop", "erase", "destroy", "clear", "purge", "discard", "trash",
        "forget", "rid", "wipe", "unlink",
    ],
    // Verbs of listing and finding.
    &["list", "enumerate", "browse", "index", "catalog", "all", "every", "available", "show"],
    &[
        "search", "find", "query", "lookup", "look", "locate", "seek", "discover", "grep",
        "filter", "match", "hunt",
    ],
    // Verbs of changing.
    &[
        "update", "edit", "modify", "change", "alter", "patch", "set", "revise", "amend", "adjust",
        "replace", "fix", "correct", "tweak",
    ],
    &["move", "rename", "relocate", "transfer", "mv"],
    &["copy", "duplicate", "clone", "fork", "replicate"],
    &["close", "resolve", "finish", "done", "complete", "end"],
    &["merge", "combine", "integrate", "land", "accept"],
    &["send", "post", "publish", "reply", "respond", "notify", "tell", "dm", "message"],
    &["run", "execute", "exec", "invoke", "launch", "perform", "evaluate", "eval"],
    &["convert", "translate", "transform", "turn"],
    &["wait", "pause", "sleep", "delay", "hold"],
    &["summarize", "summary", "digest", "overview", "describe", "description"],
    &["compare", "diff", "difference", "differ", "changes", "delta"],
    &["stage", "staged", "add", "index"],
    &["undo", "revert", "reset", "unstage", "rollback", "restore"],
    // Objects.
    &["issue", "ticket", "bug", "problem", "defect", "incident", "task"],
    &["repo", "repository", "project", "codebase", "source"],
    &["file", "document", "doc", "documents"],
    &["directory", "folder", "dir", "path"],
    &["tree", "hierarchy", "structure", "recursive", "nested"],
    &["message", "email", "mail", "chat", "dm", "text", "note", "post"],
    &["channel", "room", "conversation", "thread", "group"],
    &["comment", "reply", "remark", "feedback", "annotation", "note"],
    &["pull", "pr", "merge", "mr", "change", "patch", "contribution"],
    &["review", "approve", "approval", "feedback", "critique"],
    &["branch", "ref", "head", "checkout", "switch"],
    &["commit", "revision", "history", "log", "changeset", "changes"],
    &["user", "person", "people", "member", "account", "profile", "someone", "who"],
    &["team", "organization", "org", "workspace", "group"],
    &["entity", "node", "object", "item", "record", "thing", "concept"],
    &["relation", "relationship", "link", "connection", "edge", "association"],
    &["observation", "fact", "memory", "knowledge", "remember", "recall", "note"],
    &["graph", "network", "knowledge"],
    &["time", "clock", "hour", "date", "now", "current", "today"],
    &["timezone", "zone", "tz", "region"],
    &["url", "link", "web", "website", "page", "site", "internet", "online", "webpage", "http"],
    &["screenshot", "capture", "snapshot", "picture", "image", "photo"],
    &["click", "press", "tap", "hit", "push", "button"],
    &["type", "enter", "input", "fill", "key", "keyboard", "form"],
    &["navigate", "go", "visit", "browse", "goto", "load", "open"],
    &["back", "previous", "return"],
    &["tab", "window"],
    &["browser", "chrome", "page", "playwright"],
    &["drag", "drop", "hover", "mouse", "scroll"],
    &["console", "log", "error", "network", "request"],
    &["database", "db", "sql", "sqlite", "table", "row", "column", "schema"],
    &["query", "select", "sql"],
    &[
        "place", "location", "address", "geocode", "coordinate", "latitude", "longitude", "where",
        "map",
    ],
    &["direction", "route", "navigate", "travel", "drive", "distance", "trip"],
    &["nearby", "near", "around", "close", "restaurant", "cafe", "shop"],
    &["elevation", "altitude", "height"],
    &["size", "info", "metadata", "stat", "stats", "detail", "details", "property", "attribute"],
    &["think", "reason", "plan", "reflect", "thought", "step", "analyze", "problem"],
    &["status", "state", "progress", "health"],
    &["sum", "add", "total", "calculate", "compute", "math", "arithmetic"],
    &["echo", "repeat", "mirror", "ping"],
    &["pdf", "print", "export"],
    &["block", "paragraph", "section", "element"],
    &["database", "notion", "page", "wiki"],
    &["label", "tag", "category"],
    &["assign", "assignee", "owner", "responsible"],
    &["star", "favorite", "like", "bookmark"],
    &["emoji", "reaction", "react"],
    &["env", "environment", "variable", "config", "setting"],
    &["resource", "attachment", "asset"],
    &["long", "slow", "lengthy"],
    &["annotate", "annotation", "hint"],
    &["sample", "sampling", "llm", "model", "completion"],
];

/// A term's related terms (stemmed), its own excluded.
pub(crate) fn related(term: &str) -> &'static [String] {
    map().get(term).map(Vec::as_slice).unwrap_or(&[])
}

fn map() -> &'static HashMap<String, Vec<String>> {
    static MAP: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for group in GROUPS {
            let stems: Vec<String> = group.iter().map(|w| text::stem(w)).collect();
            for stem in &stems {
                let entry = map.entry(stem.clone()).or_default();
                for other in &stems {
                    if other != stem && !entry.contains(other) {
                        entry.push(other.clone());
                    }
                }
            }
        }
        map
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn related_words_go_both_ways_stemmed() {
        assert!(related("fetch").contains(&"retriev".to_owned()));
        assert!(related("retriev").contains(&"fetch".to_owned()));
        assert!(related("bug").contains(&text::stem("issue")));
        assert!(related("repo").contains(&"repository".to_owned()));
        assert!(!related("fetch").contains(&"fetch".to_owned()));
        assert!(related("zebra").is_empty());
    }
}
