//! The 2026-07-28 requests: discovery, listings, offers from files,
//! skills, MRTR rounds (`ask`) and `subscriptions/listen`.

use super::*;

impl Server {
    /// A modern request; `None` means "do not answer".
    pub(crate) fn modern(
        &self,
        req: &Request,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let meta = params.get("_meta");
        let version = meta
            .and_then(|m| m.get(PROTOCOL_VERSION))
            .and_then(Value::as_str);
        let caps = meta.and_then(|m| m.get(CLIENT_CAPABILITIES));
        let (Some(version), Some(caps)) = (version, caps.filter(|c| c.is_object())) else {
            return Some(Err(rpc_error(
                -32602,
                "params._meta must carry protocolVersion and clientCapabilities",
            )));
        };
        if !self.opts.versions.iter().any(|v| v == version) {
            return Some(Err(rpc_error(-32022, "unsupported protocol version")
                .with_data(
                    json!({"supported": self.opts.versions, "requested": version}),
                )));
        }
        let caps = caps.clone();
        if let Some(answer) = self.skills_request(&req.method, params) {
            return Some(answer.map(|r| self.complete(r)));
        }
        Some(match req.method.as_str() {
            "server/discover" => Ok(self.complete(json!({
                "supportedVersions": self.opts.versions,
                "capabilities": {
                    "tools": {"listChanged": true},
                    "resources": {"subscribe": true, "listChanged": true},
                    "prompts": {},
                    "completions": {},
                    "extensions": self.skills_extension(),
                },
                "instructions": "A mock server for tests.",
                "ttlMs": 60000,
                "cacheScope": "public",
            }))),
            "tools/list" => self.tools_list(params).map(|r| self.complete(r)),
            "tools/call" => return self.tools_call(req, params, &caps),
            "resources/list" => Ok(self.complete(json!({
                "resources": [
                    {"uri": "mock://a", "name": "a", "mimeType": "text/plain"},
                    {"uri": "mock://b", "name": "b"},
                    {"uri": "mock://ask", "name": "ask"},
                ],
                "ttlMs": 1000, "cacheScope": "private",
            }))),
            "resources/templates/list" => Ok(self.complete(json!({
                "resourceTemplates": self.file_offers("resourceTemplates").unwrap_or_else(
                    || json!([{"uriTemplate": "mock://item/{id}", "name": "item"}])
                ),
                "ttlMs": 0, "cacheScope": "public",
            }))),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                match uri {
                    "mock://ask" => self.ask(req, params, &caps, |done| {
                        json!({"contents": [{"uri": "mock://ask", "text": done.to_string()}], "ttlMs": 0, "cacheScope": "private"})
                    }),
                    u if u.starts_with("mock://") => Ok(self.complete(json!({
                        "contents": [{"uri": u, "mimeType": "text/plain", "text": format!("contents of {u}")}],
                        "ttlMs": 5000, "cacheScope": "public",
                    }))),
                    u => Err(rpc_error(-32602, format!("unknown resource {u}")).with_data(json!({"uri": u}))),
                }
            }
            "prompts/list" => Ok(self.complete(json!({
                "prompts": self.file_offers("prompts").unwrap_or_else(
                    || json!([{"name": "greet", "arguments": [{"name": "who", "required": true}]}])
                ),
                "ttlMs": 1000, "cacheScope": "public",
            }))),
            "prompts/get" => {
                let who = params
                    .pointer("/arguments/who")
                    .and_then(Value::as_str)
                    .unwrap_or("world");
                Ok(self.complete(json!({
                    "description": "a greeting",
                    "messages": [{"role": "user", "content": {"type": "text", "text": format!("hello {who}")}}],
                })))
            }
            "completion/complete" => {
                let prefix = params
                    .pointer("/argument/value")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let values: Vec<String> = ["alice", "albert", "bob"]
                    .iter()
                    .filter(|v| v.starts_with(prefix))
                    .map(|v| (*v).to_owned())
                    .collect();
                Ok(self.complete(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})))
            }
            "subscriptions/listen" => return self.listen(req, params),
            "tasks/get" | "tasks/update" | "tasks/cancel" => self
                .task_method(&req.method, params)
                .map(|r| self.complete(r)),
            other => Err(rpc_error(-32601, format!("method not found: {other}"))),
        })
    }

    /// The `key` list (`prompts`, `resourceTemplates`) of `--offers-file`,
    /// if given.
    pub(crate) fn file_offers(&self, key: &str) -> Option<Value> {
        let path = self.opts.offers_file.as_ref()?;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let offers: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Some(offers.get(key).cloned().unwrap_or_else(|| json!([])))
    }

    /// The tools of `--tools-file`, if given.
    pub(crate) fn file_tools(&self) -> Option<Vec<Value>> {
        let path = self.opts.tools_file.as_ref()?;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(tools)) => Some(tools),
            _ => {
                eprintln!("mock-server: {path} is not a JSON array of tools");
                Some(Vec::new())
            }
        }
    }

    /// `--watch-tools`: tells listeners when the tools file changes.
    pub(crate) fn watch_tools(&self) {
        let Some(path) = self.opts.tools_file.clone() else {
            return;
        };
        let mut last = std::fs::read(&path).unwrap_or_default();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = std::fs::read(&path).unwrap_or_default();
            if now == last {
                continue;
            }
            last = now;
            let ids = lock(&self.listeners).clone();
            for id in ids {
                self.notify(
                    "notifications/tools/list_changed",
                    json!({"_meta": {SUBSCRIPTION_ID: id}}),
                );
            }
            if self.opts.legacy {
                self.notify("notifications/tools/list_changed", json!({}));
            }
        }
    }

    pub(crate) fn tool_names(&self) -> Vec<Value> {
        if let Some(tools) = self.file_tools() {
            return tools;
        }
        let mut tools = vec![
            json!({"name": "echo", "description": "echoes", "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "$defs": {"t": {"type": "string"}}, "properties": {"text": {"$ref": "#/$defs/t"}}, "x-unknown-keyword": [1, 2]}}),
        ];
        for name in [
            "sleep", "never", "crash", "big", "progress", "ask", "fail", "error", "weird", "pids",
            "task",
        ] {
            tools.push(json!({"name": name, "description": format!("the {name} tool"), "inputSchema": {"type": "object"}}));
        }
        for i in 0..self.opts.extra_tools {
            tools.push(json!({"name": format!("filler_{i}"), "inputSchema": {"type": "object"}}));
        }
        tools
    }

    /// The `extensions` capability: the Skills extension with
    /// `--skills-file`, nothing otherwise.
    pub(crate) fn skills_extension(&self) -> Value {
        match self.opts.skills_file {
            Some(_) => json!({"io.modelcontextprotocol/skills": {}}),
            None => json!({}),
        }
    }

    /// `skills/list`, `skills/get` and `resources/read` of a skill file,
    /// from `--skills-file` as it stands now; `None` for other requests.
    pub(crate) fn skills_request(
        &self,
        method: &str,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let path = self.opts.skills_file.as_ref()?;
        let data: Value = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
        match method {
            "skills/list" => Some(Ok(json!({
                "skills": data["skills"].clone(),
                "ttlMs": 0, "cacheScope": "public",
            }))),
            "skills/get" => Some(
                data["skills"]
                    .as_array()
                    .and_then(|all| all.iter().find(|s| s["uri"] == uri))
                    .map(|skill| json!({"skill": skill, "ttlMs": 0, "cacheScope": "public"}))
                    .ok_or_else(|| rpc_error(-32602, format!("no skill is served at {uri}"))),
            ),
            "resources/read" => data["files"].get(uri).map(|text| {
                Ok(json!({
                    "contents": [{"uri": uri, "text": text}],
                    "ttlMs": 0, "cacheScope": "public",
                }))
            }),
            _ => None,
        }
    }

    /// The `requestState` for a round; awkward characters on purpose, so a
    /// client that re-encodes it is caught.
    pub(crate) fn state(round: u64) -> String {
        format!("round={round};opaque=\u{e9}\u{2028}\"\\/{{}}\u{1F600}")
    }

    /// MRTR: `input_required` until the requested number of rounds passed.
    pub(crate) fn ask(
        &self,
        req: &Request,
        params: &Value,
        caps: &Value,
        finish: impl FnOnce(Value) -> Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        let rounds = params
            .pointer("/arguments/rounds")
            .and_then(Value::as_u64)
            .unwrap_or(2);
        let keys = input_keys(caps);
        let round = match params.get("requestState") {
            None => 0,
            Some(Value::String(s)) => match (1..=rounds).find(|r| *s == Self::state(*r)) {
                Some(r) => r,
                None => return Err(rpc_error(-32602, "requestState was altered")),
            },
            Some(_) => return Err(rpc_error(-32602, "requestState must be a string")),
        };
        let responses = params.get("inputResponses");
        if round > 0 {
            for key in &keys {
                if responses.and_then(|r| r.get(*key)).is_none() {
                    return Err(rpc_error(-32602, format!("missing input response {key}")));
                }
            }
        } else if responses.is_some() {
            return Err(rpc_error(-32602, "inputResponses without requestState"));
        }
        if round >= rounds {
            return Ok(self.complete(finish(json!({
                "id": req.id.to_value(),
                "rounds": round,
                "inputResponses": responses,
            }))));
        }
        let mut requests = Map::new();
        for key in keys {
            requests.insert(key.into(), input_request_as(key, self.opts.malformed_input));
        }
        let mut result =
            json!({"resultType": "input_required", "requestState": Self::state(round + 1)});
        if !requests.is_empty() {
            result["inputRequests"] = Value::Object(requests);
        }
        Ok(self.complete(result))
    }

    pub(crate) fn listen(
        &self,
        req: &Request,
        params: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let id = req.id.to_value();
        let filter = params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        // Honour everything but resourcesListChanged, so clients see a subset.
        let mut acked = filter.clone();
        if let Value::Object(o) = &mut acked {
            o.remove("resourcesListChanged");
        }
        // Tasks are registered before the acknowledgement: the client may
        // poll as soon as it has it.
        for task_id in filter
            .get("taskIds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut tasks = lock(&self.tasks);
            let notify = task_id
                .as_str()
                .and_then(|t| tasks.get_mut(t))
                .and_then(|t| t.notify.as_mut());
            if let Some(n) = notify {
                n.listen = Some(id.clone());
            }
        }
        self.notify(
            "notifications/subscriptions/acknowledged",
            json!({"_meta": {SUBSCRIPTION_ID: id}, "notifications": acked}),
        );
        // A notification for a subscription nobody opened: to be ignored.
        self.notify(
            "notifications/tools/list_changed",
            json!({"_meta": {SUBSCRIPTION_ID: 987_654_321}}),
        );
        if filter.get("toolsListChanged") == Some(&json!(true)) {
            self.notify(
                "notifications/tools/list_changed",
                json!({"_meta": {SUBSCRIPTION_ID: id}}),
            );
            if self.opts.listen_end == "open" {
                lock(&self.listeners).push(id.clone());
            }
        }
        if let Some(uris) = filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
        {
            for uri in uris {
                self.notify(
                    "notifications/resources/updated",
                    json!({"_meta": {SUBSCRIPTION_ID: id}, "uri": uri}),
                );
            }
        }
        match self.opts.listen_end.as_str() {
            "cancel" => {
                self.notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "server shutting down"}),
                );
                None
            }
            "result" => Some(Ok(
                json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}),
            )),
            _ => None,
        }
    }
}
