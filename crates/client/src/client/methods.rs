//! The typed API: one method per MCP request (discovery, tools, resources,
//! prompts, completion, listen streams), each built on the request path of
//! `send`, and the fast reader of a `tools/call` result.

use super::*;
use switchboard_wire::shared::lock;

impl Client {
    /// Fetches `server/discover` again (modern), or describes the legacy
    /// session as a `DiscoverResult` (its negotiated version, capabilities
    /// and instructions).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn discover(&self) -> Result<DiscoverResult, ClientError> {
        if self.era() == Era::Legacy {
            let d = self
                .server()
                .ok_or_else(|| self.invalid("initialize", "no session"))?;
            return Ok(DiscoverResult {
                supported_versions: vec![d.protocol_version],
                capabilities: d.capabilities,
                instructions: d.instructions,
                cache: CacheHints::default(),
                header: ResultHeader::default(),
            });
        }
        let result: DiscoverResult = self
            .typed(
                method::DISCOVER,
                JsonObject::new(),
                &RequestOptions::default(),
            )
            .await?;
        self.remember_discover(&result);
        Ok(result)
    }

    /// Checks the server is alive: `ping` for a legacy server,
    /// `server/discover` for a modern one (which has no ping).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn ping(&self) -> Result<(), ClientError> {
        match self.era() {
            Era::Legacy => self
                .send(method::PING, None, &RequestOptions::default())
                .await
                .map(drop),
            Era::Modern => self.discover().await.map(drop),
        }
    }

    /// One page of `tools/list`. `cursor` is echoed unchanged (`""` is a
    /// cursor). When the transport mirrors `x-mcp-header` parameters, tools
    /// with invalid annotations are left out of the page and listed in
    /// [`ToolsPage::dropped`] with the reason (HTTP-C-12/13).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_tools(&self, cursor: Option<&str>) -> Result<ToolsPage, ClientError> {
        let mut page: ListToolsResult = self
            .typed(
                method::TOOLS_LIST,
                cursor_params(cursor),
                &RequestOptions::default(),
            )
            .await?;
        let mut dropped = Vec::new();
        let max = self.inner.config.max_tool_bytes;
        page.tools.retain(|tool| {
            let size = serde_json::to_vec(tool).map_or(usize::MAX, |v| v.len());
            if size <= max {
                return true;
            }
            warn!(server = %self.inner.name, tool = %tool.name, size, "dropping an oversized tool definition");
            dropped.push(Dropped {
                name: tool.name.clone(),
                reason: format!("its definition is {size} bytes, over the limit of {max}"),
            });
            false
        });
        if self.inner.config.tasks {
            let mut support = lock(&self.inner.task_support);
            for tool in &page.tools {
                match crate::task::task_support_of(tool) {
                    Some(s) => support.insert(tool.name.clone(), s),
                    None => support.remove(&tool.name),
                };
            }
        }
        if self.inner.transport.mirrors_param_headers() {
            let mut table = self.lock_headers();
            page.tools.retain(|tool| match header_params(&tool.input_schema) {
                Ok(params) => {
                    table.insert(tool.name.clone(), params);
                    true
                }
                Err(e) => {
                    warn!(server = %self.inner.name, tool = %tool.name, error = %e, "dropping a tool with invalid x-mcp-header annotations");
                    table.remove(&tool.name);
                    dropped.push(Dropped {
                        name: tool.name.clone(),
                        reason: format!("invalid x-mcp-header annotation: {e}"),
                    });
                    false
                }
            });
        }
        Ok(ToolsPage { page, dropped })
    }

    /// Every tool, paging until `nextCursor` is absent; tools left out for
    /// invalid `x-mcp-header` annotations are in [`Listing::dropped`].
    ///
    /// # Errors
    /// [`ClientError::InvalidResult`] when the server repeats a cursor or
    /// the page limit is reached; otherwise as for any request.
    pub async fn list_all_tools(&self) -> Result<Listing<Tool>, ClientError> {
        self.list_all(method::TOOLS_LIST, |c| async move {
            let ToolsPage { page, dropped } = self.list_tools(c.as_deref()).await?;
            Ok((page.tools, page.next_cursor, page.cache, dropped))
        })
        .await
    }

    /// Calls a tool by its name on this server. A tool that ran and failed
    /// is `Ok` with `isError: true` (DESIGN item 10); `input_required` is
    /// never returned: the client answers through its [`InputHandler`] and
    /// retries (MRTR).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// [`Client::call_tool`] with options (timeout, progress, …).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let legacy_task = self.legacy_task_wanted(name, false);
        let value = match self
            .call_tool_value(name, arguments, options, legacy_task)
            .await?
        {
            Answered::Complete(result) => return Ok(self.trimmed(result)),
            Answered::Value(value) => value,
        };
        // A task handle (the tasks extension, or a 2025-11-25 task asked
        // for) is driven to its end here.
        let value = if ResultType::of(&value).is_task()
            || (legacy_task && crate::task::is_create_task_result(&value))
        {
            // Boxed: the task path is rare, and its state would otherwise
            // make every call's future (moved as a whole) twice as large.
            Box::pin(self.drive_task_value(value, options)).await?
        } else {
            value
        };
        CallToolResult::from_value(value)
            .map(|result| self.trimmed(result))
            .map_err(|reason| self.invalid(method::TOOLS_CALL, reason))
    }

    /// A tool result without the `_meta` keys the config leaves out.
    pub(crate) fn trimmed(&self, mut result: CallToolResult) -> CallToolResult {
        if let Some(leave_out) = self.inner.config.leave_out_result_meta {
            result.leave_out_meta(leave_out);
        }
        result
    }

    /// The answer of a `tools/call`: a complete result (typed, when the
    /// transport read it so) or a task handle.
    pub(crate) async fn call_tool_value(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
        legacy_task: bool,
    ) -> Result<Answered, ClientError> {
        let headers = self.param_headers(name, arguments.as_ref())?;
        // Room for `_meta` and the MRTR members without growing.
        let mut params = JsonObject::with_capacity(5);
        params.insert("name".into(), Value::from(name));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        if legacy_task {
            params.insert("task".into(), self.legacy_task_param());
        }
        // A 2025-11-25 task asked for is answered without a `resultType`,
        // like a complete result: only the general reading tells them apart.
        let typed = !legacy_task;
        // The request comes back when sending it fails, so the params of a
        // retry are not copied up front.
        let mut failed = None;
        let sent = self
            .request_rounds(
                method::TOOLS_CALL,
                params,
                headers,
                options,
                typed,
                Some(&mut failed),
            )
            .await;
        // Only a transport that mirrors headers can be refused for them.
        let refused = failed.filter(|_| self.inner.transport.mirrors_param_headers());
        let answer = match (sent, refused) {
            // --- HTTP: HeaderMismatch recovery (HTTP-C-14) ---
            // The server refused our Mcp-Param-* headers: the tool's schema
            // may have changed. Re-list the tools once and retry with fresh
            // headers; a second refusal is the caller's error (no loop).
            (Err(e), Some(request)) if e.code() == Some(ErrorCode::HeaderMismatch.code()) => {
                // The params as first given: without what this client
                // added (`_meta`, an MRTR round's members), which the retry
                // is given anew.
                let mut params = match Arc::unwrap_or_clone(request).params {
                    Some(Value::Object(params)) => params,
                    _ => JsonObject::new(),
                };
                for added in [
                    switchboard_wire::meta::META,
                    "inputResponses",
                    "requestState",
                ] {
                    params.remove(added);
                }
                warn!(server = %self.inner.name, tool = %name, error = %e, "header mismatch; re-listing tools and retrying once");
                // Boxed: a rare path, whose state (a whole tools listing)
                // would otherwise be part of every call's future, which
                // each caller up the stack moves as a whole.
                Box::pin(self.call_tool_relisted(name, params, options, typed)).await?
            }
            // --- end HTTP ---
            (other, _) => other?,
        };
        Ok(answer)
    }

    /// A `tools/call` sent again after the tools were listed anew (the
    /// server refused our `Mcp-Param-*` headers).
    async fn call_tool_relisted(
        &self,
        name: &str,
        params: JsonObject,
        options: &RequestOptions,
        typed: bool,
    ) -> Result<Answered, ClientError> {
        self.list_all_tools().await?;
        let arguments = params.get("arguments").and_then(Value::as_object);
        let headers = self.param_headers(name, arguments)?;
        self.request_rounds(method::TOOLS_CALL, params, headers, options, typed, None)
            .await
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_resources(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ClientError> {
        self.typed(
            method::RESOURCES_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every resource, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_all_tools`].
    pub async fn list_all_resources(&self) -> Result<Listing<Resource>, ClientError> {
        self.list_all(method::RESOURCES_LIST, |c| async move {
            let p = self.list_resources(c.as_deref()).await?;
            Ok((p.resources, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        self.typed(
            method::RESOURCES_TEMPLATES_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every resource template, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_all_tools`].
    pub async fn list_all_resource_templates(
        &self,
    ) -> Result<Listing<ResourceTemplate>, ClientError> {
        self.list_all(method::RESOURCES_TEMPLATES_LIST, |c| async move {
            let p = self.list_resource_templates(c.as_deref()).await?;
            Ok((p.resource_templates, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// Reads a resource (MRTR as for tools).
    ///
    /// # Errors
    /// [`ClientError`] as for any request; a missing resource is a protocol
    /// error (-32602, or the legacy -32002; RES-05).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.read_resource_with(uri, &RequestOptions::default())
            .await
    }

    /// [`Client::read_resource`] with options.
    ///
    /// # Errors
    /// As [`Client::read_resource`].
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: &RequestOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        let mut params = JsonObject::new();
        params.insert("uri".into(), Value::from(uri));
        self.typed(method::RESOURCES_READ, params, options).await
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_prompts(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListPromptsResult, ClientError> {
        self.typed(
            method::PROMPTS_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every prompt, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_all_tools`].
    pub async fn list_all_prompts(&self) -> Result<Listing<Prompt>, ClientError> {
        self.list_all(method::PROMPTS_LIST, |c| async move {
            let p = self.list_prompts(c.as_deref()).await?;
            Ok((p.prompts, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// Gets a prompt (MRTR as for tools).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ClientError> {
        self.get_prompt_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// [`Client::get_prompt`] with per-request options (e.g. a relayed
    /// `input_required`: [`RequestOptions::relay_input`]).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::from(name));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        self.typed(method::PROMPTS_GET, params, options).await
    }

    /// Asks for completions of one argument. `reference` is the
    /// `ref/prompt` or `ref/resource` object; `context` holds arguments
    /// already given.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn complete(
        &self,
        reference: Value,
        argument_name: &str,
        argument_value: &str,
        context: Option<JsonObject>,
    ) -> Result<CompleteResult, ClientError> {
        self.complete_with(
            reference,
            argument_name,
            argument_value,
            context,
            &RequestOptions::default(),
        )
        .await
    }

    /// [`Client::complete`] with per-request options.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn complete_with(
        &self,
        reference: Value,
        argument_name: &str,
        argument_value: &str,
        context: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<CompleteResult, ClientError> {
        let mut params = JsonObject::new();
        params.insert("ref".into(), reference);
        params.insert(
            "argument".into(),
            json!({"name": argument_name, "value": argument_value}),
        );
        if let Some(context) = context {
            params.insert("context".into(), json!({ "arguments": context }));
        }
        self.typed(method::COMPLETE, params, options).await
    }

    /// Opens a `subscriptions/listen` stream and waits for its
    /// acknowledgement (within the default timeout). Dropping the
    /// [`Subscription`] cancels it.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] for a legacy server; otherwise as for
    /// any request.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        if self.era() == Era::Legacy {
            return Err(ClientError::Unsupported {
                server: self.inner.name.clone(),
                method: method::SUBSCRIPTIONS_LISTEN.into(),
                what: "subscriptions/listen (a legacy server has no listen streams)".into(),
            });
        }
        let mut params = JsonObject::new();
        params.insert(
            "notifications".into(),
            serde_json::to_value(&filter).unwrap_or_else(|_| json!({})),
        );
        let id = self.next_id();
        Subscription::open(self.clone(), id, params, self.inner.config.timeout).await
    }

    /// Sends any request and returns its complete result: `_meta`, timeout,
    /// `resultType` checks and (for tools/call, resources/read, prompts/get)
    /// the MRTR loop apply. For methods the typed calls do not cover.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn request(
        &self,
        method: &str,
        params: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<Value, ClientError> {
        self.request_inner(method, params.unwrap_or_default(), Vec::new(), options)
            .await
    }

    /// Sends a notification.
    ///
    /// # Errors
    /// [`ClientError::Transport`] when it cannot be sent.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        self.inner
            .transport
            .notify(Notification::new(method, params))
            .await
            .map_err(ClientError::from)
    }
}

pub(super) fn cursor_params(cursor: Option<&str>) -> JsonObject {
    let mut params = JsonObject::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), Value::from(cursor));
    }
    params
}
