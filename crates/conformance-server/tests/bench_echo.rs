//! `bench-echo --stdio --ceiling` must send, byte for byte, what the real
//! server sends for the bench's call: otherwise the bench's ceiling would
//! measure a different answer than the one it is the ceiling of.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// The bench's request (the shared bench's `stdio-rtt`), with `id`.
fn request(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// Runs bench-echo with `args`, sends one request per id, returns the lines.
fn answers(args: &[&str], ids: &[&str]) -> Vec<String> {
    #[allow(clippy::disallowed_methods)] // a test spawning the binary under test, to its end
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench-echo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bench-echo");
    let mut stdin = child.stdin.take().expect("stdin");
    for id in ids {
        writeln!(stdin, "{}", request(id)).expect("write a request");
    }
    drop(stdin);
    let lines: Vec<String> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|l| l.expect("read an answer"))
        .collect();
    assert!(child.wait().expect("wait").success());
    lines
}

#[test]
fn the_ceiling_sends_the_servers_answer_byte_for_byte() {
    let ids = ["7", "1000042", r#""call-a""#];
    let served = answers(&["--stdio"], &ids);
    let ceiling = answers(&["--stdio", "--ceiling"], &ids);
    assert_eq!(
        served.len(),
        ids.len(),
        "one answer per request: {served:?}"
    );
    assert!(
        served[0].contains(r#""resultType":"complete""#),
        "{}",
        served[0]
    );
    assert_eq!(ceiling, served);
}

/// The same with the `serverInfo` `_meta` configured off (WIRE-17): the
/// server's answers carry none, and the lean ceiling is their twin.
#[test]
fn without_server_info_the_ceiling_still_matches_the_server() {
    let ids = ["7", r#""call-b""#];
    let served = answers(&["--stdio", "--no-server-info"], &ids);
    let ceiling = answers(&["--stdio", "--ceiling", "--no-server-info"], &ids);
    assert_eq!(served.len(), ids.len(), "{served:?}");
    assert!(!served[0].contains("serverInfo"), "{}", served[0]);
    assert!(
        served[0].contains(r#""resultType":"complete""#),
        "{}",
        served[0]
    );
    assert_eq!(ceiling, served);
}
