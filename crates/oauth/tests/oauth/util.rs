//! Shared set-up for the OAuth tests: the test authorization server and
//! protected MCP endpoint from `switchboard-authkit`, a provider with the
//! headless user agent, and a real `Client` over the real HTTP transport.

use std::sync::Arc;
use std::time::Duration;

use switchboard_authkit::{
    AuthServer, AuthServerConfig, ResourceConfig, ResourceServer, Seen, TestClient,
};
use switchboard_client::{Client, ClientError, HttpTransport};
use switchboard_oauth::{HeadlessUserAgent, OAuthConfig, OAuthProvider, TokenStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An authorization server and the endpoint it protects.
pub(crate) struct Servers {
    pub(crate) auth: AuthServer,
    pub(crate) mcp: ResourceServer,
}

pub(crate) async fn servers(auth: AuthServerConfig, mcp: ResourceConfig) -> Servers {
    let auth = AuthServer::start(auth).await;
    let mcp = ResourceServer::start(mcp, &auth).await;
    Servers { auth, mcp }
}

pub(crate) async fn default_servers() -> Servers {
    servers(AuthServerConfig::default(), ResourceConfig::default()).await
}

/// [`servers`] with the default endpoint.
pub(crate) async fn auth_servers(auth: AuthServerConfig) -> Servers {
    servers(auth, ResourceConfig::default()).await
}

/// [`servers`] whose authorization server takes no registration, with the
/// confidential client `id` (its `secret`) registered beforehand.
pub(crate) async fn servers_with_client(id: &str, secret: &str) -> Servers {
    let s = auth_servers(AuthServerConfig {
        registration: false,
        ..Default::default()
    })
    .await;
    s.add_basic_client(id, secret);
    s
}

impl Servers {
    /// Registers the confidential client `id` (its `secret`), redirecting
    /// to loopback.
    pub(crate) fn add_basic_client(&self, id: &str, secret: &str) {
        self.auth.add_client(TestClient::basic(
            id,
            secret,
            &["http://127.0.0.1/callback"],
        ));
    }
}

/// A token store in the file `oauth.json` of `dir`.
pub(crate) fn store_in(dir: &tempfile::TempDir) -> TokenStore {
    TokenStore::at(dir.path().join("oauth.json"))
}

/// The configuration the tests start from: headless user agent, memory
/// store, short timeouts.
pub(crate) fn config(mcp: &ResourceServer) -> OAuthConfig {
    OAuthConfig::new("test", mcp.url())
        .user_agent(Arc::new(HeadlessUserAgent::new()))
        .timeout(Duration::from_secs(20))
}

pub(crate) fn provider(config: OAuthConfig) -> OAuthProvider {
    OAuthProvider::new(config).unwrap()
}

/// A `Client` over the HTTP transport with `provider` as its auth hook.
pub(crate) async fn connect(
    mcp: &ResourceServer,
    provider: &OAuthProvider,
) -> Result<Client, ClientError> {
    let transport = HttpTransport::builder("test", mcp.url())
        .auth(Arc::new(provider.clone()))
        .remember_era(false)
        .build()?;
    Client::builder("test", transport)
        .timeout(Duration::from_secs(30))
        .probe_timeout(Duration::from_secs(30))
        .connect()
        .await
}

/// Connects, lists tools and calls `whoami`; returns the tool's text.
pub(crate) async fn round_trip(
    mcp: &ResourceServer,
    provider: &OAuthProvider,
) -> Result<String, ClientError> {
    let client = connect(mcp, provider).await?;
    let tools = client.list_all_tools().await?;
    assert_eq!(tools.items[0].name, "whoami");
    let result = client.call_tool("whoami", None).await?;
    client.close().await;
    Ok(result.joined_text())
}

/// The `grant_type` of every token request the server received, in order.
pub(crate) fn grant_types(auth: &AuthServer) -> Vec<String> {
    auth.token_requests()
        .iter()
        .map(|r| r.form_param("grant_type").unwrap_or("").to_owned())
        .collect()
}

/// The space-separated `scope` of a request, split.
pub(crate) fn scopes(seen: &Seen, name: &str) -> Option<Vec<String>> {
    seen.query_param(name)
        .or_else(|| seen.form_param(name))
        .map(|s| s.split(' ').map(str::to_owned).collect())
}

/// What a browser does with the authorization URL: GET it, follow the
/// redirect to the loopback listener, read that page.
pub(crate) async fn browse(url: String) -> String {
    let (status, location) = get(&url).await;
    assert_eq!(status, 302, "the authorization endpoint redirects");
    let (status, _) = get(&location.expect("a Location")).await;
    format!("{status}")
}

async fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest
        .split_once('/')
        .map(|(a, p)| (a, format!("/{p}")))
        .unwrap();
    let mut stream = TcpStream::connect(authority).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let location = response
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .map(str::to_owned);
    (status, location)
}
