//! The gateway's own identity on what it returns.
//!
//! A relayed result's `_meta` came from a downstream server and describes
//! that server's exchange with the host, not the gateway's with its client.
//! Before a result goes upstream, the gateway removes:
//! - every key under an MCP-reserved prefix (one whose second label is
//!   `modelcontextprotocol` or `mcp`, WIRE-28): the downstream's
//!   `io.modelcontextprotocol/serverInfo` above all, and its subscription
//!   or task ids, which mean nothing upstream;
//! - the W3C keys `traceparent`, `tracestate` and `baggage` (WIRE-29): the
//!   downstream's trace context is not the upstream's.
//!
//! Other keys (a server's own reverse-DNS keys, unprefixed names) pass on
//! as they came. The server framework then adds the gateway's own
//! `serverInfo` (WIRE-17), so a client only ever sees the gateway's.

use switchboard_wire::meta::{BAGGAGE, TRACEPARENT, TRACESTATE};
use switchboard_wire::{CallToolResult, JsonObject};

/// Removes the downstream's protocol-level `_meta` keys from a result
/// about to be returned upstream.
pub(crate) fn own_result(result: &mut CallToolResult) {
    own_meta(&mut result.header.meta);
}

/// Removes the keys only the downstream exchange may carry; an emptied
/// `_meta` goes away.
pub(crate) fn own_meta(meta: &mut Option<JsonObject>) {
    if let Some(m) = meta {
        m.retain(|key, _| may_pass(key));
        if m.is_empty() {
            *meta = None;
        }
    }
}

/// Whether a downstream result's `_meta` key is one the gateway drops
/// ([`own_result`]): its clients leave such keys out unread.
pub(crate) fn downstream_only(key: &str) -> bool {
    !may_pass(key)
}

/// Whether a downstream `_meta` key may be passed upstream.
fn may_pass(key: &str) -> bool {
    if matches!(key, TRACEPARENT | TRACESTATE | BAGGAGE) {
        return false;
    }
    // The second label of the prefix (before the first `/`), byte by
    // byte: keys are short, and every result's `_meta` keys come through
    // here.
    let bytes = key.as_bytes();
    let Some(slash) = bytes.iter().position(|&b| b == b'/') else {
        return true;
    };
    let prefix = &bytes[..slash];
    let Some(dot) = prefix.iter().position(|&b| b == b'.') else {
        return true;
    };
    let rest = &prefix[dot + 1..];
    let label = rest
        .iter()
        .position(|&b| b == b'.')
        .map_or(rest, |end| &rest[..end]);
    !matches!(label, b"modelcontextprotocol" | b"mcp")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reserved_and_trace_keys_are_dropped_others_pass() {
        let mut result = CallToolResult::text("x");
        result.header.meta = json!({
            "io.modelcontextprotocol/serverInfo": {"name": "downstream", "version": "1"},
            "io.modelcontextprotocol/related-task": {"taskId": "t1"},
            "dev.mcp/anything": 1,
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "tracestate": "a=b",
            "baggage": "k=v",
            "com.example/cost": 3,
            "plain": true,
        })
        .as_object()
        .cloned();
        own_result(&mut result);
        assert_eq!(
            result.header.meta,
            json!({"com.example/cost": 3, "plain": true})
                .as_object()
                .cloned()
        );
        // Nothing left: no `_meta` at all (the framework adds the gateway's).
        let mut only = CallToolResult::text("x");
        only.header.meta = json!({"io.modelcontextprotocol/serverInfo": {}})
            .as_object()
            .cloned();
        own_result(&mut only);
        assert!(only.header.meta.is_none());
    }

    // The reserved prefixes are those whose second label (before the
    // first `/`) is `modelcontextprotocol` or `mcp`.
    #[test]
    fn only_the_second_label_of_the_prefix_reserves_a_key() {
        for dropped in [
            "a.mcp.b/x",
            "io.modelcontextprotocol.extra/x",
            "dev.mcp/",
            "x.mcp/y/z.w",
        ] {
            assert!(downstream_only(dropped), "{dropped}");
        }
        for passed in [
            "mcp/x",
            "a.b.mcp/x",
            "io.modelcontextprotocolx/x",
            "a/b.mcp/c",
            "x.mcp",
            ".mcpx/y",
            "",
        ] {
            assert!(!downstream_only(passed), "{passed}");
        }
    }
}
