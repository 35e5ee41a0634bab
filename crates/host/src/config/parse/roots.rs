//! The top-level `"roots"` list: the folders servers may ask about
//! (`roots/list`). Each entry is a path (relative ones resolve against the
//! config file's folder) or a `file://` URI; `${VAR}` expands.

use std::path::PathBuf;

use serde_json::Value;

use super::Parser;

impl Parser<'_> {
    /// Reads `"roots"`; `None` after a problem was recorded.
    pub(super) fn roots(&mut self, value: &Value) -> Option<Vec<PathBuf>> {
        let Some(items) = value.as_array() else {
            self.bad_type("roots", "a list of folder paths");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let key = format!("roots[{i}]");
            let Some(text) = self.expanded_string(Some(item), &key) else {
                continue;
            };
            let path = match text.strip_prefix("file://") {
                Some(rest) => match switchboard_wire::percent::decode(rest) {
                    Some(p) if p.starts_with('/') => p,
                    _ => {
                        self.bad_type(&key, "a folder path or a file:///… URI");
                        continue;
                    }
                },
                None => text,
            };
            if path.is_empty() {
                self.bad_type(&key, "a non-empty folder path");
                continue;
            }
            let p = PathBuf::from(path);
            out.push(if p.is_absolute() {
                p
            } else {
                self.base_dir.join(p)
            });
        }
        Some(out)
    }
}
