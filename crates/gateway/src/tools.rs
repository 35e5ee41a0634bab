//! The served tools: one registration per tool of the host's table, kept
//! in step with it, and each call run through the host's governed path.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use switchboard_host::{Approval, Approver, AssumeYes, CallOptions, Host, ModelTool};
use switchboard_server::{Context, Server, ToolResult, ToolSpec};
use switchboard_wire::ProgressParams;
use tokio::sync::{broadcast, mpsc};

use crate::GatewayOptions;
use crate::approval::{APPROVAL_KEY, Answered, ApprovalForm, NoOneUpstream, ask, gate_asks};

/// How many progress notifications may wait for the upstream stream; more
/// are dropped (progress is advisory, the result is not).
const PROGRESS_QUEUE: usize = 32;

/// Registers every tool of the table; returns the names registered.
pub(crate) fn register_all(
    server: &Server,
    host: &Host,
    options: &GatewayOptions,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for tool in host.tools() {
        if register(server, host, &tool, options) {
            names.insert(tool.name.clone());
        }
    }
    names
}

/// Registers one tool; `false` (with a warning) when the framework refuses
/// its schema.
fn register(server: &Server, host: &Host, tool: &ModelTool, options: &GatewayOptions) -> bool {
    let mut spec = ToolSpec::new(&tool.name)
        .description(&tool.description)
        .input_schema(Value::Object(tool.input_schema.clone()));
    if let Some(title) = &tool.title {
        spec = spec.title(title);
    }
    let host = host.clone();
    let name = tool.name.clone();
    let yes = options.assume_yes;
    let handler = move |args: Value, ctx: Context| {
        let host = host.clone();
        let name = name.clone();
        async move { call(&host, &name, args, &ctx, yes).await }
    };
    match server.add_tool(spec, handler) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(tool = %tool.name, error = %e, "the gateway cannot serve this tool");
            false
        }
    }
}

/// Keeps the served tools in step with the table.
pub(crate) async fn follow_changes(
    host: Host,
    server: Server,
    options: GatewayOptions,
    mut registered: BTreeSet<String>,
    mut changes: broadcast::Receiver<switchboard_host::TableChange>,
) {
    loop {
        match changes.recv().await {
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                // Re-read the whole table: simpler than replaying the
                // change, and right after a lag too.
                let tools = host.tools();
                let now: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
                for gone in registered.difference(&now) {
                    server.remove_tool(gone);
                }
                registered.retain(|n| now.contains(n));
                for tool in &tools {
                    // A changed definition is served anew.
                    if registered.contains(&tool.name) {
                        server.remove_tool(&tool.name);
                    }
                    if register(&server, &host, tool, &options) {
                        registered.insert(tool.name.clone());
                    } else {
                        registered.remove(&tool.name);
                    }
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// One `tools/call` through the host.
async fn call(host: &Host, name: &str, args: Value, ctx: &Context, yes: bool) -> ToolResult {
    let arguments = match args {
        Value::Object(map) => Some(map),
        _ => None,
    };
    let approver: Arc<dyn Approver> = if yes {
        Arc::new(AssumeYes)
    } else if ctx.has_state() {
        // The retry of a call whose approval we asked for.
        ctx.consume_state()?;
        match ctx.input().elicitation(APPROVAL_KEY)? {
            None => return Ok(ask(name, arguments.as_ref()).into()),
            Some(answer) => {
                let approved = answer
                    .content_as::<ApprovalForm>()?
                    .is_some_and(|f| f.approve);
                Arc::new(Answered(if approved {
                    Approval::AllowOnce
                } else {
                    Approval::Deny(Some(format!(
                        "The user declined this call of {name}. Do not retry it unless the user asks."
                    )))
                }))
            }
        }
    } else if ctx.client_capabilities().supports_elicitation_form() && gate_asks(host, name) {
        return Ok(ask(name, arguments.as_ref()).into());
    } else {
        Arc::new(NoOneUpstream)
    };

    let mut options = CallOptions::default();
    options.approver = Some(approver);
    if !ctx.wants_progress() {
        // Nothing to relay: no queue, no second future to poll.
        let report = host.call_detailed(name, arguments, options).await;
        return Ok(report.result.into());
    }
    let (tx, mut rx) = mpsc::channel::<ProgressParams>(PROGRESS_QUEUE);
    options = options.with_progress(move |p| {
        let _ = tx.try_send(p);
    });
    let call = host.call_detailed(name, arguments, options);
    tokio::pin!(call);
    let report = loop {
        tokio::select! {
            report = &mut call => break report,
            Some(p) = rx.recv() => ctx.progress(p.progress, p.total, p.message.as_deref()).await,
        }
    };
    Ok(report.result.into())
}
