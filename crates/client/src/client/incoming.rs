//! What the server sends unasked: notifications no request claimed (passed
//! to the client's sink, or logged), and a legacy server's requests
//! (answered through the input handler, or the handler of the call they
//! belong to).

use super::*;

/// The transport's sink for messages no request claimed. It holds the
/// client weakly: the transport must not keep its own client alive.
pub(super) fn event_sink(inner: Weak<Inner>) -> EventSink {
    Arc::new(move |incoming| {
        let Some(inner) = inner.upgrade() else { return };
        match incoming {
            Incoming::Notification(n) => match &inner.on_notification {
                Some(sink) => sink(n),
                None => log_notification(&inner.name, &n),
            },
            Incoming::Request(request) => {
                // Tied to a call here, on the reader, before a later request
                // can make it ambiguous.
                let call = inner.in_flight.sole_handler();
                let client = Client { inner };
                // The handler may take long (a user answering a form): answer
                // on a task of its own, never on the transport's reader.
                tokio::spawn(async move { client.answer_server_request(request, call).await });
            }
        }
    })
}

impl Client {
    /// Answers a request a legacy server sent (sampling, elicitation, roots,
    /// ping) through the same [`InputHandler`], or through the handler of
    /// the call it was tied to (`call`: that call's method and
    /// [`RequestOptions::call_input`]), within what the client declared. A
    /// modern server must not send requests (WIRE-13) and the client must
    /// not answer one on stdio (STDIO-04), so those are logged and dropped.
    async fn answer_server_request(&self, request: Request, call: Option<calls::TiedCall>) {
        let name = &self.inner.name;
        if self.era() == Era::Modern {
            warn!(server = %name, method = %request.method, "a modern server sent a request; ignored");
            return;
        }
        let support = self.inner.handler.support();
        let outcome = match request.method.as_str() {
            method::PING => Ok(json!({})),
            m if support.covers(m, request.params.as_ref()) => {
                let (method, handler) = match call {
                    Some((method, handler)) => (Some(method), handler),
                    None => (None, Arc::clone(&self.inner.handler)),
                };
                let cx = InputContext {
                    server: name.clone(),
                    method,
                    era: Era::Legacy,
                };
                // Params that do not fit the request's type are the
                // server's fault, and it is told so.
                match InputQuestion::parse(m, request.params) {
                    Ok(question) => handler
                        .answer(cx, question)
                        .await
                        .map(InputAnswer::into_value)
                        .map_err(|e| ErrorObject::new(ErrorCode::InternalError, e.0)),
                    Err(e) => Err(ErrorObject::new(ErrorCode::InvalidParams, e.0)),
                }
            }
            m => Err(ErrorObject::new(
                ErrorCode::MethodNotFound,
                format!("this client does not support {m}"),
            )),
        };
        let response = match outcome {
            Ok(result) => Response::result(request.id, result),
            Err(error) => Response::error(Some(request.id), error),
        };
        if let Err(e) = self.inner.transport.respond(response).await {
            debug!(server = %name, error = %e, "could not answer a server request");
        }
    }
}

/// Logs a notification nobody asked for: `notifications/message` at its
/// level, anything else at debug.
pub(super) fn log_notification(server: &str, n: &Notification) {
    if n.method == method::MESSAGE {
        let params = n.params.as_ref();
        let level = params
            .and_then(|p| p.get("level"))
            .and_then(Value::as_str)
            .unwrap_or("info");
        let data = params
            .and_then(|p| p.get("data"))
            .cloned()
            .unwrap_or(Value::Null);
        match level {
            "debug" => debug!(server = %server, %data, "server log"),
            "info" | "notice" => tracing::info!(server = %server, %data, "server log"),
            "warning" => warn!(server = %server, %data, "server log"),
            _ => tracing::error!(server = %server, %data, "server log"),
        }
    } else {
        debug!(server = %server, method = %n.method, "notification without a listener");
    }
}
