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
use switchboard_host::{AssumeYes, Config, ConfigOrigin, Host, MountOptions};

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
        let guard = DropCount(self.dropped.clone());
        Box::pin(async move {
            if call.name.ends_with("hang") {
                std::future::pending::<()>().await;
            }
            drop(guard);
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
        r#"{"tool_calls": [{"name": "mcp__fake__hang", "arguments": {}}, {"name": "mcp__fake__echo", "arguments": {}}]}
{"expect": [{"is_error": true, "contains": "cancelled"}, {"is_error": true, "contains": "Not run"}], "text": "ok, stopped"}"#,
    );
    let mut agent = Agent::new(model, fake.clone(), AgentOptions::default());
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let sink = EventSink::new(move |e| {
        if matches!(e, AgentEvent::ToolCall { name, .. } if name.ends_with("hang")) {
            c.cancel();
        }
    });
    let end = agent.run("go", &sink, &cancel).await;
    assert_eq!(end.stop, TurnStop::Cancelled);
    assert_eq!(
        fake.dropped.load(Ordering::SeqCst),
        1,
        "the call's future was dropped"
    );
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        1,
        "the second call never ran"
    );
    // The next prompt joins the results' message: roles still alternate,
    // and the model sees why the calls did not finish.
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
