//! Supervision: stderr tail and junk-line count per server; a server
//! started through a wrapper is stopped with its whole process group.

use serde_json::json;
use switchboard_host::{AssumeYes, CallOptions};

use crate::util::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_tail_and_junk_lines_are_kept() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({"mcpServers": {"noisy": stdio(&["--junk", "--name", "noisy"])}}))
        .await;
    host.call("mcp__noisy__echo", None, CallOptions::approver(AssumeYes))
        .await;
    let s = host.servers().remove(0);
    assert!(s.junk_lines >= 4, "{s:?}");
    assert!(
        s.stderr_tail
            .iter()
            .any(|l| l.contains("mock-server noisy ready")),
        "{s:?}"
    );
    host.shutdown().await;
}

/// `sh -c 'MOCK --grandchild'` (no exec: sh stays the child, the mock is a
/// grandchild and its sleeper a great-grandchild) and
/// `sh -c 'sleep … & exec MOCK'`: after shutdown every process is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrapper_started_servers_die_with_their_group() {
    let dir = Dir::new();
    let pidfile = dir.path_str("sleep.pid");
    let host = dir
        .mount(json!({"mcpServers": {
            "wrapped": {"command": "sh", "args": ["-c", format!("{} --grandchild; true", mock())]},
            "background": {"command": "sh", "args": ["-c", format!("sleep 600 & echo $! > {pidfile}; exec {}", mock())]},
        }}))
        .await;
    let r = host
        .call("mcp__wrapped__pids", None, CallOptions::approver(AssumeYes))
        .await;
    let pids = r.structured_content.clone().expect("pids");
    let mock_pid = pids["pid"].as_u64().unwrap();
    let grandchild = pids["grandchild"].as_u64().unwrap();
    let sleeper: u64 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for pid in [mock_pid, grandchild, sleeper] {
        assert!(!process_gone(pid), "{pid} should be running");
    }
    host.shutdown().await;
    for pid in [mock_pid, grandchild, sleeper] {
        assert!(wait_gone(pid).await, "process {pid} outlived the host");
    }
}
