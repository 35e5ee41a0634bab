//! Case files: what a case says, read and checked.
//!
//! A case file (`evals/*.json`, described by `evals/schema.json`) is an
//! object with a `cases` array. Each case has an `id`, a `category`, an
//! `utterance` (or a short `conversation` ending with the user) and an
//! `expect`ation: a tool with an optional argument match, or `noTool`.
//! Every problem of a file is reported at once, with the file and the case.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What kind of intent a case tests; the report never merges them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Unambiguous intent: the right tool is obvious.
    Happy,
    /// Intent carried by meaning rather than keywords (two similar tools).
    Edge,
    /// Nothing should be called: thanks, small talk, "what can you do".
    Trap,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 3] = [Category::Happy, Category::Edge, Category::Trap];

    /// `happy`, `edge` or `trap`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Happy => "happy",
            Category::Edge => "edge",
            Category::Trap => "trap",
        }
    }

    /// The category named `word`.
    pub fn parse(word: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == word)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who says a message of a case's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    /// The user.
    User,
    /// The assistant (an earlier answer, text only).
    Assistant,
}

/// One message of a case's conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Who says it.
    pub role: Speaker,
    /// What is said.
    pub content: String,
}

/// A tool named by a case: the namespaced name the model sees, or the
/// server's alias and the tool's name on that server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolRef {
    /// `mcp__alias__tool`, as `switchboard tools` lists it.
    Namespaced(String),
    /// `{"alias": "notes", "name": "search"}`.
    Original {
        /// The server's alias in the config.
        alias: String,
        /// The tool's name on the server.
        name: String,
    },
}

impl fmt::Display for ToolRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolRef::Namespaced(n) => f.write_str(n),
            ToolRef::Original { alias, name } => write!(f, "{name} of {alias}"),
        }
    }
}

/// How one argument field must look.
#[derive(Debug, Clone)]
pub enum FieldMatch {
    /// Equal as JSON (key order does not matter).
    Equals(Value),
    /// A string in which the regex finds a match (unanchored: write `^…$`
    /// for the whole string).
    Regex(Regex),
    /// Present, with any value.
    Present,
    /// Not present.
    Absent,
}

impl PartialEq for FieldMatch {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (FieldMatch::Equals(a), FieldMatch::Equals(b)) => a == b,
            (FieldMatch::Regex(a), FieldMatch::Regex(b)) => a.as_str() == b.as_str(),
            (FieldMatch::Present, FieldMatch::Present)
            | (FieldMatch::Absent, FieldMatch::Absent) => true,
            _ => false,
        }
    }
}

impl fmt::Display for FieldMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldMatch::Equals(v) => write!(f, "= {v}"),
            FieldMatch::Regex(r) => write!(f, "~ /{}/", r.as_str()),
            FieldMatch::Present => f.write_str("present"),
            FieldMatch::Absent => f.write_str("absent"),
        }
    }
}

/// How a call's arguments must look. Every part given must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArgMatch {
    /// The whole arguments object equals this one.
    pub exact: Option<Map<String, Value>>,
    /// Each of these fields is present with an equal value; other fields
    /// may be there too.
    pub subset: Option<Map<String, Value>>,
    /// Per-field matchers on top-level fields.
    pub fields: Vec<(String, FieldMatch)>,
}

impl ArgMatch {
    /// Whether this checks nothing at all.
    pub fn is_empty(&self) -> bool {
        self.exact.is_none() && self.subset.is_none() && self.fields.is_empty()
    }
}

impl fmt::Display for ArgMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(e) = &self.exact {
            parts.push(format!("exactly {}", Value::Object(e.clone())));
        }
        if let Some(s) = &self.subset {
            parts.push(format!("with {}", Value::Object(s.clone())));
        }
        for (name, m) in &self.fields {
            parts.push(format!("{name} {m}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// What the model should do.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// Call this tool (first), with arguments that match.
    Tool {
        /// The tool.
        tool: ToolRef,
        /// How its arguments must look (empty: any arguments).
        arguments: Box<ArgMatch>,
    },
    /// Call no tool at all: any call fails the case.
    NoTool,
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::NoTool => f.write_str("no tool"),
            Expect::Tool { tool, arguments } if arguments.is_empty() => write!(f, "{tool}"),
            Expect::Tool { tool, arguments } => write!(f, "{tool} ({arguments})"),
        }
    }
}

/// A further step for `--follow`: the canned result the first call gets,
/// and what the model should do next.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowStep {
    /// The text handed back as the previous call's result.
    pub result: String,
    /// What the model should do with it.
    pub expect: Expect,
}

/// One case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Unique across the files of one run.
    pub id: String,
    /// The file it came from.
    pub file: PathBuf,
    /// Its category.
    pub category: Category,
    /// The conversation, ending with the user's message.
    pub conversation: Vec<Turn>,
    /// What the model should do first.
    pub expect: Expect,
    /// Tools that must not be called at all.
    pub must_not_call: Vec<ToolRef>,
    /// With the table deferred: the model must search
    /// (`mcp__switchboard__search_tools`) before the expected tool.
    pub search_first: bool,
    /// Further steps, used with `--follow` only.
    pub follow: Vec<FollowStep>,
    /// Why the case exists (shown in reports).
    pub note: Option<String>,
}

impl Case {
    /// The user's last message.
    pub fn utterance(&self) -> &str {
        self.conversation.last().map_or("", |t| t.content.as_str())
    }
}

/// Why case files could not be used: every problem, each with its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("\n"))]
pub struct CaseError {
    /// One line per problem: `FILE: case ID: what is wrong and what to do`.
    pub problems: Vec<String>,
}

/// Reads and checks every case of `files`, in order.
///
/// # Errors
/// [`CaseError`] with every problem found (unreadable files, bad JSON,
/// unknown keys, bad regexes, duplicate ids across files, no cases).
pub fn load(files: &[PathBuf]) -> Result<Vec<Case>, CaseError> {
    let mut problems = Vec::new();
    let mut cases = Vec::new();
    for file in files {
        match std::fs::read_to_string(file) {
            Ok(text) => match parse(file, &text) {
                Ok(mut c) => cases.append(&mut c),
                Err(mut e) => problems.append(&mut e.problems),
            },
            Err(e) => problems.push(format!("{}: cannot read: {e}", file.display())),
        }
    }
    let mut seen = HashSet::new();
    for case in &cases {
        if !seen.insert(case.id.as_str()) {
            problems.push(format!(
                "{}: case {}: another case already has this id; ids must be unique across the files of a run",
                case.file.display(),
                case.id
            ));
        }
    }
    if problems.is_empty() && cases.is_empty() {
        problems
            .push("no cases: give at least one case file with a non-empty \"cases\" array".into());
    }
    if problems.is_empty() {
        Ok(cases)
    } else {
        Err(CaseError { problems })
    }
}

/// Reads the cases of one file's text (`file` names it in messages).
///
/// # Errors
/// [`CaseError`] with every problem of the file.
pub fn parse(file: &Path, text: &str) -> Result<Vec<Case>, CaseError> {
    let at = |what: String| format!("{}: {what}", file.display());
    let raw: RawFile = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            return Err(CaseError {
                problems: vec![at(format!("not a case file ({e}); see evals/schema.json"))],
            });
        }
    };
    let mut problems = Vec::new();
    let mut cases = Vec::new();
    for (i, value) in raw.cases.into_iter().enumerate() {
        let label = value
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("case #{}", i + 1), |id| format!("case {id}"));
        let raw_case: RawCase = match serde_json::from_value(value) {
            Ok(c) => c,
            Err(e) => {
                problems.push(at(format!("{label}: {e}")));
                continue;
            }
        };
        match check(file, raw_case) {
            Ok(case) => cases.push(case),
            Err(mut p) => problems.extend(p.drain(..).map(|p| at(format!("{label}: {p}")))),
        }
    }
    if problems.is_empty() {
        Ok(cases)
    } else {
        Err(CaseError { problems })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    /// The schema the file names (for editors); not used.
    #[serde(rename = "$schema", default)]
    _schema: Option<String>,
    /// What the set is about (for readers); not used.
    #[serde(rename = "description", default)]
    _description: Option<String>,
    cases: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCase {
    id: String,
    category: Category,
    #[serde(default)]
    utterance: Option<String>,
    #[serde(default)]
    conversation: Option<Vec<Turn>>,
    expect: RawExpect,
    #[serde(default)]
    must_not_call: Vec<ToolRef>,
    #[serde(default)]
    search_first: bool,
    #[serde(default)]
    follow: Vec<RawFollow>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawExpect {
    #[serde(default)]
    tool: Option<ToolRef>,
    #[serde(default)]
    arguments: Option<RawArgs>,
    #[serde(default)]
    no_tool: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArgs {
    #[serde(default)]
    exact: Option<Map<String, Value>>,
    #[serde(default)]
    subset: Option<Map<String, Value>>,
    #[serde(default)]
    fields: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFollow {
    result: String,
    expect: RawExpect,
}

fn check(file: &Path, raw: RawCase) -> Result<Case, Vec<String>> {
    let mut problems = Vec::new();
    if raw.id.trim().is_empty() {
        problems.push("the id is empty".into());
    }
    let conversation = match (raw.utterance, raw.conversation) {
        (Some(u), None) => vec![Turn {
            role: Speaker::User,
            content: u,
        }],
        (None, Some(c)) => c,
        (Some(_), Some(_)) => {
            problems.push("give \"utterance\" or \"conversation\", not both".into());
            Vec::new()
        }
        (None, None) => {
            problems.push("give an \"utterance\" (or a \"conversation\")".into());
            Vec::new()
        }
    };
    match conversation.last() {
        Some(t) if t.role == Speaker::User && !t.content.trim().is_empty() => {}
        Some(_) => problems.push("the conversation must end with a non-empty user message".into()),
        None if problems.is_empty() => problems.push("the conversation is empty".into()),
        None => {}
    }
    let expect = expectation(raw.expect, &mut problems);
    if raw.category == Category::Trap && expect != Some(Expect::NoTool) && expect.is_some() {
        problems.push("a trap case expects no tool: write \"expect\": {\"noTool\": true}".into());
    }
    if raw.category != Category::Trap && expect == Some(Expect::NoTool) {
        problems.push(format!(
            "a {} case expects a tool; a case where nothing should be called is a trap",
            raw.category
        ));
    }
    let mut follow = Vec::new();
    for (i, step) in raw.follow.into_iter().enumerate() {
        let mut step_problems = Vec::new();
        if let Some(expect) = expectation(step.expect, &mut step_problems) {
            follow.push(FollowStep {
                result: step.result,
                expect,
            });
        }
        problems.extend(
            step_problems
                .into_iter()
                .map(|p| format!("follow step {}: {p}", i + 1)),
        );
    }
    if !follow.is_empty() && expect == Some(Expect::NoTool) {
        problems.push("a case that expects no tool has no call to follow".into());
    }
    match expect {
        Some(expect) if problems.is_empty() => Ok(Case {
            id: raw.id,
            file: file.to_path_buf(),
            category: raw.category,
            conversation,
            expect,
            must_not_call: raw.must_not_call,
            search_first: raw.search_first,
            follow,
            note: raw.note,
        }),
        _ => Err(problems),
    }
}

fn expectation(raw: RawExpect, problems: &mut Vec<String>) -> Option<Expect> {
    match (raw.tool, raw.no_tool) {
        (None, Some(true)) => {
            if raw.arguments.is_some() {
                problems.push("\"arguments\" makes no sense with \"noTool\"".into());
                return None;
            }
            Some(Expect::NoTool)
        }
        (Some(tool), None | Some(false)) => {
            let arguments = Box::new(match raw.arguments {
                None => ArgMatch::default(),
                Some(a) => arg_match(a, problems)?,
            });
            Some(Expect::Tool { tool, arguments })
        }
        (Some(_), Some(true)) => {
            problems.push("\"expect\" names a tool and says \"noTool\": choose one".into());
            None
        }
        (None, _) => {
            problems.push(
                "\"expect\" needs a \"tool\" (with optional \"arguments\") or \"noTool\": true"
                    .into(),
            );
            None
        }
    }
}

fn arg_match(raw: RawArgs, problems: &mut Vec<String>) -> Option<ArgMatch> {
    let before = problems.len();
    if raw.exact.is_some() && (raw.subset.is_some() || raw.fields.is_some()) {
        problems.push(
            "\"arguments\": \"exact\" already says everything; drop \"subset\" and \"fields\""
                .into(),
        );
    }
    let mut fields = Vec::new();
    for (name, spec) in raw.fields.unwrap_or_default() {
        match field_match(&spec) {
            Ok(m) => fields.push((name, m)),
            Err(e) => problems.push(format!("\"arguments\".\"fields\".{name}: {e}")),
        }
    }
    let m = ArgMatch {
        exact: raw.exact,
        subset: raw.subset,
        fields,
    };
    if m.is_empty() && problems.len() == before {
        problems.push(
            "\"arguments\" is empty: give \"exact\", \"subset\" or \"fields\", or leave it out"
                .into(),
        );
    }
    (problems.len() == before).then_some(m)
}

fn field_match(spec: &Value) -> Result<FieldMatch, String> {
    let Some(obj) = spec.as_object().filter(|o| o.len() == 1) else {
        return Err(
            "write one of {\"equals\": VALUE}, {\"regex\": \"…\"}, {\"present\": true}, {\"absent\": true}"
                .into(),
        );
    };
    let (key, value) = obj.iter().next().ok_or("empty matcher")?;
    match (key.as_str(), value) {
        ("equals", v) => Ok(FieldMatch::Equals(v.clone())),
        ("regex", Value::String(r)) => Regex::new(r)
            .map(FieldMatch::Regex)
            .map_err(|e| format!("bad regex: {e}")),
        ("present", Value::Bool(true)) => Ok(FieldMatch::Present),
        ("absent", Value::Bool(true)) => Ok(FieldMatch::Absent),
        _ => Err(format!(
            "unknown matcher {key:?}: use equals, regex (a string), present (true) or absent (true)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(case: Value) -> Result<Case, Vec<String>> {
        let text = json!({"cases": [case]}).to_string();
        parse(Path::new("t.json"), &text)
            .map(|mut c| c.remove(0))
            .map_err(|e| e.problems)
    }

    #[test]
    fn a_happy_case_with_every_matcher() {
        let c = one(json!({
            "id": "n1", "category": "happy", "utterance": "search notes for printer",
            "expect": {"tool": "mcp__notes__search", "arguments": {
                "subset": {"limit": 3},
                "fields": {"query": {"regex": "(?i)printer"}, "page": {"absent": true}, "x": {"present": true}, "y": {"equals": [1]}}
            }},
            "mustNotCall": [{"alias": "tickets", "name": "search"}],
            "note": "plain"
        }))
        .unwrap();
        assert_eq!(c.category, Category::Happy);
        assert_eq!(c.utterance(), "search notes for printer");
        let Expect::Tool { tool, arguments } = &c.expect else {
            panic!()
        };
        assert_eq!(tool, &ToolRef::Namespaced("mcp__notes__search".into()));
        assert_eq!(arguments.fields.len(), 4);
        assert_eq!(
            c.must_not_call,
            vec![ToolRef::Original {
                alias: "tickets".into(),
                name: "search".into()
            }]
        );
    }

    #[test]
    fn conversations_and_follow_steps() {
        let c = one(json!({
            "id": "c", "category": "edge",
            "conversation": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "what did we say about the VPN?"}
            ],
            "expect": {"tool": {"alias": "notes", "name": "search"}},
            "follow": [{"result": "1 note matches", "expect": {"tool": "mcp__notes__read_note"}}]
        }))
        .unwrap();
        assert_eq!(c.conversation.len(), 3);
        assert_eq!(c.follow.len(), 1);
    }

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let cases = [
            (
                json!({"id": "a", "category": "happy", "expect": {"noTool": true}}),
                "utterance",
            ),
            (
                json!({"id": "a", "category": "trap", "utterance": "x", "expect": {"tool": "t"}}),
                "trap case expects no tool",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {"noTool": true}}),
                "is a trap",
            ),
            (
                json!({"id": "a", "category": "odd", "utterance": "x", "expect": {"noTool": true}}),
                "unknown variant",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {"tool": "t", "arguments": {"fields": {"q": {"regex": "("}}}}}),
                "bad regex",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {"tool": "t", "arguments": {"fields": {"q": {"like": "x"}}}}}),
                "unknown matcher",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {"tool": "t", "arguments": {}}}),
                "is empty",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {"tool": "t", "arguments": {"exact": {}, "subset": {}}}}),
                "drop",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {}}),
                "needs a \"tool\"",
            ),
            (
                json!({"id": "a", "category": "happy", "utterance": "x", "expect": {"tool": "t"}, "extra": 1}),
                "unknown field",
            ),
            (
                json!({"id": "a", "category": "happy", "conversation": [{"role": "assistant", "content": "x"}], "expect": {"tool": "t"}}),
                "end with a non-empty user message",
            ),
        ];
        for (case, needle) in cases {
            let problems = one(case.clone()).unwrap_err();
            assert!(
                problems
                    .iter()
                    .any(|p| p.contains(needle) && p.starts_with("t.json: case")),
                "{case}: {problems:?}"
            );
        }
    }

    #[test]
    fn files_duplicate_ids_and_empty_sets_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let case = json!({"id": "same", "category": "trap", "utterance": "thanks", "expect": {"noTool": true}});
        std::fs::write(&a, json!({"cases": [case]}).to_string()).unwrap();
        let b = dir.path().join("b.json");
        std::fs::write(
            &b,
            json!({"$schema": "schema.json", "cases": [case]}).to_string(),
        )
        .unwrap();
        let e = load(&[a.clone(), b]).unwrap_err();
        assert!(e.problems[0].contains("unique"), "{e}");
        let e = load(&[dir.path().join("missing.json")]).unwrap_err();
        assert!(e.problems[0].contains("cannot read"), "{e}");
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, r#"{"cases": []}"#).unwrap();
        assert!(load(&[empty]).unwrap_err().problems[0].contains("no cases"));
        std::fs::write(&a, "[]").unwrap();
        assert!(load(&[a]).unwrap_err().problems[0].contains("not a case file"));
    }
}
