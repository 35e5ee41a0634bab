//! `subscriptions/listen` over HTTP: acknowledgment first, subscription ids
//! with their JSON type, the filter honoured, deliveries, keep-alives.

use std::time::Duration;

use serde_json::json;
use switchboard_server::ToolSpec;
use switchboard_server::http::HttpOptions;

use crate::util::*;

const SUB: &str = "io.modelcontextprotocol/subscriptionId";

// SUB-02/03: the ack comes first; every message carries the listen id with
// its JSON type (string or number).
#[tokio::test]
async fn ack_first_and_ids_keep_their_type() {
    let (http, _) = start_default().await;
    for id in [json!("listen-1"), json!(7)] {
        let mut s = http
            .open(
                id.clone(),
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false}}),
            )
            .await;
        assert_eq!(s.status, 200);
        assert_eq!(s.headers["content-type"], "text/event-stream");
        let ack = s.next().await.unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][SUB], id);
        // Only what was asked for and can be delivered is acknowledged.
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        http.server.notifier().tools_list_changed();
        let n = s.next().await.unwrap();
        assert_eq!(n["method"], "notifications/tools/list_changed");
        assert_eq!(n["params"]["_meta"][SUB], id);
        s.close();
    }
    http.stop().await;
}

// SUB-01: a kind the filter did not opt into is never sent.
#[tokio::test]
async fn filter_is_honoured() {
    let (http, _) = start_default().await;
    let mut s = http
        .open(
            json!(1),
            "subscriptions/listen",
            json!({"notifications": {"promptsListChanged": true, "resourceSubscriptions": ["test://text"]}}),
        )
        .await;
    s.next().await.unwrap();
    let n = http.server.notifier();
    n.tools_list_changed();
    n.resource_updated("test://other");
    n.resources_list_changed();
    n.resource_updated("test://text");
    n.prompts_list_changed();
    let first = s.next().await.unwrap();
    assert_eq!(first["method"], "notifications/resources/updated");
    assert_eq!(first["params"]["uri"], "test://text");
    let second = s.next().await.unwrap();
    assert_eq!(second["method"], "notifications/prompts/list_changed");
    s.close();
    http.stop().await;
}

// SUB-09: adding a tool at run time notifies listeners and shows in the list.
#[tokio::test]
async fn runtime_changes_are_delivered() {
    let (http, _) = start_default().await;
    let mut s = http
        .open(
            json!(2),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .await;
    s.next().await.unwrap();
    http.server
        .add_tool(ToolSpec::new("late").description("Added later"), || async {
            "late"
        })
        .unwrap();
    assert_eq!(
        s.next().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    let list = http.call("tools/list", json!({})).await.result();
    assert!(
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "late")
    );
    assert!(http.server.remove_tool("late"));
    assert_eq!(
        s.next().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    s.close();
    http.stop().await;
}

// Keep-alive comments on idle listen streams.
#[tokio::test]
async fn keep_alive_comments() {
    let (server, _) = server();
    let http = start(
        server,
        HttpOptions::new().keep_alive(Duration::from_millis(20)),
    )
    .await;
    let mut s = http
        .open(
            json!(3),
            "subscriptions/listen",
            json!({"notifications": {}}),
        )
        .await;
    s.next().await.unwrap();
    s.until_comments(3).await;
    assert!(s.comments() >= 3);
    s.close();
    http.stop().await;
}

#[tokio::test]
async fn listen_needs_a_filter() {
    let (http, _) = start_default().await;
    let r = http.call("subscriptions/listen", json!({})).await;
    assert_eq!(r.error_code(), -32602);
    http.stop().await;
}

/// Tokens `NAME-token` for the names in `admitted`; every check fails as
/// unavailable while `down` is set.
#[derive(Clone, Default)]
struct Revocable {
    admitted: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl switchboard_server::TokenValidator for Revocable {
    fn validate<'a>(
        &'a self,
        token: &'a str,
    ) -> switchboard_server::BoxFuture<
        'a,
        Result<switchboard_server::Principal, switchboard_server::AuthError>,
    > {
        let answer = if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            Err(switchboard_server::AuthError::Unavailable(
                "issuer down".into(),
            ))
        } else {
            match token.strip_suffix("-token") {
                Some(name) if self.admitted.lock().unwrap().iter().any(|n| n == name) => {
                    Ok(switchboard_server::Principal::new(name))
                }
                _ => Err(switchboard_server::AuthError::Unauthorized(
                    "unknown token".into(),
                )),
            }
        };
        Box::pin(std::future::ready(answer))
    }
}

/// A listen stream for tool-list changes opened with `token`.
async fn listen_as(http: &Http, token: &str, id: u64) -> Stream {
    let params = with_meta(json!({"notifications": {"toolsListChanged": true}}));
    let mut headers = standard_headers("subscriptions/listen", &params);
    headers.push(header("authorization", &format!("Bearer {token}")));
    let mut s = http
        .open_with(headers, body(json!(id), "subscriptions/listen", params))
        .await;
    assert_eq!(s.status, 200);
    assert_eq!(
        s.next().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    s
}

// A listen stream outlives no refusal of its token: once the validator
// refuses it (revoked), the stream ends without a closing result (so the
// client reconnects and meets the 401); streams of other tokens go on, and
// a validator that cannot answer for a while ends nothing.
#[tokio::test]
async fn a_listen_stream_ends_once_its_token_is_refused() {
    let validator = Revocable::default();
    validator
        .admitted
        .lock()
        .unwrap()
        .extend(["alice".to_owned(), "bob".to_owned()]);
    let (server, _) = server();
    let prm = switchboard_server::ProtectedResource::new(
        "http://127.0.0.1/mcp",
        "http://127.0.0.1:1/issuer",
    );
    let options = HttpOptions::new()
        .auth(validator.clone(), prm)
        .recheck_streams(Duration::from_millis(30));
    let http = start(server, options).await;
    let mut alice = listen_as(&http, "alice-token", 1).await;
    let mut bob = listen_as(&http, "bob-token", 2).await;

    // The issuer down for several checks: both streams stay.
    validator
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    validator
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    http.server.notifier().tools_list_changed();
    for s in [&mut alice, &mut bob] {
        assert_eq!(
            s.next().await.unwrap()["method"],
            "notifications/tools/list_changed"
        );
    }

    // alice's token revoked: her stream ends, with no closing result
    // (keep-alive comments would keep a stream that goes on open forever).
    validator.admitted.lock().unwrap().retain(|n| n != "alice");
    let ended = tokio::time::timeout(Duration::from_secs(10), alice.next()).await;
    assert_eq!(ended, Ok(None), "the stream went on");
    http.server.notifier().tools_list_changed();
    assert_eq!(
        bob.next().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    bob.close();
    http.stop().await;
}
