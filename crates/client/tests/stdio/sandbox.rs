//! The stdio sandbox against the testkit's `hostile-server`, one behaviour
//! per test: under the sandbox the act is refused (or the server killed)
//! with its reason; under `Sandbox::none()` the same act succeeds, so each
//! test can fail. Every test ends by checking that the server's process
//! group is gone.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard_client::{
    Client, Environment, FsAccess, MechanismState, Sandbox, StdioConfig, StdioTransport, Transport,
};

use super::util::*;

/// A fresh directory under the temp dir, removed by the caller's guard.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "switchboard-sandbox-test-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn hostile(args: &[&str], sandbox: Sandbox) -> StdioConfig {
    StdioConfig::new("hostile", bin("hostile-server"))
        .args(args.iter().copied())
        .environment(Environment::scrubbed(Vec::<String>::new()))
        .sandbox(sandbox)
}

/// Starts the server, calls `act`, closes it, checks its group is gone;
/// returns the outcome: `Ok((text, is_error))` or the call's error text.
async fn act(config: StdioConfig) -> Result<(String, bool), String> {
    let transport = StdioTransport::spawn(config)
        .await
        .map_err(|e| e.to_string())?;
    let pgid = transport.pid().unwrap();
    let client = Client::builder("hostile", transport.clone())
        .timeout(Duration::from_secs(60))
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    let outcome = client
        .call_tool("act", None)
        .await
        .map(|r| (r.joined_text(), r.is_error()))
        .map_err(|e| e.to_string());
    client.close().await;
    transport.close().await;
    assert!(
        group_gone(pgid, Duration::from_secs(10)).await,
        "the server's process group outlived it"
    );
    outcome
}

/// Whether no process of group `pgid` is left (zombies aside) within
/// `within`.
async fn group_gone(pgid: u32, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let fields: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                // state, ppid, pgrp
                fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
            })
            .count();
        if left == 0 {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn refused(outcome: &Result<(String, bool), String>, needle: &str) {
    match outcome {
        Ok((text, true)) => assert!(text.contains(needle), "{text}"),
        other => panic!("expected a refusal containing {needle:?}, got {other:?}"),
    }
}

fn succeeded(outcome: &Result<(String, bool), String>, needle: &str) {
    match outcome {
        Ok((text, false)) => assert!(text.contains(needle), "{text}"),
        other => panic!("expected success containing {needle:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_an_ssh_key_in_home_is_refused_under_strict() {
    let home = TempDir::new("home");
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), "FAKE PRIVATE KEY").unwrap();
    let strict = hostile(&["read", "~/.ssh/id_rsa"], Sandbox::strict()).env("HOME", home.path());
    refused(&act(strict).await, "Permission denied");
    let none = hostile(&["read", "~/.ssh/id_rsa"], Sandbox::none()).env("HOME", home.path());
    succeeded(&act(none).await, "FAKE PRIVATE KEY");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_read_list_is_readable() {
    let allowed = TempDir::new("allowed");
    let other = TempDir::new("other");
    std::fs::write(allowed.path().join("f"), "inside").unwrap();
    std::fs::write(other.path().join("f"), "outside").unwrap();
    let mut sandbox = Sandbox::strict();
    sandbox.fs = Some(FsAccess::new(vec![allowed.path().to_owned()], vec![]));
    let inside = allowed.path().join("f");
    let outside = other.path().join("f");
    succeeded(
        &act(hostile(
            &["read", inside.to_str().unwrap()],
            sandbox.clone(),
        ))
        .await,
        "inside",
    );
    refused(
        &act(hostile(&["read", outside.to_str().unwrap()], sandbox)).await,
        "Permission denied",
    );
    succeeded(
        &act(hostile(
            &["read", outside.to_str().unwrap()],
            Sandbox::none(),
        ))
        .await,
        "outside",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_write_list_is_writable() {
    let readable = TempDir::new("ro");
    let writable = TempDir::new("rw");
    let mut sandbox = Sandbox::strict();
    sandbox.fs = Some(FsAccess::new(
        vec![readable.path().to_owned()],
        vec![writable.path().to_owned()],
    ));
    let good = writable.path().join("x");
    let bad = readable.path().join("x");
    succeeded(
        &act(hostile(&["write", good.to_str().unwrap()], sandbox.clone())).await,
        "wrote",
    );
    refused(
        &act(hostile(&["write", bad.to_str().unwrap()], sandbox)).await,
        "Permission denied",
    );
    assert!(!bad.exists());
    succeeded(
        &act(hostile(&["write", bad.to_str().unwrap()], Sandbox::none())).await,
        "wrote",
    );
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_network_means_no_connection_to_loopback() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut sandbox = Sandbox::baseline();
    sandbox.network = false;
    // Landlock (ABI 4+) refuses the connect before routing would
    // (EACCES); without it the empty namespace has no route (ENETUNREACH).
    match act(hostile(&["connect", &addr], sandbox.clone())).await {
        Ok((text, true)) => assert!(
            text.contains("Network is unreachable") || text.contains("Permission denied"),
            "{text}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The namespace itself: no interface but loopback.
    let (devices, _) = act(hostile(&["read", "/proc/self/net/dev"], sandbox))
        .await
        .unwrap();
    let names: Vec<&str> = devices
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(names, ["lo"], "{devices}");
    succeeded(
        &act(hostile(&["connect", &addr], Sandbox::none())).await,
        "connected",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forking_stops_at_the_process_limit() {
    let mut sandbox = Sandbox::baseline();
    sandbox.processes = Some(8);
    let outcome = act(hostile(&["fork", "64"], sandbox)).await;
    refused(&outcome, "fork failed after");
    succeeded(
        &act(hostile(&["fork", "64"], Sandbox::none())).await,
        "forked 64 processes",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocating_past_the_memory_limit_kills_the_server_with_the_reason() {
    let mut sandbox = Sandbox::baseline();
    sandbox.memory_mib = Some(256);
    let outcome = act(hostile(&["alloc", "512"], sandbox)).await;
    let error = outcome.expect_err("the server must die");
    assert!(error.contains("memoryMiB: 256"), "{error}");
    succeeded(
        &act(hostile(&["alloc", "512"], Sandbox::none())).await,
        "allocated 512 MiB",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ptrace_is_refused_by_the_baseline() {
    refused(
        &act(hostile(&["ptrace"], Sandbox::baseline())).await,
        "Operation not permitted",
    );
    succeeded(
        &act(hostile(&["ptrace"], Sandbox::none())).await,
        "attached",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrubbed_environment_carries_no_host_secret() {
    const NAME: &str = "SWITCHBOARD_SANDBOX_TEST_HOST_SECRET";
    const VALUE: &str = "host-secret-5a0e1f";
    // SAFETY: std's environment lock orders this with the spawns of other
    // tests; nothing else in this test binary reads this name.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var(NAME, VALUE);
    }
    let (text, _) = act(hostile(&["env"], Sandbox::strict()).env("GIVEN", "by-entry"))
        .await
        .unwrap();
    assert!(!text.contains(VALUE), "{text}");
    assert!(text.contains("GIVEN=by-entry"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("PATH=")), "{text}");
    // The private temp dir is its TMPDIR.
    assert!(
        text.contains("TMPDIR=") && text.contains("switchboard-hostile-"),
        "{text}"
    );
    // Passing everything through shows the test can fail.
    let all = hostile(&["env"], Sandbox::none()).environment(Environment::scrubbed(["*"]));
    let (text, _) = act(all).await.unwrap();
    assert!(text.contains(VALUE), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_private_temp_dir_is_writable_and_removed_after() {
    let config = hostile(&["env"], Sandbox::strict());
    let transport = StdioTransport::spawn(config).await.unwrap();
    let confinement = transport.confinement().clone();
    let tmp = confinement
        .write
        .iter()
        .find(|p| p.to_string_lossy().contains("switchboard-hostile-"))
        .cloned()
        .expect("a private temp dir");
    assert!(tmp.is_dir());
    assert!(confinement.fs_confined && !confinement.network);
    assert!(
        confinement
            .mechanisms
            .iter()
            .any(|m| m.name == "landlock" && matches!(m.state, MechanismState::Active(_))),
        "{confinement}"
    );
    transport.close().await;
    assert!(!tmp.exists(), "the temp dir outlived the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_path_that_does_not_exist_stops_the_start() {
    let mut sandbox = Sandbox::strict();
    sandbox.fs = Some(FsAccess::new(vec!["/no/such/dir/anywhere".into()], vec![]));
    let error = StdioTransport::spawn(hostile(&["env"], sandbox))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("/no/such/dir/anywhere"), "{error}");
}

/// The server works normally under strict: tools listed, called, closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_well_behaved_server_runs_under_strict() {
    let transport = StdioTransport::spawn(mock(&[]).sandbox(Sandbox::strict()))
        .await
        .unwrap();
    let client = Client::builder("mock", transport.clone())
        .timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(!tools.items.is_empty());
    client.close().await;
    transport.close().await;
}
