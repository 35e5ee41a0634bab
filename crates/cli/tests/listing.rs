//! `tools`, `servers`, `--help` and usage errors.

use serde_json::json;

use crate::util::{Sandbox, empty_port};

#[test]
fn tools_json_has_the_documented_shape_and_both_search_tools() {
    let sb = Sandbox::new();
    let run = sb.run(&["tools", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let tools = run.json();
    let tools = tools.as_array().unwrap();
    // Nine of the two demo servers, and the two skill tools the host adds
    // because the notes demo serves a skill.
    assert_eq!(tools.len(), 11, "{run:?}");
    for t in tools {
        for key in [
            "name",
            "server",
            "originalName",
            "description",
            "inputSchema",
            "annotations",
            "status",
        ] {
            assert!(t.get(key).is_some(), "{key} missing in {t}");
        }
    }
    let find = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    let notes = find("mcp__notes__search");
    let tickets = find("mcp__tickets__search");
    assert_eq!(notes["server"], "notes");
    assert_eq!(tickets["server"], "tickets");
    assert_eq!(notes["originalName"], "search");
    assert_eq!(tickets["originalName"], "search");
    assert_eq!(notes["annotations"]["readOnlyHint"], true);
    assert_eq!(tickets["annotations"], serde_json::Value::Null);
    // Provenance in the description; the read-only hint does not waive the gate.
    assert!(
        notes["description"]
            .as_str()
            .unwrap()
            .starts_with("[from notes]")
    );
    assert_eq!(notes["status"]["gate"], "ask");
    assert_eq!(notes["status"]["server"], "up");
    // The non-ASCII tool is sanitised for the model and mapped back.
    assert_eq!(find("mcp__tickets__r_sum_")["originalName"], "résumé");
}

#[test]
fn tools_for_people_is_a_table_with_outages_on_stderr() {
    let sb = Sandbox::new();
    let port = empty_port();
    let config = sb.config(
        json!({"tickets": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
        json!({}),
    );
    let run = sb.run(&["--config", config.to_str().unwrap(), "tools"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("TOOL"), "{run:?}");
    assert!(run.stdout.contains("mcp__notes__search"), "{run:?}");
    assert!(!run.stdout.contains("<untrusted-text"), "{run:?}");
    assert!(run.stderr.contains("tickets is down"), "{run:?}");
}

#[test]
fn servers_json_reports_up_and_down_with_reasons() {
    let sb = Sandbox::new();
    let run = sb.run(&["servers", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let servers = run.json();
    assert_eq!(servers[0]["alias"], "notes");
    assert_eq!(servers[0]["transport"], "stdio");
    assert_eq!(servers[0]["status"], "up");
    assert_eq!(servers[0]["tools"], 3);
    assert_eq!(servers[0]["reason"], serde_json::Value::Null);
    assert_eq!(servers[1]["alias"], "tickets");
    assert_eq!(servers[1]["transport"], "http");
    assert_eq!(servers[1]["tools"], 6);

    let port = empty_port();
    let config = sb.config(
        json!({
            "tickets": {"url": format!("http://127.0.0.1:{port}/mcp")},
            "ghost": {"command": "switchboard-no-such-server-binary"}
        }),
        json!({}),
    );
    let run = sb.run(&["--config", config.to_str().unwrap(), "--json", "servers"]);
    assert_eq!(run.code, 0, "{run:?}");
    let servers = run.json();
    let by = |a: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["alias"] == a)
            .unwrap()
            .clone()
    };
    assert_eq!(by("notes")["status"], "up");
    assert_eq!(by("tickets")["status"], "down");
    assert!(
        by("tickets")["reason"]
            .as_str()
            .unwrap()
            .contains("connect"),
        "{run:?}"
    );
    assert_eq!(by("ghost")["status"], "down");
    assert!(
        by("ghost")["reason"]
            .as_str()
            .unwrap()
            .contains("switchboard-no-such-server-binary"),
        "{run:?}"
    );
}

#[test]
fn every_command_has_help() {
    let sb = Sandbox::new();
    for args in [
        vec!["--help"],
        vec!["demo", "--help"],
        vec!["tools", "--help"],
        vec!["servers", "--help"],
        vec!["call", "--help"],
        vec!["pins", "--help"],
        vec!["pins", "list", "--help"],
        vec!["pins", "accept", "--help"],
        vec!["audit", "--help"],
        vec!["audit", "verify", "--help"],
        vec!["audit", "stats", "--help"],
        vec!["doctor", "--help"],
        vec!["inspect", "--help"],
        vec!["serve", "--help"],
        vec!["demo-server", "--help"],
        vec!["selftest", "--help"],
    ] {
        let run = sb.run(&args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(run.stdout.contains("Usage:"), "{args:?}: {run:?}");
    }
    let run = sb.run(&["--help"]);
    assert!(run.stdout.contains("Exit codes:"), "{run:?}");
}

#[test]
fn usage_errors_exit_1_with_a_json_line_under_json() {
    let sb = Sandbox::new();
    let run = sb.run(&["no-such-command"]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = sb.run(&["no-such-command", "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.error_line()["error"]["code"], 1);
    assert_eq!(run.error_line()["error"]["kind"], "usage");
    let run = sb.run(&[]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let sb = Sandbox::new();
    let mut cmd = sb.cmd(&["tools", "--json"]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = crate::util::spawn(&mut cmd);
    // Close our end of stdout at once: every write then fails with EPIPE.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}
