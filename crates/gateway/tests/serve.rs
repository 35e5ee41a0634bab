//! `serve`: a gateway from start to end. It mounts the host, says when it
//! is ready, serves until the shutdown future completes (draining first
//! when the caller starts the drain switch), then stops; files it cannot
//! load stop it before anything is mounted.

use std::collections::BTreeMap;

use serde_json::json;
use switchboard_gateway::{
    Drain, GatewayError, GatewayOptions, Listener, ServeConfig, TlsFiles, serve,
};
use switchboard_host::{Config, ConfigLoader};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use crate::harness::{Dir, args, client, stdio};

/// The config in `dir`: the mock server, its tools allowed, an audit log.
fn config(dir: &Dir) -> Config {
    let path = dir.path(".mcp.json");
    let config = json!({
        "mcpServers": {"m": stdio(&[])},
        "permissions": {"allow": ["mcp__m"]},
        "audit": "audit.jsonl",
    });
    std::fs::write(&path, config.to_string()).unwrap();
    ConfigLoader::new()
        .explicit(path)
        .vars(BTreeMap::new())
        .load()
        .unwrap()
}

/// The status of `GET /readyz` at `authority`.
async fn readyz(authority: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_a_gateway_from_start_to_its_shutdown() {
    let dir = Dir::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    let drain = Drain::default();
    let mut config = ServeConfig::new(config(&dir), GatewayOptions::default().drain(drain.clone()));
    let (ready, tools) = oneshot::channel();
    config.on_ready = Some(Box::new(move |gateway| {
        let _ = ready.send(gateway.tool_count());
    }));
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(serve(Listener::Http(listener), config, async {
        let _ = stopped.await;
    }));
    assert!(tools.await.unwrap() > 0);

    let client = client(&format!("http://{authority}/mcp"), None).await;
    let echo = || client.call_tool("mcp__m__echo", args(json!({"text": "hi"})));
    assert!(!echo().await.unwrap().is_error());
    assert_eq!(readyz(&authority).await, 200);
    // Draining: not ready, still serving.
    drain.start();
    assert_eq!(readyz(&authority).await, 503);
    assert!(!echo().await.unwrap().is_error());

    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
    // Both calls were audited, and the gateway no longer answers.
    assert_eq!(dir.audit().len(), 2);
    assert!(tokio::net::TcpStream::connect(&authority).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_files_that_do_not_load_stop_serve_before_the_mount() {
    let dir = Dir::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = ServeConfig::new(config(&dir), GatewayOptions::default());
    config.tls_files = Some(TlsFiles::new(
        dir.path("no-cert.pem"),
        dir.path("no-key.pem"),
    ));
    let served = serve(Listener::Http(listener), config, std::future::pending()).await;
    assert!(matches!(served, Err(GatewayError::Tls(_))), "{served:?}");
    // Nothing was mounted: no call was audited, no server started.
    assert!(dir.audit().is_empty());
}

// Issue 36: a config other users may write (they could add a server
// command, or allow rules) stops serve before anything is mounted.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_others_may_write_stops_serve_before_the_mount() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = Dir::new();
    let config = config(&dir);
    let path = dir.path(".mcp.json");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ServeConfig::new(config, GatewayOptions::default());
    let served = serve(Listener::Http(listener), config, std::future::pending()).await;
    let Err(GatewayError::FileAccess(e)) = served else {
        panic!("{served:?}");
    };
    assert_eq!(e.path(), path);
    assert!(
        e.to_string().contains("its group may write it (mode 0664)"),
        "{e}"
    );
    assert!(dir.audit().is_empty());
}
