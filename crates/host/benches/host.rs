//! Host benchmarks: start-up time with ten slow stdio servers, and the
//! host's added latency per call over a direct client call.
//!
//! Run: `taskset -c 1 cargo bench -p switchboard-host --bench host`
//! (builds the testkit's mock-server in the same profile first; pinning to
//! one CPU avoids cross-CPU wake-ups, which cost more than the host does).

// A benchmark reports its figures on stdout.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_client::{Client, StdioConfig, StdioTransport};
use switchboard_host::{CallOptions, Config, ConfigOrigin, Host, MountOptions, ServerConfig};

const SERVERS: usize = 10;
const START_DELAY_MS: u64 = 200;
const MOUNT_ROUNDS: usize = 5;
const CALLS: usize = 4000;
const ROUNDS: usize = 20;

fn mock_server() -> PathBuf {
    let exe = std::env::current_exe().expect("bench executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("<target>/<profile>/deps layout")
        .to_path_buf();
    let release = profile_dir.file_name().and_then(|n| n.to_str()) == Some("release");
    let mut cmd =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "switchboard-testkit",
        "--bin",
        "mock-server",
    ])
    .arg("--target-dir")
    .arg(profile_dir.parent().expect("target dir"));
    if release {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().expect("cargo").success(),
        "building mock-server"
    );
    profile_dir.join("mock-server")
}

fn config(mock: &Path, servers: usize, delay_ms: u64) -> Config {
    let mut config = Config::new(ConfigOrigin::Inline);
    for i in 0..servers {
        config.servers.push(ServerConfig::stdio(
            format!("s{i}"),
            mock.display().to_string(),
            ["--startup-delay-ms".to_owned(), delay_ms.to_string()],
        ));
    }
    config.rules.push(switchboard_host::Rule {
        kind: switchboard_host::RuleKind::Allow,
        pattern: switchboard_host::Pattern::parse("mcp__s0").expect("pattern"),
        source: "bench".into(),
    });
    config
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn startup(mock: &Path) {
    let mut times = Vec::new();
    for _ in 0..MOUNT_ROUNDS {
        let started = Instant::now();
        let host = Host::mount(
            config(mock, SERVERS, START_DELAY_MS),
            MountOptions::default(),
        )
        .await
        .expect("mount");
        times.push(started.elapsed());
        assert_eq!(host.tools().len(), SERVERS * 14, "every server mounted");
        host.shutdown().await;
    }
    println!(
        "start-up, {SERVERS} stdio servers x {START_DELAY_MS} ms start delay: median {:.0} ms over {MOUNT_ROUNDS} rounds (min {:.0} ms; sequential would be >= {} ms)",
        median(times.clone()).as_secs_f64() * 1e3,
        times.iter().min().expect("rounds").as_secs_f64() * 1e3,
        SERVERS as u64 * START_DELAY_MS
    );
}

/// Per-call cost, direct client vs host, measured in alternating rounds so
/// drift from other load on the machine hits both alike.
async fn per_call(mock: &Path, audit: bool) -> (f64, f64) {
    let transport = StdioTransport::spawn(StdioConfig::new("direct", mock))
        .await
        .expect("spawn");
    let client = Client::builder("direct", transport)
        .connect()
        .await
        .expect("connect");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = config(mock, 1, 0);
    if audit {
        cfg.audit = Some(dir.path().join("audit.jsonl"));
    }
    let host = Host::mount(cfg, MountOptions::default())
        .await
        .expect("mount");
    let args = json!({"text": "hello"}).as_object().cloned();
    for _ in 0..300 {
        client
            .call_tool("echo", args.clone())
            .await
            .expect("warm-up");
        host.call("mcp__s0__echo", args.clone(), CallOptions::default())
            .await;
    }
    let (mut direct, mut hosted) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..CALLS / ROUNDS {
            client.call_tool("echo", args.clone()).await.expect("call");
        }
        direct.push(started.elapsed() / (CALLS / ROUNDS) as u32);
        let started = Instant::now();
        for _ in 0..CALLS / ROUNDS {
            let r = host
                .call("mcp__s0__echo", args.clone(), CallOptions::default())
                .await;
            assert!(!r.is_error());
        }
        hosted.push(started.elapsed() / (CALLS / ROUNDS) as u32);
    }
    client.close().await;
    host.shutdown().await;
    (
        median(direct).as_secs_f64() * 1e6,
        median(hosted).as_secs_f64() * 1e6,
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // useful either way: always run, briefly.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mock = mock_server();
        startup(&mock).await;
        for audit in [false, true] {
            let (direct, hosted) = per_call(&mock, audit).await;
            println!(
                "tools/call echo, sequential, {CALLS} calls in {ROUNDS} alternating rounds{} (median round): direct client {direct:.1} us/call, through the host {hosted:.1} us/call, added {:.1} us/call",
                if audit { ", audit log on" } else { "" },
                hosted - direct
            );
        }
    });
}
