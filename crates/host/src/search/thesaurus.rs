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
pub(crate) const RELATED_WEIGHT: f32 = 0.6;

/// What a number in a query is related to (stemmed `numbers`).
pub(crate) const NUMBER: &str = "number";

/// The groups. One line each; a word may be in several.
const GROUPS: &[&[&str]] = &[
    // Reading and showing.
    &[
        "get", "fetch", "read", "retrieve", "show", "view", "obtain", "load", "display", "see",
        "look", "open", "inspect", "check", "return", "download", "print", "dump", "access",
        "pull", "grab", "examine", "peek", "what", "say",
    ],
    &[
        "content", "contents", "body", "text", "data", "say", "says", "inside", "within",
    ],
    &[
        "detail",
        "details",
        "info",
        "information",
        "metadata",
        "about",
        "describe",
        "properties",
    ],
    // Making.
    &[
        "create",
        "add",
        "new",
        "make",
        "insert",
        "generate",
        "compose",
        "start",
        "register",
        "open",
        "raise",
        "submit",
        "establish",
        "initialize",
        "draft",
        "produce",
    ],
    &[
        "write",
        "save",
        "store",
        "put",
        "persist",
        "record",
        "overwrite",
        "upload",
        "push",
        "keep",
        "dump",
    ],
    &["append", "add", "attach", "extend", "insert", "include"],
    // Removing.
    &[
        "delete",
        "remove",
        "drop",
        "erase",
        "destroy",
        "clear",
        "purge",
        "discard",
        "trash",
        "forget",
        "rid",
        "wipe",
        "unlink",
        "kill",
        "cancel",
        "eliminate",
        "scrap",
    ],
    // Listing.
    &[
        "list",
        "enumerate",
        "browse",
        "index",
        "catalog",
        "all",
        "every",
        "available",
        "show",
        "which",
        "many",
        "exist",
        "inventory",
        "overview",
    ],
    // Finding.
    &[
        "search",
        "find",
        "query",
        "lookup",
        "look",
        "locate",
        "seek",
        "discover",
        "grep",
        "filter",
        "match",
        "hunt",
        "scan",
        "mention",
        "mentioning",
        "containing",
        "where",
    ],
    // Changing.
    &[
        "update", "edit", "modify", "change", "alter", "patch", "set", "revise", "amend", "adjust",
        "replace", "fix", "correct", "tweak", "rewrite", "refresh", "rework",
    ],
    &[
        "move",
        "rename",
        "relocate",
        "transfer",
        "mv",
        "reorganize",
        "shift",
    ],
    &["copy", "duplicate", "clone", "fork", "replicate", "mirror"],
    &[
        "close", "resolve", "finish", "done", "complete", "end", "shut",
    ],
    &[
        "merge",
        "combine",
        "integrate",
        "land",
        "accept",
        "incorporate",
    ],
    &[
        "send",
        "post",
        "publish",
        "reply",
        "respond",
        "notify",
        "tell",
        "dm",
        "message",
        "announce",
        "inform",
        "share",
        "broadcast",
        "ping",
        "answer",
    ],
    &[
        "run", "execute", "exec", "invoke", "launch", "perform", "evaluate", "eval", "trigger",
    ],
    &["convert", "translate", "transform", "turn", "change"],
    &["wait", "pause", "sleep", "delay", "hold", "until"],
    &[
        "summarize",
        "summary",
        "digest",
        "overview",
        "describe",
        "description",
        "abstract",
    ],
    &[
        "compare",
        "diff",
        "difference",
        "differences",
        "changes",
        "delta",
        "changed",
        "modified",
    ],
    &[
        "stage", "staged", "staging", "add", "index", "queue", "prepare", "prepared",
    ],
    &[
        "undo", "revert", "reset", "unstage", "rollback", "restore", "back",
    ],
    &[
        "propose",
        "suggest",
        "request",
        "submit",
        "contribution",
        "inclusion",
    ],
    &["switch", "checkout", "change", "jump", "toggle", "swap"],
    &["toggle", "enable", "disable", "turn", "switch", "on", "off"],
    &["compress", "zip", "gzip", "archive", "pack", "shrink"],
    // Work items.
    &[
        "issue", "ticket", "bug", "problem", "defect", "incident", "task", "tracker", "report",
        "crash",
    ],
    &[
        "open",
        "unresolved",
        "outstanding",
        "pending",
        "active",
        "state",
        "remaining",
        "still",
    ],
    &[
        "repo",
        "repository",
        "project",
        "codebase",
        "source",
        "code",
    ],
    &[
        "code",
        "source",
        "snippet",
        "script",
        "program",
        "function",
        "implementation",
    ],
    &["host", "github", "gitlab", "forge"],
    // Files.
    &[
        "file",
        "document",
        "doc",
        "documents",
        "disk",
        "readme",
        "filesystem",
        "drive",
        "storage",
    ],
    &["directory", "folder", "dir", "path", "location"],
    &[
        "tree",
        "hierarchy",
        "structure",
        "recursive",
        "recursively",
        "nested",
        "layout",
    ],
    &[
        "beneath",
        "below",
        "under",
        "within",
        "recursively",
        "subdirectory",
        "nested",
        "anywhere",
    ],
    &["entire", "whole", "everything", "full", "complete", "all"],
    &[
        "multiple", "many", "several", "batch", "bulk", "various", "files",
    ],
    &["size", "sizes", "big", "large", "space", "bytes", "much"],
    &[
        "modified",
        "modification",
        "touched",
        "changed",
        "updated",
        "timestamp",
        "mtime",
    ],
    // A file type names a file.
    &[
        "file", "png", "jpg", "jpeg", "gif", "pdf", "txt", "md", "csv", "json", "xlsx", "html",
        "rs", "py", "js",
    ],
    &["md", "markdown", "txt", "text", "plain"],
    &["line", "lines", "paragraph", "sentence", "text", "passage"],
    &["recent", "lately", "latest", "last", "newest", "since"],
    &[
        "allowed",
        "permitted",
        "access",
        "accessible",
        "permission",
        "authorized",
    ],
    // Conversation.
    &[
        "message",
        "email",
        "mail",
        "chat",
        "dm",
        "text",
        "note",
        "post",
        "say",
        "said",
        "talk",
        "conversation",
    ],
    &["channel", "room", "conversation", "thread", "group", "chat"],
    &[
        "comment",
        "reply",
        "remark",
        "feedback",
        "annotation",
        "note",
        "response",
        "said",
    ],
    &[
        "history", "past", "earlier", "previous", "backlog", "said", "lately",
    ],
    &["emoji", "reaction", "react", "thumbs", "like"],
    // Code review.
    &[
        "pull",
        "pr",
        "merge",
        "mr",
        "change",
        "patch",
        "contribution",
        "request",
    ],
    &[
        "review", "approve", "approval", "feedback", "critique", "lgtm",
    ],
    &[
        "status", "state", "progress", "health", "check", "checks", "ci", "pass", "passed", "build",
    ],
    &[
        "branch", "ref", "head", "checkout", "switch", "line", "develop",
    ],
    &[
        "commit",
        "revision",
        "history",
        "log",
        "changeset",
        "changes",
        "record",
    ],
    &[
        "working",
        "local",
        "locally",
        "workspace",
        "checkout",
        "unstaged",
    ],
    // People and places of work.
    &[
        "user",
        "person",
        "people",
        "member",
        "account",
        "profile",
        "someone",
        "who",
        "everyone",
        "teammate",
        "colleague",
    ],
    &[
        "team",
        "organization",
        "org",
        "workspace",
        "group",
        "company",
    ],
    &["profile", "avatar", "title", "job", "bio", "role"],
    &["namespace", "account", "organization", "owner"],
    // Knowledge.
    &[
        "entity", "node", "object", "item", "record", "thing", "concept", "person",
    ],
    &[
        "relation",
        "relationship",
        "link",
        "connection",
        "edge",
        "association",
        "between",
    ],
    &[
        "observation",
        "fact",
        "memory",
        "knowledge",
        "remember",
        "recall",
        "note",
        "know",
        "learned",
    ],
    &["graph", "network", "knowledge", "memory"],
    // Time.
    &[
        "time", "clock", "hour", "date", "now", "current", "today", "pm", "am", "oclock",
    ],
    &["timezone", "zone", "tz", "region", "city"],
    // The web.
    &[
        "url", "link", "web", "website", "page", "site", "internet", "online", "webpage", "http",
        "html", "article",
    ],
    &[
        "screenshot",
        "capture",
        "snapshot",
        "picture",
        "image",
        "photo",
        "grab",
        "looks",
    ],
    &[
        "image", "picture", "photo", "png", "jpg", "jpeg", "gif", "media", "logo", "icon",
    ],
    &["click", "press", "tap", "hit", "push", "button", "submit"],
    &[
        "type", "enter", "input", "fill", "key", "keyboard", "form", "box", "field", "typing",
    ],
    &[
        "navigate", "go", "visit", "browse", "goto", "load", "open", "jump",
    ],
    &["back", "previous", "return", "before", "history"],
    &["tab", "window", "windows", "tabs"],
    &["browser", "chrome", "page", "playwright", "site"],
    &["drag", "drop", "hover", "mouse", "scroll", "move"],
    &[
        "console",
        "log",
        "logged",
        "error",
        "errors",
        "javascript",
        "js",
        "warning",
    ],
    &["network", "request", "requests", "traffic", "http"],
    &["dialog", "popup", "alert", "confirm", "prompt"],
    &["dropdown", "option", "select", "choose", "pick", "menu"],
    &["resize", "size", "dimension", "width", "height", "viewport"],
    &["dark", "light", "theme", "color", "scheme", "mode"],
    &[
        "news",
        "headline",
        "headlines",
        "article",
        "articles",
        "story",
        "stories",
        "press",
    ],
    // Data.
    &[
        "database", "db", "sql", "sqlite", "table", "row", "column", "schema", "record",
    ],
    &["query", "select", "sql", "filter"],
    &["database", "notion", "page", "wiki", "workspace", "doc"],
    &[
        "block",
        "paragraph",
        "section",
        "element",
        "content",
        "children",
    ],
    &[
        "title", "heading", "header", "subject", "name", "called", "named",
    ],
    &["template", "boilerplate", "skeleton", "blueprint"],
    &["property", "properties", "field", "attribute", "column"],
    // Places.
    &[
        "place",
        "location",
        "address",
        "geocode",
        "coordinate",
        "coordinates",
        "latitude",
        "longitude",
        "where",
        "map",
        "spot",
    ],
    &[
        "direction",
        "route",
        "navigate",
        "travel",
        "drive",
        "distance",
        "trip",
        "far",
        "apart",
        "away",
        "get",
    ],
    &[
        "nearby",
        "near",
        "around",
        "close",
        "restaurant",
        "cafe",
        "coffee",
        "shop",
        "shops",
        "store",
        "business",
        "businesses",
        "local",
        "pizza",
        "bar",
    ],
    &["elevation", "altitude", "height", "high", "tall", "sea"],
    &["earth", "world", "globe", "planet"],
    // Reasoning and numbers.
    &[
        "think",
        "reason",
        "plan",
        "reflect",
        "thought",
        "step",
        "analyze",
        "problem",
        "puzzle",
        "solve",
        "stage",
        "carefully",
    ],
    &[
        "sum",
        "add",
        "total",
        "calculate",
        "compute",
        "math",
        "arithmetic",
        "plus",
        "together",
    ],
    &["echo", "repeat", "mirror", "ping", "back"],
    &["pdf", "print", "export"],
    &["label", "tag", "category"],
    &["assign", "assignee", "owner", "responsible"],
    &["star", "favorite", "bookmark"],
    &[
        "env",
        "environment",
        "variable",
        "variables",
        "config",
        "configuration",
        "setting",
        "settings",
    ],
    &["resource", "attachment", "asset", "assets"],
    &["long", "slow", "lengthy", "operation"],
    &["annotate", "annotation", "annotations", "hint"],
    &["sample", "sampling", "llm", "model", "completion"],
    &["research", "investigate", "study", "deep"],
    &["debug", "debugging", "diagnose", "troubleshoot", "logging"],
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
