//! Tasks: the `task` tool's tasks (timed or driven by a listen stream)
//! and the 2025-11-25 experimental tasks of `job` / `maybe_job`.

use super::*;

/// A 2025-11-25 task of `job` / `maybe_job`.
pub(crate) struct LegacyTask {
    pub(crate) created: std::time::Instant,
    pub(crate) work: Duration,
    pub(crate) ask: bool,
    pub(crate) answer: Option<Value>,
    pub(crate) cancelled: bool,
}

impl LegacyTask {
    pub(crate) fn status(&self) -> &'static str {
        if self.cancelled {
            "cancelled"
        } else if self.created.elapsed() < self.work {
            "working"
        } else if self.ask && self.answer.is_none() {
            "input_required"
        } else {
            "completed"
        }
    }

    pub(crate) fn view(&self, id: &str) -> Value {
        json!({
            "taskId": id,
            "status": self.status(),
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:30:00Z",
            "ttl": 60_000,
            "pollInterval": 20,
        })
    }
}

/// A task of the `task` tool.
pub(crate) struct MockTask {
    pub(crate) created: std::time::Instant,
    /// When the work (after the last input) started.
    pub(crate) working_since: std::time::Instant,
    pub(crate) work: Option<Duration>,
    pub(crate) poll_ms: Option<u64>,
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) inputs_left: u64,
    pub(crate) round: u64,
    pub(crate) answers: Vec<Value>,
    pub(crate) cancelled: bool,
    /// `fail`: the task ends `failed`, not `completed`.
    pub(crate) fail: bool,
    /// `notify`: the task is driven by its listen stream, not by time.
    pub(crate) notify: Option<NotifyTask>,
}

/// A `notify` task: it stays `working` until a listen stream asked for it
/// and a `tasks/get` came after that; then each step (an input request,
/// the completion) happens `work_ms` later and is announced only by a
/// `notifications/tasks` on that stream.
#[derive(Default)]
pub(crate) struct NotifyTask {
    /// Announce the completion without its `result`.
    pub(crate) bare: bool,
    /// The listen stream that asked for the task (its subscription id).
    pub(crate) listen: Option<Value>,
    /// Whether the first step has been scheduled.
    pub(crate) started: bool,
    /// When the next step happens.
    pub(crate) due: Option<std::time::Instant>,
    /// Whether the task asks for input (`Some(false)`: completed).
    pub(crate) asking: Option<bool>,
}

impl Server {
    /// The `task` tool: a task handle when the extension is declared.
    pub(crate) fn start_task(
        &self,
        req: &Request,
        args: &Value,
        caps: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let num = |k: &str| args.get(k).and_then(Value::as_u64);
        let never = args.get("never").and_then(Value::as_bool) == Some(true);
        let work = (!never).then(|| Duration::from_millis(num("work_ms").unwrap_or(200)));
        let declared = caps
            .pointer("/extensions")
            .and_then(|e| e.get(switchboard_wire::tasks::EXTENSION_ID))
            .is_some();
        if !declared {
            let work = work?;
            std::thread::sleep(work);
            if self.is_cancelled(&req.id) {
                return None;
            }
            return Some(Ok(self.complete(
                json!({"content": [{"type": "text", "text": "done without a task"}]}),
            )));
        }
        let id = format!("mock-task-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        let now = std::time::Instant::now();
        let task = MockTask {
            created: now,
            working_since: now,
            work,
            poll_ms: num("poll_ms"),
            ttl_ms: num("ttl_ms"),
            inputs_left: num("inputs").unwrap_or(0),
            round: 1,
            answers: Vec::new(),
            cancelled: false,
            fail: args.get("fail").and_then(Value::as_bool) == Some(true),
            notify: (args.get("notify").and_then(Value::as_bool) == Some(true)).then(|| {
                NotifyTask {
                    bare: args.get("bare").and_then(Value::as_bool) == Some(true),
                    ..NotifyTask::default()
                }
            }),
        };
        let mut view = Self::task_view(&id, &task);
        view["resultType"] = json!("task");
        for k in ["inputRequests", "result"] {
            if let Value::Object(o) = &mut view {
                o.remove(k);
            }
        }
        lock(&self.tasks).insert(id, task);
        Some(Ok(self.complete(view)))
    }

    /// Takes the due steps of `notify` tasks and announces each on the
    /// task's listen stream.
    pub(crate) fn task_notifier(&self) {
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let now = std::time::Instant::now();
            let mut announce = Vec::new();
            for (id, t) in lock(&self.tasks).iter_mut() {
                let inputs_left = t.inputs_left;
                let Some(n) = t.notify.as_mut() else { continue };
                if t.cancelled || n.due.is_none_or(|due| due > now) {
                    continue;
                }
                n.due = None;
                n.asking = Some(inputs_left > 0);
                let (bare, listen) = (n.bare, n.listen.clone());
                let mut view = Self::task_view(id, t);
                if bare {
                    if let Value::Object(o) = &mut view {
                        o.remove("result");
                    }
                }
                view["_meta"] = json!({SUBSCRIPTION_ID: listen});
                announce.push(view);
            }
            for view in announce {
                self.notify("notifications/tasks", view);
            }
        }
    }

    /// `job` / `maybe_job` (2025-11-25 tasks).
    pub(crate) fn legacy_job(
        &self,
        name: &str,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        if params.get("task").is_none() {
            return if name == "job" {
                Err(rpc_error(-32601, "job must be called as a task"))
            } else {
                Ok(json!({"content": [{"type": "text", "text": "job done at once"}]}))
            };
        }
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let task = LegacyTask {
            created: std::time::Instant::now(),
            work: Duration::from_millis(args.get("work_ms").and_then(Value::as_u64).unwrap_or(100)),
            ask: args.get("ask").and_then(Value::as_bool) == Some(true),
            answer: None,
            cancelled: false,
        };
        let id = format!(
            "legacy-task-{}",
            self.next_id.fetch_add(1, Ordering::SeqCst)
        );
        let view = task.view(&id);
        lock(&self.legacy_tasks).push((id, task));
        Ok(json!({ "task": view }))
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25).
    pub(crate) fn legacy_task_method(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        if method == "tasks/list" {
            let tasks = lock(&self.legacy_tasks);
            let at = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.parse::<usize>().ok())
                .unwrap_or(0);
            let page: Vec<Value> = tasks
                .iter()
                .skip(at)
                .take(1)
                .map(|(id, t)| t.view(id))
                .collect();
            let mut out = json!({ "tasks": page });
            if at + 1 < tasks.len() {
                out["nextCursor"] = json!((at + 1).to_string());
            }
            return Ok(out);
        }
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let with = |f: &mut dyn FnMut(&mut LegacyTask) -> Value| {
            let mut tasks = lock(&self.legacy_tasks);
            tasks
                .iter_mut()
                .find(|(i, _)| *i == id)
                .map(|(_, t)| f(t))
                .ok_or_else(|| rpc_error(-32602, "Failed to retrieve task: Task not found"))
        };
        match method {
            "tasks/get" => with(&mut |t| t.view(&id)),
            "tasks/cancel" => with(&mut |t| {
                t.cancelled = true;
                t.view(&id)
            }),
            _ => loop {
                // tasks/result: wait for the end, asking on the way.
                let status = with(&mut |t| json!(t.status()))?;
                match status.as_str() {
                    Some("completed") => {
                        let answer = with(&mut |t| t.answer.clone().unwrap_or(Value::Null))?;
                        return Ok(json!({
                            "content": [{"type": "text", "text": format!("job done: {answer}")}],
                            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}},
                        }));
                    }
                    Some("cancelled") => return Err(rpc_error(-32603, "the task was cancelled")),
                    Some("input_required") => {
                        let ask_id = format!("srv-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
                        let (tx, rx) = mpsc::channel();
                        lock(&self.waiting).insert(json!(ask_id).to_string(), tx);
                        let mut ask = input_request("confirm")["params"].clone();
                        ask["_meta"] =
                            json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
                        self.send(&Message::Request(Request::new(
                            ask_id.as_str(),
                            "elicitation/create",
                            Some(ask),
                        )));
                        let answer = match rx.recv_timeout(Duration::from_secs(10)) {
                            Ok(Response { outcome: Ok(v), .. }) => v,
                            _ => json!("no answer"),
                        };
                        with(&mut |t| {
                            t.answer = Some(answer.clone());
                            Value::Null
                        })?;
                    }
                    _ => std::thread::sleep(Duration::from_millis(10)),
                }
            },
        }
    }

    /// A task as `tasks/get` shows it.
    pub(crate) fn task_view(id: &str, t: &MockTask) -> Value {
        let mut v = json!({
            "taskId": id,
            "createdAt": "2026-07-28T10:30:00Z",
            "lastUpdatedAt": "2026-07-28T10:30:00Z",
            "ttlMs": t.ttl_ms,
        });
        if let Some(ms) = t.poll_ms {
            v["pollIntervalMs"] = json!(ms);
        }
        let asking = t.notify.as_ref().map(|n| n.asking);
        if t.cancelled {
            v["status"] = json!("cancelled");
        } else if asking == Some(None) {
            v["status"] = json!("working");
            v["statusMessage"] = json!("working on it");
        } else if t.inputs_left > 0 && asking != Some(Some(false)) {
            v["status"] = json!("input_required");
            v["statusMessage"] = json!(format!("waiting for answer {}", t.round));
            let mut request = input_request("confirm");
            request["params"]["message"] = json!(format!("Proceed with step {}?", t.round));
            v["inputRequests"] = json!({"confirm": request});
        } else if t.fail && t.work.is_some_and(|w| t.working_since.elapsed() >= w) {
            v["status"] = json!("failed");
            v["error"] = json!({"code": -32603, "message": "the mock task failed"});
        } else if asking.is_some() || t.work.is_some_and(|w| t.working_since.elapsed() >= w) {
            v["status"] = json!("completed");
            v["result"] = json!({
                "content": [{"type": "text", "text": format!("task done after {} inputs", t.answers.len())}],
                "structuredContent": {"answers": t.answers},
                "isError": false,
            });
        } else {
            v["status"] = json!("working");
            v["statusMessage"] = json!("working on it");
        }
        v
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` for the `task` tool.
    pub(crate) fn task_method(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        let mut tasks = lock(&self.tasks);
        let expired = tasks.get(id).is_some_and(|t| {
            t.ttl_ms
                .is_some_and(|ttl| t.created.elapsed() >= Duration::from_millis(ttl))
        });
        if expired {
            tasks.remove(id);
        }
        let Some(task) = tasks.get_mut(id) else {
            return Err(rpc_error(-32602, "Failed to retrieve task: Task not found"));
        };
        let work = task.work;
        if let Some(n) = task.notify.as_mut() {
            // The first poll after a listener arrived starts the work; an
            // answer starts the next step.
            let step = match method {
                "tasks/get" => n.listen.is_some() && !n.started,
                "tasks/update" => {
                    n.asking == Some(true)
                        && task.inputs_left > 0
                        && params.pointer("/inputResponses/confirm").is_some()
                }
                _ => false,
            };
            if step {
                n.started = true;
                n.asking = None;
                n.due = work.map(|w| std::time::Instant::now() + w);
            }
        }
        match method {
            "tasks/get" => Ok(Self::task_view(id, task)),
            "tasks/update" => {
                if let Some(answer) = params.pointer("/inputResponses/confirm") {
                    if task.inputs_left > 0 && !task.cancelled {
                        task.answers.push(answer.clone());
                        task.inputs_left -= 1;
                        task.round += 1;
                        task.working_since = std::time::Instant::now();
                    }
                }
                Ok(json!({}))
            }
            _ => {
                eprintln!("mock-server: task {id} cancelled");
                task.cancelled = true;
                Ok(json!({}))
            }
        }
    }
}
