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
