//! The path every request takes: an id, `_meta` (version, capabilities
//! narrowed per request, client info, progress token, log level, trace
//! context), the `Mcp-*` headers, the transport round trip with its
//! timeout, the notifications that belong to the request, the outcome
//! checked and typed, and pagination.

use super::*;
use switchboard_wire::shared::lock;

impl Client {
    /// `Mcp-Param-*` headers for a tool call, when the transport sends them.
    pub(super) fn param_headers(
        &self,
        tool: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<Vec<(String, String)>, ClientError> {
        if !self.inner.transport.mirrors_param_headers() {
            return Ok(Vec::new());
        }
        let table = self.lock_headers();
        let Some(params) = table.get(tool) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(params.len());
        for p in params {
            match p.value(arguments) {
                Ok(Some(v)) => out.push((p.header_name(), encode_value(&v).into_owned())),
                Ok(None) => {}
                Err(e) => {
                    return Err(ClientError::Unsupported {
                        server: self.inner.name.clone(),
                        method: method::TOOLS_CALL.into(),
                        what: format!("arguments that match the tool's schema ({e})"),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The request with its `_meta`: the session's keys (shared), then the
    /// call's.
    fn build_request(
        &self,
        session: &Session,
        id: RequestId,
        method: &str,
        mut params: JsonObject,
        options: &RequestOptions,
        progress: Option<&RequestId>,
    ) -> Request {
        // Only this request's keys go in `params._meta`: the session's are
        // shared with every request, and the call's keys
        // and the caller's own `_meta` never override them.
        let narrowed = self.narrowed_base(session, options);
        let shared = narrowed.as_ref().unwrap_or(&session.base_meta);
        let base = shared.members();
        let mut meta = JsonObject::new();
        if let Some(extra) = &options.meta {
            for (k, v) in extra {
                if !base.contains_key(k) {
                    meta.entry(k.as_str()).or_insert_with(|| v.clone());
                }
            }
        }
        if let Some(Value::Object(caller)) = params.remove("_meta") {
            for (k, v) in caller {
                if !base.contains_key(&k) {
                    meta.entry(k).or_insert(v);
                }
            }
        }
        if session.era == Era::Modern {
            if let Some(level) = options.log_level.or(self.inner.config.log_level) {
                meta.insert(
                    LOG_LEVEL.into(),
                    serde_json::to_value(level).unwrap_or(Value::Null),
                );
            }
        }
        // A relayed round's answers; a later round of the client's own
        // MRTR loop carries its own instead. A 2025-11-25 server has no
        // such params.
        if let (Some(resume), Era::Modern) = (&options.resume, session.era) {
            if !params.contains_key("inputResponses") && !params.contains_key("requestState") {
                if let Some(responses) = &resume.input_responses {
                    params.insert("inputResponses".into(), Value::Object(responses.clone()));
                }
                if let Some(state) = &resume.request_state {
                    params.insert("requestState".into(), Value::from(state.as_str()));
                }
            }
        }
        if let Some(trace) = &options.trace {
            meta.insert(TRACEPARENT.into(), Value::from(trace.traceparent.as_str()));
            if let Some(state) = &trace.tracestate {
                meta.insert(TRACESTATE.into(), Value::from(state.as_str()));
            }
        }
        if let Some(token) = progress {
            meta.insert(PROGRESS_TOKEN.into(), token.to_value());
        }
        if let Some(key) = &options.idempotency_key {
            meta.insert(IDEMPOTENCY_KEY.into(), Value::from(key.as_str()));
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let request = Request::new(id, method, Some(Value::Object(params)));
        if base.is_empty() {
            request
        } else {
            request.with_shared_meta(Arc::clone(shared))
        }
    }

    /// The session's `_meta` declaring only the capabilities that
    /// [`RequestOptions::capabilities`] shares with the client's own;
    /// `None` when that is all of them (or the server is a legacy one).
    fn narrowed_base(
        &self,
        session: &Session,
        options: &RequestOptions,
    ) -> Option<Arc<SharedMeta>> {
        let caller = options.capabilities.as_ref()?;
        if session.era != Era::Modern {
            return None;
        }
        let mut last = lock(&self.inner.narrowed);
        if let Some(n) = last.as_ref() {
            if Arc::ptr_eq(&n.base, &session.base_meta) && n.caller == *caller {
                return n.meta.clone();
            }
        }
        let narrowed = self.inner.capabilities.narrowed_to(caller);
        let meta = (narrowed != self.inner.capabilities).then(|| {
            let mut base = session.base_meta.members().clone();
            base.insert(
                CLIENT_CAPABILITIES.into(),
                serde_json::to_value(&narrowed)
                    .unwrap_or_else(|_| Value::Object(JsonObject::new())),
            );
            Arc::new(SharedMeta::new(base))
        });
        *last = Some(Narrowed {
            base: Arc::clone(&session.base_meta),
            caller: caller.clone(),
            meta: meta.clone(),
        });
        meta
    }

    /// One request, one response: the raw result value, or the error.
    pub(super) async fn send(
        &self,
        method: &str,
        params: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let outgoing = self.prepare(method, params.unwrap_or_default(), Vec::new(), options);
        self.send_prepared(method, outgoing, options).await
    }

    /// Sends a prepared request under the call's timeout.
    pub(super) async fn send_prepared(
        &self,
        method: &str,
        outgoing: Outgoing,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let work = self.inner.transport.request(outgoing);
        let response = self.within_timeout(method, options, work).await?;
        self.outcome(method, response)
    }

    /// Sends a prepared `tools/call` like [`Client::send_prepared`]; a
    /// complete result the transport read straight into its type comes
    /// back as it is ([`Transport::call_tool`]).
    pub(super) async fn send_prepared_tool(
        &self,
        method: &str,
        outgoing: Outgoing,
        options: &RequestOptions,
    ) -> Result<Answered, ClientError> {
        let work = self.inner.transport.call_tool(outgoing);
        match self.within_timeout(method, options, work).await? {
            ToolAnswer::Complete(result) => Ok(Answered::Complete(result)),
            ToolAnswer::Response(response) => self.outcome(method, response).map(Answered::Value),
        }
    }

    /// Awaits a transport's round trip under the call's timeout.
    async fn within_timeout<T>(
        &self,
        method: &str,
        options: &RequestOptions,
        work: BoxFuture<'_, Result<T, TransportError>>,
    ) -> Result<T, ClientError> {
        let timeout = options.timeout.unwrap_or(self.inner.config.timeout);
        // On a legacy session the request counts as in flight, so that the
        // server's questions can be tied to it.
        let _in_flight = self.inner.legacy.load(Ordering::Relaxed).then(|| {
            self.inner
                .in_flight
                .enter(method, options.call_input.clone())
        });
        // Dropping the transport's future on expiry is what cancels the
        // request (notifications/cancelled on stdio, stream close on HTTP).
        Ok(tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| ClientError::Timeout {
                server: self.inner.name.clone(),
                method: method.into(),
                after: timeout,
            })??)
    }

    /// Builds one request: a fresh id, `_meta`, the notification sink.
    /// Kept out of `send_prepared` so its future stays small.
    pub(super) fn prepare(
        &self,
        method: &str,
        params: JsonObject,
        param_headers: Vec<(String, String)>,
        options: &RequestOptions,
    ) -> Outgoing {
        let session = self.session();
        let id = self.next_id();
        let progress = options.on_progress.as_ref().map(|_| id.clone());
        let request = self.build_request(&session, id, method, params, options, progress.as_ref());
        Outgoing {
            request: Arc::new(request),
            param_headers,
            sink: self.request_sink(options),
            leave_out_meta: self.inner.config.leave_out_result_meta,
        }
    }

    pub(crate) fn outcome(&self, method: &str, response: Response) -> Result<Value, ClientError> {
        response.outcome.map_err(|error| ClientError::Protocol {
            server: self.inner.name.clone(),
            method: method.into(),
            error,
        })
    }

    /// The sink for one request's notifications, when the caller wants them.
    fn request_sink(&self, options: &RequestOptions) -> Option<NotificationSink> {
        if options.on_progress.is_none() && options.on_notification.is_none() {
            return None;
        }
        let progress = options.on_progress.clone();
        let other = options.on_notification.clone();
        let general = self.inner.on_notification.clone();
        let server = self.inner.name.clone();
        Some(Arc::new(move |n: Notification| {
            if n.method == method::PROGRESS {
                if let Some(progress) = &progress {
                    match n.params.map(serde_json::from_value::<ProgressParams>) {
                        Some(Ok(p)) => progress(p),
                        _ => debug!(server = %server, "malformed progress notification dropped"),
                    }
                    return;
                }
            }
            match (&other, &general) {
                (Some(sink), _) | (None, Some(sink)) => sink(n),
                (None, None) => log_notification(&server, &n),
            }
        }))
    }

    /// A request whose complete result parses as `T`.
    pub(super) async fn typed<T: DeserializeOwned>(
        &self,
        method: &str,
        params: JsonObject,
        options: &RequestOptions,
    ) -> Result<T, ClientError> {
        let value = self
            .request_inner(method, params, Vec::new(), options)
            .await?;
        self.parse(method, value)
    }

    pub(super) fn parse<T: DeserializeOwned>(
        &self,
        method: &str,
        value: Value,
    ) -> Result<T, ClientError> {
        serde_json::from_value(value).map_err(|e| self.invalid(method, e.to_string()))
    }

    /// Pages through a listing until `nextCursor` is absent, refusing a
    /// repeated cursor and stopping at the page limit (PAGE-01…04). A
    /// cursor the server refuses (-32602, as a server does once the list
    /// changed under the cursor) restarts the listing from the beginning,
    /// once: pages of two versions of a list would skip or repeat items.
    pub(super) async fn list_all<T, F, Fut>(
        &self,
        method: &str,
        mut page: F,
    ) -> Result<Listing<T>, ClientError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<
            Output = Result<(Vec<T>, Option<String>, CacheHints, Vec<Dropped>), ClientError>,
        >,
    {
        let mut items = Vec::new();
        let mut dropped = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut cache: Option<CacheHints> = None;
        let mut pages = 0;
        let mut restarted = false;
        loop {
            if pages == self.inner.config.max_pages {
                return Err(
                    self.invalid(method, format!("listing did not end after {pages} pages"))
                );
            }
            let sent = cursor.take();
            let paged = sent.is_some();
            let (mut batch, next, hints, mut left_out) = match page(sent).await {
                Ok(answer) => answer,
                Err(e)
                    if paged
                        && !restarted
                        && e.code() == Some(switchboard_wire::ErrorCode::InvalidParams.code()) =>
                {
                    restarted = true;
                    items.clear();
                    dropped.clear();
                    seen.clear();
                    cache = None;
                    pages = 0;
                    continue;
                }
                Err(e) => return Err(e),
            };
            pages += 1;
            items.append(&mut batch);
            let max_items = self.inner.config.max_items;
            if items.len() > max_items {
                return Err(self.invalid(
                    method,
                    format!("the listing has more than {max_items} items"),
                ));
            }
            dropped.append(&mut left_out);
            cache = Some(match cache {
                None => hints,
                Some(c) => CacheHints {
                    ttl_ms: match (c.ttl_ms, hints.ttl_ms) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        _ => None,
                    },
                    cache_scope: c.cache_scope,
                },
            });
            match next {
                None => break,
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(self.invalid(
                            method,
                            format!(
                                "the server repeated cursor {next:?}; the listing would never end"
                            ),
                        ));
                    }
                    cursor = Some(next);
                }
            }
        }
        Ok(Listing {
            items,
            cache: cache.unwrap_or_default(),
            pages,
            dropped,
        })
    }

    /// Builds the `params` of a request the way `send` does, for callers in
    /// this crate that drive the transport themselves (listen).
    pub(crate) fn outgoing(
        &self,
        id: RequestId,
        method: &str,
        params: JsonObject,
        sink: NotificationSink,
    ) -> Outgoing {
        let session = self.session();
        let request = self.build_request(
            &session,
            id,
            method,
            params,
            &RequestOptions::default(),
            None,
        );
        Outgoing {
            request: Arc::new(request),
            param_headers: Vec::new(),
            sink: Some(sink),
            leave_out_meta: None,
        }
    }
}
