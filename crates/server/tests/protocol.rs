//! The protocol over HTTP: `_meta`, versions, capabilities, discovery,
//! lists and cursors, caching hints, tools, resources, prompts, completion.

use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;
use switchboard_server::{CacheScope, Server};

use crate::util::*;

fn server_info(result: &Value) {
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "test-server", "version": "9.9.9"})
    );
}

// WIRE-15: missing _meta or its required keys is -32602 with HTTP 400.
#[tokio::test]
async fn meta_is_required_on_every_request() {
    let (http, _) = start_default().await;
    let cases = [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V}}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/logLevel": "loud"}}),
    ];
    for params in cases {
        let headers = standard_headers("tools/list", &params);
        let r = http
            .post(&headers, body(json!("m"), "tools/list", params.clone()))
            .await;
        assert_eq!(r.status, 400, "{params}");
        assert_eq!(r.error_code(), -32602, "{params}");
        assert_eq!(r.response()["id"], "m");
    }
    // clientInfo is optional.
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}});
    let r = http
        .post(
            &standard_headers("tools/list", &params),
            body(json!(1), "tools/list", params),
        )
        .await;
    assert_eq!(r.status, 200);
    http.stop().await;
}

// VER-02, HTTP-S-16: an unsupported version is 400 + -32022 naming both.
#[tokio::test]
async fn unsupported_version() {
    let (http, _) = start_default().await;
    let mut meta = meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let r = http.call("server/discover", json!({"_meta": meta})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32022);
    let data = &r.response()["error"]["data"];
    assert_eq!(data["supported"], json!([V]));
    assert_eq!(data["requested"], "1999-01-01");
    http.stop().await;
}

// WIRE-21: a needed capability the request did not declare is -32021 with
// an object-shaped requiredCapabilities; MRTR-05 for input requests.
#[tokio::test]
async fn missing_client_capability() {
    let (http, _) = start_default().await;
    let r = http
        .call("tools/call", json!({"name": "need_sampling"}))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32021);
    assert_eq!(
        r.response()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    // Declared on *this* request: fine, and never inferred from the
    // previous one (WIRE-19).
    let r = http
        .call(
            "tools/call",
            json!({"name": "need_sampling", "_meta": meta_with(json!({"sampling": {}}))}),
        )
        .await;
    assert_eq!(r.result()["resultType"], "input_required");
    let r = http
        .call("tools/call", json!({"name": "need_sampling"}))
        .await;
    assert_eq!(r.error_code(), -32021);
    http.stop().await;
}

// HTTP-S-17: unknown and removed methods are 404 + -32601; initialize's
// error names the supported versions (VER-08).
#[tokio::test]
async fn unknown_and_removed_methods() {
    let (http, _) = start_default().await;
    for m in [
        "unknown/method",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "initialize",
    ] {
        let r = http.call(m, json!({})).await;
        assert_eq!(r.status, 404, "{m}");
        assert_eq!(r.error_code(), -32601, "{m}");
    }
    let r = http.call("initialize", json!({})).await;
    let message = r.response()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains(V), "{message}");
    http.stop().await;
}

// VER-01, WIRE-06, WIRE-17, CACHE-01: discover and every cacheable result.
#[tokio::test]
async fn discover_and_caching_hints() {
    let (http, _) = start_default().await;
    let d = http.call("server/discover", json!({})).await.result();
    assert_eq!(d["supportedVersions"], json!([V]));
    assert_eq!(d["resultType"], "complete");
    assert!(d["capabilities"]["tools"]["listChanged"].as_bool().unwrap());
    assert!(d["capabilities"]["prompts"].is_object());
    assert!(
        d["capabilities"]["resources"]["subscribe"]
            .as_bool()
            .unwrap()
    );
    assert!(d["capabilities"]["completions"].is_object());
    assert!(d["ttlMs"].as_i64().unwrap() >= 0);
    server_info(&d);
    for (m, p) in [
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://text"})),
    ] {
        let r = http.call(m, p).await.result();
        assert!(r["ttlMs"].as_i64().unwrap() >= 0, "{m}");
        assert!(
            matches!(r["cacheScope"].as_str(), Some("public" | "private")),
            "{m}"
        );
        assert_eq!(r["resultType"], "complete", "{m}");
        server_info(&r);
    }
    // Non-cacheable results still carry resultType and serverInfo.
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await
        .result();
    assert_eq!(r["resultType"], "complete");
    server_info(&r);
    http.stop().await;
}

// WIRE-17 "unless configured not to": with the `serverInfo` `_meta` off, no
// result names the server, and a handler's own `_meta` still goes out.
#[tokio::test]
async fn server_info_meta_can_be_configured_off() {
    let server = builder(std::sync::Arc::new(Probe::default()))
        .server_info_meta(false)
        .tool("tagged", "Carries its own _meta", || async {
            let mut r = switchboard_wire::CallToolResult::text("t");
            r.header.meta = Some(serde_json::Map::from_iter([("k".to_owned(), json!(1))]));
            r
        })
        .build()
        .unwrap();
    let http = start(server, HttpOptions::new()).await;
    let tool = |name: &str| json!({"name": name, "arguments": {"text": "x"}});
    for (method, params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/read", json!({"uri": "test://text"})),
        ("tools/call", tool("echo")),
    ] {
        let r = http.call(method, params).await.result();
        assert_eq!(r["resultType"], "complete", "{method}");
        assert!(r.get("_meta").is_none(), "{method}: {r}");
    }
    let r = http.call("tools/call", tool("tagged")).await.result();
    assert_eq!(r["_meta"], json!({"k": 1}));
    http.stop().await;
}

// TOOL-03, PAGE-*, CACHE-08: pages of a configured size, a stable order,
// the same scope on every page, and forged cursors refused.
#[tokio::test]
async fn pagination_and_forged_cursors() {
    let probe = std::sync::Arc::new(Probe::default());
    let server = builder(probe)
        .page_size(3)
        .list_cache(5, CacheScope::Private)
        .build()
        .unwrap();
    let http = start(server, HttpOptions::new()).await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            None => json!({}),
            Some(c) => json!({"cursor": c}),
        };
        let page = http.call("tools/list", params).await.result();
        let tools = page["tools"].as_array().unwrap();
        assert!(tools.len() <= 3);
        assert_eq!(page["cacheScope"], "private");
        assert_eq!(page["ttlMs"], 5);
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match page.get("nextCursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    let first = http.call("tools/list", json!({})).await.result();
    assert_eq!(first["tools"][0]["name"], "echo");
    assert!(names.len() > 10 && names.contains(&"café".to_owned()));
    let mut dedup = names.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), names.len(), "no tool twice");
    // A forged, altered or foreign cursor is -32602, never page one.
    let real = http.call("tools/list", json!({})).await.result()["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut altered = real.clone().into_bytes();
    altered[3] = if altered[3] == b'A' { b'B' } else { b'A' };
    for bad in [
        "",
        "abc",
        "eyJwYWdlIjogMn0=",
        std::str::from_utf8(&altered).unwrap(),
    ] {
        let r = http.call("tools/list", json!({"cursor": bad})).await;
        assert_eq!(r.error_code(), -32602, "cursor {bad:?}");
    }
    // A tools cursor does not page prompts.
    let r = http.call("prompts/list", json!({"cursor": real})).await;
    assert_eq!(r.error_code(), -32602);
    http.stop().await;
}

// PAGE-*: a cursor is an offset into the list as it stood; once the list
// changed (a tool of an earlier page removed, one added) the offset would
// skip or repeat tools, so the cursor is refused (-32602, saying to list
// again) instead; an unchanged list pages as before.
#[tokio::test]
async fn a_cursor_across_a_change_of_the_list_is_refused_as_stale() {
    let probe = std::sync::Arc::new(Probe::default());
    let server = builder(probe).page_size(3).build().unwrap();
    let http = start(server.clone(), HttpOptions::new()).await;
    let first = http.call("tools/list", json!({})).await.result();
    let next = first["nextCursor"].as_str().unwrap().to_owned();
    let second = http
        .call("tools/list", json!({"cursor": next}))
        .await
        .result();
    let again = http
        .call("tools/list", json!({"cursor": next}))
        .await
        .result();
    assert_eq!(second["tools"], again["tools"], "unchanged: the same page");
    let removed = first["tools"][0]["name"].as_str().unwrap();
    assert!(server.remove_tool(removed));
    let stale = http.call("tools/list", json!({"cursor": next})).await;
    assert_eq!(stale.error_code(), -32602);
    let message = stale.response()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("stale cursor") && message.contains("list again without a cursor"),
        "{message}"
    );
    // The listing started again pages through the list as it is now.
    let fresh = http.call("tools/list", json!({})).await.result();
    let next = fresh["nextCursor"].as_str().unwrap();
    let r = http
        .call("tools/list", json!({"cursor": next}))
        .await
        .result();
    assert_eq!(r["tools"][0], second["tools"][1]);
    http.stop().await;
}

// TOOL-15, TOOL-12/14: validation failures and business failures are
// isError results; unknown tools are -32602; structured output.
#[tokio::test]
async fn tool_errors_and_structured_output() {
    let (http, _) = start_default().await;
    let r = http
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": 5}}),
        )
        .await
        .result();
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("/text") && text.contains("is not of type \"string\""),
        "{text}"
    );
    let r = http
        .call("tools/call", json!({"name": "echo", "arguments": {}}))
        .await
        .result();
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"text\" is a required property")
    );
    let r = http
        .call("tools/call", json!({"name": "fail"}))
        .await
        .result();
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"][0]["text"],
        "the ticket system is down; try again later"
    );
    let r = http.call("tools/call", json!({"name": "nope"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.error_code(), -32602);
    let r = http
        .call("tools/call", json!({"name": "echo", "arguments": [1]}))
        .await;
    assert_eq!(r.error_code(), -32602);
    let r = http
        .call(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await
        .result();
    assert_eq!(r["structuredContent"], json!({"sum": 5}));
    assert_eq!(r["content"][0]["text"], "{\"sum\":5}");
    let tools = http.call("tools/list", json!({})).await.result();
    let add = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .unwrap()
        .clone();
    assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "integer");
    assert_eq!(add["inputSchema"]["type"], "object");
    http.stop().await;
}

// LOG-03/04: log messages only when the request asked, at or above its level.
#[tokio::test]
async fn logs_only_when_asked() {
    let (http, _) = start_default().await;
    let r = http.call("tools/call", json!({"name": "logs"})).await;
    assert_eq!(r.content_type(), "application/json");
    assert!(r.messages().iter().all(|m| m.get("method").is_none()));
    let mut meta = meta();
    meta["io.modelcontextprotocol/logLevel"] = json!("warning");
    let r = http
        .call("tools/call", json!({"name": "logs", "_meta": meta}))
        .await;
    let logs: Vec<Value> = r
        .messages()
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["params"]["level"], "error");
    assert_eq!(logs[0]["params"]["data"], "error line");
    http.stop().await;
}

// RES-03, RES-09: text and binary reads, templates, unknown URIs.
#[tokio::test]
async fn resources() {
    let (http, _) = start_default().await;
    let r = http
        .call("resources/read", json!({"uri": "test://text"}))
        .await
        .result();
    assert_eq!(r["contents"][0]["text"], "plain text");
    let r = http
        .call("resources/read", json!({"uri": "test://binary"}))
        .await
        .result();
    assert_eq!(r["contents"][0]["blob"], "AAEC/w==");
    let r = http
        .call("resources/read", json!({"uri": "test://items/42"}))
        .await
        .result();
    assert_eq!(r["contents"][0]["text"], "item 42");
    assert_eq!(r["contents"][0]["uri"], "test://items/42");
    let r = http
        .call("resources/read", json!({"uri": "test://missing"}))
        .await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.response()["error"]["data"]["uri"], "test://missing");
    let t = http
        .call("resources/templates/list", json!({}))
        .await
        .result();
    assert_eq!(
        t["resourceTemplates"][0]["uriTemplate"],
        "test://items/{id}"
    );
    http.stop().await;
}

// PRM-05, COMP-02/03.
#[tokio::test]
async fn prompts_and_completion() {
    let (http, _) = start_default().await;
    let list = http.call("prompts/list", json!({})).await.result();
    assert_eq!(list["prompts"][0]["arguments"][0]["name"], "text");
    assert_eq!(list["prompts"][0]["arguments"][0]["required"], true);
    let r = http
        .call(
            "prompts/get",
            json!({"name": "greet", "arguments": {"text": "Ada"}}),
        )
        .await
        .result();
    assert_eq!(r["messages"][0]["content"]["text"], "Hello Ada");
    let r = http.call("prompts/get", json!({"name": "greet"})).await;
    assert_eq!(r.error_code(), -32602);
    assert!(
        r.response()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"text\"")
    );
    let r = http.call("prompts/get", json!({"name": "nope"})).await;
    assert_eq!(r.error_code(), -32602);
    let c = http
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "text", "value": "A"}}),
        )
        .await
        .result();
    assert_eq!(c["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(c["completion"]["hasMore"], true);
    assert_eq!(c["completion"]["total"], 150);
    let r = http
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
    http.stop().await;
}

// Methods of a feature the server does not offer are -32601 (HTTP-S-17).
#[tokio::test]
async fn unadvertised_features_are_method_not_found() {
    let server = Server::builder("bare", "1")
        .tool("echo", "e", |a: EchoArgs| async move { a.text })
        .build()
        .unwrap();
    let http = start(server, HttpOptions::new()).await;
    let d = http.call("server/discover", json!({})).await.result();
    assert!(d["capabilities"].get("prompts").is_none());
    for m in ["prompts/list", "resources/list", "completion/complete"] {
        let r = http.call(m, json!({})).await;
        assert_eq!((r.status, r.error_code()), (404, -32601), "{m}");
    }
    http.stop().await;
}

// An unlisted tool: absent from tools/list, callable by name.
#[tokio::test]
async fn an_unlisted_tool_is_callable_but_not_listed() {
    let server = Server::builder("test-server", "9.9.9")
        .tool_spec(
            switchboard_server::ToolSpec::new("hidden")
                .input_schema(json!({"type": "object"}))
                .unlisted(),
            |_args: Value, _ctx: switchboard_server::Context| async { "hidden ran".to_owned() },
        )
        .tool_spec(
            switchboard_server::ToolSpec::new("shown").input_schema(json!({"type": "object"})),
            |_args: Value, _ctx: switchboard_server::Context| async { "shown ran".to_owned() },
        )
        .build()
        .unwrap();
    let http = start(server.clone(), HttpOptions::new()).await;
    let list = http.call("tools/list", json!({})).await.result();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shown"]);
    let r = http
        .call("tools/call", json!({"name": "hidden", "arguments": {}}))
        .await
        .result();
    assert_eq!(r["content"][0]["text"], "hidden ran");
    // Removing it works like any tool; a second one of the name is refused.
    assert!(server.remove_tool("hidden"));
    let r = http
        .call("tools/call", json!({"name": "hidden", "arguments": {}}))
        .await;
    assert_eq!(r.error_code(), -32602);
    http.stop().await;
}
