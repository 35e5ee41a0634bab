//! Running cases against a model: the governed tool list, one model turn
//! per case (the first tool call is recorded and nothing runs), a bounded
//! pool of concurrent runs, and a retry for a run the provider dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_host::Host;
use switchboard_host::Pins;
use switchboard_host::model_view;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::case::{Case, Speaker};
use super::matcher::{Call, Catalog, CatalogEntry, Observation, judge};
use super::report::{CaseRuns, RunRecord};
use crate::message::{Content, Message, Role};
use crate::model::{DEFAULT_MAX_TOKENS, Model, ModelError, ModelEvent, ModelRequest, ToolSpec};
use crate::prompt;
use crate::toolbox::{HostToolbox, Toolbox};

/// The result text a call gets in `--follow` mode beyond the case's
/// canned results.
pub const NOT_RUN: &str = "This tool was not run: this is an evaluation of tool selection.";

/// What the model is shown: the tools (as `chat` sends them), the system
/// prompt, and the catalog for resolving names.
#[derive(Debug, Clone)]
pub struct EvalTools {
    /// The tools, as the model gets them.
    pub specs: Vec<ToolSpec>,
    /// Names back to alias and original name.
    pub catalog: Catalog,
    /// The system prompt (the chat's, with the host's outage report).
    pub system: String,
    /// With the table deferred (tool search on): the host the model's
    /// `search_tools` calls are answered from, and every tool it may load.
    pub search: Option<EvalSearch>,
}

/// What a deferred table's searches need.
#[derive(Debug, Clone)]
pub struct EvalSearch {
    /// The host (searches only read its index).
    pub host: Host,
    /// Every tool the model may see, as `chat` would send it once loaded.
    pub all: Vec<ToolSpec>,
}

/// The most `search_tools` calls answered in one run before the model
/// must choose.
const MAX_SEARCHES: usize = 3;

impl EvalTools {
    /// Exactly what `chat` sends the model now: the host's governed tool
    /// list (`mcp__alias__tool`, provenance-marked descriptions) and the
    /// system prompt with the outage report.
    pub fn from_host(host: &Host) -> EvalTools {
        let specs = HostToolbox::new(host.clone(), None).tools().to_vec();
        let catalog = Catalog::new(
            host.tools()
                .into_iter()
                .map(|t| CatalogEntry {
                    name: t.name,
                    alias: t.server,
                    original_name: t.original_name,
                })
                .collect(),
        );
        EvalTools {
            specs,
            catalog,
            system: prompt::system(
                None,
                prompt::with_skills(host.skills_prompt(), host.outage_text()),
            ),
            search: None,
        }
    }

    /// What `chat` sends with the table deferred (tool search on): the
    /// always-loaded tools and `mcp__switchboard__search_tools`, and the
    /// system prompt naming the servers; the model's searches are answered
    /// and load what they find for the rest of the run.
    pub fn deferred(host: &Host) -> EvalTools {
        let toolbox = HostToolbox::new(host.clone(), None).with_tool_search(
            switchboard_host::ToolSearch::On,
            crate::DEFAULT_CONTEXT_WINDOW,
        );
        let specs = toolbox.tools().to_vec();
        let mut tools = EvalTools::from_host(host);
        let all = HostToolbox::new(host.clone(), None)
            .with_tool_search(
                switchboard_host::ToolSearch::Off,
                crate::DEFAULT_CONTEXT_WINDOW,
            )
            .tools()
            .to_vec();
        tools.specs = specs;
        tools.system = prompt::system_with(None, host.outage_text(), toolbox.catalog_text());
        tools.search = Some(EvalSearch {
            host: host.clone(),
            all,
        });
        tools
    }

    /// Estimated tokens of the tool definitions sent first.
    pub fn tool_tokens(&self) -> u64 {
        specs_tokens(&self.specs)
    }
}

/// Estimated tokens of `specs` as a request carries them.
fn specs_tokens(specs: &[ToolSpec]) -> u64 {
    specs
        .iter()
        .map(|s| switchboard_host::tool_tokens(&s.name, &s.description, &s.input_schema))
        .sum()
}

/// Whether `name` is `mcp__switchboard__search_tools`.
fn is_search(name: &str) -> bool {
    name == switchboard_wire::namespaced_tool_name(
        switchboard_host::BUILTIN_ALIAS,
        switchboard_host::SEARCH_TOOLS,
    )
}

/// The two tool lists `--against-pins` compares.
#[derive(Debug, Clone)]
pub struct PinnedViews {
    /// Every tool as approved in the lockfile (tools never approved, or
    /// approved before definitions were recorded, as they are now).
    pub approved: EvalTools,
    /// Every tool as its server serves it now, as the model will see it
    /// once the change is accepted.
    pub now: EvalTools,
    /// Model-facing names of the tools whose definition changed.
    pub changed: Vec<String>,
    /// Changed tools whose approved definition is not recorded (only its
    /// hash): they are shown as they are now in both lists.
    pub unrecorded: Vec<String>,
}

impl PinnedViews {
    /// Builds both lists from the host and its lockfile.
    pub fn new(host: &Host, pins: &Pins) -> PinnedViews {
        // Every tool as served now: the host's full view (the model's own
        // view shows changed tools as approved).
        let all = host.all_tools();
        let mut now = EvalTools::from_host(host);
        now.specs = all
            .iter()
            .filter(|t| now.specs.iter().any(|s| s.name == t.name))
            .map(|t| ToolSpec {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                server: Some(t.server.clone()),
            })
            .collect();
        let changed: Vec<_> = all
            .into_iter()
            .filter(|t| t.status.pin == "changed")
            .collect();
        // What the model reads once the change is accepted: without the
        // host's "changed since approved" notice, which is the host's own
        // text before the provenance marker.
        for tool in &changed {
            let marker = format!("[from {}]", tool.server);
            if let (Some(at), Some(spec)) = (
                tool.description.find(&marker),
                now.specs.iter_mut().find(|s| s.name == tool.name),
            ) {
                spec.description = tool.description[at..].to_owned();
            }
        }
        let mut approved = now.clone();
        let mut unrecorded = Vec::new();
        for tool in &changed {
            match pins.approved(&tool.server, &tool.original_name) {
                Some(definition) => {
                    let (description, input_schema) = model_view(&tool.server, &definition);
                    if let Some(spec) = approved.specs.iter_mut().find(|s| s.name == tool.name) {
                        spec.description = description;
                        spec.input_schema = input_schema;
                    }
                }
                None => unrecorded.push(tool.name.clone()),
            }
        }
        PinnedViews {
            approved,
            now,
            changed: changed.into_iter().map(|t| t.name).collect(),
            unrecorded,
        }
    }
}

impl PinnedViews {
    /// Keeps only the changes of the tools `keep` names (model-facing
    /// names): the others stay as approved in both lists, as they will
    /// once only the kept ones are accepted (`pins accept NAME`).
    #[must_use]
    pub fn only(mut self, keep: impl Fn(&str) -> bool) -> PinnedViews {
        let (kept, dropped): (Vec<String>, Vec<String>) =
            self.changed.into_iter().partition(|name| keep(name));
        for name in &dropped {
            if let (Some(approved), Some(now)) = (
                self.approved.specs.iter().find(|s| &s.name == name),
                self.now.specs.iter_mut().find(|s| &s.name == name),
            ) {
                *now = approved.clone();
            }
        }
        self.unrecorded.retain(|name| kept.contains(name));
        self.changed = kept;
        self
    }
}

/// How cases are run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Runs per case (flakiness shows over several).
    pub repeat: usize,
    /// Runs in flight at once.
    pub concurrency: usize,
    /// Answer calls with the cases' canned results and judge their follow
    /// steps.
    pub follow: bool,
    /// Extra attempts for a run whose stream broke, timed out or could
    /// not connect (the providers already retry 429 and 5xx themselves).
    pub retries: u32,
    /// Most tokens per model turn.
    pub max_tokens: u32,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            repeat: 1,
            concurrency: 8,
            follow: false,
            retries: 1,
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

/// Runs every case `options.repeat` times against `model`, at most
/// `options.concurrency` at once, and judges each run. Tools are never
/// executed. The results come back in case order. With a concurrency of
/// 1 the runs go one after the other in file order (what a `script:FILE`
/// model, whose turns are taken in order, needs).
pub async fn run_cases(
    model: Arc<dyn Model>,
    cases: &[Case],
    tools: &EvalTools,
    options: &RunOptions,
) -> Vec<CaseRuns> {
    if options.concurrency <= 1 {
        let mut out = Vec::with_capacity(cases.len());
        for case in cases {
            let mut runs = Vec::new();
            for _ in 0..options.repeat.max(1) {
                runs.push(one_run(model.as_ref(), case, tools, options).await);
            }
            out.push(CaseRuns {
                case: case.clone(),
                runs,
            });
        }
        return out;
    }
    let cases: Arc<Vec<Case>> = Arc::new(cases.to_vec());
    let tools = Arc::new(tools.clone());
    let options = Arc::new(options.clone());
    let pool = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut set = JoinSet::new();
    for index in 0..cases.len() {
        for run in 0..options.repeat.max(1) {
            let (model, cases, tools, options, pool) = (
                model.clone(),
                cases.clone(),
                tools.clone(),
                options.clone(),
                pool.clone(),
            );
            set.spawn(async move {
                // The semaphore is never closed: a permit always comes.
                let _permit = pool.acquire_owned().await.ok();
                let record = one_run(model.as_ref(), &cases[index], &tools, &options).await;
                (index, run, record)
            });
        }
    }
    let mut slots: Vec<Vec<Option<RunRecord>>> =
        vec![vec![None; options.repeat.max(1)]; cases.len()];
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((index, run, record)) => slots[index][run] = Some(record),
            Err(e) => tracing::warn!(error = %e, "an eval run panicked"),
        }
    }
    cases
        .iter()
        .zip(slots)
        .map(|(case, runs)| CaseRuns {
            case: case.clone(),
            runs: runs
                .into_iter()
                .map(|r| {
                    r.unwrap_or_else(|| RunRecord {
                        verdict: judge(
                            case,
                            &Observation::failed("the run did not finish"),
                            &Catalog::default(),
                            false,
                        ),
                        got: "error: the run did not finish".into(),
                        duration: Duration::ZERO,
                        tool_tokens: 0,
                    })
                })
                .collect(),
        })
        .collect()
}

/// One run of one case, judged.
async fn one_run(
    model: &dyn Model,
    case: &Case,
    tools: &EvalTools,
    options: &RunOptions,
) -> RunRecord {
    let started = Instant::now();
    let seen = observe(model, case, tools, options).await;
    RunRecord {
        verdict: judge(case, &seen, &tools.catalog, options.follow),
        got: seen.summary(),
        duration: started.elapsed(),
        tool_tokens: seen.tool_tokens,
    }
}

/// What the model does in one run of one case: its first turn, and with `follow` one
/// more turn per follow step, each call answered with the step's canned
/// result.
async fn observe(
    model: &dyn Model,
    case: &Case,
    tools: &EvalTools,
    options: &RunOptions,
) -> Observation {
    let mut request = ModelRequest {
        system: tools.system.clone(),
        messages: case
            .conversation
            .iter()
            .map(|t| match t.role {
                Speaker::User => Message::user(t.content.clone()),
                Speaker::Assistant => Message::assistant(t.content.clone()),
            })
            .collect(),
        tools: tools.specs.as_slice().into(),
        max_tokens: options.max_tokens,
    };
    let steps = if options.follow { case.follow.len() } else { 0 };
    let mut seen = Observation {
        deferred: tools.search.is_some(),
        ..Observation::default()
    };
    let mut step = 0;
    while step <= steps {
        seen.tool_tokens += specs_tokens(&request.tools);
        let output = match turn(model, &request, options.retries).await {
            Ok(o) => o,
            Err(e) => {
                seen.error = Some(e.to_string());
                return seen;
            }
        };
        // A search is answered at once and loads what it finds; it is
        // not the model's choice (the case judges the call after it).
        if let Some(search) = &tools.search {
            let searching = output.tool_calls.iter().any(|c| is_search(&c.name));
            if searching && seen.searches.len() < MAX_SEARCHES {
                answer_searches(search, &output, &mut request, &mut seen);
                continue;
            }
        }
        let calls: Vec<Call> = output
            .tool_calls
            .iter()
            .map(|c| Call {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        seen.text = (!output.text.is_empty()).then(|| output.text.clone());
        let called = !calls.is_empty();
        seen.turns.push(calls);
        if !called || step == steps {
            break;
        }
        // Follow: the first call gets the step's canned result, the others
        // are told they were not run.
        if let Some(message) = output.message() {
            request.messages.push(message);
        }
        let results = output
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| Content::ToolResult {
                tool_use_id: c.id.clone(),
                content: if i == 0 {
                    case.follow[step].result.clone()
                } else {
                    NOT_RUN.to_owned()
                },
                is_error: false,
            })
            .collect();
        request.messages.push(Message {
            role: Role::User,
            content: results,
        });
        step += 1;
    }
    seen
}

/// Answers the model's `search_tools` calls of one turn from the host's
/// index, loading the tools found into the run's tool list; its other
/// calls of the turn are told to wait for the search.
fn answer_searches(
    search: &EvalSearch,
    output: &crate::model::TurnOutput,
    request: &mut ModelRequest,
    seen: &mut Observation,
) {
    if let Some(message) = output.message() {
        request.messages.push(message);
    }
    let mut tools: Vec<ToolSpec> = request.tools.to_vec();
    let mut results = Vec::new();
    for c in &output.tool_calls {
        if !is_search(&c.name) {
            results.push(Content::ToolResult {
                tool_use_id: c.id.clone(),
                content: "Not run: choose again once the search has answered.".into(),
                is_error: true,
            });
            continue;
        }
        let query = c
            .arguments
            .get("query")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let limit = c
            .arguments
            .get("limit")
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(switchboard_host::SEARCH_TOOLS_DEFAULT_LIMIT)
            .clamp(1, switchboard_host::SEARCH_TOOLS_MAX_LIMIT);
        let found = search.host.search_tools(&query, limit, None);
        let mut lines = Vec::new();
        for f in &found {
            lines.push(format!(
                "- {} (server {}): {}",
                f.tool.name, f.tool.server, f.summary
            ));
            if !tools.iter().any(|t| t.name == f.tool.name) {
                if let Some(spec) = search.all.iter().find(|t| t.name == f.tool.name) {
                    tools.push(spec.clone());
                }
            }
        }
        seen.searches.push(query);
        results.push(Content::ToolResult {
            tool_use_id: c.id.clone(),
            content: if lines.is_empty() {
                "No tool matches; try other words.".into()
            } else {
                format!("Found (now in your tool list):\n{}", lines.join("\n"))
            },
            is_error: false,
        });
    }
    // Stable order, as chat sends it.
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    request.tools = tools.into();
    request.messages.push(Message {
        role: Role::User,
        content: results,
    });
}

/// One turn, again after a broken stream, a timeout or a failed connect.
async fn turn(
    model: &dyn Model,
    request: &ModelRequest,
    retries: u32,
) -> Result<crate::model::TurnOutput, ModelError> {
    let mut attempt = 0;
    loop {
        let mut ignore = |_: ModelEvent| {};
        match model.turn(request, &mut ignore).await {
            Err(
                e @ (ModelError::Stream { .. }
                | ModelError::Timeout { .. }
                | ModelError::Connect { .. }),
            ) if attempt < retries => {
                attempt += 1;
                tracing::info!(error = %e, attempt, "retrying an eval run");
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
            other => return other,
        }
    }
}
