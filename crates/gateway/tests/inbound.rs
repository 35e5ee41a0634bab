//! Named tokens replaced while the gateway serves: a caller whose token is
//! taken out loses its requests and its open listen stream; the others keep
//! both.

use std::time::Duration;

use serde_json::json;
use switchboard_client::{Client, HttpTransport};
use switchboard_gateway::{GatewayOptions, InboundAuth, StaticTokens};
use switchboard_wire::SubscriptionFilter;

use crate::harness::{Dir, serve, stdio};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-9876543210";

async fn client_as(url: &str, token: &str) -> Client {
    let transport = HttpTransport::builder("gateway", url)
        .header("Authorization", format!("Bearer {token}"))
        .build()
        .unwrap();
    Client::builder("gateway", transport)
        .timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap()
}

fn tokens(text: &str) -> StaticTokens {
    StaticTokens::parse(text, "test").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_taken_out_ends_its_callers_requests_and_listen_stream() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"mock": stdio(&[])},
            "permissions": {"allow": ["mcp__mock"]}
        }))
        .await;
    let auth = InboundAuth::tokens(
        tokens(&format!("alice {ALICE}\nbob {BOB}")),
        "http://127.0.0.1/mcp",
    );
    let mut options = GatewayOptions::default().auth(auth.clone());
    options.recheck_streams = Some(Duration::from_millis(50));
    let gateway = serve(&host, options).await;
    let alice = client_as(&gateway.url, ALICE).await;
    let bob = client_as(&gateway.url, BOB).await;
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let mut alice_listens = alice.listen(filter.clone()).await.unwrap();
    let mut bob_listens = bob.listen(filter).await.unwrap();

    // alice's token leaked: the list in use becomes bob's alone.
    let change = auth.replace_tokens(tokens(&format!("bob {BOB}"))).unwrap();
    assert_eq!(change.removed, ["alice"]);
    // Her stream ends; the client's reconnection meets the refusal.
    let ended = tokio::time::timeout(Duration::from_secs(20), alice_listens.next()).await;
    assert!(matches!(ended, Ok(None)), "{ended:?}");
    assert!(alice.list_all_tools().await.is_err());
    // bob goes on: requests, and his stream is still open.
    assert!(!bob.list_all_tools().await.unwrap().items.is_empty());
    let quiet = tokio::time::timeout(Duration::from_millis(500), bob_listens.next()).await;
    assert!(quiet.is_err(), "bob's stream ended: {quiet:?}");
    host.shutdown().await;
}
