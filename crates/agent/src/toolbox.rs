//! Where the loop's tools come from: a [`Toolbox`]. The host is the usual
//! one ([`HostToolbox`]: governed calls, approvals, progress); evals can
//! plug in one that records calls instead of running them.

use std::sync::{Arc, Mutex, PoisonError};

use switchboard_host::approver::BoxFuture as ApproveFuture;
use switchboard_host::sanitize;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, CallOptions, Decider, Host, TableChange,
};
use switchboard_wire::{CallToolResult, ContentBlock};
use tokio::sync::broadcast;

use crate::event::{AgentEvent, EventSink};
use crate::model::{BoxFuture, ToolCall, ToolSpec};

/// The result of one tool call, as the model gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The text (server text inside boundary markers).
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// What happened, in one word (`ok`, `tool_error`, `denied`,
    /// `transport`, …: the audit log's outcome for the host).
    pub outcome: String,
}

/// Tools for the loop.
pub trait Toolbox: Send + Sync + std::fmt::Debug {
    /// The tools, in a stable order (shared: the loop sends the same list
    /// on every turn until it changes).
    fn tools(&self) -> Arc<[ToolSpec]>;
    /// Text for the system prompt about tools that are unavailable
    /// (asked again before every model turn).
    fn outage_text(&self) -> Option<String>;
    /// The skills servers offer, for the system prompt (id, name,
    /// description, origin; never their content), asked again before
    /// every model turn; none by default.
    fn skills_text(&self) -> Option<String> {
        None
    }
    /// Runs one call (its arguments are an object). Never fails: a
    /// failure is an error outcome the model can read. Dropping the future
    /// cancels the call.
    fn call<'a>(&'a self, call: &'a ToolCall, events: &'a EventSink) -> BoxFuture<'a, ToolOutcome>;
}

/// The host's governed tools: every call goes through `Host::call` (gate,
/// approver, budget, audit), with approvals and progress reported as
/// [`AgentEvent`]s. The tool list is built once and again only after the
/// host reports a table change ([`Host::subscribe`]), not on every turn.
#[derive(Debug, Clone)]
pub struct HostToolbox {
    host: Host,
    approver: Option<Arc<dyn Approver>>,
    tools: Arc<Mutex<ToolCache>>,
}

/// The tool list as last built, and the host's change feed that says when
/// it is stale.
#[derive(Debug)]
struct ToolCache {
    tools: Option<Arc<[ToolSpec]>>,
    changes: broadcast::Receiver<TableChange>,
}

impl HostToolbox {
    /// The host's tools; `approver` answers the gate's questions (none:
    /// they are denied with a message saying how to approve).
    pub fn new(host: Host, approver: Option<Arc<dyn Approver>>) -> HostToolbox {
        let changes = host.subscribe();
        HostToolbox {
            host,
            approver,
            tools: Arc::new(Mutex::new(ToolCache {
                tools: None,
                changes,
            })),
        }
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }
}

impl Toolbox for HostToolbox {
    fn tools(&self) -> Arc<[ToolSpec]> {
        let mut cache = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        // Any change (or a missed one) since the last build makes it stale.
        let mut stale = cache.tools.is_none();
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = cache.changes.try_recv()
        {
            stale = true;
        }
        if let (false, Some(tools)) = (stale, &cache.tools) {
            self.host.wake_stale();
            return tools.clone();
        }
        let mut tools: Vec<ToolSpec> = self
            .host
            .tools()
            .into_iter()
            .map(|t| ToolSpec {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
                server: Some(t.server),
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let tools: Arc<[ToolSpec]> = tools.into();
        cache.tools = Some(tools.clone());
        tools
    }

    fn outage_text(&self) -> Option<String> {
        self.host.outage_text()
    }

    fn skills_text(&self) -> Option<String> {
        self.host.skills_prompt()
    }

    fn call<'a>(&'a self, call: &'a ToolCall, events: &'a EventSink) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let mut options = CallOptions::default();
            if let Some(inner) = &self.approver {
                options.approver = Some(Arc::new(Reporting {
                    inner: inner.clone(),
                    events: events.clone(),
                    id: call.id.clone(),
                }));
            }
            let sink = events.clone();
            let id = call.id.clone();
            let options = options.with_progress(move |p| {
                sink.emit(&AgentEvent::Progress {
                    id: id.clone(),
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                });
            });
            let arguments = call.arguments.as_object().cloned();
            let report = self
                .host
                .call_detailed(&call.name, arguments, options)
                .await;
            // The server is needed only to mark non-text blocks.
            let all_text = !report.result.content.is_empty()
                && report
                    .result
                    .content
                    .iter()
                    .all(|b| matches!(b, ContentBlock::Text { .. }));
            let server = if all_text {
                None
            } else {
                self.tools()
                    .iter()
                    .find(|t| t.name == call.name)
                    .and_then(|t| t.server.clone())
            };
            ToolOutcome {
                text: result_text(&report.result, server.as_deref(), &call.name),
                is_error: report.result.is_error(),
                outcome: serde_json::to_value(report.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            }
        })
    }
}

/// A result as text for the model: text blocks as the host gave them
/// (server text already inside boundary markers), other blocks as JSON
/// inside markers of their own.
pub fn result_text(result: &CallToolResult, server: Option<&str>, tool: &str) -> String {
    let mut parts = Vec::new();
    let wrap = |text: &str| sanitize::wrap(server.unwrap_or("unknown"), Some(tool), text);
    for block in &result.content {
        match block {
            ContentBlock::Text { text, .. } => parts.push(text.clone()),
            ContentBlock::Image { mime_type, .. } | ContentBlock::Audio { mime_type, .. } => {
                parts.push(format!("[{mime_type} content, not shown]"));
            }
            other => parts.push(wrap(&serde_json::to_string(other).unwrap_or_default())),
        }
    }
    if parts.is_empty() {
        if let Some(s) = &result.structured_content {
            parts.push(wrap(&s.to_string()));
        }
    }
    parts.join("\n")
}

/// Passes each question to the real approver and reports the answer.
#[derive(Debug)]
struct Reporting {
    inner: Arc<dyn Approver>,
    events: EventSink,
    id: String,
}

impl Approver for Reporting {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApproveFuture<'a, Approval> {
        Box::pin(async move {
            let answer = self.inner.approve(request).await;
            self.events.emit(&AgentEvent::Approval {
                id: self.id.clone(),
                name: request.local_name.clone(),
                server: request.alias.clone(),
                arguments: request.arguments.clone(),
                decision: match &answer {
                    Approval::AllowOnce => "allow_once",
                    Approval::AllowAlways => "allow_always",
                    _ => "deny",
                }
                .to_owned(),
            });
            answer
        })
    }

    fn decider(&self) -> Decider {
        self.inner.decider()
    }
}
