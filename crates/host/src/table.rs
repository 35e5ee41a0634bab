//! The tool table: every mounted tool under its model-facing name, and the
//! reverse map back to `(alias, original name)` (DESIGN.md item 7).
//!
//! Names come from [`switchboard_wire::namespaced_tool_name`]: the prefix is
//! always applied, even with one server. Two tools whose names meet after
//! sanitising (`a.b` and `a_b`; alias `x` with tool `_y` and alias `x_` with
//! tool `y`) both get a hash suffix of their own `alias::tool`, so neither
//! depends on which server came first. The reverse map is the table itself;
//! a name is never split to find its server.

use std::collections::{BTreeMap, HashMap};

use sha1::{Digest, Sha1};
use switchboard_client::Dropped;
use switchboard_wire::naming::MAX_TOOL_NAME;
use switchboard_wire::{JsonObject, Tool, namespaced_tool_name};

use crate::sanitize;

/// One tool in the table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableEntry {
    /// The model-facing name, `mcp__alias__tool` or its hashed form.
    pub local_name: String,
    /// The user's alias of the server.
    pub alias: String,
    /// The definition exactly as the server sent it.
    pub tool: Tool,
    /// What the model reads: `[from alias]` and the cleaned, bounded text.
    pub description: String,
    /// The input schema the model reads: the server's, with descriptions
    /// and titles cleaned.
    pub input_schema: JsonObject,
    /// The definition's pin hash ([`crate::pins::fingerprint`]), computed
    /// once when the table is built, never per call.
    pub fingerprint: String,
}

/// A tool left out of the table, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedTool {
    /// The server's alias.
    pub alias: String,
    /// The tool's name on the server.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// The tools of one server, as input to [`ToolTable::build`].
#[derive(Debug, Clone)]
pub struct ServerTools<'a> {
    /// The server's alias.
    pub alias: &'a str,
    /// Its tools, in the server's order.
    pub tools: &'a [Tool],
    /// Tools its listing already left out, with the client's reasons
    /// (invalid `x-mcp-header` annotations over HTTP; HTTP-C-12): reported
    /// with the table's own drops.
    pub dropped: &'a [Dropped],
}

/// One server's listing: its alias, its tools, and the tools the listing
/// left out with the client's reasons.
pub type Listed = (String, Vec<Tool>, Vec<Dropped>);

/// What the model reads of `tool` of `alias`: the description (`[from
/// alias]` and the cleaned server text inside boundary markers, after a
/// short note when the server marks the tool deprecated) and the input
/// schema with its descriptions and titles cleaned.
pub fn model_view(alias: &str, tool: &Tool) -> (String, JsonObject) {
    let mut input_schema = tool.input_schema.clone();
    sanitize::clean_schema(&mut input_schema);
    let description = sanitize::model_description(alias, tool.description.as_deref());
    let description = match tool.deprecation() {
        Some(d) => format!(
            "{} {description}",
            crate::compat::deprecation_note(alias, &d)
        ),
        None => description,
    };
    (description, input_schema)
}

/// The table: entries in name order, plus the reverse map.
#[derive(Debug, Clone, Default)]
pub struct ToolTable {
    entries: Vec<TableEntry>,
    index: HashMap<String, usize>,
}

impl ToolTable {
    /// The table of these servers' listings: `(alias, tools, tools the
    /// listing left out)` each, as the host mounts them and `doctor`
    /// checks them. See [`ToolTable::build`].
    pub fn of_listings(listings: &[Listed]) -> (ToolTable, Vec<DroppedTool>) {
        let inputs: Vec<ServerTools<'_>> = listings
            .iter()
            .map(|(alias, tools, dropped)| ServerTools {
                alias,
                tools,
                dropped,
            })
            .collect();
        ToolTable::build(&inputs)
    }

    /// Builds the table from every server's tools.
    ///
    /// # Returns
    /// The table (sorted by model-facing name) and the tools left out with
    /// their reasons.
    pub fn build(servers: &[ServerTools<'_>]) -> (ToolTable, Vec<DroppedTool>) {
        let mut dropped = Vec::new();
        let mut candidates: Vec<(String, &str, &Tool)> = Vec::new();
        for server in servers {
            dropped.extend(server.dropped.iter().map(|d| DroppedTool {
                alias: server.alias.to_owned(),
                name: d.name.clone(),
                reason: d.reason.clone(),
            }));
            let mut seen = std::collections::HashSet::new();
            for tool in server.tools {
                let drop = |reason: String| DroppedTool {
                    alias: server.alias.to_owned(),
                    name: tool.name.clone(),
                    reason,
                };
                if tool.name.is_empty() {
                    dropped.push(drop("the tool has an empty name".into()));
                    continue;
                }
                if !seen.insert(tool.name.as_str()) {
                    dropped.push(drop(
                        "the server lists this name more than once; the first is kept".into(),
                    ));
                    continue;
                }
                candidates.push((
                    namespaced_tool_name(server.alias, &tool.name),
                    server.alias,
                    tool,
                ));
            }
        }

        let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, _, _) in &candidates {
            *groups.entry(name.as_str()).or_default() += 1;
        }
        let colliding: std::collections::HashSet<String> = groups
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(name, _)| name.to_owned())
            .collect();

        let mut entries: Vec<TableEntry> = Vec::with_capacity(candidates.len());
        for (name, alias, tool) in candidates {
            let local_name = if colliding.contains(&name) {
                disambiguated(alias, &tool.name)
            } else {
                name
            };
            let (description, input_schema) = model_view(alias, tool);
            entries.push(TableEntry {
                description,
                local_name,
                alias: alias.to_owned(),
                fingerprint: crate::pins::fingerprint(tool),
                tool: tool.clone(),
                input_schema,
            });
        }
        entries.sort_by(|a, b| {
            a.local_name
                .cmp(&b.local_name)
                .then_with(|| a.alias.cmp(&b.alias))
                .then_with(|| a.tool.name.cmp(&b.tool.name))
        });

        let mut table = ToolTable::default();
        for entry in entries {
            if table.index.contains_key(&entry.local_name) {
                // Only a hash-suffix collision lands here; keep the first.
                dropped.push(DroppedTool {
                    alias: entry.alias.clone(),
                    name: entry.tool.name.clone(),
                    reason: format!(
                        "its name {} collides with another tool's even after disambiguation",
                        entry.local_name
                    ),
                });
                continue;
            }
            table
                .index
                .insert(entry.local_name.clone(), table.entries.len());
            table.entries.push(entry);
        }
        (table, dropped)
    }

    /// The entry of a model-facing name.
    pub fn get(&self, local_name: &str) -> Option<&TableEntry> {
        self.index.get(local_name).map(|i| &self.entries[*i])
    }

    /// Every entry, in name order.
    pub fn entries(&self) -> &[TableEntry] {
        &self.entries
    }

    /// The entries of one server.
    pub fn of(&self, alias: &str) -> impl Iterator<Item = &TableEntry> {
        self.entries.iter().filter(move |e| e.alias == alias)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The name of a tool whose plain name collides: the sanitised name cut to
/// leave room, then `_` and six hex digits of `sha1("alias::tool")`.
fn disambiguated(alias: &str, tool: &str) -> String {
    let plain = namespaced_tool_name(alias, tool);
    let digest = Sha1::digest(format!("{alias}::{tool}").as_bytes());
    let hex: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
    let suffix = format!("_{hex}");
    if plain.len() + suffix.len() <= MAX_TOOL_NAME {
        return format!("{plain}{suffix}");
    }
    // A long name already ends with the same hash; cut before it.
    let keep = MAX_TOOL_NAME - suffix.len();
    // The namespaced name is ASCII, so any byte index is a char boundary.
    format!("{}{suffix}", &plain[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        Tool::new(
            name,
            description,
            json!({"type": "object"}).as_object().unwrap().clone(),
        )
    }

    fn build(servers: &[(&str, Vec<Tool>)]) -> (ToolTable, Vec<DroppedTool>) {
        let inputs: Vec<ServerTools<'_>> = servers
            .iter()
            .map(|(alias, tools)| ServerTools {
                alias,
                tools,
                dropped: &[],
            })
            .collect();
        ToolTable::build(&inputs)
    }

    fn names(table: &ToolTable) -> Vec<&str> {
        table
            .entries()
            .iter()
            .map(|e| e.local_name.as_str())
            .collect()
    }

    #[test]
    fn prefix_always_applied_and_order_is_by_name() {
        let (table, dropped) = build(&[("z", vec![tool("b", ""), tool("a", "")])]);
        assert!(dropped.is_empty());
        assert_eq!(names(&table), ["mcp__z__a", "mcp__z__b"]);
        let entry = table.get("mcp__z__b").unwrap();
        assert_eq!((entry.alias.as_str(), entry.tool.name.as_str()), ("z", "b"));
    }

    #[test]
    fn same_tool_name_on_two_servers() {
        let (table, _) = build(&[
            ("notes", vec![tool("search", "notes search")]),
            ("tickets", vec![tool("search", "ticket search")]),
        ]);
        assert_eq!(
            names(&table),
            ["mcp__notes__search", "mcp__tickets__search"]
        );
        assert!(
            table
                .get("mcp__tickets__search")
                .unwrap()
                .description
                .starts_with("[from tickets] ")
        );
    }

    #[test]
    fn names_that_meet_after_sanitising_both_get_suffixes() {
        let (table, dropped) = build(&[("a", vec![tool("x.y", ""), tool("x_y", "")])]);
        assert!(dropped.is_empty());
        let n = names(&table);
        assert_eq!(n.len(), 2);
        assert!(
            n.iter()
                .all(|n| n.starts_with("mcp__a__x_y_") && n.len() == "mcp__a__x_y_".len() + 6)
        );
        assert_ne!(n[0], n[1]);
        // The same across server boundaries: alias `x` + `_y` meets `x_` + `y`.
        let (table, _) = build(&[("x", vec![tool("_y", "")]), ("x_", vec![tool("y", "")])]);
        let n = names(&table);
        assert_eq!(n.len(), 2);
        assert_ne!(n[0], n[1]);
        // Order of the servers does not change the names.
        let (again, _) = build(&[("x_", vec![tool("y", "")]), ("x", vec![tool("_y", "")])]);
        assert_eq!(names(&again), n);
    }

    #[test]
    fn long_colliding_names_stay_within_64() {
        let long = "t".repeat(70);
        let (table, _) = build(&[(
            "a",
            vec![
                tool(&format!("{long}.x"), ""),
                tool(&format!("{long}_x"), ""),
            ],
        )]);
        for n in names(&table) {
            assert_eq!(n.len(), 64);
        }
        assert_ne!(names(&table)[0], names(&table)[1]);
    }

    #[test]
    fn tools_the_listing_dropped_are_reported_with_the_table_drops() {
        // The client leaves out tools with bad x-mcp-header annotations
        // (HTTP-C-12); the table reports them under the server's alias
        // beside its own drops.
        let listed_out = [Dropped {
            name: "bad".into(),
            reason: "invalid x-mcp-header annotation: N".into(),
        }];
        let tools = vec![tool("good", ""), tool("good", "")];
        let (table, dropped) = ToolTable::build(&[ServerTools {
            alias: "h",
            tools: &tools,
            dropped: &listed_out,
        }]);
        assert_eq!(names(&table), ["mcp__h__good"]);
        let said: Vec<_> = dropped
            .iter()
            .map(|d| (d.alias.as_str(), d.name.as_str()))
            .collect();
        assert_eq!(said, [("h", "bad"), ("h", "good")]);
        assert!(dropped[0].reason.contains("x-mcp-header"), "{dropped:?}");
    }

    #[test]
    fn duplicate_and_empty_names_are_dropped_with_reasons() {
        let (table, dropped) = build(&[(
            "a",
            vec![tool("t", "first"), tool("t", "second"), tool("", "")],
        )]);
        assert_eq!(table.len(), 1);
        assert!(
            table
                .get("mcp__a__t")
                .unwrap()
                .description
                .contains("first")
        );
        assert_eq!(dropped.len(), 2);
    }
}
