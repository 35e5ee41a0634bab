//! Answering what a server asks of the client: elicitation, sampling and
//! roots.
//!
//! A modern server asks inside an `input_required` result (MRTR); a legacy
//! server sends a request of its own during a call. Both reach the same
//! [`InputHandler`], and the capabilities the client declares on every
//! request are derived from what the handler says it supports, so a server
//! is never told the client can do something it cannot (MRTR-05, ELIC-01,
//! SAMP-02, ROOT-02).

use std::fmt;
use std::future::Future;

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_wire::types::method;
use switchboard_wire::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, JsonObject, ListRootsResult, SamplingCapability, value_kind,
};
use switchboard_wire::{ClientCapabilities, Era};

use crate::transport::BoxFuture;

/// Which input requests a handler can answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InputSupport {
    /// Form-mode elicitation (`elicitation/create` with a `requestedSchema`).
    pub elicitation_form: bool,
    /// URL-mode elicitation (`mode: "url"`).
    pub elicitation_url: bool,
    /// `sampling/createMessage` (deprecated feature).
    pub sampling: bool,
    /// Tool use inside sampling (`sampling.tools`).
    pub sampling_tools: bool,
    /// `roots/list` (deprecated feature).
    pub roots: bool,
}

impl InputSupport {
    /// Nothing supported: the client declares no capabilities.
    pub const NONE: InputSupport = InputSupport {
        elicitation_form: false,
        elicitation_url: false,
        sampling: false,
        sampling_tools: false,
        roots: false,
    };

    /// Everything: every kind of question, in every mode.
    pub const ALL: InputSupport = InputSupport {
        elicitation_form: true,
        elicitation_url: true,
        sampling: true,
        sampling_tools: true,
        roots: true,
    };

    /// Form-mode elicitation only: what an approval question needs.
    pub const FORM: InputSupport = InputSupport {
        elicitation_form: true,
        ..InputSupport::NONE
    };

    /// The `clientCapabilities` that declare exactly this support.
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.elicitation_form || self.elicitation_url {
            caps.elicitation = Some(Box::new(ElicitationCapability {
                form: self.elicitation_form.then(JsonObject::new),
                url: self.elicitation_url.then(JsonObject::new),
                extra: JsonObject::new(),
            }));
        }
        if self.sampling {
            caps.sampling = Some(Box::new(SamplingCapability {
                context: None,
                tools: self.sampling_tools.then(JsonObject::new),
                extra: JsonObject::new(),
            }));
        }
        if self.roots {
            caps.roots = Some(JsonObject::new());
        }
        caps
    }

    /// Whether an input request with this method and params is covered.
    pub fn covers(&self, method: &str, params: Option<&Value>) -> bool {
        match method {
            method::ELICITATION_CREATE => {
                let url = params
                    .and_then(|p| p.get("mode"))
                    .and_then(Value::as_str)
                    .is_some_and(|m| m == "url");
                // A missing mode is form mode (ELIC-04).
                if url {
                    self.elicitation_url
                } else {
                    self.elicitation_form
                }
            }
            method::SAMPLING_CREATE_MESSAGE => {
                let wants_tools = params.and_then(|p| p.get("tools")).is_some();
                self.sampling && (!wants_tools || self.sampling_tools)
            }
            method::ROOTS_LIST => self.roots,
            _ => false,
        }
    }

    /// Whether this typed question is covered ([`InputSupport::covers`]).
    pub fn answers(&self, question: &InputQuestion) -> bool {
        match question {
            InputQuestion::Elicit(p) if p.is_url() => self.elicitation_url,
            InputQuestion::Elicit(_) => self.elicitation_form,
            InputQuestion::Sample(p) => self.sampling && (p.tools.is_none() || self.sampling_tools),
            InputQuestion::Roots => self.roots,
        }
    }
}

/// Who is asking, for the handler to show the user (ELIC-07).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputContext {
    /// The server's name (alias).
    pub server: String,
    /// The request the input is for (`tools/call`, …), when known; a legacy
    /// server's request names no call, so it is known only when the client
    /// tied it to one ([`crate::RequestOptions::call_input`]).
    pub method: Option<String>,
    /// The era of the server.
    pub era: Era,
}

/// Why a handler could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

/// A question a server asks, typed: the params of `elicitation/create` or
/// `sampling/createMessage`, or a `roots/list` (which carries none).
/// Members the types do not know stay in their `extra`, so a question
/// relayed to someone else arrives as the server asked it.
#[derive(Clone, Debug, PartialEq)]
pub enum InputQuestion {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    Sample(CreateMessageRequestParams),
    /// `roots/list`.
    Roots,
}

/// The answer to an [`InputQuestion`], of the matching kind; unknown
/// members kept as for the question.
#[derive(Clone, Debug, PartialEq)]
pub enum InputAnswer {
    /// The answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// The answer to `sampling/createMessage`.
    Sample(CreateMessageResult),
    /// The answer to `roots/list`.
    Roots(ListRootsResult),
}

impl InputQuestion {
    /// Reads a server's request: `method` and its `params` (absent params
    /// read as `{}`).
    ///
    /// # Errors
    /// [`InputError`] naming the method when it is not one of the three,
    /// or when the params do not fit its type.
    pub fn parse(method: &str, params: Option<Value>) -> Result<Self, InputError> {
        let params = params.unwrap_or_else(|| Value::Object(JsonObject::new()));
        match method {
            method::ELICITATION_CREATE => typed(method, params).map(InputQuestion::Elicit),
            method::SAMPLING_CREATE_MESSAGE => typed(method, params).map(InputQuestion::Sample),
            method::ROOTS_LIST if params.is_object() => Ok(InputQuestion::Roots),
            method::ROOTS_LIST => Err(InputError(format!(
                "malformed {method} params: expected an object, got {}",
                value_kind(&params)
            ))),
            other => Err(InputError(format!("unknown input request {other:?}"))),
        }
    }

    /// The request's method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputQuestion::Elicit(_) => method::ELICITATION_CREATE,
            InputQuestion::Sample(_) => method::SAMPLING_CREATE_MESSAGE,
            InputQuestion::Roots => method::ROOTS_LIST,
        }
    }

    /// The request's params as JSON, unknown members included (`{}` for
    /// roots).
    pub fn params(&self) -> Value {
        match self {
            InputQuestion::Elicit(p) => to_object(p),
            InputQuestion::Sample(p) => to_object(p),
            InputQuestion::Roots => Value::Object(JsonObject::new()),
        }
    }

    /// Reads an answer given as JSON (a relayed question's, from whoever
    /// the question was passed to) as the answer to this question.
    ///
    /// # Errors
    /// [`InputError`] when it does not fit this kind's result type.
    pub fn answer_from(&self, answer: Value) -> Result<InputAnswer, InputError> {
        let what = self.method();
        let malformed =
            |e: serde_json::Error| InputError(format!("malformed answer to {what}: {e}"));
        Ok(match self {
            InputQuestion::Elicit(_) => {
                InputAnswer::Elicit(serde_json::from_value(answer).map_err(malformed)?)
            }
            InputQuestion::Sample(_) => {
                InputAnswer::Sample(serde_json::from_value(answer).map_err(malformed)?)
            }
            InputQuestion::Roots => {
                InputAnswer::Roots(serde_json::from_value(answer).map_err(malformed)?)
            }
        })
    }
}

impl InputAnswer {
    /// The result object as JSON, unknown members included.
    pub fn into_value(self) -> Value {
        match self {
            InputAnswer::Elicit(r) => to_object(&r),
            InputAnswer::Sample(r) => to_object(&r),
            InputAnswer::Roots(r) => to_object(&r),
        }
    }

    /// The method of the question this answers.
    pub fn method(&self) -> &'static str {
        match self {
            InputAnswer::Elicit(_) => method::ELICITATION_CREATE,
            InputAnswer::Sample(_) => method::SAMPLING_CREATE_MESSAGE,
            InputAnswer::Roots(_) => method::ROOTS_LIST,
        }
    }

    /// The answer to an elicitation.
    ///
    /// # Errors
    /// [`InputError`] when it answers another kind of question.
    pub fn into_elicit(self) -> Result<ElicitResult, InputError> {
        match self {
            InputAnswer::Elicit(r) => Ok(r),
            other => Err(other.mismatch(method::ELICITATION_CREATE)),
        }
    }

    /// The answer to a sampling request.
    ///
    /// # Errors
    /// [`InputError`] when it answers another kind of question.
    pub fn into_sample(self) -> Result<CreateMessageResult, InputError> {
        match self {
            InputAnswer::Sample(r) => Ok(r),
            other => Err(other.mismatch(method::SAMPLING_CREATE_MESSAGE)),
        }
    }

    /// The answer to `roots/list`.
    ///
    /// # Errors
    /// [`InputError`] when it answers another kind of question.
    pub fn into_roots(self) -> Result<ListRootsResult, InputError> {
        match self {
            InputAnswer::Roots(r) => Ok(r),
            other => Err(other.mismatch(method::ROOTS_LIST)),
        }
    }

    fn mismatch(&self, asked: &str) -> InputError {
        InputError(format!(
            "{asked} was answered with an answer to {}",
            self.method()
        ))
    }
}

impl From<ElicitResult> for InputAnswer {
    fn from(r: ElicitResult) -> Self {
        InputAnswer::Elicit(r)
    }
}

impl From<CreateMessageResult> for InputAnswer {
    fn from(r: CreateMessageResult) -> Self {
        InputAnswer::Sample(r)
    }
}

impl From<ListRootsResult> for InputAnswer {
    fn from(r: ListRootsResult) -> Self {
        InputAnswer::Roots(r)
    }
}

/// Answers input requests on the user's behalf.
///
/// Each method receives the request's params typed and returns the typed
/// result (no `resultType`); members neither type knows are kept in their
/// `extra`, both ways. Declining is an answer, not an error: an
/// elicitation handler returns an [`ElicitResult`] with
/// [`ElicitAction::Decline`](switchboard_wire::types::ElicitAction).
/// The defaults refuse, so a handler implements only what it declares in
/// [`InputHandler::support`]. `Arc<H>` and `Box<H>` of a handler are
/// handlers too.
pub trait InputHandler: Send + Sync + fmt::Debug {
    /// What this handler can answer; the client declares exactly this.
    fn support(&self) -> InputSupport;

    /// Answers `elicitation/create`.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn elicit(
        &self,
        cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        let _ = (cx, params);
        Box::pin(async { Err(InputError("elicitation is not supported".into())) })
    }

    /// Answers `sampling/createMessage`.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn sample(
        &self,
        cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, InputError>> {
        let _ = (cx, params);
        Box::pin(async { Err(InputError("sampling is not supported".into())) })
    }

    /// Answers `roots/list`.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, InputError>> {
        let _ = cx;
        Box::pin(async { Err(InputError("roots are not supported".into())) })
    }

    /// Answers one question of any kind, through the method above for its
    /// kind.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn answer(
        &self,
        cx: InputContext,
        question: InputQuestion,
    ) -> BoxFuture<'_, Result<InputAnswer, InputError>> {
        match question {
            InputQuestion::Elicit(p) => {
                let asked = self.elicit(cx, p);
                Box::pin(async move { asked.await.map(InputAnswer::Elicit) })
            }
            InputQuestion::Sample(p) => {
                let asked = self.sample(cx, p);
                Box::pin(async move { asked.await.map(InputAnswer::Sample) })
            }
            InputQuestion::Roots => {
                let asked = self.roots(cx);
                Box::pin(async move { asked.await.map(InputAnswer::Roots) })
            }
        }
    }

    /// Answers every request of one `input_required` round and returns the
    /// answers with the server's keys. By default one after another, each
    /// through [`InputHandler::answer`]; a handler that passes the requests
    /// on to someone who can take them all at once (a gateway's client)
    /// overrides it.
    ///
    /// # Errors
    /// [`InputError`] when one of them cannot be answered.
    fn answer_round(
        &self,
        cx: InputContext,
        requests: Vec<(String, InputQuestion)>,
    ) -> BoxFuture<'_, Result<Vec<(String, InputAnswer)>, InputError>> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(requests.len());
            for (key, question) in requests {
                answers.push((key, self.answer(cx.clone(), question).await?));
            }
            Ok(answers)
        })
    }
}

/// A handler behind a pointer is a handler: every method goes to the one
/// pointed at.
macro_rules! forward_input_handler {
    ($($pointer:ident),*) => {$(
        impl<H: InputHandler + ?Sized> InputHandler for $pointer<H> {
            fn support(&self) -> InputSupport {
                (**self).support()
            }

            fn elicit(
                &self,
                cx: InputContext,
                params: ElicitRequestParams,
            ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
                (**self).elicit(cx, params)
            }

            fn sample(
                &self,
                cx: InputContext,
                params: CreateMessageRequestParams,
            ) -> BoxFuture<'_, Result<CreateMessageResult, InputError>> {
                (**self).sample(cx, params)
            }

            fn roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, InputError>> {
                (**self).roots(cx)
            }

            fn answer(
                &self,
                cx: InputContext,
                question: InputQuestion,
            ) -> BoxFuture<'_, Result<InputAnswer, InputError>> {
                (**self).answer(cx, question)
            }

            fn answer_round(
                &self,
                cx: InputContext,
                requests: Vec<(String, InputQuestion)>,
            ) -> BoxFuture<'_, Result<Vec<(String, InputAnswer)>, InputError>> {
                (**self).answer_round(cx, requests)
            }
        }
    )*};
}

// One handler for many clients (`Arc`), or one held in a box.
forward_input_handler!(Arc, Box);

/// An [`InputHandler`] made of a closure, as hyper's `service_fn` makes a
/// service: it declares `support` and answers every question with
/// `answer(who asks, the question)`.
///
/// ```
/// use switchboard_client::{InputAnswer, InputQuestion, InputSupport, input_handler_fn};
/// use switchboard_wire::types::ElicitResult;
///
/// let yes = input_handler_fn(InputSupport::FORM, |_cx, question| async move {
///     let mut content = serde_json::Map::new();
///     if let InputQuestion::Elicit(form) = &question {
///         content.insert("seen".into(), form.message.clone().into());
///     }
///     Ok(InputAnswer::Elicit(ElicitResult::accept(Some(content))))
/// });
/// # let _ = yes;
/// ```
pub fn input_handler_fn<F, Fut>(support: InputSupport, answer: F) -> InputHandlerFn<F>
where
    F: Fn(InputContext, InputQuestion) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<InputAnswer, InputError>> + Send + 'static,
{
    InputHandlerFn { support, answer }
}

/// The handler [`input_handler_fn`] makes.
#[derive(Clone)]
pub struct InputHandlerFn<F> {
    support: InputSupport,
    answer: F,
}

impl<F> fmt::Debug for InputHandlerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputHandlerFn")
            .field("support", &self.support)
            .finish_non_exhaustive()
    }
}

impl<F, Fut> InputHandler for InputHandlerFn<F>
where
    F: Fn(InputContext, InputQuestion) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<InputAnswer, InputError>> + Send + 'static,
{
    fn support(&self) -> InputSupport {
        self.support
    }

    fn elicit(
        &self,
        cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        let asked = (self.answer)(cx, InputQuestion::Elicit(params));
        Box::pin(async move { asked.await?.into_elicit() })
    }

    fn sample(
        &self,
        cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, InputError>> {
        let asked = (self.answer)(cx, InputQuestion::Sample(params));
        Box::pin(async move { asked.await?.into_sample() })
    }

    fn roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, InputError>> {
        let asked = (self.answer)(cx, InputQuestion::Roots);
        Box::pin(async move { asked.await?.into_roots() })
    }

    fn answer(
        &self,
        cx: InputContext,
        question: InputQuestion,
    ) -> BoxFuture<'_, Result<InputAnswer, InputError>> {
        Box::pin((self.answer)(cx, question))
    }
}

/// A handler that supports nothing: the client declares no capabilities and
/// any input request fails the call.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoInput;

impl InputHandler for NoInput {
    fn support(&self) -> InputSupport {
        InputSupport::NONE
    }
}

/// `params` read as `T`, or an error naming `method` and what did not fit.
fn typed<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, InputError> {
    T::deserialize(params).map_err(|e| InputError(format!("malformed {method} params: {e}")))
}

/// A typed question or answer as its JSON object.
fn to_object<T: Serialize>(value: &T) -> Value {
    // These types hold only JSON values and strings: serializing them
    // cannot fail.
    serde_json::to_value(value).unwrap_or_else(|_| Value::Object(JsonObject::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_wire::Era;

    #[test]
    fn declares_exactly_what_is_supported() {
        assert_eq!(
            serde_json::to_value(InputSupport::NONE.capabilities()).unwrap(),
            json!({})
        );
        let all = InputSupport {
            elicitation_form: true,
            elicitation_url: false,
            sampling: true,
            sampling_tools: false,
            roots: true,
        };
        assert_eq!(
            serde_json::to_value(all.capabilities()).unwrap(),
            json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
        );
    }

    #[test]
    fn coverage_follows_modes() {
        let form = InputSupport {
            elicitation_form: true,
            ..InputSupport::NONE
        };
        assert!(form.covers("elicitation/create", Some(&json!({"message": "x"}))));
        assert!(!form.covers("elicitation/create", Some(&json!({"mode": "url"}))));
        assert!(!form.covers("sampling/createMessage", None));
        let sampling = InputSupport {
            sampling: true,
            ..InputSupport::NONE
        };
        assert!(sampling.covers("sampling/createMessage", Some(&json!({}))));
        assert!(!sampling.covers("sampling/createMessage", Some(&json!({"tools": []}))));
    }

    fn cx() -> InputContext {
        InputContext {
            server: "s".into(),
            method: None,
            era: Era::Modern,
        }
    }

    // The closure adapter answers every kind through one closure, declares
    // what it is given, keeps a round's keys, and refuses an answer of the
    // wrong kind.
    #[tokio::test]
    async fn a_closure_is_a_handler() {
        let support = InputSupport {
            elicitation_form: true,
            roots: true,
            ..InputSupport::NONE
        };
        let h = input_handler_fn(support, |cx: InputContext, q: InputQuestion| async move {
            Ok(match q {
                InputQuestion::Elicit(asked) if asked.message == "wrong" => {
                    InputAnswer::Roots(ListRootsResult::default())
                }
                InputQuestion::Elicit(asked) => {
                    let content = json!({"said": asked.message, "by": cx.server});
                    InputAnswer::Elicit(ElicitResult::accept(content.as_object().cloned()))
                }
                _ => InputAnswer::Roots(ListRootsResult::default()),
            })
        });
        assert_eq!(h.support(), support);
        let lone = h
            .elicit(cx(), ElicitRequestParams::form("hi", json!({})))
            .await
            .unwrap();
        assert_eq!(
            Value::from(lone),
            json!({"action": "accept", "content": {"said": "hi", "by": "s"}})
        );
        let round = h
            .answer_round(
                cx(),
                vec![
                    (
                        "a".into(),
                        InputQuestion::parse("elicitation/create", Some(json!({"message": "one"})))
                            .unwrap(),
                    ),
                    ("b".into(), InputQuestion::Roots),
                ],
            )
            .await
            .unwrap();
        assert_eq!(round[0].0, "a");
        assert_eq!(round[0].1.clone().into_value()["content"]["said"], "one");
        assert_eq!(
            round[1],
            (
                "b".to_owned(),
                InputAnswer::Roots(ListRootsResult::default())
            )
        );
        let wrong = h
            .elicit(cx(), ElicitRequestParams::form("wrong", json!({})))
            .await
            .unwrap_err();
        assert!(
            wrong
                .0
                .contains("elicitation/create was answered with an answer to roots/list"),
            "{wrong}"
        );
    }

    // A question whose params do not fit its type is refused with the
    // method and the reason; so is an answer that does not fit.
    #[test]
    fn malformed_questions_and_answers_are_named() {
        let bad =
            InputQuestion::parse("elicitation/create", Some(json!({"message": 5}))).unwrap_err();
        assert!(
            bad.0.starts_with("malformed elicitation/create params"),
            "{bad}"
        );
        let bad = InputQuestion::parse("sampling/createMessage", Some(json!({"messages": []})))
            .unwrap_err();
        assert!(bad.0.contains("maxTokens"), "{bad}");
        let bad = InputQuestion::parse("roots/list", Some(json!([]))).unwrap_err();
        assert!(bad.0.contains("expected an object, got an array"), "{bad}");
        let bad = InputQuestion::parse("ping/me", None).unwrap_err();
        assert!(bad.0.contains("unknown input request"), "{bad}");
        assert_eq!(
            InputQuestion::parse("roots/list", None),
            Ok(InputQuestion::Roots)
        );
        let q = InputQuestion::parse("elicitation/create", None).unwrap();
        let bad = q.answer_from(json!({"action": "maybe"})).unwrap_err();
        assert!(
            bad.0.starts_with("malformed answer to elicitation/create"),
            "{bad}"
        );
    }

    // Unknown members survive a question read and written again, and an
    // answer read from JSON and written again.
    #[test]
    fn unknown_members_survive_a_relay() {
        let params =
            json!({"message": "m", "requestedSchema": {"type": "object"}, "x-trace": {"id": 7}});
        let q = InputQuestion::parse("elicitation/create", Some(params.clone())).unwrap();
        assert_eq!(q.params(), params);
        let answer = json!({"action": "accept", "content": {"a": 1}, "x-answered-by": "ops"});
        assert_eq!(q.answer_from(answer.clone()).unwrap().into_value(), answer);
        let sample = json!({"messages": [], "maxTokens": 3, "x-s": true});
        let q = InputQuestion::parse("sampling/createMessage", Some(sample.clone())).unwrap();
        assert_eq!(q.params(), sample);
        assert!(
            InputSupport {
                sampling: true,
                ..InputSupport::NONE
            }
            .answers(&q)
        );
    }
}
