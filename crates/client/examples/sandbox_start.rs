//! What a sandbox adds to a stdio server's start: the time from
//! [`StdioTransport::spawn`] to the answer of its first request, for the
//! same server under each sandbox (none; the baseline; file-system
//! confinement; memory and CPU rlimits; the process limit; strict), interleaved run by run so that load
//! drifting on the machine hits every mode alike. Prints, per mode, the
//! median, the 10th and 90th percentiles and the mean with its standard
//! deviation, and the median added over `none`.
//!
//! `bench/sandbox-start.sh` builds the testkit's `hostile-server` (a tiny,
//! single-threaded server) and runs this against it.
//!
//! Run: `cargo run -p switchboard-client --example sandbox_start -- [--n N] -- SERVER [ARGS...]`

// A benchmark prints its figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use switchboard_client::{
    Client, Environment, FsAccess, Sandbox, StdioConfig, StdioTransport, Transport,
};

fn modes() -> Vec<(&'static str, Sandbox)> {
    let mut rlimits = Sandbox::baseline();
    rlimits.memory_mib = Some(1024);
    rlimits.cpu_seconds = Some(600);
    let mut processes = Sandbox::baseline();
    processes.processes = Some(64);
    let mut fs_only = Sandbox::baseline();
    fs_only.fs = Some(FsAccess::default());
    vec![
        ("none", Sandbox::none()),
        ("baseline", Sandbox::baseline()),
        ("fs", fs_only),
        ("rlimits", rlimits),
        ("processes", processes),
        ("strict", Sandbox::strict()),
    ]
}

async fn once(cmd: &[String], sandbox: Sandbox) -> Result<Duration, String> {
    let (program, args) = cmd.split_first().ok_or("no server given")?;
    let config = StdioConfig::new("bench", program)
        .args(args)
        .environment(Environment::scrubbed(Vec::<String>::new()))
        .sandbox(sandbox);
    let start = Instant::now();
    let transport = StdioTransport::spawn(config)
        .await
        .map_err(|e| e.to_string())?;
    let client = Client::builder("bench", transport.clone())
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    let took = start.elapsed();
    client.close().await;
    transport.close().await;
    Ok(took)
}

fn stats(name: &str, mut v: Vec<f64>, base: Option<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let pct = |p: f64| v[((n as f64 - 1.0) * p).round() as usize];
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    let median = pct(0.5);
    let added = base.map_or_else(String::new, |b| format!("  added {:+.2} ms", median - b));
    println!(
        "{name:<9} n={n}  median {median:.2} ms  p10 {:.2}  p90 {:.2}  mean {mean:.2} ± {sd:.2}{added}",
        pct(0.1),
        pct(0.9)
    );
    median
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let mut n = 200usize;
    let mut args = std::env::args().skip(1);
    let mut cmd = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).ok_or("--n N")?,
            "--" => cmd.extend(args.by_ref()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let modes = modes();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(n); modes.len()];
    // Warm-up: page cache, the spawner and watchdog, the seccomp filter.
    for (_, sandbox) in &modes {
        once(&cmd, sandbox.clone()).await?;
    }
    for _ in 0..n {
        for (i, (_, sandbox)) in modes.iter().enumerate() {
            let took = once(&cmd, sandbox.clone()).await?;
            times[i].push(took.as_secs_f64() * 1e3);
        }
    }
    let mut base = None;
    for ((name, _), t) in modes.iter().zip(times) {
        let median = stats(name, t, base);
        base.get_or_insert(median);
    }
    Ok(())
}
