//! `_meta` keys and the per-request metadata every modern request carries on
//! `params._meta` (WIRE-14).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::{ClientCapabilities, Implementation};

/// The member of `params` and results that holds metadata.
pub const META: &str = "_meta";
/// Request `_meta`: the protocol revision of this request (required).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Request `_meta`: the client's capabilities for this request (required).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta`: the client's name and version (SHOULD).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta`: the lowest log level to send as `notifications/message`.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Request `_meta`: the token progress notifications refer to.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// Result `_meta`: the server's name and version (SHOULD).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification and listen-result `_meta`: the listen request's id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// W3C Trace Context `traceparent` (unprefixed, reserved).
pub const TRACEPARENT: &str = "traceparent";
/// W3C Trace Context `tracestate` (unprefixed, reserved).
pub const TRACESTATE: &str = "tracestate";
/// W3C Baggage (unprefixed, reserved).
pub const BAGGAGE: &str = "baggage";
/// Switchboard's own `_meta` key (no protocol field exists): a key the
/// client repeats on a retry of the same call, so a server that keeps a
/// record answers the duplicate from it instead of running the call twice.
pub const IDEMPOTENCY_KEY: &str = "dev.switchboard/idempotencyKey";

/// A progress token: a string or an integer unique among active requests.
pub type ProgressToken = crate::jsonrpc::RequestId;

/// Log severity, lowest first (RFC 5424 order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warnings.
    Warning,
    /// Errors.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// The metadata of one request, as a client builds it and a server reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMeta {
    /// Protocol revision of this request.
    pub protocol_version: String,
    /// Capabilities the client declares for this request.
    pub client_capabilities: ClientCapabilities,
    /// Who the client is (self-asserted; never a basis for security decisions).
    pub client_info: Option<Implementation>,
    /// Lowest log level the client wants as `notifications/message`.
    pub log_level: Option<LoggingLevel>,
    /// Token for `notifications/progress` about this request.
    pub progress_token: Option<ProgressToken>,
    /// W3C `traceparent`.
    pub traceparent: Option<String>,
    /// W3C `tracestate`.
    pub tracestate: Option<String>,
    /// Other `_meta` keys, kept as they came.
    pub extra: Map<String, Value>,
}

/// Why a request's `_meta` cannot be accepted (a -32602 error, HTTP 400).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// `params` or `params._meta` is absent or not an object.
    #[error("params._meta is missing; every request must carry it")]
    Missing,
    /// A required key is absent.
    #[error("params._meta lacks required key {0:?}")]
    MissingKey(&'static str),
    /// A key holds a value of the wrong type.
    #[error("params._meta key {key:?} is malformed: {reason}")]
    Malformed {
        /// The key.
        key: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
}

impl RequestMeta {
    /// Metadata for `protocol_version` with no capabilities and nothing else.
    pub fn new(protocol_version: impl Into<String>) -> Self {
        RequestMeta {
            protocol_version: protocol_version.into(),
            client_capabilities: ClientCapabilities::default(),
            client_info: None,
            log_level: None,
            progress_token: None,
            traceparent: None,
            tracestate: None,
            extra: Map::new(),
        }
    }

    /// Sets the declared client capabilities.
    pub fn capabilities(mut self, caps: ClientCapabilities) -> Self {
        self.client_capabilities = caps;
        self
    }

    /// Sets `clientInfo`.
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// Sets the requested log level.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Sets the progress token.
    pub fn progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.progress_token = Some(token.into());
        self
    }

    /// Sets the W3C `traceparent`.
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(traceparent.into());
        self
    }

    /// The `_meta` object.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map = self.extra.clone();
        map.insert(
            PROTOCOL_VERSION.into(),
            Value::from(self.protocol_version.as_str()),
        );
        map.insert(
            CLIENT_CAPABILITIES.into(),
            to_value(&self.client_capabilities),
        );
        if let Some(info) = &self.client_info {
            map.insert(CLIENT_INFO.into(), to_value(info));
        }
        if let Some(level) = self.log_level {
            map.insert(LOG_LEVEL.into(), to_value(&level));
        }
        if let Some(token) = &self.progress_token {
            map.insert(PROGRESS_TOKEN.into(), token.to_value());
        }
        if let Some(tp) = &self.traceparent {
            map.insert(TRACEPARENT.into(), Value::from(tp.as_str()));
        }
        if let Some(ts) = &self.tracestate {
            map.insert(TRACESTATE.into(), Value::from(ts.as_str()));
        }
        map
    }

    /// Places this metadata on `params._meta`, creating `params` when absent
    /// and keeping other `_meta` keys the caller put there. Our keys win.
    pub fn apply(&self, params: &mut Option<Value>) {
        let params = params.get_or_insert_with(|| Value::Object(Map::new()));
        if !params.is_object() {
            *params = Value::Object(Map::new());
        }
        let Value::Object(obj) = params else { return };
        let meta = obj.entry(META).or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            for (k, v) in self.to_map() {
                meta.insert(k, v);
            }
        }
    }

    /// Reads and checks the `_meta` of a request's `params` (WIRE-15).
    ///
    /// # Errors
    /// [`MetaError`] when `_meta` is missing, lacks `protocolVersion` or
    /// `clientCapabilities`, or holds a malformed value.
    pub fn from_params(params: Option<&Value>) -> Result<RequestMeta, MetaError> {
        let meta = params
            .and_then(|p| p.get(META))
            .and_then(Value::as_object)
            .ok_or(MetaError::Missing)?;
        let protocol_version = match meta.get(PROTOCOL_VERSION) {
            None => return Err(MetaError::MissingKey(PROTOCOL_VERSION)),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(malformed(PROTOCOL_VERSION, "must be a string")),
        };
        let client_capabilities = match meta.get(CLIENT_CAPABILITIES) {
            None => return Err(MetaError::MissingKey(CLIENT_CAPABILITIES)),
            Some(v @ Value::Object(_)) => ClientCapabilities::deserialize(v)
                .map_err(|e| malformed(CLIENT_CAPABILITIES, &e.to_string()))?,
            Some(_) => return Err(malformed(CLIENT_CAPABILITIES, "must be an object")),
        };
        let client_info = match meta.get(CLIENT_INFO) {
            None => None,
            Some(v) => Some(
                Implementation::deserialize(v)
                    .map_err(|e| malformed(CLIENT_INFO, &e.to_string()))?,
            ),
        };
        let log_level = match meta.get(LOG_LEVEL) {
            None => None,
            Some(v) => Some(LoggingLevel::deserialize(v).map_err(|_| {
                malformed(LOG_LEVEL, "must be one of debug, info, notice, warning, error, critical, alert, emergency")
            })?),
        };
        let progress_token = match meta.get(PROGRESS_TOKEN) {
            None => None,
            Some(v) => Some(
                ProgressToken::from_value(v)
                    .ok_or_else(|| malformed(PROGRESS_TOKEN, "must be a string or an integer"))?,
            ),
        };
        let text = |key: &'static str| -> Result<Option<String>, MetaError> {
            match meta.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(malformed(key, "must be a string")),
            }
        };
        let traceparent = text(TRACEPARENT)?;
        let tracestate = text(TRACESTATE)?;
        let extra = meta
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    PROTOCOL_VERSION
                        | CLIENT_CAPABILITIES
                        | CLIENT_INFO
                        | LOG_LEVEL
                        | PROGRESS_TOKEN
                        | TRACEPARENT
                        | TRACESTATE
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            progress_token,
            traceparent,
            tracestate,
            extra,
        })
    }
}

impl RequestMeta {
    /// Reads and checks a request's `_meta` object, taking ownership: the
    /// same rules as [`RequestMeta::from_params`], in one pass over the
    /// keys and without copying values (for servers on a hot path).
    ///
    /// # Errors
    /// [`MetaError`] when a required key is missing or a value is malformed.
    pub fn from_meta_object(meta: Map<String, Value>) -> Result<RequestMeta, MetaError> {
        let mut protocol_version = None;
        let mut client_capabilities = None;
        let mut client_info = None;
        let mut log_level = None;
        let mut progress_token = None;
        let mut traceparent = None;
        let mut tracestate = None;
        let mut extra = Map::new();
        let text = |key: &'static str, v: Value| match v {
            Value::String(s) => Ok(s),
            _ => Err(malformed(key, "must be a string")),
        };
        for (key, value) in meta {
            match key.as_str() {
                PROTOCOL_VERSION => protocol_version = Some(text(PROTOCOL_VERSION, value)?),
                CLIENT_CAPABILITIES => {
                    client_capabilities = Some(match value {
                        Value::Object(m) => ClientCapabilities::from_object(m)
                            .map_err(|e| malformed(CLIENT_CAPABILITIES, &e.to_string()))?,
                        _ => return Err(malformed(CLIENT_CAPABILITIES, "must be an object")),
                    });
                }
                CLIENT_INFO => {
                    client_info = Some(
                        Implementation::deserialize(value)
                            .map_err(|e| malformed(CLIENT_INFO, &e.to_string()))?,
                    );
                }
                LOG_LEVEL => {
                    log_level = Some(LoggingLevel::deserialize(value).map_err(|_| {
                        malformed(LOG_LEVEL, "must be one of debug, info, notice, warning, error, critical, alert, emergency")
                    })?);
                }
                PROGRESS_TOKEN => {
                    progress_token = Some(ProgressToken::from_value(&value).ok_or_else(|| {
                        malformed(PROGRESS_TOKEN, "must be a string or an integer")
                    })?);
                }
                TRACEPARENT => traceparent = Some(text(TRACEPARENT, value)?),
                TRACESTATE => tracestate = Some(text(TRACESTATE, value)?),
                _ => {
                    extra.insert(key, value);
                }
            }
        }
        Ok(RequestMeta {
            protocol_version: protocol_version.ok_or(MetaError::MissingKey(PROTOCOL_VERSION))?,
            client_capabilities: client_capabilities
                .ok_or(MetaError::MissingKey(CLIENT_CAPABILITIES))?,
            client_info,
            log_level,
            progress_token,
            traceparent,
            tracestate,
            extra,
        })
    }
}

/// Whether `key` is a well-formed `_meta` key: an optional prefix of
/// dot-separated labels ending in `/`, then a name (WIRE-27).
pub fn is_valid_meta_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphabetic()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        };
        if !prefix.split('.').all(label_ok) {
            return false;
        }
    }
    let b = name.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn malformed(key: &'static str, reason: &str) -> MetaError {
    MetaError::Malformed {
        key,
        reason: reason.to_owned(),
    }
}

fn to_value<T: Serialize>(v: &T) -> Value {
    // Our own types serialise to JSON without fail.
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // WIRE-14: protocolVersion and clientCapabilities sit on params._meta.
    #[test]
    fn apply_places_meta_on_params_and_keeps_caller_keys() {
        let meta = RequestMeta::new("2026-07-28")
            .client_info(Implementation::new("switchboard", "0.1.0"))
            .progress_token(7)
            .log_level(LoggingLevel::Warning);
        let mut params = Some(json!({"name": "x", "_meta": {"com.example/k": 1}}));
        meta.apply(&mut params);
        let p = params.unwrap();
        assert_eq!(p["_meta"][PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(p["_meta"][CLIENT_CAPABILITIES], json!({}));
        assert_eq!(p["_meta"][CLIENT_INFO]["name"], "switchboard");
        assert_eq!(p["_meta"][PROGRESS_TOKEN], 7);
        assert_eq!(p["_meta"][LOG_LEVEL], "warning");
        assert_eq!(p["_meta"]["com.example/k"], 1);
        assert_eq!(p["name"], "x");

        let mut none = None;
        meta.apply(&mut none);
        assert_eq!(none.unwrap()["_meta"][PROTOCOL_VERSION], "2026-07-28");
    }

    // WIRE-15: missing required _meta fields are rejected.
    #[test]
    fn from_params_rejects_missing_keys() {
        assert_eq!(RequestMeta::from_params(None), Err(MetaError::Missing));
        assert_eq!(
            RequestMeta::from_params(Some(&json!({}))),
            Err(MetaError::Missing)
        );
        assert_eq!(
            RequestMeta::from_params(Some(&json!({"_meta": {PROTOCOL_VERSION: "2026-07-28"}}))),
            Err(MetaError::MissingKey(CLIENT_CAPABILITIES))
        );
        assert_eq!(
            RequestMeta::from_params(Some(&json!({"_meta": {CLIENT_CAPABILITIES: {}}}))),
            Err(MetaError::MissingKey(PROTOCOL_VERSION))
        );
        assert!(matches!(
            RequestMeta::from_params(Some(
                &json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}, LOG_LEVEL: "loud"}})
            )),
            Err(MetaError::Malformed { key: LOG_LEVEL, .. })
        ));
    }

    // The owned one-pass reader agrees with from_params, errors included.
    #[test]
    fn from_meta_object_agrees_with_from_params() {
        let cases = [
            json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {"sampling": {}, "x": 1}, CLIENT_INFO: {"name": "c", "version": "1"}, LOG_LEVEL: "info", PROGRESS_TOKEN: 3, TRACEPARENT: "t", "com.example/k": [1]}}),
            json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {PROTOCOL_VERSION: "2026-07-28"}}),
            json!({"_meta": {CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {PROTOCOL_VERSION: 5, CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {PROTOCOL_VERSION: "v", CLIENT_CAPABILITIES: []}}),
            json!({"_meta": {PROTOCOL_VERSION: "v", CLIENT_CAPABILITIES: {}, LOG_LEVEL: "loud"}}),
            json!({"_meta": {PROTOCOL_VERSION: "v", CLIENT_CAPABILITIES: {}, PROGRESS_TOKEN: 1.5}}),
        ];
        for c in cases {
            let owned = c["_meta"].as_object().unwrap().clone();
            assert_eq!(
                RequestMeta::from_meta_object(owned),
                RequestMeta::from_params(Some(&c)),
                "{c}"
            );
        }
    }

    #[test]
    fn round_trips_through_params() {
        let meta = RequestMeta::new("2026-07-28")
            .progress_token("p")
            .traceparent("00-abc-def-01");
        let mut params = None;
        meta.apply(&mut params);
        assert_eq!(RequestMeta::from_params(params.as_ref()).unwrap(), meta);
    }

    #[test]
    fn meta_key_rules() {
        for ok in [
            "progressToken",
            "io.modelcontextprotocol/protocolVersion",
            "com.example-x/a.b_c",
            "x",
        ] {
            assert!(is_valid_meta_key(ok), "{ok}");
        }
        for bad in ["", "/x", "1a/x", "a-/x", "a/-x", "a/x-", "a..b/x", "a/"] {
            assert!(!is_valid_meta_key(bad), "{bad}");
        }
    }

    #[test]
    fn log_levels_are_ordered() {
        assert!(LoggingLevel::Debug < LoggingLevel::Warning);
        assert!(LoggingLevel::Emergency > LoggingLevel::Alert);
    }
}
