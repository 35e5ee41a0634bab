//! Results that page: a tool result over its budget is kept whole for the
//! session, and the model reads the rest of it through
//! `mcp__switchboard__read_result`.
//!
//! The store keeps each result's text (its text blocks, embedded text
//! resources and resource links, joined by newlines: the offsets
//! `read_result` takes are characters of that text) under a handle, in
//! memory while the results kept stay under [`StoreLimits::memory_bytes`],
//! beyond that in a file of its own under the user's cache directory
//! (`$SWITCHBOARD_CACHE_DIR`, else `$XDG_CACHE_HOME/switchboard`, else
//! `~/.cache/switchboard`; a folder of this process's, mode 0700, files
//! 0600), within [`StoreLimits::disk_bytes`] and
//! [`StoreLimits::results`]; past those the oldest results are dropped
//! (their handles then say so). The folder is removed when the host shuts
//! down or the store is dropped, and folders of processes that are gone
//! are removed when a store first spills.
//!
//! A handle belongs to the caller that made the call (its principal,
//! through a gateway) and to this process: another caller's handle reads
//! like an unknown one, and a handle of another replica is refused
//! naming it.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use switchboard_wire::shared::lock;

/// Bounds of the results kept for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoreLimits {
    /// Bytes of text kept in memory, over every result; beyond it results
    /// go to files.
    pub memory_bytes: usize,
    /// Bytes of text kept in files; beyond it the oldest results are
    /// dropped.
    pub disk_bytes: u64,
    /// Results kept; beyond it the oldest are dropped.
    pub results: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            memory_bytes: 64 << 20,
            disk_bytes: 1 << 30,
            results: 1_000,
        }
    }
}

/// What the store said about a result it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    /// The handle to read it by.
    pub handle: String,
    /// Its characters.
    pub chars: usize,
    /// Its lines.
    pub lines: usize,
    /// Whether it went to a file.
    pub spilled: bool,
}

/// Why a handle cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ReadError {
    /// No such result for this caller: never made, made for another
    /// caller, or dropped to stay within the bounds.
    #[error(
        "there is no kept result {0:?} for this caller (handles last for the session, for the caller that made the call; the oldest are dropped past the store's bounds)"
    )]
    Unknown(String),
    /// Made by another replica of a gateway.
    #[error(
        "result {handle:?} was kept by replica {replica}, not this one; read it through that replica"
    )]
    OtherReplica {
        /// The handle.
        handle: String,
        /// The replica that kept it.
        replica: String,
    },
    /// Its file could not be read.
    #[error("result {handle:?} could not be read back: {source}")]
    Io {
        /// The handle.
        handle: String,
        /// The failure.
        #[source]
        source: io::Error,
    },
}

/// One kept result, as read back.
#[derive(Debug, Clone)]
pub(crate) struct KeptResult {
    /// Its text.
    pub text: Arc<str>,
    /// The server's alias.
    pub alias: String,
    /// The tool's model-facing name.
    pub tool: String,
}

/// Results kept for a session.
#[derive(Debug)]
pub(crate) struct ResultStore {
    limits: StoreLimits,
    replica: Option<String>,
    /// The store's folder, made at the first spill.
    dir: Mutex<Option<PathBuf>>,
    /// Where folders are made (the user's cache directory, by default).
    root: Option<PathBuf>,
    entries: Mutex<Entries>,
    counter: AtomicU64,
    seed: u64,
}

#[derive(Debug, Default)]
struct Entries {
    by_handle: HashMap<String, Entry>,
    order: VecDeque<String>,
    memory: usize,
    disk: u64,
}

#[derive(Debug)]
struct Entry {
    principal: Option<String>,
    alias: String,
    tool: String,
    place: Place,
}

#[derive(Debug)]
enum Place {
    Memory(Arc<str>),
    File(PathBuf, u64),
}

impl ResultStore {
    /// A store for a host named `replica` (in every handle), within
    /// `limits`, spilling under the user's cache directory.
    pub(crate) fn new(replica: Option<String>, limits: StoreLimits) -> ResultStore {
        ResultStore::with_root(replica, limits, cache_dir().map(|d| d.join("results")))
    }

    /// A store spilling under `root` (tests).
    pub(crate) fn with_root(
        replica: Option<String>,
        limits: StoreLimits,
        root: Option<PathBuf>,
    ) -> ResultStore {
        ResultStore {
            limits,
            replica,
            dir: Mutex::new(None),
            root,
            entries: Mutex::default(),
            counter: AtomicU64::new(0),
            seed: std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish(),
        }
    }

    /// The folder results spill to, once one has.
    #[cfg(test)]
    pub(crate) fn spill_dir(&self) -> Option<PathBuf> {
        self.lock_dir().clone()
    }

    /// Keeps `text`, a result of `tool` (model-facing name) of `alias`, for
    /// `principal`.
    ///
    /// # Errors
    /// When it belongs in a file and the file cannot be written (the
    /// caller then cuts the result as before).
    pub(crate) fn keep(
        &self,
        principal: Option<&str>,
        alias: &str,
        tool: &str,
        text: String,
    ) -> io::Result<Kept> {
        let handle = self.new_handle();
        let chars = text.chars().count();
        let lines = text.lines().count().max(1);
        let bytes = text.len();
        let in_memory = {
            let entries = self.lock();
            entries.memory + bytes <= self.limits.memory_bytes
        };
        let place = if in_memory {
            Place::Memory(Arc::from(text))
        } else {
            let path = self.file_for(&handle)?;
            write_private(&path, text.as_bytes())?;
            Place::File(path, bytes as u64)
        };
        let spilled = matches!(place, Place::File(..));
        let mut entries = self.lock();
        match &place {
            Place::Memory(_) => entries.memory += bytes,
            Place::File(_, n) => entries.disk += n,
        }
        entries.order.push_back(handle.clone());
        entries.by_handle.insert(
            handle.clone(),
            Entry {
                principal: principal.map(str::to_owned),
                alias: alias.to_owned(),
                tool: tool.to_owned(),
                place,
            },
        );
        // The oldest go first when over the bounds (never the one just
        // kept).
        while entries.order.len() > 1
            && (entries.order.len() > self.limits.results
                || entries.disk > self.limits.disk_bytes
                || entries.memory > self.limits.memory_bytes)
        {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some(entry) = entries.by_handle.remove(&oldest) {
                match entry.place {
                    Place::Memory(t) => entries.memory -= t.len(),
                    Place::File(path, n) => {
                        entries.disk -= n;
                        let _ = std::fs::remove_file(path);
                    }
                }
            }
        }
        Ok(Kept {
            handle,
            chars,
            lines,
            spilled,
        })
    }

    /// The result `handle`, for `principal`.
    ///
    /// # Errors
    /// [`ReadError`]: unknown to this caller, another replica's, or its
    /// file unreadable.
    pub(crate) fn read(
        &self,
        principal: Option<&str>,
        handle: &str,
    ) -> Result<KeptResult, ReadError> {
        if let Some((replica, _)) = handle.rsplit_once('.') {
            if self.replica.as_deref() != Some(replica) {
                return Err(ReadError::OtherReplica {
                    handle: handle.to_owned(),
                    replica: replica.to_owned(),
                });
            }
        }
        let (place, alias, tool) = {
            let entries = self.lock();
            let entry = entries
                .by_handle
                .get(handle)
                .filter(|e| e.principal.as_deref() == principal)
                .ok_or_else(|| ReadError::Unknown(handle.to_owned()))?;
            let place = match &entry.place {
                Place::Memory(text) => Ok(text.clone()),
                Place::File(path, _) => Err(path.clone()),
            };
            (place, entry.alias.clone(), entry.tool.clone())
        };
        let text = match place {
            Ok(text) => text,
            Err(path) => {
                let text = std::fs::read_to_string(&path).map_err(|source| ReadError::Io {
                    handle: handle.to_owned(),
                    source,
                })?;
                Arc::from(text)
            }
        };
        Ok(KeptResult { text, alias, tool })
    }

    /// Forgets every result and removes the store's folder.
    pub(crate) fn clear(&self) {
        {
            let mut entries = self.lock();
            *entries = Entries::default();
        }
        if let Some(dir) = self.lock_dir().take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    fn new_handle(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        hasher.write_u64(self.seed);
        hasher.write_u64(n);
        let random = hasher.finish();
        let id = format!("r{n}-{random:016x}");
        match &self.replica {
            Some(replica) => format!("{replica}.{id}"),
            None => id,
        }
    }

    fn file_for(&self, handle: &str) -> io::Result<PathBuf> {
        let mut dir = self.lock_dir();
        if dir.is_none() {
            let root = self.root.clone().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no cache directory for kept results",
                )
            })?;
            create_private_dir(&root)?;
            remove_abandoned(&root);
            let made = root.join(format!("{}-{:08x}", std::process::id(), self.seed as u32));
            create_private_dir(&made)?;
            *dir = Some(made);
        }
        let name: String = handle
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Ok(dir.as_ref().map(|d| d.join(name)).unwrap_or_default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        lock(&self.entries)
    }

    fn lock_dir(&self) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
        lock(&self.dir)
    }
}

impl Drop for ResultStore {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The user's cache directory for Switchboard: `$SWITCHBOARD_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/switchboard` (an absolute path), else
/// `$HOME/.cache/switchboard`.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SWITCHBOARD_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return Some(dir.join("switchboard"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("switchboard"))
}

/// A slice of `text` in characters: from `offset`, at most `length`.
/// Offsets past the end give an empty slice.
pub(crate) fn slice(text: &str, offset: usize, length: usize) -> &str {
    let start = byte_at(text, offset);
    let rest = &text[start..];
    &rest[..byte_at(rest, length)]
}

/// The byte index of character `n` of `text` (its length past the end).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// The lines of `text` containing `pattern` (case-insensitive), each as
/// `NUMBER: line` (numbers from 1), while they fit in `max_chars`; and how
/// many matched in all.
pub(crate) fn grep(text: &str, pattern: &str, max_chars: usize) -> (Vec<String>, usize) {
    let needle = pattern.to_lowercase();
    let mut shown = Vec::new();
    let mut used = 0;
    let mut matched = 0;
    for (i, line) in text.lines().enumerate() {
        if !line.to_lowercase().contains(&needle) {
            continue;
        }
        matched += 1;
        let entry = format!("{}: {line}", i + 1);
        let n = entry.chars().count() + 1;
        if used + n <= max_chars {
            used += n;
            shown.push(entry);
        }
    }
    (shown, matched)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

/// Removes the folders of processes that are gone (they ended without
/// cleaning up: killed). Linux only: elsewhere nothing is removed.
fn remove_abandoned(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(dirs) = std::fs::read_dir(root) else {
        return;
    };
    for dir in dirs.flatten() {
        let name = dir.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split('-').next()) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(dir.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(root: &Path, limits: StoreLimits) -> ResultStore {
        ResultStore::with_root(None, limits, Some(root.to_path_buf()))
    }

    #[test]
    fn slices_are_in_characters_at_utf8_boundaries() {
        let text = "aé€😀b";
        assert_eq!(slice(text, 0, 2), "aé");
        assert_eq!(slice(text, 2, 2), "€😀");
        assert_eq!(slice(text, 4, 10), "b");
        assert_eq!(slice(text, 5, 1), "");
        assert_eq!(slice(text, 99, 1), "");
        assert_eq!(slice(text, 1, 0), "");
    }

    #[test]
    fn grep_gives_numbered_lines_within_the_budget() {
        let text = "alpha\nBeta one\ngamma\nbeta two\nbeta three";
        let (lines, matched) = grep(text, "BETA", 100);
        assert_eq!(lines, ["2: Beta one", "4: beta two", "5: beta three"]);
        assert_eq!(matched, 3);
        let (lines, matched) = grep(text, "beta", 12);
        assert_eq!(lines, ["2: Beta one"]);
        assert_eq!(matched, 3);
    }

    #[test]
    fn another_principals_handle_reads_as_unknown_and_another_replicas_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), StoreLimits::default());
        let kept = s
            .keep(Some("alice"), "a", "mcp__a__t", "secret".into())
            .unwrap();
        assert_eq!(
            &*s.read(Some("alice"), &kept.handle).unwrap().text,
            "secret"
        );
        for who in [Some("bob"), None] {
            let e = s.read(who, &kept.handle).unwrap_err();
            assert!(matches!(e, ReadError::Unknown(_)), "{e}");
        }
        let e = s.read(Some("alice"), "east.r0-00").unwrap_err();
        assert!(matches!(e, ReadError::OtherReplica { .. }), "{e}");
        // A named replica's handles carry its name.
        let named = ResultStore::with_root(Some("west".into()), StoreLimits::default(), None);
        let kept = named.keep(None, "a", "t", "x".into()).unwrap();
        assert!(kept.handle.starts_with("west."));
        assert_eq!(&*named.read(None, &kept.handle).unwrap().text, "x");
    }

    #[test]
    fn past_memory_results_spill_to_private_files_deleted_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let limits = StoreLimits {
            memory_bytes: 10,
            ..StoreLimits::default()
        };
        let s = store(dir.path(), limits);
        let small = s.keep(None, "a", "t", "12345".into()).unwrap();
        assert!(!small.spilled);
        let big = s.keep(None, "a", "t", "x".repeat(100)).unwrap();
        assert!(big.spilled);
        let folder = s.spill_dir().unwrap();
        let files: Vec<_> = std::fs::read_dir(&folder).unwrap().flatten().collect();
        assert_eq!(files.len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = files[0].metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "the file is the user's alone");
            let mode = std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "and so is its folder");
        }
        assert_eq!(s.read(None, &big.handle).unwrap().text.len(), 100);
        s.clear();
        assert!(!folder.exists());
        assert!(matches!(
            s.read(None, &big.handle),
            Err(ReadError::Unknown(_))
        ));
        // Dropping the store removes its folder too.
        let s = store(dir.path(), limits);
        s.keep(None, "a", "t", "y".repeat(100)).unwrap();
        let folder = s.spill_dir().unwrap();
        assert!(folder.exists());
        drop(s);
        assert!(!folder.exists());
    }

    #[test]
    fn the_oldest_results_go_past_the_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(
            dir.path(),
            StoreLimits {
                results: 2,
                ..StoreLimits::default()
            },
        );
        let first = s.keep(None, "a", "t", "1".into()).unwrap();
        let second = s.keep(None, "a", "t", "2".into()).unwrap();
        let third = s.keep(None, "a", "t", "3".into()).unwrap();
        assert!(s.read(None, &first.handle).is_err());
        assert!(s.read(None, &second.handle).is_ok());
        assert!(s.read(None, &third.handle).is_ok());
    }

    #[test]
    fn folders_of_gone_processes_are_removed_at_the_first_spill() {
        let dir = tempfile::tempdir().unwrap();
        // No process has this id (above the kernel's pid_max).
        let stale = dir.path().join("4194305-deadbeef");
        std::fs::create_dir_all(&stale).unwrap();
        let s = store(
            dir.path(),
            StoreLimits {
                memory_bytes: 0,
                ..StoreLimits::default()
            },
        );
        s.keep(None, "a", "t", "z".into()).unwrap();
        assert!(!stale.exists() || !Path::new("/proc/self").exists());
    }
}
