//! `tools/list` (paging, files, TTLs) and `tools/call` with the built-in
//! test tools, including the `gather` group.

use super::*;

impl Server {
    pub(crate) fn tools_list(
        &self,
        params: &Value,
    ) -> Result<Value, switchboard_wire::ErrorObject> {
        let tools = self.tool_names();
        let cursor = params.get("cursor").and_then(Value::as_str);
        if self.opts.repeat_cursor {
            let page: Vec<Value> = tools.into_iter().take(1).collect();
            return Ok(
                json!({"tools": page, "nextCursor": "again", "ttlMs": 0, "cacheScope": "public"}),
            );
        }
        let size = if self.opts.page_size == 0 {
            tools.len().max(1)
        } else {
            self.opts.page_size
        };
        let pages = tools.len().div_ceil(size).max(1);
        let page = match cursor {
            None => 0,
            Some("") => 1,
            Some(c) => match c.parse::<usize>() {
                Ok(p) if p >= 2 && p < pages => p,
                _ => return Err(rpc_error(-32602, format!("invalid cursor {c:?}"))),
            },
        };
        if page >= pages {
            return Err(rpc_error(-32602, "invalid cursor"));
        }
        let items: Vec<Value> = tools.into_iter().skip(page * size).take(size).collect();
        let ttl = self.opts.tools_ttl_ms.unwrap_or(30000 - page as i64);
        let mut result = json!({"tools": items, "ttlMs": ttl, "cacheScope": "public"});
        if page + 1 < pages {
            let next = if page + 1 == 1 {
                String::new()
            } else {
                (page + 1).to_string()
            };
            result["nextCursor"] = json!(next);
        }
        Ok(result)
    }

    pub(crate) fn tools_call(
        &self,
        req: &Request,
        params: &Value,
        caps: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let num = |k: &str, d: u64| args.get(k).and_then(Value::as_u64).unwrap_or(d);
        Some(Ok(self.complete(match name {
            "echo" => json!({
                "content": [{"type": "text", "text": args.get("text").and_then(Value::as_str).unwrap_or("echo")}],
                "structuredContent": {"id": req.id.to_value(), "params": params},
            }),
            "sleep" => {
                let ms = num("ms", 1000);
                let deadline = std::time::Instant::now() + Duration::from_millis(ms);
                while std::time::Instant::now() < deadline {
                    if self.is_cancelled(&req.id) {
                        return None;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                json!({"content": [{"type": "text", "text": format!("slept {ms} ms")}]})
            }
            "never" => return None,
            "gather" => {
                let (count, index) = (num("count", 2), num("index", 0));
                match self.gather(count, index, Duration::from_millis(num("timeout_ms", 30_000))) {
                    Ok(()) => json!({"content": [{"type": "text", "text": format!("gathered {index}")}]}),
                    Err(seen) => json!({
                        "content": [{"type": "text", "text": format!("only {seen} of {count} gather calls were in flight at once")}],
                        "isError": true,
                    }),
                }
            }
            "crash" => {
                for i in 0..num("lines", 2) {
                    eprintln!("mock-server: crash line {i}");
                }
                eprintln!("mock-server: exiting mid-request");
                std::process::exit(i32::try_from(num("code", 3)).unwrap_or(3));
            }
            "big" => {
                let bytes = usize::try_from(num("bytes", 10 * 1024 * 1024)).unwrap_or(0);
                json!({"content": [{"type": "text", "text": "x".repeat(bytes)}]})
            }
            "lines" => {
                let count = num("count", 2000);
                let width = usize::try_from(num("width", 100)).unwrap_or(100).max(20);
                // Each line `width` characters with its newline; the last,
                // without one, is padded to `width`: `count × width` in all.
                let text: Vec<String> = (1..=count)
                    .map(|i| {
                        let head = format!("line {i} é ");
                        let newline = usize::from(i < count);
                        let pad = width.saturating_sub(head.chars().count() + newline);
                        format!("{head}{}", "-".repeat(pad))
                    })
                    .collect();
                json!({"content": [{"type": "text", "text": text.join("\n")}]})
            }
            "progress" => {
                let steps = num("steps", 3);
                if let Some(token) = params.pointer("/_meta/progressToken") {
                    for i in 1..=steps {
                        self.notify(
                            "notifications/progress",
                            json!({"progressToken": token, "progress": i, "total": steps, "message": format!("step {i}")}),
                        );
                    }
                }
                json!({"content": [{"type": "text", "text": format!("{steps} steps done")}]})
            }
            "ask" => {
                return Some(self.ask(req, params, caps, |done| {
                    json!({"content": [{"type": "text", "text": "done"}], "structuredContent": done})
                }));
            }
            "fail" => json!({"content": [{"type": "text", "text": "the tool failed"}], "isError": true}),
            "error" => {
                return Some(Err(rpc_error(-32602, "bad arguments for the error tool").with_data(json!({"field": "x"}))));
            }
            "weird" => json!({"content": [], "resultType": "mystery"}),
            "hostile" => return self.hostile(req, &args),
            "task" => return self.start_task(req, &args, caps),
            "pids" => json!({"content": [], "structuredContent": {"pid": std::process::id(), "grandchild": self.grandchild}}),
            n if n.starts_with("filler_") => json!({"content": [{"type": "text", "text": n}]}),
            n if self
                .file_tools()
                .is_some_and(|tools| tools.iter().any(|t| t.get("name") == Some(&json!(n)))) =>
            {
                json!({
                    "content": [{"type": "text", "text": format!("{n} ran")}],
                    "structuredContent": {"tool": n, "arguments": args},
                })
            }
            other => return Some(Err(rpc_error(-32602, format!("unknown tool {other}")))),
        })))
    }

    /// The `gather` tool: waits (at most `wait`) until `count` calls are in
    /// flight, then until every call with a higher `index` has answered.
    /// `Err` holds how many calls had arrived when the wait ran out.
    pub(crate) fn gather(&self, count: u64, index: u64, wait: Duration) -> Result<(), u64> {
        let deadline = std::time::Instant::now() + wait;
        let mut group = lock(&self.gathering);
        group.0 += 1;
        self.gathered.notify_all();
        // The last call answers first: call `index` goes once the
        // `count - 1 - index` calls above it have.
        let turn = count.saturating_sub(1).saturating_sub(index);
        while group.0 < count || group.1 < turn {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                let seen = group.0;
                return Err(seen);
            }
            group = self
                .gathered
                .wait_timeout(group, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        group.1 += 1;
        if group.1 >= count {
            *group = (0, 0);
        }
        self.gathered.notify_all();
        Ok(())
    }
}
