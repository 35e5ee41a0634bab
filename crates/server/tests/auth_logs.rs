//! Tokens never reach the logs (AUTH-S-05 and the spec's token-theft
//! section: tokens logged on the server can be replayed): every path a
//! bearer token takes through the HTTP runner, accepted and refused, runs
//! under a TRACE subscriber writing to a buffer, and no token appears in
//! what was captured, in a response, or in the principal handlers see.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_testutil::LogCapture;

use crate::auth::{
    call_as, challenge, fresh_token, legacy_delete, legacy_initialize, legacy_post, now,
    protected_with,
};
use crate::util::*;

// The test runtime is single-threaded, so the subscriber set for this
// thread sees the server's tasks too.
#[tokio::test]
async fn tokens_never_reach_the_logs() {
    let capture = LogCapture::default();
    let _guard = capture.install();

    // A handler that logs everything it knows about its caller.
    let builder = builder(Arc::default()).tool(
        "introspect",
        "Logs its context and principal",
        |ctx: switchboard_server::Context| async move {
            tracing::info!(?ctx, principal = ?ctx.principal(), "handler context");
            format!("{:?}", ctx.principal())
        },
    );
    let p = protected_with(builder, |v, _| v).await;
    let mut tokens = Vec::new();
    let mut answers = Vec::new();

    // Accepted: inline JSON, a streamed answer, the principal in a handler.
    let good = p.token_for("alice", "tickets:read tickets:write");
    tokens.push(good.clone());
    for (name, args) in [
        ("echo", json!({"text": "hi"})),
        ("progress", json!({})),
        ("introspect", json!({})),
    ] {
        let mut params = json!({"name": name, "arguments": args});
        if name == "progress" {
            params["_meta"] = meta();
            params["_meta"]["progressToken"] = json!("p1");
        }
        let r = call_as(&p.http, &good, "tools/call", params).await;
        assert_eq!(r.status, 200, "{name}");
        answers.push(r);
    }
    let principal = answers[2].result()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(principal.contains("alice"), "{principal}");

    // Refused: another audience, expired, unknown, lacking scope, down.
    let mut claims = p.claims("alice", "tickets:read");
    claims["aud"] = json!("https://other.example.com/mcp");
    let wrong_audience = p.token(claims);
    let mut claims = p.claims("alice", "tickets:read");
    claims["exp"] = json!(now() - 3600);
    let expired = p.token(claims);
    let unknown = fresh_token();
    let reader = p.token_for("bob", "tickets:read");
    let down = p.token(Value::Null);
    for (token, status) in [
        (&wrong_audience, 401),
        (&expired, 401),
        (&unknown, 401),
        (&reader, 403),
        (&down, 503),
    ] {
        tokens.push(token.clone());
        let r = call_as(
            &p.http,
            token,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
        assert_eq!(r.status, status);
        answers.push(r);
    }

    // In the URL (refused), in a malformed header, in another scheme.
    let params = with_meta(json!({"name": "whoami"}));
    let in_url = p.token_for("carol", "tickets:read");
    tokens.push(in_url.clone());
    let r = p
        .http
        .raw(
            http::Method::POST,
            &format!("/mcp?access_token={in_url}"),
            &standard_headers("tools/call", &params),
            body(json!(1), "tools/call", params.clone()),
        )
        .await;
    assert_eq!(r.status, 400);
    answers.push(r);
    let odd = fresh_token();
    tokens.push(odd.clone());
    for (value, status) in [
        (format!("Bearer {odd} trailing"), 400),
        (format!("Basic {odd}"), 401),
    ] {
        let mut h = standard_headers("tools/call", &params);
        h.push(header("authorization", &value));
        let r = p
            .http
            .post(&h, body(json!(1), "tools/call", params.clone()))
            .await;
        assert_eq!(r.status, status, "{value}");
        answers.push(r);
    }

    // A legacy session another principal tries to use and end, then ended
    // by its owner with a token.
    let session = legacy_initialize(&p.http, &good, json!({})).await;
    let intruder = p.token_for("mallory", "tickets:read");
    tokens.push(intruder.clone());
    let r = legacy_post(&p.http, &intruder, &session, "ping", json!({})).await;
    assert_eq!(r.status, 404);
    answers.push(r);
    let r = legacy_delete(&p.http, &intruder, &session).await;
    assert_eq!(r.status, 404);
    answers.push(r);
    let r = legacy_delete(&p.http, &good, &session).await;
    assert_eq!(r.status, 200);
    p.http.stop().await;

    let logs = capture.text();
    // The capture saw the auth path at every level it logs at.
    for line in [
        "authenticated",
        "subject=alice",
        "handler context",
        "refused: unauthorized: the token was not issued for this resource",
        "refused: unauthorized: the token expired",
        "refused: insufficient scope: needs tickets:read tickets:write",
        "refused: invalid request: access tokens are not accepted in the URL",
        "refused: cannot check the token now",
        "refused: invalid request: the Authorization header is not of the form",
        "subject=mallory",
        "refused: the legacy session belongs to another principal",
    ] {
        assert!(logs.contains(line), "missing {line:?} in:\n{logs}");
    }
    // A legacy session id is as good as a token to whoever holds it.
    assert!(!logs.contains(&session), "a session id reached the logs");
    for token in &tokens {
        assert!(!logs.contains(token.as_str()), "a token reached the logs");
        assert!(
            !principal.contains(token.as_str()),
            "a token reached a handler"
        );
        for r in &answers {
            assert!(
                !String::from_utf8_lossy(&r.body).contains(token.as_str()),
                "a token was echoed in a response"
            );
            if r.headers.contains_key("www-authenticate") {
                assert!(!challenge(r).contains(token.as_str()));
            }
        }
    }
}
