//! URI templates for parameterised resources (RFC 6570, levels 1 and 2:
//! `{var}` and `{+var}`), matched against the URIs clients read.
//!
//! `{var}` matches one or more characters up to the next `/`, `?` or `#`
//! and is percent-decoded; `{+var}` (reserved expansion) may also span `/`.

use std::collections::{HashMap, HashSet};

/// A parsed URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, reserved: bool },
}

/// The variables a URI bound when it matched a template.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TemplateMatch {
    /// The URI that matched.
    pub uri: String,
    /// Variable name → decoded value.
    pub vars: HashMap<String, String>,
}

impl TemplateMatch {
    /// The value bound to `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

impl UriTemplate {
    /// Parses a template.
    ///
    /// # Errors
    /// A sentence naming the problem: unbalanced braces, an empty or
    /// invalid variable name, an operator other than `+`, two variables with
    /// no literal between them.
    pub fn parse(text: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(i) if rest.as_bytes()[i] == b'}' => {
                    return Err("'}' without a matching '{'".into());
                }
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Literal(rest[..i].to_owned()));
                    }
                    let close = rest[i..]
                        .find('}')
                        .ok_or_else(|| "'{' without a matching '}'".to_owned())?;
                    let expr = &rest[i + 1..i + close];
                    let (reserved, name) = match expr.strip_prefix('+') {
                        Some(n) => (true, n),
                        None => (false, expr),
                    };
                    if name.is_empty()
                        || !name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                    {
                        return Err(format!(
                            "unsupported expression {{{expr}}}: only {{name}} and {{+name}} are supported"
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Var { .. })) {
                        return Err("two variables need a literal between them".into());
                    }
                    parts.push(Part::Var {
                        name: name.to_owned(),
                        reserved,
                    });
                    rest = &rest[i + close + 1..];
                }
            }
        }
        Ok(UriTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Matches `uri`, binding the variables. A match that would take more
    /// than 10,000 steps (a hostile template or URI built to make
    /// the search backtrack) is no match.
    pub fn matches(&self, uri: &str) -> Option<TemplateMatch> {
        self.search(uri).0.map(|vars| TemplateMatch {
            uri: uri.to_owned(),
            vars,
        })
    }

    /// The variables bound when `uri` matches, and the steps the search
    /// took.
    fn search(&self, uri: &str) -> (Option<HashMap<String, String>>, u32) {
        let mut search = Search {
            parts: &self.parts,
            input: uri,
            failed: HashSet::new(),
            steps: 0,
        };
        let mut vars = HashMap::new();
        let matched = search.from(0, 0, &mut vars);
        (matched.then_some(vars), search.steps)
    }
}

/// The most steps (a literal compared, or a variable's end tried) one match
/// may take; ordinary templates and URIs need a few dozen, a reserved
/// variable over a long URI a step per character.
pub(crate) const MATCH_STEPS: u32 = 10_000;

/// One match of a template against an input: a backtracking search over
/// where each variable ends (the longest value first), remembering the
/// (part, position) pairs that cannot match, so that no pair is searched
/// twice, and giving up after [`MATCH_STEPS`].
struct Search<'a> {
    parts: &'a [Part],
    input: &'a str,
    /// (part index, input position) pairs known not to match.
    failed: HashSet<(usize, usize)>,
    steps: u32,
}

impl Search<'_> {
    /// Whether `parts[part..]` matches `input[at..]`; binds the variables
    /// on success (failures bind nothing, so remembering them is sound).
    fn from(&mut self, part: usize, at: usize, vars: &mut HashMap<String, String>) -> bool {
        if self.steps >= MATCH_STEPS || self.failed.contains(&(part, at)) {
            return false;
        }
        self.steps += 1;
        let input = &self.input[at..];
        let matched = match self.parts.get(part) {
            None => input.is_empty(),
            Some(Part::Literal(lit)) => {
                input.starts_with(lit.as_str()) && self.from(part + 1, at + lit.len(), vars)
            }
            Some(Part::Var { name, reserved }) => {
                let limit = if *reserved {
                    input.len()
                } else {
                    input.find(['/', '?', '#']).unwrap_or(input.len())
                };
                self.variable(part, at, limit, name, vars)
            }
        };
        if !matched {
            self.failed.insert((part, at));
        }
        matched
    }

    /// A variable at `input[at..]`: its value ends at most `limit` bytes
    /// on, and the rest of the template matches after it.
    fn variable(
        &mut self,
        part: usize,
        at: usize,
        limit: usize,
        name: &str,
        vars: &mut HashMap<String, String>,
    ) -> bool {
        let input = &self.input[at..];
        let mut end = limit;
        while end > 0 {
            if self.steps >= MATCH_STEPS {
                return false;
            }
            self.steps += 1;
            if input.is_char_boundary(end) && self.from(part + 1, at + end, vars) {
                return match switchboard_wire::percent::decode(&input[..end]) {
                    Some(v) => {
                        vars.insert(name.to_owned(), v);
                        true
                    }
                    None => false,
                };
            }
            end -= 1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_simple_variables() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let m = t.matches("test://template/123/data").unwrap();
        assert_eq!(m.get("id"), Some("123"));
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/123/data/x").is_none());
        let m = t.matches("test://template/a%20b/data").unwrap();
        assert_eq!(m.get("id"), Some("a b"));
    }

    #[test]
    fn reserved_expansion_spans_slashes() {
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(
            t.matches("file:///a/b/c.txt").unwrap().get("path"),
            Some("a/b/c.txt")
        );
        let t = UriTemplate::parse("db://{table}/{+key}.json").unwrap();
        let m = t.matches("db://users/x/y.json").unwrap();
        assert_eq!(m.get("table"), Some("users"));
        assert_eq!(m.get("key"), Some("x/y"));
    }

    /// Fuzz finding (`uri_template`, a 580 s input): many variables with
    /// one-character literals between them made the search try every way
    /// to split the URI. Failed (part, position) pairs are now remembered
    /// and a match is bounded by `MATCH_STEPS`.
    #[test]
    fn a_backtracking_template_ends_quickly() {
        let template = "x{a}-{b}-{c}-{d}-{e}-{f}-{g}-{h}-{i}-{j}-{k}-{l}-{m}!";
        let t = UriTemplate::parse(template).unwrap();
        // No match (no `!`): without the memo, about C(20, 12) = 126,000
        // splits; with it, each (part, position) pair is searched once.
        let (vars, steps) = t.search(&format!("x{}?", "-".repeat(20)));
        assert!(vars.is_none());
        assert!(steps < MATCH_STEPS, "the memo: {steps} steps");
        // 400 characters need more than the bound even with the memo
        // (13 variables x 400 positions x 400 ends): the search stops there,
        // in about a millisecond.
        let (vars, steps) = t.search(&format!("x{}?", "-".repeat(400)));
        assert!(vars.is_none());
        assert_eq!(steps, MATCH_STEPS, "the bound");
        let fine = "x1-2-3-4-5-6-7-8-9-10-11-12-13!";
        assert_eq!(t.matches(fine).unwrap().get("m"), Some("13"));
        // The longest value first, as before.
        let t = UriTemplate::parse("a/{+x}/{y}").unwrap();
        let m = t.matches("a/b/c/d").unwrap();
        assert_eq!((m.get("x"), m.get("y")), (Some("b/c"), Some("d")));
    }

    #[test]
    fn the_fuzzers_slow_inputs_end_within_the_step_bound() {
        for input in [
            include_bytes!("../../../fuzz/regressions/uri_template/slow-unit-02a08a0f7c765e1b5100ed623026f0b5b9b2cc27").as_slice(),
            include_bytes!("../../../fuzz/regressions/uri_template/slow-unit-a7265d1166b3d124b00031e7ea20bbff26dddd74").as_slice(),
        ] {
            let text = String::from_utf8_lossy(input);
            let (template, uri) = text.split_once('\n').unwrap_or((&text, ""));
            if let Ok(t) = UriTemplate::parse(template) {
                let _ = t.matches(uri);
                let _ = t.matches(template);
            }
        }
    }

    #[test]
    fn rejects_bad_templates() {
        for bad in ["a{", "a}", "{}", "{?q}", "{a}{b}", "{a b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
