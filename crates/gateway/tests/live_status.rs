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

async fn client_as(url: &str, token: &str) -> switchboard_client::Client {
    let transport = switchboard_client::HttpTransport::builder("gateway", url)
        .header("Authorization", format!("Bearer {token}"))
        .build()
        .unwrap();
    switchboard_client::Client::builder("gateway", transport)
        .connect()
        .await
        .unwrap()
}

// Issue 36: status and instructions are the caller's own. A server that
// is down wrote a secret on its stderr: the operator's view has it
// (`Host::status`), no caller's does; a caller whose rules reach only `m`
// is told nothing of `db` at all, one without an entry is told it is down
// in fixed words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_sees_only_its_servers_and_never_their_stderr() {
    const SECRET: &str = "postgres://app:hunter2@db";
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {
                "m": stdio(&[]),
                "db": {"command": "sh", "args": ["-c", format!("echo 'cannot connect to {SECRET}' >&2; exit 3")]},
            },
            "permissions": {"allow": ["mcp__m", "mcp__db"]},
            "principals": {"narrow": {"allow": ["mcp__m__echo"]}},
        }))
        .await;
    // The operator's view quotes the stderr line.
    let operator = serde_json::to_string(&host.status()).unwrap();
    assert!(operator.contains(SECRET), "{operator}");

    let auth = switchboard_gateway::InboundAuth::tokens(
        switchboard_gateway::StaticTokens::parse(
            "narrow narrow-token-0123456789\nwide wide-token-0123456789",
            "test",
        )
        .unwrap(),
        "http://127.0.0.1/mcp",
    );
    let gateway = serve(&host, GatewayOptions::default().auth(auth)).await;

    let narrow = client_as(&gateway.url, "narrow-token-0123456789").await;
    let s = status(&narrow).await;
    let servers = s["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{s}");
    assert_eq!(servers[0]["alias"], "m");
    assert!(s["summary"].is_null(), "{s}");
    let text = instructions(&narrow).await;
    assert!(!text.contains("db"), "{text}");

    let wide = client_as(&gateway.url, "wide-token-0123456789").await;
    let s = status(&wide).await;
    let shown = s.to_string();
    assert!(!shown.contains("hunter2"), "{shown}");
    let db = s["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["alias"] == "db")
        .unwrap();
    assert_eq!(db["status"], "down", "{s}");
    assert_eq!(db["reason"], "the process exited", "{s}");
    assert!(
        s["summary"]
            .as_str()
            .unwrap()
            .contains("- db is down (the process exited)"),
        "{s}"
    );
    let text = instructions(&wide).await;
    assert!(text.contains("- db is down (the process exited)"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    narrow.close().await;
    wide.close().await;
    host.shutdown().await;
}
