//! Mirrored headers on Streamable HTTP: every mismatch or omission is
//! HTTP 400 with -32020 (HTTP-S-15, -19…-24), and the handler never runs.

use serde_json::{Value, json};

use crate::util::*;

async fn call_with(
    http: &Http,
    method: &str,
    params: Value,
    edit: impl FnOnce(Vec<(String, String)>) -> Vec<(String, String)>,
) -> Resp {
    let params = with_meta(params);
    let headers = edit(standard_headers(method, &params));
    http.post(&headers, body(json!(7), method, params)).await
}

fn assert_mismatch(r: &Resp, what: &str) {
    assert_eq!(r.status, 400, "{what}: {r:?}");
    assert_eq!(r.error_code(), -32020, "{what}");
    // Errors echo the request id (WIRE-10).
    assert_eq!(r.response()["id"], 7, "{what}");
}

// HTTP-S-15, HTTP-S-19: the protocol version header is required and must
// equal _meta's.
#[tokio::test]
async fn protocol_version_header_missing_or_different() {
    let (http, _) = start_default().await;
    let r = call_with(&http, "tools/list", json!({}), |h| {
        set_header(h, "mcp-protocol-version", None)
    })
    .await;
    assert_mismatch(&r, "missing");
    let r = call_with(&http, "tools/list", json!({}), |h| {
        set_header(h, "mcp-protocol-version", Some("2025-11-25"))
    })
    .await;
    assert_mismatch(&r, "different");
    http.stop().await;
}

// HTTP-S-20: the gateway-bypass case: header says tools/list, body says
// tools/call.
#[tokio::test]
async fn method_header_must_match_body() {
    let (http, _) = start_default().await;
    let r = call_with(
        &http,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
        |h| set_header(h, "mcp-method", Some("tools/list")),
    )
    .await;
    assert_mismatch(&r, "tools/list header on a tools/call body");
    assert!(r.response().get("result").is_none());
    let r = call_with(&http, "tools/list", json!({}), |h| {
        set_header(h, "mcp-method", None)
    })
    .await;
    assert_mismatch(&r, "missing Mcp-Method");
    // Values are case-sensitive, names are not (HTTP-C-15).
    let r = call_with(&http, "tools/list", json!({}), |h| {
        set_header(h, "mcp-method", Some("TOOLS/LIST"))
    })
    .await;
    assert_mismatch(&r, "upper-case value");
    let r = call_with(&http, "tools/list", json!({}), |h| {
        let h = set_header(h, "mcp-method", None);
        set_header(h, "MCP-METHOD", Some("tools/list"))
    })
    .await;
    assert_eq!(r.status, 200);
    // Surrounding whitespace is not part of the value (RFC 9110).
    let r = call_with(&http, "tools/list", json!({}), |h| {
        set_header(h, "mcp-method", Some("  tools/list  "))
    })
    .await;
    assert_eq!(r.status, 200);
    // Two values for one header are refused.
    let r = call_with(&http, "tools/list", json!({}), |mut h| {
        h.push(header("mcp-method", "tools/list"));
        h
    })
    .await;
    assert_mismatch(&r, "duplicate Mcp-Method");
    http.stop().await;
}

// HTTP-S-19/20: Mcp-Name is required for tools/call, prompts/get and
// resources/read, and must equal params.name / params.uri.
#[tokio::test]
async fn name_header_must_match_body() {
    let (http, _) = start_default().await;
    let cases = [
        (
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        ),
        (
            "prompts/get",
            json!({"name": "greet", "arguments": {"text": "x"}}),
        ),
        ("resources/read", json!({"uri": "test://text"})),
    ];
    for (method, params) in cases {
        let r = call_with(&http, method, params.clone(), |h| {
            set_header(h, "mcp-name", None)
        })
        .await;
        assert_mismatch(&r, &format!("{method} without Mcp-Name"));
        let r = call_with(&http, method, params.clone(), |h| {
            set_header(h, "mcp-name", Some("other"))
        })
        .await;
        assert_mismatch(&r, &format!("{method} with another name"));
        let r = call_with(&http, method, params, |h| h).await;
        assert_eq!(r.status, 200, "{method}: {r:?}");
        assert!(r.response().get("result").is_some());
    }
    http.stop().await;
}

// HTTP-S-21: a non-ASCII name travels base64-encoded; raw bytes outside
// visible ASCII are invalid (HTTP-S-22).
#[tokio::test]
async fn non_ascii_tool_name() {
    let (http, _) = start_default().await;
    let r = http.call("tools/call", json!({"name": "café"})).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.result()["content"][0]["text"], "un café");
    let r = call_with(&http, "tools/call", json!({"name": "café"}), |h| {
        set_header(h, "mcp-name", Some("café"))
    })
    .await;
    assert_mismatch(&r, "raw UTF-8 in Mcp-Name");
    http.stop().await;
}

// HTTP-C-10 / HTTP-S-21: a name that looks like the sentinel is itself
// encoded; sent plain, it is decoded and no longer matches.
#[tokio::test]
async fn sentinel_looking_tool_name() {
    let (http, _) = start_default().await;
    let r = http
        .call("tools/call", json!({"name": "=?base64?abc?="}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.result()["content"][0]["text"], "literal");
    let r = call_with(
        &http,
        "tools/call",
        json!({"name": "=?base64?abc?="}),
        |h| set_header(h, "mcp-name", Some("=?base64?abc?=")),
    )
    .await;
    assert_mismatch(&r, "sentinel literal sent plain");
    http.stop().await;
}

fn headers_call(args: Value) -> Value {
    json!({"name": "headers", "arguments": args})
}

// HTTP-S-20…24: Mcp-Param-* headers of x-mcp-header arguments.
#[tokio::test]
async fn param_headers() {
    let (http, _) = start_default().await;
    let ok = |r: &Resp, what: &str| {
        assert_eq!(r.status, 200, "{what}: {r:?}");
        assert!(r.response().get("result").is_some(), "{what}");
    };
    // Present and equal.
    let r = call_with(
        &http,
        "tools/call",
        headers_call(json!({"region": "eu", "count": 42})),
        |mut h| {
            h.push(header("mcp-param-region", "eu"));
            h.push(header("mcp-param-count", "42"));
            h
        },
    )
    .await;
    ok(&r, "plain values");
    // Integers compare numerically (HTTP-S-24).
    let r = call_with(
        &http,
        "tools/call",
        headers_call(json!({"region": "eu", "count": 42.0})),
        |mut h| {
            h.push(header("Mcp-Param-Region", "eu"));
            h.push(header("Mcp-Param-Count", "42"));
            h
        },
    )
    .await;
    ok(&r, "42 against 42.0");
    // A base64-wrapped value is decoded before comparing (HTTP-S-21).
    let r = call_with(
        &http,
        "tools/call",
        headers_call(json!({"region": "Hello, 世界"})),
        |mut h| {
            h.push(header(
                "mcp-param-region",
                "=?base64?SGVsbG8sIOS4lueVjA==?=",
            ));
            h
        },
    )
    .await;
    ok(&r, "base64 value");
    // Null or absent arguments need no header (HTTP-S-23).
    let r = call_with(
        &http,
        "tools/call",
        headers_call(json!({"region": "eu", "opts": {"flag": null}})),
        |mut h| {
            h.push(header("mcp-param-region", "eu"));
            h
        },
    )
    .await;
    ok(&r, "null argument");
    type Case = (&'static str, Value, Vec<(String, String)>);
    let bad: Vec<Case> = vec![
        ("missing header", json!({"region": "eu"}), vec![]),
        (
            "wrong value",
            json!({"region": "eu"}),
            vec![header("mcp-param-region", "us")],
        ),
        (
            "wrong integer",
            json!({"region": "eu", "count": 42}),
            vec![
                header("mcp-param-region", "eu"),
                header("mcp-param-count", "43"),
            ],
        ),
        (
            "nested argument without its header",
            json!({"region": "eu", "opts": {"flag": true}}),
            vec![header("mcp-param-region", "eu")],
        ),
        (
            "header for an absent argument",
            json!({"region": "eu"}),
            vec![
                header("mcp-param-region", "eu"),
                header("mcp-param-count", "1"),
            ],
        ),
        (
            "bad base64 padding",
            json!({"region": "Hello"}),
            vec![header("mcp-param-region", "=?base64?SGVsbG8?=")],
        ),
        (
            "bad base64 characters",
            json!({"region": "Hello"}),
            vec![header("mcp-param-region", "=?base64?SGVs!!!bG8=?=")],
        ),
    ];
    for (what, args, extra) in bad {
        let r = call_with(&http, "tools/call", headers_call(args), |mut h| {
            h.extend(extra);
            h
        })
        .await;
        assert_mismatch(&r, what);
    }
    // A value without the full sentinel is a literal.
    let r = call_with(
        &http,
        "tools/call",
        headers_call(json!({"region": "=?base64?SGVsbG8="})),
        |mut h| {
            h.push(header("mcp-param-region", "=?base64?SGVsbG8="));
            h
        },
    )
    .await;
    ok(&r, "half a sentinel");
    http.stop().await;
}
