//! Finding a call's line near the end of a log. A call picked up again
//! after a restart ([`crate::Host::resume_task`]) may already have been
//! concluded by the process that started it (the server's task ended, the
//! line was written, and only then did that process stop); the resumed
//! call looks for that line before writing one, so a call keeps one line.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

/// How much of the log is read at a time, from its end.
const CHUNK: u64 = 64 * 1024;
/// How far out of order lines may be written (a group written together,
/// clocks stepping): the search goes this much further back.
const SLACK: Duration = Duration::from_secs(60);

/// What a line says that the search needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(borrow)]
    time: &'a str,
    #[serde(default)]
    duration_ms: u64,
    #[serde(default, borrow)]
    task_id: Option<&'a str>,
}

/// Whether the log at `path` holds the line of the call that started at
/// `time` (its record's `time`) and became the server's task `task_id`.
/// It reads backwards from the end (and on into the newest archives, should
/// the log have been rotated since) and stops at the first line that ended
/// (well) before the call started: the call's own line, written when it
/// ended, is after every such line. A missing file holds nothing.
///
/// # Errors
/// A file cannot be read.
pub(crate) fn holds_task_line(path: &Path, time: &str, task_id: &str) -> std::io::Result<bool> {
    let Ok(started) = humantime::parse_rfc3339(time) else {
        return Ok(false);
    };
    let mut archives = Vec::new();
    let mut file = path.to_path_buf();
    loop {
        match search(&file, time, task_id, started)? {
            Seen::Found => return Ok(true),
            Seen::Earlier => return Ok(false),
            Seen::Other => {}
        }
        // The log's start reached: its archives are read, newest first.
        if file == path {
            archives = super::archives_of(path)?;
        }
        let Some(older) = archives.pop() else {
            return Ok(false);
        };
        file = older;
    }
}

/// Searches one file from its end: [`Seen::Other`] when its start was
/// reached without a verdict (or it does not exist).
fn search(path: &Path, time: &str, task_id: &str, started: SystemTime) -> std::io::Result<Seen> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Seen::Other),
        Err(e) => return Err(e),
    };
    let mut end = file.metadata()?.len();
    // The start of the line cut by the previous chunk's beginning.
    let mut carry: Vec<u8> = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let mut buf = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        buf.extend_from_slice(&carry);
        // Before the first newline is the end of a line that began in an
        // earlier chunk (unless this chunk starts the file): it is carried
        // to the next read, and the whole lines after it are judged.
        let (head, whole) = match (start, buf.iter().position(|b| *b == b'\n')) {
            (0, _) => (0, 0),
            (_, Some(i)) => (i, i + 1),
            (_, None) => (buf.len(), buf.len()),
        };
        for line in buf[whole..].rsplit(|b| *b == b'\n') {
            match judge(line, time, task_id, started) {
                Seen::Other => {}
                verdict => return Ok(verdict),
            }
        }
        buf.truncate(head);
        carry = buf;
        end = start;
    }
    Ok(Seen::Other)
}

/// What one line tells the search (what was seen of the call's line).
enum Seen {
    /// The call's own line.
    Found,
    /// A line that ended before the call started: the call's line, if
    /// any, is later in the file.
    Earlier,
    /// Keep looking.
    Other,
}

fn judge(line: &[u8], time: &str, task_id: &str, started: SystemTime) -> Seen {
    let Ok(line) = serde_json::from_slice::<Line<'_>>(line) else {
        return Seen::Other;
    };
    if line.task_id == Some(task_id) && line.time == time {
        return Seen::Found;
    }
    let Ok(began) = humantime::parse_rfc3339(line.time) else {
        return Seen::Other;
    };
    let ended = began + Duration::from_millis(line.duration_ms);
    if ended + SLACK < started {
        Seen::Earlier
    } else {
        Seen::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditLog, AuditRecord};

    fn line(time: &str, duration_ms: u64, task: Option<&str>) -> AuditRecord {
        let mut record = AuditRecord::new("mcp__s__t", None);
        record.time = time.to_owned();
        record.duration_ms = duration_ms;
        record.task_id = task.map(str::to_owned);
        record
    }

    /// An empty log in a directory of its own (kept alive by the caller).
    fn fresh_log() -> (tempfile::TempDir, std::path::PathBuf, AuditLog) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        (dir, path, log)
    }

    #[test]
    fn the_calls_line_is_found_among_later_ones_and_not_past_earlier_ones() {
        let (dir, path, log) = fresh_log();
        let start = "2026-12-02T10:00:00.000Z";
        // Lines of other calls, long before this one.
        log.append(&line("2026-12-02T08:00:00.000Z", 5, Some("other")))
            .unwrap();
        log.append(&line("2026-12-02T09:00:00.000Z", 10, None))
            .unwrap();
        // The call's own line, then many later ones (several chunks).
        log.append(&line(start, 4_000, Some("t-1"))).unwrap();
        for _ in 0..2_000 {
            log.append(&line("2026-12-02T10:00:05.000Z", 1, None))
                .unwrap();
        }
        assert!(holds_task_line(&path, start, "t-1").unwrap());
        // Same task, another start; another task: not there.
        assert!(!holds_task_line(&path, "2026-12-02T10:00:01.000Z", "t-1").unwrap());
        assert!(!holds_task_line(&path, start, "t-2").unwrap());
        // A missing log holds nothing.
        assert!(!holds_task_line(&dir.path().join("none"), start, "t-1").unwrap());
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_read_whole() {
        let (_dir, path, log) = fresh_log();
        let start = "2026-12-02T10:00:00.000Z";
        // The call's own line is three chunks long (very many arguments).
        let mut long = line(start, 10, Some("t-1"));
        long.argument_names = (0..20_000).map(|i| format!("argument_{i}")).collect();
        log.append(&long).unwrap();
        log.append(&line("2026-12-02T10:00:01.000Z", 1, None))
            .unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 3 * CHUNK);
        assert!(holds_task_line(&path, start, "t-1").unwrap());
    }

    #[test]
    fn the_calls_line_is_found_in_an_archive_after_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path)
            .unwrap()
            .with_rotation(Some(crate::audit::Rotation::at(2_000)));
        let start = "2026-12-02T10:00:00.000Z";
        log.append(&line(start, 4_000, Some("t-1"))).unwrap();
        for _ in 0..30 {
            log.append(&line("2026-12-02T10:00:05.000Z", 1, None))
                .unwrap();
        }
        let archives = crate::audit::archives_of(&path).unwrap();
        assert!(archives.len() >= 2, "{archives:?}");
        assert!(!std::fs::read_to_string(&path).unwrap().contains("t-1"));
        assert!(holds_task_line(&path, start, "t-1").unwrap());
        assert!(!holds_task_line(&path, start, "t-2").unwrap());
    }

    #[test]
    fn the_search_stops_at_a_line_that_ended_before_the_call_started() {
        let (_dir, path, log) = fresh_log();
        let start = "2026-12-02T10:00:00.000Z";
        // A line for the call, then one that ended an hour before it
        // started: the search never goes past the second.
        log.append(&line(start, 10, Some("t-1"))).unwrap();
        log.append(&line("2026-12-02T09:00:00.000Z", 10, None))
            .unwrap();
        assert!(!holds_task_line(&path, start, "t-1").unwrap());
    }
}
