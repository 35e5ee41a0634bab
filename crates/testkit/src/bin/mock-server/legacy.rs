//! The 2025-11-25 protocol: the `initialize` handshake, legacy methods,
//! and server→client requests from the `sample` tool.

use super::*;

impl Server {
    /// A legacy (2025-11-25) request.
    pub(crate) fn legacy(
        &self,
        req: &Request,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let initialized = self.initialized.load(Ordering::SeqCst);
        Some(match req.method.as_str() {
            "server/discover" => match self.opts.discover_reply.as_str() {
                "silent" => return None,
                "invalid-params" => Err(rpc_error(-32602, "invalid params")),
                "parse-error" => {
                    self.send(&Message::Response(Response::error(
                        None,
                        rpc_error(-32700, "parse error"),
                    )));
                    return None;
                }
                _ => Err(rpc_error(-32601, "method not found: server/discover")),
            },
            "initialize" => {
                let requested = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                *lock(&self.client_caps) =
                    params.get("capabilities").cloned().unwrap_or(Value::Null);
                eprintln!("mock-server: initialize asked for {requested}");
                let mut capabilities = json!({"tools": {"listChanged": true}});
                if self.opts.legacy_tasks {
                    capabilities["tasks"] =
                        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
                }
                Ok(json!({
                    "protocolVersion": SUPPORTED_LEGACY,
                    "capabilities": capabilities,
                    "serverInfo": self.server_info(),
                    "instructions": "legacy mock",
                }))
            }
            "ping" => Ok(json!({})),
            _ if !initialized => Err(rpc_error(-32002, "server not initialized")),
            "tools/list" => {
                let mut tools = vec![
                    json!({"name": "echo", "inputSchema": {"type": "object"}}),
                    json!({"name": "sample", "inputSchema": {"type": "object"}}),
                ];
                if self.opts.legacy_tasks {
                    for (name, support) in [("job", "required"), ("maybe_job", "optional")] {
                        tools.push(json!({"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": support}}));
                    }
                }
                Ok(json!({ "tools": tools }))
            }
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
                if self.opts.legacy_tasks =>
            {
                self.legacy_task_method(&req.method, params)
            }
            "tools/call" => match params.get("name").and_then(Value::as_str) {
                Some(name @ ("job" | "maybe_job")) if self.opts.legacy_tasks => {
                    self.legacy_job(name, params)
                }
                Some("echo") => Ok(json!({
                    "content": [{"type": "text", "text": "legacy echo"}],
                    "structuredContent": {"id": req.id.to_value(), "params": params},
                })),
                Some("sample") => Ok(self.sample()),
                _ => Err(rpc_error(-32602, "unknown tool")),
            },
            other => Err(rpc_error(-32601, format!("method not found: {other}"))),
        })
    }

    /// Legacy: asks the client through server→client requests during a call.
    pub(crate) fn sample(&self) -> Value {
        let caps = lock(&self.client_caps).clone();
        let mut asks = vec![("ping", json!({}))];
        if caps.get("roots").is_some() {
            asks.push(("roots/list", json!({})));
        }
        if caps.get("sampling").is_some() {
            asks.push((
                "sampling/createMessage",
                input_request("summary")["params"].clone(),
            ));
        }
        if caps.get("elicitation").is_some() {
            asks.push((
                "elicitation/create",
                input_request_as("confirm", self.opts.malformed_input)["params"].clone(),
            ));
        }
        let mut answers = Map::new();
        for (method, params) in asks {
            let id = format!("srv-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
            let (tx, rx) = mpsc::channel();
            lock(&self.waiting).insert(json!(id).to_string(), tx);
            self.send(&Message::Request(Request::new(
                id.as_str(),
                method,
                Some(params),
            )));
            let answer = match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Response { outcome: Ok(v), .. }) => v,
                Ok(Response {
                    outcome: Err(e), ..
                }) => json!({"error": e}),
                Err(_) => json!("no answer"),
            };
            answers.insert(method.into(), answer);
        }
        json!({"content": [{"type": "text", "text": Value::Object(answers.clone()).to_string()}], "structuredContent": answers})
    }
}
