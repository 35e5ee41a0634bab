//! The multi round-trip request loop (MRTR): a request answered with
//! `input_required` is answered through the [`InputHandler`] and sent
//! again with the responses and the echoed `requestState`, under a new id,
//! until it completes or the round limit is reached.

use super::*;

impl Client {
    /// A request with the MRTR loop for the methods that allow it, and the
    /// `resultType` checks for all (WIRE-08, WIRE-09, MRTR-02).
    pub(super) async fn request_inner(
        &self,
        method: &str,
        params: JsonObject,
        headers: Vec<(String, String)>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        self.request_rounds(method, params, headers, options, false, None)
            .await
            .map(Answered::into_value)
    }

    /// [`Client::request_inner`]; with `tool`, a `tools/call` whose
    /// complete result the transport may hand back already typed. When
    /// sending fails, the request that failed is left in `failed` (when
    /// given), for a caller that sends it again.
    pub(super) async fn request_rounds(
        &self,
        method: &str,
        mut params: JsonObject,
        headers: Vec<(String, String)>,
        options: &RequestOptions,
        tool: bool,
        failed: Option<&mut Option<Arc<Request>>>,
    ) -> Result<Answered, ClientError> {
        let mut round = 0;
        loop {
            let outgoing = self.prepare(method, params, headers.clone(), options);
            // The params come back from the sent request only when a retry
            // needs them: the common, complete answer copies nothing.
            let sent = Arc::clone(&outgoing.request);
            let sent_back = if tool {
                self.send_prepared_tool(method, outgoing, options).await
            } else {
                self.send_prepared(method, outgoing, options)
                    .await
                    .map(Answered::Value)
            };
            let value = match sent_back {
                Ok(Answered::Value(value)) => value,
                Ok(complete @ Answered::Complete(_)) => return Ok(complete),
                Err(e) => {
                    if let Some(failed) = failed {
                        *failed = Some(sent);
                    }
                    return Err(e);
                }
            };
            match ResultType::of(&value) {
                ResultType::Complete => return Ok(Answered::Value(value)),
                // The caller drives the task (crate::task).
                kind if kind.is_task() && self.accepts_task(method) => {
                    return Ok(Answered::Value(value));
                }
                ResultType::Other(kind) => {
                    return Err(self.invalid(method, format!("unknown resultType {kind:?}")));
                }
                ResultType::InputRequired if !method::allows_input_required(method) => {
                    return Err(self.invalid(
                        method,
                        "input_required is only allowed for tools/call, resources/read and prompts/get",
                    ));
                }
                ResultType::InputRequired if options.relay_input => {
                    let result: InputRequiredResult =
                        serde_json::from_value(value).map_err(|e| {
                            self.invalid(method, format!("malformed input_required: {e}"))
                        })?;
                    return Err(ClientError::InputRequired {
                        server: self.inner.name.clone(),
                        method: method.into(),
                        result: Box::new(result),
                    });
                }
                ResultType::InputRequired => {}
            }
            round += 1;
            if round > self.inner.config.max_input_rounds {
                return Err(self.invalid(
                    method,
                    format!(
                        "still input_required after {} rounds",
                        self.inner.config.max_input_rounds
                    ),
                ));
            }
            let required: InputRequiredResult = serde_json::from_value(value)
                .map_err(|e| self.invalid(method, format!("malformed input_required: {e}")))?;
            if required.input_requests.is_none() && required.request_state.is_none() {
                return Err(self.invalid(
                    method,
                    "input_required without inputRequests or requestState (MRTR-03)",
                ));
            }
            // Boxed: the rare path should not grow every call's future.
            let responses = Box::pin(self.answer_inputs(method, &required)).await?;
            // The `_meta` we sent goes back in as the caller's: the next
            // round keeps the caller's keys and gets fresh ones of ours.
            params = match Arc::unwrap_or_clone(sent).params {
                Some(Value::Object(sent)) => sent,
                _ => JsonObject::new(),
            };
            // The retry is the same request with this round's answers and the
            // state echoed verbatim, under a new id (MRTR-12, MRTR-13, MRTR-14).
            params.remove("inputResponses");
            params.remove("requestState");
            if let Some(responses) = responses {
                params.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = required.request_state {
                params.insert("requestState".into(), Value::String(state));
            }
        }
    }

    /// Answers every input request of one round, keyed like the requests.
    pub(crate) async fn answer_inputs(
        &self,
        method: &str,
        required: &InputRequiredResult,
    ) -> Result<Option<JsonObject>, ClientError> {
        self.answer_inputs_with(&*self.inner.handler, method, required)
            .await
    }

    /// [`Client::answer_inputs`] through another handler, within what the
    /// client's own handler declared.
    pub(crate) async fn answer_inputs_with(
        &self,
        handler: &dyn InputHandler,
        method: &str,
        required: &InputRequiredResult,
    ) -> Result<Option<JsonObject>, ClientError> {
        let Some(requests) = &required.input_requests else {
            return Ok(None);
        };
        let support = self.inner.handler.support();
        let mut round = Vec::with_capacity(requests.len());
        for (key, request) in required.requests() {
            let request = request.map_err(|v| {
                self.invalid(method, format!("input request {key:?} is malformed: {v}"))
            })?;
            if !support.covers(&request.method, request.params.as_ref()) {
                return Err(ClientError::Unsupported {
                    server: self.inner.name.clone(),
                    method: method.into(),
                    what: format!("{} (input request {key:?})", request.method),
                });
            }
            let question = InputQuestion::parse(&request.method, request.params)
                .map_err(|e| self.invalid(method, format!("input request {key:?}: {e}")))?;
            round.push((key.to_owned(), question));
        }
        let cx = InputContext {
            server: self.inner.name.clone(),
            method: Some(method.into()),
            era: Era::Modern,
        };
        let input_error = |reason: String| ClientError::Input {
            server: self.inner.name.clone(),
            method: method.into(),
            reason,
        };
        let responses: JsonObject = handler
            .answer_round(cx, round)
            .await
            .map_err(|e| input_error(e.0))?
            .into_iter()
            .map(|(key, answer)| (key, answer.into_value()))
            .collect();
        // Every request answered, under its own key.
        if let Some(key) = requests.keys().find(|k| !responses.contains_key(*k)) {
            return Err(input_error(format!("no answer to input request {key:?}")));
        }
        Ok(Some(responses))
    }
}
