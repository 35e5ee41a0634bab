//! Values of any section: types checked with the problem said in words,
//! positive numbers and milliseconds within bounds, `${VAR}` expansion,
//! lists and maps of strings, paths against the config's folder, and
//! `envFile`s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{MAX_MS, Parser, key_path};
use crate::config::{ProblemKind, expand};

impl Parser<'_> {
    pub(super) fn bad_type(&mut self, key: &str, want: &str) {
        self.problem(
            ProblemKind::BadValue,
            key,
            format!("must be {want}"),
            format!("write {want}"),
        );
    }

    pub(super) fn positive(&mut self, value: &Value, key: &str, max: u64) -> Option<u64> {
        match value.as_u64() {
            Some(n) if n > 0 && n <= max => Some(n),
            _ => {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("{value} is not a whole number between 1 and {max}"),
                    "write a positive whole number",
                );
                None
            }
        }
    }

    pub(super) fn millis(&mut self, value: &Value, key: &str) -> Option<Duration> {
        match value.as_u64() {
            Some(n) if n > 0 && n <= MAX_MS => Some(Duration::from_millis(n)),
            _ => {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("{value} is not a number of milliseconds between 1 and {MAX_MS}"),
                    "write a whole number of milliseconds, e.g. 30000 for 30 s",
                );
                None
            }
        }
    }

    pub(super) fn expand(&mut self, raw: &str, key: &str) -> Option<String> {
        match expand::expand(raw, self.vars) {
            Ok(s) => Some(s),
            Err(e) => {
                let (problem, fix) = e.describe();
                self.problem(ProblemKind::MissingEnvVar, key, problem, fix);
                None
            }
        }
    }

    pub(super) fn expanded_string(&mut self, value: Option<&Value>, key: &str) -> Option<String> {
        match value? {
            Value::String(s) => self.expand(s, key),
            _ => {
                self.bad_type(key, "a string");
                None
            }
        }
    }

    pub(super) fn string_list(
        &mut self,
        value: Option<&Value>,
        key: &str,
        expand: bool,
    ) -> Vec<String> {
        let Some(value) = value else {
            return Vec::new();
        };
        let Some(items) = value.as_array() else {
            self.bad_type(key, "an array of strings");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let k = format!("{key}[{i}]");
            match item.as_str() {
                Some(s) if expand => {
                    if let Some(s) = self.expand(s, &k) {
                        out.push(s);
                    }
                }
                Some(s) => out.push(s.to_owned()),
                None => self.bad_type(&k, "a string"),
            }
        }
        out
    }

    pub(super) fn string_map(
        &mut self,
        value: Option<&Value>,
        key: &str,
        expand: bool,
        headers: bool,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(value) = value else {
            return out;
        };
        let Some(obj) = value.as_object() else {
            self.bad_type(key, "an object mapping names to strings");
            return out;
        };
        for (name, v) in obj {
            let k = key_path(key, name);
            let name_ok = if headers {
                switchboard_wire::header::is_token(name)
            } else {
                !name.is_empty() && !name.contains(['=', '\0'])
            };
            if !name_ok {
                let what = if headers {
                    "an HTTP header name"
                } else {
                    "an environment variable name"
                };
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    format!("{name:?} is not a valid {what}"),
                    "rename it",
                );
                continue;
            }
            let Some(raw) = v.as_str() else {
                self.bad_type(&k, "a string");
                continue;
            };
            let Some(s) = (if expand {
                self.expand(raw, &k)
            } else {
                Some(raw.to_owned())
            }) else {
                continue;
            };
            if headers && s.contains(['\r', '\n', '\0']) {
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    "a header value cannot contain line breaks".into(),
                    "remove the line break (check the variable it expands)",
                );
                continue;
            }
            out.insert(name.clone(), s);
        }
        out
    }

    pub(super) fn path(&mut self, value: &Value, key: &str) -> Option<PathBuf> {
        let s = self.expanded_string(Some(value), key)?;
        if s.is_empty() {
            self.bad_type(key, "a non-empty path");
            return None;
        }
        let p = PathBuf::from(s);
        Some(if p.is_absolute() {
            p
        } else {
            self.base_dir.join(p)
        })
    }

    pub(super) fn env_file(&mut self, path: &Path, key: &str, env: &mut BTreeMap<String, String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                self.problem(
                    ProblemKind::Io,
                    key,
                    format!("cannot read {}: {e}", path.display()),
                    "create the file or fix the path",
                );
                return;
            }
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((name, value)) = line.split_once('=') else {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    format!("{} line {}: expected NAME=value", path.display(), n + 1),
                    "fix or remove that line",
                );
                continue;
            };
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            env.insert(name.trim().to_owned(), value.to_owned());
        }
    }
}
