//! Tool search over a realistic table: the catalogue of real servers'
//! tools committed in `bench/catalogue-tools.json` (see
//! `bench/catalogue.sh`), each server served by the testkit's mock server
//! from its own tools file and mounted in one host, and the query set of
//! `bench/catalogue-queries.json`.
//!
//! Prints, for the catalogue: the characters and estimated tokens of the
//! full table against the deferred request (the built-in tools plus the
//! servers' one-line summaries for the system prompt); recall@1 and
//! recall@5 of `Host::search_tools`; its latency per query (p50, p95).
//! Then the same latency over a synthetic table of 5,000 tools (the
//! catalogue copied under numbered servers), searched through the index
//! alone and through one host that mounts all of them.
//!
//! Run: `taskset -c 1 cargo bench -p switchboard-host --bench search`.

// A benchmark reports its figures on stdout.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_host::{CatalogueTool, QueryCase};
use switchboard_host::{
    Config, ConfigOrigin, Host, LoadedTools, ModelTool, MountOptions, ServerConfig, estimate_tokens,
};
use switchboard_host::{SearchDocument as Document, SearchIndex};
use switchboard_testutil::{Artifacts, built};

/// Searches timed per query, after one warm-up pass.
const ROUNDS: usize = 50;
/// The size of the synthetic table.
const SYNTHETIC: usize = 5_000;

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

fn load<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let text = std::fs::read_to_string(bench_dir().join(name)).expect("bench file");
    serde_json::from_str(&text).expect("bench file is JSON")
}

/// One tools file per server (the mock server lists what the file holds),
/// `copies` times under numbered aliases when `copies > 1`.
fn mount_config(tools: &[CatalogueTool], dir: &Path, copies: usize) -> Config {
    let mock = built("switchboard-testkit", Artifacts::Bins).join("mock-server");
    let mut by_server: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for t in tools {
        by_server.entry(&t.server).or_default().push(json!({
            "name": t.name,
            "title": t.title,
            "description": t.description,
            "inputSchema": t.input_schema,
        }));
    }
    let mut config = Config::new(ConfigOrigin::Inline);
    for (server, defs) in &by_server {
        let file = dir.join(format!("{server}.json"));
        std::fs::write(&file, serde_json::to_vec(defs).expect("tools")).expect("tools file");
        for copy in 0..copies {
            let alias = if copies == 1 {
                (*server).to_owned()
            } else {
                format!("{server}{copy}")
            };
            config.servers.push(ServerConfig::stdio(
                alias,
                mock.display().to_string(),
                [
                    "--tools-file".to_owned(),
                    file.display().to_string(),
                    "--name".to_owned(),
                    (*server).to_owned(),
                ],
            ));
        }
    }
    config
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Times `search` over every query, `ROUNDS` times, and prints p50/p95.
fn time_queries(label: &str, queries: &[String], mut search: impl FnMut(&str)) {
    for q in queries {
        search(q);
    }
    let mut times = Vec::with_capacity(queries.len() * ROUNDS);
    for _ in 0..ROUNDS {
        for q in queries {
            let started = Instant::now();
            search(q);
            times.push(started.elapsed());
        }
    }
    times.sort();
    println!(
        "{label}: {} searches, p50 {:.1} µs, p95 {:.1} µs, max {:.1} µs",
        times.len(),
        percentile(&times, 0.5).as_secs_f64() * 1e6,
        percentile(&times, 0.95).as_secs_f64() * 1e6,
        times[times.len() - 1].as_secs_f64() * 1e6,
    );
}

fn table_size(tools: &[ModelTool]) -> (usize, u64) {
    let chars = tools
        .iter()
        .map(|t| {
            t.name.chars().count()
                + t.description.chars().count()
                + serde_json::to_string(&t.input_schema).map_or(0, |s| s.chars().count())
        })
        .sum();
    (chars, Host::tools_tokens(tools))
}

async fn catalogue(tools: &[CatalogueTool], cases: &[QueryCase], dir: &Path) {
    let host = Host::mount(mount_config(tools, dir, 1), MountOptions::default())
        .await
        .expect("mount");
    host.enable_tool_search();
    let all = host.tools();
    let servers: std::collections::BTreeSet<&str> =
        tools.iter().map(|t| t.server.as_str()).collect();
    println!(
        "catalogue: {} tools of {} servers mounted ({} in the file)",
        all.iter().filter(|t| t.server != "switchboard").count(),
        servers.len(),
        tools.len()
    );
    let (chars, tokens_full) = table_size(&all);
    let deferred = host.deferred_tools(&all, &LoadedTools::default());
    let (deferred_chars, deferred_tokens) = table_size(&deferred);
    let summaries = host.server_summaries().unwrap_or_default();
    println!(
        "full table: {chars} characters, about {tokens_full} tokens; deferred: {} tools, {} characters + {} of server summaries, about {} tokens ({:.1} % of the full table)",
        deferred.len(),
        deferred_chars,
        summaries.chars().count(),
        deferred_tokens + estimate_tokens(&summaries),
        100.0 * (deferred_tokens + estimate_tokens(&summaries)) as f64 / tokens_full as f64
    );
    // Recall through the host's own search (the model's view of the text).
    let key = |t: &ModelTool| format!("{}/{}", t.server, t.original_name);
    for (label, pick) in [
        (
            "all",
            &(|_: &QueryCase| true) as &dyn Fn(&QueryCase) -> bool,
        ),
        ("paraphrase", &|c| c.kind == "paraphrase"),
        ("holdout", &|c| c.split == "holdout"),
    ] {
        let chosen: Vec<&QueryCase> = cases.iter().filter(|c| pick(c)).collect();
        let (mut at1, mut at5) = (0, 0);
        for case in &chosen {
            let found: Vec<String> = host
                .search_tools(&case.query, 5, None)
                .iter()
                .map(|f| key(&f.tool))
                .collect();
            if found.first().is_some_and(|k| case.expect.contains(k)) {
                at1 += 1;
            }
            if found.iter().any(|k| case.expect.contains(k)) {
                at5 += 1;
            }
        }
        let n = chosen.len() as f64;
        println!(
            "recall ({label}, {} queries): @1 {:.3}, @5 {:.3}",
            chosen.len(),
            f64::from(at1) / n,
            f64::from(at5) / n
        );
    }
    let queries: Vec<String> = cases.iter().map(|c| c.query.clone()).collect();
    time_queries("host search, catalogue", &queries, |q| {
        std::hint::black_box(host.search_tools(q, 5, None));
    });
    host.shutdown().await;
}

async fn synthetic(tools: &[CatalogueTool], cases: &[QueryCase], dir: &Path) {
    let copies = SYNTHETIC.div_ceil(tools.len());
    let docs: Vec<Document> = (0..copies)
        .flat_map(|copy| {
            tools.iter().map(move |t| {
                let mut doc = t.document();
                doc.server = format!("{}{copy}", t.server);
                doc
            })
        })
        .take(SYNTHETIC)
        .collect();
    let started = Instant::now();
    let index = SearchIndex::build(&docs);
    println!(
        "synthetic: {} tools indexed in {:.1} ms",
        index.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let queries: Vec<String> = cases.iter().map(|c| c.query.clone()).collect();
    time_queries("index search, 5,000 tools", &queries, |q| {
        std::hint::black_box(index.search(q, 5));
    });
    let host = Host::mount(mount_config(tools, dir, copies), MountOptions::default())
        .await
        .expect("mount");
    let listed = host.tools().len();
    host.search_tools("warm the index", 5, None);
    time_queries(
        &format!("host search, {listed} tools"),
        &queries[..queries.len().min(40)],
        |q| {
            std::hint::black_box(host.search_tools(q, 5, None));
        },
    );
    host.shutdown().await;
}

fn main() {
    let tools: Vec<CatalogueTool> = load("catalogue-tools.json");
    let cases: Vec<QueryCase> = load("catalogue-queries.json");
    let dir = tempfile::tempdir().expect("scratch dir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(catalogue(&tools, &cases, dir.path()));
    rt.block_on(synthetic(&tools, &cases, dir.path()));
}
