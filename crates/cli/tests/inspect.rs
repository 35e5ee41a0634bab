//! `inspect`.

use crate::util::{Sandbox, bin, empty_port};

#[test]
fn inspect_stdio_lists_everything_with_pages_and_era() {
    let sb = Sandbox::new();
    let cmd = format!("'{}' demo-server notes", bin());
    let run = sb.run(&["inspect", "--stdio", &cmd]);
    assert_eq!(run.code, 0, "{run:?}");
    for want in [
        "server:       notes-demo",
        "era:          modern, protocol 2026-07-28",
        "capabilities: tools (listChanged)",
        "tools:        3 in 2 page(s), ttl 60000 ms, public",
        "annotations {\"readOnlyHint\":true}",
        "prompts       not offered",
    ] {
        assert!(run.stdout.contains(want), "{want:?} missing:\n{run:?}");
    }
    let run = sb.run(&["inspect", "--stdio", &cmd, "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    assert_eq!(report["era"], "modern");
    assert_eq!(report["tools"]["pages"], 2);
    assert_eq!(report["tools"]["items"].as_array().unwrap().len(), 3);
    assert_eq!(report["tools"]["cache"]["ttlMs"], 60000);
    assert_eq!(report["prompts"], serde_json::Value::Null);
}

#[test]
fn inspect_fails_with_4_when_nothing_answers() {
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/mcp", empty_port());
    let run = sb.run(&["inspect", "--http", &url, "--json"]);
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.error_line()["error"]["kind"], "unreachable");
    let run = sb.run(&["inspect", "--stdio", "switchboard-no-such-server-binary"]);
    assert_eq!(run.code, 4, "{run:?}");
    let run = sb.run(&["inspect"]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = sb.run(&["inspect", "--http", "localhost/mcp"]);
    assert_eq!(run.code, 1, "{run:?}");
}
