//! `switchboard call` on a tool the server runs as a task (the tasks
//! extension): the built-in demo's `tickets.export_tickets`, under a real
//! pseudo-terminal.

use crate::approval::OnPty;
use crate::util::Sandbox;

#[test]
fn the_tasks_status_lines_are_shown_and_its_result_printed() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(&sb, &["call", "mcp__tickets__export_tickets"]);
    term.wait_for("[N] deny: ");
    term.type_line("y");
    // The task's status messages, drawn on the progress line.
    term.wait_for("working: exporting ticket 1 of 3");
    let (code, text) = term.finish("id,priority,open,title");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("exporting ticket 3 of 3"), "{text}");
    assert!(text.contains("T-3,"), "{text}");
}

#[test]
fn ctrl_c_cancels_the_task() {
    let sb = Sandbox::new();
    // -v: the in-process tickets server's log shows the tasks/cancel.
    let mut term = OnPty::start(&sb, &["-v", "call", "mcp__tickets__export_tickets"]);
    term.wait_for("[N] deny: ");
    term.type_line("y");
    term.wait_for("exporting ticket 1 of 3");
    let pid = term.child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, text) = term.finish("interrupted");
    assert_eq!(code, 130, "{text}");
    assert!(
        text.contains("tasks/cancel: the client cancelled the task"),
        "{text}"
    );
    assert!(!text.contains("id,priority,open,title"), "{text}");
}
