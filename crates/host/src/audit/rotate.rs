//! Rotation: the log is archived before a write would take it past its
//! size bound, and its chain goes on in a fresh file.
//!
//! The writer that rotates holds the exclusive lock of the full file. It
//! links that file under its archive name (`audit.jsonl.000000000001`,
//! after the sequence number of its first line, twelve digits so names
//! sort in chain order), writes the lines at hand, chained after the full
//! file's last one, into a new file that it locks first, and renames the
//! new file over the log's path. The path names a file at every moment, and
//! never an empty one. Other writers (in this process or another) find
//! out when they next take the lock: the path then names another file than
//! theirs, so they open it, lock it and read its chain's end
//! ([`WriterState::follow_path`]). Locks are always taken from the older
//! file to the newer, so writers cannot wait on each other in a circle.
//!
//! Archives beyond [`Rotation::keep`] are deleted, oldest first. A rotation
//! that fails (the disk, the directory's permissions) is logged and the
//! lines go to the full file instead: no line is lost to a failed rotation.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use fs4::fs_std::FileExt;

use super::{WriterState, seq_of};

/// Digits of the sequence number in an archive's name.
const SEQ_DIGITS: usize = 12;
/// How the name of a rotation's new file goes on after the log's name and
/// a dot, before it is renamed over the log.
const FRESH_MARK: &str = "rotating-";

/// When the log is rotated: its size bound, and how many archives are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rotation {
    /// A write that would take the file past this many bytes first
    /// archives it (a file is never archived empty, so one group of lines
    /// larger than this still goes into one file).
    pub max_bytes: u64,
    /// Archives kept, the oldest deleted beyond; `None` keeps every one.
    pub keep: Option<usize>,
}

impl Rotation {
    /// Rotation at `max_bytes`, every archive kept.
    #[must_use]
    pub fn at(max_bytes: u64) -> Rotation {
        Rotation {
            max_bytes,
            keep: None,
        }
    }

    /// The same, keeping the newest `keep` archives.
    #[must_use]
    pub fn keeping(mut self, keep: usize) -> Rotation {
        self.keep = Some(keep);
        self
    }
}

/// The archives of the log at `path`, oldest first (in chain order).
///
/// # Errors
/// The log's directory cannot be read.
pub fn archives_of(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    siblings(path, |suffix| {
        suffix.len() == SEQ_DIGITS && suffix.bytes().all(|b| b.is_ascii_digit())
    })
}

/// New files of rotations cut short (the process died before renaming one
/// over the log): lines in them never joined the chain.
pub(super) fn leftovers_of(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    siblings(path, |suffix| suffix.starts_with(FRESH_MARK))
}

/// The files beside the log at `path` named after it, a dot and a suffix
/// that `wanted` accepts, sorted by name.
fn siblings(path: &Path, wanted: impl Fn(&str) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(Vec::new());
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry?;
        let entry_name = entry.file_name();
        let entry_name = entry_name.to_string_lossy();
        if entry_name.strip_prefix(&prefix).is_some_and(&wanted) {
            found.push(path.with_file_name(entry_name.as_ref()));
        }
    }
    found.sort();
    Ok(found)
}

/// The archive name of a log file whose first line has `seq`.
fn archive_path(path: &Path, seq: u64) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{seq:0width$}", width = SEQ_DIGITS));
    path.with_file_name(name)
}

/// The file the new chain is written to before it takes the log's path:
/// a name of this process's own (it is created with `create_new`).
fn fresh_path(path: &Path) -> PathBuf {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".{FRESH_MARK}{}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    path.with_file_name(name)
}

/// Whether `a` and `b` are the same file.
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}
#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}

/// Opens (creating, mode 0600) the log file at `path` for reading and
/// appending.
pub(super) fn open_log_file(path: &Path, create_new: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

impl WriterState {
    /// With the exclusive lock of our file held: when the log's path names
    /// another file now (another writer rotated it), opens and locks that
    /// one instead (dropping our file and its lock), its chain's end to be
    /// read again. A path that names nothing (the log was deleted) is
    /// created anew.
    pub(super) fn follow_path(&mut self) -> std::io::Result<()> {
        // The file opened may be rotated in turn before its lock is ours:
        // then the path names yet another file, and that one is followed.
        while !self.path_names_our_file()? {
            let file = open_log_file(&self.path, false)?;
            FileExt::lock_exclusive(&file)?;
            // Dropping our old file drops its lock.
            self.file = file;
            self.known_len = u64::MAX;
        }
        Ok(())
    }

    /// Whether the log's path names the file we hold (not another one, or
    /// nothing).
    fn path_names_our_file(&self) -> std::io::Result<bool> {
        let ours = self.file.metadata()?;
        match std::fs::metadata(&self.path) {
            Ok(theirs) => Ok(same_file(&ours, &theirs)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether `adding` more bytes calls for a rotation first.
    pub(super) fn rotation_due(&self, adding: usize) -> bool {
        self.rotation.is_some_and(|r| {
            let after = self.known_len.saturating_add(adding as u64);
            self.known_len > 0 && after > r.max_bytes && after > self.rotation_retry_at
        })
    }

    /// Puts the next try of a rotation that failed one bound further.
    pub(super) fn rotation_failed(&mut self) {
        if let Some(r) = self.rotation {
            self.rotation_retry_at = self.known_len.saturating_add(r.max_bytes);
        }
    }

    /// Archives the full file and writes `out` (the next lines of the
    /// chain) as the start of a new one at the log's path; the new file is
    /// ours and locked. On failure nothing has moved: the caller writes
    /// `out` to the full file.
    pub(super) fn rotate(&mut self, out: &[u8]) -> std::io::Result<()> {
        // Only a writer holding the lock of the file at the path rotates;
        // should something outside have moved it meanwhile, the next lock
        // taken follows the path instead.
        if !self.path_names_our_file()? {
            return Err(std::io::Error::other(
                "the log's path no longer names the file being written",
            ));
        }
        let first = self.first_seq()?;
        let archive = archive_path(&self.path, first);
        match std::fs::hard_link(&self.path, &archive) {
            Ok(()) => {}
            // A rotation cut short (the process died before the rename)
            // left the link: it is this very file, so go on from there.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let linked = std::fs::metadata(&archive)?;
                if !same_file(&linked, &self.file.metadata()?) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
        let fresh = fresh_path(&self.path);
        let started = (|| {
            let mut file = open_log_file(&fresh, true)?;
            FileExt::lock_exclusive(&file)?;
            file.write_all(out)?;
            std::fs::rename(&fresh, &self.path)?;
            Ok::<File, std::io::Error>(file)
        })();
        let file = match started {
            Ok(file) => file,
            Err(e) => {
                let _ = std::fs::remove_file(&fresh);
                // Only the extra name goes; the file stays at the path.
                let _ = std::fs::remove_file(&archive);
                return Err(e);
            }
        };
        // Dropping the full file drops its lock: writers waiting on it
        // find the path moved on.
        self.file = file;
        self.known_len = out.len() as u64;
        if let Some(keep) = self.rotation.and_then(|r| r.keep) {
            self.prune(keep);
        }
        Ok(())
    }

    /// The sequence number of the first line of our file that has one
    /// (lines are appended in chain order; a torn one is skipped); one past
    /// the chain's end when none has.
    fn first_seq(&mut self) -> std::io::Result<u64> {
        self.file.seek(SeekFrom::Start(0))?;
        for line in BufReader::new(&mut self.file).split(b'\n') {
            if let Some(seq) = seq_of(&line?) {
                return Ok(seq);
            }
        }
        Ok(self.seq + 1)
    }

    /// Deletes the archives beyond the newest `keep`.
    fn prune(&self, keep: usize) {
        let archives = match archives_of(&self.path) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(log = %self.path.display(), "cannot list the audit log's archives: {e}");
                return;
            }
        };
        let surplus = archives.len().saturating_sub(keep);
        for old in &archives[..surplus] {
            if let Err(e) = std::fs::remove_file(old) {
                tracing::warn!(archive = %old.display(), "cannot delete an old audit archive: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditLog, AuditRecord, verify};

    fn record(i: usize) -> AuditRecord {
        let mut r = AuditRecord::new(&format!("mcp__s__tool_{i}"), None);
        r.alias = Some("s".into());
        r
    }

    /// A log rotated at `max` bytes, keeping `keep` archives.
    fn rotating(dir: &Path, max: u64, keep: Option<usize>) -> AuditLog {
        let mut rotation = Rotation::at(max);
        rotation.keep = keep;
        AuditLog::open(&dir.join("audit.jsonl"))
            .unwrap()
            .with_rotation(Some(rotation))
    }

    /// A log rotated at `max` bytes (keeping `keep` archives) with `n`
    /// lines written, in a directory of its own.
    fn written(max: u64, keep: Option<usize>, n: usize) -> (tempfile::TempDir, PathBuf, AuditLog) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = rotating(dir.path(), max, keep);
        for i in 0..n {
            log.append(&record(i)).unwrap();
        }
        (dir, path, log)
    }

    /// The `seq` of every line of `files`, in order.
    fn seqs(files: &[PathBuf]) -> Vec<u64> {
        files
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .map(|l| seq_of(l.as_bytes()).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn the_log_is_archived_at_its_bound_and_its_chain_goes_on() {
        let (dir, path, _log) = written(2_000, None, 40);
        let archives = archives_of(&path).unwrap();
        assert!(archives.len() >= 4, "{archives:?}");
        for archive in &archives {
            let size = std::fs::metadata(archive).unwrap().len();
            assert!(size <= 2_000, "{} is {size} bytes", archive.display());
            // Named after its first line.
            let first = seqs(std::slice::from_ref(archive))[0];
            assert!(
                archive
                    .to_string_lossy()
                    .ends_with(&format!(".{first:012}")),
                "{}",
                archive.display()
            );
        }
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.lines, 40);
        assert_eq!(report.starts_at, None);
        assert_eq!(report.files.len(), archives.len() + 1);
        assert_eq!(seqs(&report.files), (1..=40).collect::<Vec<_>>());
        // No file of the rotation is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("rotating")), "{names:?}");
    }

    #[test]
    fn writers_sharing_a_rotating_log_keep_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        // Two logs on one file: two open files, locked like two processes.
        let logs = [
            rotating(dir.path(), 3_000, None),
            rotating(dir.path(), 3_000, None),
            rotating(dir.path(), 3_000, None),
        ];
        std::thread::scope(|scope| {
            for (w, log) in logs.iter().enumerate() {
                scope.spawn(move || {
                    for i in 0..150 {
                        log.append(&record(w * 1_000 + i)).unwrap();
                    }
                });
            }
        });
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.lines, 450);
        assert!(report.files.len() > 10, "{:?}", report.files);
        assert_eq!(seqs(&report.files), (1..=450).collect::<Vec<_>>());
        // Each writer's every line is there.
        let text: String = report
            .files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        for tool in [
            "mcp__s__tool_149\"",
            "mcp__s__tool_1149\"",
            "mcp__s__tool_2149\"",
        ] {
            assert!(text.contains(tool), "{tool}");
        }
    }

    #[test]
    fn archives_beyond_keep_are_deleted_and_the_rest_still_verifies() {
        let (_dir, path, _log) = written(1_500, Some(2), 60);
        let archives = archives_of(&path).unwrap();
        assert_eq!(archives.len(), 2, "{archives:?}");
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        let first = seqs(&archives[..1])[0];
        assert!(first > 1);
        assert_eq!(report.starts_at, Some(first));
        assert_eq!(seqs(&report.files), (first..=60).collect::<Vec<_>>());
    }

    #[test]
    fn tampering_and_missing_archives_are_reported_with_their_file() {
        let (_dir, path, _log) = written(1_500, None, 30);
        let archives = archives_of(&path).unwrap();
        assert!(archives.len() >= 3, "{archives:?}");
        // A line of the second archive edited.
        let text = std::fs::read_to_string(&archives[1]).unwrap();
        std::fs::write(&archives[1], text.replacen("\"s\"", "\"x\"", 1)).unwrap();
        // Its own hash, and the next line's prev.
        let report = verify(&path).unwrap();
        assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
        assert_eq!(report.problems[0].file, archives[1]);
        assert_eq!(report.problems[0].line, 1);
        assert!(report.problems[0].what.contains("edited"));
        std::fs::write(&archives[1], text).unwrap();
        assert!(verify(&path).unwrap().is_intact());
        // A middle archive removed: the next file's first line says so.
        std::fs::remove_file(&archives[1]).unwrap();
        let report = verify(&path).unwrap();
        assert!(!report.is_intact());
        assert_eq!(report.problems[0].file, archives[2]);
        assert!(
            report.problems.iter().any(|p| p.what.contains("missing")),
            "{:?}",
            report.problems
        );
        // Every archive removed: the log alone does not start the chain.
        for archive in archives_of(&path).unwrap() {
            std::fs::remove_file(archive).unwrap();
        }
        let report = verify(&path).unwrap();
        assert_eq!(report.problems[0].file, path);
        assert_eq!(report.problems[0].line, 1);
        assert_eq!(report.starts_at, None);
    }

    #[test]
    fn a_log_moved_away_from_outside_is_followed_with_a_chain_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let moved = dir.path().join("audit.jsonl.old");
        let log = AuditLog::open(&path).unwrap();
        log.append(&record(0)).unwrap();
        log.append(&record(1)).unwrap();
        // logrotate's way: the file renamed, the next line makes a new one.
        std::fs::rename(&path, &moved).unwrap();
        log.append(&record(2)).unwrap();
        assert_eq!(seqs(std::slice::from_ref(&moved)), [1, 2]);
        assert_eq!(seqs(std::slice::from_ref(&path)), [1]);
        assert!(verify(&path).unwrap().is_intact());
    }

    #[test]
    fn a_rotation_cut_short_before_its_rename_is_finished_by_the_next_one() {
        let (dir, path, log) = written(2_000, None, 3);
        // The process that rotated died after linking the archive name.
        std::fs::hard_link(&path, dir.path().join("audit.jsonl.000000000001")).unwrap();
        for i in 3..20 {
            log.append(&record(i)).unwrap();
        }
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert!(report.files.len() >= 3, "{:?}", report.files);
        assert_eq!(seqs(&report.files), (1..=20).collect::<Vec<_>>());
        // A new file the dead process had written but not renamed: its
        // lines never joined the chain, and verify says so.
        let leftover = dir.path().join("audit.jsonl.rotating-999999-0");
        std::fs::write(&leftover, "{\"seq\":4}\n").unwrap();
        let report = verify(&path).unwrap();
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert_eq!(report.problems[0].file, leftover);
        assert!(report.problems[0].what.contains("cut short"));
    }

    #[test]
    fn a_rotation_that_fails_loses_no_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        // The first archive's name is taken: the log cannot be archived.
        std::fs::create_dir(dir.path().join("audit.jsonl.000000000001")).unwrap();
        let log = rotating(dir.path(), 1_000, None);
        for i in 0..10 {
            log.append(&record(i)).unwrap();
        }
        assert!(std::fs::metadata(&path).unwrap().len() > 1_000);
        assert_eq!(
            seqs(std::slice::from_ref(&path)),
            (1..=10).collect::<Vec<_>>()
        );
        // Once the name is free, a later write (within a bound's worth of
        // lines: a failed rotation is not tried at every write) archives
        // the log.
        std::fs::remove_dir(dir.path().join("audit.jsonl.000000000001")).unwrap();
        let mut written = 10;
        while archives_of(&path).unwrap().is_empty() {
            assert!(written < 40, "never rotated again");
            log.append(&record(written)).unwrap();
            written += 1;
        }
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.lines, written);
        assert_eq!(report.files.len(), 2);
    }
}
