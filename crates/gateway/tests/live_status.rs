//! Live status: the instructions and `switchboard://status` follow the
//! servers' state after start.

use serde_json::{Value, json};
use switchboard_gateway::{GatewayOptions, STATUS_URI};

use crate::harness::*;

async fn status(client: &switchboard_client::Client) -> Value {
    let read = client.read_resource(STATUS_URI).await.unwrap();
    serde_json::from_str(read.contents[0].text.as_deref().unwrap()).unwrap()
}

async fn instructions(client: &switchboard_client::Client) -> String {
    client
        .discover()
        .await
        .unwrap()
        .instructions
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_and_the_status_resource_follow_an_outage_and_its_end() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&[]), "other": stdio(&["--name", "other"])},
            "permissions": {"allow": ["mcp__m", "mcp__other"]},
        }))
        .await;
    let gateway = serve(&host, GatewayOptions::default()).await;
    let client = client(&gateway.url, None).await;

    // All up.
    assert!(!instructions(&client).await.contains("unavailable"));
    let s = status(&client).await;
    assert_eq!(s["servers"][0]["alias"], "m");
    assert_eq!(s["servers"][0]["status"], "up");
    assert!(s["summary"].is_null(), "{s}");
    let resources = client.list_all_resources().await.unwrap().items;
    assert!(resources.iter().any(|r| r.uri == STATUS_URI));

    // m goes down after start (its process exits mid-call).
    let r = client
        .call_tool("mcp__m__crash", args(json!({"code": 3})))
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    let text = instructions(&client).await;
    assert!(text.contains("- m is down"), "{text}");
    assert!(!text.contains("- other"), "{text}");
    let s = status(&client).await;
    assert_eq!(s["servers"][0]["status"], "down", "{s}");
    assert!(s["servers"][0]["reason"].is_string(), "{s}");
    assert_eq!(s["servers"][1]["status"], "up", "{s}");
    assert!(
        s["summary"].as_str().unwrap().contains("- m is down"),
        "{s}"
    );

    // The next call brings it back: both clear.
    let r = client
        .call_tool("mcp__m__echo", args(json!({"text": "back"})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert!(!instructions(&client).await.contains("unavailable"));
    let s = status(&client).await;
    assert_eq!(s["servers"][0]["status"], "up", "{s}");
    assert!(s["summary"].is_null(), "{s}");
    client.close().await;
    host.shutdown().await;
}
