//! The governed request path. Every request the host sends a server on a
//! caller's behalf takes it — a tool call, a prompt get, a resource read,
//! a completion — in this order ([`Host::govern`]):
//!
//! 1. **admit**: the caller's limits (`callerLimits`, its `principals`
//!    entry's `limits`) count the request, or refuse it;
//! 2. **route**: what the request names ([`Named`]) leads through the
//!    tool table or the catalog to a server and the name (or URI) there,
//!    its [`Target`]; or to nothing (unknown);
//! 3. **rules**: the caller's `principals` rules may refuse the target;
//! 4. **gate and send**: the kind's own steps ([`Kind::run`]): a tool call
//!    has the permission rules, pins and the approver, then the breaker,
//!    the connection and the server; a prompt has the user's deny rules,
//!    then the server; a read and a completion go to the server;
//! 5. **conclude**: one audit line naming the caller, and, for tool calls,
//!    the call observer.
//!
//! Each step either hands on or ends the request with a [`Governed`], from
//! which the audit line and the caller's answer are both derived. A new
//! kind of request (skills: `skills/list`, `skills/get`, a skill's files)
//! is one more [`Kind`], a [`Named`] variant if the rules should see it,
//! and a public method calling [`Host::govern`].
//!
//! - `options`: [`CallOptions`], the caller's options for any request;
//! - `outcome`: [`Governed`], the audit line and the answers derived
//!   from it;
//! - `tool`, `failure`, `resume`: `tools/call` (the gate and approver,
//!   pins, breaker, tasks), a call the server did not complete in words,
//!   a call's task picked up again;
//! - `prompt`, `resource`, `completion`: `prompts/get`,
//!   `resources/read`, `completion/complete`;
//! - `skill`: `skills/get`, `resources/read` of a skill's file and
//!   `resources/directory/read`, for a gateway serving its servers' skills;
//! - `builtin`: a call of a built-in tool (`mcp__switchboard__NAME`).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use switchboard_client::Client;
use switchboard_wire::JsonObject;
use tokio::time::Instant;
use tracing::error;

use super::Host;
use crate::audit::{AuditRecord, CallInFlight, Outcome};
use crate::limits::{CallLimits, Permit, Refusal, SharedAdmission, SharedEntry};

mod builtin;
mod completion;
mod failure;
pub(crate) mod identity;
mod options;
mod outcome;
mod prompt;
mod resource;
mod resume;
mod skill;
mod tool;

pub use completion::CompletionRef;
pub use options::CallOptions;
pub use outcome::OfferError;
pub use resource::ResourceRef;
pub use resume::TaskResumption;
pub use skill::SkillRef;
pub use tool::CallReport;

use outcome::{Answer, Decision, End, Governed};

/// What a request names, as its caller wrote it: the key to the tool table
/// or the catalog, and what a caller's `principals` rules are asked about
/// ([`Host::principal_may`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Named<'a> {
    /// A tool, by its model-facing name.
    Tool(&'a str),
    /// A prompt, by its served name.
    Prompt(&'a str),
    /// A resource, by its served URI.
    Resource(&'a str),
    /// A resource template, by its served `uriTemplate`.
    Template(&'a str),
    /// A skill of a server, by its alias and the URI of its `SKILL.md`
    /// there.
    Skill {
        /// The server's alias.
        server: &'a str,
        /// The URI of the skill's `SKILL.md` on that server.
        uri: &'a str,
    },
}

/// Where a request goes: the server, and the name (or URI) there.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The server's alias.
    pub(crate) alias: String,
    /// The tool's or prompt's name, or the resource's URI or template, on
    /// the server.
    pub(crate) original: String,
    /// Whether a caller's `principals` rules pick it out by its name
    /// (tools, prompts), rather than by its whole server (resources and
    /// templates have no names the rules could pick out).
    pub(crate) by_name: bool,
    /// Whether it is a skill, or a file or directory of one: a caller's
    /// rules about skills were asked when the request was routed (the
    /// route knows which skill a file belongs to).
    pub(crate) skill: bool,
}

/// When a request started, and its audit line as it stood then (a tool
/// call that becomes a task hands both on for its resumption).
pub(crate) type Start<'a> = (Option<&'a AuditRecord>, SystemTime);

/// One kind of request, as the path takes it: what it names, how it is
/// routed, and its own steps after the caller's limits and rules. The
/// path ([`Host::govern`]) does the rest.
pub(crate) trait Kind: Send + Sized {
    /// The server's answer, as the caller gets it.
    type Answer: Answer;
    /// What routing found beyond the [`Target`], for [`Kind::run`] (the
    /// tool table the call was routed through).
    type Route: Send;
    /// The method, as the audit line names it (`None` for `tools/call`:
    /// the lines of tool calls carry none).
    const METHOD: Option<&'static str>;
    /// Whether the host's call observer hears of it (metrics and traces
    /// count tool calls).
    const OBSERVED: bool = false;

    /// What the request names, for the rules and for routing.
    fn named(&self) -> Named<'_>;

    /// Where the request would go, looked up without waiting: for the
    /// audit line of a request refused before it was routed.
    fn located(&self, host: &Host) -> Option<Target> {
        host.target(self.named())
    }

    /// The arguments, hashed into the audit line.
    fn arguments(&self) -> Option<&JsonObject> {
        None
    }

    /// What did not happen, when the caller's limits refuse the request
    /// ("TOOL did not run").
    fn refused(&self) -> String;

    /// What the caller reads when its `principals` rules refuse the
    /// request; `why` names the refusing rule.
    fn forbidden(&self, principal: &str, why: &str) -> String;

    /// Where the request goes, or how it ended for want of a target.
    fn route(
        &self,
        host: &Host,
    ) -> impl Future<Output = Result<(Target, Self::Route), Governed<Self::Answer>>> + Send;

    /// The rest of the path, past the caller's limits and rules: the
    /// kind's gate, then the server.
    fn run(
        self,
        host: &Host,
        target: (Target, Self::Route),
        options: &CallOptions,
        start: Start<'_>,
    ) -> impl Future<Output = Governed<Self::Answer>> + Send;
}

impl Host {
    /// Where `named` leads now, through the table or the catalog alone.
    pub(crate) fn target(&self, named: Named<'_>) -> Option<Target> {
        self.looked_up(named, |alias, original, by_name| Target {
            alias: alias.to_owned(),
            original: original.to_owned(),
            by_name,
            skill: matches!(named, Named::Skill { .. }),
        })
    }

    /// `found` of where `named` leads now (the server's alias, the name or
    /// URI there, and whether rules pick it out by name), without copying
    /// them; `None` when neither the table nor the catalog holds it.
    pub(crate) fn looked_up<R>(
        &self,
        named: Named<'_>,
        found: impl FnOnce(&str, &str, bool) -> R,
    ) -> Option<R> {
        match named {
            Named::Tool(name) => {
                let table = self.table();
                let e = table.get(name)?;
                Some(found(&e.alias, &e.tool.name, true))
            }
            Named::Prompt(name) => {
                let catalog = self.catalog();
                let p = catalog.prompt(name)?;
                Some(found(&p.alias, &p.original_name, true))
            }
            Named::Resource(uri) => {
                let catalog = self.catalog();
                let r = catalog.resource(uri)?;
                Some(found(&r.alias, &r.original_uri, false))
            }
            Named::Template(template) => {
                let catalog = self.catalog();
                let t = catalog.template(template)?;
                Some(found(&t.alias, &t.original_template, false))
            }
            Named::Skill { server, uri } => {
                self.server(server)?;
                Some(found(server, uri, false))
            }
        }
    }

    /// The path of every request: admitted under the caller's limits,
    /// routed, checked against the caller's rules, then the kind's own
    /// gate and server; concluded with one audit line (and, for tool
    /// calls, the observer). `name` is what the audit line records as
    /// `tool` (the name the caller used; the URI read, for a read through
    /// a template). Never fails: how the request ended is in the result.
    // Written as a future of an `async move` block rather than an `async
    // fn`: an `async fn` keeps a second copy of each argument it takes by
    // value, and every call's future (moved whole when a gateway boxes and
    // spawns it) would carry them.
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn govern<'a, K: Kind + 'a>(
        &'a self,
        name: &'a str,
        request: K,
        options: &'a CallOptions,
    ) -> impl Future<Output = Governed<K::Answer>> + Send + 'a {
        async move {
            let started = Instant::now();
            let started_at = SystemTime::now();
            // Without a log, nothing about the arguments is worked out.
            let record = self.inner.audit.as_ref().map(|_| {
                let mut record = AuditRecord::for_arguments(name, request.arguments());
                record.method = K::METHOD.map(str::to_owned);
                record
            });
            let in_flight = self.inner.audit.as_ref().map(|a| a.call_in_flight());
            // Counts the request as its caller's until it ends.
            let admitted = self.admit(options.principal.as_deref()).await;
            let governed = match admitted.map_err(|(p, r)| r.text(p, &request.refused())) {
                Ok(_permit) => 'run: {
                    let (target, route) = match request.route(self).await {
                        Ok(routed) => routed,
                        Err(ended) => break 'run ended,
                    };
                    if let Some(principal) = options.principal.as_deref() {
                        if let Some((decision, why)) = self.principal_refusal(principal, &target) {
                            let text = request.forbidden(principal, &why);
                            let end = End::stopped(Outcome::Denied, text);
                            break 'run Governed::at(Some(&target), Some(decision), end);
                        }
                    }
                    let start = (record.as_ref(), started_at);
                    request.run(self, (target, route), options, start).await
                }
                Err(text) => {
                    let target = request.located(self);
                    Governed::at(target.as_ref(), None, End::stopped(Outcome::Limited, text))
                }
            };
            let span = (started_at, started.elapsed());
            self.conclude(
                name,
                K::OBSERVED,
                (record, in_flight),
                governed,
                span,
                options,
            )
            .await
        }
    }

    /// Admits a request of `principal` under its limits (none without a
    /// principal, or when its limits are unset): the permit counts it as
    /// running until dropped. A request over them is refused, with the
    /// principal and which limit. With shared limits the calls running at
    /// once are counted here first (a call refused for them spends nothing
    /// of the minute), then the minute's count is taken from the store.
    async fn admit<'p>(
        &self,
        principal: Option<&'p str>,
    ) -> Result<Option<Permit>, (&'p str, Refusal)> {
        let Some(principal) = principal else {
            return Ok(None);
        };
        let limits = self.config_read().limits_for(principal);
        if limits.is_unlimited() {
            return Ok(None);
        }
        let Some(shared) = &self.inner.shared_limits else {
            return self
                .inner
                .limiter
                .admit(principal, limits, Instant::now())
                .map(Some)
                .map_err(|refusal| (principal, refusal));
        };
        let running = CallLimits {
            calls_per_minute: None,
            ..limits
        };
        let mut permit = self
            .inner
            .limiter
            .admit(principal, running, Instant::now())
            .map_err(|refusal| (principal, refusal))?;
        // Calls running at once, counted for every replica when the store
        // does (a refused call spends nothing of the minute).
        if let Some(at_once) = limits.concurrent_calls {
            match shared.enter(principal, at_once).await {
                SharedEntry::Entered(id) => {
                    permit = permit.with_lease(crate::limits::SharedLease {
                        shared: Arc::clone(shared),
                        principal: principal.to_owned(),
                        id,
                    });
                }
                SharedEntry::Full => return Err((principal, Refusal::Running { at_once })),
                SharedEntry::Unavailable(why) => {
                    return Err((principal, Refusal::Unavailable(why)));
                }
                SharedEntry::NotShared => {}
            }
        }
        if let Some(per_minute) = limits.calls_per_minute {
            let refusal = match shared.take(principal, per_minute).await {
                SharedAdmission::Allowed => None,
                SharedAdmission::Refused { retry_in } => Some(Refusal::Rate {
                    per_minute,
                    retry_in,
                }),
                SharedAdmission::Unavailable(why) => Some(Refusal::Unavailable(why)),
            };
            if let Some(refusal) = refusal {
                return Err((principal, refusal));
            }
        }
        Ok(Some(permit))
    }

    /// The refusal of `principal`'s `principals` rules for `target`: the
    /// decision and the refusing rule in words; `None` when they let it
    /// through (or it has no entry).
    fn principal_refusal(&self, principal: &str, target: &Target) -> Option<(Decision, String)> {
        let rule = self.principal_rule(principal, target)?;
        let why = match &rule {
            Some((at, _)) if at == super::principal::PRINCIPALS_DEFAULT => format!(
                "principals has no entry for {principal}, and principalsDefault is \"deny\""
            ),
            Some((at, pattern)) => format!("rule {pattern} at {at}"),
            None => format!("no rule at principals.{principal}.allow names it"),
        };
        Some((Decision::denied_by_rule(rule.map(|r| r.0)), why))
    }

    /// Ends a request: its audit line, the observer (when `observed`), and
    /// the outcome back. The request stops counting as in flight once its
    /// line is written.
    async fn conclude<T: Answer>(
        &self,
        name: &str,
        observed: bool,
        (mut record, in_flight): (Option<AuditRecord>, Option<CallInFlight<'_>>),
        governed: Governed<T>,
        (started_at, duration): (SystemTime, Duration),
        options: &CallOptions,
    ) -> Governed<T> {
        // A call following a task it leaves running for a resume, cut off
        // by the host's shutdown, has not ended: whoever resumes it
        // ([`Host::resume_task`]) writes its one line.
        let left_to_resume = options.request.leave_task_on_drop
            && governed.task_id.is_some()
            && matches!(governed.end, End::Stopped { .. })
            && self.is_shut_down();
        if left_to_resume {
            record = None;
        }
        if let (Some(audit), Some(record)) = (&self.inner.audit, &mut record) {
            governed.record(record);
            if record.replica.is_none() {
                record.replica = audit.replica().map(str::to_owned);
            }
            record.principal.clone_from(&options.principal);
            record.identity.clone_from(&governed.identity);
            record.duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            if let Err(e) = audit.append_grouped(record).await {
                error!(error = %e, tool = %name, "the audit line could not be written");
            }
        }
        drop(in_flight);
        if let Some(observer) = self.inner.observer.as_ref() {
            if observed && !left_to_resume {
                let trace = options.request.trace.as_ref();
                observer.call_ended(&governed.event(name, (started_at, duration), trace));
            }
        }
        governed
    }

    /// The run step of a request its server answers directly (a prompt, a
    /// resource read, a completion, a skill): `ask` the target's client,
    /// over the caller's own identity where the server takes each
    /// caller's; the answer or the failure is the request's end.
    pub(crate) async fn ask_server<T, F, Fut>(
        &self,
        target: &Target,
        options: &CallOptions,
        ask: F,
    ) -> Governed<T>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T, switchboard_client::ClientError>>,
    {
        let (client, identity) = match self.client_for(&target.alias, options).await {
            Ok(found) => found,
            Err(end) => return Governed::at(Some(target), None, end),
        };
        let end = match ask(client).await {
            Ok(answer) => End::Answered(answer),
            Err(error) => End::failed(error),
        };
        Governed {
            identity,
            ..Governed::at(Some(target), None, end)
        }
    }

    /// The live client of `alias`, reconnecting a server whose connection
    /// is gone; the end of the request when there is none.
    /// [`Host::client_of`] for a request of `options`' caller: over the
    /// connection of its own identity when the server takes each
    /// caller's (`"identity"`), with that identity for the audit line.
    pub(crate) async fn client_for<T>(
        &self,
        alias: &str,
        options: &CallOptions,
    ) -> Result<(Client, Option<String>), End<T>> {
        let client = self.client_of(alias).await?;
        let Some(server) = self
            .server(alias)
            .filter(|s| s.config.identity != crate::config::Identity::Gateway)
        else {
            return Ok((client, None));
        };
        let link = server.live_link();
        let (own, label) = Box::pin(self.identity_link(&server, link.as_ref(), options)).await?;
        Ok((own.client, Some(label)))
    }

    pub(crate) async fn client_of<T>(&self, alias: &str) -> Result<Client, End<T>> {
        let unavailable = |reason: String| {
            End::stopped(
                Outcome::Transport,
                format!("server {alias} is not available: {reason}"),
            )
        };
        let server = self
            .server(alias)
            .ok_or_else(|| unavailable("it is not configured".into()))?;
        match server.live_link() {
            Some(link) => Ok(link.client),
            // Boxed: a rare path kept out of every request's future.
            None => Box::pin(self.relink(&server, false))
                .await
                .map(|l| l.client)
                .map_err(|down| unavailable(down.reason.plain())),
        }
    }
}
