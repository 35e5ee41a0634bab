//! The router: one decoded request in, one reply out. Runners own bytes and
//! sockets; this owns the protocol: `_meta` and version checks, method
//! routing, pagination, argument validation, MRTR sealing, result shapes.
//!
//! Every request is judged on its own `_meta` (WIRE-19); nothing is read
//! from an earlier request on the same connection. Legacy sessions are the
//! one exception, by design of the legacy protocol.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, ready};

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_wire::meta::{IDEMPOTENCY_KEY, META};
use switchboard_wire::skills;
use switchboard_wire::types::method;
use switchboard_wire::{
    CallToolResult, ContentBlock, ErrorObject, LoggingLevel, Message, MetaError,
    ReadResourceResult, Request, RequestId, RequestMeta, Response,
    types::{CacheHints, ResultHeader, ResultType, SubscriptionFilter},
    version,
};

use crate::auth::BoxFuture;
use crate::auth::Principal;
use crate::cancel::Cancellation;
use crate::completion::{self, CompleteRequest, CompletionRef};
use crate::context::{Context, ContextParts, LazyContext};
use crate::error::{Fault, FaultKind, HandlerError};
use crate::fast::{Arguments, ToolCall};
use crate::idempotency::Begin;
use crate::input::InputResponses;
use crate::legacy::Session;
use crate::notify::Subscription;
use crate::outcome::{InputRequired, Outcome};
use crate::seal::{Binding, CursorAt, ListKind, OpenedState, generation, params_digest};
use crate::server::{Offered, Server};
use crate::sink::Sink;
use crate::task::Started;
use crate::tool::{ToolEntry, ToolOutcome, empty_args, failure_result};

/// How many input rounds a legacy session runs for one request before
/// giving up (a handler that never stops asking).
mod frame;
mod list;
mod tool;

use frame::to_json;
pub(crate) use frame::{FRAME_OVERHEAD, append_result_frame, frame_error, frame_result};
pub(crate) use list::{Listed, page_start, write_cache};
pub(crate) use tool::{CallStart, RunningCall};
use tool::{ToolStep, unknown_tool};

const MAX_LEGACY_ROUNDS: usize = 16;

/// What the runner knows about a request besides its body.
#[derive(Clone, Debug)]
pub(crate) struct Incoming {
    /// From the bearer-token hook (HTTP); `None` on stdio.
    pub(crate) principal: Option<Arc<Principal>>,
    /// Where progress, logs and (legacy) server requests go.
    pub(crate) sink: Sink,
    /// Fires when the client cancels or the stream closes.
    pub(crate) cancel: Cancellation,
    /// The legacy session the request belongs to, if any.
    pub(crate) session: Option<Arc<Session>>,
}

/// What the router answers.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A result object (the `result` member), serialized.
    Result(Vec<u8>),
    /// A JSON-RPC error.
    Error(Fault),
    /// An open `subscriptions/listen` stream for the runner to pump
    /// (boxed: it is large and rare, and every reply is moved a few times).
    Listen(Box<Subscription>),
}

/// The three methods that may answer `input_required` (MRTR-02).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Tool,
    Prompt,
    Resource,
}

impl Target {
    fn method(self) -> &'static str {
        match self {
            Target::Tool => method::TOOLS_CALL,
            Target::Prompt => method::PROMPTS_GET,
            Target::Resource => method::RESOURCES_READ,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Target::Resource => "uri",
            _ => "name",
        }
    }
}

/// One step of an MRTR-capable request.
enum Step {
    Done(Vec<u8>),
    Ask {
        ask: InputRequired,
        target: String,
        digest: [u8; 16],
    },
}

/// An `input_required` answer of a handler, checked against the request's
/// capabilities (MRTR-05) and bound to its params.
fn ask_step(
    ask: InputRequired,
    target: String,
    params: &Map<String, Value>,
    caps: &switchboard_wire::ClientCapabilities,
) -> Result<Step, Fault> {
    if let Some(missing) = ask.missing_capabilities(caps) {
        return Err(Fault::from_rpc(ErrorObject::missing_capability(missing)));
    }
    Ok(Step::Ask {
        ask,
        target,
        digest: params_digest(params),
    })
}

fn params_object(params: Option<Value>, method: &str) -> Result<Map<String, Value>, Fault> {
    match params {
        Some(Value::Object(map)) => Ok(map),
        None => Err(Fault::invalid_params(format!("{method} needs params"))),
        Some(_) => Err(Fault::invalid_params(format!(
            "{method} params must be an object"
        ))),
    }
}

/// Takes `_meta` out of the params and reads it (WIRE-14/15).
fn take_meta(params: &mut Option<Value>) -> Result<RequestMeta, MetaError> {
    match params
        .as_mut()
        .and_then(Value::as_object_mut)
        .and_then(|p| p.remove(META))
    {
        Some(Value::Object(meta)) => RequestMeta::from_meta_object(meta),
        _ => Err(MetaError::Missing),
    }
}

impl Server {
    /// Routes one request.
    pub(crate) async fn dispatch(&self, request: Request, incoming: Incoming) -> Reply {
        let Request {
            id,
            method,
            mut params,
            ..
        } = request.with_meta_inlined();
        let meta = Arc::new(match &incoming.session {
            Some(s) => s.meta(params.as_ref()),
            None => match take_meta(&mut params) {
                Ok(m) => m,
                Err(e) => return Reply::Error(Fault::meta(&e)),
            },
        });
        if incoming.session.is_none() && !version::is_modern_supported(&meta.protocol_version) {
            return Reply::Error(unsupported_version(&meta.protocol_version));
        }
        let result = match method.as_str() {
            method::DISCOVER => Ok(self.discover_bytes(incoming.principal.as_deref())),
            method::TOOLS_LIST => self.list(ListKind::Tools, params, incoming.principal.as_deref()),
            method::PROMPTS_LIST => {
                self.list(ListKind::Prompts, params, incoming.principal.as_deref())
            }
            method::RESOURCES_LIST => {
                // The SKILL.md resources of skills on disk are listed as
                // the disk has them now.
                self.refresh_skills().await;
                self.list(ListKind::Resources, params, incoming.principal.as_deref())
            }
            method::RESOURCES_TEMPLATES_LIST => {
                self.list(ListKind::Templates, params, incoming.principal.as_deref())
            }
            method::TOOLS_CALL => self.mrtr(Target::Tool, &id, params, meta, &incoming).await,
            method::PROMPTS_GET => {
                self.mrtr(Target::Prompt, &id, params, meta, &incoming)
                    .await
            }
            method::RESOURCES_READ => {
                self.mrtr(Target::Resource, &id, params, meta, &incoming)
                    .await
            }
            method::COMPLETE => self.complete(&id, params, meta, &incoming).await,
            skills::SKILLS_LIST | skills::SKILLS_GET | skills::DIRECTORY_READ
                if self.relay().is_some() =>
            {
                let principal = incoming.principal.as_deref();
                match (self.relay(), method.as_str()) {
                    (Some(relay), skills::SKILLS_LIST) => {
                        self.relay_list(relay, params, principal).await
                    }
                    (Some(relay), skills::SKILLS_GET) => {
                        self.relay_get(relay, params, principal).await
                    }
                    (Some(relay), _) => self.relay_directory(relay, params, principal).await,
                    (None, m) => Err(Fault::method_not_found(m)),
                }
            }
            skills::SKILLS_LIST => self.skills_list(params).await,
            skills::SKILLS_GET => self.skills_get(params).await,
            skills::DIRECTORY_READ => self.directory_read(params).await,
            m if switchboard_wire::tasks::is_task_method(m) && incoming.session.is_none() => {
                self.task_request(m, params, &meta, &incoming)
            }
            method::SUBSCRIPTIONS_LISTEN if incoming.session.is_none() => {
                return match self.listen(id, params, &meta, &incoming) {
                    Ok(s) => Reply::Listen(Box::new(s)),
                    Err(f) => Reply::Error(f),
                };
            }
            other => match &incoming.session {
                Some(session) => legacy_only(other, params, session),
                None if other == method::INITIALIZE => Err(self.initialize_not_supported()),
                None => Err(Fault::method_not_found(other)),
            },
        };
        match result {
            Ok(bytes) => Reply::Result(bytes),
            Err(fault) => Reply::Error(fault),
        }
    }

    async fn mrtr(
        &self,
        target: Target,
        id: &RequestId,
        params: Option<Value>,
        meta: Arc<RequestMeta>,
        incoming: &Incoming,
    ) -> Result<Vec<u8>, Fault> {
        let params = params_object(params, target.method())?;
        let Some(session) = &incoming.session else {
            return match self.step(target, id, params, meta, incoming).await? {
                Step::Done(bytes) => Ok(bytes),
                Step::Ask {
                    ask,
                    target: name,
                    digest,
                } => self.render_input_required(target, &name, &digest, &ask, incoming),
            };
        };
        // Boxed: the legacy loop's state stays out of every modern request.
        Box::pin(self.legacy_rounds(target, id, params, meta, incoming, session)).await
    }

    /// A legacy client cannot retry with input responses: ask it ourselves
    /// with server-to-client requests, then retry as a modern client would.
    async fn legacy_rounds(
        &self,
        target: Target,
        id: &RequestId,
        params: Map<String, Value>,
        meta: Arc<RequestMeta>,
        incoming: &Incoming,
        session: &Session,
    ) -> Result<Vec<u8>, Fault> {
        let mut round_params = params.clone();
        for _ in 0..MAX_LEGACY_ROUNDS {
            match self
                .step(target, id, round_params, Arc::clone(&meta), incoming)
                .await?
            {
                Step::Done(bytes) => return Ok(bytes),
                Step::Ask {
                    ask,
                    target: name,
                    digest,
                } => {
                    if ask.is_empty() {
                        return Err(empty_ask());
                    }
                    let mut answers = Map::new();
                    for (key, m, p) in &ask.requests {
                        let answer = session
                            .ask(
                                &incoming.sink,
                                m,
                                p.clone(),
                                self.inner.options.legacy_answer_timeout,
                            )
                            .await?;
                        match answer {
                            Ok(v) => {
                                answers.insert(key.clone(), v);
                            }
                            Err(e) => {
                                return Err(Fault::internal(format!(
                                    "the client refused {m}: {}",
                                    e.message
                                )));
                            }
                        }
                    }
                    round_params = params.clone();
                    round_params.insert("inputResponses".into(), Value::Object(answers));
                    if let Some(state) = self.seal(target, &name, &digest, &ask, incoming)? {
                        round_params.insert("requestState".into(), Value::String(state));
                    }
                }
            }
        }
        Err(Fault::internal(
            "the handler kept asking for input; giving up after 16 rounds",
        ))
    }

    /// One pass of an MRTR-capable request: verify `requestState`, validate,
    /// call the handler.
    async fn step(
        &self,
        target: Target,
        id: &RequestId,
        mut params: Map<String, Value>,
        meta: Arc<RequestMeta>,
        incoming: &Incoming,
    ) -> Result<Step, Fault> {
        let name = match params.get(target.key()) {
            Some(Value::String(s)) => s.clone(),
            _ => {
                return Err(Fault::invalid_params(format!(
                    "{} params need a \"{}\" string",
                    target.method(),
                    target.key()
                )));
            }
        };
        let input = match params.remove("inputResponses") {
            None => InputResponses::default(),
            Some(Value::Object(m)) => InputResponses::new(Some(m)),
            Some(_) => {
                return Err(Fault::invalid_params(
                    "inputResponses must be an object keyed like the inputRequests it answers",
                ));
            }
        };
        let state = match params.remove("requestState") {
            None => None,
            Some(Value::String(token)) => {
                let digest = params_digest(&params);
                Some(self.open_state(target, &name, &digest, &token, incoming)?)
            }
            Some(_) => return Err(Fault::invalid_params("requestState must be a string")),
        };
        let registry = self.registry();
        let caps = Arc::clone(&meta);
        let ask = |ask: InputRequired, name: String, params: &Map<String, Value>| {
            ask_step(ask, name, params, &caps.client_capabilities)
        };
        let ctx = |method: &'static str| {
            Context::new(ContextParts {
                id: id.clone(),
                method,
                meta,
                principal: incoming.principal.clone(),
                sink: incoming.sink.clone(),
                cancel: incoming.cancel.clone(),
                input,
                state,
                server: self.clone(),
            })
        };
        match target {
            Target::Tool => {
                let Some(entry) = registry.tool(&name).cloned() else {
                    return Err(unknown_tool(&name));
                };
                drop(registry);
                let empty = empty_args();
                let args = match params.get("arguments") {
                    None | Some(Value::Null) => &empty,
                    Some(v @ Value::Object(_)) => v,
                    Some(_) => return Err(Fault::invalid_params("arguments must be an object")),
                };
                // A retry of a call already answered gets the recorded
                // answer; the first run of a key records its answer.
                let key = caps
                    .extra
                    .get(IDEMPOTENCY_KEY)
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let running = match key {
                    None => None,
                    Some(key) => {
                        let caller = incoming.principal.as_ref().map(|p| p.subject.as_str());
                        let call = params_digest(&params);
                        match self.inner.idempotency.begin(caller, call, &key).await {
                            Begin::Answered(answer) => {
                                return Ok(Step::Done(answer.as_ref().clone()));
                            }
                            Begin::Run(running) => Some(running),
                        }
                    }
                };
                match self.run_tool(&entry, args, ctx(method::TOOLS_CALL)).await? {
                    ToolStep::Done(bytes) => {
                        if let Some(running) = running {
                            running.finish(bytes.clone());
                        }
                        Ok(Step::Done(bytes))
                    }
                    ToolStep::Ask(a) => ask(a, name, &params),
                }
            }
            Target::Prompt => {
                let Some(entry) = registry.prompt(&name).cloned() else {
                    return Err(Fault::invalid_params(format!(
                        "unknown prompt {name:?}; call prompts/list for the prompts this server offers"
                    )));
                };
                drop(registry);
                let args = match params.get("arguments") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    Some(_) => return Err(Fault::invalid_params("arguments must be an object")),
                };
                if let Some((k, _)) = args.iter().find(|(_, v)| !v.is_string()) {
                    return Err(Fault::invalid_params(format!(
                        "prompt argument {k:?} must be a string"
                    )));
                }
                if let Some(missing) = entry.missing_argument(&args) {
                    return Err(Fault::invalid_params(format!(
                        "prompt {name:?} needs the argument {missing:?}"
                    )));
                }
                match entry
                    .handler
                    .call(Value::Object(args), ctx(method::PROMPTS_GET))
                    .await
                {
                    Ok(Outcome::Complete(mut result)) => Ok(Step::Done(
                        self.result_bytes(&mut result, |r| &mut r.header),
                    )),
                    Ok(Outcome::InputRequired(a)) => ask(a, name, &params),
                    Ok(Outcome::Task(_)) => Err(only_tools_run_as_tasks()),
                    Err(e) => Err(handler_fault(e)),
                }
            }
            Target::Resource => {
                let handled = if let Some(entry) = registry.resource(&name).cloned() {
                    drop(registry);
                    let cache = entry.cache.clone();
                    entry
                        .handler
                        .call(ctx(method::RESOURCES_READ))
                        .await
                        .map(|o| (o, cache))
                } else if let Some(read) =
                    self.relay_read(&name, incoming.principal.as_deref()).await
                {
                    // A skill file served on another server's behalf.
                    return Ok(Step::Done(self.read_result(&name, read?, None)?));
                } else if let Some(read) = self.read_skill_file(&name).await {
                    // A skill file (checked before templates, which may
                    // match any URI).
                    return Ok(Step::Done(self.read_result(&name, read?, None)?));
                } else if let Some((entry, matched)) = registry
                    .templates
                    .iter()
                    .find_map(|t| t.parsed.matches(&name).map(|m| (Arc::clone(t), m)))
                {
                    drop(registry);
                    let cache = entry.cache.clone();
                    entry
                        .handler
                        .call(matched, ctx(method::RESOURCES_READ))
                        .await
                        .map(|o| (o, cache))
                } else {
                    return Err(Fault::from_rpc(resource_not_found(&name)));
                };
                match handled {
                    Ok((Outcome::Complete(result), cache)) => {
                        Ok(Step::Done(self.read_result(&name, result, cache)?))
                    }
                    Ok((Outcome::InputRequired(a), _)) => ask(a, name, &params),
                    Ok((Outcome::Task(_), _)) => Err(only_tools_run_as_tasks()),
                    Err(e) => Err(handler_fault(e)),
                }
            }
        }
    }

    fn read_result(
        &self,
        uri: &str,
        mut result: ReadResourceResult,
        cache: Option<CacheHints>,
    ) -> Result<Vec<u8>, Fault> {
        if result.contents.is_empty() {
            // RES-03: never an empty contents list.
            return Err(Fault::from_rpc(resource_not_found(uri)));
        }
        if result.cache.ttl_ms.is_none() || result.cache.cache_scope.is_none() {
            let hints = cache.unwrap_or_else(|| self.inner.options.read_cache.clone());
            result.cache.ttl_ms = result.cache.ttl_ms.or(hints.ttl_ms).map(|t| t.max(0));
            result.cache.cache_scope = result.cache.cache_scope.or(hints.cache_scope);
        }
        Ok(self.result_bytes(&mut result, |r| &mut r.header))
    }

    /// Serializes a result with `resultType` and the `serverInfo` `_meta`.
    pub(crate) fn result_bytes<T: Serialize>(
        &self,
        value: &mut T,
        header: impl FnOnce(&mut T) -> &mut ResultHeader,
    ) -> Vec<u8> {
        let has_meta = {
            let h = header(value);
            if h.result_type.is_none() {
                h.result_type = Some(ResultType::Complete);
            }
            match &mut h.meta {
                Some(m) => {
                    self.add_server_info(m);
                    true
                }
                None => false,
            }
        };
        let bytes = to_json(value);
        if has_meta {
            bytes
        } else {
            self.finish_result(bytes)
        }
    }

    fn binding<'a>(
        &self,
        target: Target,
        name: &'a str,
        digest: &'a [u8; 16],
        incoming: &'a Incoming,
    ) -> Binding<'a> {
        Binding {
            method: target.method(),
            name,
            principal: incoming.principal.as_deref().map(|p| p.subject.as_str()),
            params: digest,
        }
    }

    fn open_state(
        &self,
        target: Target,
        name: &str,
        digest: &[u8; 16],
        token: &str,
        incoming: &Incoming,
    ) -> Result<OpenedState, Fault> {
        let binding = self.binding(target, name, digest, incoming);
        // A replica-bound state starts with the replica's name and a `.`;
        // the name is routing only, outside the sealed part.
        let token = token.split_once('.').map_or(token, |(_, sealed)| sealed);
        self.inner
            .keys
            .open_state(token, &binding)
            .map_err(|e| Fault::invalid_params(e.message()))
    }

    fn seal(
        &self,
        target: Target,
        name: &str,
        digest: &[u8; 16],
        ask: &InputRequired,
        incoming: &Incoming,
    ) -> Result<Option<String>, Fault> {
        match &ask.state {
            None => Ok(None),
            Some(Err(e)) => Err(Fault::internal(format!(
                "the handler's request state cannot be serialized: {e}"
            ))),
            Some(Ok(value)) => {
                let binding = self.binding(target, name, digest, incoming);
                let sealed =
                    self.inner
                        .keys
                        .seal_state(&binding, value, self.inner.options.state_ttl);
                // `ORIGIN.TOKEN`: the token is base64url, never a `.`.
                Ok(Some(match self.inner.tasks.origin() {
                    Some(origin) if ask.replica_bound => format!("{origin}.{sealed}"),
                    _ => sealed,
                }))
            }
        }
    }

    /// The `input_required` result (MRTR): the input requests and the
    /// sealed state.
    fn render_input_required(
        &self,
        target: Target,
        name: &str,
        digest: &[u8; 16],
        ask: &InputRequired,
        incoming: &Incoming,
    ) -> Result<Vec<u8>, Fault> {
        if ask.is_empty() {
            return Err(empty_ask());
        }
        let state = self.seal(target, name, digest, ask, incoming)?;
        let mut out = b"{\"resultType\":\"input_required\"".to_vec();
        if !ask.requests.is_empty() {
            out.extend_from_slice(b",\"inputRequests\":");
            out.extend_from_slice(&to_json(&ask.requests_object()));
        }
        if let Some(state) = state {
            out.extend_from_slice(b",\"requestState\":");
            out.extend_from_slice(&to_json(&state));
        }
        out.push(b'}');
        Ok(self.finish_result(out))
    }

    // -- completion --------------------------------------------------------

    async fn complete(
        &self,
        id: &RequestId,
        params: Option<Value>,
        meta: Arc<RequestMeta>,
        incoming: &Incoming,
    ) -> Result<Vec<u8>, Fault> {
        let Some(handler) = &self.inner.completion else {
            return Err(Fault::method_not_found(method::COMPLETE));
        };
        let request = CompleteRequest::parse(params.as_ref()).map_err(Fault::invalid_params)?;
        let registry = self.registry();
        // What the offer filter hides from this caller is, like a get or a
        // read of it, the handler's to refuse (as unknown): it gets no
        // argument check here, which would tell the caller it exists.
        let hidden = |what: Offered<'_>| {
            self.offer_filter()
                .is_some_and(|keep| !keep(incoming.principal.as_deref(), what))
        };
        match &request.reference {
            CompletionRef::Prompt { name } => {
                let Some(prompt) = registry.prompt(name) else {
                    return Err(Fault::invalid_params(format!("unknown prompt {name:?}")));
                };
                let known = prompt
                    .def
                    .arguments
                    .iter()
                    .flatten()
                    .any(|a| a.name == request.argument);
                if !known && !hidden(Offered::Prompt(name)) {
                    return Err(Fault::invalid_params(format!(
                        "prompt {name:?} has no argument {:?}",
                        request.argument
                    )));
                }
            }
            CompletionRef::ResourceTemplate { uri } => {
                if !registry
                    .templates
                    .iter()
                    .any(|t| t.def.uri_template == *uri)
                {
                    return Err(Fault::invalid_params(format!(
                        "unknown resource template {uri:?}"
                    )));
                }
            }
        }
        drop(registry);
        let ctx = Context::new(ContextParts {
            id: id.clone(),
            method: method::COMPLETE,
            meta,
            principal: incoming.principal.clone(),
            sink: incoming.sink.clone(),
            cancel: incoming.cancel.clone(),
            input: InputResponses::default(),
            state: None,
            server: self.clone(),
        });
        let completion = handler.call(request, ctx).await.map_err(handler_fault)?;
        let mut out = b"{\"completion\":".to_vec();
        out.extend_from_slice(&to_json(&completion::bound(completion)));
        out.extend_from_slice(b",\"resultType\":\"complete\"}");
        Ok(self.finish_result(out))
    }

    // -- subscriptions -----------------------------------------------------

    fn listen(
        &self,
        id: RequestId,
        params: Option<Value>,
        meta: &RequestMeta,
        incoming: &Incoming,
    ) -> Result<Subscription, Fault> {
        let filter = match params.as_ref().and_then(|p| p.get("notifications")) {
            Some(v @ Value::Object(_)) => SubscriptionFilter::deserialize_from(v)
                .map_err(|e| Fault::invalid_params(format!("invalid notifications filter: {e}")))?,
            Some(_) => {
                return Err(Fault::invalid_params("notifications must be an object"));
            }
            None => {
                return Err(Fault::invalid_params(
                    "subscriptions/listen needs a notifications filter",
                ));
            }
        };
        let mut filter = filter;
        if let (Some(keep), Some(uris)) =
            (self.offer_filter(), filter.resource_subscriptions.as_mut())
        {
            // Updates of a resource the caller may not read are not its
            // to hear of: such a URI is left out (the acknowledgment shows
            // what is honoured).
            let principal = incoming.principal.as_deref();
            let registry = self.registry();
            uris.retain(|uri| {
                keep(principal, Offered::Resource(uri))
                    || registry.templates.iter().any(|t| {
                        t.parsed.matches(uri).is_some()
                            && keep(principal, Offered::Template(&t.def.uri_template))
                    })
            });
        }
        let task_ids = self.listen_task_ids(&filter, meta, incoming)?;
        Ok(Subscription::open(
            id,
            &filter,
            self.deliverable(),
            self.notifier(),
            self.inner.shutdown.clone(),
        )
        .with_task_ids(task_ids)
        .for_subject(incoming.principal.as_deref().map(|p| p.subject.as_str())))
    }
}

trait DeserializeFrom: Sized {
    fn deserialize_from(v: &Value) -> Result<Self, serde_json::Error>;
}

impl DeserializeFrom for SubscriptionFilter {
    fn deserialize_from(v: &Value) -> Result<Self, serde_json::Error> {
        serde::Deserialize::deserialize(v)
    }
}

fn unsupported_version(requested: &str) -> Fault {
    Fault::new(
        FaultKind::Version,
        ErrorObject::unsupported_version(version::MODERN_SUPPORTED, requested),
    )
}

fn resource_not_found(uri: &str) -> ErrorObject {
    match HandlerError::resource_not_found(uri).into_parts() {
        Err(obj) => obj,
        Ok(m) => ErrorObject::new(switchboard_wire::ErrorCode::InvalidParams, m),
    }
}

/// A handler error outside `tools/call`: business failures become -32603.
fn handler_fault(e: HandlerError) -> Fault {
    match e.into_parts() {
        Ok(message) => Fault::internal(message),
        Err(obj) => Fault::from_rpc(obj),
    }
}

/// Methods only legacy sessions have.
fn legacy_only(method: &str, params: Option<Value>, session: &Session) -> Result<Vec<u8>, Fault> {
    let uri = || {
        params
            .as_ref()
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Fault::invalid_params(format!("{method} needs a uri")))
    };
    match method {
        method::PING => Ok(b"{}".to_vec()),
        method::LOGGING_SET_LEVEL => {
            let level = params
                .as_ref()
                .and_then(|p| p.get("level"))
                .cloned()
                .and_then(|v| serde_json::from_value::<LoggingLevel>(v).ok())
                .ok_or_else(|| Fault::invalid_params("level must be a log level"))?;
            session.set_log_level(level);
            Ok(b"{}".to_vec())
        }
        method::RESOURCES_SUBSCRIBE => {
            session.subscribe(&uri()?);
            Ok(b"{}".to_vec())
        }
        method::RESOURCES_UNSUBSCRIBE => {
            session.unsubscribe(&uri()?);
            Ok(b"{}".to_vec())
        }
        method::INITIALIZE => Err(Fault::invalid_request(
            "this session is already initialized",
        )),
        other => Err(Fault::method_not_found(other)),
    }
}

/// The tasks extension covers `tools/call` only.
fn only_tools_run_as_tasks() -> Fault {
    Fault::internal("only tools/call can be answered with a task")
}

/// MRTR-03: an `input_required` answer must ask for something or carry
/// state.
fn empty_ask() -> Fault {
    Fault::internal("the handler answered input_required with neither input requests nor state")
}
