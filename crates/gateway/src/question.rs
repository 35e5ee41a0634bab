//! A legacy (2025-11-25) server's questions during a call: the input
//! handler the host's call gets ([`questions`], given as the request's
//! `call_input`), which hands each question, with the way back to the
//! server, to the call driver (`call`) and waits for its answer.

use std::sync::Arc;

use serde_json::Value;
use switchboard_client::{
    InputAnswer, InputError, InputHandler, InputQuestion, InputSupport, input_handler_fn,
};
use switchboard_wire::types::{ElicitAction, ElicitResult};
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
    // The client checks what it declared (the gateway's whole set); what
    // the upstream client can answer is checked per question.
    let handler = input_handler_fn(InputSupport::ALL, move |_cx, question| {
        let tx = tx.clone();
        async move { relay(&tx, question).await }
    });
    (Arc::new(handler), rx)
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

/// Why a question got no answer when nobody relays it any more.
const ABANDONED: &str = "the gateway's client is no longer waiting for this call (its request went away, or it did not \
                         answer the gateway's question in time)";

/// Puts `question` to the call driver, its params as JSON (unknown members
/// included), and reads the answer back into the question's kind, unknown
/// members kept as well.
async fn relay(
    tx: &mpsc::Sender<Question>,
    question: InputQuestion,
) -> Result<InputAnswer, InputError> {
    let (reply, answer) = oneshot::channel();
    let asked = Question {
        method: question.method().to_owned(),
        params: question.params(),
        reply,
    };
    let answered = match tx.send(asked).await {
        Ok(()) => answer.await.ok(),
        Err(_) => None,
    };
    match answered {
        Some(Ok(answer)) => question.answer_from(answer),
        Some(Err(why)) => Err(InputError(why)),
        // Nobody will answer: a form no one filled in is cancelled.
        None if matches!(question, InputQuestion::Elicit(_)) => {
            Ok(InputAnswer::Elicit(ElicitResult::new(ElicitAction::Cancel)))
        }
        None => Err(InputError(ABANDONED.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_client::InputContext;
    use switchboard_wire::types::ElicitRequestParams;

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
            tokio::spawn(async move {
                let form = ElicitRequestParams::form("?", serde_json::json!({}));
                handler.elicit(cx(), form).await
            })
        };
        // Nobody relays it any more (a parked call lapsed, say).
        drop(asked.recv().await.unwrap());
        assert_eq!(
            form.await.unwrap().unwrap(),
            ElicitResult::new(ElicitAction::Cancel)
        );
        let roots = tokio::spawn(async move { handler.roots(cx()).await });
        drop(asked.recv().await.unwrap());
        let err = roots.await.unwrap().unwrap_err();
        assert!(err.0.contains("no longer waiting"), "{err:?}");
    }
}
