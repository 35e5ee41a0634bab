//! Multi round-trip requests (MRTR): an `input_required` result and the
//! input requests inside it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JsonObject, ResultHeader};

/// One input request inside an `input_required` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A result with `resultType: "input_required"` (MRTR).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// What the server needs, keyed by the server's names for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<JsonObject>,
    /// Opaque state to echo on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

impl InputRequiredResult {
    /// The input requests in the server's order, each parsed; an entry that
    /// is not an `{method, params}` object is `Err` with its key.
    pub fn requests(&self) -> impl Iterator<Item = (&str, Result<InputRequest, &Value>)> {
        self.input_requests.iter().flatten().map(|(k, v)| {
            (
                k.as_str(),
                serde_json::from_value::<InputRequest>(v.clone()).map_err(|_| v),
            )
        })
    }
}
