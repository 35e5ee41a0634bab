//! The loop's own cost per tool round trip: one prompt whose model (a
//! stand-in answering at once) calls one tool and then stops, against a
//! bare `Host::call` of the same tool. Both go to the tickets demo server
//! (Streamable HTTP on 127.0.0.1, in this process); the difference is the
//! loop: two model turns, the tool list and outage text read before each,
//! the events, the loop guard, the conversation.
//!
//! Run: `cargo bench -p switchboard-agent --bench round_trip`

use std::collections::BTreeMap;
use std::sync::Arc;

use criterion::{Criterion, criterion_main};
use serde_json::json;
use switchboard_agent::{
    Agent, AgentOptions, BoxFuture, CancelToken, Content, EventFn, EventSink, HostToolbox, Model,
    ModelError, ModelRequest, StopReason, ToolCall, TurnOutput, Usage,
};
use switchboard_host::{CallOptions, Config, ConfigOrigin, Host, MountOptions};

/// Calls `get_ticket` when given a prompt, stops when given its result.
#[derive(Debug)]
struct AtOnce;

impl Model for AtOnce {
    fn name(&self) -> String {
        "at-once".into()
    }

    fn turn<'a>(
        &'a self,
        request: &'a ModelRequest,
        _events: EventFn<'a>,
    ) -> BoxFuture<'a, Result<TurnOutput, ModelError>> {
        let answered = request.messages.last().is_some_and(|m| {
            m.content
                .iter()
                .any(|c| matches!(c, Content::ToolResult { .. }))
        });
        Box::pin(async move {
            Ok(if answered {
                TurnOutput {
                    text: "T-1 is about the printer.".into(),
                    tool_calls: Vec::new(),
                    usage: Usage::default(),
                    stop: StopReason::EndTurn,
                }
            } else {
                TurnOutput {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "mcp__tickets__get_ticket".into(),
                        arguments: json!({"id": "T-1"}),
                    }],
                    usage: Usage::default(),
                    stop: StopReason::ToolUse,
                }
            })
        })
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (host, tickets) = rt.block_on(async {
        let tickets = switchboard_demo::tickets::start("127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("the tickets demo starts");
        let text = json!({
            "mcpServers": {"tickets": {"type": "http", "url": tickets.url()}},
            "permissions": {"allow": ["mcp__tickets__get_ticket"]},
        })
        .to_string();
        let config = Config::parse(&text, ConfigOrigin::Demo, &BTreeMap::new()).expect("config");
        let mut options = MountOptions::default();
        options.token_store = None;
        let host = Host::mount(config, options).await.expect("mount");
        (host, tickets)
    });
    let args = json!({"id": "T-1"}).as_object().cloned();
    let mut group = c.benchmark_group("tool_round_trip");
    group.bench_function("bare_host_call", |b| {
        b.iter(|| {
            rt.block_on(host.call(
                "mcp__tickets__get_ticket",
                args.clone(),
                CallOptions::default(),
            ))
        });
    });
    let model: Arc<dyn Model> = Arc::new(AtOnce);
    let toolbox = Arc::new(HostToolbox::new(host.clone(), None));
    let events = EventSink::none();
    let cancel = CancelToken::new();
    group.bench_function("agent_loop", |b| {
        b.iter(|| {
            let mut agent = Agent::new(model.clone(), toolbox.clone(), AgentOptions::default());
            rt.block_on(agent.run("what is T-1?", &events, &cancel))
        });
    });
    group.finish();
    rt.block_on(async {
        host.shutdown().await;
        tickets.stop().await;
    });
}

// criterion_group! generates an undocumented function.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::bench);
}
use group::benches;
criterion_main!(benches);
