//! Skills on disk: a directory whose subdirectories holding a `SKILL.md`
//! are skills (at any depth: `acme/billing/refunds/SKILL.md` is the skill
//! `refunds` with the prefix `acme/billing`, and a skill may hold others).
//!
//! Each walk `stat`s every file and hashes only those whose size or
//! modification time changed since the last walk (or all of them, when a
//! read found bytes that no longer matched). Hidden entries (`.git`,
//! `.DS_Store`) and symbolic links are skipped: a link could point out of
//! the directory, and a skill is what is inside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use switchboard_wire::skills::{MAX_TOTAL_BYTES, SKILL_MD};
use switchboard_wire::{JsonObject, Sha256Digest, frontmatter};

use super::{Candidate, CandidateFile, Source, mime_of};

/// How deep a skills directory is walked.
const MAX_DEPTH: usize = 32;
/// How many files one skills directory may hold; past this the walk stops
/// (and says so), so a wrong path (a home directory) does not hash forever.
const MAX_FILES: usize = 20_000;

/// A skills directory and what its last walk found.
pub(crate) struct Root {
    dir: PathBuf,
    /// Files by path below `dir`, by segment.
    files: BTreeMap<Vec<String>, Stamp>,
    /// Whether a failure to read `dir` itself was logged.
    unreadable: bool,
}

/// What is known of one file.
#[derive(Clone)]
struct Stamp {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    /// Its digest, or why it has none (unreadable, too large).
    digest: Result<String, String>,
    mime: &'static str,
    /// For a `SKILL.md`: its frontmatter, or why it cannot be read.
    frontmatter: Option<Result<JsonObject, String>>,
}

impl Root {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Root {
            dir,
            files: BTreeMap::new(),
            unreadable: false,
        }
    }

    /// Walks the directory again; `true` when a file appeared, went, or
    /// changed. `rehash`: hash every file, changed or not.
    pub(crate) fn walk(&mut self, rehash: bool) -> bool {
        let mut found = Vec::new();
        match std::fs::read_dir(&self.dir) {
            Ok(_) => {
                self.unreadable = false;
                collect(&self.dir, &mut Vec::new(), &mut found);
            }
            Err(e) if !self.unreadable => {
                self.unreadable = true;
                tracing::warn!(dir = %self.dir.display(), "the skills directory cannot be read: {e}");
            }
            Err(_) => {}
        }
        let mut changed = found.len() != self.files.len();
        let mut files = BTreeMap::new();
        for (segments, path, len, modified) in found {
            let stamp = match self.files.remove(&segments) {
                Some(old)
                    if !rehash
                        && old.len == len
                        && old.modified == modified
                        && old.path == path =>
                {
                    old
                }
                old => {
                    let fresh = stamp(&segments, path, len, modified);
                    if old.is_none_or(|o| o.digest != fresh.digest || o.len != fresh.len) {
                        changed = true;
                    }
                    fresh
                }
            };
            files.insert(segments, stamp);
        }
        changed |= !self.files.is_empty();
        self.files = files;
        changed
    }

    /// The skills found: one per directory holding a `SKILL.md`, with
    /// every file below it (the files of nested skills included: SK-ENT-19).
    pub(crate) fn candidates(&self) -> Vec<Candidate> {
        let mut out = Vec::new();
        for (segments, stamp) in &self.files {
            if segments.last().map(String::as_str) != Some(SKILL_MD) {
                continue;
            }
            let path = segments[..segments.len() - 1].to_vec();
            let mut refused = None;
            let mut files = Vec::new();
            for (inner, file) in self.files.range(path.clone()..) {
                if !inner.starts_with(&path) {
                    break;
                }
                match &file.digest {
                    Ok(digest) => files.push(CandidateFile {
                        inner: inner[path.len()..].to_vec(),
                        source: Source::Disk(file.path.clone()),
                        record: Some((file.len, digest.clone())),
                        mime: file.mime,
                    }),
                    Err(reason) => {
                        refused.get_or_insert_with(|| {
                            format!("{}: {reason}", inner[path.len()..].join("/"))
                        });
                    }
                }
            }
            out.push(Candidate {
                path,
                frontmatter: stamp
                    .frontmatter
                    .clone()
                    .unwrap_or_else(|| Err(format!("{SKILL_MD} was not read"))),
                files,
                dynamic: false,
                refused,
            });
        }
        out
    }
}

/// Reads and hashes one file.
fn stamp(segments: &[String], path: PathBuf, len: u64, modified: Option<SystemTime>) -> Stamp {
    let name = segments.last().map_or("", String::as_str);
    let is_skill_md = name == SKILL_MD;
    let mut out = Stamp {
        len,
        modified,
        digest: Err(String::new()),
        mime: mime_of(name, None),
        frontmatter: None,
        path,
    };
    if len > MAX_TOTAL_BYTES {
        out.digest = Err(format!("{len} bytes, over the 16 MiB a skill may hold"));
        return out;
    }
    match std::fs::read(&out.path) {
        Err(e) => out.digest = Err(format!("cannot be read: {e}")),
        Ok(bytes) => {
            out.len = bytes.len() as u64;
            out.digest = Ok(Sha256Digest::of(&bytes).to_string());
            out.mime = mime_of(name, Some(&bytes));
            if is_skill_md {
                out.frontmatter = Some(
                    std::str::from_utf8(&bytes)
                        .map_err(|_| "it is not UTF-8 text".to_owned())
                        .and_then(|t| frontmatter::parse(t).map_err(|e| e.to_string())),
                );
            }
        }
    }
    out
}

/// Collects the regular files below `dir` (`prefix` is its path below the
/// root), sorted by name, skipping hidden entries and links.
fn collect(
    dir: &Path,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, PathBuf, u64, Option<SystemTime>)>,
) {
    if prefix.len() > MAX_DEPTH {
        tracing::warn!(dir = %dir.display(), "skills directory nested deeper than {MAX_DEPTH} levels; not walked further");
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), "cannot read a directory of skills: {e}");
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let Ok(name) = entry.file_name().into_string() else {
            tracing::warn!(dir = %dir.display(), "skipping a file whose name is not UTF-8");
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if out.len() >= MAX_FILES {
            tracing::warn!(dir = %dir.display(), "over {MAX_FILES} files under the skills directory; the rest are not served");
            return;
        }
        prefix.push(name);
        if meta.is_dir() {
            collect(&entry.path(), prefix, out);
        } else if meta.is_file() {
            out.push((
                prefix.clone(),
                entry.path(),
                meta.len(),
                meta.modified().ok(),
            ));
        }
        prefix.pop();
    }
}
