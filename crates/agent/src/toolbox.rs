//! Where the loop's tools come from: a [`Toolbox`]. The host is the usual
//! one ([`HostToolbox`]: governed calls, approvals, progress); evals can
//! plug in one that records calls instead of running them.

use std::sync::{Arc, Mutex};

use switchboard_host::BoxFuture as ApproveFuture;
use switchboard_host::{
    Approval, ApprovalRequest, Approver, CallOptions, Decider, Host, LoadedTools, ModelTool,
    TableChange, ToolSearch,
};
use switchboard_wire::shared::lock;
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
    /// Text for the system prompt when the tool list is deferred: the
    /// servers the model can search (asked after [`Toolbox::tools`]).
    fn catalog_text(&self) -> Option<String> {
        None
    }
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
    /// When the table is deferred (the config's `toolSearch` unless told).
    search: ToolSearch,
    /// The model's context window, which `auto` measures against.
    context_window: u64,
    /// The tools this session found with `search_tools`.
    loaded: LoadedTools,
}

/// The tool list as last built, and the host's change feed that says when
/// it is stale.
#[derive(Debug)]
struct ToolCache {
    tools: Option<Arc<[ToolSpec]>>,
    changes: broadcast::Receiver<TableChange>,
    /// How many tools were loaded when the list was built.
    loaded: usize,
    /// Whether the list was deferred, and the token counts of the whole
    /// table and of the list sent.
    view: TableView,
}

/// How the tool list sent compares with the whole table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableView {
    /// Whether only some tools are sent (`search_tools` finds the rest).
    pub deferred: bool,
    /// Estimated tokens of every tool's definition.
    pub table_tokens: u64,
    /// Estimated tokens of the definitions sent.
    pub sent_tokens: u64,
}

impl HostToolbox {
    /// The host's tools; `approver` answers the gate's questions (none:
    /// they are denied with a message saying how to approve).
    pub fn new(host: Host, approver: Option<Arc<dyn Approver>>) -> HostToolbox {
        let changes = host.subscribe();
        let search = host.config().tool_search;
        HostToolbox {
            host,
            approver,
            tools: Arc::new(Mutex::new(ToolCache {
                tools: None,
                changes,
                loaded: 0,
                view: TableView::default(),
            })),
            search,
            context_window: crate::window::DEFAULT_CONTEXT_WINDOW,
            loaded: LoadedTools::new(),
        }
    }

    /// The same toolbox, deferring the table by `search` for a model with
    /// `context_window` tokens ([`crate::context_window`]).
    #[must_use]
    pub fn with_tool_search(mut self, search: ToolSearch, context_window: u64) -> HostToolbox {
        self.search = search;
        self.context_window = context_window;
        self
    }

    /// The tools this session loaded through `search_tools`.
    pub fn loaded(&self) -> &LoadedTools {
        &self.loaded
    }

    /// How the last tool list built compares with the whole table.
    pub fn view(&self) -> TableView {
        let _ = self.tools();
        lock(&self.tools).view
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }
}

impl Toolbox for HostToolbox {
    fn tools(&self) -> Arc<[ToolSpec]> {
        let mut cache = lock(&self.tools);
        // Any change (or a missed one) since the last build makes it stale.
        // So is a list built before the session loaded more tools.
        let mut stale = cache.tools.is_none() || cache.loaded != self.loaded.names().len();
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = cache.changes.try_recv()
        {
            stale = true;
        }
        if let (false, Some(tools)) = (stale, &cache.tools) {
            self.host.wake_stale();
            return tools.clone();
        }
        let mut all = self.host.tools();
        // The table's own size decides (the built-ins are sent anyway).
        let table: Vec<ModelTool> = all
            .iter()
            .filter(|t| t.server != switchboard_host::BUILTIN_ALIAS)
            .cloned()
            .collect();
        let table_tokens = Host::tools_tokens(&table);
        let deferred = self.search.defers(table_tokens, self.context_window);
        if deferred && !all.iter().any(|t| is_search_tool(&t.name)) {
            self.host.enable_tool_search();
            all = self.host.tools();
            // The registration's own change is in the feed: seen.
            while cache.changes.try_recv().is_ok() {}
        }
        let sent = if deferred {
            self.host.deferred_tools(&all, &self.loaded)
        } else {
            // With the whole table sent there is nothing to search.
            all.into_iter()
                .filter(|t| !is_search_tool(&t.name))
                .collect()
        };
        cache.view = TableView {
            deferred,
            table_tokens,
            sent_tokens: Host::tools_tokens(&sent),
        };
        cache.loaded = self.loaded.names().len();
        let mut tools: Vec<ToolSpec> = sent
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

    fn catalog_text(&self) -> Option<String> {
        if !self.view().deferred {
            return None;
        }
        let servers = self.host.server_summaries()?;
        Some(format!(
            "Your tool list holds only some of the tools available. To find others, call {} \
             with what you want to do; the tools it finds join your tool list for your next \
             turn. The servers mounted:\n{servers}",
            search_tool_name()
        ))
    }

    fn call<'a>(&'a self, call: &'a ToolCall, events: &'a EventSink) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let mut options = CallOptions::default();
            options.loaded = Some(self.loaded.clone());
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

/// `mcp__switchboard__search_tools`.
pub(crate) fn search_tool_name() -> String {
    switchboard_wire::namespaced_tool_name(
        switchboard_host::BUILTIN_ALIAS,
        switchboard_host::SEARCH_TOOLS,
    )
}

fn is_search_tool(name: &str) -> bool {
    name == search_tool_name()
}

/// A result as text for the model: text blocks as the host gave them
/// (server text already inside boundary markers), other blocks as JSON
/// inside markers of their own.
pub fn result_text(result: &CallToolResult, server: Option<&str>, tool: &str) -> String {
    let mut parts = Vec::new();
    let wrap = |text: &str| {
        switchboard_host::wrap_untrusted(server.unwrap_or("unknown"), Some(tool), text)
    };
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
