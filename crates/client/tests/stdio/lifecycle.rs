//! Shutdown and the no-orphan guarantee (DESIGN item 12, STDIO-11).

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use switchboard_client::{Client, StdioTransport, Transport};

use super::util::{self, alive, gone, mock};

async fn pids(client: &Client) -> (u32, u32) {
    let r = client.call_tool("pids", None).await.unwrap();
    let s = r.structured_content.unwrap();
    (
        s["pid"].as_u64().unwrap() as u32,
        s["grandchild"].as_u64().unwrap_or(0) as u32,
    )
}

// STDIO-11 step 1: closing stdin is enough for a well-behaved server;
// pending requests fail with "closed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_server_and_fails_pending_requests() {
    let (client, transport) = util::connect(&[]).await;
    let c = client.clone();
    let pending = tokio::spawn(async move { c.call_tool("never", None).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.close().await;
    let err = pending.await.unwrap().unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert_eq!(transport.exit_status().and_then(|s| s.code()), Some(0));
    let err = client.call_tool("echo", None).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
}

// STDIO-11: a server that ignores EOF gets SIGTERM; one that ignores SIGTERM
// too gets SIGKILL.
#[tokio::test]
async fn shutdown_escalates_to_sigterm_then_sigkill() {
    for (flags, signal) in [
        (&["--ignore-eof"][..], libc::SIGTERM),
        (&["--ignore-eof", "--ignore-sigterm"][..], libc::SIGKILL),
    ] {
        let mut config = mock(flags);
        config.shutdown_grace = Duration::from_millis(300);
        let transport = StdioTransport::spawn(config).await.unwrap();
        let pid = transport.pid().unwrap();
        let client = Client::builder("mock", transport.clone())
            .connect()
            .await
            .unwrap();
        client.call_tool("echo", None).await.unwrap();
        transport.close().await;
        let status = transport.exit_status().unwrap();
        assert_eq!(status.signal(), Some(signal), "{flags:?}: {status}");
        assert!(!alive(pid));
    }
}

// DESIGN item 12: after the client is dropped, neither the server nor the
// process it started survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_orphans_after_the_client_is_dropped() {
    let (client, transport) = util::connect(&["--grandchild"]).await;
    let (server, grandchild) = pids(&client).await;
    assert!(grandchild > 0 && alive(server) && alive(grandchild));
    drop(client);
    drop(transport);
    assert!(
        gone(server, Duration::from_secs(15)).await,
        "server {server} survived"
    );
    assert!(
        gone(grandchild, Duration::from_secs(15)).await,
        "grandchild {grandchild} survived"
    );
}

// DESIGN item 12: even when the client's process is killed with SIGKILL
// (no destructor runs), the server and its grandchild die: the parent-death
// signal takes the server, the watchdog takes the rest of its group.
#[tokio::test]
async fn no_orphans_after_the_client_process_is_sigkilled() {
    // A test spawning the helper process under test.
    #[allow(clippy::disallowed_methods)]
    let mut holder = Command::new(util::bin("client-holder"))
        .arg(util::bin("mock-server"))
        .args(["--grandchild", "--ignore-eof"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let parts: Vec<u32> = line
        .split_whitespace()
        .skip(1)
        .map(|p| p.parse().unwrap())
        .collect();
    let (server, grandchild) = (parts[0], parts[1]);
    assert!(alive(server) && alive(grandchild), "{line}");
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    assert!(
        gone(server, Duration::from_secs(15)).await,
        "server {server} survived"
    );
    assert!(
        gone(grandchild, Duration::from_secs(15)).await,
        "grandchild {grandchild} survived"
    );
}
