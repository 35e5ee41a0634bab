//! Writing an "allow always" answer into the user's config file.
//!
//! The edit is textual: the new pattern is inserted into the top-level
//! `permissions.allow` list (created when missing), following the
//! indentation around it, so comments, key order and formatting survive.
//! The result is parsed again before it replaces the file, atomically.

use std::path::Path;

use super::jsonc::{self, Member, Span};
use crate::HostError;
use crate::fsutil::{DirLock, parent_dir, write_atomic};

/// Adds `pattern` to the top-level `permissions.allow` list of the config
/// file at `path`.
///
/// # Returns
/// `true` when the file changed, `false` when the pattern was already there.
///
/// # Errors
/// [`HostError`] when the file cannot be read, locked, understood or
/// written; the file is then left as it was.
pub(crate) fn add_allow_rule(path: &Path, pattern: &str) -> Result<bool, HostError> {
    let io = |source| HostError::ConfigEditIo {
        path: path.to_path_buf(),
        source,
    };
    let shape = |what: &str| HostError::ConfigEditShape {
        path: path.to_path_buf(),
        what: what.to_owned(),
    };
    // Edit the file a symlink points to, not the link.
    let target = std::fs::canonicalize(path).map_err(io)?;
    let _lock = DirLock::acquire(parent_dir(&target)).map_err(io)?;
    let text = std::fs::read_to_string(&target).map_err(io)?;
    let Some(new_text) = insert_allow(&text, pattern).map_err(|w| shape(&w))? else {
        return Ok(false);
    };
    jsonc::strip(&new_text)
        .and_then(|plain| jsonc::parse(&plain))
        .map_err(|e| shape(&format!("the edit would break the file ({})", e.message)))?;
    write_atomic(&target, new_text.as_bytes()).map_err(io)?;
    Ok(true)
}

/// The text with `pattern` in `permissions.allow`, or `None` when it is
/// already listed.
fn insert_allow(text: &str, pattern: &str) -> Result<Option<String>, String> {
    let plain = jsonc::strip(text).map_err(|e| e.message)?;
    jsonc::parse(&plain).map_err(|e| e.message)?;
    let quoted = serde_json::to_string(pattern).map_err(|e| e.to_string())?;
    let root = jsonc::root_span(&plain).ok_or("the file is empty")?;
    let members = jsonc::object_members(&plain, root).ok_or("the file is not a JSON object")?;

    let Some(permissions) = members.iter().find(|m| m.key == "permissions") else {
        let value = format!("{{\"allow\": [{quoted}]}}");
        return Ok(Some(insert_member(
            text,
            root,
            &members,
            "permissions",
            &value,
        )));
    };
    let inner = jsonc::object_members(&plain, permissions.value)
        .ok_or("\"permissions\" is not an object")?;
    let Some(allow) = inner.iter().find(|m| m.key == "allow") else {
        return Ok(Some(insert_member(
            text,
            permissions.value,
            &inner,
            "allow",
            &format!("[{quoted}]"),
        )));
    };
    let elements =
        jsonc::array_elements(&plain, allow.value).ok_or("\"permissions.allow\" is not a list")?;
    let already = elements.iter().any(|e| {
        serde_json::from_str::<String>(&plain[e.start..e.end]).is_ok_and(|s| s == pattern)
    });
    if already {
        return Ok(None);
    }
    Ok(Some(insert_element(text, allow.value, &elements, &quoted)))
}

fn insert_member(text: &str, object: Span, members: &[Member], key: &str, value: &str) -> String {
    let entry = format!("{}: {value}", serde_json::Value::from(key));
    match members.last() {
        Some(last) => {
            let sep = separator(text, object, indent_of(text, last.key_start));
            splice(text, last.value.end, &format!(",{sep}{entry}"))
        }
        None => {
            let inner = indent_of(text, object.start) + "  ";
            let sep = separator(text, object, inner);
            splice(text, object.start + 1, &format!("{sep}{entry}"))
        }
    }
}

fn insert_element(text: &str, array: Span, elements: &[Span], quoted: &str) -> String {
    match elements.last() {
        Some(last) => {
            let sep = separator(text, array, indent_of(text, last.start));
            splice(text, last.end, &format!(",{sep}{quoted}"))
        }
        None => splice(text, array.start + 1, quoted),
    }
}

/// A newline plus `indent` when the container spans lines, else a space.
fn separator(text: &str, span: Span, indent: String) -> String {
    if text[span.start..span.end].contains('\n') {
        format!("\n{indent}")
    } else {
        " ".into()
    }
}

/// The whitespace that starts the line holding byte `at`.
fn indent_of(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

fn splice(text: &str, at: usize, insert: &str) -> String {
    let mut out = String::with_capacity(text.len() + insert.len());
    out.push_str(&text[..at]);
    out.push_str(insert);
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow_list(text: &str) -> Vec<String> {
        let plain = jsonc::strip(text).unwrap();
        let v = jsonc::parse(&plain).unwrap();
        v["permissions"]["allow"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn adds_permissions_to_a_file_without_them() {
        let text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n  }\n}\n";
        let out = insert_allow(text, "mcp__a__t").unwrap().unwrap();
        assert_eq!(
            out,
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n  },\n  \"permissions\": {\"allow\": [\"mcp__a__t\"]}\n}\n"
        );
    }

    #[test]
    fn appends_to_an_existing_multiline_list_keeping_comments() {
        let text = "{\n  // my servers\n  \"mcpServers\": {},\n  \"permissions\": {\n    \"allow\": [\n      \"mcp__a__x\", // first\n    ],\n    \"deny\": []\n  }\n}";
        let out = insert_allow(text, "mcp__a__y").unwrap().unwrap();
        assert!(out.contains("// my servers"));
        assert!(out.contains("\"mcp__a__x\",\n      \"mcp__a__y\", // first"));
        assert_eq!(allow_list(&out), ["mcp__a__x", "mcp__a__y"]);
    }

    #[test]
    fn fills_an_empty_list_and_adds_a_missing_one() {
        let text = "{\"mcpServers\": {}, \"permissions\": {\"allow\": []}}";
        let out = insert_allow(text, "mcp__a").unwrap().unwrap();
        assert_eq!(
            out,
            "{\"mcpServers\": {}, \"permissions\": {\"allow\": [\"mcp__a\"]}}"
        );
        let text = "{\"mcpServers\": {}, \"permissions\": {\"deny\": [\"mcp__b\"]}}";
        let out = insert_allow(text, "mcp__a").unwrap().unwrap();
        assert_eq!(allow_list(&out), ["mcp__a"]);
        let text = "{\"mcpServers\": {}, \"permissions\": {}}";
        let out = insert_allow(text, "mcp__a").unwrap().unwrap();
        assert_eq!(allow_list(&out), ["mcp__a"]);
    }

    #[test]
    fn an_existing_pattern_is_not_added_twice() {
        let text = "{\"permissions\": {\"allow\": [\"mcp__a__t\"]}}";
        assert_eq!(insert_allow(text, "mcp__a__t").unwrap(), None);
    }

    #[test]
    fn a_wrong_shape_is_refused() {
        assert!(insert_allow("{\"permissions\": []}", "mcp__a").is_err());
        assert!(insert_allow("[]", "mcp__a").is_err());
    }

    #[test]
    fn writes_the_file_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(&path, "{\"mcpServers\": {}}\n").unwrap();
        assert!(add_allow_rule(&path, "mcp__a__t").unwrap());
        assert!(!add_allow_rule(&path, "mcp__a__t").unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(allow_list(&text), ["mcp__a__t"]);
        assert!(text.ends_with("}\n"));
    }
}
