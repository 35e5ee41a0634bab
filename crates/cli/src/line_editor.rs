//! The chat prompt's line editor, used when stdin and stderr are a
//! terminal: the line is edited in place (typed text is echoed;
//! Backspace, Delete, Ctrl-U, Ctrl-K, Ctrl-W, the arrows, Home and End,
//! Ctrl-A and Ctrl-E), Tab asks a [`Completer`] to finish the word before
//! the cursor, Enter ends the line, and Ctrl-D on an empty line ends the
//! input.
//!
//! The terminal is in raw mode (no line discipline, no echo) only while a
//! line is edited ([`Raw`]), and is put back as it was when the line ends,
//! when the edit is given up, when the process panics, and when SIGTERM or
//! SIGHUP stops it ([`restore_on_exit`]). Every other prompt (the gate's
//! approval question, a server's question) reads in the terminal's own
//! mode. Signals stay on in raw mode: Ctrl-C interrupts as it does
//! without the editor.
//!
//! Keys are decoded from bytes by [`Keys`] and the line is kept in
//! [`Line`]; both are plain data, tested without a terminal.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::{Mutex, Once};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::termios::{
    LocalModes, OptionalActions, SpecialCodeIndex, Termios, isatty, tcgetattr, tcgetwinsize,
    tcsetattr,
};
use switchboard_wire::shared::lock;

/// One way to finish the word before the cursor.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Candidate {
    /// The word as completed.
    pub(crate) text: String,
    /// Whether nothing more can follow it: a space is added after it when
    /// it is the only candidate.
    pub(crate) done: bool,
}

/// What a [`Completer`] offers for the word before the cursor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Completion {
    /// Where the word begins: a byte offset into the line.
    pub(crate) start: usize,
    /// The words it may become.
    pub(crate) candidates: Vec<Candidate>,
}

/// Finishes words for Tab.
pub(crate) trait Completer: Send + Sync {
    /// The candidates for the word that ends at `cursor` (a byte offset,
    /// on a character boundary) of `line`.
    fn complete(&self, line: &str, cursor: usize) -> Completion;

    /// A new line begins (what was kept for the last one may be stale).
    fn line_begins(&self) {}
}

/// How an edit ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Edited {
    /// Enter: the line, without its newline.
    Line(String),
    /// Ctrl-D on an empty line, or the terminal went away.
    End,
    /// The caller gave the line up.
    Abandoned,
}

/// Whether lines can be edited in place: stdin (read) and stderr (where
/// the prompt is drawn) are a terminal.
pub(crate) fn available() -> bool {
    isatty(io::stdin()) && isatty(io::stderr())
}

/// The terminal's mode before raw mode, while raw mode is on.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Raw mode on the terminal while held; the mode before comes back when
/// it is dropped (or by [`restore`]).
#[derive(Debug)]
pub(crate) struct Raw(());

impl Raw {
    /// Puts stdin's terminal in raw mode: no line discipline and no echo,
    /// one byte at a time; signals (Ctrl-C) and output processing stay.
    ///
    /// # Errors
    /// When stdin is not a terminal, or its mode cannot be changed.
    pub(crate) fn enter() -> io::Result<Raw> {
        let stdin = io::stdin();
        let mut saved = lock(&SAVED);
        let before = match saved.as_ref() {
            Some(before) => before.clone(),
            None => tcgetattr(&stdin)?,
        };
        let mut raw = before.clone();
        raw.local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO | LocalModes::IEXTEN);
        raw.special_codes[SpecialCodeIndex::VMIN] = 1;
        raw.special_codes[SpecialCodeIndex::VTIME] = 0;
        tcsetattr(&stdin, OptionalActions::Now, &raw)?;
        *saved = Some(before);
        Ok(Raw(()))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back in the mode it had before raw mode, if raw
/// mode is on; otherwise does nothing.
pub(crate) fn restore() {
    let mut saved = lock(&SAVED);
    if let Some(before) = saved.take() {
        let _ = tcsetattr(io::stdin(), OptionalActions::Now, &before);
    }
}

/// Makes sure the terminal is put back when the process ends abnormally:
/// a panic (the hook before runs after), SIGTERM or SIGHUP (the process
/// then exits with 128 + the signal's number, as a shell reports a
/// process the signal killed). Ctrl-C is the command's own to handle.
/// Installed once; call it inside the runtime.
pub(crate) fn restore_on_exit() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            before(info);
        }));
        use tokio::signal::unix::{SignalKind, signal};
        for (kind, number) in [(SignalKind::terminate(), 15), (SignalKind::hangup(), 1)] {
            if let Ok(mut stream) = signal(kind) {
                tokio::spawn(async move {
                    if stream.recv().await.is_some() {
                        restore();
                        std::process::exit(128 + number);
                    }
                });
            }
        }
    });
}

/// Restores the terminal when dropped: held for as long as a command may
/// edit lines, so that every way out of it (an error, a panic unwinding)
/// leaves the terminal as it found it.
#[derive(Debug)]
pub(crate) struct RestoreOnDrop(());

impl RestoreOnDrop {
    /// Also installs [`restore_on_exit`].
    pub(crate) fn new() -> RestoreOnDrop {
        restore_on_exit();
        RestoreOnDrop(())
    }
}

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        restore();
    }
}

/// How often a waiting edit checks whether it was given up.
const CHECK_EVERY: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 100_000_000,
};

/// Edits one line on the terminal (in raw mode: `raw`, given back when
/// the edit ends) after drawing `prompt` on stderr. `abandoned` is asked
/// while waiting for a key: once it says yes, the edit ends as
/// [`Edited::Abandoned`].
///
/// # Errors
/// When the terminal cannot be read or written.
pub(crate) fn edit(
    raw: Raw,
    prompt: &str,
    completer: &dyn Completer,
    abandoned: &dyn Fn() -> bool,
) -> io::Result<Edited> {
    let stdin = io::stdin();
    let mut screen = Screen {
        out: io::stderr(),
        prompt,
        scroll: 0,
    };
    screen.out.write_all(prompt.as_bytes())?;
    screen.out.flush()?;
    completer.line_begins();
    let mut line = Line::default();
    let mut keys = Keys::default();
    let ended = loop {
        if abandoned() {
            break Edited::Abandoned;
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&CHECK_EVERY)) {
            Ok(0) => {
                // A lone Escape (no sequence followed) is dropped.
                keys.timeout();
                continue;
            }
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let mut byte = [0u8; 1];
        let n = match rustix::io::read(stdin.as_fd(), &mut byte) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            break Edited::End;
        }
        let Some(key) = keys.push(byte[0]) else {
            continue;
        };
        match key {
            Key::Enter => {
                line.cursor = line.chars.len();
                screen.draw(&line)?;
                screen.out.write_all(b"\n")?;
                break Edited::Line(line.text());
            }
            Key::CtrlD if line.chars.is_empty() => {
                screen.out.write_all(b"\n")?;
                break Edited::End;
            }
            Key::Tab => {
                let text = line.text();
                let at = line.cursor_byte();
                let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    completer.complete(&text, at)
                }));
                let completion = asked.unwrap_or_else(|_| {
                    // A completer that failed offers nothing; the panic
                    // hook put the terminal back: raw again for the rest
                    // of the line (`raw` restores it at the end).
                    if let Ok(again) = Raw::enter() {
                        std::mem::forget(again);
                    }
                    Completion::default()
                });
                match line.complete(completion) {
                    Tabbed::Nothing => screen.out.write_all(b"\x07")?,
                    Tabbed::Inserted => {}
                    Tabbed::Listed(all) => screen.list(&all)?,
                }
            }
            other => line.key(other),
        }
        screen.draw(&line)?;
    };
    screen.out.flush()?;
    drop(raw);
    Ok(ended)
}

/// The prompt and the line on the terminal's last row.
struct Screen<'a> {
    out: io::Stderr,
    prompt: &'a str,
    /// The first character shown: a line wider than the terminal is shown
    /// through a window that follows the cursor.
    scroll: usize,
}

impl Screen<'_> {
    /// Redraws the row: the prompt, the visible part of the line, the
    /// cursor in its place.
    fn draw(&mut self, line: &Line) -> io::Result<()> {
        let columns = tcgetwinsize(io::stderr())
            .ok()
            .map(|w| usize::from(w.ws_col))
            .filter(|c| *c > 0)
            .unwrap_or(80);
        let width = columns
            .saturating_sub(self.prompt.chars().count() + 1)
            .max(1);
        let (from, to) = window(line.chars.len(), line.cursor, width, self.scroll);
        self.scroll = from;
        let shown: String = line.chars[from..to].iter().collect();
        let mut row = format!("\r{}{shown}\x1b[K", self.prompt);
        if to > line.cursor {
            row.push_str(&format!("\x1b[{}D", to - line.cursor));
        }
        self.out.write_all(row.as_bytes())?;
        self.out.flush()
    }

    /// Lists the candidates under the prompt (the prompt is drawn again
    /// after).
    fn list(&mut self, all: &[String]) -> io::Result<()> {
        const MOST: usize = 50;
        let mut text = String::from("\n");
        for candidate in all.iter().take(MOST) {
            text.push_str(candidate);
            text.push('\n');
        }
        if all.len() > MOST {
            text.push_str(&format!("… and {} more\n", all.len() - MOST));
        }
        self.out.write_all(text.as_bytes())
    }
}

/// The characters shown, `from..to`, of a line of `len` characters with
/// the cursor at `cursor`, in `width` columns, the window starting at
/// `scroll` before: it moves only as far as the cursor needs.
fn window(len: usize, cursor: usize, width: usize, scroll: usize) -> (usize, usize) {
    let mut from = scroll.min(len);
    if len < width {
        from = 0;
    } else if cursor < from {
        from = cursor;
    } else if cursor >= from + width {
        from = cursor + 1 - width;
    }
    (from, (from + width).min(len))
}

/// A key, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Char(char),
    Enter,
    Tab,
    Backspace,
    Delete,
    Left,
    Right,
    Home,
    End,
    /// Ctrl-U: deletes from the start of the line to the cursor.
    KillStart,
    /// Ctrl-K: deletes from the cursor to the end of the line.
    KillEnd,
    /// Ctrl-W: deletes the word before the cursor.
    KillWord,
    /// Ctrl-D: the end of input on an empty line; else deletes.
    CtrlD,
    /// Anything else (function keys, Alt-combinations, other controls).
    Ignored,
}

/// Bytes to keys: UTF-8 characters, control characters and the escape
/// sequences of the arrows, Home, End and Delete.
#[derive(Debug, Default)]
struct Keys {
    pending: Vec<u8>,
}

impl Keys {
    /// Takes one byte; the key it completes, if it completes one.
    fn push(&mut self, byte: u8) -> Option<Key> {
        self.pending.push(byte);
        let key = decode(&self.pending).or_else(|| {
            // No sequence is that long: drop it.
            (self.pending.len() >= 16).then_some(Key::Ignored)
        })?;
        self.pending.clear();
        Some(key)
    }

    /// No byte came for a while: an Escape alone was the Escape key.
    fn timeout(&mut self) {
        if self.pending == [0x1b] {
            self.pending.clear();
        }
    }
}

/// The key `bytes` make; `None` while they are the start of one.
fn decode(bytes: &[u8]) -> Option<Key> {
    let (&first, rest) = bytes.split_first()?;
    Some(match first {
        0x1b => escape(rest)?,
        0x01 => Key::Home,
        0x02 => Key::Left,
        0x04 => Key::CtrlD,
        0x05 => Key::End,
        0x06 => Key::Right,
        0x08 | 0x7f => Key::Backspace,
        b'\t' => Key::Tab,
        b'\r' | b'\n' => Key::Enter,
        0x0b => Key::KillEnd,
        0x15 => Key::KillStart,
        0x17 => Key::KillWord,
        0x00..=0x1f => Key::Ignored,
        _ => {
            let want = match first {
                0x20..=0x7e => 1,
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return Some(Key::Ignored),
            };
            if bytes.len() < want {
                return None;
            }
            std::str::from_utf8(&bytes[..want])
                .ok()
                .and_then(|s| s.chars().next())
                .filter(|c| !c.is_control())
                .map_or(Key::Ignored, Key::Char)
        }
    })
}

/// The key of an escape sequence (after its Escape); `None` while
/// incomplete.
fn escape(rest: &[u8]) -> Option<Key> {
    let (&kind, tail) = rest.split_first()?;
    Some(match kind {
        // CSI: parameters, then a final byte.
        b'[' => {
            let end = tail.iter().position(|b| (0x40..=0x7e).contains(b))?;
            match (&tail[..end], tail[end]) {
                (_, b'C') => Key::Right,
                (_, b'D') => Key::Left,
                (_, b'H') | (b"1" | b"7", b'~') => Key::Home,
                (_, b'F') | (b"4" | b"8", b'~') => Key::End,
                (b"3", b'~') => Key::Delete,
                _ => Key::Ignored,
            }
        }
        // SS3: one final byte.
        b'O' => match tail.first()? {
            b'C' => Key::Right,
            b'D' => Key::Left,
            b'H' => Key::Home,
            b'F' => Key::End,
            _ => Key::Ignored,
        },
        _ => Key::Ignored,
    })
}

/// What Tab did to the line.
#[derive(Debug, PartialEq, Eq)]
enum Tabbed {
    /// Nothing to complete: the terminal's bell.
    Nothing,
    /// The only candidate, or the candidates' common start, was put in.
    Inserted,
    /// Several candidates (their common start, if longer than the word,
    /// was put in): they are listed.
    Listed(Vec<String>),
}

/// The line being edited.
#[derive(Debug, Default)]
struct Line {
    chars: Vec<char>,
    /// Where the cursor is: a character index.
    cursor: usize,
}

impl Line {
    fn text(&self) -> String {
        self.chars.iter().collect()
    }

    /// The cursor as a byte offset into [`Line::text`].
    fn cursor_byte(&self) -> usize {
        self.chars[..self.cursor].iter().map(|c| c.len_utf8()).sum()
    }

    fn key(&mut self, key: Key) {
        match key {
            Key::Char(c) => {
                self.chars.insert(self.cursor, c);
                self.cursor += 1;
            }
            Key::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.chars.remove(self.cursor);
            }
            Key::Delete | Key::CtrlD if self.cursor < self.chars.len() => {
                self.chars.remove(self.cursor);
            }
            Key::Left => self.cursor = self.cursor.saturating_sub(1),
            Key::Right => self.cursor = (self.cursor + 1).min(self.chars.len()),
            Key::Home => self.cursor = 0,
            Key::End => self.cursor = self.chars.len(),
            Key::KillStart => {
                self.chars.drain(..self.cursor);
                self.cursor = 0;
            }
            Key::KillEnd => self.chars.truncate(self.cursor),
            Key::KillWord => {
                let mut from = self.cursor;
                while from > 0 && self.chars[from - 1].is_whitespace() {
                    from -= 1;
                }
                while from > 0 && !self.chars[from - 1].is_whitespace() {
                    from -= 1;
                }
                self.chars.drain(from..self.cursor);
                self.cursor = from;
            }
            _ => {}
        }
    }

    /// Applies what the completer offered: one candidate replaces the
    /// word (with a space after it when it is done); several put in their
    /// common start when it is longer than the word, and are listed.
    fn complete(&mut self, completion: Completion) -> Tabbed {
        let text = self.text();
        let cursor = self.cursor_byte();
        let start = completion.start;
        if start > cursor || !text.is_char_boundary(start) {
            return Tabbed::Nothing;
        }
        let word = &text[start..cursor];
        let mut candidates = completion.candidates;
        candidates.sort();
        candidates.dedup();
        let (with, listed) = match candidates.as_slice() {
            [] => return Tabbed::Nothing,
            [only] => {
                let mut with = only.text.clone();
                let spaced = self
                    .chars
                    .get(self.cursor)
                    .is_some_and(|c| c.is_whitespace());
                if only.done && !spaced {
                    with.push(' ');
                }
                (with, None)
            }
            several => {
                let texts: Vec<String> = several.iter().map(|c| c.text.clone()).collect();
                let common = common_start(&texts);
                let with = if common.len() > word.len() && common.starts_with(word) {
                    common
                } else {
                    word.to_owned()
                };
                (with, Some(texts))
            }
        };
        if with == word && listed.is_none() {
            return Tabbed::Nothing;
        }
        let start_char = text[..start].chars().count();
        self.chars
            .splice(start_char..self.cursor, with.chars())
            .for_each(drop);
        self.cursor = start_char + with.chars().count();
        match listed {
            Some(all) => Tabbed::Listed(all),
            None => Tabbed::Inserted,
        }
    }
}

/// The longest start all of `texts` share (whole characters).
fn common_start(texts: &[String]) -> String {
    let Some((first, others)) = texts.split_first() else {
        return String::new();
    };
    let mut end = first.len();
    for other in others {
        let same = first
            .char_indices()
            .zip(other.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8());
        end = end.min(same);
    }
    first[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(bytes: &[u8]) -> Line {
        let mut keys = Keys::default();
        let mut line = Line::default();
        for b in bytes {
            if let Some(key) = keys.push(*b) {
                line.key(key);
            }
        }
        line
    }

    #[test]
    fn keys_edit_the_line() {
        assert_eq!(typed(b"helo\x1b[Dl").text(), "hello");
        assert_eq!(typed(b"hello\x7f\x7fp!").text(), "help!");
        assert_eq!(typed(b"junk\x15kept").text(), "kept");
        assert_eq!(typed(b"one two\x01\x1b[C\x0b").text(), "o");
        assert_eq!(typed(b"one two\x17three").text(), "one three");
        assert_eq!(typed(b"ab\x1bOH\x04").text(), "b");
        assert_eq!(typed(b"ab\x1b[H\x1b[3~\x1b[Fc").text(), "bc");
        assert_eq!(typed("caf\u{e9} \u{1f600}".as_bytes()).text(), "café 😀");
        let line = typed(b"x\x1b[1;5Cy\x1b[D");
        assert_eq!((line.text().as_str(), line.cursor), ("xy", 1));
    }

    #[test]
    fn a_lone_escape_is_dropped_after_a_while() {
        let mut keys = Keys::default();
        assert_eq!(keys.push(0x1b), None);
        keys.timeout();
        assert_eq!(keys.push(b'a'), Some(Key::Char('a')));
    }

    fn candidates(start: usize, texts: &[(&str, bool)]) -> Completion {
        Completion {
            start,
            candidates: texts
                .iter()
                .map(|(t, done)| Candidate {
                    text: (*t).to_owned(),
                    done: *done,
                })
                .collect(),
        }
    }

    #[test]
    fn tab_puts_in_one_candidate_or_the_common_start_of_several() {
        let mut line = typed(b"read @m");
        assert_eq!(
            line.complete(candidates(5, &[("@mock:", false)])),
            Tabbed::Inserted
        );
        assert_eq!(line.text(), "read @mock:");
        let tabbed = line.complete(candidates(
            5,
            &[("@mock:mock://b", true), ("@mock:mock://a", true)],
        ));
        assert_eq!(
            tabbed,
            Tabbed::Listed(vec!["@mock:mock://a".into(), "@mock:mock://b".into()])
        );
        assert_eq!(line.text(), "read @mock:mock://");
        assert_eq!(
            line.complete(candidates(5, &[("@mock:mock://b", true)])),
            Tabbed::Inserted
        );
        assert_eq!(line.text(), "read @mock:mock://b ");
        assert_eq!(line.complete(candidates(20, &[])), Tabbed::Nothing);
        // In the middle of the line, before a space: none added.
        let mut line = typed(b"/mo rest\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D");
        line.complete(candidates(0, &[("/mock:greet", true)]));
        assert_eq!(line.text(), "/mock:greet rest");
        assert_eq!(line.cursor, "/mock:greet".len());
    }

    #[test]
    fn the_window_follows_the_cursor() {
        assert_eq!(window(5, 5, 10, 0), (0, 5));
        assert_eq!(window(30, 30, 10, 0), (21, 30));
        assert_eq!(window(30, 25, 10, 21), (21, 30));
        assert_eq!(window(30, 3, 10, 21), (3, 13));
    }

    #[test]
    fn common_start_is_whole_characters() {
        let texts = ["caféa".to_owned(), "cafèb".to_owned()];
        assert_eq!(common_start(&texts), "caf");
        assert_eq!(common_start(&["ab".into(), "abc".into()]), "ab");
    }
}
