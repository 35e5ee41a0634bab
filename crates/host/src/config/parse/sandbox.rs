//! The sandbox of a stdio server (`"sandbox"`, `defaults.sandbox`) and the
//! host variables it gets (`"envPassthrough"`, `defaults.envPassthrough`).
//!
//! `"sandbox"` is `"strict"`, `"none"`, `"baseline"` or an object
//! `{"fs": {"read": [PATHS], "write": [PATHS]}, "network": BOOL,
//! "memoryMiB": N, "processes": N, "cpuSeconds": N, "required": BOOL}`:
//! the baseline (`no_new_privs`, seccomp) plus what it names. Relative
//! paths are resolved against the config file's folder, `~/` against
//! `HOME`.

use std::path::PathBuf;

use serde_json::Value;

use super::{DEFAULTS_KEYS, Parser, SANDBOX_FS_KEYS, SANDBOX_KEYS, key_path};
use crate::config::{FsAccess, ProblemKind, Sandbox};

/// The most `memoryMiB` may say (16 TiB).
const MAX_MEMORY_MIB: u64 = 16 << 20;
/// The most `processes` may say.
const MAX_PROCESSES: u64 = 1 << 22;
/// The most `cpuSeconds` may say (a year).
const MAX_CPU_SECONDS: u64 = 365 * 24 * 3600;

impl Parser<'_> {
    /// `defaults`: `sandbox` and `envPassthrough` for every stdio server
    /// that does not say otherwise.
    pub(super) fn defaults(&mut self, value: &Value) {
        let Some(obj) = value.as_object() else {
            self.bad_type("defaults", "an object like {\"sandbox\": \"strict\"}");
            return;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, "defaults", DEFAULTS_KEYS, &[], &mut ignore);
        if let Some(v) = obj.get("sandbox") {
            self.default_sandbox = self.sandbox(v, "defaults.sandbox");
        }
        if let Some(v) = obj.get("envPassthrough") {
            self.default_passthrough = self.passthrough(v, "defaults.envPassthrough");
        }
    }

    pub(super) fn sandbox(&mut self, value: &Value, key: &str) -> Option<Sandbox> {
        let want = "\"strict\", \"none\", \"baseline\" or an object like {\"fs\": {\"read\": [...]}, \"network\": false}";
        let obj = match value {
            Value::String(s) => {
                return match s.as_str() {
                    "strict" => Some(Sandbox::strict()),
                    "none" => Some(Sandbox::none()),
                    "baseline" => Some(Sandbox::baseline()),
                    other => {
                        self.problem(
                            ProblemKind::BadValue,
                            key,
                            format!("{other:?} is not a sandbox preset"),
                            format!("write {want}"),
                        );
                        None
                    }
                };
            }
            Value::Object(obj) => obj,
            _ => {
                self.bad_type(key, want);
                return None;
            }
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, SANDBOX_KEYS, &[], &mut ignore);
        let sub = |k: &str| key_path(key, k);
        let mut sandbox = Sandbox::baseline();
        if let Some(fs) = obj.get("fs") {
            sandbox.fs = self.sandbox_fs(fs, &sub("fs"));
        }
        for (k, slot) in [
            ("network", &mut sandbox.network),
            ("required", &mut sandbox.required),
        ] {
            if let Some(v) = obj.get(k) {
                match v.as_bool() {
                    Some(b) => *slot = b,
                    None => self.bad_type(&sub(k), "true or false"),
                }
            }
        }
        if let Some(v) = obj.get("memoryMiB") {
            sandbox.memory_mib = self.positive(v, &sub("memoryMiB"), MAX_MEMORY_MIB);
        }
        if let Some(v) = obj.get("processes") {
            sandbox.processes = self.positive(v, &sub("processes"), MAX_PROCESSES);
        }
        if let Some(v) = obj.get("cpuSeconds") {
            sandbox.cpu_seconds = self.positive(v, &sub("cpuSeconds"), MAX_CPU_SECONDS);
        }
        Some(sandbox)
    }

    fn sandbox_fs(&mut self, value: &Value, key: &str) -> Option<FsAccess> {
        let Some(obj) = value.as_object() else {
            self.bad_type(
                key,
                "an object like {\"read\": [PATHS], \"write\": [PATHS]}",
            );
            return None;
        };
        let mut ignore = Vec::new();
        self.check_keys(obj, key, SANDBOX_FS_KEYS, &[], &mut ignore);
        let read = self.sandbox_paths(obj.get("read"), &key_path(key, "read"));
        let write = self.sandbox_paths(obj.get("write"), &key_path(key, "write"));
        Some(FsAccess::new(read, write))
    }

    fn sandbox_paths(&mut self, value: Option<&Value>, key: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (i, raw) in self.string_list(value, key, true).into_iter().enumerate() {
            let k = format!("{key}[{i}]");
            let path = match raw.strip_prefix("~/") {
                Some(rest) => match self.vars.get("HOME") {
                    Some(home) => PathBuf::from(home).join(rest),
                    None => {
                        self.problem(
                            ProblemKind::MissingEnvVar,
                            &k,
                            "~/ needs HOME to be set".into(),
                            "write the full path",
                        );
                        continue;
                    }
                },
                None if raw.is_empty() => {
                    self.bad_type(&k, "a non-empty path");
                    continue;
                }
                None => PathBuf::from(&raw),
            };
            out.push(if path.is_absolute() {
                path
            } else {
                self.base_dir.join(path)
            });
        }
        out
    }

    /// `envPassthrough`: names or `PREFIX_*` patterns of host variables.
    pub(super) fn passthrough(&mut self, value: &Value, key: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, name) in self
            .string_list(Some(value), key, false)
            .into_iter()
            .enumerate()
        {
            let body = name.strip_suffix('*').unwrap_or(&name);
            let ok = (!body.is_empty() || name == "*")
                && !body.contains(['=', '\0', '*'])
                && !name.chars().any(char::is_whitespace);
            if ok {
                out.push(name);
            } else {
                self.problem(
                    ProblemKind::BadValue,
                    &format!("{key}[{i}]"),
                    format!("{name:?} is not a variable name or a PREFIX_* pattern"),
                    "write a name such as \"GITHUB_TOKEN\", a prefix such as \"AWS_*\", or \"*\" for all",
                );
            }
        }
        out
    }
}
