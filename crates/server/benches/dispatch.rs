//! temporary
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{Cursor, Write};
use switchboard_server::Server;
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}
struct Null(usize);
impl Write for Null {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = Server::builder("e", "1")
        .tool("echo", "e", |a: EchoArgs| async move { a.text })
        .build()
        .unwrap();
    let mut input = Vec::new();
    for i in 0..n {
        input.extend_from_slice(format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}\n").as_bytes());
    }
    let t = std::time::Instant::now();
    rt.block_on(switchboard_server::stdio::serve_io(
        server,
        Cursor::new(input),
        Null(0),
        Default::default(),
    ))
    .unwrap();
    let el = t.elapsed();
    println!("{:.3} us/req", el.as_secs_f64() * 1e6 / n as f64);
}
