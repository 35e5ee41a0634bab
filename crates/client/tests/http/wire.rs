//! The transport's HTTP/1.1 against a server written byte by byte: what a
//! general-purpose server never sends, but a peer on the network may —
//! idle connections closed under the pool, informational answers, bodies
//! cut short or followed by more bytes, chunked bodies split anyhow.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::HttpTransport;
use switchboard_client::transport::{Outgoing, Transport};
use switchboard_wire::types::method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::util::{assert_says, modern_request, within};

/// What the scripted server does with one request on one connection.
enum Act {
    /// Writes these pieces, pausing a moment between them.
    Write(Vec<Vec<u8>>),
    /// Writes these pieces, then closes the connection after `ms`.
    WriteThenClose(Vec<Vec<u8>>, u64),
}

/// A raw HTTP/1.1 server on 127.0.0.1:0. For the `n`th request over all
/// connections, `script(n, id)` says what to write (`id`: the JSON-RPC id).
struct RawServer {
    url: String,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

async fn raw_server(script: impl Fn(usize, &Value) -> Act + Send + Sync + 'static) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let script = Arc::new(script);
    let (conns, reqs) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            conns.fetch_add(1, Ordering::SeqCst);
            let (script, reqs) = (script.clone(), reqs.clone());
            tokio::spawn(async move {
                let mut pending = Vec::new();
                while let Some(id) = read_request(&mut socket, &mut pending).await {
                    let n = reqs.fetch_add(1, Ordering::SeqCst);
                    let (pieces, close_after) = match script(n, &id) {
                        Act::Write(pieces) => (pieces, None),
                        Act::WriteThenClose(pieces, ms) => (pieces, Some(ms)),
                    };
                    for piece in pieces {
                        if socket.write_all(&piece).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    if let Some(ms) = close_after {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        return;
                    }
                }
            });
        }
    });
    RawServer {
        url,
        connections,
        requests,
    }
}

/// Reads one request (head and `content-length` body) and returns its
/// JSON-RPC id; `None` when the connection ends.
async fn read_request(socket: &mut TcpStream, pending: &mut Vec<u8>) -> Option<Value> {
    let head_end = loop {
        if let Some(at) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut buf = [0u8; 4096];
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        pending.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&pending[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while pending.len() < head_end + length {
        let mut buf = [0u8; 4096];
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        pending.extend_from_slice(&buf[..n]);
    }
    let body: Value = serde_json::from_slice(&pending[head_end..head_end + length]).unwrap();
    pending.drain(..head_end + length);
    Some(body["id"].clone())
}

/// A 200 answer with a JSON result for `id`, sized by `content-length`.
fn json_answer(id: &Value, extra_headers: &str) -> Vec<u8> {
    let body =
        json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete"}}).to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{extra_headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn transport(url: &str) -> HttpTransport {
    HttpTransport::builder("test", url)
        .remember_era(false)
        .build()
        .unwrap()
}

async fn list(
    t: &HttpTransport,
    id: i64,
) -> Result<switchboard_wire::Response, switchboard_client::TransportError> {
    within(t.request(Outgoing::new(modern_request(
        id,
        method::TOOLS_LIST,
        json!({}),
    ))))
    .await
}

// A server that closes an idle keep-alive connection (its idle timeout)
// gets the next request on a new connection: the pool notices the close
// before writing, and the request neither fails nor is sent twice.
#[tokio::test]
async fn an_idle_connection_the_server_closed_is_not_used_again() {
    let server = raw_server(|_, id| Act::WriteThenClose(vec![json_answer(id, "")], 20)).await;
    let t = transport(&server.url);
    list(&t, 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = list(&t, 2).await.unwrap();
    assert_eq!(second.id, Some(switchboard_wire::RequestId::Number(2)));
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);
}

// Informational answers (103 Early Hints, 100 Continue) come before the
// real one and are skipped; the connection is then kept as usual.
#[tokio::test]
async fn informational_answers_are_skipped() {
    let server = raw_server(|_, id| {
        Act::Write(vec![
            b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n".to_vec(),
            b"HTTP/1.1 100 Continue\r\n\r\n".to_vec(),
            json_answer(id, ""),
        ])
    })
    .await;
    let t = transport(&server.url);
    for id in 1..=3 {
        list(&t, id).await.unwrap();
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

// A chunked body split at every awkward place (inside the size line, the
// data and the CRLFs) arrives whole, and its connection is reused.
#[tokio::test]
async fn a_chunked_answer_split_anyhow_arrives_whole() {
    let server = raw_server(|_, id| {
        let body = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "pad": "x".repeat(300)}}).to_string();
        let (a, b) = body.split_at(body.len() / 2);
        let wire = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x};name=value\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nx-trailer: 1\r\n\r\n",
            a.len(),
            b.len()
        );
        Act::Write(wire.into_bytes().chunks(7).map(<[u8]>::to_vec).collect())
    })
    .await;
    let t = transport(&server.url);
    for id in 1..=2 {
        let answer = list(&t, id).await.unwrap();
        assert_eq!(answer.outcome.unwrap()["pad"].as_str().unwrap().len(), 300);
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

// A body shorter than its content-length, cut by the close, is an error
// that says so; the next request gets a new connection and succeeds.
#[tokio::test]
async fn a_body_cut_short_is_an_error_and_the_next_request_succeeds() {
    let server = raw_server(|n, id| {
        if n == 0 {
            let mut answer = json_answer(id, "");
            answer.truncate(answer.len() - 10);
            Act::WriteThenClose(vec![answer], 0)
        } else {
            Act::Write(vec![json_answer(id, "")])
        }
    })
    .await;
    let t = transport(&server.url);
    let err = list(&t, 1).await.unwrap_err();
    assert_says(&err, "closed before the end of the body");
    list(&t, 2).await.unwrap();
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

// Bytes after a complete answer (a second, unasked-for response) are never
// read as the answer to the next request: that connection is not reused.
#[tokio::test]
async fn bytes_after_an_answer_keep_its_connection_out_of_the_pool() {
    let server = raw_server(|n, id| {
        if n == 0 {
            let mut answer = json_answer(id, "");
            answer.extend_from_slice(&json_answer(&json!(2), ""));
            Act::Write(vec![answer])
        } else {
            Act::Write(vec![json_answer(id, "")])
        }
    })
    .await;
    let t = transport(&server.url);
    list(&t, 1).await.unwrap();
    let second = list(&t, 2).await.unwrap();
    assert_eq!(second.id, Some(switchboard_wire::RequestId::Number(2)));
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

// A length beside a transfer coding is answered by the coding, and the
// connection, which a smuggler may have desynchronised, is not reused.
#[tokio::test]
async fn a_length_beside_chunked_is_read_as_chunked_and_not_reused() {
    let server = raw_server(|_, id| {
        let body = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete"}}).to_string();
        let wire = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        );
        Act::Write(vec![wire.into_bytes()])
    })
    .await;
    let t = transport(&server.url);
    for id in 1..=2 {
        list(&t, id).await.unwrap();
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

// A response head that is not HTTP is a protocol error naming it.
#[tokio::test]
async fn an_answer_that_is_not_http_is_a_clear_error() {
    let server =
        raw_server(|_, _| Act::WriteThenClose(vec![b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()], 0))
            .await;
    let t = transport(&server.url);
    let err = list(&t, 1).await.unwrap_err();
    assert_says(&err, "not valid HTTP");
}

// A request body far past one write (a megabyte of arguments) goes out
// whole after its head, and the connection carries the next one.
#[tokio::test]
async fn a_large_request_goes_out_whole_and_its_connection_is_kept() {
    let server = raw_server(|_, id| Act::Write(vec![json_answer(id, "")])).await;
    let t = transport(&server.url);
    let big = "a".repeat(1 << 20);
    for id in 1..=2 {
        let request = modern_request(
            id,
            method::TOOLS_CALL,
            json!({"name": "echo", "arguments": {"text": big}}),
        );
        within(t.request(Outgoing::new(request))).await.unwrap();
    }
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}
