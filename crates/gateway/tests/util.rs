//! Helpers: small MCP servers on loopback, a host mounting them, and the
//! gateway over HTTP with our client in front.

use std::time::Duration;

use serde_json::Value;
use switchboard_client::{Client, HttpTransport, InputHandler};
use switchboard_gateway::{Gateway, GatewayOptions};
use switchboard_host::TokenStore;
use switchboard_host::{ConfigLoader, Host, MountOptions};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Serves `server` over Streamable HTTP on loopback; returns its URL and
/// the guard that stops it.
pub(crate) use switchboard_testkit::fixtures::serve_http as serve;

/// A host mounting these `(alias, url)` servers, with its files in `dir`.
/// `input` is the mount-time input handler (what the host declares to the
/// servers).
pub(crate) async fn mount(
    dir: &tempfile::TempDir,
    servers: &[(&str, &str)],
    input: Option<std::sync::Arc<dyn InputHandler>>,
) -> Host {
    mount_with(dir, servers, input, serde_json::json!({})).await
}

/// [`mount`] with these `permissions`.
pub(crate) async fn mount_with(
    dir: &tempfile::TempDir,
    servers: &[(&str, &str)],
    input: Option<std::sync::Arc<dyn InputHandler>>,
    permissions: Value,
) -> Host {
    let mut map = serde_json::Map::new();
    for (alias, url) in servers {
        map.insert(
            (*alias).into(),
            serde_json::json!({"type": "http", "url": url}),
        );
    }
    mount_servers(dir, map, input, permissions).await
}

/// A host mounting these `mcpServers` entries (any transport), with its
/// files in `dir`.
pub(crate) async fn mount_servers(
    dir: &tempfile::TempDir,
    servers: serde_json::Map<String, Value>,
    input: Option<std::sync::Arc<dyn InputHandler>>,
    permissions: Value,
) -> Host {
    let config = serde_json::json!({
        "mcpServers": servers,
        "permissions": permissions,
        "audit": dir.path().join("audit.jsonl").display().to_string(),
    });
    mount_config(dir, config, input).await
}

/// [`mount`] where what a server adds after its first mount is offered at
/// once (`"newTools": "allow"`): for tests of how changes travel.
pub(crate) async fn mount_allowing_new(dir: &tempfile::TempDir, servers: &[(&str, &str)]) -> Host {
    let mut map = serde_json::Map::new();
    for (alias, url) in servers {
        map.insert(
            (*alias).into(),
            serde_json::json!({"type": "http", "url": url}),
        );
    }
    let config = serde_json::json!({
        "mcpServers": map,
        "newTools": "allow",
        "audit": dir.path().join("audit.jsonl").display().to_string(),
    });
    mount_config(dir, config, None).await
}

/// A host mounting the config `config`, written into `dir`.
async fn mount_config(
    dir: &tempfile::TempDir,
    config: Value,
    input: Option<std::sync::Arc<dyn InputHandler>>,
) -> Host {
    let path = dir.path().join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let config = ConfigLoader::new().explicit(path).load().unwrap();
    let mut options = MountOptions::default();
    options.token_store = Some(TokenStore::at(dir.path().join("oauth.json")));
    options.input_handler = input;
    Host::mount(config, options).await.unwrap()
}

/// The gateway over `host`, served on loopback, and our client connected
/// to it with `input` answering its questions.
pub(crate) struct Front {
    pub(crate) client: Client,
    pub(crate) _gateway: std::sync::Arc<Gateway>,
    _task: JoinHandle<()>,
}

pub(crate) async fn front(
    host: &Host,
    options: GatewayOptions,
    input: Option<Box<dyn InputHandler>>,
) -> Front {
    front_with(host, options, input, false).await
}

/// [`front`], the client declaring the tasks extension when `tasks`.
pub(crate) async fn front_with(
    host: &Host,
    options: GatewayOptions,
    input: Option<Box<dyn InputHandler>>,
    tasks: bool,
) -> Front {
    let gateway = std::sync::Arc::new(Gateway::new(host, options).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let g = gateway.clone();
    let task = tokio::spawn(async move {
        let _ = g.serve_http(listener, std::future::pending()).await;
    });
    let transport = HttpTransport::builder("gateway", &url).build().unwrap();
    let mut builder = Client::builder("gateway", transport)
        .timeout(Duration::from_secs(20))
        .tasks(tasks);
    if let Some(input) = input {
        builder = builder.input_handler(input);
    }
    let client = builder.connect().await.unwrap();
    Front {
        client,
        _gateway: gateway,
        _task: task,
    }
}

/// Polls `check` until it holds (a generous bound, never asserted as a
/// time).
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}

/// The text of a JSON object, for arguments.
pub(crate) fn object(v: Value) -> Option<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}
