//! The interactive approval prompt and the progress bar, under a real
//! pseudo-terminal.

use std::fs::File;
use std::io::Write;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::pty::{Winsize, openpty};

use crate::util::{Sandbox, collect, spawn, wait_for};

const WAIT: Duration = Duration::from_secs(90);

/// The binary on a terminal: stdin, stdout and stderr are the pty.
pub(crate) struct OnPty {
    pub(crate) child: std::process::Child,
    master: File,
    output: Arc<Mutex<Vec<u8>>>,
}

impl OnPty {
    pub(crate) fn start(sb: &Sandbox, args: &[&str]) -> OnPty {
        let size = Winsize {
            ws_row: 40,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = openpty(Some(&size), None).unwrap();
        // openpty's descriptors are inherited across exec; the clones
        // (F_DUPFD_CLOEXEC) are not. A child holding the master would
        // never see the terminal close.
        let master = pty.master.try_clone().unwrap();
        let slave = pty.slave.try_clone().unwrap();
        drop(pty);
        let mut cmd = sb.cmd(args);
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let child = spawn(&mut cmd);
        // Our copies of the terminal's other end close here, so reading
        // ends when the child does.
        drop(cmd);
        let master = File::from(master);
        let output = collect(master.try_clone().unwrap());
        OnPty {
            child,
            master,
            output,
        }
    }

    pub(crate) fn wait_for(&self, needle: &str) -> String {
        wait_for(&self.output, needle, WAIT)
    }

    pub(crate) fn type_line(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\n").unwrap();
    }

    /// Types `keys` as they are (Tab, control characters, escape
    /// sequences), without a newline.
    pub(crate) fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// Whether the terminal is in its line mode (canonical input, echo),
    /// as a shell expects to find it; `false` in raw mode.
    pub(crate) fn in_line_mode(&self) -> bool {
        use nix::sys::termios::{LocalFlags, tcgetattr};
        // On the master side, the modes are the terminal's (the child's
        // side).
        let modes = tcgetattr(&self.master).unwrap();
        modes
            .local_flags
            .contains(LocalFlags::ICANON | LocalFlags::ECHO)
    }

    /// Waits for the binary to exit (at most as long as [`OnPty::wait_for`]
    /// waits for text), keeping the terminal to look at after.
    pub(crate) fn wait_exit(&mut self) -> std::process::ExitStatus {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < WAIT, "the binary did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM.
    pub(crate) fn terminate(&self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Sends SIGINT, as Ctrl-C on a terminal the binary controlled would.
    pub(crate) fn interrupt(&self) {
        let status = std::process::Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub(crate) fn finish(mut self, last: &str) -> (i32, String) {
        let status = self.child.wait().unwrap();
        let text = self.wait_for(last);
        (status.code().unwrap_or(-1), text)
    }
}

impl Drop for OnPty {
    /// A test that fails half-way must not leave the binary waiting at a
    /// prompt no one will answer.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn the_prompt_shows_the_real_arguments_and_y_allows() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(
        &sb,
        &[
            "call",
            "mcp__tickets__create_ticket",
            r#"{"title":"Door squeaks","priority":"low"}"#,
        ],
    );
    let shown = term.wait_for("[N] deny: ");
    assert!(shown.contains("server:    tickets"), "{shown}");
    assert!(shown.contains("tool:      create_ticket"), "{shown}");
    assert!(shown.contains("\"title\": \"Door squeaks\""), "{shown}");
    assert!(shown.contains("\"priority\": \"low\""), "{shown}");
    term.type_line("y");
    let (code, text) = term.finish("Created T-4 [low] Door squeaks");
    assert_eq!(code, 0, "{text}");
}

// Issue 36: the terminal prompt shows what will run: a bidi override and
// a zero-width space in the arguments are shown escaped, with a sentence
// saying the arguments held such characters.
#[test]
fn the_prompt_shows_hidden_characters_escaped_and_says_so() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(
        &sb,
        &[
            "call",
            "mcp__tickets__create_ticket",
            "{\"title\":\"Refund \u{202e}0001$\u{200b}\",\"priority\":\"low\"}",
        ],
    );
    let shown = term.wait_for("[N] deny: ");
    assert!(
        shown.contains(r#""title": "Refund \u{202e}0001$\u{200b}""#),
        "{shown}"
    );
    assert!(
        !shown.contains('\u{202e}') && !shown.contains('\u{200b}'),
        "{shown}"
    );
    assert!(
        shown.contains("the arguments contain invisible or text-direction characters"),
        "{shown}"
    );
    term.type_line("n");
    let (code, text) = term.finish("declined");
    assert_eq!(code, 6, "{text}");
}

#[test]
fn the_prompt_denies_on_n_with_exit_6() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(
        &sb,
        &["call", "mcp__notes__search", r#"{"query":"printer"}"#],
    );
    let shown = term.wait_for("[N] deny: ");
    // The read-only claim is shown as a reason, not taken as a waiver.
    assert!(shown.contains("says the tool is read-only"), "{shown}");
    term.type_line("n");
    let (code, text) = term.finish("declined");
    assert_eq!(code, 6, "{text}");
}

#[test]
fn a_progress_bar_is_drawn_on_a_terminal() {
    let sb = Sandbox::new();
    let term = OnPty::start(
        &sb,
        &["call", "mcp__tickets__search", r#"{"query":"printer"}"#],
    );
    let (code, text) = term.finish("T-1 [high] Printer on floor 3 jams");
    assert_eq!(code, 0, "{text}");
    // The bar's message and count, drawn on the terminal before the result.
    assert!(text.contains("searching 3 tickets"), "{text}");
    assert!(text.contains("1/2"), "{text}");
}

#[test]
fn the_demo_asks_at_the_prompt_on_a_terminal() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(&sb, &["demo"]);
    let shown = term.wait_for("[N] deny: ");
    assert!(
        shown.contains("\"title\": \"Printer on floor 3 is on fire\""),
        "{shown}"
    );
    term.type_line("y");
    let (code, text) = term.finish("The README walks through each.");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("(answered at the prompt)"), "{text}");
    assert!(text.contains("searching 4 tickets"), "{text}");
}
