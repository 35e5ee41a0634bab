//! Hostile clients of the stdio runner, one row each, all in one input
//! stream: each bad message gets a clear error and the requests around it
//! are answered (nothing else harmed). The limits are in `docs/LIMITS.md`.

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::stdio::{StdioOptions, serve_io};
use switchboard_server::{Context, Server};

use crate::util::meta;

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<u8>>>);

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn call(id: Value, tool: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{}}}}}"#,
        meta()
    ) + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_a_clear_error_and_harm_nothing_else() {
    let server = Server::builder("hostile", "1")
        .tool("echo", "Answers at once", |_ctx: Context| async { "echo" })
        .tool("slow", "Answers after a moment", |_ctx: Context| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            "slow"
        })
        .build()
        .unwrap();
    let depth = 100_000;
    let deep = format!("{{\"x\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
    let mut input = String::new();
    // Ids reused while pending: the second request under id 1 is refused.
    input += &call(json!(1), "slow", "{}");
    input += &call(json!(1), "echo", "{}");
    // JSON nested 100,000 deep.
    input += &call(json!(2), "echo", &deep);
    // A line over the 16 MiB bound (a smaller bound here: 1 MiB).
    input += &"x".repeat(2 * 1024 * 1024);
    input += "\n";
    // A response to a request the server never sent.
    input += r#"{"jsonrpc":"2.0","id":77,"result":{}}"#;
    input += "\n";
    // Both result and error.
    input += r#"{"jsonrpc":"2.0","id":78,"result":{},"error":{"code":1,"message":"m"}}"#;
    input += "\n";
    // Still served.
    input += &call(json!(3), "echo", "{}");
    let out = Recorder::default();
    serve_io(
        server,
        Cursor::new(input.into_bytes()),
        out.clone(),
        StdioOptions::new().max_line(1024 * 1024),
    )
    .await
    .unwrap();
    let bytes = out.0.lock().unwrap().clone();
    let lines: Vec<Value> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let with_id = |id: Value| -> Vec<&Value> { lines.iter().filter(|m| m["id"] == id).collect() };

    let ones = with_id(json!(1));
    assert_eq!(ones.len(), 2, "{lines:?}");
    let refused = ones.iter().find(|m| m.get("error").is_some()).unwrap();
    assert_eq!(refused["error"]["code"], -32600);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in flight")
    );
    let answered = ones.iter().find(|m| m.get("result").is_some()).unwrap();
    assert_eq!(answered["result"]["content"][0]["text"], "slow");

    let nulls = with_id(Value::Null);
    let codes: Vec<i64> = nulls
        .iter()
        .map(|m| m["error"]["code"].as_i64().unwrap())
        .collect();
    assert!(codes.contains(&-32700), "the deep request: {codes:?}");
    assert!(codes.contains(&-32600), "the long line: {codes:?}");
    assert!(with_id(json!(2)).is_empty() || with_id(json!(2))[0]["error"]["code"] == -32700);
    assert!(
        with_id(json!(77)).is_empty(),
        "an unsolicited response is ignored"
    );
    assert_eq!(with_id(json!(3))[0]["result"]["content"][0]["text"], "echo");
}
