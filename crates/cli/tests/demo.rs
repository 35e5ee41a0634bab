//! `demo`, `demo-server` and `selftest`.

use crate::util::{Sandbox, spawn_serving};

#[test]
fn the_demo_shows_everything_and_does_not_wait_without_a_terminal() {
    let sb = Sandbox::new();
    let run = sb.run(&["demo"]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    for want in [
        // Two servers mounted, a third reported down.
        "notes    stdio      up      3",
        "tickets  http       up      6",
        "archive  http       down",
        // The colliding search tools side by side.
        "mcp__notes__search    notes    search",
        "mcp__tickets__search  tickets  search",
        // The approval question with the real arguments, denied here.
        "\"title\": \"Printer on floor 3 is on fire\"",
        "no terminal to ask on",
        // Progress.
        "progress 1/2: searching 3 tickets",
        // The long note over the budget: head and tail, the rest kept.
        "5333 characters of the note",
        "[switchboard: 1448 characters not shown here (characters 5333 to 6781)]",
        "2667 characters of the note",
        "[switchboard: this result has 9448 characters",
        "Characters 5333 to 5533 of the 9448 of result",
        // The outage in plain words, and isolation.
        "archive is down (",
        "Meanwhile notes works",
        "isError: Server tickets could not complete the call of get_ticket",
        "and notes still answers",
    ] {
        assert!(out.contains(want), "{want:?} missing:\n{run:?}");
    }
}

#[test]
fn the_demo_with_yes_approves_the_ticket() {
    let sb = Sandbox::new();
    let run = sb.run(&["demo", "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("Created T-4 [high] Printer on floor 3 is on fire (approved by --yes)"),
        "{run:?}"
    );
}

#[test]
fn selftest_passes_all_fourteen_checks() {
    let sb = Sandbox::new();
    let run = sb.run(&["selftest"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 15, "{run:?}");
    for (i, line) in lines[..14].iter().enumerate() {
        assert!(line.starts_with(&format!("PASS {:>2} ", i + 1)), "{line}");
    }
    assert_eq!(lines[14], "14 passed, 0 failed");
}

#[test]
fn the_tickets_demo_server_runs_on_its_own() {
    let sb = Sandbox::new();
    let (mut child, url) = spawn_serving(&mut sb.cmd(&["demo-server", "tickets", "--port", "0"]));
    let run = sb.run(&["inspect", "--http", &url, "--json"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["tools"]["items"].as_array().unwrap().len(), 6);
    assert_eq!(run.json()["serverInfo"]["name"], "tickets-demo");
}
