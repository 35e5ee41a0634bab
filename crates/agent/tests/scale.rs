//! The table at scale, end to end with a model that follows a script of
//! its own (it reads the results it is given, as a model would): a table
//! over the threshold is deferred and searched, a lazy server starts at
//! its first call and not before, and a 200,000-character result is
//! paged through `read_result` to its last line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_agent::{
    Agent, AgentOptions, BoxFuture, CancelToken, EventFn, EventSink, HostToolbox, Model,
    ModelError, ModelRequest, StopReason, ToolCall, TurnOutput, TurnStop, Usage,
};
use switchboard_host::{
    AssumeYes, Config, ConfigOrigin, Host, MountOptions, ServerStatus, ToolSearch,
};

/// A model whose next turn is computed from the request: the tools and
/// system prompt it was sent are recorded, and `next` decides the calls
/// (none ends the turn).
struct Reactive {
    seen: Mutex<Vec<(Vec<String>, String)>>,
    next: Box<NextCalls>,
}

/// What decides the calls of the next turn from its number and request.
type NextCalls = dyn Fn(usize, &ModelRequest) -> Vec<(String, Value)> + Send + Sync;

impl std::fmt::Debug for Reactive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reactive")
    }
}

impl Reactive {
    fn new(
        next: impl Fn(usize, &ModelRequest) -> Vec<(String, Value)> + Send + Sync + 'static,
    ) -> Arc<Reactive> {
        Arc::new(Reactive {
            seen: Mutex::default(),
            next: Box::new(next),
        })
    }

    /// The tool names of each request, in order.
    fn tools_sent(&self) -> Vec<Vec<String>> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(t, _)| t.clone())
            .collect()
    }
}

impl Model for Reactive {
    fn name(&self) -> String {
        "reactive".into()
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        _events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        Box::pin(async move {
            let n = {
                let mut seen = self.seen.lock().unwrap();
                seen.push((
                    request.tools.iter().map(|t| t.name.clone()).collect(),
                    request.system.clone(),
                ));
                seen.len() - 1
            };
            let calls: Vec<ToolCall> = (self.next)(n, request)
                .into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| ToolCall {
                    id: format!("call_{n}_{i}"),
                    name,
                    arguments,
                })
                .collect();
            Ok(TurnOutput {
                text: if calls.is_empty() {
                    "done".into()
                } else {
                    String::new()
                },
                stop: if calls.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                },
                tool_calls: calls,
                usage: Usage::default(),
            })
        })
    }
}

/// The text of the last tool result the model was given.
fn last_result(request: &ModelRequest) -> String {
    request
        .messages
        .last()
        .map(|m| {
            m.content
                .iter()
                .filter_map(|c| match c {
                    switchboard_agent::Content::ToolResult { content, .. } => Some(content.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn mock_server() -> PathBuf {
    switchboard_testutil::built("switchboard-testkit", switchboard_testutil::Artifacts::Bins)
        .join("mock-server")
}

async fn mount(config: &Value, dir: &Path) -> Host {
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let config = Config::parse(
        &config.to_string(),
        ConfigOrigin::Flag(path.clone()),
        &BTreeMap::new(),
    )
    .unwrap();
    let mut options = MountOptions::default();
    options.token_store = None;
    Host::mount(config, options).await.unwrap()
}

/// A tools file of `n` filler tools with wordy descriptions, plus `extra`.
fn tools_file(dir: &Path, n: usize, extra: &[Value]) -> PathBuf {
    let mut tools: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("report_{i}"),
                "description": format!("Builds quarterly report number {i} from the ledger, with totals per region and a chart of the month over month change."),
                "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "description": "Which region"}}}
            })
        })
        .collect();
    tools.extend(extra.iter().cloned());
    let path = dir.join("tools.json");
    std::fs::write(&path, Value::Array(tools).to_string()).unwrap();
    path
}

fn collect() -> EventSink {
    EventSink::new(|_| {})
}

#[tokio::test]
async fn a_table_over_the_threshold_is_deferred_and_what_the_model_finds_is_sent_next() {
    let dir = tempfile::tempdir().unwrap();
    let forecast = json!({"name": "forecast", "description": "Tells tomorrow's weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}});
    let tools = tools_file(dir.path(), 40, &[forecast]);
    let host = mount(
        &json!({"mcpServers": {"mock": {
            "command": mock_server(), "args": ["--tools-file", tools, "--page-size", "0"],
            "tools": {"report_0": {"alwaysLoad": true}}
        }}}),
        dir.path(),
    )
    .await;
    // Over 10 % of a 20,000-token window: deferred (auto).
    let table = Host::tools_tokens(&host.tools());
    assert!(table > 2_000, "the table is {table} tokens");
    let toolbox = Arc::new(
        HostToolbox::new(host.clone(), Some(Arc::new(AssumeYes)))
            .with_tool_search(ToolSearch::Auto, 20_000),
    );
    let model = Reactive::new(|n, request| match n {
        0 => vec![(
            "mcp__switchboard__search_tools".into(),
            json!({"query": "weather tomorrow in Paris"}),
        )],
        1 => {
            assert!(
                last_result(request).contains("mcp__mock__forecast"),
                "{}",
                last_result(request)
            );
            vec![("mcp__mock__forecast".into(), json!({"city": "Paris"}))]
        }
        _ => {
            assert!(
                last_result(request).contains("forecast ran"),
                "{}",
                last_result(request)
            );
            vec![]
        }
    });
    let mut agent = Agent::new(model.clone(), toolbox.clone(), AgentOptions::default());
    let end = agent
        .run(
            "What's the weather tomorrow in Paris?",
            &collect(),
            &CancelToken::new(),
        )
        .await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    let sent = model.tools_sent();
    assert_eq!(sent.len(), 3);
    // First: the always-loaded tool and the search, nothing else.
    assert_eq!(
        sent[0],
        ["mcp__mock__report_0", "mcp__switchboard__search_tools"]
    );
    // The system prompt names the server to search.
    let system = model.seen.lock().unwrap()[0].1.clone();
    assert!(system.contains("- mock: 41 tools"), "{system}");
    // Next: what the search found joins, in a stable (name) order.
    assert!(
        sent[1].contains(&"mcp__mock__forecast".to_owned()),
        "{:?}",
        sent[1]
    );
    let mut sorted = sent[1].clone();
    sorted.sort();
    assert_eq!(sent[1], sorted);
    assert!(sent[1].len() < 10, "{:?}", sent[1]);
    // And the deferred request carries a fraction of the table.
    let view = toolbox.view();
    assert!(view.deferred);
    assert!(view.sent_tokens * 5 < view.table_tokens, "{view:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn a_small_table_is_sent_whole_without_the_search_tool() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_file(dir.path(), 2, &[]);
    let host = mount(
        &json!({"mcpServers": {"mock": {"command": mock_server(), "args": ["--tools-file", tools]}}}),
        dir.path(),
    )
    .await;
    let toolbox = HostToolbox::new(host.clone(), None).with_tool_search(ToolSearch::Auto, 200_000);
    let names: Vec<String> = switchboard_agent::Toolbox::tools(&toolbox)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["mcp__mock__report_0", "mcp__mock__report_1"]);
    assert!(!toolbox.view().deferred);
    host.shutdown().await;
}

/// Lines of a start-up log (`start …` per process start).
fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("start"))
        .count()
}

#[tokio::test]
async fn a_lazy_server_starts_at_its_first_call_and_not_before_and_stops_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts.log");
    let tools = tools_file(
        dir.path(),
        1,
        &[
            json!({"name": "echo", "description": "Says it back.", "inputSchema": {"type": "object"}}),
        ],
    );
    let server = |lazy: bool| {
        json!({"mcpServers": {"lazy": {
            "command": mock_server(),
            "args": ["--tools-file", tools, "--startup-log", log],
            "lazy": lazy,
            "idleTimeoutMs": 1500,
        }}})
    };
    // Pinned once, at its first mount.
    let host = mount(&server(false), dir.path()).await;
    let pinned = host
        .pins()
        .iter()
        .filter(|p| p.kind == "tool" && p.state == switchboard_host::PinState::Pinned)
        .count();
    assert_eq!(pinned, 2);
    host.shutdown().await;
    assert_eq!(starts(&log), 1);

    let host = mount(&server(true), dir.path()).await;
    // Listed from its pins, not started.
    assert_eq!(starts(&log), 1, "a lazy server started at launch");
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp__lazy__echo", "mcp__lazy__report_0"]);
    let report = host.servers().into_iter().next().unwrap();
    assert_eq!(report.status, ServerStatus::NotStarted);
    assert!(report.lazy && !report.running);
    assert_eq!(host.tools()[0].status.server, ServerStatus::NotStarted);
    // Its pins, read back, are the approved definitions themselves.
    assert!(
        host.tools().iter().all(|t| t.status.pin == "pinned"),
        "{:?}",
        host.tools()
    );
    assert!(host.outage_text().is_none(), "not started is not an outage");
    // Searchable too.
    assert_eq!(
        host.search_tools("say it back", 1, None)[0].tool.name,
        "mcp__lazy__echo"
    );

    // The first call starts it, and runs once it is up.
    let result = host
        .call(
            "mcp__lazy__echo",
            Some(json!({"text": "hi"}).as_object().unwrap().clone()),
            switchboard_host::CallOptions::approver(AssumeYes),
        )
        .await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(starts(&log), 2);
    let report = host.servers().into_iter().next().unwrap();
    assert!(
        report.running && report.status == ServerStatus::Up,
        "{report:?}"
    );
    // A second call uses the same process.
    host.call(
        "mcp__lazy__echo",
        None,
        switchboard_host::CallOptions::approver(AssumeYes),
    )
    .await;
    assert_eq!(starts(&log), 2);

    // Idle past its timeout, it is stopped (a bounded wait, not a timing
    // assertion), and listed as before.
    let deadline = Instant::now() + Duration::from_secs(30);
    while host.servers()[0].running {
        assert!(
            Instant::now() < deadline,
            "the idle lazy server was not stopped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(host.servers()[0].status, ServerStatus::NotStarted);
    assert_eq!(host.tools().len(), 2);
    // The next call starts it again.
    let result = host
        .call(
            "mcp__lazy__echo",
            None,
            switchboard_host::CallOptions::approver(AssumeYes),
        )
        .await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(starts(&log), 3);
    host.shutdown().await;
}

#[tokio::test]
async fn a_200000_character_result_is_paged_to_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"name": "lines", "description": "Many lines.", "inputSchema": {"type": "object"}}])
            .to_string(),
    )
    .unwrap();
    let host = mount(
        &json!({"mcpServers": {"mock": {"command": mock_server(), "args": ["--tools-file", tools]}},
                "budgetChars": 8000}),
        dir.path(),
    )
    .await;
    let toolbox = Arc::new(HostToolbox::new(host.clone(), Some(Arc::new(AssumeYes))));
    // Reads on from the note's offset until the end, keeping every slice.
    let slices: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = slices.clone();
    let handle: Arc<Mutex<String>> = Arc::default();
    let model = Reactive::new(move |n, request| {
        if n == 0 {
            return vec![("mcp__mock__lines".into(), json!({}))];
        }
        let text = last_result(request);
        if text.contains("that is the end") {
            kept.lock().unwrap().push(inner(&text));
            return vec![];
        }
        let offset: u64 = if n == 1 {
            // The head shown, then the note with the handle and the offset
            // to read on from.
            *handle.lock().unwrap() = between(&text, "\"handle\": \"", "\"")
                .unwrap_or_else(|| panic!("no handle in {text}"))
                .to_owned();
            between(&text, "\"offset\": ", "}")
                .unwrap()
                .parse()
                .unwrap()
        } else {
            kept.lock().unwrap().push(inner(&text));
            between(&text, "to read on, offset ", ".")
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(
            request
                .tools
                .iter()
                .any(|t| t.name == "mcp__switchboard__read_result")
        );
        let handle = handle.lock().unwrap().clone();
        vec![(
            "mcp__switchboard__read_result".into(),
            json!({"handle": handle, "offset": offset}),
        )]
    });
    let mut options = AgentOptions::default();
    options.max_model_calls = 100;
    let mut agent = Agent::new(model.clone(), toolbox, options);
    let end = agent
        .run("read it all", &collect(), &CancelToken::new())
        .await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    let calls = model.seen.lock().unwrap().len();
    assert!(calls > 20, "{calls} model calls: the whole result was read");
    let expected: String = (1..=2000)
        .map(|i| {
            let head = format!("line {i} é ");
            let newline = usize::from(i < 2000);
            format!("{head}{}", "-".repeat(100 - head.chars().count() - newline))
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(expected.chars().count(), 200_000);
    // The slices after the head, in order, are the rest of the result, to
    // its last line: nothing lost, nothing repeated, UTF-8 intact.
    let read: String = slices.lock().unwrap().concat();
    let rest: String = expected.chars().skip(5333).collect();
    assert_eq!(read.chars().count(), rest.chars().count());
    assert!(read == rest, "the slices differ from the result's rest");
    let last = read.lines().last().unwrap();
    assert!(
        last.starts_with("line 2000 é ") && last.chars().count() == 100,
        "{last}"
    );
    host.shutdown().await;
}

/// The server text between the boundary markers of a `read_result`
/// answer (its second block).
fn inner(text: &str) -> String {
    let body = text.split_once(">\n").map_or(text, |(_, b)| b);
    body.rsplit_once("\n</untrusted-text>")
        .map_or(body, |(b, _)| b)
        .to_owned()
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let rest = &text[from..];
    Some(&rest[..rest.find(end)?])
}
