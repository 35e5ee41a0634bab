//! `tools/call`: checking the arguments, running the handler (or the
//! task it asks for) as a future, and shaping the tool's result.

use std::borrow::Cow;

use super::*;

/// The outcome of running a tool.
pub(super) enum ToolStep {
    Done(Vec<u8>),
    Ask(InputRequired),
}

/// A tool call once its arguments are checked.
pub(super) enum ToolStart {
    /// Answered without the handler (arguments the schema refuses).
    Done(ToolStep),
    /// The handler is running.
    Running(ToolRun),
}

/// A tool's handler in progress, with the server it runs on; resolves to
/// the call's step.
pub(super) struct RunningTool {
    server: Server,
    run: ToolRun,
}

/// A tool's handler in progress, then (when it answers with a task) the
/// start of that task. Polled with the server lent to it.
pub(super) struct ToolRun {
    entry: Arc<ToolEntry>,
    stage: ToolStage,
    /// What starting a task needs, taken when the handler asks for one
    /// (`None` for a fast-path call, which lends its own).
    task: Option<TaskParts>,
}

pub(super) enum ToolStage {
    Handler(BoxFuture<'static, Result<ToolOutcome, HandlerError>>),
    Task(BoxFuture<'static, Result<Started, Fault>>),
}

/// The request's parts a task started by its tool keeps.
pub(super) struct TaskParts {
    meta: Arc<RequestMeta>,
    principal: Option<Arc<Principal>>,
    cancel: Cancellation,
}

impl TaskParts {
    fn new(
        meta: &Arc<RequestMeta>,
        principal: Option<&Arc<Principal>>,
        cancel: &Cancellation,
    ) -> TaskParts {
        TaskParts {
            meta: Arc::clone(meta),
            principal: principal.cloned(),
            cancel: cancel.clone(),
        }
    }

    fn of(ctx: &Context) -> TaskParts {
        TaskParts::new(&ctx.meta, ctx.principal.as_ref(), &ctx.cancel)
    }
}

/// The fault for arguments the fast path kept as text that then do not
/// parse, which its check rules out.
fn unreadable_arguments(e: serde_json::Error) -> Fault {
    Fault::internal(format!("the call's arguments could not be read again: {e}"))
}

impl Future for RunningTool {
    type Output = Result<ToolStep, Fault>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.run.poll_step(cx, &this.server, None)
    }
}

impl ToolRun {
    /// A tool whose handler has been called.
    fn new(
        entry: Arc<ToolEntry>,
        task: Option<TaskParts>,
        handler: BoxFuture<'static, Result<ToolOutcome, HandlerError>>,
    ) -> ToolRun {
        ToolRun {
            entry,
            stage: ToolStage::Handler(handler),
            task,
        }
    }

    /// Polls the handler, then the task it asks for, on `server`. What the
    /// task keeps comes from the tool's own parts, or else from `call` (a
    /// fast-path call lends its own, so that none are cloned for the
    /// calls, nearly all, that start no task).
    fn poll_step(
        &mut self,
        cx: &mut std::task::Context<'_>,
        server: &Server,
        call: Option<&CallRest<'_>>,
    ) -> Poll<Result<ToolStep, Fault>> {
        loop {
            // Settled where it lies: a tool's outcome is large, and each
            // move copies it.
            let mut outcome = match &mut self.stage {
                ToolStage::Handler(handler) => match ready!(handler.as_mut().poll(cx)) {
                    Ok(Outcome::Task(work)) => {
                        let Some(TaskParts {
                            meta,
                            principal,
                            cancel,
                        }) = self.task.take().or_else(|| call.map(CallRest::task_parts))
                        else {
                            return Poll::Ready(Err(Fault::internal(
                                "a tool asked for a task with no request to start it from",
                            )));
                        };
                        let server = server.clone();
                        // Rare: boxed, so that it weighs nothing on every
                        // other call.
                        self.stage = ToolStage::Task(Box::pin(async move {
                            server.start_task(work, meta, principal, cancel).await
                        }));
                        continue;
                    }
                    other => other,
                },
                ToolStage::Task(start) => match ready!(start.as_mut().poll(cx)) {
                    Ok(Started::Created(bytes)) => return Poll::Ready(Ok(ToolStep::Done(bytes))),
                    Ok(Started::Ran(run)) => (*run).map(Outcome::Complete),
                    Err(f) => return Poll::Ready(Err(f)),
                },
            };
            return Poll::Ready(server.settle_tool(&self.entry, &mut outcome));
        }
    }
}

/// A fast-path `tools/call` once its handler is called.
pub(crate) enum CallStart<'a> {
    /// Answered already.
    Done(Reply),
    /// Waiting for the handler (poll it: most answer on the first poll).
    Running(RunningCall<'a>),
}

/// A fast-path `tools/call` whose handler is running; resolves to the
/// reply.
pub(crate) struct RunningCall<'a> {
    /// Borrowed from the caller until the call has to outlive it.
    server: Cow<'a, Server>,
    running: ToolRun,
    /// What the reply needs besides the tool's answer (an `input_required`
    /// answer is bound to the arguments); taken when it is ready.
    rest: Option<CallRest<'a>>,
}

impl RunningCall<'_> {
    /// The same call, no longer borrowing the request's text: for a
    /// handler that has to wait, whose call outlives the request's buffer.
    pub(crate) fn into_owned(self) -> RunningCall<'static> {
        RunningCall {
            server: Cow::Owned(self.server.into_owned()),
            running: self.running,
            rest: self.rest.map(|rest| CallRest {
                arguments: rest.arguments.into_owned(),
                meta: rest.meta,
                incoming: rest.incoming,
            }),
        }
    }
}

pub(super) struct CallRest<'a> {
    arguments: Arguments<'a>,
    meta: Arc<RequestMeta>,
    incoming: Incoming,
}

impl CallRest<'_> {
    /// What a task started by the call's tool keeps.
    fn task_parts(&self) -> TaskParts {
        TaskParts::new(
            &self.meta,
            self.incoming.principal.as_ref(),
            &self.incoming.cancel,
        )
    }
}

impl Future for RunningCall<'_> {
    type Output = Reply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Reply> {
        let this = &mut *self;
        // Answered already: the handler's future is spent, never polled again.
        let spent = || {
            Poll::Ready(Reply::Error(Fault::internal(
                "a call polled after its reply",
            )))
        };
        if this.rest.is_none() {
            return spent();
        }
        let step = ready!(this.running.poll_step(cx, &this.server, this.rest.as_ref()));
        let Some(rest) = this.rest.take() else {
            return spent();
        };
        Poll::Ready(this.server.tool_call_reply(
            step,
            &this.running.entry.def.name,
            rest.arguments,
            &rest.meta,
            &rest.incoming,
        ))
    }
}

pub(super) fn unknown_tool(name: &str) -> Fault {
    Fault::invalid_params(format!(
        "unknown tool {name:?}; call tools/list for the tools this server offers"
    ))
}

impl Server {
    /// Validates the arguments and runs a tool.
    pub(super) async fn run_tool(
        &self,
        entry: &Arc<ToolEntry>,
        args: &Value,
        ctx: Context,
    ) -> Result<ToolStep, Fault> {
        match self.start_tool(entry, args, ctx)? {
            ToolStart::Done(step) => Ok(step),
            ToolStart::Running(run) => {
                RunningTool {
                    server: self.clone(),
                    run,
                }
                .await
            }
        }
    }

    /// Validates the arguments and calls the tool's handler, without
    /// waiting for it: most handlers answer at once, and the runner polls
    /// the returned future once before deciding whether it must wait.
    pub(super) fn start_tool(
        &self,
        entry: &Arc<ToolEntry>,
        args: &Value,
        ctx: Context,
    ) -> Result<ToolStart, Fault> {
        if let Err(message) = entry.validator.validate(args) {
            // Input validation failures are tool errors the model can fix
            // (tools page, error handling).
            return Ok(ToolStart::Done(ToolStep::Done(
                self.tool_result(&mut failure_result(message)),
            )));
        }
        self.check_task_support(&entry.def, &ctx.meta.client_capabilities)?;
        let task = TaskParts::of(&ctx);
        Ok(ToolStart::Running(ToolRun::new(
            Arc::clone(entry),
            Some(task),
            entry.handler.call(args, ctx),
        )))
    }

    /// [`Server::start_tool`] for arguments as the fast path read them.
    /// When the tool's schema can be checked on their text
    /// ([`FlatSchema`](crate::schema::FlatSchema)) and it passes, a typed
    /// handler reads them straight from it; anything else (another
    /// schema, arguments it does not certainly admit, a text that does not
    /// read as the handler's type) is parsed and goes through
    /// [`Server::start_tool`], which says what is wrong as for every call.
    fn start_tool_from(
        &self,
        entry: Arc<ToolEntry>,
        arguments: &Arguments<'_>,
        mut ctx: LazyContext<'_>,
    ) -> Result<ToolStart, Fault> {
        if let (Arguments::Text(text), Some(flat)) = (arguments, &entry.flat)
            && flat.admits(text)
        {
            self.check_task_support(&entry.def, &ctx.meta.client_capabilities)?;
            // The call lends what a task keeps, if one is asked for.
            match entry.handler.call_text(text, ctx) {
                Ok(handler) => {
                    return Ok(ToolStart::Running(ToolRun::new(entry, None, handler)));
                }
                Err(unused) => ctx = unused,
            }
        }
        let value = arguments.value().map_err(unreadable_arguments)?;
        self.start_tool(&entry, &value, ctx.build())
    }

    /// What a tool's answer becomes (its task, if it asked for one, has
    /// started or run by now). A complete result is written where it
    /// lies; anything else is taken out of `outcome`.
    pub(super) fn settle_tool(
        &self,
        entry: &ToolEntry,
        outcome: &mut Result<ToolOutcome, HandlerError>,
    ) -> Result<ToolStep, Fault> {
        let name = &entry.def.name;
        if let Ok(Outcome::Complete(result)) = outcome {
            if let Some(v) = &entry.output_validator
                && !result.is_error()
            {
                let Some(sc) = &result.structured_content else {
                    return Err(Fault::internal(format!(
                        "tool {name:?} declares an outputSchema but returned no structuredContent"
                    )));
                };
                if let Err(m) = v.validate(sc) {
                    tracing::error!(tool = %name, "structured content breaks the output schema: {m}");
                    return Err(Fault::internal(format!(
                        "tool {name:?} returned structuredContent that does not match its outputSchema"
                    )));
                }
            }
            return Ok(ToolStep::Done(self.tool_result(result)));
        }
        match std::mem::replace(outcome, Ok(Outcome::InputRequired(InputRequired::new()))) {
            Ok(Outcome::InputRequired(a)) => Ok(ToolStep::Ask(a)),
            Ok(Outcome::Task(_)) => Err(Fault::internal("a task's work cannot start another task")),
            Ok(Outcome::Complete(_)) => Err(Fault::internal("a complete result was not settled")),
            Err(e) => match e.into_parts() {
                Ok(message) => Ok(ToolStep::Done(
                    self.tool_result(&mut failure_result(message)),
                )),
                Err(obj) => Err(Fault::from_rpc(obj)),
            },
        }
    }

    /// Routes a `tools/call` read by the fast path ([`crate::fast`]): the
    /// same checks and answers as the general path, without a JSON tree.
    pub(crate) async fn dispatch_tool_call(&self, call: ToolCall<'_>, incoming: Incoming) -> Reply {
        match self.start_tool_call(call, incoming) {
            CallStart::Done(reply) => reply,
            CallStart::Running(running) => running.await,
        }
    }

    /// [`Server::dispatch_tool_call`] without waiting for the handler: the
    /// reply when there is one at once, else the call in progress. Nothing
    /// of the call is held in a future until the handler has to wait.
    pub(crate) fn start_tool_call<'a>(
        &'a self,
        call: ToolCall<'a>,
        incoming: Incoming,
    ) -> CallStart<'a> {
        let ToolCall {
            id,
            name,
            arguments,
            meta,
        } = call;
        if !version::is_modern_supported(&meta.protocol_version) {
            return CallStart::Done(Reply::Error(unsupported_version(&meta.protocol_version)));
        }
        let Some(entry) = self.tool(&name) else {
            return CallStart::Done(Reply::Error(unknown_tool(&name)));
        };
        let ctx = LazyContext {
            id,
            method: method::TOOLS_CALL,
            meta: &meta,
            principal: incoming.principal.as_ref(),
            sink: &incoming.sink,
            cancel: &incoming.cancel,
            server: self,
        };
        let running = match self.start_tool_from(entry, &arguments, ctx) {
            Ok(ToolStart::Running(running)) => running,
            Ok(ToolStart::Done(step)) => {
                return CallStart::Done(self.tool_call_reply(
                    Ok(step),
                    &name,
                    arguments,
                    &meta,
                    &incoming,
                ));
            }
            Err(f) => return CallStart::Done(Reply::Error(f)),
        };
        CallStart::Running(RunningCall {
            server: Cow::Borrowed(self),
            running,
            rest: Some(CallRest {
                arguments,
                meta,
                incoming,
            }),
        })
    }

    /// The reply to a fast-path `tools/call` once its tool has answered.
    pub(super) fn tool_call_reply(
        &self,
        step: Result<ToolStep, Fault>,
        name: &str,
        arguments: Arguments<'_>,
        meta: &RequestMeta,
        incoming: &Incoming,
    ) -> Reply {
        let step = match step {
            Ok(ToolStep::Done(bytes)) => return Reply::Result(bytes),
            Ok(ToolStep::Ask(a)) => {
                let arguments = match arguments.into_value() {
                    Ok(arguments) => arguments,
                    Err(e) => return Reply::Error(unreadable_arguments(e)),
                };
                let mut params = Map::new();
                params.insert("name".into(), Value::from(name));
                params.insert("arguments".into(), arguments);
                ask_step(a, name.to_owned(), &params, &meta.client_capabilities)
            }
            Err(f) => return Reply::Error(f),
        };
        match step {
            Ok(Step::Ask {
                ask,
                target,
                digest,
            }) => {
                match self.render_input_required(Target::Tool, &target, &digest, &ask, incoming) {
                    Ok(bytes) => Reply::Result(bytes),
                    Err(f) => Reply::Error(f),
                }
            }
            Ok(Step::Done(bytes)) => Reply::Result(bytes),
            Err(f) => Reply::Error(f),
        }
    }

    /// Serializes a tool result by hand: text blocks are written directly
    /// instead of going through a map per block (the hot path of every
    /// server).
    pub(super) fn tool_result(&self, result: &mut CallToolResult) -> Vec<u8> {
        let mut out = Vec::with_capacity(192);
        out.extend_from_slice(b"{\"content\":[");
        for (i, block) in result.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                ContentBlock::Text { text, extra } if extra.is_empty() => {
                    out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                    switchboard_wire::json_text::write_str(&mut out, text);
                    out.push(b'}');
                }
                other => {
                    let _ = serde_json::to_writer(&mut out, other);
                }
            }
        }
        out.push(b']');
        if let Some(sc) = &result.structured_content {
            out.extend_from_slice(b",\"structuredContent\":");
            let _ = serde_json::to_writer(&mut out, sc);
        }
        match result.is_error {
            Some(true) => out.extend_from_slice(b",\"isError\":true"),
            Some(false) => out.extend_from_slice(b",\"isError\":false"),
            None => {}
        }
        out.extend_from_slice(b",\"resultType\":");
        match result.header.result_type.take() {
            // Nearly every answer: no serializer for a constant.
            None | Some(ResultType::Complete) => out.extend_from_slice(b"\"complete\""),
            Some(kind) => {
                let _ = serde_json::to_writer(&mut out, &kind);
            }
        }
        for (k, v) in &result.header.extra {
            out.push(b',');
            switchboard_wire::json_text::write_str(&mut out, k);
            out.push(b':');
            let _ = serde_json::to_writer(&mut out, v);
        }
        match &mut result.header.meta {
            None if !self.inner.options.server_info_meta => {}
            None => {
                out.push(b',');
                out.extend_from_slice(&self.inner.meta_member);
            }
            Some(meta) => {
                self.add_server_info(meta);
                out.extend_from_slice(b",\"_meta\":");
                let _ = serde_json::to_writer(&mut out, meta);
            }
        }
        out.push(b'}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The hand-written answer reads as serde's serialization of the
    /// same result (the server's info added to `_meta`), whatever it holds.
    #[test]
    fn a_tool_result_is_written_as_serde_writes_it() {
        let server = Server::builder("t", "1").build().unwrap();
        let info = server.inner.server_info.clone();
        let mut with_meta = CallToolResult::text("m");
        with_meta.header.meta = Some(Map::from_iter([("k".to_owned(), json!(1))]));
        let mut asking = CallToolResult::text("a");
        asking.header.result_type = Some(ResultType::InputRequired);
        let mut other = CallToolResult::text("o");
        other.header.result_type = Some(ResultType::Other("x-later".into()));
        other.header.extra.insert("x".into(), json!([1]));
        let mut structured = CallToolResult::text("s");
        structured.structured_content = Some(json!({"n": 1}));
        structured.is_error = Some(false);
        let cases = [
            CallToolResult::text("plain \"quoted\" \u{7}"),
            CallToolResult::error("failed"),
            with_meta,
            asking,
            other,
            structured,
        ];
        for mut result in cases {
            let mut expected = serde_json::to_value(&result).unwrap();
            let kind = result.header.result_type.clone().unwrap_or_default();
            expected["resultType"] = json!(kind.as_str());
            let meta = expected["_meta"].as_object().cloned().unwrap_or_default();
            expected["_meta"] = json!(meta);
            expected["_meta"]["io.modelcontextprotocol/serverInfo"] = info.clone();
            let written = server.tool_result(&mut result);
            let written: Value = serde_json::from_slice(&written).unwrap();
            assert_eq!(written, expected);
        }
    }
}
