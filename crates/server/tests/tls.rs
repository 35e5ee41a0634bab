//! HTTPS: the runner serves MCP over TLS with a certificate and key from
//! PEM, picks up a replaced pair from the next connection on (a bad one
//! leaves the pair in use), closes a connection that brings no handshake,
//! and refuses a key that is not the certificate's; an `https://` replica
//! peer is reached with the peer TLS configuration. The certificates are
//! `switchboard_testutil::tls`'s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;
use switchboard_server::http::{HttpOptions, ServerTls};
use switchboard_testutil::tls;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::util::*;

/// The test pair `name` (`server-a`, `server-b`): certificate and key.
fn pair(name: &str) -> (String, String) {
    (
        tls::pem(&format!("{name}.pem")),
        tls::pem(&format!("{name}.key")),
    )
}

/// A TLS client trusting only the test CA.
fn connector() -> tokio_rustls::TlsConnector {
    tokio_rustls::TlsConnector::from(tls::client_trusting_test_ca())
}

/// Posts `server/discover` over a new TLS connection: the certificate the
/// server presented, and the response.
async fn discover_over_tls(addr: SocketAddr) -> (CertificateDer<'static>, String) {
    let params = json!({"_meta": meta()});
    let body = body(json!(1), "server/discover", params.clone());
    post_over_tls(addr, &standard_headers("server/discover", &params), &body).await
}

/// Posts `body` with `headers` to `/mcp` over a new TLS connection: the
/// certificate the server presented, and the whole response.
async fn post_over_tls(
    addr: SocketAddr,
    headers: &[(String, String)],
    body: &[u8],
) -> (CertificateDer<'static>, String) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector().connect(name, tcp).await.unwrap();
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    tls.write_all(body).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(10), tls.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    (presented.into_owned(), response)
}

#[tokio::test]
async fn https_is_served_and_a_replaced_certificate_is_used_from_the_next_connection() {
    let (cert_a, key_a) = pair("server-a");
    let served = ServerTls::from_pem(cert_a.as_bytes(), key_a.as_bytes()).unwrap();
    let options = HttpOptions::new()
        .tls(served.clone())
        .handshake_timeout(Duration::from_millis(300));
    let (server, _) = server();
    let http = start(server, options).await;

    let (presented, response) = discover_over_tls(http.addr).await;
    assert_eq!(presented, tls::der("server-a.pem"));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"result\""), "{response}");

    // A renewed certificate: new connections get it.
    served
        .replace_from_pem_files(&tls::fixture("server-b.pem"), &tls::fixture("server-b.key"))
        .unwrap();
    let (presented, response) = discover_over_tls(http.addr).await;
    assert_eq!(presented, tls::der("server-b.pem"));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // A key that is not the certificate's, or a file that is not PEM, is
    // refused, naming the files, and the pair in use stays.
    let err = served
        .replace_from_pem_files(&tls::fixture("server-a.pem"), &tls::fixture("server-b.key"))
        .unwrap_err();
    assert!(
        err.to_string().contains("server-a.pem")
            && err.to_string().contains("cannot be served together"),
        "{err}"
    );
    let err = served
        .replace_from_pem_files(&tls::fixture("ca.pem"), &tls::fixture("missing.key"))
        .unwrap_err();
    assert!(err.to_string().contains("missing.key"), "{err}");
    let (presented, _) = discover_over_tls(http.addr).await;
    assert_eq!(presented, tls::der("server-b.pem"));

    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(http.addr).await.unwrap();
    plain
        .write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut answer)).await;
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");

    // A connection that never starts the handshake is closed.
    let mut silent = TcpStream::connect(http.addr).await.unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut byte))
        .await
        .expect("the silent connection was not closed");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

#[test]
fn pem_that_cannot_be_served_is_refused_with_the_reason() {
    let ((cert_a, key_a), (cert_b, _)) = (pair("server-a"), pair("server-b"));
    let err = ServerTls::from_pem(b"not pem", key_a.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("holds no certificate"), "{err}");
    let broken_key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    let err = ServerTls::from_pem(cert_a.as_bytes(), broken_key).unwrap_err();
    assert!(err.to_string().contains("the key"), "{err}");
    let err = ServerTls::from_pem(cert_b.as_bytes(), key_a.as_bytes()).unwrap_err();
    assert!(
        err.to_string().contains("cannot be served together"),
        "{err}"
    );
}

// A replica serving HTTPS is a peer other replicas reach at its https://
// URL when they have a TLS configuration for peers: a legacy session it
// opened is served through another replica. Without the configuration the
// request gets an error naming the peer.
#[tokio::test]
async fn an_https_replica_peer_is_reached_with_the_peer_tls_configuration() {
    let b = builder(Arc::default()).task_origin("b").build().unwrap();
    let (cert_a, key_a) = pair("server-a");
    let served = ServerTls::from_pem(cert_a.as_bytes(), key_a.as_bytes()).unwrap();
    let b = start(b, HttpOptions::new().tls(served)).await;
    let url = format!("https://127.0.0.1:{}/mcp", b.addr.port());
    let replica_a = |peer_tls: bool| {
        let server = builder(Arc::default())
            .task_origin("a")
            .replica_peers([("b", url.as_str())])
            .unwrap()
            .build()
            .unwrap();
        let options = if peer_tls {
            HttpOptions::new().peer_tls(tls::client_trusting_test_ca())
        } else {
            HttpOptions::new()
        };
        start(server, options)
    };
    let a = replica_a(true).await;

    // A legacy session opened on b, over TLS.
    let headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}});
    let (_, response) =
        post_over_tls(b.addr, &headers, &body(json!(0), "initialize", params)).await;
    let session = response
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("{response}"));
    assert!(session.starts_with("b."), "{session}");

    // Its ping through a reaches b over https.
    let mut session_headers = headers.clone();
    session_headers.push(("mcp-session-id".to_owned(), session.clone()));
    session_headers.push(("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()));
    let r = a
        .post(&session_headers, body(json!(1), "ping", json!({})))
        .await;
    assert_eq!(r.result(), json!({}), "{r:?}");

    // A replica without a TLS configuration for peers says why it cannot.
    let plain = replica_a(false).await;
    let r = plain
        .post(&session_headers, body(json!(2), "ping", json!({})))
        .await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert!(text.contains("no TLS configuration for its peers"), "{r:?}");
}
