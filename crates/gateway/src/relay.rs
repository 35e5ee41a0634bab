//! Relayed questions: a server's elicitation, sampling or roots request
//! during a tool call, put to the gateway's own client.
//!
//! A modern server asks inside an `input_required` result. The host hands
//! it back ([`CallOptions::relay_input`]); the gateway answers its client
//! with an `input_required` of its own carrying the same requests, and
//! seals into its `requestState` what the retry needs: the request keys and
//! the server's own `requestState` (signed, bound to the tool, the
//! arguments and the principal by the framework). The retry — on any
//! replica sharing the signing key — calls the tool again with the answers
//! and the server's state: nothing is remembered in between.
//!
//! When the gateway's client did not declare what the server asks for,
//! the call ends with an `isError` text saying so. A legacy (2025-11-25)
//! server asks with a request of its own in the middle of the call; that
//! would need the call parked on one replica, so such questions are
//! declined ([`relay_input_handler`]), as are questions asked during
//! `prompts/get` or `resources/read`.
//!
//! [`CallOptions::relay_input`]: switchboard_host::CallOptions::relay_input

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_client::{BoxFuture, InputContext, InputError, InputHandler, InputSupport, Resume};
use switchboard_server::{Context, HandlerError, InputRequired};
use switchboard_wire::types::method;
use switchboard_wire::{ClientCapabilities, InputRequiredResult};

/// What the gateway seals into its `requestState` for a relayed question.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Relayed {
    /// The relay's own part.
    relay: RelayState,
}

#[derive(Debug, Serialize, Deserialize)]
struct RelayState {
    /// The keys of the server's input requests, answered on the retry.
    keys: Vec<String>,
    /// The server's `requestState`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
}

/// The answers of a relayed question, when this request is the retry of
/// one: read from the sealed state and the client's `inputResponses`.
///
/// # Errors
/// A bad state, or an answer missing for one of the server's keys.
pub(crate) fn resume(ctx: &Context) -> Result<Option<Resume>, HandlerError> {
    if !ctx.has_state() {
        return Ok(None);
    }
    let state: Value = ctx.state()?.unwrap_or(Value::Null);
    let Ok(relayed) = serde_json::from_value::<Relayed>(state) else {
        return Ok(None);
    };
    ctx.consume_state()?;
    let mut responses = serde_json::Map::new();
    for key in &relayed.relay.keys {
        let Some(answer) = ctx.input().raw(key) else {
            return Err(HandlerError::invalid_params(format!(
                "inputResponses has no answer for {key:?}"
            )));
        };
        responses.insert(key.clone(), answer.clone());
    }
    Ok(Some(Resume {
        input_responses: (!responses.is_empty()).then_some(responses),
        request_state: relayed.relay.state,
    }))
}

/// The gateway's answer to a server's question: the same requests put to
/// its client, or (when the client cannot answer one) an `isError` text
/// saying why.
pub(crate) fn ask(
    tool: &str,
    asked: &InputRequiredResult,
    caps: &ClientCapabilities,
) -> Result<InputRequired, String> {
    let mut out = InputRequired::new();
    let mut keys = Vec::new();
    for (key, request) in asked.requests() {
        let Ok(request) = request else {
            return Err(format!(
                "The server behind {tool} asked for input the gateway cannot read (request {key:?} is malformed)."
            ));
        };
        let params = request.params.unwrap_or_else(|| serde_json::json!({}));
        if let Some(missing) = uncovered(&request.method, &params, caps) {
            return Err(format!(
                "The server behind {tool} asked for {missing} ({}), and the gateway cannot pass the question on: \
                 its client did not declare that capability. The call did not finish; \
                 use a client that supports {missing}, or do without this tool.",
                request.method
            ));
        }
        keys.push(key.to_owned());
        out = out.request(key, &request.method, params);
    }
    Ok(out.state(Relayed {
        relay: RelayState {
            keys,
            state: asked.request_state.clone(),
        },
    }))
}

/// What the client lacks to answer `method`, in words; `None` when it can.
fn uncovered(method: &str, params: &Value, caps: &ClientCapabilities) -> Option<&'static str> {
    match method {
        method::ELICITATION_CREATE => {
            let url = params.get("mode").and_then(Value::as_str) == Some("url");
            if url {
                (!caps.supports_elicitation_url()).then_some("URL elicitation")
            } else {
                (!caps.supports_elicitation_form()).then_some("form elicitation")
            }
        }
        method::SAMPLING_CREATE_MESSAGE => {
            let tools = params.get("tools").is_some() || params.get("toolChoice").is_some();
            if !caps.supports_sampling() {
                Some("sampling")
            } else if tools && !caps.supports_sampling_tools() {
                Some("sampling with tools")
            } else {
                None
            }
        }
        method::ROOTS_LIST => (!caps.supports_roots()).then_some("roots"),
        _ => Some("an unknown kind of input"),
    }
}

/// The input handler to mount a gateway's host with: it declares
/// elicitation (form and URL), sampling and roots, so that servers ask
/// their questions and the gateway can relay them; a question that reaches
/// it (a legacy server's own request, or one asked outside a tool call) is
/// passed to `inner` when that handler can answer it, and declined with a
/// text saying why otherwise.
pub fn relay_input_handler(inner: Option<Arc<dyn InputHandler>>) -> Arc<dyn InputHandler> {
    Arc::new(RelayInput { inner })
}

#[derive(Debug)]
struct RelayInput {
    inner: Option<Arc<dyn InputHandler>>,
}

impl RelayInput {
    fn inner_for(&self, method: &str, params: Option<&Value>) -> Option<&Arc<dyn InputHandler>> {
        self.inner
            .as_ref()
            .filter(|h| h.support().covers(method, params))
    }
}

fn declined(cx: &InputContext, what: &str) -> InputError {
    InputError(format!(
        "the gateway relays {what} requests of {} only when they come as input_required on a tool call \
         (a 2026-07-28 server); this one cannot reach the gateway's client",
        cx.server
    ))
}

impl InputHandler for RelayInput {
    fn support(&self) -> InputSupport {
        InputSupport {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            sampling_tools: false,
            roots: true,
        }
    }

    fn elicit(&self, cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        match self.inner_for(method::ELICITATION_CREATE, Some(&params)) {
            Some(h) => h.elicit(cx, params),
            None => Box::pin(async move { Err(declined(&cx, "elicitation")) }),
        }
    }

    fn sample(&self, cx: InputContext, params: Value) -> BoxFuture<'_, Result<Value, InputError>> {
        match self.inner_for(method::SAMPLING_CREATE_MESSAGE, Some(&params)) {
            Some(h) => h.sample(cx, params),
            None => Box::pin(async move { Err(declined(&cx, "sampling")) }),
        }
    }

    fn roots(&self, cx: InputContext) -> BoxFuture<'_, Result<Value, InputError>> {
        match self.inner_for(method::ROOTS_LIST, None) {
            Some(h) => h.roots(cx),
            None => Box::pin(async move { Err(declined(&cx, "roots")) }),
        }
    }
}
