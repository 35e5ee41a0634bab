//! A fast path for the request every server answers most: a plain
//! `tools/call`.
//!
//! The general path builds a JSON tree of the whole request and then reads
//! it. For a `tools/call` whose members are exactly the usual ones (`name`,
//! `arguments`, and a `_meta` of the known keys, no MRTR members), the
//! request is read straight into typed values instead: no tree for `params`
//! or `_meta`, no hash lookups. Anything else, including every malformed
//! request, falls back to the general path, which owns all error reporting;
//! so both paths answer alike.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use memchr::memmem;
use serde::Deserialize;
use serde_json::{Map, Value};
use switchboard_wire::{
    ClientCapabilities, Implementation, LoggingLevel, RequestId, RequestMeta, types::method,
};

/// A `tools/call` read by the fast path.
#[derive(Debug)]
pub(crate) struct ToolCall {
    pub(crate) id: RequestId,
    pub(crate) name: String,
    /// The arguments object (`{}` when absent).
    pub(crate) arguments: Value,
    /// Shared at once: a `RequestMeta` is large, and moving it by value
    /// through the router costs more than the allocation.
    pub(crate) meta: Arc<RequestMeta>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "_meta")]
    meta: Meta,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: String,
    // Read as a map, as the general path does: the common `{}` then costs
    // nothing, where the struct's flattened `extra` would buffer it.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Map<String, Value>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    client_info: Option<Implementation>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    log_level: Option<LoggingLevel>,
    #[serde(rename = "progressToken", default)]
    progress_token: Option<RequestId>,
}

/// Reads `bytes` as a plain `tools/call`; `None` for anything else (the
/// general path then takes it).
pub(crate) fn tool_call(bytes: &[u8]) -> Option<ToolCall> {
    // Cheap pre-check: only requests naming the method are tried.
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"tools/call\""));
    FINDER.find(bytes)?;
    let e: Envelope<'_> = serde_json::from_slice(bytes).ok()?;
    if e.jsonrpc != "2.0" || e.method != method::TOOLS_CALL {
        return None;
    }
    let m = e.params.meta;
    // Like `RequestMeta::from_meta_object`; anything it would refuse goes
    // to the general path, which says why.
    let client_capabilities = if m.client_capabilities.is_empty() {
        ClientCapabilities::default()
    } else {
        ClientCapabilities::deserialize(Value::Object(m.client_capabilities)).ok()?
    };
    let meta = Arc::new(RequestMeta {
        protocol_version: m.protocol_version,
        client_capabilities,
        client_info: m.client_info,
        log_level: m.log_level,
        progress_token: m.progress_token,
        traceparent: None,
        tracestate: None,
        extra: Map::new(),
    });
    Some(ToolCall {
        id: e.id,
        name: e.params.name.into_owned(),
        arguments: Value::Object(e.params.arguments.unwrap_or_default()),
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_wire::Message;

    fn bytes(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn reads_a_plain_call_like_the_general_path() {
        let request = json!({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{
            "name":"echo","arguments":{"text":"hi"},
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                     "io.modelcontextprotocol/clientCapabilities":{"sampling":{}},
                     "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
                     "io.modelcontextprotocol/logLevel":"info","progressToken":7}}});
        let fast = tool_call(&bytes(request.clone())).unwrap();
        let Ok(Message::Request(general)) = Message::from_slice(&bytes(request)) else {
            panic!()
        };
        assert_eq!(fast.id, general.id);
        assert_eq!(fast.name, "echo");
        assert_eq!(fast.arguments, json!({"text":"hi"}));
        assert_eq!(
            *fast.meta,
            RequestMeta::from_params(general.params.as_ref()).unwrap()
        );
    }

    #[test]
    fn anything_unusual_takes_the_general_path() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}});
        let cases = [
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"tools/call","_meta":meta}}),
            json!({"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"e","_meta":meta}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":meta,"requestState":"s"}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":meta,"inputResponses":{}}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":[1],"_meta":meta}}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"t"}}}),
            json!({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"e","_meta":meta}}),
            json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"e","_meta":meta}}),
        ];
        for c in cases {
            assert!(tool_call(&bytes(c.clone())).is_none(), "{c}");
        }
        assert!(tool_call(b"{\"method\":\"tools/call\"").is_none());
    }
}
