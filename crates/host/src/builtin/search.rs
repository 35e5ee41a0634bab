//! `mcp__switchboard__search_tools`: the tool a model whose table is
//! deferred uses to find the others. It searches what the model may see
//! (and, through a gateway, what the caller's rules let it call), returns
//! each found tool's name, server and one-line description (server text,
//! inside boundary markers), and loads them into the caller's session
//! ([`CallOptions::loaded`](crate::CallOptions::loaded)), so their full
//! definitions are sent from the next request on.

use serde_json::{Value, json};
use switchboard_wire::{CallToolResult, ContentBlock, JsonObject, Tool};

use super::{BuiltinCall, BuiltinGate, BuiltinOutcome, BuiltinTool};
use crate::approver::BoxFuture;
use crate::sanitize;

/// The name after `mcp__switchboard__`.
pub const SEARCH_TOOLS: &str = "search_tools";
/// How many tools a search returns unless told.
pub const DEFAULT_LIMIT: usize = 5;
/// The most a search returns.
pub const MAX_LIMIT: usize = 20;

/// The tool search, as a built-in tool.
#[derive(Debug, Default)]
pub(crate) struct SearchTools;

impl BuiltinTool for SearchTools {
    fn definition(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What you want to do, in a few words (e.g. \"create a GitHub issue\", \"read a file\")."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": format!("How many tools to return (default {DEFAULT_LIMIT}).")
                }
            },
            "required": ["query"]
        });
        let mut tool = Tool::new(
            SEARCH_TOOLS,
            "Search the tools of every mounted server that are not in your tool list yet. \
             Returns the best matches (name, server, one line each); the tools found are \
             added to your tool list from your next turn on, so call them then by name. \
             Search again with other words if none fits.",
            match schema {
                Value::Object(o) => o,
                _ => JsonObject::new(),
            },
        );
        tool.title = Some("Search tools".into());
        tool
    }

    fn gate(&self) -> BuiltinGate {
        // It reads only what the model may see already.
        BuiltinGate::Allow
    }

    fn call<'a>(&'a self, call: BuiltinCall<'a>) -> BoxFuture<'a, BuiltinOutcome> {
        Box::pin(async move {
            let query = match call.string_argument("query") {
                Ok(q) if !q.trim().is_empty() => q.to_owned(),
                Ok(_) => {
                    return BuiltinOutcome::error("The query is empty: say what you want to do.");
                }
                Err(e) => return BuiltinOutcome::error(e),
            };
            let limit = match call.arguments.as_ref().and_then(|a| a.get("limit")) {
                None => DEFAULT_LIMIT,
                Some(v) => match v.as_u64() {
                    Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => {
                        usize::try_from(n).unwrap_or(DEFAULT_LIMIT)
                    }
                    _ => {
                        return BuiltinOutcome::error(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}."
                        ));
                    }
                },
            };
            let found = call.host.search_tools(&query, limit, call.principal());
            if found.is_empty() {
                return BuiltinOutcome::result(CallToolResult::text(format!(
                    "No tool matches {query:?}. Try other words (what the tool does, or the service it works with)."
                )));
            }
            if let Some(loaded) = &call.options.loaded {
                loaded.load(found.iter().map(|f| f.tool.name.clone()));
            }
            let mut lines = vec![format!(
                "{} tool(s) found; they are in your tool list from now on:",
                found.len()
            )];
            for f in &found {
                lines.push(format!(
                    "- {} (server {}): {}",
                    f.tool.name,
                    f.tool.server,
                    sanitize::wrap(&f.tool.server, None, &f.summary)
                ));
            }
            let structured = json!({
                "tools": found.iter().map(|f| json!({
                    "name": f.tool.name,
                    "server": f.tool.server,
                    "description": f.summary,
                })).collect::<Vec<_>>()
            });
            BuiltinOutcome::result(CallToolResult {
                content: vec![ContentBlock::text(lines.join("\n"))],
                structured_content: Some(structured),
                ..CallToolResult::text("")
            })
        })
    }
}
