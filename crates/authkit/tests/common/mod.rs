//! What the end-to-end suites share: how long to wait on a shared machine,
//! an OAuth config whose user agent approves at once, a client of a
//! protected server authorized by an OAuth provider, and a bare
//! `tools/list` POST with credentials of the test's choosing.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_client::{Client, ClientError, HttpTransport};
use switchboard_oauth::{HeadlessUserAgent, OAuthConfig, OAuthProvider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous: the machine is shared and slow at times.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// The OAuth config of the server `name` at `url`, its user agent
/// approving at once.
pub(crate) fn headless_config(name: &str, url: &str) -> OAuthConfig {
    OAuthConfig::new(name, url)
        .user_agent(Arc::new(HeadlessUserAgent::new()))
        .timeout(WAIT)
}

/// A client of the server `name` at `url`, authorized by `provider`.
pub(crate) async fn connect(
    name: &str,
    url: &str,
    provider: &OAuthProvider,
) -> Result<Client, ClientError> {
    let transport = HttpTransport::builder(name, url)
        .auth(Arc::new(provider.clone()))
        .remember_era(false)
        .build()?;
    Client::builder(name, transport)
        .timeout(WAIT)
        .probe_timeout(WAIT)
        .connect()
        .await
}

/// A bare `tools/list` POST to `url` with `credentials` (header lines,
/// each ending in CRLF): the answer's status and its raw text.
pub(crate) async fn post_tools_list(url: &str, credentials: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
         {credentials}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(authority).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut raw))
        .await
        .expect("an answer")
        .unwrap();
    let status = raw.split(' ').nth(1).unwrap().parse().unwrap();
    (status, raw)
}

/// The value of the header `name` in a raw HTTP answer (empty if absent).
pub(crate) fn header_of(raw: &str, name: &str) -> String {
    raw.lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
        .unwrap_or_default()
}
