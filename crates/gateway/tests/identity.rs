//! The gateway's own identity: a relayed result carries the gateway's
//! `serverInfo`, never the downstream server's.

use serde_json::json;
use switchboard_gateway::GatewayOptions;
use switchboard_host::CallOptions;
use switchboard_wire::meta::SERVER_INFO;

use crate::harness::*;

// WIRE-17, WIRE-18: the gateway's serverInfo on every result it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_results_carry_the_gateways_server_info() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"m": stdio(&["--name", "downstream-impostor"])},
            "permissions": {"allow": ["mcp__m"]},
        }))
        .await;
    // The downstream does set its own serverInfo on its results.
    let direct = host
        .call(
            "mcp__m__echo",
            args(json!({"text": "hi"})),
            CallOptions::default(),
        )
        .await;
    let meta = direct.header.meta.clone().unwrap_or_default();
    assert_eq!(meta[SERVER_INFO]["name"], "downstream-impostor", "{meta:?}");

    let gateway = serve(&host, GatewayOptions::default()).await;
    let client = client(&gateway.url, None).await;
    let relayed = client
        .call_tool("mcp__m__echo", args(json!({"text": "hi"})))
        .await
        .unwrap();
    assert!(!relayed.is_error(), "{relayed:?}");
    let meta = relayed.header.meta.clone().unwrap_or_default();
    assert_eq!(meta[SERVER_INFO]["name"], "switchboard", "{meta:?}");
    assert!(
        !serde_json::to_string(&relayed)
            .unwrap()
            .contains("downstream-impostor")
    );
    client.close().await;
    host.shutdown().await;
}
