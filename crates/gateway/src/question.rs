//! A legacy (2025-11-25) server's questions during a call: the input
//! handler the host's call gets ([`questions`], given as the request's
//! `call_input`), which hands each question, with the way back to the
//! server, to the call driver (`call`) and waits for its answer.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport};
use switchboard_wire::types::method;
use tokio::sync::{mpsc, oneshot};

/// A legacy server's question during a call, with the way back to it.
pub(crate) struct Question {
    method: String,
    params: Value,
    reply: oneshot::Sender<Result<Value, String>>,
}

/// The handler to give a call's request options (`call_input`),
/// and where its questions arrive.
pub(crate) fn questions() -> (Arc<dyn InputHandler>, mpsc::Receiver<Question>) {
    // One question at a time: a legacy server waits for each answer.
    let (tx, rx) = mpsc::channel(1);
    (Arc::new(Questions { tx }), rx)
}

impl Question {
    /// The server's request method (`elicitation/create`, …).
    pub(crate) fn method(&self) -> &str {
        &self.method
    }

    /// The server's request params.
    pub(crate) fn params(&self) -> &Value {
        &self.params
    }

    /// The question's method, params and the way back to the server.
    pub(crate) fn into_parts(self) -> (String, Value, oneshot::Sender<Result<Value, String>>) {
        (self.method, self.params, self.reply)
    }

    /// Answers the server's request with `answer` (the client's, verbatim).
    pub(crate) fn answer(self, answer: Value) {
        let _ = self.reply.send(Ok(answer));
    }

    /// Answers the server's request with an error saying `why`.
    pub(crate) fn decline(self, why: String) {
        let _ = self.reply.send(Err(why));
    }
}

/// The input handler the host's call gets: each question a legacy server
/// asks during the call goes to the gateway's call, which relays it.
#[derive(Debug)]
struct Questions {
    tx: mpsc::Sender<Question>,
}

/// Why a question got no answer when nobody relays it any more.
const ABANDONED: &str = "the gateway's client is no longer waiting for this call (its request went away, or it did not \
                         answer the gateway's question in time)";

impl Questions {
    fn relay(&self, method: &str, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        let method = method.to_owned();
        Box::pin(async move {
            let elicitation = method == method::ELICITATION_CREATE;
            let (reply, answer) = oneshot::channel();
            let question = Question {
                method,
                params,
                reply,
            };
            let answered = match self.tx.send(question).await {
                Ok(()) => answer.await.ok(),
                Err(_) => None,
            };
            match answered {
                Some(Ok(answer)) => Ok(answer),
                Some(Err(why)) => Err(InputError(why)),
                // Nobody will answer: a form no one filled in is cancelled.
                None if elicitation => Ok(json!({"action": "cancel"})),
                None => Err(InputError(ABANDONED.into())),
            }
        })
    }
}

impl InputHandler for Questions {
    fn support(&self) -> InputSupport {
        // The client checks what it declared (the gateway's whole set);
        // what the upstream client can answer is checked per question.
        InputSupport {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            sampling_tools: true,
            roots: true,
        }
    }

    fn elicit(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        self.relay(method::ELICITATION_CREATE, params)
    }

    fn sample(&self, _cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        self.relay(method::SAMPLING_CREATE_MESSAGE, params)
    }

    fn roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<Value, InputError>> {
        self.relay(method::ROOTS_LIST, json!({}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> InputContext {
        InputContext {
            server: "s".into(),
            method: Some("tools/call".into()),
            era: switchboard_wire::Era::Legacy,
        }
    }

    #[tokio::test]
    async fn a_question_dropped_unanswered_is_cancelled_or_declined() {
        let (handler, mut asked) = questions();
        let form = {
            let handler = handler.clone();
            tokio::spawn(async move { handler.elicit(cx(), json!({"message": "?"})).await })
        };
        // Nobody relays it any more (a parked call lapsed, say).
        drop(asked.recv().await.unwrap());
        assert_eq!(form.await.unwrap().unwrap(), json!({"action": "cancel"}));
        let roots = tokio::spawn(async move { handler.roots(cx()).await });
        drop(asked.recv().await.unwrap());
        let err = roots.await.unwrap().unwrap_err();
        assert!(err.0.contains("no longer waiting"), "{err:?}");
    }
}
