//! Stdin shared by every prompt on the terminal: the chat prompt, the
//! gate's approval questions and servers' questions.
//!
//! Lines are read by one thread of their own, one line each time a prompt
//! wants one, and handed to whoever asks next. Prompts take turns
//! ([`question`]): one question is on the terminal at a time, even when
//! several calls run together. A question whose asker goes away (Ctrl-C
//! cancelled the turn, or the command stopped) is withdrawn at once: its
//! read fails and the question ends as unanswered, and the line the person
//! types next goes to the next prompt instead of to the withdrawn one. A
//! plain blocking read of stdin cannot be given up that way: it would keep
//! waiting, and swallow the next line.
//!
//! The chat prompt may ask for its line edited in place ([`edited_line`]):
//! the same thread then runs the [`line_editor`] (the terminal in raw mode
//! for that line only, so every other prompt reads in the terminal's own
//! mode). A withdrawn edit is given up within a tenth of a second. When a
//! plain read is still waiting for a withdrawn question's answer, the
//! line it reads is the edited line's, read plainly.

use std::future::Future;
use std::io::{self, BufRead, Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use switchboard_wire::shared::lock;

use crate::line_editor::{self, Completer, Edited, Raw};

/// Runs `ask` (which reads its answers through [`StdinLines`]) with the
/// terminal to itself: questions wait for the one before to end.
///
/// `None` when `ask` panicked.
///
/// # Cancel safety
/// Dropping the returned future withdraws the question: a read of its
/// waiting for a line fails at once (and so does any later one), and `ask`
/// runs to its end in the background before the next question begins.
pub(crate) async fn question<T: Send + 'static>(
    ask: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    let lines = lines();
    let turn = lines.turn.clone().lock_owned().await;
    let id = lines.begin();
    // The question runs on a task of its own holding the turn, so the next
    // question waits until this one has really ended, even if withdrawn.
    let task = tokio::spawn(async move {
        let answer = ask.await;
        drop(turn);
        answer
    });
    let mut withdraw = Withdraw(Some(id));
    let answer = task.await.ok();
    withdraw.0 = None;
    answer
}

/// Stdin as lines, for the prompts' blocking reads (see the module docs).
/// Read only inside a [`question`]: a read fails while the question it
/// belongs to is withdrawn.
#[derive(Debug, Default)]
pub(crate) struct StdinLines {
    /// The line being consumed.
    line: Vec<u8>,
    /// How much of it was consumed.
    at: usize,
}

impl Read for StdinLines {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for StdinLines {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at >= self.line.len() {
            self.line = lines()
                .next_line(Want::Line)?
                .map(String::into_bytes)
                .unwrap_or_default();
            self.at = 0;
        }
        Ok(&self.line[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.line.len());
    }
}

/// The chat prompt's next line (blocking), edited in place with
/// `completer` for Tab after `prompt` is drawn ([`line_editor`]); `None`
/// at the end of input (Ctrl-D on an empty line). Read only inside a
/// [`question`], and only when [`line_editor::available`].
///
/// # Errors
/// When the question in progress is withdrawn.
pub(crate) fn edited_line(
    prompt: &str,
    completer: Arc<dyn Completer>,
) -> io::Result<Option<String>> {
    lines().next_line(Want::Edit(Arc::new(Edit {
        prompt: prompt.to_owned(),
        completer,
        question: 0,
    })))
}

/// How the line a prompt wants is read.
#[derive(Clone)]
enum Want {
    /// Plainly, in the terminal's own mode.
    Line,
    /// Edited in place.
    Edit(Arc<Edit>),
}

/// A line to edit in place.
struct Edit {
    prompt: String,
    completer: Arc<dyn Completer>,
    /// The question it belongs to: once that one is withdrawn (or over),
    /// the edit is given up.
    question: u64,
}

/// What the reader thread read.
enum Got {
    Line(String),
    End,
    /// Nothing: an edit given up.
    Nothing,
}

/// Withdraws question `.0` when dropped armed.
struct Withdraw(Option<u64>);

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            lines().withdraw(id);
        }
    }
}

/// The process's one stdin reader.
fn lines() -> &'static Lines {
    static LINES: OnceLock<Lines> = OnceLock::new();
    LINES.get_or_init(|| Lines {
        state: Arc::new((Mutex::new(State::default()), Condvar::new())),
        turn: Arc::new(tokio::sync::Mutex::new(())),
    })
}

struct Lines {
    /// What the reader thread and the prompts share; the condition
    /// variable is signalled at every change.
    state: Arc<(Mutex<State>, Condvar)>,
    /// Held for the length of a question.
    turn: Arc<tokio::sync::Mutex<()>>,
}

#[derive(Default)]
struct State {
    /// A line read and not taken yet (with its newline).
    line: Option<String>,
    /// Stdin ended (or failed, or no reader thread could start).
    ended: bool,
    /// A prompt wants a line: the reader thread reads one, this way.
    wanted: Option<Want>,
    /// The reader thread was started.
    started: bool,
    /// The question in progress.
    question: u64,
    /// It was withdrawn: its reads fail.
    withdrawn: bool,
}

impl Lines {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state.0)
    }

    /// A new question begins; returns its id.
    fn begin(&self) -> u64 {
        let mut state = self.lock();
        state.question += 1;
        state.withdrawn = false;
        state.question
    }

    /// Withdraws question `id`, if it is still the one in progress.
    fn withdraw(&self, id: u64) {
        let mut state = self.lock();
        if state.question == id {
            state.withdrawn = true;
            self.state.1.notify_all();
        }
    }

    /// The next line (blocking), read as `want` says (unless a read of a
    /// withdrawn question's is still waiting: its line is this one's);
    /// `None` at the end of stdin.
    ///
    /// # Errors
    /// When the question in progress is withdrawn.
    fn next_line(&self, want: Want) -> io::Result<Option<String>> {
        let mut state = self.lock();
        let mut prompted = false;
        loop {
            if state.withdrawn {
                return Err(io::Error::other("the question was withdrawn"));
            }
            if let Some(line) = state.line.take() {
                return Ok(Some(line));
            }
            if state.ended {
                return Ok(None);
            }
            if let (Some(Want::Line), Want::Edit(edit), false) = (&state.wanted, &want, prompted) {
                // A plain read already waits: the line is read plainly,
                // after the prompt.
                prompted = true;
                let mut err = io::stderr().lock();
                let _ = write!(err, "{}", edit.prompt);
                let _ = err.flush();
            }
            if state.wanted.is_none() {
                state.wanted = Some(match &want {
                    Want::Line => Want::Line,
                    Want::Edit(edit) => Want::Edit(Arc::new(Edit {
                        prompt: edit.prompt.clone(),
                        completer: edit.completer.clone(),
                        question: state.question,
                    })),
                });
                if !state.started {
                    state.started = true;
                    let shared = self.state.clone();
                    let spawned = std::thread::Builder::new()
                        .name("stdin-lines".into())
                        .spawn(move || read_lines(&shared));
                    if spawned.is_err() {
                        state.ended = true;
                        continue;
                    }
                }
                self.state.1.notify_all();
            }
            state = self
                .state
                .1
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The reader thread: one line from stdin each time one is wanted. It
/// blocks in the read and is never joined; the process exits around it.
fn read_lines(shared: &(Mutex<State>, Condvar)) {
    let (state, changed) = shared;
    loop {
        let want = {
            let mut s = lock(state);
            loop {
                if let Some(want) = &s.wanted {
                    break want.clone();
                }
                s = changed.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let got = match want {
            Want::Line => read_plain(None),
            Want::Edit(edit) => read_edited(shared, &edit),
        };
        let mut s = lock(state);
        s.wanted = None;
        match got {
            Got::Line(line) => s.line = Some(line),
            Got::End => s.ended = true,
            Got::Nothing => {}
        }
        changed.notify_all();
        if s.ended {
            return;
        }
    }
}

/// One line read in the terminal's own mode, after `prompt` if given.
fn read_plain(prompt: Option<&str>) -> Got {
    if let Some(prompt) = prompt {
        let mut err = io::stderr().lock();
        let _ = write!(err, "{prompt}");
        let _ = err.flush();
    }
    let mut line = String::new();
    match io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => Got::Line(line),
        _ => Got::End,
    }
}

/// One line edited in place; given up once `edit`'s question is
/// withdrawn or over. A terminal that cannot be put in raw mode is read
/// plainly.
fn read_edited(shared: &(Mutex<State>, Condvar), edit: &Edit) -> Got {
    let guard = || lock(&shared.0);
    let gone = |s: &State| s.withdrawn || s.question != edit.question;
    // Raw mode begins under the lock: a question withdrawn before never
    // finds the terminal raw afterwards.
    let raw = {
        let s = guard();
        if gone(&s) {
            return Got::Nothing;
        }
        Raw::enter()
    };
    let Ok(raw) = raw else {
        return read_plain(Some(&edit.prompt));
    };
    let abandoned = || gone(&guard());
    match line_editor::edit(raw, &edit.prompt, edit.completer.as_ref(), &abandoned) {
        Ok(Edited::Line(mut line)) => {
            line.push('\n');
            Got::Line(line)
        }
        Ok(Edited::Abandoned) => Got::Nothing,
        Ok(Edited::End) | Err(_) => Got::End,
    }
}
