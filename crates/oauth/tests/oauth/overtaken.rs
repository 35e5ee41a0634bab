//! Refusals that arrive after the token they refused was replaced: the
//! transport tells the provider which header the refused request carried,
//! and a refusal of a token that is no longer the current one is answered
//! with a plain retry, never a second refresh or login.
//!
//! The protected endpoint here is scripted (the HTTP tests' server) so one
//! request can be held while another one gets its token replaced; the
//! authorization server is `switchboard-authkit`'s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard_authkit::{AuthServer, AuthServerConfig};
use switchboard_client::{Client, HttpTransport};
use switchboard_oauth::{HeadlessUserAgent, OAuthConfig, OAuthProvider};
use tokio::sync::Notify;

use super::util::grant_types;
use crate::http_util::{Reply, Seen, accepted, json_reply, result_for, serve, text, within};

/// The scripted MCP endpoint: accepts any bearer token it has not been told
/// to refuse, and holds the first `tools/call` until released.
struct Endpoint {
    issuer: String,
    /// `Authorization` values refused (401 `invalid_token`) from now on.
    refused: Mutex<Vec<String>>,
    /// The `Authorization` the held `tools/call` carried, once it arrived.
    held: Mutex<Option<Option<String>>>,
    arrived: Notify,
    release: Notify,
}

impl Endpoint {
    async fn answer(&self, seen: Seen) -> Reply {
        // The endpoint's own origin, as the client addressed it.
        let base = format!("http://{}", seen.header("host").unwrap_or_default());
        let prm_path = "/.well-known/oauth-protected-resource/mcp";
        if seen.method == http::Method::GET && seen.path == prm_path {
            return json_reply(
                200,
                json!({"resource": format!("{base}/mcp"), "authorization_servers": [self.issuer]}),
            );
        }
        let authorization = seen.header("authorization");
        if seen.rpc_method().as_deref() == Some("tools/call") {
            let first = {
                let mut held = self.held.lock().unwrap();
                let first = held.is_none();
                if first {
                    *held = Some(authorization.clone());
                }
                first
            };
            if first {
                self.arrived.notify_one();
                self.release.notified().await;
            }
        }
        let refused = authorization
            .as_ref()
            .is_none_or(|a| self.refused.lock().unwrap().contains(a));
        if refused {
            let mut challenge = format!("Bearer resource_metadata=\"{base}{prm_path}\"");
            if authorization.is_some() {
                challenge.push_str(", error=\"invalid_token\"");
            }
            let mut reply = text(401, "", "");
            reply
                .headers_mut()
                .insert("www-authenticate", challenge.parse().unwrap());
            return reply;
        }
        let result = match seen.rpc_method().as_deref() {
            Some("server/discover") => json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "held", "version": "1.0.0"}},
            }),
            Some("tools/list") => json!({
                "tools": [{"name": "whoami", "inputSchema": {"type": "object"}}],
                "resultType": "complete",
            }),
            Some("tools/call") => json!({
                "content": [{"type": "text", "text": "ok"}],
                "resultType": "complete",
            }),
            _ => return accepted(),
        };
        json_reply(200, result_for(&seen, result))
    }

    /// Refuses, from now on, the token the held call carried.
    fn refuse_held(&self) {
        let held = self.held.lock().unwrap().clone().flatten();
        self.refused
            .lock()
            .unwrap()
            .push(held.expect("the held call carried a token"));
    }
}

// Two requests carry token T1. One is held; the other is refused, so the
// provider refreshes to T2 and that request goes through. Then the held one
// is refused for T1 as well: the provider is told it carried T1, which is
// no longer current, and only retries with T2. Judged by the provider's
// current token alone (without the sent header), this late refusal looks
// like a refusal of T2 and costs a second login.
#[tokio::test]
async fn a_refusal_that_overtook_a_refresh_just_retries() {
    let auth = AuthServer::start(AuthServerConfig::default()).await;
    let endpoint = Arc::new(Endpoint {
        issuer: auth.issuer(),
        refused: Mutex::new(Vec::new()),
        held: Mutex::new(None),
        arrived: Notify::new(),
        release: Notify::new(),
    });
    let handler = endpoint.clone();
    let server = serve(move |seen| {
        let handler = handler.clone();
        async move { handler.answer(seen).await }
    })
    .await;
    let provider = OAuthProvider::new(
        OAuthConfig::new("test", server.url())
            .user_agent(Arc::new(HeadlessUserAgent::new()))
            .timeout(Duration::from_secs(20)),
    )
    .unwrap();
    let transport = HttpTransport::builder("test", server.url())
        .auth(Arc::new(provider))
        .remember_era(false)
        .build()
        .unwrap();
    let client = within(
        Client::builder("test", transport)
            .timeout(Duration::from_secs(30))
            .probe_timeout(Duration::from_secs(30))
            .connect(),
    )
    .await
    .unwrap();
    assert_eq!(grant_types(&auth), ["authorization_code"]);

    let held = client.call_tool("whoami", None);
    let meanwhile = async {
        endpoint.arrived.notified().await;
        endpoint.refuse_held();
        client.list_all_tools().await.unwrap();
        endpoint.release.notify_one();
    };
    let (called, ()) = within(async { tokio::join!(held, meanwhile) }).await;
    assert_eq!(called.unwrap().joined_text(), "ok");

    // One refresh for the two refusals of T1, and no second authorization.
    assert_eq!(grant_types(&auth), ["authorization_code", "refresh_token"]);
    assert_eq!(auth.authorization_requests().len(), 1);
    let sent = |method: &str| -> Vec<Option<String>> {
        server
            .posts(method)
            .iter()
            .map(|s| s.header("authorization"))
            .collect()
    };
    let calls = sent("tools/call");
    let lists = sent("tools/list");
    assert_eq!(calls.len(), 2, "the held call was sent again once");
    assert_eq!(calls[0], lists[0], "both went out with T1");
    assert_ne!(calls[1], calls[0]);
    assert_eq!(calls[1], lists[1], "the retry carries the refreshed T2");
    client.close().await;
}
