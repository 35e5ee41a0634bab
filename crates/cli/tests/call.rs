//! `call`: results, `--json`, exit codes, non-TTY denial and `--yes`.

use serde_json::json;

use crate::util::{Sandbox, empty_port};

#[test]
fn call_json_prints_the_call_tool_result() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "call",
        "mcp__notes__read_note",
        r#"{"id":"welcome"}"#,
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let result = run.json();
    assert_eq!(result["resultType"], "complete");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Welcome to the notes demo"), "{text}");
    // The model's boundary markers are part of the result.
    assert!(
        text.starts_with("<untrusted-text source=\"notes\""),
        "{text}"
    );
    assert_eq!(run.stderr, "", "{run:?}");
}

#[test]
fn call_for_people_prints_the_text_without_markers() {
    let sb = Sandbox::new();
    let run = sb.run(&["call", "mcp__notes__read_note", r#"{"id":"welcome"}"#]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with("Welcome to the notes demo"),
        "{run:?}"
    );
}

#[test]
fn without_a_terminal_a_question_is_denied_with_exit_6() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "call",
        "mcp__notes__search",
        r#"{"query":"printer"}"#,
        "--json",
    ]);
    assert_eq!(run.code, 6, "{run:?}");
    let result = run.json();
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("--yes"), "{text}");
    let error = run.error_line();
    assert_eq!(error["error"]["code"], 6);
    assert_eq!(error["error"]["kind"], "denied");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp__notes__search")
    );
}

#[test]
fn yes_approves_the_question() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "call",
        "mcp__notes__search",
        r#"{"query":"printer"}"#,
        "--yes",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("standup"), "{run:?}");
}

#[test]
fn a_deny_rule_exits_6_even_with_yes() {
    let sb = Sandbox::new();
    let config = sb.config(
        json!({}),
        json!({"permissions": {"deny": ["mcp__notes__read_note"]}}),
    );
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "call",
        "mcp__notes__read_note",
        r#"{"id":"welcome"}"#,
        "--yes",
    ]);
    assert_eq!(run.code, 6, "{run:?}");
    assert!(run.stdout.contains("deny"), "{run:?}");
}

#[test]
fn a_tool_error_exits_5() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "call",
        "mcp__tickets__get_ticket",
        r#"{"id":"T-999"}"#,
        "--json",
    ]);
    assert_eq!(run.code, 5, "{run:?}");
    assert_eq!(run.json()["isError"], true);
    assert!(run.stdout.contains("There is no ticket"), "{run:?}");
    assert_eq!(run.error_line()["error"]["kind"], "tool_error");
}

#[test]
fn an_unknown_tool_and_bad_arguments_exit_1() {
    let sb = Sandbox::new();
    let run = sb.run(&["call", "mcp__notes__nope", "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.json()["isError"], true);
    let run = sb.run(&["call", "mcp__notes__read_note", "[1, 2]", "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.error_line()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("JSON object")
    );
    let run = sb.run(&["call", "mcp__notes__read_note", "{nope"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn arguments_can_come_from_stdin() {
    let sb = Sandbox::new();
    let mut cmd = sb.cmd(&["call", "mcp__notes__read_note", "-"]);
    cmd.stdin(std::process::Stdio::piped());
    cmd.stdout(std::process::Stdio::piped());
    let mut child = crate::util::spawn(&mut cmd);
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"id": "release"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Release checklist")
            || String::from_utf8_lossy(&out.stdout).contains("Tag the release")
    );
}

#[test]
fn a_server_that_is_down_exits_4() {
    let sb = Sandbox::new();
    let port = empty_port();
    let config = sb.config(
        json!({"tickets": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
        json!({}),
    );
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "--json",
        "call",
        "mcp__tickets__search",
        r#"{"query":"x"}"#,
        "--yes",
    ]);
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.error_line()["error"]["kind"], "unreachable");
    // Notes is still fine in the same config.
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "call",
        "mcp__notes__list_notes",
        "--yes",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_timeout_exits_4() {
    let sb = Sandbox::new();
    let config = sb.write(
        "timeout.json",
        &json!({"mcpServers": {"faulty": {
            "command": crate::util::bin(),
            "args": ["demo-server", "faulty"],
            "toolTimeouts": {"hang": 500}
        }}})
        .to_string(),
    );
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "call",
        "mcp__faulty__hang",
        "--yes",
    ]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stdout.contains("did not answer within 500 ms"),
        "{run:?}"
    );
}

/// An HTTP server that answers every request with 401 and a challenge.
fn unauthorized_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                use std::io::{BufRead, BufReader, Read, Write};
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.to_ascii_lowercase();
                    if let Some(v) = l.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut stream = stream;
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            });
        }
    });
    port
}

#[test]
fn a_server_that_needs_authorization_exits_3() {
    let sb = Sandbox::new();
    let port = unauthorized_server();
    let config = sb.config(
        json!({"secure": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
        json!({}),
    );
    let config = config.to_str().unwrap();
    let run = sb.run(&[
        "--config",
        config,
        "--json",
        "call",
        "mcp__secure__search",
        "--yes",
    ]);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.error_line()["error"]["kind"], "auth_required");
    let run = sb.run(&["--config", config, "--json", "servers"]);
    let secure = run.json()[1].clone();
    assert_eq!(secure["alias"], "secure");
    assert_eq!(secure["status"], "down");
    assert_eq!(secure["authRequired"], true, "{run:?}");
    let run = sb.run(&["--config", config, "doctor"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stdout.contains("requires authorization"), "{run:?}");
}

#[test]
fn without_a_terminal_no_progress_bar_is_drawn() {
    let sb = Sandbox::new();
    let run = sb.run(&["call", "mcp__tickets__search", r#"{"query":"printer"}"#]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("T-1"), "{run:?}");
    // The progress notification arrived (the search sends one), but
    // stderr is a pipe: nothing is drawn on it.
    assert_eq!(run.stderr, "", "{run:?}");
}
