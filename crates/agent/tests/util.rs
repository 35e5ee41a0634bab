//! A scripted HTTP/1.1 server on 127.0.0.1 speaking raw bytes: each
//! connection gets the next canned response, written in pieces, and every
//! request is recorded for the test to inspect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned response.
#[derive(Clone)]
pub(crate) enum Reply {
    /// Status line and headers, then the body in these pieces (written
    /// separately, with a short pause between), then the connection closes.
    Raw { head: String, pieces: Vec<Vec<u8>> },
    /// Accept the request and never answer.
    Hang,
}

impl Reply {
    /// A `200` event stream, its body split into `pieces`.
    pub(crate) fn sse(pieces: Vec<String>) -> Reply {
        Reply::Raw {
            head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
                .into(),
            pieces: pieces.into_iter().map(String::into_bytes).collect(),
        }
    }

    /// A status with a JSON body and extra header lines.
    pub(crate) fn status(code: u16, headers: &str, body: &str) -> Reply {
        Reply::Raw {
            head: format!(
                "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{headers}",
                body.len()
            ),
            pieces: vec![body.as_bytes().to_vec()],
        }
    }
}

/// A recorded request.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) head: String,
    pub(crate) body: Value,
}

impl Seen {
    /// A header's value (names compared without case).
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

pub(crate) struct Server {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub(crate) async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies.next();
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    let head_end = loop {
                        let n = sock.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break p + 4;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            let (n, v) = l.split_once(':')?;
                            n.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().ok())?
                        })
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        let n = sock.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
                    log.lock().unwrap().push(Seen { head, body });
                    match reply {
                        None => {}
                        Some(Reply::Hang) => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                        }
                        Some(Reply::Raw { head, pieces }) => {
                            let _ = sock.write_all(format!("{head}\r\n").as_bytes()).await;
                            for p in pieces {
                                if sock.write_all(&p).await.is_err() {
                                    return;
                                }
                                let _ = sock.flush().await;
                                tokio::time::sleep(Duration::from_millis(2)).await;
                            }
                            let _ = sock.shutdown().await;
                        }
                    }
                });
            }
        });
        Server { url, seen }
    }

    pub(crate) fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// One SSE event with a name.
pub(crate) fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// One unnamed SSE `data:` event.
pub(crate) fn data(data: &str) -> String {
    format!("data: {data}\n\n")
}
