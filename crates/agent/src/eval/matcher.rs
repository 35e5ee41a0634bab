//! Judging what the model did against what a case expects.
//!
//! Tool names are resolved through the [`Catalog`] (the governed tool list
//! of the run), never by splitting `mcp__alias__tool`: a case may name a
//! tool by its namespaced name or by alias and original name, and both
//! reach the same entry.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::case::{ArgMatch, Case, Expect, FieldMatch, ToolRef};

/// One tool of the list the model was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The model-facing name (`mcp__alias__tool`).
    pub name: String,
    /// The server's alias.
    pub alias: String,
    /// The tool's name on the server.
    pub original_name: String,
}

/// The tool list of a run, for resolving names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    entries: Vec<CatalogEntry>,
}

impl Catalog {
    /// A catalog of `entries`.
    pub fn new(entries: Vec<CatalogEntry>) -> Catalog {
        Catalog { entries }
    }

    /// Every entry.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The entry with this model-facing name.
    pub fn by_name(&self, name: &str) -> Option<&CatalogEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The entry a case's reference names.
    pub fn resolve(&self, tool: &ToolRef) -> Option<&CatalogEntry> {
        match tool {
            ToolRef::Namespaced(name) => self.by_name(name),
            ToolRef::Original { alias, name } => self
                .entries
                .iter()
                .find(|e| &e.alias == alias && &e.original_name == name),
        }
    }
}

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// The name the model used.
    pub name: String,
    /// The arguments it gave.
    pub arguments: Value,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.arguments)
    }
}

/// What the model did in one run of a case.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    /// The calls of each model turn, in order. The first turn's first call
    /// is the one judged; later turns exist only with `--follow`. A turn
    /// without calls ends the run.
    pub turns: Vec<Vec<Call>>,
    /// The text the model answered with in its last turn, if any.
    pub text: Option<String>,
    /// The provider failed (after retries): no selection was made.
    pub error: Option<String>,
    /// Whether the table was deferred (tool search on).
    pub deferred: bool,
    /// The queries of the model's `search_tools` calls, in order (they are
    /// answered, and left out of `turns`).
    pub searches: Vec<String>,
    /// Estimated tokens of the tool definitions sent, over every request
    /// of the run.
    pub tool_tokens: u64,
}

impl Observation {
    /// A run that ended with a provider error.
    pub fn failed(error: impl Into<String>) -> Observation {
        Observation {
            error: Some(error.into()),
            ..Observation::default()
        }
    }

    /// What the model did, in a few words.
    pub fn summary(&self) -> String {
        if let Some(e) = &self.error {
            return format!("error: {e}");
        }
        let calls: Vec<String> = self
            .turns
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| {
                t.iter()
                    .map(Call::to_string)
                    .collect::<Vec<_>>()
                    .join(" + ")
            })
            .collect();
        if calls.is_empty() {
            return match self
                .text
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
            {
                Some(text) => format!("no tool ({:?})", super::report::clip(text, 50)),
                None => "no tool".into(),
            };
        }
        calls.join(", then ")
    }
}

/// The verdict on one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatchVerdict {
    /// Whether the run passed.
    pub pass: bool,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Whether the failure is the provider's, not the model's choice.
    pub error: bool,
}

impl MatchVerdict {
    fn pass() -> MatchVerdict {
        MatchVerdict {
            pass: true,
            why: None,
            error: false,
        }
    }

    fn fail(why: String) -> MatchVerdict {
        MatchVerdict {
            pass: false,
            why: Some(why),
            error: false,
        }
    }
}

/// Judges `seen` against `case`; with `follow`, the case's follow steps
/// are judged too.
pub fn judge(case: &Case, seen: &Observation, catalog: &Catalog, follow: bool) -> MatchVerdict {
    if let Some(e) = &seen.error {
        return MatchVerdict {
            pass: false,
            why: Some(format!("the provider failed: {e}")),
            error: true,
        };
    }
    let every_call = seen.turns.iter().flatten();
    for call in every_call {
        let called = catalog.by_name(&call.name);
        for forbidden in &case.must_not_call {
            let hit = match (called, catalog.resolve(forbidden)) {
                (Some(c), Some(f)) => c == f,
                // A forbidden tool missing from the list can still be named.
                (None, _) => matches!(forbidden, ToolRef::Namespaced(n) if *n == call.name),
                (Some(_), None) => false,
            };
            if hit {
                return MatchVerdict::fail(format!("called {}, which the case forbids", call.name));
            }
        }
    }
    if case.search_first && seen.deferred && seen.searches.is_empty() {
        return MatchVerdict::fail("called no mcp__switchboard__search_tools before choosing a tool, and the case expects a search first".to_owned());
    }
    let mut steps = vec![&case.expect];
    if follow {
        steps.extend(case.follow.iter().map(|s| &s.expect));
    }
    for (i, expect) in steps.into_iter().enumerate() {
        let calls = seen.turns.get(i).map_or(&[][..], Vec::as_slice);
        let at = if i == 0 {
            String::new()
        } else {
            format!("after follow step {i}: ")
        };
        if let Err(why) = judge_step(expect, calls, catalog) {
            return MatchVerdict::fail(format!("{at}{why}"));
        }
    }
    MatchVerdict::pass()
}

fn judge_step(expect: &Expect, calls: &[Call], catalog: &Catalog) -> Result<(), String> {
    match expect {
        Expect::NoTool => match calls.first() {
            None => Ok(()),
            Some(c) => Err(format!("called {}, but no tool should be called", c.name)),
        },
        Expect::Tool { tool, arguments } => {
            let Some(want) = catalog.resolve(tool) else {
                return Err(format!(
                    "the expected tool {tool} is not in the tool list (is its server up? see `switchboard tools`)"
                ));
            };
            let Some(call) = calls.first() else {
                return Err(format!("called no tool, expected {}", want.name));
            };
            match catalog.by_name(&call.name) {
                None => Err(format!(
                    "called {}, which is not in the tool list; expected {}",
                    call.name, want.name
                )),
                Some(got) if got != want => {
                    Err(format!("called {} instead of {}", got.name, want.name))
                }
                Some(_) => match_arguments(arguments, &call.arguments)
                    .map_err(|why| format!("called {} with wrong arguments: {why}", want.name)),
            }
        }
    }
}

/// Checks `args` against `m`.
///
/// # Errors
/// The first mismatch, in words.
pub fn match_arguments(m: &ArgMatch, args: &Value) -> Result<(), String> {
    let empty = Map::new();
    let object = match args {
        Value::Object(o) => o,
        // Some providers send no arguments for a tool without parameters.
        Value::Null => &empty,
        other => return Err(format!("the arguments are not an object: {other}")),
    };
    if let Some(exact) = &m.exact {
        if !json_eq(
            &Value::Object(exact.clone()),
            &Value::Object(object.clone()),
        ) {
            return Err(format!(
                "expected exactly {}, got {}",
                Value::Object(exact.clone()),
                Value::Object(object.clone())
            ));
        }
    }
    if let Some(subset) = &m.subset {
        for (key, want) in subset {
            match object.get(key) {
                None => return Err(format!("{key} is missing (expected {want})")),
                Some(got) if !json_eq(want, got) => {
                    return Err(format!("{key} is {got}, expected {want}"));
                }
                Some(_) => {}
            }
        }
    }
    for (key, matcher) in &m.fields {
        let got = object.get(key);
        let ok = match (matcher, got) {
            (FieldMatch::Absent, None) | (FieldMatch::Present, Some(_)) => true,
            (FieldMatch::Equals(want), Some(got)) => json_eq(want, got),
            (FieldMatch::Regex(r), Some(Value::String(s))) => r.is_match(s),
            _ => false,
        };
        if !ok {
            let got = got.map_or_else(|| "missing".to_owned(), Value::to_string);
            return Err(format!("{key} is {got}, expected {key} {matcher}"));
        }
    }
    Ok(())
}

/// JSON equality where `3` and `3.0` are the same number and key order
/// does not matter.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::eval::case::parse;
    use serde_json::json;

    fn catalog() -> Catalog {
        Catalog::new(
            [
                ("mcp__notes__search", "notes", "search"),
                ("mcp__tickets__search", "tickets", "search"),
                ("mcp__notes__read_note", "notes", "read_note"),
            ]
            .into_iter()
            .map(|(n, a, o)| CatalogEntry {
                name: n.into(),
                alias: a.into(),
                original_name: o.into(),
            })
            .collect(),
        )
    }

    fn case(expect: Value) -> Case {
        let mut c = json!({"id": "c", "category": "happy", "utterance": "u", "expect": expect});
        if expect.get("noTool").is_some() {
            c["category"] = json!("trap");
        }
        parse(Path::new("t.json"), &json!({"cases": [c]}).to_string())
            .unwrap()
            .remove(0)
    }

    fn called(name: &str, args: Value) -> Observation {
        Observation {
            turns: vec![vec![Call {
                name: name.into(),
                arguments: args,
            }]],
            ..Observation::default()
        }
    }

    fn verdict(expect: Value, seen: &Observation) -> MatchVerdict {
        judge(&case(expect), seen, &catalog(), false)
    }

    #[test]
    fn right_tool_passes_by_either_name() {
        let seen = called("mcp__notes__search", json!({"query": "printer"}));
        assert!(verdict(json!({"tool": "mcp__notes__search"}), &seen).pass);
        assert!(verdict(json!({"tool": {"alias": "notes", "name": "search"}}), &seen).pass);
    }

    #[test]
    fn wrong_tool_fails() {
        let seen = called("mcp__tickets__search", json!({"query": "printer"}));
        let v = verdict(json!({"tool": {"alias": "notes", "name": "search"}}), &seen);
        assert!(!v.pass);
        assert_eq!(
            v.why.unwrap(),
            "called mcp__tickets__search instead of mcp__notes__search"
        );
        let v = verdict(
            json!({"tool": "mcp__notes__search"}),
            &called("mcp__x__y", json!({})),
        );
        assert!(v.why.unwrap().contains("not in the tool list"));
    }

    #[test]
    fn no_call_fails_a_happy_case_and_any_call_fails_a_trap() {
        let nothing = Observation::default();
        let v = verdict(json!({"tool": "mcp__notes__search"}), &nothing);
        assert!(!v.pass);
        assert!(v.why.unwrap().contains("called no tool"));
        assert!(verdict(json!({"noTool": true}), &nothing).pass);
        let v = verdict(
            json!({"noTool": true}),
            &called("mcp__notes__read_note", json!({"id": "x"})),
        );
        assert!(!v.pass);
        assert!(v.why.unwrap().contains("no tool should be called"));
    }

    #[test]
    fn argument_matchers() {
        let seen = called(
            "mcp__notes__search",
            json!({"query": "Printer jams", "limit": 3}),
        );
        let pass = |args: Value| {
            verdict(
                json!({"tool": "mcp__notes__search", "arguments": args}),
                &seen,
            )
        };
        assert!(pass(json!({"exact": {"limit": 3.0, "query": "Printer jams"}})).pass);
        assert!(!pass(json!({"exact": {"query": "Printer jams"}})).pass);
        assert!(pass(json!({"subset": {"limit": 3}})).pass);
        let v = pass(json!({"subset": {"limit": 4}}));
        assert_eq!(
            v.why.unwrap(),
            "called mcp__notes__search with wrong arguments: limit is 3, expected 4"
        );
        assert!(!pass(json!({"subset": {"page": 1}})).pass);
        assert!(pass(json!({"fields": {"query": {"regex": "(?i)printer"}}})).pass);
        assert!(!pass(json!({"fields": {"query": {"regex": "^printer$"}}})).pass);
        // A regex never matches a non-string.
        assert!(!pass(json!({"fields": {"limit": {"regex": "3"}}})).pass);
        assert!(
            pass(json!({"fields": {"page": {"absent": true}, "limit": {"present": true}}})).pass
        );
        assert!(!pass(json!({"fields": {"limit": {"absent": true}}})).pass);
        assert!(pass(json!({"fields": {"limit": {"equals": 3}}})).pass);
        let v = verdict(
            json!({"tool": "mcp__notes__search", "arguments": {"subset": {"q": 1}}}),
            &called("mcp__notes__search", json!("text")),
        );
        assert!(v.why.unwrap().contains("not an object"));
    }

    #[test]
    fn forbidden_tools_fail_the_case_anywhere() {
        let mut c = case(json!({"tool": "mcp__notes__search"}));
        c.must_not_call = vec![ToolRef::Original {
            alias: "tickets".into(),
            name: "search".into(),
        }];
        let mut seen = called("mcp__notes__search", json!({}));
        assert!(judge(&c, &seen, &catalog(), false).pass);
        seen.turns[0].push(Call {
            name: "mcp__tickets__search".into(),
            arguments: json!({}),
        });
        let v = judge(&c, &seen, &catalog(), false);
        assert_eq!(
            v.why.unwrap(),
            "called mcp__tickets__search, which the case forbids"
        );
    }

    #[test]
    fn follow_steps_are_judged_only_when_following() {
        let text = json!({"cases": [{
            "id": "f", "category": "edge", "utterance": "u",
            "expect": {"tool": "mcp__notes__search"},
            "follow": [{"result": "standup matches", "expect": {"tool": "mcp__notes__read_note", "arguments": {"exact": {"id": "standup"}}}}]
        }]});
        let c = parse(Path::new("t.json"), &text.to_string())
            .unwrap()
            .remove(0);
        let mut seen = called("mcp__notes__search", json!({"query": "x"}));
        assert!(judge(&c, &seen, &catalog(), false).pass);
        let v = judge(&c, &seen, &catalog(), true);
        assert!(
            v.why
                .unwrap()
                .starts_with("after follow step 1: called no tool")
        );
        seen.turns.push(vec![Call {
            name: "mcp__notes__read_note".into(),
            arguments: json!({"id": "standup"}),
        }]);
        assert!(judge(&c, &seen, &catalog(), true).pass);
        assert_eq!(
            seen.summary(),
            r#"mcp__notes__search {"query":"x"}, then mcp__notes__read_note {"id":"standup"}"#
        );
        let said = Observation {
            text: Some("Glad it helped!".into()),
            ..Observation::default()
        };
        assert_eq!(said.summary(), r#"no tool ("Glad it helped!")"#);
    }

    #[test]
    fn provider_errors_are_failures_marked_as_errors() {
        let v = verdict(json!({"noTool": true}), &Observation::failed("HTTP 500"));
        assert!(!v.pass && v.error);
        assert!(v.why.unwrap().contains("HTTP 500"));
    }
}
