//! The tool table: every mounted tool under its model-facing name, and the
//! reverse map back to `(alias, original name)` (DESIGN.md item 7).
//!
//! Names come from [`switchboard_wire::namespaced_tool_name`]: the prefix is
//! always applied, even with one server. Two tools whose names meet after
//! sanitising (`a.b` and `a_b`; alias `x` with tool `_y` and alias `x_` with
//! tool `y`) both get a hash suffix of their own `alias::tool`, so neither
//! depends on which server came first. The reverse map is the table itself;
//! a name is never split to find its server.
//!
//! Descriptions and titles are bounded ([`DescriptionLimits`]): each tool's
//! description to a cap, each title to another, and each server's tools
//! together to a share of the table, so one server cannot fill the model's
//! context with text. The share is split by water-filling: tools whose
//! descriptions are short keep them whole, and the long ones are cut to
//! one common length (never below [`MIN_SHARE_CHARS`]), so the cut falls on
//! the text that caused it and does not depend on the server's order.

use std::collections::{BTreeMap, HashMap};

use sha1::{Digest, Sha1};
use switchboard_client::Dropped;
use switchboard_wire::naming::MAX_TOOL_NAME;
use switchboard_wire::{JsonObject, Tool, namespaced_tool_name};

use crate::sanitize;

/// The default cap on one tool's description, in characters (of the
/// cleaned server text).
pub(crate) const DEFAULT_DESCRIPTION_CHARS: usize = 2_000;
/// The default cap on a title, in characters.
pub(crate) const DEFAULT_TITLE_CHARS: usize = 100;
/// The default share of one server: its tools' descriptions together, in
/// characters.
pub(crate) const DEFAULT_SERVER_DESCRIPTION_CHARS: usize = 40_000;
/// The least a description is cut to for its server's share: a server
/// with very many tools goes over its share rather than leaving them
/// unexplained (and `doctor` says so).
pub(crate) const MIN_SHARE_CHARS: usize = 200;

/// How long server text in the tool table may be (config
/// `descriptionLimits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptionLimits {
    /// Characters of one tool's description (`description`).
    pub description: usize,
    /// Characters of one title (`title`).
    pub title: usize,
    /// Characters of one server's descriptions together (`perServer`).
    pub per_server: usize,
}

impl Default for DescriptionLimits {
    fn default() -> Self {
        DescriptionLimits {
            description: DEFAULT_DESCRIPTION_CHARS,
            title: DEFAULT_TITLE_CHARS,
            per_server: DEFAULT_SERVER_DESCRIPTION_CHARS,
        }
    }
}

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
    /// The characters of the cleaned server description.
    pub description_chars: usize,
    /// The characters it was held to: the description cap, or less for
    /// the server's share ([`DescriptionLimits`]).
    pub description_cap: usize,
    /// The title the model reads: cleaned and bounded.
    pub title: Option<String>,
    /// The input schema the model reads: the server's, with descriptions
    /// and titles cleaned.
    pub input_schema: JsonObject,
    /// The definition's pin hash (`pins::fingerprint`), computed
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
    model_view_within(alias, tool, DEFAULT_DESCRIPTION_CHARS)
}

/// [`model_view`] with the description held to `cap` characters.
pub(crate) fn model_view_within(alias: &str, tool: &Tool, cap: usize) -> (String, JsonObject) {
    let mut input_schema = tool.input_schema.clone();
    sanitize::clean_schema(&mut input_schema);
    let cleaned = tool
        .description
        .as_deref()
        .map(sanitize::clean_description)
        .unwrap_or_default();
    let description = sanitize::model_description_within(alias, &cleaned, cap);
    (with_deprecation(alias, tool, description), input_schema)
}

/// `description` after the short note saying `tool` is deprecated, when
/// its server marks it so. The note goes first, so no cut of the
/// description can hide it.
fn with_deprecation(alias: &str, tool: &Tool, description: String) -> String {
    match tool.deprecation() {
        Some(d) => format!(
            "{} {description}",
            crate::compat::deprecation_note(alias, &d)
        ),
        None => description,
    }
}

/// The cap of one server's descriptions (`lengths`: each one's
/// characters) under `limits`: the description cap, or for a server over
/// its share the one level that the longest are cut to (water-filling),
/// never below [`MIN_SHARE_CHARS`].
pub(crate) fn share_caps(lengths: &[usize], limits: &DescriptionLimits) -> usize {
    let capped: Vec<usize> = lengths
        .iter()
        .map(|n| (*n).min(limits.description))
        .collect();
    if capped.iter().sum::<usize>() <= limits.per_server {
        return limits.description;
    }
    let mut sorted = capped;
    sorted.sort_unstable();
    let mut left = limits.per_server;
    let n = sorted.len();
    let mut level = limits.description;
    for (i, len) in sorted.iter().enumerate() {
        let share = left / (n - i);
        if *len > share {
            level = share;
            break;
        }
        left -= len;
    }
    level.max(MIN_SHARE_CHARS.min(limits.description))
}

/// The table: entries in name order, plus the reverse map.
#[derive(Debug, Clone, Default)]
pub struct ToolTable {
    entries: Vec<TableEntry>,
    /// Looked up on every call: foldhash (seeded per table), several
    /// times cheaper than SipHash for short names. Its `quality` flavour,
    /// not the server registry's `fast` one: these names come from
    /// downstream servers, which may choose them to collide.
    index: HashMap<String, usize, foldhash::quality::RandomState>,
}

impl ToolTable {
    /// The table of these servers' listings: `(alias, tools, tools the
    /// listing left out)` each, as the host mounts them and `doctor`
    /// checks them. See [`ToolTable::build`].
    pub fn of_listings(listings: &[Listed]) -> (ToolTable, Vec<DroppedTool>) {
        ToolTable::of_listings_within(listings, &DescriptionLimits::default())
    }

    /// [`ToolTable::of_listings`] with these description limits.
    pub fn of_listings_within(
        listings: &[Listed],
        limits: &DescriptionLimits,
    ) -> (ToolTable, Vec<DroppedTool>) {
        let inputs: Vec<ServerTools<'_>> = listings
            .iter()
            .map(|(alias, tools, dropped)| ServerTools {
                alias,
                tools,
                dropped,
            })
            .collect();
        ToolTable::build_within(&inputs, limits)
    }

    /// Builds the table from every server's tools, with the default
    /// description limits.
    ///
    /// # Returns
    /// The table (sorted by model-facing name) and the tools left out with
    /// their reasons.
    pub fn build(servers: &[ServerTools<'_>]) -> (ToolTable, Vec<DroppedTool>) {
        ToolTable::build_within(servers, &DescriptionLimits::default())
    }

    /// [`ToolTable::build`] with these description limits.
    pub fn build_within(
        servers: &[ServerTools<'_>],
        limits: &DescriptionLimits,
    ) -> (ToolTable, Vec<DroppedTool>) {
        let mut dropped = Vec::new();
        // Name, alias, tool, cleaned description, its cap.
        let mut candidates: Vec<(String, &str, &Tool, String, usize)> = Vec::new();
        for server in servers {
            dropped.extend(server.dropped.iter().map(|d| DroppedTool {
                alias: server.alias.to_owned(),
                name: d.name.clone(),
                reason: d.reason.clone(),
            }));
            let mut seen = std::collections::HashSet::new();
            let first = candidates.len();
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
                let cleaned = tool
                    .description
                    .as_deref()
                    .map(sanitize::clean_description)
                    .unwrap_or_default();
                candidates.push((
                    namespaced_tool_name(server.alias, &tool.name),
                    server.alias,
                    tool,
                    cleaned,
                    limits.description,
                ));
            }
            // The server's share, over the tools it keeps.
            let mine = &mut candidates[first..];
            let lengths: Vec<usize> = mine.iter().map(|c| c.3.chars().count()).collect();
            let cap = share_caps(&lengths, limits);
            for c in mine {
                c.4 = cap;
            }
        }

        let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, ..) in &candidates {
            *groups.entry(name.as_str()).or_default() += 1;
        }
        let colliding: std::collections::HashSet<String> = groups
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(name, _)| name.to_owned())
            .collect();

        let mut entries: Vec<TableEntry> = Vec::with_capacity(candidates.len());
        for (name, alias, tool, cleaned, cap) in candidates {
            let local_name = if colliding.contains(&name) {
                disambiguated(alias, &tool.name)
            } else {
                name
            };
            let mut input_schema = tool.input_schema.clone();
            sanitize::clean_schema(&mut input_schema);
            entries.push(TableEntry {
                description: with_deprecation(
                    alias,
                    tool,
                    sanitize::model_description_within(alias, &cleaned, cap),
                ),
                description_chars: cleaned.chars().count(),
                description_cap: cap,
                title: tool
                    .title
                    .as_deref()
                    .map(|t| sanitize::model_title(t, limits.title)),
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

    // A 200,000-character description reaches the model cut to the cap,
    // with a note saying so; the title is cut too; a short one is whole.
    #[test]
    fn a_huge_description_and_title_are_cut_with_a_note() {
        let mut huge = tool("huge", &"word ".repeat(40_000));
        huge.title = Some("T".repeat(500));
        let (table, _) = build(&[("a", vec![huge, tool("small", "Finds things.")])]);
        let e = table.get("mcp__a__huge").unwrap();
        assert_eq!(e.description_chars, 199_999);
        assert!(
            e.description.len() < DEFAULT_DESCRIPTION_CHARS + 300,
            "{}",
            e.description.len()
        );
        assert!(
            e.description.ends_with(
                "[switchboard: this description was cut to its first 2000 of 199999 characters]"
            ),
            "{}",
            &e.description[e.description.len() - 120..]
        );
        // The cut text stays inside the markers; the note is outside.
        assert!(e.description.contains(sanitize::CLOSE_TAG));
        let title = e.title.as_deref().unwrap();
        assert_eq!(
            title.chars().count(),
            DEFAULT_TITLE_CHARS + "… [cut]".chars().count()
        );
        assert!(title.ends_with("… [cut]"));
        let small = table.get("mcp__a__small").unwrap();
        assert!(small.description.contains("Finds things.") && !small.description.contains("cut"));
    }

    // Over its share, a server's long descriptions are cut to one level
    // (water-filling); short ones stay whole; other servers are untouched.
    #[test]
    fn a_server_over_its_share_has_its_longest_descriptions_cut() {
        let limits = DescriptionLimits {
            description: 2_000,
            title: 100,
            per_server: 3_000,
        };
        let many: Vec<Tool> = (0..4)
            .map(|i| tool(&format!("long{i}"), &"x".repeat(1_500)))
            .chain([tool("short", &"y".repeat(300))])
            .collect();
        let inputs = [
            ServerTools {
                alias: "big",
                tools: &many,
                dropped: &[],
            },
            ServerTools {
                alias: "other",
                tools: &[tool("t", &"z".repeat(1_500))],
                dropped: &[],
            },
        ];
        let (table, _) = ToolTable::build_within(&inputs, &limits);
        // 3000 - 300 left for four: 675 each.
        let long = table.get("mcp__big__long0").unwrap();
        assert_eq!(long.description_cap, 675);
        assert!(
            long.description
                .contains("cut to its first 675 of 1500 characters")
        );
        let short = table.get("mcp__big__short").unwrap();
        assert!(!short.description.contains("[switchboard:"));
        assert!(
            !table
                .get("mcp__other__t")
                .unwrap()
                .description
                .contains("[switchboard:")
        );
        // Never below the floor, however many tools.
        let lots: Vec<usize> = vec![1_500; 1_000];
        assert_eq!(share_caps(&lots, &limits), MIN_SHARE_CHARS);
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
