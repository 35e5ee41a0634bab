//! `serve --http` as a service: connection limits, HTTPS with a
//! certificate renewed while serving, the refusal to serve a non-loopback
//! address without authentication, `/readyz` and draining.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, HttpTransport};

use switchboard_testutil::tls;

use crate::gateway_util::*;
use crate::util::{Sandbox, wait_for};

// Issue 36: the HTTP runner's connection limits are serve flags. With
// --header-timeout 0.5 a socket that sends nothing is closed well within
// the default's 10 s; with --max-connections-per-peer 1, while this
// address's one connection has a request in flight (a listen stream), a
// second is closed unanswered.
#[tokio::test(flavor = "multi_thread")]
async fn connection_limits_are_serve_flags() {
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let gw = serve(
        &sb,
        &cfg,
        &["--header-timeout", "0.5", "--max-connections-per-peer", "1"],
        &[],
    )
    .await;
    let authority = gw.addr.clone();
    let closed_within = |limit: Duration, send: &'static [u8]| {
        let authority = authority.clone();
        move || {
            let mut stream = TcpStream::connect(&authority).unwrap();
            stream.set_read_timeout(Some(limit)).unwrap();
            stream.write_all(send).unwrap();
            // Closed: the end of the stream, or a reset when the request
            // sent was never read. A read timeout is not.
            let mut got = Vec::new();
            match stream.read_to_end(&mut got) {
                Ok(_) => Some(got),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Some(got),
                Err(_) => None,
            }
        }
    };
    let silent = tokio::task::spawn_blocking(closed_within(Duration::from_secs(5), b""))
        .await
        .unwrap();
    assert_eq!(silent.as_deref(), Some(&b""[..]), "not closed within 5 s");

    let listener = client_with(&gw, None).await;
    let _stream = listener
        .listen(switchboard_wire::types::SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    let second = tokio::task::spawn_blocking(closed_within(
        Duration::from_secs(5),
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ))
    .await
    .unwrap();
    assert_eq!(second.as_deref(), Some(&b""[..]), "answered: {second:?}");

    let run = serve_exit(&sb, &cfg, &["--idle-timeout", "0"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("above 0"), "{run:?}");
}

/// The certificate the gateway presents on a new TLS connection, and the
/// body of a `GET path` on it.
async fn tls_get(gw: &Running, path: &str) -> (Vec<u8>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tcp = tokio::net::TcpStream::connect(&gw.addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(tls::client_trusting_test_ca())
        .connect(name, tcp)
        .await
        .unwrap();
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    (presented, response)
}

// HTTPS: --tls-cert and --tls-key serve the gateway over TLS (a client
// trusting the CA lists and calls tools; plain HTTP gets no answer); a
// renewed certificate written over the files is used from the next
// connection on, and a broken one is reported while the one in use stays.
#[tokio::test(flavor = "multi_thread")]
async fn https_with_a_certificate_renewed_while_serving() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let cert = sb.write("tls.pem", &tls::pem("server-a.pem"));
    let key = sb.write("tls.key", &tls::pem("server-a.key"));
    let tokens = format!("alice {ALICE_TOKEN}\n");
    let gw = serve_with_tokens(
        &sb,
        &cfg,
        &tokens,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--metrics",
        ],
    )
    .await;
    assert!(gw.url.starts_with("https://127.0.0.1:"), "{}", gw.url);
    let transport = HttpTransport::builder("gateway", &gw.url)
        .header("Authorization", format!("Bearer {ALICE_TOKEN}"))
        .tls_config(tls::client_trusting_test_ca())
        .build()
        .unwrap();
    let alice = Client::builder("gateway", transport)
        .timeout(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    assert_eq!(tool_names(&alice).await.len(), NOTES_TOOLS);
    lists_notes(&alice).await;
    let (presented, health) = tls_get(&gw, "/healthz").await;
    assert_eq!(presented, tls::der("server-a.pem").to_vec());
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    // Plain HTTP on the port: no HTTP answer.
    let mut plain = TcpStream::connect(&gw.addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");

    // The certificate is renewed (key first, then the chain).
    sb.write("tls.key", &tls::pem("server-b.key"));
    sb.write("tls.pem", &tls::pem("server-b.pem"));
    let start = std::time::Instant::now();
    while tls_get(&gw, "/healthz").await.0 != tls::der("server-b.pem").to_vec() {
        assert!(start.elapsed() < Duration::from_secs(30), "{}", gw.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    lists_notes(&alice).await;

    // A broken chain: reported, and the renewed one stays.
    sb.write("tls.pem", "-----BEGIN CERTIFICATE-----\nbroken\n");
    until_logged(&gw, "the TLS certificate was not reloaded").await;
    assert_eq!(
        tls_get(&gw, "/healthz").await.0,
        tls::der("server-b.pem").to_vec()
    );
    lists_notes(&alice).await;
    // A pair that does not go together, or TLS without --http, stops the
    // gateway before it serves, naming the files.
    let mismatched = serve_exit(
        &sb,
        &cfg,
        &[
            "--tls-cert",
            &tls::fixture("server-a.pem").display().to_string(),
            "--tls-key",
            &tls::fixture("server-b.key").display().to_string(),
        ],
    );
    assert_eq!(mismatched.code, 1, "{mismatched:?}");
    assert!(
        mismatched.stderr.contains("server-a.pem")
            && mismatched.stderr.contains("cannot be served together"),
        "{mismatched:?}"
    );
    let stdio = sb.run(&[
        "--config",
        &cfg,
        "serve",
        "--tls-cert",
        "a.pem",
        "--tls-key",
        "a.key",
    ]);
    assert_eq!(stdio.code, 1, "{stdio:?}");
    assert!(stdio.stderr.contains("need --http"), "{stdio:?}");
    let (_, metrics) = tls_get(&gw, "/metrics").await;
    for result in ["applied", "rejected"] {
        assert!(
            metrics.contains(&format!(
                "switchboard_reloads_total{{file=\"tls\",result=\"{result}\"}}"
            )),
            "{metrics}"
        );
    }
}

// A non-loopback address without --auth refuses to start (exit 1, naming
// the fix); --insecure-no-auth starts it with a loud warning.
#[tokio::test(flavor = "multi_thread")]
async fn open_non_loopback_needs_insecure_no_auth() {
    let sb = Sandbox::new();
    let cfg = token_config(&sb);
    let run = sb.run(&["--config", &cfg, "serve", "--http", "0.0.0.0:0"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("without authentication") && run.stderr.contains("--auth"),
        "{run:?}"
    );
    let gw = Running::start(&sb, &cfg, "0.0.0.0:0", &["--insecure-no-auth"], &[]).await;
    let text = gw.stderr();
    drop(gw);
    assert!(
        text.contains("WARNING") && text.contains("--insecure-no-auth"),
        "{text}"
    );
}

// /readyz: 503 naming a required server that is down; a server marked
// "required": false does not count.
#[tokio::test(flavor = "multi_thread")]
async fn readyz_names_required_servers_that_are_down() {
    let sb = Sandbox::new();
    let missing = sb.path().join("no-such-server");
    let missing = missing.to_str().unwrap();
    let cfg = sb.config(
        json!({
            "broken": {"command": missing},
            "optional": {"command": missing, "required": false}
        }),
        json!({}),
    );
    let gw = serve(&sb, cfg.to_str().unwrap(), &[], &[]).await;
    let (status, headers, body) = raw(&gw.addr, "GET", "/readyz", &[], "");
    assert_eq!(status, 503, "{body}");
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let doc: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(doc["ready"], false);
    let names: Vec<&str> = doc["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["server"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["broken"], "{doc}");
    let (status, _, _) = raw(&gw.addr, "GET", "/healthz", &[], "");
    assert_eq!(status, 200);
}

// --drain: at SIGTERM /readyz turns 503 ("draining") so a balancer takes
// the replica out of rotation, while calls are still served; a second
// SIGTERM stops it at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_draining_gateway_is_not_ready_but_still_serves() {
    let sb = Sandbox::new();
    let cfg = open_config(&sb);
    let mut gw = serve(&sb, &cfg, &["--drain", "600"], &[]).await;
    let (status, _, body) = raw(&gw.addr, "GET", "/readyz", &[], "");
    assert_eq!(status, 200, "{body}");
    let term = || {
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &gw.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    term();
    let stderr = Arc::clone(&gw.stderr);
    tokio::task::spawn_blocking(move || wait_for(&stderr, "draining", Duration::from_secs(30)))
        .await
        .unwrap();
    let (status, _, body) = raw(&gw.addr, "GET", "/readyz", &[], "");
    assert_eq!(status, 503, "{body}");
    let doc: Value = serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(doc, json!({"ready": false, "draining": true}));
    // Still serving: a client connects and calls a tool.
    lists_notes(&client_with(&gw, None).await).await;
    term();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = gw.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a second SIGTERM did not stop the draining gateway: {}",
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}: {}", gw.stderr());
}
