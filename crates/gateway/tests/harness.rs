//! What the gateway tests share: a config folder with the testkit's mock
//! server, a gateway served over HTTP on loopback (also to named callers
//! with bearer tokens), a client that answers approval questions, the
//! audit log's lines.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_client::{Client, HttpTransport, InputHandler};
use switchboard_gateway::{Gateway, GatewayOptions, InboundAuth, StaticTokens};
use switchboard_host::TokenStore;
use switchboard_host::{ConfigLoader, Host, MountOptions};
use switchboard_testutil::{Artifacts, built};
use tokio::sync::oneshot;

/// The mock server's path, for config files.
pub(crate) fn mock() -> String {
    built("switchboard-testkit", Artifacts::Bins)
        .join("mock-server")
        .display()
        .to_string()
}

/// A stdio server entry running the mock server with `flags`.
pub(crate) fn stdio(flags: &[&str]) -> Value {
    json!({"command": mock(), "args": flags})
}

/// A tool definition for a tools file.
pub(crate) fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

/// A temporary folder with the config (`.mcp.json`), the lockfile, the
/// audit log (`audit.jsonl`) and tools files.
pub(crate) struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    pub(crate) fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a tools file for `--tools-file`; returns its path.
    pub(crate) fn tools(&self, name: &str, tools: Value) -> String {
        let path = self.path(name);
        std::fs::write(&path, tools.to_string()).unwrap();
        path.display().to_string()
    }

    /// Writes the config (with the audit log beside it) and mounts it.
    pub(crate) async fn mount(&self, config: Value) -> Host {
        self.mount_with(config, None).await
    }

    /// [`Dir::mount`] with `input` as the mount-time input handler.
    pub(crate) async fn mount_with(
        &self,
        mut config: Value,
        input: Option<Arc<dyn InputHandler>>,
    ) -> Host {
        config["audit"] = json!("audit.jsonl");
        let path = self.path(".mcp.json");
        std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
        let config = ConfigLoader::new()
            .explicit(path)
            .vars(BTreeMap::new())
            .load()
            .unwrap();
        let mut options = MountOptions::default();
        options.token_store = Some(TokenStore::at(self.path("state").join("oauth.json")));
        options.input_handler = input;
        Host::mount(config, options).await.unwrap()
    }

    /// The audit log's lines.
    pub(crate) fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// A gateway served over Streamable HTTP on loopback, until dropped.
pub(crate) struct Running {
    pub(crate) url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves `host` through a gateway on `127.0.0.1:0`.
pub(crate) async fn serve(host: &Host, options: GatewayOptions) -> Running {
    let gateway = Gateway::new(host, options).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let _ = gateway.serve_http(listener, shutdown).await;
    });
    Running {
        url,
        stop: Some(stop),
    }
}

/// A client of the gateway; with `answer`, it declares form elicitation
/// and answers approval questions.
pub(crate) async fn client(url: &str, answer: Option<Answer>) -> Client {
    let transport = HttpTransport::builder("gateway", url).build().unwrap();
    let mut builder = Client::builder("gateway", transport).timeout(Duration::from_secs(60));
    if let Some(answer) = answer {
        builder = builder.input_handler(answer);
    }
    builder.connect().await.unwrap()
}

/// Answers the gateway's approval question, recording each one (the shared
/// fixture).
pub(crate) use switchboard_testkit::fixtures::FormAnswers as Answer;

/// Arguments as a call takes them.
pub(crate) fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// alice's bearer token, for gateways with named callers.
pub(crate) const ALICE: &str = "alice-token-0123456789";
/// bob's bearer token.
pub(crate) const BOB: &str = "bob-token-9876543210";

/// Named tokens parsed from `text` (`NAME TOKEN` per line).
pub(crate) fn tokens(text: &str) -> StaticTokens {
    StaticTokens::parse(text, "test").unwrap()
}

/// Inbound auth for the callers of `lines` (`NAME TOKEN` per line), as a
/// gateway at `http://127.0.0.1/mcp` checks them.
pub(crate) fn callers(lines: &str) -> InboundAuth {
    InboundAuth::tokens(tokens(lines), "http://127.0.0.1/mcp")
}

/// A client of the gateway at `url` presenting `token`.
pub(crate) async fn client_as(url: &str, token: &str) -> Client {
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

/// Serves `host` through a gateway admitting the callers `(name, token)`,
/// and a client of it for each caller, in order.
pub(crate) async fn serve_callers<const N: usize>(
    host: &Host,
    named: [(&str, &str); N],
) -> (Running, [Client; N]) {
    let lines: Vec<String> = named
        .iter()
        .map(|(name, token)| format!("{name} {token}"))
        .collect();
    let gateway = serve(
        host,
        GatewayOptions::default().auth(callers(&lines.join("\n"))),
    )
    .await;
    let mut clients = Vec::new();
    for (_, token) in named {
        clients.push(client_as(&gateway.url, token).await);
    }
    let clients = clients
        .try_into()
        .unwrap_or_else(|_| unreachable!("one client per caller"));
    (gateway, clients)
}
