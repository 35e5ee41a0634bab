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

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use switchboard_wire::types::method;
use switchboard_wire::types::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitationCapability, JsonObject,
    SamplingCapability,
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

/// Answers input requests on the user's behalf.
///
/// Each method receives the request's `params` verbatim and returns the
/// result object verbatim (`ElicitResult`, `CreateMessageResult`,
/// `ListRootsResult`; no `resultType`). Declining is an answer, not an
/// error: an elicitation handler returns `{"action": "decline"}`.
/// The defaults refuse, so a handler implements only what it declares in
/// [`InputHandler::support`].
pub trait InputHandler: Send + Sync + fmt::Debug {
    /// What this handler can answer; the client declares exactly this.
    fn support(&self) -> InputSupport;

    /// Answers `elicitation/create`.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn elicit(&self, cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        let _ = (cx, params);
        Box::pin(async { Err(InputError("elicitation is not supported".into())) })
    }

    /// Answers `sampling/createMessage`.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn sample(&self, cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        let _ = (cx, params);
        Box::pin(async { Err(InputError("sampling is not supported".into())) })
    }

    /// Answers `roots/list`.
    ///
    /// # Errors
    /// [`InputError`] when no answer can be produced.
    fn roots(&self, cx: InputContext) -> BoxFuture<'_, Result<Value, InputError>> {
        let _ = cx;
        Box::pin(async { Err(InputError("roots are not supported".into())) })
    }

    /// Answers every request of one `input_required` round and returns the
    /// answers by key. By default one after another, each through the
    /// method above; a handler that passes the requests on to someone who
    /// can take them all at once (a gateway's client) overrides it.
    ///
    /// # Errors
    /// [`InputError`] when one of them cannot be answered.
    fn answer_round(
        &self,
        cx: InputContext,
        requests: Vec<InputQuestion>,
    ) -> BoxFuture<'_, Result<JsonObject, InputError>> {
        Box::pin(each_by_key(requests, move |q| {
            let cx = cx.clone();
            async move { answer(self, cx, &q.method, Some(q.params)).await }
        }))
    }
}

/// One request of an `input_required` round, for
/// [`InputHandler::answer_round`].
#[derive(Clone, Debug, PartialEq)]
pub struct InputQuestion {
    /// The server's key for it (`inputRequests` key).
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its `params`, verbatim (`{}` when it had none).
    pub params: Value,
}

impl InputQuestion {
    /// A lone request (a legacy server's own, or one handed to a single
    /// method of [`InputHandler`]): no key.
    fn lone(method: &str, params: Value) -> Self {
        InputQuestion {
            key: String::new(),
            method: method.to_owned(),
            params,
        }
    }

    /// The params of an `elicitation/create`, typed.
    ///
    /// # Errors
    /// [`InputError`] when it is another request or its params are
    /// malformed.
    pub fn elicitation(&self) -> Result<ElicitRequestParams, InputError> {
        self.typed(method::ELICITATION_CREATE)
    }

    /// The params of a `sampling/createMessage`, typed.
    ///
    /// # Errors
    /// [`InputError`] when it is another request or its params are
    /// malformed.
    pub fn sampling(&self) -> Result<CreateMessageRequestParams, InputError> {
        self.typed(method::SAMPLING_CREATE_MESSAGE)
    }

    fn typed<T: DeserializeOwned>(&self, expected: &str) -> Result<T, InputError> {
        if self.method != expected {
            return Err(InputError(format!(
                "expected {expected}, got {}",
                self.method
            )));
        }
        T::deserialize(&self.params)
            .map_err(|e| InputError(format!("malformed {expected} params: {e}")))
    }
}

/// An [`InputHandler`] made of a closure, as hyper's `service_fn` makes a
/// service: it declares `support` and answers every input request with
/// `answer(who asks, the request)`, which returns the result object
/// (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`).
///
/// ```
/// use serde_json::json;
/// use switchboard_client::{InputSupport, input_handler_fn};
///
/// let yes = input_handler_fn(
///     InputSupport { elicitation_form: true, ..InputSupport::NONE },
///     |_cx, _question| async { Ok(json!({"action": "accept", "content": {"ok": true}})) },
/// );
/// # let _ = yes;
/// ```
pub fn input_handler_fn<F, Fut>(support: InputSupport, answer: F) -> InputHandlerFn<F>
where
    F: Fn(InputContext, InputQuestion) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, InputError>> + Send + 'static,
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
    Fut: Future<Output = Result<Value, InputError>> + Send + 'static,
{
    fn support(&self) -> InputSupport {
        self.support
    }

    fn elicit(&self, cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        Box::pin((self.answer)(
            cx,
            InputQuestion::lone(method::ELICITATION_CREATE, params),
        ))
    }

    fn sample(&self, cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        Box::pin((self.answer)(
            cx,
            InputQuestion::lone(method::SAMPLING_CREATE_MESSAGE, params),
        ))
    }

    fn roots(&self, cx: InputContext) -> BoxFuture<'_, Result<Value, InputError>> {
        Box::pin((self.answer)(
            cx,
            InputQuestion::lone(method::ROOTS_LIST, json!({})),
        ))
    }

    // Each request keeps its key, so the closure can answer by it.
    fn answer_round(
        &self,
        cx: InputContext,
        requests: Vec<InputQuestion>,
    ) -> BoxFuture<'_, Result<JsonObject, InputError>> {
        Box::pin(each_by_key(requests, move |q| (self.answer)(cx.clone(), q)))
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

/// Answers a round's requests one after another with `one`, keyed as the
/// server keyed them; the first failure fails the round.
async fn each_by_key<F, Fut>(
    requests: Vec<InputQuestion>,
    mut one: F,
) -> Result<JsonObject, InputError>
where
    F: FnMut(InputQuestion) -> Fut,
    Fut: Future<Output = Result<Value, InputError>>,
{
    let mut answers = JsonObject::new();
    for q in requests {
        let key = q.key.clone();
        answers.insert(key, one(q).await?);
    }
    Ok(answers)
}

/// Dispatches one input request to the handler method for its kind.
pub(crate) async fn answer<H: InputHandler + ?Sized>(
    handler: &H,
    cx: InputContext,
    method: &str,
    params: Option<Value>,
) -> Result<Value, InputError> {
    let params = params.unwrap_or_else(|| json!({}));
    match method {
        method::ELICITATION_CREATE => handler.elicit(cx, params).await,
        method::SAMPLING_CREATE_MESSAGE => handler.sample(cx, params).await,
        method::ROOTS_LIST => handler.roots(cx).await,
        other => Err(InputError(format!("unknown input request {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    // The closure adapter answers every kind, declares what it is given,
    // and keeps a round's keys.
    #[tokio::test]
    async fn a_closure_is_a_handler() {
        let support = InputSupport {
            elicitation_form: true,
            roots: true,
            ..InputSupport::NONE
        };
        let h = input_handler_fn(support, |cx: InputContext, q: InputQuestion| async move {
            match q.method.as_str() {
                method::ELICITATION_CREATE => {
                    let asked = q.elicitation()?;
                    Ok(
                        json!({"action": "accept", "content": {"said": asked.message, "key": q.key, "by": cx.server}}),
                    )
                }
                _ => Ok(json!({"roots": []})),
            }
        });
        assert_eq!(h.support(), support);
        let cx = InputContext {
            server: "s".into(),
            method: None,
            era: Era::Modern,
        };
        let lone = answer(
            &h,
            cx.clone(),
            method::ELICITATION_CREATE,
            Some(json!({"message": "hi"})),
        )
        .await
        .unwrap();
        assert_eq!(lone["content"], json!({"said": "hi", "key": "", "by": "s"}));
        let round = h
            .answer_round(
                cx.clone(),
                vec![
                    InputQuestion {
                        key: "a".into(),
                        method: method::ELICITATION_CREATE.into(),
                        params: json!({"message": "one"}),
                    },
                    InputQuestion {
                        key: "b".into(),
                        method: method::ROOTS_LIST.into(),
                        params: json!({}),
                    },
                ],
            )
            .await
            .unwrap();
        assert_eq!(round["a"]["content"]["key"], "a");
        assert_eq!(round["b"], json!({"roots": []}));
        let bad = answer(
            &h,
            cx,
            method::ELICITATION_CREATE,
            Some(json!({"message": 5})),
        )
        .await
        .unwrap_err();
        assert!(
            bad.0.contains("malformed elicitation/create params"),
            "{bad}"
        );
    }
}
