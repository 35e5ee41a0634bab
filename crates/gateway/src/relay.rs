//! Relayed questions: a server's elicitation, sampling or roots request
//! during a tool call, put to the gateway's own client.
//!
//! A modern server asks inside an `input_required` result. The host hands
//! it back (`relay_input` in the call's request options); the gateway answers its client
//! with an `input_required` of its own carrying the same requests, and
//! seals into its `requestState` what the retry needs: the request keys and
//! the server's own `requestState` (signed, bound to the tool, the
//! arguments and the principal by the framework). The retry — on any
//! replica sharing the signing key — calls the tool again with the answers
//! and the server's state: nothing is remembered in between.
//!
//! A legacy (2025-11-25) server asks with a request of its own in the
//! middle of the call. The host ties it to the call
//! (the request's `call_input`) and the gateway relays it the same way,
//! one question per round, but the call itself has to wait: it is parked
//! on this replica, and the sealed state names it and the replica (see
//! `parked`). A retry reaching a peer replica is sent on to it
//! ([`crate::GatewayOptions::peers`]); one reaching another replica gets
//! an error saying that such servers need the retry on the same replica.
//!
//! A modern server's question during `prompts/get` is relayed the same
//! way. The downstream request declares only the questions the gateway's
//! client can answer (the request's `capabilities`), so a server
//! that needs another one refuses with -32021, which goes back as is.
//!
//! When the gateway's client did not declare what the server asks for,
//! the call ends with an `isError` text saying so (a legacy server's
//! request is answered with an error saying the same). A question the
//! host cannot tie to a tool call or a modern `prompts/get` — asked
//! during `resources/read`, or by a legacy server during a prompt or
//! while several requests are in flight on its connection — reaches
//! [`relay_input_handler`] and is declined.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_client::{
    InputContext, InputError, InputHandler, InputSupport, Resume, input_handler_fn,
};
use switchboard_host::CallReport;
use switchboard_server::{Context, HandlerError, InputRequired};
use switchboard_wire::types::method;
use switchboard_wire::{ClientCapabilities, ErrorCode, InputRequiredResult, JsonObject};

use crate::parked::ParkedAt;

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
    /// Where the call waits, when a legacy server asked (the call is
    /// parked rather than called again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parked: Option<ParkedAt>,
}

/// What the retry of a relayed question carries on.
pub(crate) enum Retry {
    /// A modern server's question: call again with these.
    Call(Resume),
    /// A legacy server's question: the parked call, and the answers.
    Parked(ParkedAt, JsonObject),
}

/// The answers of a relayed question, when this request is the retry of
/// one: read from the sealed state and the client's `inputResponses`.
///
/// # Errors
/// A bad state, or an answer missing for one of the server's keys.
pub(crate) async fn resume(ctx: &Context) -> Result<Option<Retry>, HandlerError> {
    if !ctx.has_state() {
        return Ok(None);
    }
    let state: Value = ctx.state()?.unwrap_or(Value::Null);
    let Ok(relayed) = serde_json::from_value::<Relayed>(state) else {
        return Ok(None);
    };
    ctx.consume_state().await?;
    let mut responses = serde_json::Map::new();
    for key in &relayed.relay.keys {
        let Some(answer) = ctx.input().raw(key) else {
            return Err(HandlerError::invalid_params(format!(
                "inputResponses has no answer for {key:?}"
            )));
        };
        responses.insert(key.clone(), answer.clone());
    }
    if let Some(at) = relayed.relay.parked {
        return Ok(Some(Retry::Parked(at, responses)));
    }
    Ok(Some(Retry::Call(Resume {
        input_responses: (!responses.is_empty()).then_some(responses),
        request_state: relayed.relay.state,
    })))
}

/// The `inputResponses` of a request without a `requestState`: answers
/// the client gave before being asked (MRTR allows it), passed down as
/// they are for the server to judge (it ignores keys it did not ask
/// for). `None` when there are none, or when the request carries a state
/// (then [`resume`] or the approval reads them).
pub(crate) fn unsolicited(ctx: &Context) -> Option<Resume> {
    let input = ctx.input();
    if ctx.has_state() || input.is_empty() {
        return None;
    }
    let answers: JsonObject = input
        .keys()
        .filter_map(|key| Some((key.to_owned(), input.raw(key)?.clone())))
        .collect();
    Some(Resume {
        input_responses: Some(answers),
        request_state: None,
    })
}

/// [`resume`] for a request that is never parked (`prompts/get`): the
/// answers to pass on, if this is the retry of a relayed question.
///
/// # Errors
/// As [`resume`]; and a state naming a parked call, which only a tool
/// call can be.
pub(crate) async fn resume_call(ctx: &Context) -> Result<Option<Resume>, HandlerError> {
    match resume(ctx).await? {
        None => Ok(None),
        Some(Retry::Call(resume)) => Ok(Some(resume)),
        Some(Retry::Parked(..)) => Err(HandlerError::invalid_params(
            "requestState belongs to a tool call, not to this request",
        )),
    }
}

/// A server's refusal of a call that goes upstream as the gateway's own
/// JSON-RPC error, as it came: -32021 (the downstream request declared the
/// upstream client's capabilities, so the capability missing is that
/// client's), and, when the call carried the client's answers
/// (`answered`: they went down as they came, so they are the likely
/// cause), -32602. Other protocol errors stay the host's `isError` text.
pub(crate) fn refusal(report: &CallReport, answered: bool) -> Option<HandlerError> {
    let error = report.protocol_error.as_ref()?;
    let code = error.code;
    let relayed = code == ErrorCode::MissingRequiredClientCapability.code()
        || (answered && code == ErrorCode::InvalidParams.code());
    relayed.then(|| HandlerError::rpc((**error).clone()))
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
            return Err(cannot_ask(tool, missing, &request.method));
        }
        keys.push(key.to_owned());
        out = out.request(key, &request.method, params);
    }
    Ok(out.state(Relayed {
        relay: RelayState {
            keys,
            state: asked.request_state.clone(),
            parked: None,
        },
    }))
}

/// A parked call's question put to the client (its one request under
/// `key`), the state naming where the call waits.
pub(crate) fn parked_question(asked: InputRequired, key: String, at: ParkedAt) -> InputRequired {
    // The call waits in this process: a retry reaching a peer replica is
    // sent on here.
    asked.bound_to_this_replica().state(Relayed {
        relay: RelayState {
            keys: vec![key],
            state: None,
            parked: Some(at),
        },
    })
}

/// The text for a question the client cannot answer.
pub(crate) fn cannot_ask(tool: &str, missing: &str, method: &str) -> String {
    format!(
        "The server behind {tool} asked for {missing} ({method}), and the gateway cannot pass the question on: \
         its client did not declare that capability. The request did not finish; \
         use a client that supports {missing}, or do without {tool}."
    )
}

/// What the client lacks to answer `method`, in words; `None` when it can.
pub(crate) fn uncovered(
    method: &str,
    params: &Value,
    caps: &ClientCapabilities,
) -> Option<&'static str> {
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
/// it (one the host could not tie to a tool call or a modern
/// `prompts/get`: asked during `resources/read`, or by a legacy server
/// during a prompt or with several requests in flight on its connection) is passed to `inner` when that
/// handler can answer it, and declined with a text saying why otherwise.
pub fn relay_input_handler(inner: Option<Arc<dyn InputHandler>>) -> Arc<dyn InputHandler> {
    let support = InputSupport {
        sampling_tools: false,
        ..InputSupport::ALL
    };
    Arc::new(input_handler_fn(support, move |cx, question| {
        let inner = inner.clone();
        async move {
            match inner.filter(|h| h.support().answers(&question)) {
                Some(h) => h.answer(cx, question).await,
                None => Err(declined(&cx, question.method())),
            }
        }
    }))
}

fn declined(cx: &InputContext, what: &str) -> InputError {
    InputError(format!(
        "the gateway relays {what} requests of {} only during a tool call it can tie them to \
         or a modern server's prompts/get (not during resources/read, nor a 2025-11-25 \
         server's prompts/get, nor while several requests are in flight on a 2025-11-25 \
         connection); this one cannot reach the gateway's client",
        cx.server
    ))
}
