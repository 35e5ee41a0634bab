//! Checking a log's chain: the log and its archives ([`super::Rotation`]),
//! oldest first, as one chain.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::rotate::leftovers_of;
use super::{GENESIS, HASH_KEY, archives_of};
use crate::HostError;
use crate::digest::sha256_hex;

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// The files read, oldest first: the log's archives, then the log.
    pub files: Vec<PathBuf>,
    /// Lines read, in every file.
    pub lines: usize,
    /// Every break in the chain, in chain order; empty when intact.
    pub problems: Vec<VerifyProblem>,
    /// sha256 of the last line: keep it elsewhere to detect removal of
    /// lines from the end.
    pub head: Option<String>,
    /// The sequence number the chain starts at when its older archives
    /// were deleted (`keep`): the lines before it cannot be checked.
    /// `None` when it starts at the beginning.
    pub starts_at: Option<u64>,
}

impl VerifyReport {
    /// Whether the chain is intact.
    pub fn is_intact(&self) -> bool {
        self.problems.is_empty()
    }
}

/// One break in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyProblem {
    /// The file holding the line.
    pub file: PathBuf,
    /// 1-based line number in that file.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// Checks every line of the log at `path` and of its archives, as one
/// chain. A chain whose oldest archive starts after the first line (older
/// archives deleted) is checked from there on ([`VerifyReport::starts_at`]);
/// a log without archives has to start at the first line.
///
/// # Errors
/// [`HostError`] when a file cannot be read.
pub fn verify(path: &Path) -> Result<VerifyReport, HostError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HostError::AuditIo { path, source }
    };
    let mut files = archives_of(path).map_err(io(path))?;
    let rotated = !files.is_empty();
    files.push(path.to_path_buf());
    let mut chain = Chain::new();
    for (i, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file).map_err(io(file))?;
        chain.read(file, &bytes, rotated && i == 0);
    }
    // Lines a crash left in a rotation's new file never joined the chain.
    for leftover in leftovers_of(path).map_err(io(path))? {
        chain.problems.push(VerifyProblem {
            file: leftover,
            line: 1,
            what: "the new file of a rotation cut short (the writer stopped before renaming it over the log): its lines are not in the chain; read them, then delete the file".into(),
        });
    }
    Ok(VerifyReport {
        files,
        lines: chain.lines,
        problems: chain.problems,
        head: chain.head,
        starts_at: chain.starts_at,
    })
}

/// The chain as read so far.
struct Chain {
    prev: String,
    expected_seq: u64,
    lines: usize,
    head: Option<String>,
    problems: Vec<VerifyProblem>,
    starts_at: Option<u64>,
}

impl Chain {
    fn new() -> Chain {
        Chain {
            prev: GENESIS.to_owned(),
            expected_seq: 1,
            lines: 0,
            head: None,
            problems: Vec::new(),
            starts_at: None,
        }
    }

    /// Reads the lines of `file`. `oldest_archive`: the file may start
    /// after the chain's first line (its predecessors deleted), and is
    /// taken from its first line on.
    fn read(&mut self, file: &Path, bytes: &[u8], oldest_archive: bool) {
        let mut first = oldest_archive;
        for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
            if raw.is_empty() {
                continue;
            }
            self.lines += 1;
            let n = i + 1;
            let mut problems = Vec::new();
            let mut problem = |what: String| {
                problems.push(VerifyProblem {
                    file: file.to_path_buf(),
                    line: n,
                    what,
                });
            };
            let this_hash = sha256_hex(raw);
            self.head = Some(this_hash.clone());
            let record = std::str::from_utf8(raw)
                .ok()
                .map(|text| (text, serde_json::from_str::<Value>(text)));
            let (text, obj) = match record {
                None => {
                    problem("not UTF-8 text".into());
                    (None, None)
                }
                Some((text, Ok(Value::Object(obj)))) => (Some(text), Some(obj)),
                Some(_) => {
                    problem("not a JSON record (edited, or a partial write)".into());
                    (None, None)
                }
            };
            if let (Some(text), Some(obj)) = (text, &obj) {
                let seq = obj.get("seq").and_then(Value::as_u64);
                if std::mem::take(&mut first) {
                    // The oldest archive left: the chain is taken up where
                    // it starts.
                    if let (Some(seq), Some(prev)) = (seq, obj.get("prev").and_then(Value::as_str))
                    {
                        if seq > 1 {
                            self.starts_at = Some(seq);
                            self.expected_seq = seq;
                            prev.clone_into(&mut self.prev);
                        }
                    }
                }
                match text.rfind(HASH_KEY) {
                    Some(at)
                        if obj.get("hash").and_then(Value::as_str)
                            == Some(&sha256_hex(&raw[..at])) => {}
                    _ => problem("its content does not match its hash: the line was edited".into()),
                }
                if obj.get("prev").and_then(Value::as_str) != Some(self.prev.as_str()) {
                    problem(
                        "its prev hash does not match the line before: a line was deleted or edited before it"
                            .into(),
                    );
                }
                let expected = self.expected_seq;
                match seq {
                    Some(seq) if seq == expected => {}
                    Some(seq) if seq > expected => problem(format!(
                        "seq jumps from {} to {seq}: {} line(s) missing",
                        expected - 1,
                        seq - expected
                    )),
                    Some(seq) => problem(format!(
                        "seq {seq} repeats or goes back (expected {expected})"
                    )),
                    None => problem("no seq".into()),
                }
                self.expected_seq = seq.map_or(expected + 1, |s| s.max(expected - 1) + 1);
            } else {
                first = false;
            }
            self.problems.append(&mut problems);
            self.prev = this_hash;
        }
    }
}
