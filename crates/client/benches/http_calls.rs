//! `tools/call` requests per second through our [`Client`] and Streamable
//! HTTP transport, against any MCP endpoint, with a fixed number of calls
//! in flight for a fixed time: the same measurement `wrk` with the bench
//! suite's `mcp-call.lua` makes, so the two can be compared against the
//! same server in the same run. `bench/client-http.sh` does that against
//! the `floor` server, everything pinned to one CPU.
//!
//! Run: `cargo bench -p switchboard-client --bench http_calls -- URL
//! [--concurrency N] [--seconds S] [--warmup S] [--tool NAME]`
//!
//! Prints one line: `RESULT rps=… p50_us=… p99_us=… requests=… errors=…
//! secs=…`. The client runs on a current-thread runtime: one CPU is all it
//! gets in the reference set-up.

// A benchmark prints its figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_client::{Client, EraPolicy, HttpTransport};
use switchboard_wire::types::JsonObject;
use tokio::task::JoinSet;

struct Opts {
    url: String,
    concurrency: usize,
    seconds: f64,
    warmup: f64,
    tool: String,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        url: String::new(),
        concurrency: 1,
        seconds: 10.0,
        warmup: 1.0,
        tool: "echo".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--concurrency" | "-c" => {
                o.concurrency = val()?.parse().map_err(|e| format!("--concurrency: {e}"))?;
            }
            "--seconds" => o.seconds = val()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--warmup" => o.warmup = val()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--tool" => o.tool = val()?,
            // cargo bench passes --bench to harness-less benches.
            "--bench" => {}
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            url => o.url = url.to_owned(),
        }
    }
    if o.url.is_empty() {
        return Err("usage: http_calls URL [--concurrency N] [--seconds S] [--warmup S]".into());
    }
    if o.concurrency == 0 {
        return Err("--concurrency must be at least 1".into());
    }
    Ok(o)
}

/// Runs `concurrency` loops of calls until `until`; returns the latencies
/// (µs) of the calls that succeeded and the number that failed.
async fn drive(client: &Client, o: &Opts, until: Instant) -> (Vec<u32>, u64) {
    let mut set = JoinSet::new();
    for _ in 0..o.concurrency {
        let client = client.clone();
        let tool = o.tool.clone();
        set.spawn(async move {
            let mut lat = Vec::with_capacity(65_536);
            let mut errors = 0_u64;
            let mut args = JsonObject::new();
            args.insert("text".into(), json!("hi"));
            while Instant::now() < until {
                let start = Instant::now();
                match client.call_tool(&tool, Some(args.clone())).await {
                    Ok(_) => {
                        lat.push(u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX));
                    }
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("call failed: {e}");
                        }
                        errors += 1;
                    }
                }
            }
            (lat, errors)
        });
    }
    let mut all = Vec::new();
    let mut errors = 0;
    while let Some(done) = set.join_next().await {
        if let Ok((lat, e)) = done {
            all.extend(lat);
            errors += e;
        }
    }
    (all, errors)
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p / 100.0).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            std::process::exit(1);
        }
    };
    rt.block_on(async {
        let transport = match HttpTransport::builder("bench", &o.url).build() {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        // The floor answers every POST with the same result, so no probe:
        // the first call is the first request, as with wrk.
        let client = match Client::builder("bench", transport)
            .era_policy(EraPolicy::AssumeModern)
            .timeout(Duration::from_secs(30))
            .connect()
            .await
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("connect: {e}");
                std::process::exit(1);
            }
        };
        if o.warmup > 0.0 {
            let until = Instant::now() + Duration::from_secs_f64(o.warmup);
            drive(&client, &o, until).await;
        }
        let start = Instant::now();
        let (mut lat, errors) =
            drive(&client, &o, start + Duration::from_secs_f64(o.seconds)).await;
        let secs = start.elapsed().as_secs_f64();
        lat.sort_unstable();
        println!(
            "RESULT rps={:.1} p50_us={} p99_us={} requests={} errors={} secs={:.2}",
            lat.len() as f64 / secs,
            percentile(&lat, 50.0),
            percentile(&lat, 99.0),
            lat.len(),
            errors,
            secs
        );
        client.close().await;
    });
}
