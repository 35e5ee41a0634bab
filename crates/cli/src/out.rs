//! Writing to stdout and stderr.
//!
//! Output goes through locked handles and `writeln!`, never `println!`, so a
//! closed pipe (`switchboard tools | head -1`) is an error the binary can
//! end on quietly instead of a panic.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use switchboard_host::{CLOSE_TAG, OPEN_TAG};

/// Writes `text` and a newline to stdout.
///
/// # Errors
/// When stdout is closed.
pub(crate) fn line(text: impl AsRef<str>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_ref().as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes `value` as indented JSON and a newline to stdout.
///
/// # Errors
/// When stdout is closed.
pub(crate) fn json(value: &impl Serialize) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    line(text)
}

/// Whether stderr's lines are JSON objects (`--log-format json`).
static JSON_LOGS: AtomicBool = AtomicBool::new(false);

/// Makes [`note`], [`warning`] and [`failure`] write JSON objects, like
/// the log lines.
pub(crate) fn use_json_logs() {
    JSON_LOGS.store(true, Ordering::Relaxed);
}

/// Writes `text` and a newline to stderr (notes for the person, never
/// data); with `--log-format json`, a JSON object like a log line's, at
/// level `INFO`.
pub(crate) fn note(text: impl AsRef<str>) {
    logged("INFO", "", text.as_ref());
}

/// A warning on stderr: `WARNING: text`, or a JSON line at level `WARN`.
pub(crate) fn warning(text: impl AsRef<str>) {
    logged("WARN", "WARNING: ", text.as_ref());
}

/// Why the command failed, on stderr: `switchboard: text`, or a JSON
/// line at level `ERROR`.
pub(crate) fn failure(text: impl AsRef<str>) {
    logged("ERROR", "switchboard: ", text.as_ref());
}

/// `text` as a line for a person (after `prefix`), or as a JSON log line
/// at `level`.
fn logged(level: &str, prefix: &str, text: &str) {
    if JSON_LOGS.load(Ordering::Relaxed) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let timestamp = switchboard_wire::tasks::iso8601_utc(
            u64::try_from(now.as_millis()).unwrap_or(u64::MAX),
        );
        stderr_line(
            &serde_json::json!({"timestamp": timestamp, "level": level, "message": text})
                .to_string(),
        );
    } else {
        stderr_line(&format!("{prefix}{text}"));
    }
}

/// Writes `line` and a newline to stderr as it is.
pub(crate) fn stderr_line(line: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.write_all(b"\n");
    let _ = err.flush();
}

/// Server text without the boundary markers the host puts around it for
/// the model: the person reading a terminal does not need them. A line
/// that held only a marker goes away.
pub(crate) fn without_markers(text: &str) -> String {
    let mut kept = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        let mut clean = String::with_capacity(line.len());
        let mut had_marker = false;
        loop {
            let open = rest.find(OPEN_TAG).unwrap_or(usize::MAX);
            let close = rest.find(CLOSE_TAG).unwrap_or(usize::MAX);
            if open == usize::MAX && close == usize::MAX {
                clean.push_str(rest);
                break;
            }
            had_marker = true;
            if open < close {
                clean.push_str(&rest[..open]);
                rest = rest[open..]
                    .find('>')
                    .map_or("", |end| &rest[open + end + 1..]);
            } else {
                clean.push_str(&rest[..close]);
                rest = &rest[close + CLOSE_TAG.len()..];
            }
        }
        if !(had_marker && clean.trim().is_empty()) {
            kept.push(clean);
        }
    }
    kept.join("\n")
}

/// The server's own words of a model-facing description
/// (`[from ALIAS] <markers>TEXT</markers>`), on one line.
pub(crate) fn plain_description(description: &str) -> String {
    let text = description
        .strip_prefix("[from ")
        .and_then(|rest| rest.split_once("] "))
        .map_or(description, |(_, rest)| rest);
    without_markers(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Cuts `text` to `max` characters, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Lays out rows as left-aligned columns two spaces apart (the last
/// column is not padded).
pub(crate) fn table(rows: &[Vec<String>]) -> Vec<String> {
    switchboard_agent::eval::columns(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_removed_for_people() {
        let d = switchboard_host::model_description("notes", Some("Searches  the\nnotes."));
        assert_eq!(plain_description(&d), "Searches the notes.");
        let wrapped = switchboard_host::wrap_untrusted("notes", Some("mcp__notes__x"), "a\nb");
        assert_eq!(without_markers(&wrapped), "a\nb");
        let inline = format!(
            "failed: {}. Retry",
            switchboard_host::wrap_untrusted("t", None, "refused")
        );
        assert_eq!(without_markers(&inline), "failed: \nrefused\n. Retry");
    }

    #[test]
    fn tables_and_clips() {
        let rows = vec![
            vec!["A".to_owned(), "BB".to_owned(), "c".to_owned()],
            vec!["aaa".to_owned(), "b".to_owned(), "".to_owned()],
        ];
        assert_eq!(table(&rows), vec!["A    BB  c", "aaa  b"]);
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
