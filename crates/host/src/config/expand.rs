//! `${VAR}` and `${VAR:-default}` expansion, as in Claude Code's `.mcp.json`.
//!
//! `${VAR}` is the variable's value; an unset variable is an error, never
//! passed through literally. `${VAR:-default}` uses `default` when `VAR` is
//! unset or empty (as the shell does). `${env:VAR}` (VS Code's spelling) is
//! read as `${VAR}`. Anything else inside `${…}` is an error, so a VS Code
//! `${input:…}` prompt is reported instead of reaching a server as text. A
//! `$` not followed by `{` is kept as it is.

use std::collections::BTreeMap;

/// Why a string could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${VAR}` names a variable that is not set and has no default.
    Unset(String),
    /// `${` without a closing `}`.
    Unterminated,
    /// `${…}` holds something that is not a variable name.
    BadName(String),
}

impl ExpandError {
    /// The problem and what to do about it, in one sentence each.
    pub(crate) fn describe(&self) -> (String, String) {
        match self {
            ExpandError::Unset(var) => (
                format!("environment variable {var} is not set"),
                format!("export {var}, or write ${{{var}:-default}} to give a default"),
            ),
            ExpandError::Unterminated => (
                "`${` is not closed with `}`".into(),
                "close the variable reference, e.g. ${HOME}".into(),
            ),
            ExpandError::BadName(name) if name.starts_with("input:") => (
                format!("`${{{name}}}` is a VS Code input prompt, which Switchboard cannot ask"),
                "put the value in an environment variable and write ${NAME} instead".into(),
            ),
            ExpandError::BadName(name) => (
                format!("`${{{name}}}` is not a variable reference"),
                "use ${NAME} or ${NAME:-default}, where NAME is letters, digits and _".into(),
            ),
        }
    }
}

/// Expands every `${…}` in `input` from `vars`.
///
/// # Errors
/// [`ExpandError`] for the first reference that cannot be expanded.
pub(crate) fn expand(input: &str, vars: &BTreeMap<String, String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let close = after.find('}').ok_or(ExpandError::Unterminated)?;
        let inner = &after[..close];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let name = name.strip_prefix("env:").unwrap_or(name);
        if !is_var_name(name) {
            return Err(ExpandError::BadName(inner.to_owned()));
        }
        match (vars.get(name), default) {
            (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(ExpandError::Unset(name.to_owned())),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [("HOME", "/home/u"), ("EMPTY", ""), ("TOKEN", "s3cret")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn table() {
        struct Case {
            input: &'static str,
            want: Result<&'static str, ExpandError>,
        }
        let cases = [
            Case {
                input: "plain $HOME text",
                want: Ok("plain $HOME text"),
            },
            Case {
                input: "${HOME}/bin",
                want: Ok("/home/u/bin"),
            },
            Case {
                input: "Bearer ${TOKEN}",
                want: Ok("Bearer s3cret"),
            },
            Case {
                input: "${MISSING:-fallback}",
                want: Ok("fallback"),
            },
            Case {
                input: "${EMPTY:-fallback}",
                want: Ok("fallback"),
            },
            Case {
                input: "[${EMPTY}]",
                want: Ok("[]"),
            },
            Case {
                input: "${MISSING:-}",
                want: Ok(""),
            },
            Case {
                input: "${env:HOME}",
                want: Ok("/home/u"),
            },
            Case {
                input: "${HOME:-a:-b}",
                want: Ok("/home/u"),
            },
            Case {
                input: "x${MISSING}y",
                want: Err(ExpandError::Unset("MISSING".into())),
            },
            Case {
                input: "${HOME",
                want: Err(ExpandError::Unterminated),
            },
            Case {
                input: "${input:token}",
                want: Err(ExpandError::BadName("input:token".into())),
            },
            Case {
                input: "${1X}",
                want: Err(ExpandError::BadName("1X".into())),
            },
        ];
        for case in cases {
            let got = expand(case.input, &vars());
            assert_eq!(got.as_deref(), case.want.as_deref(), "{}", case.input);
        }
    }

    #[test]
    fn descriptions_say_what_to_do() {
        let (problem, todo) = ExpandError::Unset("TOKEN".into()).describe();
        assert!(problem.contains("TOKEN"));
        assert!(todo.contains("${TOKEN:-default}"));
        let (problem, _) = ExpandError::BadName("input:k".into()).describe();
        assert!(problem.contains("VS Code"));
    }
}
