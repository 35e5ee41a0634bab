//! The served tools: one registration per tool of the host's table, kept
//! in step with it; each `tools/call` becomes the host's governed call
//! with the caller's principal, the approver the request calls for
//! (`--yes`, the answer to an approval question asked upstream, the
//! upstream user, or no one), its trace context continued and the
//! server's questions relayed (`relay`), driven by `call` (or by `tasks`,
//! for a client that follows tasks); its report becomes the upstream
//! answer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_host::READ_RESULT;
use switchboard_host::{Approval, Approver, AssumeYes, CallOptions, Host, ModelTool, Verdict};
use switchboard_server::{Context, HandlerError, Server, ToolResult, ToolSpec};
use tokio::sync::broadcast;

use crate::approval::{
    APPROVAL_KEY, Answered, ApprovalForm, AskUpstream, NoOneUpstream, ask, ask_url, question,
};
use crate::call::{CallParking, Round};
use crate::console::{Approvals, Redeemed, WaitForConsole};
use crate::relay::{self, Retry};
use crate::trace::CallTrace;
use crate::{GatewayOptions, Telemetry};

/// Registers every tool of the table; returns the names registered.
pub(crate) fn register_all(
    server: &Server,
    host: &Host,
    options: &GatewayOptions,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (tool, listed) in served(host) {
        if register(server, host, &tool, listed, options) {
            names.insert(tool.name.clone());
        }
    }
    // A result over its budget makes the host offer read_result then and
    // there, and its caller may call it before that change reaches
    // [`follow_changes`]: it answers by name from the start (unlisted,
    // and not counted as registered, so the host's own entry replaces it).
    let read_result =
        switchboard_wire::namespaced_tool_name(switchboard_host::BUILTIN_ALIAS, READ_RESULT);
    if !names.contains(&read_result) {
        let spec = ToolSpec::new(&read_result)
            .input_schema(serde_json::json!({"type": "object"}))
            .unlisted();
        put(server, host, &read_result, spec, options);
    }
    names
}

/// What the gateway serves: the model's view of the table (no denied
/// tools, approved definitions only), listed; and each denied tool,
/// unlisted, so that a call by name reaches the gate and gets its refusal
/// (audited) rather than "unknown tool".
fn served(host: &Host) -> Vec<(ModelTool, bool)> {
    let mut tools: Vec<(ModelTool, bool)> = host.tools().into_iter().map(|t| (t, true)).collect();
    tools.extend(
        host.all_tools()
            .into_iter()
            .filter(|t| t.status.gate == Verdict::Deny)
            .map(|t| (t, false)),
    );
    tools
}

/// Registers one tool (`listed` or callable by name only); `false` (with a
/// warning) when the framework refuses its schema.
fn register(
    server: &Server,
    host: &Host,
    tool: &ModelTool,
    listed: bool,
    options: &GatewayOptions,
) -> bool {
    let spec = if listed {
        let mut spec = ToolSpec::new(&tool.name)
            .description(&tool.description)
            .input_schema(Value::Object(tool.input_schema.clone()));
        if let Some(title) = &tool.title {
            spec = spec.title(title);
        }
        spec
    } else {
        // Nothing of it is shown; any arguments reach the gate.
        ToolSpec::new(&tool.name)
            .input_schema(serde_json::json!({"type": "object"}))
            .unlisted()
    };
    put(server, host, &tool.name, spec, options)
}

/// Serves `spec` as the host's tool `name`; `false` (with a warning) when
/// the framework refuses it.
fn put(server: &Server, host: &Host, name: &str, spec: ToolSpec, options: &GatewayOptions) -> bool {
    let host = host.clone();
    let tool_name = name;
    let name = name.to_owned();
    let settings = Settings {
        yes: options.assume_yes,
        // With a signing key that outlives the process, a task handed on
        // can be picked up again after a restart.
        resumable_tasks: options.state_key.is_some(),
        loaded: None,
        approvals: options.approvals.clone(),
    };
    let telemetry = options.telemetry.clone();
    let parking = options.parking.clone();
    let search = options
        .search
        .clone()
        .map(|s| (s, server.notifier().clone()));
    let handler = move |args: Value, ctx: Context| {
        let host = host.clone();
        let name = name.clone();
        let telemetry = telemetry.clone();
        let parking = parking.clone();
        // The caller's own loaded tools, when the table is deferred.
        let loaded = search.as_ref().map(|(s, notifier)| {
            s.loaded_for(ctx.principal().map(|p| p.subject.as_str()), notifier)
        });
        let approvals = settings.approvals.clone();
        let (yes, resumable_tasks) = (settings.yes, settings.resumable_tasks);
        async move {
            let settings = Settings {
                yes,
                resumable_tasks,
                loaded,
                approvals,
            };
            call(&host, &name, args, &ctx, settings, &telemetry, &parking).await
        }
    };
    match server.put_tool(spec, handler) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(tool = %tool_name, error = %e, "the gateway cannot serve this tool");
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
                if let Some(search) = &options.search {
                    search.refresh(&host);
                }
                // A reconnect or a login may have changed a server's state.
                server
                    .notifier()
                    .resource_updated(crate::status::STATUS_URI);
                // Re-read the whole table: simpler than replaying the
                // change, and right after a lag too.
                let tools = served(&host);
                let now: BTreeSet<String> = tools.iter().map(|(t, _)| t.name.clone()).collect();
                for gone in registered.difference(&now) {
                    server.remove_tool(gone);
                }
                registered.retain(|n| now.contains(n));
                for (tool, listed) in &tools {
                    // A changed definition is served anew, replacing the
                    // old one in one step: calls never miss the name.
                    if register(&server, &host, tool, *listed, &options) {
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

/// Re-lists each downstream server whose tool listing's `ttlMs` lapsed,
/// while the gateway lives: the gateway serves its own copy of the table,
/// so nobody else asks the host for it, and a server that changes a
/// definition without `list_changed` would otherwise be believed until
/// the next reconnect. The new listing goes through the pins like any
/// other (a changed definition is served as approved, titled as changed).
/// Bounded: at most one round every `min` ([`RELIST_MIN_INTERVAL`] by
/// default), whatever TTL a server gives (a TTL of 0, or a refresh that
/// fails, is tried again `min` later); the host's table is looked at at
/// least every [`RELIST_POLL`], for listings that came since.
pub(crate) async fn relist_stale(host: Host, min: Duration) {
    let min = min.max(Duration::from_millis(1));
    loop {
        let now = std::time::Instant::now();
        let due = host
            .next_stale()
            .unwrap_or(now + RELIST_POLL)
            .clamp(now + min, now + RELIST_POLL.max(min));
        tokio::time::sleep_until(due.into()).await;
        host.wake_stale();
    }
}

/// The shortest time between two rounds of [`relist_stale`] by default.
pub const RELIST_MIN_INTERVAL: Duration = Duration::from_secs(5);

/// The longest [`relist_stale`] sleeps before it looks at the table again.
const RELIST_POLL: Duration = Duration::from_secs(60);

/// How the gateway's tools are called.
#[derive(Clone, Debug)]
struct Settings {
    /// `--yes`: every question of the gate is allowed.
    yes: bool,
    /// Whether a task handed on upstream can be resumed after a restart.
    resumable_tasks: bool,
    /// The caller's loaded tools, when the table is deferred.
    loaded: Option<switchboard_host::LoadedTools>,
    /// The console's pending approvals (`serve --console`): a client that
    /// can open a URL but cannot show a form is sent there.
    approvals: Option<Approvals>,
}

impl Settings {
    /// The console's approvals, when this caller's client would be sent
    /// there: it declares URL elicitation but not form elicitation, and
    /// the console is served.
    fn console_for(&self, ctx: &Context) -> Option<&Approvals> {
        let caps = ctx.client_capabilities();
        self.approvals
            .as_ref()
            .filter(|a| a.is_serving())
            .filter(|_| caps.supports_elicitation_url() && !caps.supports_elicitation_form())
    }

    /// For a caller whose client can be asked nothing: the approver that
    /// waits for the console, when the console is served and the config
    /// has `approvals.notify`.
    fn waiting(&self, host: &Host, ctx: &Context) -> Option<WaitForConsole> {
        let approvals = self.approvals.as_ref().filter(|a| a.is_serving())?;
        let config = host.approvals_config();
        Some(WaitForConsole {
            approvals: approvals.clone(),
            notify: config.notify?,
            timeout: config.timeout,
            caller: ctx.principal().map(|p| p.subject.clone()),
        })
    }
}

/// One `tools/call` through the host, its trace context continued on the
/// downstream call.
async fn call(
    host: &Host,
    name: &str,
    args: Value,
    ctx: &Context,
    settings: Settings,
    telemetry: &Telemetry,
    parking: &CallParking,
) -> ToolResult {
    let started = std::time::SystemTime::now();
    let arguments = match args {
        Value::Object(map) => Some(map),
        _ => None,
    };
    // The retry of a call whose server asked a question we relayed: the
    // call was allowed then, and the sealed state is bound to it.
    let resume = match relay::resume(ctx).await? {
        Some(Retry::Parked(at, answers)) => {
            // A legacy server's question: its call waits here.
            // Boxed: a rare path, kept out of every call's future.
            let round = Box::pin(crate::call::resume(&at, &answers, ctx, name, parking)).await?;
            let trace = CallTrace::of(ctx.meta(), telemetry.downstream_spans());
            let console = settings.console_for(ctx);
            return answer(round, name, ctx, &trace, started, telemetry, false, console).await;
        }
        Some(Retry::Call(resume)) => Some(resume),
        None => None,
    };
    let approver: Arc<dyn Approver> = if settings.yes {
        Arc::new(AssumeYes)
    } else if resume.is_some() {
        Arc::new(Answered(Approval::AllowOnce))
    } else if ctx.has_state() {
        // The retry of a call whose approval we asked for.
        ctx.consume_state().await?;
        let console_id = ctx
            .state::<Value>()?
            .and_then(|s| s.get("approval")?.as_str().map(str::to_owned));
        if let Some(id) = console_id {
            // Asked through the console: its decision, redeemed once.
            let arguments = Value::Object(arguments.clone().unwrap_or_default());
            let caller = ctx.principal().map(|p| p.subject.as_str());
            let redeemed = redeem(settings.approvals.as_ref(), &id, name, &arguments, caller);
            match Box::pin(redeemed).await {
                Ok(approver) => approver,
                Err(again) => return Ok(again.into()),
            }
        } else {
            match ctx.input().elicitation(APPROVAL_KEY)? {
                None => {
                    let arguments = Value::Object(arguments.unwrap_or_default());
                    return Ok(ask(name, &arguments, None).into());
                }
                Some(answer) => {
                    let approved = answer
                        .content_as::<ApprovalForm>()
                        .map_err(HandlerError::invalid_params)?
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
        }
    } else if ctx.client_capabilities().supports_elicitation_form()
        || settings.console_for(ctx).is_some()
    {
        // The host hands a question back; it is put to the upstream user.
        Arc::new(AskUpstream)
    } else if let Some(wait) = settings.waiting(host, ctx) {
        // Nobody upstream can be asked: a person in the console can.
        Arc::new(wait)
    } else {
        Arc::new(NoOneUpstream)
    };

    let trace = CallTrace::of(ctx.meta(), telemetry.downstream_spans());
    let mut options = CallOptions::default();
    options.approver = Some(approver);
    options.loaded = settings.loaded.clone();
    options.request.trace = Some(trace.downstream());
    options.principal = ctx.principal().map(|p| p.subject.clone());
    options.caller_token = caller_token(ctx.principal());
    options.request.relay_input = true;
    // Answers sent up front go down as they came; they never count as an
    // approval (the approver above was chosen without them).
    options.request.resume = resume.or_else(|| relay::unsolicited(ctx));
    let answered = options.request.resume.is_some();
    // The server is told only of the questions the upstream client can
    // answer (the gateway relays them there).
    options.request.capabilities = Some(ctx.client_capabilities().clone());
    // An upstream that follows tasks gets the downstream server's tasks.
    if switchboard_wire::tasks::declares_tasks(ctx.client_capabilities()) {
        // The same upstream span as a plain call's, ended when the call
        // (and so the downstream task) ends.
        let (telemetry, tool) = (telemetry.clone(), name.to_owned());
        let on_end: crate::tasks::OnEnd = Box::new(move |report| {
            telemetry.upstream_span(&trace, &tool, started, report.outcome);
        });
        // Boxed, as the other rare paths below: an awaited future is held
        // inside this one, and this one is moved whole into the server's
        // box on every call; the tasks driver, the console's redemption
        // and the approval question together made it three times larger
        // than an ordinary call needs (bench/gateway.sh).
        return Box::pin(crate::tasks::call(
            host,
            name,
            arguments,
            options,
            ctx,
            parking,
            on_end,
            settings.resumable_tasks,
            settings.console_for(ctx),
        ))
        .await;
    }
    // A legacy server's questions come back here (the call is parked
    // when one is put upstream).
    let round = crate::call::follow(host, name, arguments, options, ctx, parking).await;
    let console = settings.console_for(ctx);
    answer(
        round, name, ctx, &trace, started, telemetry, answered, console,
    )
    .await
}

/// The upstream answer for one round of a call: the host's report made
/// the gateway's (the gate's question, a modern server's question, the
/// result), or the round's own reply. `answered`: the upstream client's
/// `inputResponses` went down with the call. `console`: the gate's
/// question goes to the console as a link.
#[allow(clippy::too_many_arguments)]
async fn answer(
    round: Round,
    name: &str,
    ctx: &Context,
    trace: &CallTrace,
    started: std::time::SystemTime,
    telemetry: &Telemetry,
    answered: bool,
    console: Option<&Approvals>,
) -> ToolResult {
    let report = match round {
        Round::Reply(reply) => return reply,
        Round::Done(Ok(report)) => report,
        Round::Done(Err(e)) => {
            return Ok(switchboard_wire::CallToolResult::error(format!(
                "The gateway lost this call ({e}); its outcome is unknown. Tell the user."
            ))
            .into());
        }
    };
    telemetry.upstream_span(trace, name, started, report.outcome);
    if let Some(refusal) = relay::refusal(&report, answered) {
        return Err(refusal);
    }
    if let Some(request) = &report.approval_needed {
        let caller = ctx.principal().map(|p| p.subject.as_str());
        return Ok(Box::pin(question(name, request, caller, console))
            .await
            .into());
    }
    if let Some(asked) = &report.input_required {
        return match relay::ask(name, asked, ctx.client_capabilities()) {
            Ok(question) => Ok(question.into()),
            Err(why) => Ok(switchboard_wire::CallToolResult::error(why).into()),
        };
    }
    let mut result = report.result;
    crate::identity::own_result(&mut result);
    Ok(result.into())
}

/// The access token `principal` presented, for a server the config has
/// exchange it (`"identity": "exchange"`); kept wrapped so it reaches no
/// log.
pub(crate) fn caller_token(
    principal: Option<&switchboard_server::Principal>,
) -> Option<switchboard_oauth::Secret> {
    principal
        .and_then(|p| p.token.as_ref())
        .map(|t| switchboard_oauth::Secret::new(t.expose()))
}

/// The approver of a call's retry after the console was asked (approval
/// `id`): the decision made there, for this very call and once; `Err`
/// with the same question again while nobody has decided.
async fn redeem(
    approvals: Option<&Approvals>,
    id: &str,
    name: &str,
    arguments: &Value,
    caller: Option<&str>,
) -> Result<Arc<dyn Approver>, switchboard_server::InputRequired> {
    let digest = crate::console::digest(name, arguments);
    let redeemed = match approvals {
        Some(a) => a.redeem(id, name, &digest, caller).await,
        None => Redeemed::Invalid,
    };
    let approval = match redeemed {
        Redeemed::Approved(by) => {
            tracing::info!(tool = %name, approved_by = %by, "approved in the console");
            Approval::AllowOnce
        }
        Redeemed::Denied(by) => Approval::Deny(Some(format!(
            "{by} declined this call of {name} in the console. Do not retry it unless the user asks."
        ))),
        Redeemed::Waiting => {
            let link = approvals.and_then(|a| a.link(id)).unwrap_or_default();
            return Err(ask_url(name, id, &link));
        }
        Redeemed::Unavailable(why) => Approval::Deny(Some(format!(
            "The console's decision on this call of {name} cannot be read: {why}"
        ))),
        Redeemed::Invalid => Approval::Deny(Some(format!(
            "The console approval for this call of {name} is not valid (used, lapsed, or made for another call). Call the tool again to be asked anew."
        ))),
    };
    Ok(Arc::new(Answered(approval)))
}
