//! Writing to the client (framing, junk, chatter, hostile answers) and
//! dispatching what it sends to the legacy or modern handlers.

use super::*;

impl Server {
    pub(crate) fn record(&self, line: &[u8]) {
        if let Some(f) = lock(&self.log).as_mut() {
            let _ = f.write_all(line);
            if !line.ends_with(b"\n") {
                let _ = f.write_all(b"\n");
            }
            let _ = f.flush();
        }
    }

    pub(crate) fn write_raw(&self, out: &mut std::io::Stdout, bytes: &[u8]) {
        if self.opts.byte_writes {
            for b in bytes {
                let _ = out.write_all(std::slice::from_ref(b));
                let _ = out.flush();
            }
        } else {
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }

    /// The `hostile` tool: writes what `args.kind` names instead of a
    /// proper answer (see the table in the module docs).
    pub(crate) fn hostile(
        &self,
        req: &Request,
        args: &Value,
    ) -> Option<Result<Value, switchboard_wire::ErrorObject>> {
        let kind = args.get("kind").and_then(Value::as_str).unwrap_or("");
        let count = |d: u64| {
            usize::try_from(args.get("size").and_then(Value::as_u64).unwrap_or(d)).unwrap_or(0)
        };
        let id = req.id.to_value().to_string();
        let id_last = args.get("idLast").and_then(Value::as_bool).unwrap_or(false);
        // Where the id goes: among the first members, or after the result.
        let (id_first, id_end) = if id_last {
            (String::new(), format!(r#","id":{id}}}"#))
        } else {
            (format!(r#""id":{id},"#), "}".to_owned())
        };
        let mut out = lock(&self.out);
        match kind {
            "long-line" => {
                let start = format!(
                    r#"{{"jsonrpc":"2.0",{id_first}"result":{{"content":[{{"type":"text","text":""#
                );
                self.write_raw(&mut out, start.as_bytes());
                let chunk = vec![b'x'; 1 << 20];
                let mut left = count(100_000_000);
                while left > 0 {
                    let n = left.min(chunk.len());
                    self.write_raw(&mut out, &chunk[..n]);
                    left -= n;
                }
                self.write_raw(&mut out, format!(r#""}}]}}{id_end}"#).as_bytes());
                self.write_raw(&mut out, b"\n");
                None
            }
            "deep" => {
                let depth = count(100_000);
                let mut line = format!(
                    r#"{{"jsonrpc":"2.0",{id_first}"result":{{"content":[],"structuredContent":{{"deep":"#
                );
                line.push_str(&"[".repeat(depth));
                line.push_str(&"]".repeat(depth));
                line.push_str(&format!("}}}}{id_end}\n"));
                self.write_raw(&mut out, line.as_bytes());
                None
            }
            "bad-json" => {
                let line =
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[}}}}"#) + "\n";
                self.write_raw(&mut out, line.as_bytes());
                None
            }
            "both" => {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}},"error":{{"code":-32603,"message":"and an error"}}}}"#
                ) + "\n";
                self.write_raw(&mut out, line.as_bytes());
                None
            }
            "unsolicited" => {
                for ghost in ["987654321", r#""ghost""#, "-1"] {
                    let line = format!(
                        r#"{{"jsonrpc":"2.0","id":{ghost},"result":{{"content":[{{"type":"text","text":"ghost"}}]}}}}"#
                    ) + "\n";
                    self.write_raw(&mut out, line.as_bytes());
                }
                drop(out);
                Some(Ok(self.complete(
                    json!({"content": [{"type": "text", "text": "the real answer"}]}),
                )))
            }
            _ => {
                drop(out);
                Some(Err(switchboard_wire::ErrorObject::new(
                    switchboard_wire::ErrorCode::InvalidParams,
                    format!("unknown hostile kind {kind:?}"),
                )))
            }
        }
    }

    pub(crate) fn send(&self, message: &Message) {
        let line = message.to_line();
        let mut out = lock(&self.out);
        self.write_raw(&mut out, &line);
    }

    pub(crate) fn junk(&self) {
        let mut out = lock(&self.out);
        for junk in [
            &b"this is not JSON, just noise on stdout\n"[..],
            b"[1,2,3]\n",
            b"42\n",
            b"\n",
            b"{\"jsonrpc\":\"2.0\"}\n",
        ] {
            self.write_raw(&mut out, junk);
        }
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&Message::Notification(Notification::new(
            method,
            Some(params),
        )));
    }

    pub(crate) fn is_cancelled(&self, id: &RequestId) -> bool {
        !self.opts.ignore_cancel && lock(&self.cancelled).contains(&id.to_value().to_string())
    }

    /// Sends the response, with the configured noise around it.
    pub(crate) fn respond(
        &self,
        id: RequestId,
        outcome: Result<Value, switchboard_wire::ErrorObject>,
        token: Option<&Value>,
    ) {
        if self.is_cancelled(&id) {
            eprintln!("mock-server: not answering cancelled request {id}");
            return;
        }
        if self.opts.junk {
            self.junk();
        }
        if self.opts.chatty {
            self.notify(
                "notifications/message",
                json!({"level": "info", "logger": "mock", "data": "about to answer"}),
            );
            self.notify("notifications/tools/list_changed", json!({}));
            self.notify(
                "notifications/progress",
                json!({"progressToken": "nobody-has-this-token", "progress": 1}),
            );
        }
        let response = match outcome {
            Ok(result) => Response::result(id, result),
            Err(error) => Response::error(Some(id), error),
        };
        self.send(&Message::Response(response));
        if self.opts.chatty {
            if let Some(token) = token {
                self.notify(
                    "notifications/progress",
                    json!({"progressToken": token, "progress": 99, "message": "late"}),
                );
            }
        }
    }

    pub(crate) fn notification(&self, n: Notification) {
        match n.method.as_str() {
            "notifications/cancelled" => {
                if let Some(id) = n.params.as_ref().and_then(|p| p.get("requestId")) {
                    eprintln!("mock-server: client cancelled {id}");
                    lock(&self.cancelled).insert(id.to_string());
                }
            }
            "notifications/initialized" => self.initialized.store(true, Ordering::SeqCst),
            _ => {}
        }
    }

    pub(crate) fn client_response(&self, r: Response) {
        let Some(id) = &r.id else { return };
        let waiter = lock(&self.waiting).remove(&id.to_value().to_string());
        if let Some(tx) = waiter {
            let _ = tx.send(r);
        }
    }

    pub(crate) fn handle(&self, req: Request) {
        if self.opts.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(self.opts.delay_ms));
        }
        if self.opts.jitter_ms > 0 {
            std::thread::sleep(Duration::from_millis(random_below(self.opts.jitter_ms)));
        }
        let params = req.params.clone().unwrap_or_else(|| json!({}));
        let token = params
            .get("_meta")
            .and_then(|m| m.get(PROGRESS_TOKEN))
            .cloned();
        let outcome = if self.opts.legacy {
            self.legacy(&req, &params)
        } else {
            self.modern(&req, &params)
        };
        if let Some(outcome) = outcome {
            self.respond(req.id, outcome, token.as_ref());
        }
    }

    pub(crate) fn server_info(&self) -> Value {
        json!({"name": self.opts.name, "version": "0.0.1"})
    }

    pub(crate) fn complete(&self, mut result: Value) -> Value {
        if let Value::Object(o) = &mut result {
            o.entry("resultType").or_insert_with(|| json!("complete"));
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = meta {
                m.insert(SERVER_INFO.into(), self.server_info());
            }
        }
        result
    }
}
