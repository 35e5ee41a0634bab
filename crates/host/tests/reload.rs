//! `Host::reload`: servers added, dropped and changed by alias, the rest
//! untouched; rules swapped in; subscribers told. And the call observer.

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard_host::{
    AssumeYes, CallEvent, CallObserver, CallOptions, MountOptions, Outcome, ServerStatus,
    TraceContext, Verdict,
};

use crate::util::*;

#[tokio::test(flavor = "multi_thread")]
async fn reload_mounts_drops_and_replaces_servers_by_alias() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({"mcpServers": {
            "keep": stdio(&["--name", "keep"]),
            "gone": stdio(&["--name", "gone"]),
            "edit": stdio(&["--name", "edit"])
        }}))
        .await;
    let before = host
        .call("mcp__keep__pids", None, CallOptions::approver(AssumeYes))
        .await;
    let mut changes = host.subscribe();

    let config = dir.config(json!({
        "mcpServers": {
            "keep": stdio(&["--name", "keep"]),
            "edit": stdio(&["--name", "edit", "--extra-tools", "1"]),
            "new": stdio(&["--name", "new"])
        },
        "permissions": {"deny": ["mcp__keep__echo"]}
    }));
    let report = host.reload(config).await;
    assert_eq!(report.added, ["new"]);
    assert_eq!(report.removed, ["gone"]);
    assert_eq!(report.changed, ["edit"]);
    assert_eq!(report.unchanged, ["keep"]);
    assert!(report.needs_restart.is_empty(), "{report:?}");

    let servers: Vec<(String, ServerStatus)> = host
        .servers()
        .into_iter()
        .map(|s| (s.alias, s.status))
        .collect();
    assert_eq!(
        servers,
        [
            ("keep".to_owned(), ServerStatus::Up),
            ("edit".to_owned(), ServerStatus::Up),
            ("new".to_owned(), ServerStatus::Up)
        ]
    );
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert!(names.iter().any(|n| n == "mcp__new__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__gone__")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n == "mcp__edit__filler_1"),
        "{names:?}"
    );

    // The kept server is the same process: its pid did not change.
    let after = host
        .call("mcp__keep__pids", None, CallOptions::approver(AssumeYes))
        .await;
    assert_eq!(
        before.structured_content.as_ref().unwrap()["pid"],
        after.structured_content.as_ref().unwrap()["pid"]
    );
    // The new rule applies.
    let denied = host
        .call_detailed("mcp__keep__echo", None, CallOptions::approver(AssumeYes))
        .await;
    assert_eq!(denied.outcome, Outcome::Denied);

    // Subscribers heard of the new and dropped tools.
    let mut added = Vec::new();
    let mut removed = Vec::new();
    while let Ok(change) = changes.try_recv() {
        added.extend(change.added);
        removed.extend(change.removed);
    }
    assert!(added.iter().any(|n| n == "mcp__new__echo"), "{added:?}");
    assert!(
        removed.iter().any(|n| n == "mcp__gone__echo"),
        "{removed:?}"
    );
    host.shutdown().await;
}

#[derive(Debug, Default)]
struct Seen(Mutex<Vec<String>>);

impl CallObserver for Seen {
    fn call_ended(&self, call: &CallEvent<'_>) {
        self.0.lock().unwrap().push(format!(
            "{} {:?} {:?} {:?} {}",
            call.tool,
            call.alias,
            call.gate.map(Verdict::as_str),
            call.outcome,
            call.trace.map_or("-", |t| t.traceparent.as_str())
        ));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_observer_hears_every_call_once_with_its_trace() {
    let dir = Dir::new();
    let seen = Arc::new(Seen::default());
    let mut options: MountOptions = dir.options();
    options.observer = Some(seen.clone());
    let config = dir.config(json!({
        "mcpServers": {"m": stdio(&[])},
        "permissions": {"allow": ["mcp__m__echo"], "deny": ["mcp__m__error"]}
    }));
    let host = switchboard_host::Host::mount(config, options)
        .await
        .unwrap();
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let mut traced = CallOptions::default();
    traced.request.trace = Some(TraceContext {
        traceparent: tp.into(),
        tracestate: Some("k=v".into()),
        parent_span_id: None,
    });
    let r = host.call("mcp__m__echo", None, traced).await;
    // The trace context reached the server in `_meta`.
    let meta = &r.structured_content.as_ref().unwrap()["params"]["_meta"];
    assert_eq!(meta["traceparent"], tp);
    assert_eq!(meta["tracestate"], "k=v");
    host.call("mcp__m__error", None, CallOptions::default())
        .await;
    host.call("mcp__m__fail", None, CallOptions::approver(AssumeYes))
        .await;
    host.call("nope", None, CallOptions::default()).await;
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            format!("mcp__m__echo Some(\"m\") Some(\"allow\") Ok {tp}"),
            "mcp__m__error Some(\"m\") Some(\"deny\") Denied -".to_owned(),
            "mcp__m__fail Some(\"m\") Some(\"ask\") ToolError -".to_owned(),
            "nope None None UnknownTool -".to_owned(),
        ]
    );
    host.shutdown().await;
}
