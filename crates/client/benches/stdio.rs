//! `tools/call` round trips per second through our [`Client`] and stdio
//! transport, against any stdio server: sequential (one in flight) or
//! pipelined (a window of requests in flight).
//!
//! The same measurement as the reference `stdio-rtt` client, so the two can
//! be compared against the same server in the same run; `bench/client-stdio.sh`
//! does that against the `floor` server, pinned to one CPU.
//!
//! Run: `cargo bench -p switchboard-client --bench stdio -- [--n N] [--warmup N]
//! [--mode seq|pipe] [--window W] [--json] -- SERVER [ARGS...]`

// A benchmark prints its figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use switchboard_client::{Client, EraPolicy, StdioConfig, StdioTransport};
use switchboard_wire::types::JsonObject;
use tokio::task::JoinSet;

struct Opts {
    n: u64,
    warmup: u64,
    pipe: bool,
    window: usize,
    json: bool,
    cmd: Vec<String>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        n: 10_000,
        warmup: 200,
        pipe: false,
        window: 64,
        json: false,
        cmd: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--n" => o.n = val()?.parse().map_err(|e| format!("--n: {e}"))?,
            "--warmup" => o.warmup = val()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--mode" => o.pipe = val()? == "pipe",
            "--window" => o.window = val()?.parse().map_err(|e| format!("--window: {e}"))?,
            "--json" => o.json = true,
            // cargo bench passes --bench to harness-less benches.
            "--bench" => {}
            "--" => {
                o.cmd = it.by_ref().collect();
                break;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.cmd.is_empty() {
        return Err("missing -- SERVER [ARGS...]".into());
    }
    o.window = o.window.max(1);
    Ok(o)
}

/// The arguments every call sends, built the way a caller would: one map,
/// not a `json!` value copied into one.
fn arguments() -> Option<JsonObject> {
    let mut arguments = JsonObject::with_capacity(1);
    arguments.insert("text".into(), "hi".into());
    Some(arguments)
}

async fn call(client: &Client) -> Duration {
    let start = Instant::now();
    let result = client.call_tool("echo", arguments()).await;
    match result {
        Ok(r) if !r.is_error() => start.elapsed(),
        Ok(r) => panic!("tool error: {}", r.joined_text()),
        Err(e) => panic!("call failed: {e}"),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

async fn run(o: Opts) -> Result<(), String> {
    let config = StdioConfig::new("bench", &o.cmd[0]).args(&o.cmd[1..]);
    let transport = StdioTransport::spawn(config)
        .await
        .map_err(|e| e.to_string())?;
    let client = Client::builder("bench", transport)
        .era_policy(EraPolicy::AssumeModern)
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    for _ in 0..o.warmup.max(1) {
        call(&client).await;
    }
    let mut latencies = Vec::with_capacity(o.n as usize);
    let start = Instant::now();
    if o.pipe {
        // `window` callers, each issuing calls back to back: `window`
        // requests in flight, as with that many agents sharing the client.
        let next = Arc::new(AtomicU64::new(0));
        let mut workers = JoinSet::new();
        for _ in 0..o.window {
            let (c, next, n) = (client.clone(), next.clone(), o.n);
            workers.spawn(async move {
                let mut mine = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    mine.push(call(&c).await);
                }
                mine
            });
        }
        while let Some(done) = workers.join_next().await {
            latencies.extend(done.map_err(|e| e.to_string())?);
        }
    } else {
        // On a task, as a host's caller would be (not on block_on's own
        // future, which costs the scheduler an extra poll of the driver).
        let (c, n) = (client.clone(), o.n);
        let worker = tokio::spawn(async move {
            let mut mine = Vec::with_capacity(n as usize);
            for _ in 0..n {
                mine.push(call(&c).await);
            }
            mine
        });
        latencies = worker.await.map_err(|e| e.to_string())?;
    }
    let elapsed = start.elapsed();
    client.close().await;
    latencies.sort_unstable();
    let rps = o.n as f64 / elapsed.as_secs_f64();
    let (p50, p99) = (percentile(&latencies, 50.0), percentile(&latencies, 99.0));
    let mode = if o.pipe { "pipe" } else { "seq" };
    let window = if o.pipe { o.window } else { 1 };
    if o.json {
        println!(
            "{{\"mode\":\"{mode}\",\"window\":{window},\"n\":{},\"secs\":{:.4},\"rps\":{rps:.1},\"p50_us\":{p50:.1},\"p99_us\":{p99:.1}}}",
            o.n,
            elapsed.as_secs_f64()
        );
    } else {
        println!(
            "switchboard client stdio {mode} (window {window}): {} requests in {:.3}s = {rps:.0} rt/s; p50 {p50:.1} us, p99 {p99:.1} us",
            o.n,
            elapsed.as_secs_f64()
        );
    }
    Ok(())
}

fn main() {
    let opts = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("stdio bench: {e}");
            std::process::exit(2);
        }
    };
    // One thread: the client's tasks never cross CPUs (the figures are taken
    // with everything pinned to one CPU anyway).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stdio bench: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = runtime.block_on(run(opts)) {
        eprintln!("stdio bench: {e}");
        std::process::exit(1);
    }
}
