//! What a handler answers: a finished result, or "I need input first"
//! (multi round-trip requests, MRTR).
//!
//! [`Outcome`] is `#[non_exhaustive]` so extensions can add kinds of answer
//! (the tasks extension answers a tool call with a task handle) without
//! changing handler signatures.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};
use switchboard_wire::types::method;
use switchboard_wire::{
    CallToolResult, ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams,
    GetPromptResult, JsonObject, PromptMessage, ReadResourceResult, types::ResultHeader,
};

/// The answer of a `tools/call`, `prompts/get` or `resources/read` handler.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Outcome<T> {
    /// The request is done.
    Complete(T),
    /// The server needs client input (elicitation, sampling, roots) and the
    /// client should retry with `inputResponses` (MRTR).
    InputRequired(InputRequired),
    /// Tools only: the work continues as a task (the tasks extension); see
    /// [`crate::TaskWork`].
    Task(crate::task::TaskWork),
}

impl<T> From<InputRequired> for Outcome<T> {
    fn from(i: InputRequired) -> Self {
        Outcome::InputRequired(i)
    }
}

impl From<CallToolResult> for Outcome<CallToolResult> {
    fn from(r: CallToolResult) -> Self {
        Outcome::Complete(r)
    }
}

impl From<GetPromptResult> for Outcome<GetPromptResult> {
    fn from(r: GetPromptResult) -> Self {
        Outcome::Complete(r)
    }
}

impl From<Vec<PromptMessage>> for Outcome<GetPromptResult> {
    fn from(messages: Vec<PromptMessage>) -> Self {
        Outcome::Complete(GetPromptResult {
            description: None,
            messages,
            header: ResultHeader::complete(),
        })
    }
}

impl From<ReadResourceResult> for Outcome<ReadResourceResult> {
    fn from(r: ReadResourceResult) -> Self {
        Outcome::Complete(r)
    }
}

/// An `input_required` answer under construction: the input requests, keyed
/// by names of the handler's choosing, and optional state to get back on the
/// retry.
///
/// The state is sealed by the framework into an integrity-protected
/// `requestState` bound to this request's method, tool/prompt/resource,
/// arguments, principal and an expiry; on the retry the handler reads it with
/// [`Context::state`](crate::Context::state).
///
/// ```
/// use switchboard_server::{Elicitation, InputRequired};
/// use serde_json::json;
///
/// let ask = InputRequired::new()
///     .elicit("user_name", Elicitation::form("What is your name?", json!({
///         "type": "object",
///         "properties": {"name": {"type": "string"}},
///         "required": ["name"]
///     })))
///     .state(json!({"step": 1}));
/// # let _ = ask;
/// ```
#[derive(Clone, Debug, Default)]
pub struct InputRequired {
    pub(crate) requests: Vec<(String, String, Value)>,
    pub(crate) state: Option<Result<Value, String>>,
    /// The retry must reach this replica ([`InputRequired::bound_to_this_replica`]).
    pub(crate) replica_bound: bool,
}

impl InputRequired {
    /// An empty answer; add requests and/or state.
    pub fn new() -> Self {
        InputRequired::default()
    }

    /// Asks the user (`elicitation/create`).
    pub fn elicit(self, key: impl Into<String>, elicitation: Elicitation) -> Self {
        self.request(
            key,
            method::ELICITATION_CREATE,
            serde_json::to_value(elicitation.params).unwrap_or_else(|_| json!({})),
        )
    }

    /// Asks the client's model (`sampling/createMessage`).
    pub fn sample(self, key: impl Into<String>, sampling: Sampling) -> Self {
        self.request(
            key,
            method::SAMPLING_CREATE_MESSAGE,
            Value::Object(sampling.params),
        )
    }

    /// Asks for the client's roots (`roots/list`).
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, method::ROOTS_LIST, json!({}))
    }

    /// Adds an input request with raw params; a key used twice keeps the
    /// last request (keys are unique, MRTR-04).
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        let key = key.into();
        self.requests.retain(|(k, _, _)| *k != key);
        self.requests.push((key, method.to_owned(), params));
        self
    }

    /// State to receive back on the retry, sealed into `requestState`.
    pub fn state(mut self, state: impl Serialize) -> Self {
        self.state = Some(serde_json::to_value(state).map_err(|e| e.to_string()));
        self
    }

    /// Marks the state as meaningful only to this replica (it names work
    /// held in this process's memory): when the server has a name among
    /// replicas ([`crate::ServerBuilder::task_origin`]), the `requestState`
    /// starts with it, and a retry reaching a peer replica
    /// ([`crate::ServerBuilder::replica_peers`]) is sent on to this one.
    #[must_use]
    pub fn bound_to_this_replica(mut self) -> Self {
        self.replica_bound = true;
        self
    }

    /// Whether nothing was asked and no state set (not a valid answer,
    /// MRTR-03).
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.state.is_none()
    }

    /// The keys of the input requests, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.requests.iter().map(|(k, _, _)| k.as_str())
    }

    /// The client capabilities these requests need that `caps` lacks, as a
    /// `ClientCapabilities` object, or `None` when all are declared (MRTR-05).
    pub(crate) fn missing_capabilities(&self, caps: &ClientCapabilities) -> Option<Value> {
        let mut missing = Map::new();
        for (_, m, params) in &self.requests {
            match m.as_str() {
                method::ELICITATION_CREATE => {
                    let url = params.get("mode").and_then(Value::as_str) == Some("url");
                    if url && !caps.supports_elicitation_url() {
                        merge(&mut missing, "elicitation", "url");
                    } else if !url && !caps.supports_elicitation_form() {
                        merge(&mut missing, "elicitation", "form");
                    }
                }
                method::SAMPLING_CREATE_MESSAGE => {
                    let tools = params.get("tools").is_some() || params.get("toolChoice").is_some();
                    if !caps.supports_sampling() {
                        missing.entry("sampling").or_insert_with(|| json!({}));
                    }
                    if tools && !caps.supports_sampling_tools() {
                        merge(&mut missing, "sampling", "tools");
                    }
                }
                method::ROOTS_LIST if !caps.supports_roots() => {
                    missing.entry("roots").or_insert_with(|| json!({}));
                }
                _ => {}
            }
        }
        (!missing.is_empty()).then_some(Value::Object(missing))
    }

    /// The `inputRequests` object.
    pub(crate) fn requests_object(&self) -> JsonObject {
        self.requests
            .iter()
            .map(|(k, m, p)| (k.clone(), json!({"method": m, "params": p})))
            .collect()
    }
}

fn merge(missing: &mut Map<String, Value>, cap: &str, sub: &str) {
    let entry = missing.entry(cap).or_insert_with(|| json!({}));
    if let Value::Object(o) = entry {
        o.insert(sub.to_owned(), json!({}));
    }
}

/// Params of an `elicitation/create` input request: the wire's
/// [`ElicitRequestParams`], with a form derived from a Rust type.
#[derive(Clone, Debug)]
pub struct Elicitation {
    params: ElicitRequestParams,
}

impl Elicitation {
    /// A form: `message` and the flat object schema of the fields to fill
    /// (ELIC-03, ELIC-05). Never ask for secrets this way (ELIC-06).
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        ElicitRequestParams::form(message, requested_schema).into()
    }

    /// A form whose schema is derived from `T`.
    pub fn form_for<T: JsonSchema>(message: impl Into<String>) -> Self {
        let mut schema = crate::schema::schema_for::<T>();
        schema.remove("$schema");
        Elicitation::form(message, Value::Object(schema))
    }

    /// A URL-mode elicitation: the user completes a flow at `url` out of band.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestParams::url(message, url).into()
    }

    /// Sets another member of the params.
    pub fn with(mut self, key: impl Into<String>, value: Value) -> Self {
        self.params.extra.insert(key.into(), value);
        self
    }
}

impl From<ElicitRequestParams> for Elicitation {
    fn from(params: ElicitRequestParams) -> Self {
        Elicitation { params }
    }
}

/// Params of a `sampling/createMessage` input request.
#[derive(Clone, Debug)]
pub struct Sampling {
    params: JsonObject,
}

impl Sampling {
    /// One user message of text, answered with at most `max_tokens` tokens.
    pub fn prompt(text: impl Into<String>, max_tokens: u32) -> Self {
        CreateMessageRequestParams::prompt(text, u64::from(max_tokens)).into()
    }

    /// Raw params, for anything [`CreateMessageRequestParams`] does not
    /// cover.
    pub fn raw(params: JsonObject) -> Self {
        Sampling { params }
    }

    /// Sets the system prompt.
    pub fn system_prompt(self, text: impl Into<String>) -> Self {
        self.with("systemPrompt", Value::String(text.into()))
    }

    /// Sets another member of the params.
    pub fn with(mut self, key: impl Into<String>, value: Value) -> Self {
        self.params.insert(key.into(), value);
        self
    }
}

impl From<CreateMessageRequestParams> for Sampling {
    fn from(params: CreateMessageRequestParams) -> Self {
        match serde_json::to_value(params) {
            Ok(Value::Object(params)) => Sampling { params },
            // A struct always serializes to an object.
            _ => Sampling::raw(JsonObject::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    // MRTR-05: only capabilities the request declared.
    #[test]
    fn missing_capabilities_are_named() {
        let ask = InputRequired::new()
            .elicit(
                "a",
                Elicitation::form("m", json!({"type":"object","properties":{}})),
            )
            .sample("b", Sampling::prompt("q", 10))
            .list_roots("c");
        assert_eq!(
            ask.missing_capabilities(&caps(json!({}))),
            Some(json!({"elicitation":{"form":{}},"sampling":{},"roots":{}}))
        );
        assert_eq!(
            ask.missing_capabilities(&caps(json!({"elicitation":{},"sampling":{},"roots":{}}))),
            None
        );
        let url = InputRequired::new().elicit("u", Elicitation::url("go", "https://x.example"));
        assert_eq!(
            url.missing_capabilities(&caps(json!({"elicitation":{}}))),
            Some(json!({"elicitation":{"url":{}}}))
        );
        let tools =
            InputRequired::new().sample("t", Sampling::prompt("q", 1).with("tools", json!([])));
        assert_eq!(
            tools.missing_capabilities(&caps(json!({"sampling":{}}))),
            Some(json!({"sampling":{"tools":{}}}))
        );
    }

    #[test]
    fn keys_stay_unique() {
        let ask = InputRequired::new().list_roots("a").list_roots("a");
        assert_eq!(ask.keys().count(), 1);
        assert!(InputRequired::new().is_empty());
    }
}
