//! Set-up the test suites would otherwise each write again: serving a
//! server of our framework on loopback, and answering forms (one at a time
//! or a round at once).

use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_client::{
    BoxFuture, InputAnswer, InputContext, InputError, InputHandler, InputQuestion, InputSupport,
};
use switchboard_server::Server;
use switchboard_server::http::{HttpOptions, serve};
use switchboard_wire::shared::lock;
use switchboard_wire::{ElicitRequestParams, ElicitResult, JsonObject};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A server served by [`serve_http`]: it stops when this is dropped.
#[derive(Debug)]
pub struct Served {
    _stop: oneshot::Sender<()>,
}

impl Served {
    /// Keeps the server running until the test process ends, for a helper
    /// that hands out only the URL.
    pub fn detach(self) {
        std::mem::forget(self._stop);
    }
}

/// Serves `server` over Streamable HTTP on `127.0.0.1:0` (default
/// [`HttpOptions`]) until the returned [`Served`] is dropped; returns its
/// `/mcp` URL.
///
/// # Panics
/// When no loopback port can be bound (the test cannot go on).
pub async fn serve_http(server: Server) -> (String, Served) {
    serve_http_with(server, HttpOptions::new()).await
}

/// [`serve_http`] with these options.
///
/// # Panics
/// When no loopback port can be bound.
pub async fn serve_http_with(server: Server, options: HttpOptions) -> (String, Served) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("binding 127.0.0.1:0: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("reading the bound address: {e}"));
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let _ = serve(server, listener, options, shutdown).await;
    });
    (format!("http://{addr}/mcp"), Served { _stop: stop })
}

/// An input handler that accepts every form elicitation with the same
/// fields, and records the params of each question (as JSON) in order.
#[derive(Clone, Debug)]
pub struct FormAnswers {
    content: JsonObject,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl FormAnswers {
    /// Accepts every form with `content` (an object; anything else is
    /// answered with no fields).
    pub fn new(content: Value) -> Self {
        FormAnswers {
            content: match content {
                Value::Object(fields) => fields,
                _ => JsonObject::new(),
            },
            asked: Arc::default(),
        }
    }

    /// Accepts every approval question with `{"approve": approve}`.
    pub fn approving(approve: bool) -> Self {
        FormAnswers::new(serde_json::json!({ "approve": approve }))
    }

    /// The params of every question asked so far.
    pub fn questions(&self) -> Vec<Value> {
        lock(&self.asked).clone()
    }

    /// The params of every question asked so far, shared: it fills in as
    /// questions come.
    pub fn asked(&self) -> Arc<Mutex<Vec<Value>>> {
        Arc::clone(&self.asked)
    }
}

impl InputHandler for FormAnswers {
    fn support(&self) -> InputSupport {
        InputSupport::FORM
    }

    fn elicit(
        &self,
        _cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        lock(&self.asked).push(params.into());
        let answer = ElicitResult::accept(Some(self.content.clone()));
        Box::pin(async move { Ok(answer) })
    }
}

/// An input handler that answers each round of questions at once (MRTR),
/// accepting every form with the same fields, or, when forgetful, leaving
/// every answer out; it records each round as `key method` lines.
#[derive(Clone, Debug)]
pub struct RoundAnswers {
    content: Value,
    forget: bool,
    rounds: Arc<Mutex<Vec<Vec<String>>>>,
}

impl RoundAnswers {
    /// Accepts every form of a round with `content`.
    pub fn new(content: Value) -> Self {
        RoundAnswers {
            content,
            forget: false,
            rounds: Arc::default(),
        }
    }

    /// Answers no question of a round (the client must refuse to send it).
    pub fn forgetting() -> Self {
        RoundAnswers {
            forget: true,
            ..RoundAnswers::new(Value::Null)
        }
    }

    /// Every round so far: its requests as `key method`, in order.
    pub fn rounds(&self) -> Vec<Vec<String>> {
        lock(&self.rounds).clone()
    }
}

impl InputHandler for RoundAnswers {
    fn support(&self) -> InputSupport {
        InputSupport::FORM
    }

    fn answer_round(
        &self,
        _cx: InputContext,
        requests: Vec<(String, InputQuestion)>,
    ) -> BoxFuture<'_, Result<Vec<(String, InputAnswer)>, InputError>> {
        lock(&self.rounds).push(
            requests
                .iter()
                .map(|(key, q)| format!("{key} {}", q.method()))
                .collect(),
        );
        let answer = serde_json::json!({"action": "accept", "content": self.content});
        let answers = requests
            .into_iter()
            .filter(|_| !self.forget)
            .map(|(key, q)| q.answer_from(answer.clone()).map(|a| (key, a)))
            .collect();
        Box::pin(async move { answers })
    }
}
