//! Host benchmarks: start-up time with ten slow stdio servers, and the
//! host's added latency per call over a direct client call.
//!
//! The host keeps a `subscriptions/listen` stream open on every server that
//! offers `listChanged` (the mock server does), so calls are also timed on
//! a direct client with such a stream open: the difference to that one is
//! what the host itself adds.
//!
//! Run: `taskset -c 1 cargo bench -p switchboard-host --bench host`
//! (builds the testkit's mock-server in the same profile first; pinning to
//! one CPU avoids cross-CPU wake-ups, which cost more than the host does).

// A benchmark reports its figures on stdout.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};
use switchboard_testutil::{Artifacts, built};

use serde_json::json;
use switchboard_client::{Client, StdioConfig, StdioTransport};
use switchboard_host::{CallOptions, Config, ConfigOrigin, Host, MountOptions, ServerConfig};

const SERVERS: usize = 10;
const START_DELAY_MS: u64 = 200;
const MOUNT_ROUNDS: usize = 5;
const CALLS: usize = 4000;
const ROUNDS: usize = 20;

fn mock_server() -> PathBuf {
    built("switchboard-testkit", Artifacts::Bins).join("mock-server")
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
        let up = host
            .servers()
            .iter()
            .filter(|s| s.status == switchboard_host::ServerStatus::Up)
            .count();
        assert_eq!(up, SERVERS, "every server mounted");
        host.shutdown().await;
    }
    println!(
        "start-up, {SERVERS} stdio servers x {START_DELAY_MS} ms start delay: median {:.0} ms over {MOUNT_ROUNDS} rounds (min {:.0} ms; sequential would be >= {} ms)",
        median(times.clone()).as_secs_f64() * 1e3,
        times.iter().min().expect("rounds").as_secs_f64() * 1e3,
        SERVERS as u64 * START_DELAY_MS
    );
}

/// Per-call times in microseconds (median round) of one configuration.
struct PerCall {
    /// A plain client.
    direct: f64,
    /// A client that keeps a `subscriptions/listen` stream open, as the
    /// host does on every server that offers `listChanged`.
    listening: f64,
    /// Through the host.
    hosted: f64,
}

/// Per-call cost, direct client vs host, measured in alternating rounds so
/// drift from other load on the machine hits all alike.
async fn per_call(mock: &Path, audit: bool) -> PerCall {
    let direct = direct_client(mock).await;
    let listening = direct_client(mock).await;
    let _listen = listening
        .listen(switchboard_wire::types::SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        })
        .await
        .expect("listen");
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
        for client in [&direct, &listening] {
            client
                .call_tool("echo", args.clone())
                .await
                .expect("warm-up");
        }
        host.call("mcp__s0__echo", args.clone(), CallOptions::default())
            .await;
    }
    let per_round = CALLS / ROUNDS;
    let (mut plain, mut listened, mut hosted) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for (client, times) in [(&direct, &mut plain), (&listening, &mut listened)] {
            let started = Instant::now();
            for _ in 0..per_round {
                client.call_tool("echo", args.clone()).await.expect("call");
            }
            times.push(started.elapsed() / per_round as u32);
        }
        let started = Instant::now();
        for _ in 0..per_round {
            let r = host
                .call("mcp__s0__echo", args.clone(), CallOptions::default())
                .await;
            assert!(!r.is_error());
        }
        hosted.push(started.elapsed() / per_round as u32);
    }
    direct.close().await;
    listening.close().await;
    host.shutdown().await;
    let us = |v: Vec<Duration>| median(v).as_secs_f64() * 1e6;
    PerCall {
        direct: us(plain),
        listening: us(listened),
        hosted: us(hosted),
    }
}

async fn direct_client(mock: &Path) -> Client {
    let transport = StdioTransport::spawn(StdioConfig::new("direct", mock))
        .await
        .expect("spawn");
    Client::builder("direct", transport)
        .connect()
        .await
        .expect("connect")
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
            let t = per_call(&mock, audit).await;
            println!(
                "tools/call echo, sequential, {CALLS} calls in {ROUNDS} alternating rounds{} (median round): direct client {:.1} us/call, direct client with a listen stream open {:.1} us/call, through the host {:.1} us/call; added {:.1} us/call over the plain client, {:.1} over the listening one",
                if audit { ", audit log on" } else { "" },
                t.direct,
                t.listening,
                t.hosted,
                t.hosted - t.direct,
                t.hosted - t.listening,
            );
        }
    });
}
