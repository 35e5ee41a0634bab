//! Evals: the runner with the scripted model, a local OpenAI-compatible
//! provider that chooses wrong on purpose, the assertion check, and the
//! approved-versus-current tool lists of `--against-pins`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_agent::eval::{
    Case, Catalog, CatalogEntry, Category, ChangeKind, EvalTools, KeywordSelector, PinComparison,
    PinnedViews, Policy, Report, RunOptions, check_assertions, parse, run_cases,
};
use switchboard_agent::{
    Model, OpenAiModel, ProviderOptions, RetryPolicy, ScriptedModel, ToolSpec,
};
use switchboard_host::Pins;
use switchboard_host::{Config, ConfigOrigin, Host, MountOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::util::data;

/// The demo's tools, as far as selection goes.
fn tools() -> EvalTools {
    let tool = |alias: &str, name: &str, description: &str, props: Value| {
        (
            ToolSpec {
                name: format!("mcp__{alias}__{name}"),
                description: format!("[from {alias}] {description}"),
                input_schema: json!({"type": "object", "properties": props})
                    .as_object()
                    .unwrap()
                    .clone(),
                server: Some(alias.into()),
            },
            CatalogEntry {
                name: format!("mcp__{alias}__{name}"),
                alias: alias.into(),
                original_name: name.into(),
            },
        )
    };
    let (specs, entries): (Vec<_>, Vec<_>) = [
        tool(
            "notes",
            "search",
            "Searches the notes.",
            json!({"query": {"type": "string"}}),
        ),
        tool(
            "notes",
            "read_note",
            "Returns one note.",
            json!({"id": {"type": "string"}}),
        ),
        tool("notes", "list_notes", "Lists every note.", json!({})),
        tool(
            "tickets",
            "search",
            "Searches tickets.",
            json!({"query": {"type": "string"}}),
        ),
    ]
    .into_iter()
    .unzip();
    EvalTools {
        specs,
        catalog: Catalog::new(entries),
        system: "test".into(),
        search: None,
    }
}

fn cases(cases: Value) -> Vec<Case> {
    parse(Path::new("t.json"), &json!({ "cases": cases }).to_string()).unwrap()
}

fn script(text: &str) -> Arc<dyn Model> {
    Arc::new(ScriptedModel::parse("script.jsonl", text).unwrap())
}

fn sequential() -> RunOptions {
    RunOptions {
        concurrency: 1,
        ..RunOptions::default()
    }
}

#[tokio::test]
async fn the_scripted_model_passes_and_fails_cases_for_the_right_reasons() {
    let set = cases(json!([
        {"id": "right", "category": "happy", "utterance": "search notes for printer",
         "expect": {"tool": "mcp__notes__search", "arguments": {"fields": {"query": {"regex": "printer"}}}}},
        {"id": "wrong-tool", "category": "happy", "utterance": "search notes for printer",
         "expect": {"tool": {"alias": "notes", "name": "search"}}},
        {"id": "wrong-args", "category": "edge", "utterance": "read the handbook",
         "expect": {"tool": "mcp__notes__read_note", "arguments": {"exact": {"id": "handbook"}}}},
        {"id": "trap-called", "category": "trap", "utterance": "thanks!", "expect": {"noTool": true}},
        {"id": "happy-silent", "category": "happy", "utterance": "list my notes",
         "expect": {"tool": "mcp__notes__list_notes"}},
        {"id": "trap-quiet", "category": "trap", "utterance": "hi", "expect": {"noTool": true}}
    ]));
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__notes__search", "arguments": {"query": "printer"}}]}
{"tool_calls": [{"name": "mcp__tickets__search", "arguments": {"query": "printer"}}]}
{"tool_calls": [{"name": "mcp__notes__read_note", "arguments": {"id": "welcome"}}]}
{"tool_calls": [{"name": "mcp__notes__list_notes", "arguments": {}}]}
{"text": "Here are your notes, I think."}
{"text": "Hello!"}
"#,
    );
    let results = run_cases(model, &set, &tools(), &sequential()).await;
    let verdict = |id: &str| {
        let r = results.iter().find(|r| r.case.id == id).unwrap();
        (
            r.runs[0].verdict.pass,
            r.runs[0].verdict.why.clone().unwrap_or_default(),
        )
    };
    assert_eq!(verdict("right"), (true, String::new()));
    assert_eq!(
        verdict("wrong-tool"),
        (
            false,
            "called mcp__tickets__search instead of mcp__notes__search".into()
        )
    );
    let (pass, why) = verdict("wrong-args");
    assert!(!pass && why.contains("wrong arguments"), "{why}");
    let (pass, why) = verdict("trap-called");
    assert!(!pass && why.contains("no tool should be called"), "{why}");
    let (pass, why) = verdict("happy-silent");
    assert!(!pass && why.contains("called no tool"), "{why}");
    assert!(verdict("trap-quiet").0);

    let report = Report::build("script", &results, &Policy::default(), Duration::ZERO);
    let rate = |c| report.category(c).unwrap().rate.unwrap();
    assert!((rate(Category::Happy) - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(rate(Category::Edge), 0.0);
    assert_eq!(rate(Category::Trap), 0.5);
    assert!(!report.ok);
    assert_eq!(report.failures.len(), 4);
}

#[tokio::test]
async fn follow_answers_the_call_with_the_canned_result_and_judges_the_next() {
    let set = cases(json!([{
        "id": "two-steps", "category": "edge", "utterance": "what did the standup say about printers?",
        "expect": {"tool": "mcp__notes__search"},
        "follow": [{"result": "1 note matches: standup", "expect": {"tool": "mcp__notes__read_note", "arguments": {"exact": {"id": "standup"}}}}]
    }]));
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__notes__search", "arguments": {"query": "printer"}}]}
{"expect": [{"contains": "1 note matches: standup"}], "tool_calls": [{"name": "mcp__notes__read_note", "arguments": {"id": "standup"}}]}
"#,
    );
    let options = RunOptions {
        follow: true,
        ..sequential()
    };
    let results = run_cases(model, &set, &tools(), &options).await;
    let run = &results[0].runs[0];
    assert!(run.verdict.pass, "{run:?}");
    assert!(
        run.got.contains("then mcp__notes__read_note"),
        "{}",
        run.got
    );
}

/// A local OpenAI-compatible provider: answers each request by the last
/// user message, with a tool call or text, as Chat Completions streams.
async fn fake_openai(answers: BTreeMap<&'static str, Value>) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answers = Arc::new(answers);
    let count = Arc::new(Mutex::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let answers = answers.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let body = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break serde_json::from_slice::<Value>(&buf[end + 4..end + 4 + len])
                            .unwrap();
                    }
                };
                *seen.lock().unwrap() += 1;
                let user = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .rev()
                    .find(|m| m["role"] == "user")
                    .unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                // The tools the model is shown are the governed list.
                assert!(body["tools"].as_array().unwrap().len() == 4);
                let answer = answers.get(user.as_str()).cloned().unwrap_or(Value::Null);
                let delta = match &answer {
                    Value::Null => json!({"role": "assistant", "content": "Nothing to do."}),
                    call => {
                        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"].to_string()}}]})
                    }
                };
                let finish = if answer.is_null() {
                    "stop"
                } else {
                    "tool_calls"
                };
                let chunk = |delta: Value, finish: Option<&str>| {
                    data(&json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
                };
                let stream = [
                    chunk(delta, None),
                    chunk(json!({}), Some(finish)),
                    data("[DONE]"),
                ]
                .concat();
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(stream.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, count)
}

#[tokio::test]
async fn a_provider_choosing_wrong_on_purpose_gives_exact_per_category_numbers() {
    let call = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    let answers = BTreeMap::from([
        (
            "h1 search notes for printer",
            call("mcp__notes__search", json!({"query": "printer"})),
        ),
        (
            "h2 search tickets for vpn",
            call("mcp__tickets__search", json!({"query": "vpn"})),
        ),
        (
            "h3 read the handbook note",
            call("mcp__notes__read_note", json!({"id": "handbook"})),
        ),
        // Wrong on purpose: the tickets' search for a notes question.
        (
            "h4 search notes for coffee",
            call("mcp__tickets__search", json!({"query": "coffee"})),
        ),
        (
            "e1 what did the standup say",
            call("mcp__notes__search", json!({"query": "standup"})),
        ),
        (
            "e2 anything filed about the vpn",
            call("mcp__tickets__search", json!({"query": "vpn"})),
        ),
        // Wrong arguments on purpose.
        (
            "e3 the release checklist in full",
            call("mcp__notes__read_note", json!({"id": "handbook"})),
        ),
        ("t1 thanks", Value::Null),
        ("t2 what can you do", Value::Null),
        // A call in a trap, on purpose.
        (
            "t3 thanks for the printer note",
            call("mcp__notes__search", json!({"query": "printer"})),
        ),
    ]);
    let (url, requests) = fake_openai(answers).await;
    let set = cases(json!([
        {"id": "h1", "category": "happy", "utterance": "h1 search notes for printer", "expect": {"tool": "mcp__notes__search"}},
        {"id": "h2", "category": "happy", "utterance": "h2 search tickets for vpn", "expect": {"tool": "mcp__tickets__search"}},
        {"id": "h3", "category": "happy", "utterance": "h3 read the handbook note", "expect": {"tool": "mcp__notes__read_note", "arguments": {"exact": {"id": "handbook"}}}},
        {"id": "h4", "category": "happy", "utterance": "h4 search notes for coffee", "expect": {"tool": "mcp__notes__search"}},
        {"id": "e1", "category": "edge", "utterance": "e1 what did the standup say", "expect": {"tool": "mcp__notes__search"}},
        {"id": "e2", "category": "edge", "utterance": "e2 anything filed about the vpn", "expect": {"tool": {"alias": "tickets", "name": "search"}}},
        {"id": "e3", "category": "edge", "utterance": "e3 the release checklist in full", "expect": {"tool": "mcp__notes__read_note", "arguments": {"exact": {"id": "release"}}}},
        {"id": "t1", "category": "trap", "utterance": "t1 thanks", "expect": {"noTool": true}},
        {"id": "t2", "category": "trap", "utterance": "t2 what can you do", "expect": {"noTool": true}},
        {"id": "t3", "category": "trap", "utterance": "t3 thanks for the printer note", "expect": {"noTool": true}}
    ]));
    let mut options = ProviderOptions::new("gpt-test", "test-key", url);
    options.retry = RetryPolicy {
        retries: 1,
        base: Duration::from_millis(1),
        max: Duration::from_millis(10),
    };
    let model: Arc<dyn Model> = Arc::new(OpenAiModel::new(options).unwrap());
    let run = RunOptions {
        repeat: 2,
        concurrency: 4,
        ..RunOptions::default()
    };
    let results = run_cases(model, &set, &tools(), &run).await;
    assert_eq!(*requests.lock().unwrap(), 20);
    let report = Report::build(
        "openai:gpt-test",
        &results,
        &Policy::default(),
        Duration::ZERO,
    );
    let figures = |c| {
        let s = report.category(c).unwrap();
        (s.passed, s.runs, s.ok)
    };
    assert_eq!(figures(Category::Happy), (6, 8, false));
    assert_eq!(figures(Category::Edge), (4, 6, false));
    assert_eq!(figures(Category::Trap), (4, 6, false));
    // (4 · 0.75 + 3 · 2/3 + 3 · 2/3) / 10
    assert!((report.score.unwrap() - 0.7).abs() < 1e-9);
    let failed: Vec<&str> = report.failures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(failed, ["h4", "h4", "e3", "e3", "t3", "t3"]);
    assert!(
        report.failures[2].why.contains("\"handbook\""),
        "{:?}",
        report.failures[2]
    );
    // The same provider every time: nothing flaky.
    assert!(report.cases.iter().all(|c| !c.flaky));
}

#[tokio::test]
async fn the_assertion_check_flags_cases_that_cannot_fail() {
    let set = cases(json!([
        {"id": "good", "category": "happy", "utterance": "u",
         "expect": {"tool": "mcp__notes__search", "arguments": {"fields": {"query": {"regex": "(?i)printer"}}}}},
        {"id": "permissive-regex", "category": "happy", "utterance": "u",
         "expect": {"tool": "mcp__notes__search", "arguments": {"fields": {"query": {"regex": ".*"}}}}},
        {"id": "any-arguments", "category": "edge", "utterance": "u",
         "expect": {"tool": "mcp__notes__read_note"}},
        {"id": "no-arguments-tool", "category": "happy", "utterance": "u",
         "expect": {"tool": "mcp__notes__list_notes"}},
        {"id": "missing-tool", "category": "happy", "utterance": "u",
         "expect": {"tool": "mcp__gone__search"}},
        {"id": "trap", "category": "trap", "utterance": "u", "expect": {"noTool": true}}
    ]));
    let checks = check_assertions(&set, &tools(), 4).await;
    let of = |id: &str| checks.iter().find(|c| c.id == id).unwrap();
    assert!(of("good").broken.is_empty(), "{:?}", of("good"));
    assert!(of("trap").broken.is_empty(), "{:?}", of("trap"));
    assert_eq!(
        of("permissive-regex").broken,
        [
            "passes under always:mcp__notes__search with decoy arguments: its argument match accepts anything"
        ]
    );
    assert!(of("any-arguments").broken[0].contains("accepts anything"));
    assert!(of("no-arguments-tool").broken.is_empty());
    assert!(of("no-arguments-tool").notes[0].contains("takes no arguments"));
    assert!(of("missing-tool").broken[0].contains("can never pass"));
}

async fn tickets_host(lockfile: &Path) -> (Host, switchboard_demo::tickets::Running) {
    let tickets = switchboard_demo::tickets::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let text =
        json!({"mcpServers": {"tickets": {"type": "http", "url": tickets.url()}}}).to_string();
    let mut config = Config::parse(&text, ConfigOrigin::Demo, &BTreeMap::new()).unwrap();
    config.lockfile = Some(lockfile.to_path_buf());
    let mut options = MountOptions::default();
    options.token_store = None;
    let host = Host::mount(config, options).await.unwrap();
    (host, tickets)
}

#[tokio::test]
async fn against_pins_runs_the_approved_and_the_current_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let lockfile = dir.path().join("switchboard.lock");
    let (host, tickets) = tickets_host(&lockfile).await;
    host.accept_pins("tickets").unwrap();
    host.shutdown().await;
    tickets.stop().await;
    // The approved résumé said nothing of a summary; the server's does now.
    let mut lock: Value =
        serde_json::from_str(&std::fs::read_to_string(&lockfile).unwrap()).unwrap();
    let entry = &mut lock["tools"]["tickets"]["résumé"];
    entry["description"] = json!("The open tickets in one paragraph.");
    entry["sha256"] = json!("0000");
    std::fs::write(&lockfile, lock.to_string()).unwrap();

    let (host, tickets) = tickets_host(&lockfile).await;
    let views = PinnedViews::new(&host, &Pins::open(&lockfile).unwrap());
    assert_eq!(views.changed, ["mcp__tickets__r_sum_"]);
    assert!(views.unrecorded.is_empty());
    let spec = |tools: &EvalTools| {
        tools
            .specs
            .iter()
            .find(|s| s.name == "mcp__tickets__r_sum_")
            .unwrap()
            .description
            .clone()
    };
    let approved = spec(&views.approved);
    let now = spec(&views.now);
    assert!(
        approved.starts_with("[from tickets] <untrusted-text"),
        "{approved}"
    );
    assert!(
        approved.contains("The open tickets in one paragraph."),
        "{approved}"
    );
    // Now: the server's text, without the host's "changed" notice.
    assert!(now.starts_with("[from tickets]"), "{now}");
    assert!(now.contains("summary"), "{now}");
    // Only the changed tool differs between the two lists.
    for (a, b) in views.approved.specs.iter().zip(&views.now.specs) {
        assert_eq!(a == b, a.name != "mcp__tickets__r_sum_", "{}", a.name);
    }

    let set = cases(json!([
        {"id": "overview", "category": "happy", "utterance": "Give me an overview of the open tickets",
         "expect": {"tool": {"alias": "tickets", "name": "résumé"}}},
        {"id": "by-id", "category": "happy", "utterance": "Show me ticket T-1",
         "expect": {"tool": "mcp__tickets__get_ticket", "arguments": {"exact": {"id": "T-1"}}}}
    ]));
    let model: Arc<dyn Model> = Arc::new(KeywordSelector);
    let options = RunOptions::default();
    let approved = run_cases(model.clone(), &set, &views.approved, &options).await;
    let approved = Report::build("mock", &approved, &Policy::default(), Duration::ZERO);
    let now = run_cases(model, &set, &views.now, &options).await;
    let now = Report::build("mock", &now, &Policy::default(), Duration::ZERO);
    let comparison = PinComparison::new(&views, approved, now);
    assert!(comparison.broken.is_empty(), "{comparison:?}");
    assert_eq!(comparison.changes.len(), 1);
    assert_eq!(comparison.changes[0].id, "overview");
    assert_eq!(comparison.changes[0].kind, ChangeKind::Improvement);
    host.shutdown().await;
    tickets.stop().await;
}

/// The repository's `evals/` folder.
fn evals_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals")
}

#[test]
fn the_schema_and_the_reader_agree_on_the_case_files() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(evals_dir().join("schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::options().offline().build(&schema).unwrap();
    let mut files = 0;
    for entry in std::fs::read_dir(evals_dir()).unwrap() {
        let path = entry.unwrap().path();
        // Case files are `*.json` (as `eval` finds them); the scripted
        // model's answers (`demo.script.jsonl`) live beside them.
        if path.file_name().unwrap() == "schema.json"
            || path.extension().is_none_or(|x| x != "json")
        {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        assert!(parse(&path, &text).is_ok(), "{}", path.display());
    }
    assert!(files >= 1);
    // The demo's starter set: at least 10 cases, happy / edge / trap 4:3:3.
    let path = evals_dir().join("demo.json");
    let set = parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let count = |c| set.iter().filter(|x| x.category == c).count();
    let (h, e, t) = (
        count(Category::Happy),
        count(Category::Edge),
        count(Category::Trap),
    );
    assert!(set.len() >= 10);
    assert_eq!((h * 3, h * 3), (e * 4, t * 4), "{h}/{e}/{t}");
    // What the reader refuses, the schema refuses too.
    let case = |extra: Value| {
        let mut c =
            json!({"id": "x", "category": "happy", "utterance": "u", "expect": {"tool": "t"}});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        json!({"cases": [c]})
    };
    for bad in [
        case(json!({"category": "sometimes"})),
        case(json!({"conversation": [{"role": "user", "content": "u"}]})),
        case(json!({"expect": {"tool": "t", "noTool": true}})),
        case(json!({"expect": {"noTool": true, "arguments": {"exact": {}}}})),
        case(json!({"expect": {"tool": "t", "arguments": {}}})),
        case(json!({"expect": {"tool": "t", "arguments": {"exact": {}, "fields": {}}}})),
        case(json!({"expect": {"tool": "t", "arguments": {"fields": {"q": {"like": "x"}}}}})),
        case(json!({"expect": {"tool": {"alias": "a"}}})),
        case(json!({"surprise": 1})),
        json!({"cases": []}),
    ] {
        assert!(!validator.is_valid(&bad), "schema accepts {bad}");
        let read = parse(Path::new("bad.json"), &bad.to_string());
        assert!(
            read.is_err() || read.is_ok_and(|c| c.is_empty()),
            "reader accepts {bad}"
        );
    }
}
