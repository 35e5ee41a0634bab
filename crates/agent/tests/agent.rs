//! The loop: scripted models over a fake toolbox and over a real host
//! with the tickets demo server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard_agent::{
    Agent, AgentEvent, AgentOptions, BoxFuture, CancelToken, EventFn, EventSink, HostToolbox,
    Model, ModelError, ModelRequest, Role, ScriptedModel, ToolCall, ToolOutcome, ToolSpec, Toolbox,
    TurnOutput, TurnStop,
};
use switchboard_host::{AssumeYes, Config, ConfigOrigin, Host, MountOptions, PromptApprover};

/// A toolbox whose outage text and behaviour the test controls.
#[derive(Debug, Default)]
struct Fake {
    outage: Mutex<Option<String>>,
    calls: AtomicUsize,
    /// Calls of `hang` never finish; this counts the ones dropped.
    dropped: Arc<AtomicUsize>,
}

struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Toolbox for Fake {
    fn tools(&self) -> Arc<[ToolSpec]> {
        ["echo", "hang"]
            .iter()
            .map(|n| ToolSpec {
                name: format!("mcp__fake__{n}"),
                description: "[from fake]".into(),
                input_schema: json!({"type": "object"}).as_object().unwrap().clone(),
                server: Some("fake".into()),
            })
            .collect()
    }

    fn outage_text(&self) -> Option<String> {
        self.outage.lock().unwrap().clone()
    }

    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        _events: &'a EventSink,
    ) -> BoxFuture<'a, ToolOutcome> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let hang = call
            .name
            .ends_with("hang")
            .then(|| DropCount(self.dropped.clone()));
        Box::pin(async move {
            if let Some(_dropped) = hang {
                std::future::pending::<()>().await;
            }
            ToolOutcome {
                text: format!("echo {}", call.arguments),
                is_error: false,
                outcome: "ok".into(),
            }
        })
    }
}

fn script(text: &str) -> Arc<dyn Model> {
    Arc::new(ScriptedModel::parse("test", text).unwrap())
}

fn collect() -> (EventSink, Arc<Mutex<Vec<AgentEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    (
        EventSink::new(move |ev| e.lock().unwrap().push(ev.clone())),
        events,
    )
}

fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_round_trip_ends_when_the_model_stops() {
    let fake = Arc::new(Fake::default());
    let model = script(
        r#"{"text": "Calling.", "tool_calls": [{"name": "mcp__fake__echo", "arguments": {"x": 1}}], "usage": {"input_tokens": 10, "output_tokens": 3}}
{"expect": [{"is_error": false, "contains": "echo {\"x\":1}"}], "text": "Done.", "usage": {"input_tokens": 20, "output_tokens": 2}}"#,
    );
    let mut agent = Agent::new(model, fake.clone(), AgentOptions::default());
    let (sink, events) = collect();
    let end = agent.run("go", &sink, &CancelToken::new()).await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    assert_eq!(end.text, "Calling.Done.");
    assert_eq!(end.usage.input_tokens, 30);
    assert_eq!(end.model_calls, 2);
    let events = events.lock().unwrap();
    assert_eq!(
        kinds(&events),
        ["text", "tool_call", "tool_result", "text", "usage", "done"]
    );
    assert!(matches!(&events[1], AgentEvent::ToolCall { server: Some(s), .. } if s == "fake"));
    let roles: Vec<Role> = agent.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}

#[tokio::test]
async fn the_loop_guard_ends_the_turn_on_the_third_identical_call() {
    let fake = Arc::new(Fake::default());
    let call = r#"{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {"a": 1, "b": 2}}]}"#;
    let reordered =
        r#"{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {"b": 2, "a": 1}}]}"#;
    let model = script(&format!("{call}\n{call}\n{reordered}\n{call}\n"));
    let mut agent = Agent::new(model, fake.clone(), AgentOptions::default());
    let (sink, events) = collect();
    let end = agent.run("go", &sink, &CancelToken::new()).await;
    assert_eq!(end.stop, TurnStop::LoopGuard);
    assert_eq!(end.model_calls, 3);
    // The third call was not run.
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
    let events = events.lock().unwrap();
    let last_result = events
        .iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::ToolResult { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(last_result, "loop_guard");
    assert!(matches!(
        events.last().unwrap(),
        AgentEvent::Done { stop: TurnStop::LoopGuard, message: Some(m) } if m.contains("3 times in a row")
    ));
}

#[tokio::test]
async fn different_arguments_reset_the_loop_guard() {
    let fake = Arc::new(Fake::default());
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {"a": 1}}]}
{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {"a": 1}}]}
{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {"a": 2}}]}
{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {"a": 2}}]}
{"text": "ok"}"#,
    );
    let mut agent = Agent::new(model, fake.clone(), AgentOptions::default());
    let end = agent
        .run("go", &EventSink::none(), &CancelToken::new())
        .await;
    assert_eq!(end.stop, TurnStop::EndTurn);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 4);
}

/// Records every system prompt it is given.
#[derive(Debug, Default)]
struct Recorder {
    systems: Mutex<Vec<String>>,
}

impl Model for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        _events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        let mut systems = self.systems.lock().unwrap();
        systems.push(request.system.clone());
        let n = systems.len();
        Box::pin(async move {
            Ok(TurnOutput {
                text: String::new(),
                tool_calls: if n == 1 {
                    vec![ToolCall {
                        id: "c".into(),
                        name: "mcp__fake__echo".into(),
                        arguments: json!({}),
                    }]
                } else {
                    Vec::new()
                },
                usage: Default::default(),
                stop: switchboard_agent::StopReason::EndTurn,
            })
        })
    }
}

#[tokio::test]
async fn the_outage_text_is_read_before_every_model_call() {
    let fake = Arc::new(Fake::default());
    let model = Arc::new(Recorder::default());
    let mut agent = Agent::new(model.clone(), fake.clone(), AgentOptions::default());
    *fake.outage.lock().unwrap() = Some("- tickets is down (gone)".into());
    // The outage ends while the first call runs: the second model call
    // must not hear of it any more.
    let f = fake.clone();
    let sink = EventSink::new(move |e| {
        if matches!(e, AgentEvent::ToolCall { .. }) {
            *f.outage.lock().unwrap() = None;
        }
    });
    agent.run("go", &sink, &CancelToken::new()).await;
    let systems = model.systems.lock().unwrap();
    assert_eq!(systems.len(), 2);
    assert!(systems[0].contains("tickets is down"), "{}", systems[0]);
    assert!(!systems[1].contains("tickets is down"), "{}", systems[1]);
    assert!(
        systems[0].contains("<untrusted-text"),
        "the prompt explains the markers"
    );
}

#[tokio::test]
async fn cancelling_drops_the_call_in_flight_and_the_conversation_goes_on() {
    let fake = Arc::new(Fake::default());
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__fake__echo", "arguments": {}}, {"name": "mcp__fake__hang", "arguments": {}}]}
{"expect": [{"is_error": false, "contains": "echo"}, {"is_error": true, "contains": "cancelled"}], "text": "ok, stopped"}"#,
    );
    let mut agent = Agent::new(model, fake.clone(), AgentOptions::default());
    let cancel = CancelToken::new();
    let c = cancel.clone();
    // The two calls run together: echo's result comes in while hang runs.
    let sink = EventSink::new(move |e| {
        if matches!(e, AgentEvent::ToolResult { name, .. } if name.ends_with("echo")) {
            c.cancel();
        }
    });
    let end = agent.run("go", &sink, &cancel).await;
    assert_eq!(end.stop, TurnStop::Cancelled);
    assert_eq!(
        fake.dropped.load(Ordering::SeqCst),
        1,
        "the hanging call's future was dropped"
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
    // The next prompt joins the results' message: roles still alternate,
    // and the model sees what finished and what did not.
    let end = agent
        .run("never mind", &EventSink::none(), &CancelToken::new())
        .await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    let roles: Vec<Role> = agent.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}

/// Calls of `meet` wait until `n` of them are in flight at once (a bounded
/// wait: a loop running them one after another gets a "met alone" error),
/// then finish in reverse order of their `i`, so results in the model's
/// order prove the loop reordered them.
#[derive(Debug)]
struct Meeting {
    n: usize,
    /// Calls arrived, calls finished.
    state: tokio::sync::watch::Sender<(usize, usize)>,
}

impl Toolbox for Meeting {
    fn tools(&self) -> Arc<[ToolSpec]> {
        Arc::new([ToolSpec {
            name: "mcp__fake__meet".into(),
            description: "[from fake]".into(),
            input_schema: json!({"type": "object"}).as_object().unwrap().clone(),
            server: Some("fake".into()),
        }])
    }

    fn outage_text(&self) -> Option<String> {
        None
    }

    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        _events: &'a EventSink,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let i = usize::try_from(call.arguments["i"].as_u64().unwrap()).unwrap();
            let mut rx = self.state.subscribe();
            self.state.send_modify(|s| s.0 += 1);
            let bound = std::time::Duration::from_secs(20);
            let n = self.n;
            if tokio::time::timeout(bound, rx.wait_for(|s| s.0 >= n))
                .await
                .is_err()
            {
                return ToolOutcome {
                    text: format!("meet {i} met alone"),
                    is_error: true,
                    outcome: "tool_error".into(),
                };
            }
            let turn = n - 1 - i;
            let _ = tokio::time::timeout(bound, rx.wait_for(|s| s.1 >= turn)).await;
            self.state.send_modify(|s| s.1 += 1);
            ToolOutcome {
                text: format!("meet {i}"),
                is_error: false,
                outcome: "ok".into(),
            }
        })
    }
}

#[tokio::test]
async fn the_calls_of_one_turn_run_together_and_come_back_in_order() {
    let meeting = Arc::new(Meeting {
        n: 3,
        state: tokio::sync::watch::channel((0, 0)).0,
    });
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__fake__meet", "arguments": {"i": 0}}, {"name": "mcp__fake__meet", "arguments": {"i": 1}}, {"name": "mcp__fake__meet", "arguments": {"i": 2}}]}
{"expect": [{"is_error": false, "contains": "meet 0"}, {"is_error": false, "contains": "meet 1"}, {"is_error": false, "contains": "meet 2"}], "text": "all met"}"#,
    );
    let mut agent = Agent::new(model, meeting, AgentOptions::default());
    let (sink, events) = collect();
    let end = agent.run("go", &sink, &CancelToken::new()).await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    assert_eq!(end.text, "all met");
    // Reported in the model's order too, each after its call.
    let events = events.lock().unwrap().clone();
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { id, .. } => Some(format!("call {id}")),
            AgentEvent::ToolResult { id, .. } => Some(format!("result {id}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "call call_1_0",
            "call call_1_1",
            "call call_1_2",
            "result call_1_0",
            "result call_1_1",
            "result call_1_2"
        ]
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_refused_without_a_call() {
    let fake = Arc::new(Fake::default());
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__fake__echo", "arguments": "{not json"}]}
{"expect": [{"is_error": true, "contains": "must be a JSON object"}], "text": "sorry"}"#,
    );
    let mut agent = Agent::new(model, fake.clone(), AgentOptions::default());
    let end = agent
        .run("go", &EventSink::none(), &CancelToken::new())
        .await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_turn_limit() {
    let fake = Arc::new(Fake::default());
    let lines: Vec<String> = (0..5)
        .map(|i| {
            format!(
                r#"{{"tool_calls": [{{"name": "mcp__fake__echo", "arguments": {{"i": {i}}}}}]}}"#
            )
        })
        .collect();
    let mut options = AgentOptions::default();
    options.max_model_calls = 3;
    let mut agent = Agent::new(script(&lines.join("\n")), fake.clone(), options);
    let end = agent
        .run("go", &EventSink::none(), &CancelToken::new())
        .await;
    assert_eq!(end.stop, TurnStop::TurnLimit);
    assert_eq!(end.model_calls, 3);
}

#[tokio::test]
async fn a_model_error_ends_the_turn_with_an_error_event() {
    let fake = Arc::new(Fake::default());
    let model = script(r#"{"expect": [{"contains": "x"}], "text": "never"}"#);
    let mut agent = Agent::new(model, fake, AgentOptions::default());
    let (sink, events) = collect();
    let end = agent.run("go", &sink, &CancelToken::new()).await;
    assert_eq!(end.stop, TurnStop::Error);
    assert!(end.error.unwrap().contains("expected 1 tool result"));
    assert_eq!(kinds(&events.lock().unwrap()), ["error", "usage", "done"]);
}

async fn tickets_host() -> (Host, switchboard_demo::tickets::Running) {
    let tickets = switchboard_demo::tickets::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let text =
        json!({"mcpServers": {"tickets": {"type": "http", "url": tickets.url()}}}).to_string();
    let config = Config::parse(&text, ConfigOrigin::Demo, &BTreeMap::new()).unwrap();
    let mut options = MountOptions::default();
    options.token_store = None;
    let host = Host::mount(config, options).await.unwrap();
    (host, tickets)
}

#[tokio::test]
async fn through_the_host_with_approval_and_progress_events() {
    let (host, tickets) = tickets_host().await;
    let toolbox = Arc::new(HostToolbox::new(host.clone(), Some(Arc::new(AssumeYes))));
    assert!(
        toolbox
            .tools()
            .iter()
            .any(|t| t.name == "mcp__tickets__search")
    );
    let model = script(
        r#"{"tool_calls": [{"name": "mcp__tickets__search", "arguments": {"query": "printer"}}]}
{"expect": [{"is_error": false, "contains": "T-1"}], "tool_calls": [{"name": "mcp__tickets__nope", "arguments": {}}]}
{"expect": [{"is_error": true}], "text": "done"}"#,
    );
    let mut agent = Agent::new(model, toolbox, AgentOptions::default());
    let (sink, events) = collect();
    let end = agent
        .run("find printer tickets", &sink, &CancelToken::new())
        .await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    let events = events.lock().unwrap().clone();
    let k = kinds(&events);
    assert_eq!(
        &k[..4],
        ["tool_call", "approval", "progress", "tool_result"],
        "{k:?}"
    );
    assert!(matches!(&events[0], AgentEvent::ToolCall { server: Some(s), .. } if s == "tickets"));
    assert!(
        matches!(&events[1], AgentEvent::Approval { decision, arguments, .. } if decision == "allow_once" && arguments["query"] == "printer")
    );
    // Server text reaches the model inside the boundary markers.
    assert!(
        matches!(&events[3], AgentEvent::ToolResult { text, outcome, .. } if text.contains("<untrusted-text source=\"tickets\"") && outcome == "ok")
    );
    host.shutdown().await;
    tickets.stop().await;
}

/// The host's tool list is built once and kept until the host reports a
/// table change: here `pins accept`, after which what the model reads of
/// the accepted tools changed.
#[tokio::test]
async fn the_tool_list_is_kept_until_the_table_changes() {
    let (host, tickets) = tickets_host().await;
    let toolbox = HostToolbox::new(host.clone(), None);
    let first = toolbox.tools();
    assert!(
        Arc::ptr_eq(&first, &toolbox.tools()),
        "rebuilt without a change"
    );
    host.accept_pins("tickets").unwrap();
    let after = toolbox.tools();
    assert!(!Arc::ptr_eq(&first, &after), "a table change was missed");
    assert_eq!(first.len(), after.len());
    assert!(Arc::ptr_eq(&after, &toolbox.tools()));
    host.shutdown().await;
    tickets.stop().await;
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Through a real host: three calls of the mock server's `gather`, each
/// asked about at the prompt (one question at a time, none interleaved),
/// are in flight at the server at once (`gather` answers with an error
/// when they do not all arrive within its bound) and come back in the
/// model's order although the server answers the last one first.
#[tokio::test]
async fn parallel_calls_through_the_gate_meet_at_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"name": "gather", "inputSchema": {"type": "object"}}]).to_string(),
    )
    .unwrap();
    let mock =
        switchboard_testutil::built("switchboard-testkit", switchboard_testutil::Artifacts::Bins)
            .join("mock-server");
    let text = json!({"mcpServers": {"mock": {
        "command": mock,
        "args": ["--tools-file", tools],
    }}})
    .to_string();
    let config = Config::parse(&text, ConfigOrigin::Demo, &BTreeMap::new()).unwrap();
    let mut options = MountOptions::default();
    options.token_store = None;
    let host = Host::mount(config, options).await.unwrap();
    let asked = Shared::default();
    let prompt = PromptApprover::new(std::io::Cursor::new(b"y\ny\ny\n".to_vec()), asked.clone());
    let toolbox = Arc::new(HostToolbox::new(host.clone(), Some(Arc::new(prompt))));
    let call = |i: u32| json!({"name": "mcp__mock__gather", "arguments": {"count": 3, "index": i, "timeout_ms": 20_000}});
    let model = script(&format!(
        "{}\n{}",
        json!({"tool_calls": [call(0), call(1), call(2)]}),
        json!({"expect": [
            {"is_error": false, "contains": "gathered 0"},
            {"is_error": false, "contains": "gathered 1"},
            {"is_error": false, "contains": "gathered 2"},
        ], "text": "gathered"}),
    ));
    let mut agent = Agent::new(model, toolbox, AgentOptions::default());
    let (sink, events) = collect();
    let end = agent.run("go", &sink, &CancelToken::new()).await;
    assert_eq!(end.stop, TurnStop::EndTurn, "{end:?}");
    let approvals = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::Approval { decision, .. } if decision == "allow_once"))
        .count();
    assert_eq!(approvals, 3);
    // Each question is whole (its choices line ends it) before the next.
    let asked = String::from_utf8(asked.0.lock().unwrap().clone()).unwrap();
    let questions: Vec<&str> = asked
        .split("Switchboard: a tool call needs your approval")
        .skip(1)
        .collect();
    assert_eq!(questions.len(), 3, "{asked}");
    for q in questions {
        assert_eq!(q.matches("[N] deny: ").count(), 1, "{asked}");
        assert!(q.ends_with("[N] deny: "), "{asked}");
    }
    host.shutdown().await;
}
