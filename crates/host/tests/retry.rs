//! Issue 39, item 5: a call whose connection broke before its answer is
//! sent once more, with a fresh request id and the same idempotency key,
//! only for a tool the config's `idempotent` names; the server framework
//! answers the duplicate from its record, so the tool runs once.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};
use switchboard_host::CallOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::util::*;

/// A TCP proxy in front of an HTTP server that, when armed, lets the next
/// `tools/call` request through and then cuts the connection as soon as
/// the server starts answering it: the server ran the call, the client
/// never hears the answer.
struct Cutter {
    url: String,
    armed: Arc<AtomicBool>,
    /// Every byte clients sent, in order of arrival.
    sent: Arc<Mutex<Vec<u8>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Cutter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Cutter {
    async fn start(upstream: std::net::SocketAddr) -> Cutter {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let armed = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (a, s) = (armed.clone(), sent.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                tokio::spawn(pipe(client, server, a.clone(), s.clone()));
            }
        });
        Cutter {
            url,
            armed,
            sent,
            task,
        }
    }

    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// The client's bytes as text.
    fn sent(&self) -> String {
        String::from_utf8_lossy(&self.sent.lock().unwrap()).into_owned()
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    armed: Arc<AtomicBool>,
    sent: Arc<Mutex<Vec<u8>>>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set when this connection carried the armed call: its answer is cut.
    let doomed = Arc::new(AtomicBool::new(false));
    let d = doomed.clone();
    let up = tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            sent.lock().unwrap().extend_from_slice(chunk);
            let is_call = chunk.windows(10).any(|w| w == b"tools/call");
            if is_call && armed.swap(false, Ordering::SeqCst) {
                d.store(true, Ordering::SeqCst);
            }
            if server_write.write_all(chunk).await.is_err() {
                return;
            }
        }
    });
    let mut buf = vec![0u8; 65536];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if doomed.load(Ordering::SeqCst) {
            // The server has answered (so it ran the call): drop both
            // sides without passing a byte on.
            break;
        }
        if client_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    up.abort();
}

/// A server-framework server over HTTP with `get_item` and `put_item`,
/// counting the runs of each.
async fn counting_server() -> (std::net::SocketAddr, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let gets = Arc::new(AtomicUsize::new(0));
    let puts = Arc::new(AtomicUsize::new(0));
    let (g, p) = (gets.clone(), puts.clone());
    let server = switchboard_server::Server::builder("items", "1.0.0")
        .tool("get_item", "Reads an item.", move || {
            let g = g.clone();
            async move {
                g.fetch_add(1, Ordering::SeqCst);
                "the item"
            }
        })
        .tool("put_item", "Stores an item.", move || {
            let p = p.clone();
            async move {
                p.fetch_add(1, Ordering::SeqCst);
                "stored"
            }
        })
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(switchboard_server::http::serve(
        server,
        listener,
        switchboard_server::http::HttpOptions::default(),
        std::future::pending::<()>(),
    ));
    (addr, gets, puts)
}

/// Each `tools/call` body's id and idempotency key, in order.
fn calls(sent: &str) -> Vec<(i64, Option<String>)> {
    sent.split("{\"jsonrpc\"")
        .filter(|body| body.contains("\"method\":\"tools/call\""))
        .filter_map(|body| {
            let end = body.rfind('}')?;
            let msg: Value =
                serde_json::from_str(&format!("{{\"jsonrpc\"{}", &body[..=end])).ok()?;
            let key = msg["params"]["_meta"]["dev.switchboard/idempotencyKey"]
                .as_str()
                .map(str::to_owned);
            Some((msg["id"].as_i64()?, key))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_call_is_retried_once_only_for_an_idempotent_tool() {
    let (addr, gets, puts) = counting_server().await;
    let cutter = Cutter::start(addr).await;
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"items": {"type": "http", "url": cutter.url}},
            "permissions": {"allow": ["mcp__items"]},
            "idempotent": ["mcp__items__get_*"],
            "audit": dir.path_str("audit.jsonl"),
        }))
        .await;

    // Idempotent: the answer is lost, the call sent again, and the server
    // answers the duplicate from its record.
    cutter.arm();
    let r = host
        .call("mcp__items__get_item", None, CallOptions::default())
        .await;
    assert!(!r.is_error(), "{}", text(&r));
    assert!(text(&r).contains("the item"), "{}", text(&r));
    assert_eq!(gets.load(Ordering::SeqCst), 1, "the tool ran twice");
    let sent = calls(&cutter.sent());
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_ne!(sent[0].0, sent[1].0, "a retry is a new request");
    assert!(sent[0].1.is_some());
    assert_eq!(sent[0].1, sent[1].1, "the same idempotency key");

    // Not idempotent: the break is reported, nothing is sent again.
    cutter.arm();
    let r = host
        .call("mcp__items__put_item", None, CallOptions::default())
        .await;
    assert!(r.is_error(), "{}", text(&r));
    assert_eq!(puts.load(Ordering::SeqCst), 1);
    let sent = calls(&cutter.sent());
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2].1, None, "no key for a tool that is not idempotent");

    // The audit line says which call was retried.
    let lines: Vec<Value> = std::fs::read_to_string(dir.path("audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["retried"], true, "{}", lines[0]);
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1].get("retried"), None, "{}", lines[1]);
    host.shutdown().await;
}
