//! URI templates for parameterised resources (RFC 6570, levels 1 and 2:
//! `{var}` and `{+var}`), matched against the URIs clients read.
//!
//! `{var}` matches one or more characters up to the next `/`, `?` or `#`
//! and is percent-decoded; `{+var}` (reserved expansion) may also span `/`.

use std::collections::HashMap;

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

    /// Matches `uri`, binding the variables.
    pub fn matches(&self, uri: &str) -> Option<TemplateMatch> {
        let mut vars = HashMap::new();
        if match_parts(&self.parts, uri, &mut vars) {
            Some(TemplateMatch {
                uri: uri.to_owned(),
                vars,
            })
        } else {
            None
        }
    }
}

fn match_parts(parts: &[Part], input: &str, vars: &mut HashMap<String, String>) -> bool {
    match parts.split_first() {
        None => input.is_empty(),
        Some((Part::Literal(lit), rest)) => input
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| match_parts(rest, tail, vars)),
        Some((Part::Var { name, reserved }, rest)) => {
            // Candidate ends: the longest value first, then shorter ones.
            let limit = if *reserved {
                input.len()
            } else {
                input.find(['/', '?', '#']).unwrap_or(input.len())
            };
            let mut end = limit;
            while end > 0 {
                if input.is_char_boundary(end) && match_parts(rest, &input[end..], vars) {
                    match percent_decode(&input[..end]) {
                        Some(v) => {
                            vars.insert(name.clone(), v);
                            return true;
                        }
                        None => return false,
                    }
                }
                end -= 1;
            }
            false
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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

    #[test]
    fn rejects_bad_templates() {
        for bad in ["a{", "a}", "{}", "{?q}", "{a}{b}", "{a b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
