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
use crate::secret::{ConfigValue, SecretRef};

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

    /// A value that may be a secret reference: a string (expanded), or
    /// `{"secret": "KIND:WHERE"}` (the reference expanded too).
    pub(super) fn config_value(&mut self, value: Option<&Value>, key: &str) -> Option<ConfigValue> {
        let value = value?;
        if let Value::Object(o) = value {
            let Some(reference) = o.get("secret") else {
                self.bad_type(key, "a string or {\"secret\": \"KIND:WHERE\"}");
                return None;
            };
            if o.len() != 1 {
                self.problem(
                    ProblemKind::BadValue,
                    key,
                    "a secret reference has the one key \"secret\"".into(),
                    "write {\"secret\": \"file:PATH\"} (or env:NAME, cmd:COMMAND, keyring:SERVICE/ACCOUNT)",
                );
                return None;
            }
            let text = self.expanded_string(Some(reference), &key_path(key, "secret"))?;
            return match SecretRef::parse(&text, Some(&self.base_dir)) {
                Ok(r) => Some(ConfigValue::Ref(r)),
                Err(e) => {
                    self.problem(
                        ProblemKind::BadValue,
                        &key_path(key, "secret"),
                        e,
                        "write file:PATH, env:NAME, cmd:COMMAND ARGS or keyring:SERVICE/ACCOUNT",
                    );
                    None
                }
            };
        }
        self.expanded_string(Some(value), key)
            .map(ConfigValue::from)
    }

    /// `env` or `headers`: names to strings or secret references.
    pub(super) fn value_map(
        &mut self,
        value: Option<&Value>,
        key: &str,
        headers: bool,
    ) -> BTreeMap<String, ConfigValue> {
        let mut out = BTreeMap::new();
        let Some(value) = value else {
            return out;
        };
        let Some(obj) = value.as_object() else {
            self.bad_type(
                key,
                "an object mapping names to strings or secret references",
            );
            return out;
        };
        for (name, v) in obj {
            let k = key_path(key, name);
            if !self.valid_name(name, &k, headers) {
                continue;
            }
            let Some(value) = self.config_value(Some(v), &k) else {
                continue;
            };
            if headers
                && value
                    .plain()
                    .is_some_and(|s| s.contains(['\r', '\n', '\0']))
            {
                self.problem(
                    ProblemKind::BadValue,
                    &k,
                    "a header value cannot contain line breaks".into(),
                    "remove the line break (check the variable it expands)",
                );
                continue;
            }
            out.insert(name.clone(), value);
        }
        out
    }

    fn valid_name(&mut self, name: &str, key: &str, headers: bool) -> bool {
        let ok = if headers {
            switchboard_wire::header::is_token(name)
        } else {
            !name.is_empty() && !name.contains(['=', '\0'])
        };
        if !ok {
            let what = if headers {
                "an HTTP header name"
            } else {
                "an environment variable name"
            };
            self.problem(
                ProblemKind::BadValue,
                key,
                format!("{name:?} is not a valid {what}"),
                "rename it",
            );
        }
        ok
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

    pub(super) fn env_file(
        &mut self,
        path: &Path,
        key: &str,
        env: &mut BTreeMap<String, ConfigValue>,
    ) {
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
            env.insert(name.trim().to_owned(), ConfigValue::from(value));
        }
    }
}
