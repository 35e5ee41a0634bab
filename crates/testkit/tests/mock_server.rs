//! Smoke test of the mock server itself (and, as a side effect, makes
//! `cargo test --workspace` build the testkit binaries that the client's
//! integration tests run).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn answers_a_modern_request_and_exits_on_eof() {
    #[allow(clippy::disallowed_methods)] // a test spawning the binary under test
    let mut child = Command::new(env!("CARGO_BIN_EXE_mock-server"))
        .arg("--chatty")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#)
        .unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    let lines: Vec<serde_json::Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let response = lines.iter().find(|m| m["id"] == 7).unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "hi");
    assert!(lines.iter().any(|m| m["method"] == "notifications/message"));
    assert!(child.wait().unwrap().success());
}
