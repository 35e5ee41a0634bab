//! The modern (2026-07-28) Streamable HTTP transport against scripted
//! servers: headers, JSON and SSE answers, misbehaving servers and proxies,
//! limits, cancellation, authorization.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::TransportError;
use switchboard_client::transport::http::{
    AuthChallenge, AuthProvider, AuthProviderError, AuthRetry, HttpTransport, StaticAuthorization,
};
use switchboard_client::transport::{BoxFuture, Outgoing, Transport};
use switchboard_wire::{Notification, RequestId, Response, types::method};
use tokio::sync::Notify;

use super::util::*;

fn transport(url: &str) -> HttpTransport {
    HttpTransport::builder("test", url)
        .remember_era(false)
        .build()
        .unwrap()
}

/// Sends `tools/call` of `name` as the modern request `id` and waits.
async fn call_named(t: &HttpTransport, id: i64, name: &str) -> Result<Response, TransportError> {
    send_modern(t, id, method::TOOLS_CALL, json!({ "name": name })).await
}

/// Sends the modern request `id` with `method` and `params` and waits.
async fn send_modern(
    t: &HttpTransport,
    id: i64,
    method: &str,
    params: Value,
) -> Result<Response, TransportError> {
    within(t.request(Outgoing::new(modern_request(id, method, params)))).await
}

// HTTP-C-01, HTTP-C-02, HTTP-C-05, HTTP-C-06, HTTP-C-07: one POST per
// message, both Accept types, the version header equal to _meta, the
// standard headers and the Mcp-Param-* headers the Client computed.
#[tokio::test]
async fn posts_carry_the_standard_and_param_headers() {
    let server =
        serve(|seen| async move { json_reply(200, result_for(&seen, json!({"content": []}))) })
            .await;
    let t = HttpTransport::builder("test", server.url())
        .header("Authorization", "Bearer s3cret")
        .header("X-Tenant", "acme")
        .remember_era(false)
        .build()
        .unwrap();
    let request = modern_request(
        7,
        method::TOOLS_CALL,
        json!({"name": "wéather", "arguments": {"region": "us-west1"}}),
    );
    let mut out = Outgoing::new(request);
    out.param_headers = vec![("mcp-param-region".into(), "us-west1".into())];
    let response = within(t.request(out)).await.unwrap();
    assert_eq!(response.id, Some(RequestId::Number(7)));

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!(s.method, http::Method::POST);
    assert_eq!(s.path, "/mcp");
    assert_eq!(
        s.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(
        s.header("accept").as_deref(),
        Some("application/json, text/event-stream")
    );
    assert_eq!(
        s.header("mcp-protocol-version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(
        s.json()["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(s.header("mcp-method").as_deref(), Some("tools/call"));
    // HTTP-C-09: a non-ASCII name travels base64-wrapped.
    assert_eq!(
        s.header("mcp-name").as_deref(),
        Some("=?base64?d8OpYXRoZXI=?=")
    );
    assert_eq!(s.header("mcp-param-region").as_deref(), Some("us-west1"));
    assert_eq!(s.header("authorization").as_deref(), Some("Bearer s3cret"));
    assert_eq!(s.header("x-tenant").as_deref(), Some("acme"));
    assert_eq!(s.json()["params"]["name"], "wéather");
}

// HTTP-C-09: non-ASCII param values and resource URIs as the sentinel.
#[tokio::test]
async fn non_ascii_names_and_values_are_sentinel_encoded() {
    let server =
        serve(|seen| async move { json_reply(200, result_for(&seen, json!({"contents": []}))) })
            .await;
    let t = transport(&server.url());
    let request = modern_request(
        1,
        method::RESOURCES_READ,
        json!({"uri": "file:///tmp/naïve résumé.txt"}),
    );
    within(t.request(Outgoing::new(request))).await.unwrap();
    let request = modern_request(2, method::PROMPTS_GET, json!({"name": "plain_name"}));
    within(t.request(Outgoing::new(request))).await.unwrap();
    let seen = server.seen();
    let name = seen[0].header("mcp-name").unwrap();
    assert!(
        name.starts_with("=?base64?") && name.ends_with("?="),
        "{name}"
    );
    let decoded = switchboard_wire::header::decode_value(name.as_bytes()).unwrap();
    assert_eq!(decoded, "file:///tmp/naïve résumé.txt");
    assert_eq!(seen[1].header("mcp-name").as_deref(), Some("plain_name"));
    assert_eq!(seen[1].header("mcp-method").as_deref(), Some("prompts/get"));
}

// HTTP-C-04: an SSE answer; progress before the response reaches the sink.
#[tokio::test]
async fn progress_notification_then_response_on_a_stream() {
    let server = serve(|seen| async move {
        sse(vec![
            Step::Raw(": keep-alive\n\n".into()),
            Step::Event(notification(
                method::PROGRESS,
                json!({"progressToken": "p1", "progress": 1, "total": 2}),
            )),
            Step::Event(notification(
                method::PROGRESS,
                json!({"progressToken": "p1", "progress": 2, "total": 2}),
            )),
            Step::Event(result_for(
                &seen,
                json!({"content": [{"type": "text", "text": "done"}]}),
            )),
        ])
    })
    .await;
    let t = transport(&server.url());
    let (out, mut notes) = with_sink(modern_request(
        3,
        method::TOOLS_CALL,
        json!({"name": "slow"}),
    ));
    let response = within(t.request(out)).await.unwrap();
    assert_eq!(response.outcome.unwrap()["content"][0]["text"], "done");
    let first = notes.recv().await.unwrap();
    let second = notes.recv().await.unwrap();
    assert_eq!(first.method, method::PROGRESS);
    assert_eq!(first.params.unwrap()["progress"], 1);
    assert_eq!(second.params.unwrap()["progress"], 2);
}

// A notification the server sends after the response still reaches the
// request's sink.
#[tokio::test]
async fn notification_after_the_response_reaches_the_sink() {
    let server = serve(|seen| async move {
        sse(vec![
            Step::Event(result_for(&seen, json!({"content": []}))),
            Step::Sleep(Duration::from_millis(50)),
            Step::Event(notification(
                method::MESSAGE,
                json!({"level": "info", "data": "after"}),
            )),
        ])
    })
    .await;
    let t = transport(&server.url());
    let (out, mut notes) = with_sink(modern_request(4, method::TOOLS_CALL, json!({"name": "x"})));
    let response = within(t.request(out)).await.unwrap();
    assert!(response.outcome.is_ok());
    let late: Notification = within(notes.recv()).await.unwrap();
    assert_eq!(late.method, method::MESSAGE);
    assert_eq!(late.params.unwrap()["data"], "after");
}

// DESIGN.md item 5: the response is the message whose id matches, not the
// first or the last one.
#[tokio::test]
async fn a_response_for_another_id_is_skipped() {
    let server = serve(|seen| async move {
        sse(vec![
            Step::Event(json!({"jsonrpc": "2.0", "id": 999, "result": {"content": [{"type": "text", "text": "wrong"}]}})),
            Step::Event(json!({"jsonrpc": "2.0", "id": "5", "result": {"content": [{"type": "text", "text": "string id"}]}})),
            Step::Event(result_for(&seen, json!({"content": [{"type": "text", "text": "right"}]}))),
            Step::Event(json!({"jsonrpc": "2.0", "id": 1000, "result": {}})),
        ])
    })
    .await;
    let t = transport(&server.url());
    let response = send_modern(&t, 5, method::TOOLS_CALL, json!({"name": "x"}))
        .await
        .unwrap();
    assert_eq!(response.id, Some(RequestId::Number(5)));
    assert_eq!(response.outcome.unwrap()["content"][0]["text"], "right");
}

// DESIGN.md items 3 and 5, HTTP-C-17: a stream cut before the response
// fails the request at once with the cause (there is no request timeout
// here at all: a hang would trip the failsafe).
#[tokio::test]
async fn a_stream_cut_before_the_response_fails_at_once() {
    let server = serve(|_| async move {
        sse(vec![
            Step::Event(notification(
                method::PROGRESS,
                json!({"progressToken": 1, "progress": 1}),
            )),
            Step::Cut,
        ])
    })
    .await;
    let t = transport(&server.url());
    let err = send_modern(&t, 6, method::TOOLS_CALL, json!({"name": "x"}))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("test") && text.contains("broke"), "{text}");
}

#[tokio::test]
async fn a_stream_that_ends_without_the_response_fails_at_once() {
    let server = serve(|_| async move {
        sse(vec![Step::Event(notification(
            method::MESSAGE,
            json!({"level": "info", "data": "bye"}),
        ))])
    })
    .await;
    let t = transport(&server.url());
    let err = send_modern(&t, 8, method::TOOLS_CALL, json!({"name": "x"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("response stream ended before the response to request 8"),
        "{err}"
    );
    // HTTP-C-17: a retry is a new POST; nothing resumes with Last-Event-ID.
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.header("last-event-id").is_none())
    );
    assert!(server.seen().iter().all(|s| s.method == http::Method::POST));
}

// A proxy's HTML error page: a transport error naming the status and a
// snippet of the page.
#[tokio::test]
async fn an_html_502_from_a_proxy_names_status_and_body() {
    let server = serve(|_| async move {
        text(
            502,
            "text/html",
            "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>\n",
        )
    })
    .await;
    let t = transport(&server.url());
    let err = send_modern(&t, 9, method::TOOLS_LIST, json!({}))
        .await
        .unwrap_err();
    match &err {
        TransportError::Http {
            status,
            error,
            body,
            ..
        } => {
            assert_eq!(*status, 502);
            assert!(error.is_none());
            assert!(body.contains("502 Bad Gateway"), "{body}");
            assert!(!body.contains('\n'));
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert_says(&err, "HTTP 502");
    assert_says(&err, "<title>502 Bad Gateway</title>");
}

// HTTP errors carry the JSON-RPC error body: a modern error is the answer.
#[tokio::test]
async fn json_rpc_error_bodies_of_http_errors_are_the_answer() {
    let server = serve(|seen| async move {
        let id = seen.id();
        match seen.json()["params"]["name"].as_str() {
            Some("version") => json_reply(
                400,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "unsupported", "data": {"supported": ["2026-07-28"], "requested": "x"}}}),
            ),
            Some("missing") => json_reply(
                404,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}),
            ),
            Some("boom") => json_reply(
                500,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "internal"}}),
            ),
            _ => json_reply(
                400,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}),
            ),
        }
    })
    .await;
    let t = transport(&server.url());
    let r = call_named(&t, 1, "version").await.unwrap();
    assert_eq!(r.outcome.unwrap_err().code, -32022);
    let r = call_named(&t, 2, "missing").await.unwrap();
    assert_eq!(r.outcome.unwrap_err().code, -32601);
    let r = call_named(&t, 3, "boom").await.unwrap();
    assert_eq!(r.id, Some(RequestId::Number(3)));
    assert_eq!(r.outcome.unwrap_err().code, -32603);
    // HTTP-C-16: a 400 whose body is not a modern error is what a legacy
    // server says; the Client decides, so it comes as an HTTP error that
    // still carries the body's JSON-RPC error.
    let err = call_named(&t, 4, "legacy").await.unwrap_err();
    match err {
        TransportError::Http { status, error, .. } => {
            assert_eq!(status, 400);
            assert_eq!(error.unwrap().code, -32000);
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

// 202 for notifications; a 202 to a request is an error, not a hang.
#[tokio::test]
async fn notifications_get_202_and_requests_need_an_answer() {
    let server = serve(|_| async move { accepted() }).await;
    let t = transport(&server.url());
    within(t.notify(Notification::new(
        "notifications/example",
        Some(json!({"x": 1})),
    )))
    .await
    .unwrap();
    let err = send_modern(&t, 1, method::TOOLS_LIST, json!({}))
        .await
        .unwrap_err();
    assert_says(&err, "202");
    let seen = server.seen();
    assert_eq!(
        seen[0].header("mcp-method").as_deref(),
        Some("notifications/example")
    );
}

#[tokio::test]
async fn bodies_and_events_over_the_limit_are_refused() {
    let big = "x".repeat(64 * 1024);
    let server = serve(move |seen| {
        let big = big.clone();
        async move {
            if seen.json()["params"]["name"] == "sse" {
                sse(vec![Step::Event(result_for(
                    &seen,
                    json!({"content": [{"type": "text", "text": big}]}),
                ))])
            } else {
                json_reply(
                    200,
                    result_for(&seen, json!({"content": [{"type": "text", "text": big}]})),
                )
            }
        }
    })
    .await;
    let t = HttpTransport::builder("test", server.url())
        .max_body_bytes(16 * 1024)
        .remember_era(false)
        .build()
        .unwrap();
    for (id, name) in [(1, "json"), (2, "sse")] {
        let err = send_modern(&t, id, method::TOOLS_CALL, json!({"name": name}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("limit"), "{name}: {err}");
    }
}

#[tokio::test]
async fn a_response_head_over_the_limit_is_refused() {
    let server = serve(|seen| async move {
        let mut reply = json_reply(200, result_for(&seen, json!({})));
        let huge = "h".repeat(100 * 1024);
        reply
            .headers_mut()
            .insert("x-huge", http::HeaderValue::from_str(&huge).unwrap());
        reply
    })
    .await;
    let t = transport(&server.url());
    let err = send_modern(&t, 1, method::TOOLS_LIST, json!({}))
        .await
        .unwrap_err();
    assert_says(&err, "larger than the 65536-byte limit");
}

// Non-negotiable 1: a line that is not JSON is skipped, not fatal.
#[tokio::test]
async fn garbage_events_are_skipped() {
    let server = serve(|seen| async move {
        sse(vec![
            Step::Raw("data: {not json\n\n".into()),
            Step::Raw("event: ping\ndata: x\n\n".into()),
            Step::Raw("data: \n\n".into()),
            Step::Event(result_for(&seen, json!({"ok": true}))),
        ])
    })
    .await;
    let t = transport(&server.url());
    let r = send_modern(&t, 1, method::TOOLS_LIST, json!({}))
        .await
        .unwrap();
    assert_eq!(r.outcome.unwrap()["ok"], true);
}

// CANC-03, HTTP-S-12: cancelling is dropping the future; the server sees
// the stream close, and no notifications/cancelled is sent.
#[tokio::test]
async fn dropping_the_request_closes_the_stream() {
    let closed = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let (c, s) = (closed.clone(), started.clone());
    let server = serve(move |_| {
        let (c, s) = (c.clone(), s.clone());
        async move {
            s.notify_one();
            sse(vec![
                Step::Raw(": open\n\n".into()),
                Step::HoldUntilClosed(c),
            ])
        }
    })
    .await;
    let t = transport(&server.url());
    let out = Outgoing::new(modern_request(
        1,
        method::TOOLS_CALL,
        json!({"name": "forever"}),
    ));
    let request = t.request(out);
    tokio::select! {
        _ = request => panic!("the request should still be pending"),
        _ = started.notified() => {}
    }
    within(closed.notified()).await;
    assert!(server.posts(method::CANCELLED).is_empty());
    assert_eq!(server.seen().len(), 1);
}

// Transport::close fails in-flight requests at once.
#[tokio::test]
async fn close_fails_pending_requests_at_once() {
    let started = Arc::new(Notify::new());
    let s = started.clone();
    let server = serve(move |_| {
        let s = s.clone();
        async move {
            s.notify_one();
            sse(vec![Step::HoldUntilClosed(Arc::new(Notify::new()))])
        }
    })
    .await;
    let t = Arc::new(transport(&server.url()));
    let t2 = t.clone();
    let pending = tokio::spawn(async move {
        t2.request(Outgoing::new(modern_request(
            1,
            method::TOOLS_CALL,
            json!({"name": "x"}),
        )))
        .await
    });
    within(started.notified()).await;
    t.close().await;
    let err = within(pending).await.unwrap().unwrap_err();
    assert!(err.is_closed(), "{err}");
    let err = within(t.request(Outgoing::new(modern_request(
        2,
        method::TOOLS_LIST,
        json!({}),
    ))))
    .await
    .unwrap_err();
    assert!(err.is_closed(), "{err}");
}

#[tokio::test]
async fn a_dead_server_is_a_clear_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let t = transport(&url);
    let err = within(t.request(Outgoing::new(modern_request(
        1,
        method::TOOLS_LIST,
        json!({}),
    ))))
    .await
    .unwrap_err();
    // Only this exchange failed: the transport is not closed, the next
    // request tries again.
    assert!(matches!(err, TransportError::Exchange { .. }), "{err:?}");
    assert_says(&err, "request to test failed");
    assert!(!err.is_closed());
}

#[derive(Debug)]
struct Rotating {
    asked: AtomicUsize,
    challenges: std::sync::Mutex<Vec<AuthChallenge>>,
    give_up: bool,
}

impl AuthProvider for Rotating {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, AuthProviderError>> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(Some(format!("Bearer token-{n}"))) })
    }

    fn on_challenge<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> BoxFuture<'a, Result<AuthRetry, AuthProviderError>> {
        self.challenges.lock().unwrap().push(challenge.clone());
        let give_up = self.give_up;
        Box::pin(async move {
            Ok(if give_up {
                AuthRetry::GiveUp
            } else {
                AuthRetry::Retry
            })
        })
    }
}

// HTTP-C-19 and the OAuth hook: the provider's header on every request, a
// 401 challenge handed to it, the request re-sent with the new header.
#[tokio::test]
async fn auth_provider_sees_challenges_and_retries() {
    let server = serve(|seen| async move {
        if seen.header("authorization").as_deref() == Some("Bearer token-1") {
            json_reply(200, result_for(&seen, json!({"tools": []})))
        } else {
            let mut r = text(401, "", "");
            r.headers_mut().insert(
                "www-authenticate",
                http::HeaderValue::from_static(
                    r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp", scope="mcp:read""#,
                ),
            );
            r
        }
    })
    .await;
    let provider = Arc::new(Rotating {
        asked: AtomicUsize::new(0),
        challenges: Default::default(),
        give_up: false,
    });
    let t = HttpTransport::builder("test", server.url())
        .auth(provider.clone())
        .remember_era(false)
        .build()
        .unwrap();
    let r = within(t.request(Outgoing::new(modern_request(
        1,
        method::TOOLS_LIST,
        json!({}),
    ))))
    .await
    .unwrap();
    assert!(r.outcome.is_ok());
    let challenges = provider.challenges.lock().unwrap().clone();
    assert_eq!(challenges.len(), 1);
    assert_eq!(challenges[0].status, 401);
    assert!(challenges[0].www_authenticate[0].contains("resource_metadata="));
    assert_eq!(challenges[0].method.as_deref(), Some("tools/list"));
    // The challenge names the header the refused request carried, not the
    // one the provider would give now.
    assert_eq!(
        challenges[0].sent_authorization.as_deref(),
        Some("Bearer token-0")
    );
    assert!(!format!("{:?}", challenges[0]).contains("token-0"));
    let auths: Vec<_> = server
        .seen()
        .iter()
        .map(|s| s.header("authorization"))
        .collect();
    assert_eq!(
        auths,
        vec![Some("Bearer token-0".into()), Some("Bearer token-1".into())]
    );
}

/// Gives an `Authorization` value only while it holds a token, and a
/// proof naming what it was asked about.
#[derive(Debug, Default)]
struct Proving {
    token: std::sync::Mutex<Option<String>>,
    proofs_asked: std::sync::Mutex<Vec<(String, String, Option<String>)>>,
}

impl AuthProvider for Proving {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, AuthProviderError>> {
        let token = self.token.lock().unwrap().clone();
        Box::pin(async move { Ok(token) })
    }

    fn proof<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
        authorization: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthProviderError>> {
        self.proofs_asked.lock().unwrap().push((
            method.to_owned(),
            url.to_owned(),
            authorization.map(str::to_owned),
        ));
        Box::pin(async move { Ok(Some(format!("proof-for-{method}"))) })
    }

    fn on_challenge<'a>(
        &'a self,
        _: &'a AuthChallenge,
    ) -> BoxFuture<'a, Result<AuthRetry, AuthProviderError>> {
        Box::pin(async { Ok(AuthRetry::GiveUp) })
    }
}

// A proof of possession goes with an access token (RFC 9449): without an
// `Authorization` value the provider is not asked for one, and the request
// carries no `DPoP` header; with one, it is asked with the method and the
// full URL, and its proof is sent.
#[tokio::test]
async fn a_proof_is_asked_for_only_with_an_authorization() {
    let server =
        serve(|seen| async move { json_reply(200, result_for(&seen, json!({"tools": []}))) }).await;
    let provider = Arc::new(Proving::default());
    let t = HttpTransport::builder("test", server.url())
        .auth(provider.clone())
        .remember_era(false)
        .build()
        .unwrap();
    let list = |id| Outgoing::new(modern_request(id, method::TOOLS_LIST, json!({})));
    within(t.request(list(1))).await.unwrap();
    assert!(provider.proofs_asked.lock().unwrap().is_empty());
    *provider.token.lock().unwrap() = Some("DPoP tok".into());
    within(t.request(list(2))).await.unwrap();
    assert_eq!(
        *provider.proofs_asked.lock().unwrap(),
        vec![("POST".to_owned(), server.url(), Some("DPoP tok".to_owned()))]
    );
    let dpop: Vec<_> = server.seen().iter().map(|s| s.header("dpop")).collect();
    assert_eq!(dpop, vec![None, Some("proof-for-POST".into())]);
}

#[tokio::test]
async fn a_refused_token_is_an_http_error_with_the_challenge() {
    let server = serve(|_| async move {
        let mut r = text(403, "", "");
        r.headers_mut().insert(
            "www-authenticate",
            http::HeaderValue::from_static(
                r#"Bearer error="insufficient_scope", scope="mcp:write""#,
            ),
        );
        r
    })
    .await;
    let t = HttpTransport::builder("test", server.url())
        .auth(Arc::new(StaticAuthorization::new("Bearer fixed")))
        .remember_era(false)
        .build()
        .unwrap();
    let err = within(t.request(Outgoing::new(modern_request(
        1,
        method::TOOLS_CALL,
        json!({"name": "w"}),
    ))))
    .await
    .unwrap_err();
    match err {
        TransportError::Http {
            status,
            www_authenticate,
            ..
        } => {
            assert_eq!(status, 403);
            assert!(www_authenticate[0].contains("insufficient_scope"));
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert_eq!(server.seen().len(), 1);
}

// A provider that always asks for a retry cannot loop forever.
#[tokio::test]
async fn auth_retries_are_bounded() {
    let server = serve(|_| async move { text(401, "", "") }).await;
    let provider = Arc::new(Rotating {
        asked: AtomicUsize::new(0),
        challenges: Default::default(),
        give_up: false,
    });
    let t = HttpTransport::builder("test", server.url())
        .auth(provider)
        .remember_era(false)
        .build()
        .unwrap();
    let err = within(t.request(Outgoing::new(modern_request(
        1,
        method::TOOLS_LIST,
        json!({}),
    ))))
    .await
    .unwrap_err();
    assert_eq!(err.http_status(), Some(401));
    assert!(server.seen().len() <= 4, "{}", server.seen().len());
}

// Many requests in flight share the pool and each gets its own answer.
#[tokio::test]
async fn concurrent_requests_each_get_their_own_response() {
    let server = serve(|seen| async move {
        let name = seen.json()["params"]["name"].clone();
        if seen.id().as_i64().unwrap() % 2 == 0 {
            json_reply(200, result_for(&seen, json!({"echo": name})))
        } else {
            sse(vec![
                Step::Sleep(Duration::from_millis(5)),
                Step::Event(result_for(&seen, json!({"echo": name}))),
            ])
        }
    })
    .await;
    let t = Arc::new(transport(&server.url()));
    let mut tasks = Vec::new();
    for i in 0..40_i64 {
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let out = Outgoing::new(modern_request(
                i,
                method::TOOLS_CALL,
                json!({"name": format!("t{i}")}),
            ));
            let r = t.request(out).await.unwrap();
            assert_eq!(r.id, Some(RequestId::Number(i)));
            assert_eq!(r.outcome.unwrap()["echo"], Value::from(format!("t{i}")));
        }));
    }
    for task in tasks {
        within(task).await.unwrap();
    }
}

// Keep-alive: sequential requests share one connection; a stream read to
// its end gives its connection back too.
#[tokio::test]
async fn connections_are_kept_alive_and_reused() {
    let server = serve(|seen| async move {
        if seen.rpc_method().as_deref() == Some(method::TOOLS_CALL) {
            sse(vec![Step::Event(result_for(&seen, json!({})))])
        } else {
            json_reply(200, result_for(&seen, json!({})))
        }
    })
    .await;
    let t = transport(&server.url());
    for i in 0..10 {
        send_modern(&t, i, method::TOOLS_LIST, json!({}))
            .await
            .unwrap();
    }
    within(t.notify(Notification::new("notifications/example", None)))
        .await
        .unwrap();
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    // A stream's end may trail its response by a moment; the connection is
    // back in the pool once it is read, so the calls share a few at most.
    for i in 10..20 {
        send_modern(&t, i, method::TOOLS_CALL, json!({"name": "x"}))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(server.connections.load(Ordering::SeqCst) <= 3);
}

// A server that closes every connection after its answer is served on
// fresh connections, never on a dead one.
#[tokio::test]
async fn servers_closing_connections_get_fresh_ones() {
    let server = serve(|seen| async move {
        let mut r = json_reply(200, result_for(&seen, json!({})));
        r.headers_mut()
            .insert("connection", http::HeaderValue::from_static("close"));
        r
    })
    .await;
    let t = transport(&server.url());
    for i in 0..5 {
        send_modern(&t, i, method::TOOLS_LIST, json!({}))
            .await
            .unwrap();
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 5);
}

// Bad answers are clear errors that name what was wrong, and the transport
// keeps serving the next request.
#[tokio::test]
async fn malformed_answers_are_clear_errors() {
    let server = serve(|seen| async move {
        match seen.json()["params"]["name"].as_str() {
            Some("garbage") => text(200, "application/json", "{not json"),
            Some("plain") => text(200, "text/plain", "hello"),
            Some("other_id") => {
                json_reply(200, json!({"jsonrpc": "2.0", "id": 12345, "result": {}}))
            }
            _ => json_reply(200, result_for(&seen, json!({"fine": true}))),
        }
    })
    .await;
    let t = transport(&server.url());
    let err = call_named(&t, 1, "garbage").await.unwrap_err();
    assert_says(&err, "not a JSON-RPC message");
    assert_says(&err, "{not json");
    let err = call_named(&t, 2, "plain").await.unwrap_err();
    assert!(err.to_string().contains("\"text/plain\""), "{err}");
    let err = call_named(&t, 3, "other_id").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("answers request 12345, not request 3"),
        "{err}"
    );
    let ok = call_named(&t, 4, "fine").await.unwrap();
    assert_eq!(ok.outcome.unwrap()["fine"], true);
}

/// Soak finding: 10,000 concurrent calls opened 10,000 connections at once
/// and most connects timed out. Requests in flight (and so connections)
/// are bounded by `max_in_flight`; the rest wait for a slot and all end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_and_connections_are_bounded() {
    let server = serve(|seen| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        json_reply(200, result_for(&seen, json!({"content": []})))
    })
    .await;
    let t = Arc::new(
        HttpTransport::builder("srv", server.url())
            .remember_era(false)
            .max_in_flight(4)
            .build()
            .unwrap(),
    );
    let mut set = tokio::task::JoinSet::new();
    for i in 0..40 {
        let t = t.clone();
        set.spawn(async move {
            let request = modern_request(i, method::TOOLS_CALL, json!({"name": "x"}));
            t.request(Outgoing::new(request)).await
        });
    }
    while let Some(r) = set.join_next().await {
        within(async { r.unwrap().unwrap() }).await;
    }
    let opened = server.connections.load(Ordering::SeqCst);
    assert!(opened <= 4, "{opened} connections for 4 slots");
}
