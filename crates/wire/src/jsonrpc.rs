//! The JSON-RPC 2.0 envelope: requests, notifications and responses.
//!
//! One [`Message`] enum covers the three shapes. Parsing classifies a value
//! by its keys: `method` with `id` is a request, `method` without `id` is a
//! notification (never a response, whatever else it carries), and `result`
//! or `error` with an `id` is a response.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error_code::ErrorCode;

/// The JSON-RPC version string every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a JSON string or integer, never `null` (WIRE-03).
///
/// `Display` tells `1` from `"1"` by quoting strings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl RequestId {
    /// The id as a JSON value, keeping its type.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_str()),
        }
    }

    /// Reads an id from a JSON value; `None` for anything but a string or an
    /// integer that fits in `i64`.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            _ => None,
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        RequestId::from_value(&value)
            .ok_or_else(|| de::Error::custom("request id must be a string or an integer"))
    }
}

/// A JSON-RPC request: a method call that expects exactly one response.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The id the response will echo.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The params object; `None` when absent. Its `_meta` holds this
    /// request's own members; see [`Request::with_shared_meta`] for the
    /// members it shares with other requests.
    pub params: Option<Value>,
    /// `_meta` members shared with other requests (a client session's
    /// protocol version, capabilities and info), written into
    /// `params._meta` when the request is serialised. Never set by parsing.
    shared_meta: Option<Arc<SharedMeta>>,
}

/// `_meta` members many requests share (a client session's protocol
/// version, capabilities and info), with their JSON rendered once, on first
/// use, so that a request carrying nothing else in `_meta` writes them as
/// ready bytes instead of serialising the same members on every request.
#[derive(Debug, Default)]
pub struct SharedMeta {
    members: Map<String, Value>,
    rendered: std::sync::OnceLock<Option<Box<serde_json::value::RawValue>>>,
}

impl SharedMeta {
    /// Shared members, rendered when first written.
    pub fn new(members: Map<String, Value>) -> Self {
        SharedMeta {
            members,
            rendered: std::sync::OnceLock::new(),
        }
    }

    /// The members.
    pub fn members(&self) -> &Map<String, Value> {
        &self.members
    }

    /// The members as one JSON object, rendered on the first call (`None`
    /// only if rendering failed, which a map of JSON values cannot).
    fn rendered(&self) -> Option<&serde_json::value::RawValue> {
        self.rendered
            .get_or_init(|| serde_json::value::to_raw_value(&self.members).ok())
            .as_deref()
    }
}

impl Clone for SharedMeta {
    fn clone(&self) -> Self {
        SharedMeta::new(self.members.clone())
    }
}

impl PartialEq for SharedMeta {
    fn eq(&self, other: &Self) -> bool {
        self.members == other.members
    }
}

/// A JSON-RPC notification: a message without an id that is never answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The params object; `None` when absent.
    pub params: Option<Value>,
}

/// A JSON-RPC response: the result or the error of one request.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The id of the request this answers; `None` only for an error about a
    /// request whose id could not be read.
    pub id: Option<RequestId>,
    /// The result object, or the error.
    pub outcome: Result<Value, ErrorObject>,
}

/// The `error` member of an error response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code; see [`ErrorCode`] for the known ones.
    pub code: i64,
    /// One concise sentence describing the error.
    pub message: String,
    /// Extra structured information, e.g. `supported` versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Any JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// Why bytes could not be read as a JSON-RPC message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The bytes are not JSON (JSON-RPC -32700).
    #[error("not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The JSON is not a JSON-RPC 2.0 message (JSON-RPC -32600). `id` is the
    /// request id when one could be read, so the error can echo it.
    #[error("not a JSON-RPC 2.0 message: {reason}")]
    Invalid {
        /// What is wrong with it.
        reason: &'static str,
        /// The id, when the message had a readable one.
        id: Option<RequestId>,
    },
}

impl MessageError {
    /// The JSON-RPC error code a server answers this with.
    pub fn code(&self) -> ErrorCode {
        match self {
            MessageError::NotJson(_) => ErrorCode::ParseError,
            MessageError::Invalid { .. } => ErrorCode::InvalidRequest,
        }
    }

    /// The id of the offending message, when it was readable.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            MessageError::NotJson(_) => None,
            MessageError::Invalid { id, .. } => id.as_ref(),
        }
    }

    /// The id of a malformed *response* (no `method`; `result` null, both
    /// `result` and `error`, or neither), so a client can fail the request
    /// it answers at once instead of waiting for its timeout.
    pub fn response_id(&self) -> Option<&RequestId> {
        match self {
            MessageError::Invalid { reason, id } if RESPONSE_SHAPE.contains(reason) => id.as_ref(),
            _ => None,
        }
    }
}

impl Request {
    /// Builds a request.
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
            shared_meta: None,
        }
    }

    /// The same request with `_meta` members shared with other requests:
    /// they are written into `params._meta` on serialisation, before the
    /// request's own members, so a client sends its session's members on
    /// every request without copying them into each one. A member the
    /// request's own `_meta` also has is written once, from its own.
    #[must_use]
    pub fn with_shared_meta(mut self, meta: Arc<SharedMeta>) -> Self {
        self.shared_meta = Some(meta);
        self
    }

    /// The shared `_meta` members, if any ([`Request::with_shared_meta`]).
    pub fn shared_meta(&self) -> Option<&Map<String, Value>> {
        self.shared_meta.as_deref().map(SharedMeta::members)
    }

    /// The `_meta` member `key` as it goes on the wire: the request's own,
    /// else the shared one.
    pub fn meta(&self, key: &str) -> Option<&Value> {
        let own = self
            .params
            .as_ref()
            .and_then(|p| p.get(crate::meta::META))
            .and_then(|m| m.get(key));
        own.or_else(|| self.shared_meta.as_ref().and_then(|s| s.members.get(key)))
    }

    /// Appends the compact JSON of the request to `out`: the bytes
    /// `serde_json` writes for it, with the shared `_meta` members copied
    /// from their rendering ([`SharedMeta`]) rather than serialised anew,
    /// also when the request has `_meta` members of its own (a trace
    /// context, a progress token) that none of the shared ones clash with.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let (Some(shared), Some(params)) = (&self.shared_meta, self.object_params()) else {
            // Serialising JSON values into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, self);
            return;
        };
        let Some(rendered) = shared.rendered().map(|r| r.get().as_bytes()) else {
            let _ = serde_json::to_writer(&mut *out, self);
            return;
        };
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        let _ = serde_json::to_writer(&mut *out, &self.id);
        out.extend_from_slice(b",\"method\":");
        crate::json_text::write_str(out, &self.method);
        out.extend_from_slice(b",\"params\":{");
        let mut wrote_meta = false;
        for (at, (key, value)) in params.iter().enumerate() {
            if at > 0 {
                out.push(b',');
            }
            match value {
                Value::Object(own) if key == crate::meta::META => {
                    wrote_meta = true;
                    crate::json_text::write_str(out, key);
                    out.push(b':');
                    write_merged_meta(out, &shared.members, rendered, own);
                }
                _ => write_member(out, key, value),
            }
        }
        if !wrote_meta {
            if !params.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(b"\"_meta\":");
            out.extend_from_slice(rendered);
        }
        out.extend_from_slice(b"}}");
    }

    /// The params as an object (none counts as an empty one); `None` for
    /// array params.
    fn object_params(&self) -> Option<&Map<String, Value>> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        match &self.params {
            None => Some(&EMPTY),
            Some(Value::Object(params)) => Some(params),
            Some(_) => None,
        }
    }

    /// The same request with the shared `_meta` members moved into
    /// `params._meta`, as a server reading it from the wire would see it.
    #[must_use]
    pub fn with_meta_inlined(mut self) -> Self {
        let Some(shared) = self.shared_meta.take() else {
            return self;
        };
        let params = self.params.get_or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(params) = params {
            let mut meta = Arc::unwrap_or_clone(shared).members;
            if let Some(Value::Object(own)) = params.remove(crate::meta::META) {
                meta.extend(own);
            }
            params.insert(crate::meta::META.to_owned(), Value::Object(meta));
        }
        self
    }
}

impl Notification {
    /// Builds a notification.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Notification {
            method: method.into(),
            params,
        }
    }
}

impl Response {
    /// A successful response carrying `result`.
    pub fn result(id: RequestId, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }
}

impl ErrorObject {
    /// An error with a known code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` attached.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The known code, if this is one.
    pub fn known_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl Message {
    /// Parses one message from bytes.
    ///
    /// # Errors
    /// [`MessageError::NotJson`] for bytes that are not JSON,
    /// [`MessageError::Invalid`] for JSON that is not a JSON-RPC message.
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        // Text checked once as a whole reads faster than bytes, whose
        // reader checks each string on its own; bytes that are not UTF-8
        // are read as bytes, for serde_json's own error.
        let parsed = match std::str::from_utf8(bytes) {
            Ok(text) => serde_json::from_str::<RawMessage>(text),
            Err(_) => serde_json::from_slice::<RawMessage>(bytes),
        };
        match parsed {
            Ok(raw) => raw.into_message(),
            // Valid JSON of the wrong shape (an array, a number, a member of
            // the wrong type) is an invalid request, not a parse error.
            Err(e) if e.is_data() && serde_json::from_slice::<de::IgnoredAny>(bytes).is_ok() => {
                Err(MessageError::Invalid {
                    reason: "a message must be a JSON object with valid member types",
                    id: None,
                })
            }
            Err(e) => Err(MessageError::NotJson(e)),
        }
    }

    /// Parses one message from a JSON value.
    ///
    /// # Errors
    /// [`MessageError::Invalid`] when the value is not a JSON-RPC message.
    pub fn from_value(value: Value) -> Result<Message, MessageError> {
        let raw: RawMessage = serde_json::from_value(value).map_err(|_| MessageError::Invalid {
            reason: "a message must be a JSON object with valid member types",
            id: None,
        })?;
        raw.into_message()
    }

    /// Serialises the message to compact JSON.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.write_to(&mut out);
        out
    }

    /// Appends the compact JSON of this message to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Message::Request(request) => request.write_json(out),
            // Serialising JSON values into a Vec cannot fail: every map key
            // is a string and the writer is infallible.
            _ => {
                let _ = serde_json::to_writer(&mut *out, self);
            }
        }
    }

    /// Serialises the message as one stdio line: compact JSON and `\n`.
    /// JSON escapes newlines inside strings, so the line holds no other.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = self.to_vec();
        out.push(b'\n');
        out
    }

    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(serializer),
            Message::Notification(n) => n.serialize(serializer),
            Message::Response(r) => r.serialize(serializer),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", &self.method)?;
        match (&self.params, &self.shared_meta) {
            (None, None) => {}
            (Some(params), None) => map.serialize_entry("params", params)?,
            (None, Some(shared)) => map.serialize_entry(
                "params",
                &ParamsWithSharedMeta {
                    params: &Map::new(),
                    shared,
                },
            )?,
            (Some(Value::Object(params)), Some(shared)) => {
                map.serialize_entry("params", &ParamsWithSharedMeta { params, shared })?;
            }
            // Array params have no `_meta` to share.
            (Some(params), Some(_)) => map.serialize_entry("params", params)?,
        }
        map.end()
    }
}

/// Object params with the shared `_meta` members written into their
/// `_meta` (appended when they have none).
struct ParamsWithSharedMeta<'a> {
    params: &'a Map<String, Value>,
    shared: &'a SharedMeta,
}

impl Serialize for ParamsWithSharedMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let mut wrote_meta = false;
        for (key, value) in self.params {
            match value {
                Value::Object(own) if key == crate::meta::META => {
                    wrote_meta = true;
                    map.serialize_entry(
                        key,
                        &MergedMeta {
                            shared: &self.shared.members,
                            own,
                        },
                    )?;
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        if !wrote_meta {
            match self.shared.rendered() {
                Some(rendered) => map.serialize_entry(crate::meta::META, rendered)?,
                None => map.serialize_entry(crate::meta::META, &self.shared.members)?,
            }
        }
        map.end()
    }
}

/// Writes the shared `_meta` members (`rendered`, their JSON object), then
/// the request's own, as [`MergedMeta`] serialises them.
fn write_merged_meta(
    out: &mut Vec<u8>,
    shared: &Map<String, Value>,
    rendered: &[u8],
    own: &Map<String, Value>,
) {
    if own.keys().any(|key| shared.contains_key(key)) {
        // An own member replaces a shared one: written member by member.
        let _ = serde_json::to_writer(&mut *out, &MergedMeta { shared, own });
        return;
    }
    let Some((_, open)) = rendered.split_last() else {
        return;
    };
    out.extend_from_slice(open);
    for (at, (key, value)) in own.iter().enumerate() {
        if at > 0 || !shared.is_empty() {
            out.push(b',');
        }
        write_member(out, key, value);
    }
    out.push(b'}');
}

/// Writes one object member, `"key":value`, as serde_json writes it.
fn write_member(out: &mut Vec<u8>, key: &str, value: &Value) {
    crate::json_text::write_str(out, key);
    out.push(b':');
    match value {
        Value::String(text) => crate::json_text::write_str(out, text),
        // Serialising a JSON value into a Vec cannot fail.
        _ => {
            let _ = serde_json::to_writer(&mut *out, value);
        }
    }
}

/// Shared `_meta` members, then the request's own (which win on a clash).
struct MergedMeta<'a> {
    shared: &'a Map<String, Value>,
    own: &'a Map<String, Value>,
}

impl Serialize for MergedMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.shared {
            if !self.own.contains_key(key) {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in self.own {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Ok(result) => map.serialize_entry("result", result)?,
            Err(error) => map.serialize_entry("error", error)?,
        }
        map.end()
    }
}

/// The members a message may have, before classification.
#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    jsonrpc: Option<String>,
    /// `Some(None)` is an explicit `"id": null`, `None` an absent id.
    #[serde(default, deserialize_with = "present")]
    id: Option<Option<Value>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Option<Value>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Option<Value>>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

/// Deserialises a member that is present (possibly `null`) as `Some`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<Value>>, D::Error> {
    Option::<Value>::deserialize(deserializer).map(Some)
}

const RESULT_NULL: &str = "result must not be null";
const RESULT_AND_ERROR: &str = "a response has result or error, not both";
const NEITHER: &str = "a response needs result or error";
/// The reasons that describe a message shaped as a response (an id and no
/// `method`).
const RESPONSE_SHAPE: [&str; 3] = [RESULT_NULL, RESULT_AND_ERROR, NEITHER];

impl RawMessage {
    fn into_message(self) -> Result<Message, MessageError> {
        let id = match &self.id {
            Some(Some(v)) => Some(RequestId::from_value(v).ok_or(MessageError::Invalid {
                reason: "id must be a string or an integer",
                id: None,
            })?),
            _ => None,
        };
        if self.jsonrpc.as_deref() != Some(JSONRPC_VERSION) {
            return Err(MessageError::Invalid {
                reason: "jsonrpc must be \"2.0\"",
                id,
            });
        }
        let params = match self.params {
            None | Some(None) => None,
            Some(Some(p @ (Value::Object(_) | Value::Array(_)))) => Some(p),
            Some(Some(_)) => {
                return Err(MessageError::Invalid {
                    reason: "params must be an object or an array",
                    id,
                });
            }
        };
        if let Some(method) = self.method {
            return match (self.id, id) {
                (None, _) => Ok(Message::Notification(Notification { method, params })),
                (Some(_), Some(id)) => Ok(Message::Request(Request::new(id, method, params))),
                (Some(_), None) => Err(MessageError::Invalid {
                    reason: "a request id must not be null",
                    id: None,
                }),
            };
        }
        if self.id.is_none() {
            return Err(MessageError::Invalid {
                reason: "a message needs a method or an id",
                id: None,
            });
        }
        match (self.result, self.error) {
            (Some(Some(result)), None) => match id {
                Some(id) => Ok(Message::Response(Response::result(id, result))),
                None => Err(MessageError::Invalid {
                    reason: "a result response needs an id",
                    id: None,
                }),
            },
            (None, Some(error)) => Ok(Message::Response(Response::error(id, error))),
            (Some(None), None) => Err(MessageError::Invalid {
                reason: RESULT_NULL,
                id,
            }),
            (Some(_), Some(_)) => Err(MessageError::Invalid {
                reason: RESULT_AND_ERROR,
                id,
            }),
            (None, None) => Err(MessageError::Invalid {
                reason: NEITHER,
                id,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_malformed_response_names_its_id_a_malformed_request_does_not() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":7}"#,
        ] {
            let e = Message::from_slice(line.as_bytes()).unwrap_err();
            assert_eq!(e.response_id(), Some(&RequestId::from(7)), "{line}");
        }
        let e = Message::from_slice(br#"{"jsonrpc":"1.0","id":7,"method":"m"}"#).unwrap_err();
        assert_eq!(e.id(), Some(&RequestId::from(7)));
        assert_eq!(e.response_id(), None);
    }

    // Read as text when the bytes are UTF-8; read as bytes otherwise, for
    // serde_json's own error, which says where the bad byte is.
    #[test]
    fn bytes_that_are_not_utf_8_are_a_parse_error_saying_where() {
        let ok = Message::from_slice("{\"jsonrpc\":\"2.0\",\"method\":\"é\\n日\"}".as_bytes());
        assert!(matches!(ok, Ok(Message::Notification(ref n)) if n.method == "é\n日"));
        for bad in [
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\"}"[..],
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\"}"[..],
            &b"{\"jsonrpc\":\"2.0\",\xff\"method\":\"m\"}"[..],
        ] {
            let e = Message::from_slice(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::ParseError, "{e}");
            assert!(
                matches!(e, MessageError::NotJson(ref j) if j.column() > 0),
                "{e}"
            );
        }
    }

    #[test]
    fn classifies_the_three_shapes() {
        let req =
            Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
                .unwrap();
        assert!(matches!(req, Message::Request(ref r) if r.id == RequestId::Number(1)));
        let note =
            Message::from_slice(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).unwrap();
        assert!(matches!(note, Message::Notification(_)));
        let resp = Message::from_slice(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(resp, Message::Response(ref r) if r.id == Some(RequestId::from("a"))));
        let err = Message::from_slice(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
        )
        .unwrap();
        assert!(matches!(
            err,
            Message::Response(Response {
                id: None,
                outcome: Err(_)
            })
        ));
    }

    // DESIGN item 2: a message without an id is a notification, never a response.
    #[test]
    fn a_method_without_id_is_a_notification_even_with_result() {
        let m = Message::from_slice(br#"{"jsonrpc":"2.0","method":"x","result":{}}"#).unwrap();
        assert!(matches!(m, Message::Notification(_)));
    }

    #[test]
    fn string_and_number_ids_stay_distinct() {
        assert_ne!(RequestId::from(1), RequestId::from("1"));
        assert_eq!(RequestId::from(1).to_string(), "1");
        assert_eq!(RequestId::from("1").to_string(), "\"1\"");
    }

    #[test]
    fn rejects_bad_messages_with_the_right_code() {
        let cases: &[(&[u8], ErrorCode)] = &[
            (b"{not json", ErrorCode::ParseError),
            (b"[1,2]", ErrorCode::InvalidRequest),
            (b"42", ErrorCode::InvalidRequest),
            (
                br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
                ErrorCode::InvalidRequest,
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
                ErrorCode::InvalidRequest,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
                ErrorCode::InvalidRequest,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
                ErrorCode::InvalidRequest,
            ),
            (br#"{"jsonrpc":"2.0","id":1}"#, ErrorCode::InvalidRequest),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
                ErrorCode::InvalidRequest,
            ),
        ];
        for (bytes, code) in cases {
            let err = Message::from_slice(bytes).unwrap_err();
            assert_eq!(err.code(), *code, "{}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn invalid_request_keeps_a_readable_id() {
        let err = Message::from_slice(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err();
        assert_eq!(err.id(), Some(&RequestId::Number(7)));
    }

    #[test]
    fn serialises_compactly_in_a_stable_order() {
        let m = Message::Request(Request::new(3, "tools/call", Some(json!({"name":"a\nb"}))));
        let line = m.to_line();
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"a\\nb\"}}\n"
        );
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let r = Message::Response(Response::error(
            None,
            ErrorObject::new(ErrorCode::ParseError, "bad"),
        ));
        assert_eq!(
            r.to_vec(),
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
    }

    fn shared() -> Arc<SharedMeta> {
        match json!({"protocolVersion": "2026-07-28", "clientInfo": {"name": "c", "version": "1"}})
        {
            Value::Object(m) => Arc::new(SharedMeta::new(m)),
            _ => unreachable!(),
        }
    }

    // The hand-written request writer gives serde's bytes for every shape
    // of params and `_meta`: own members beside the shared ones, replacing
    // one, none, no params, array params, keys and ids to escape.
    #[test]
    fn write_json_writes_what_serde_writes() {
        let empty = Arc::new(SharedMeta::new(Map::new()));
        let params = [
            None,
            Some(json!({})),
            Some(json!([1, 2])),
            Some(json!({"name": "t", "arguments": {"q\"": "\u{202e}"}})),
            Some(json!({"_meta": {}})),
            Some(
                json!({"name": "t", "_meta": {"traceparent": "00-x", "progressToken": 1}, "z": null}),
            ),
            Some(json!({"_meta": {"protocolVersion": "own", "k": 1}})),
            Some(json!({"_meta": 5, "x": [{"a": 1}]})),
        ];
        for shared in [None, Some(shared()), Some(Arc::clone(&empty))] {
            for params in &params {
                for id in [RequestId::Number(-3), RequestId::String("a\"\n".into())] {
                    let mut r = Request::new(id, "tools/\"call", params.clone());
                    if let Some(shared) = &shared {
                        r = r.with_shared_meta(Arc::clone(shared));
                    }
                    let mut ours = Vec::new();
                    r.write_json(&mut ours);
                    let serde = serde_json::to_vec(&r).unwrap();
                    assert_eq!(
                        String::from_utf8(ours).unwrap(),
                        String::from_utf8(serde).unwrap(),
                        "{params:?} {shared:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn shared_meta_rendered_once_reads_like_the_inlined_request() {
        // The ready bytes of the shared members are what serialising them
        // writes, on the first request and on every later one sharing them.
        let shared = shared();
        for id in 1..=3 {
            let r = Request::new(
                id,
                "tools/call",
                Some(json!({"name": "t", "arguments": {"a": [1, "\u{202e}"]}})),
            )
            .with_shared_meta(Arc::clone(&shared));
            let inlined = r.clone().with_meta_inlined();
            assert_eq!(
                serde_json::to_vec(&r).unwrap(),
                serde_json::to_vec(&inlined).unwrap()
            );
            assert_eq!(
                serde_json::to_value(&r).unwrap(),
                serde_json::to_value(&inlined).unwrap()
            );
        }
        assert!(shared.rendered.get().is_some_and(Option::is_some));
    }

    #[test]
    fn shared_meta_is_written_into_params_meta() {
        // Own members follow the shared ones; params keep their order.
        let r = Request::new(
            1,
            "tools/call",
            Some(json!({"name": "t", "_meta": {"progressToken": 1}, "arguments": {}})),
        )
        .with_shared_meta(shared());
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&r).unwrap()).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"protocolVersion":"2026-07-28","clientInfo":{"name":"c","version":"1"},"progressToken":1},"arguments":{}}}"#
        );
        // No `_meta` of its own: appended; no params at all: the only member.
        let r =
            Request::new(2, "tools/list", Some(json!({"cursor": "x"}))).with_shared_meta(shared());
        assert_eq!(
            serde_json::to_value(&r).unwrap()["params"],
            json!({"cursor": "x", "_meta": {"protocolVersion": "2026-07-28", "clientInfo": {"name": "c", "version": "1"}}})
        );
        let r = Request::new(3, "server/discover", None).with_shared_meta(shared());
        assert_eq!(
            serde_json::to_value(&r).unwrap()["params"],
            json!({"_meta": {"protocolVersion": "2026-07-28", "clientInfo": {"name": "c", "version": "1"}}})
        );
    }

    #[test]
    fn own_meta_wins_over_shared_and_inlining_matches_the_wire() {
        let r = Request::new(
            1,
            "tools/call",
            Some(json!({"_meta": {"protocolVersion": "2025-01-01", "k": true}})),
        )
        .with_shared_meta(shared());
        let wire = serde_json::to_value(&r).unwrap();
        assert_eq!(wire["params"]["_meta"]["protocolVersion"], "2025-01-01");
        assert_eq!(r.meta("protocolVersion"), Some(&json!("2025-01-01")));
        assert_eq!(
            r.meta("clientInfo"),
            Some(&json!({"name": "c", "version": "1"}))
        );
        assert_eq!(r.meta("absent"), None);
        let inlined = r.clone().with_meta_inlined();
        assert!(inlined.shared_meta().is_none());
        assert_eq!(serde_json::to_value(&inlined).unwrap(), wire);
        // What a server parses back is the inlined request.
        let parsed = Message::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(parsed, Message::Request(inlined));
    }
}
