//! Helpers: locate the testkit binaries, start the mock server, read its
//! request log, watch processes.

use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_testutil::{Artifacts, built};

use serde_json::{Value, json};
use switchboard_client::{
    BoxFuture, Client, ClientBuilder, InputContext, InputError, InputHandler, InputSupport,
    StdioConfig, StdioTransport,
};
use switchboard_wire::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ListRootsResult,
};

/// The path of a testkit binary, built for this test's profile
/// (`SWITCHBOARD_TESTKIT_BIN_DIR` names a directory to use instead).
pub(super) fn bin(name: &str) -> PathBuf {
    std::env::var_os("SWITCHBOARD_TESTKIT_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| built("switchboard-testkit", Artifacts::Bins))
        .join(name)
}

/// A stdio config for the mock server with these flags.
pub(super) fn mock(flags: &[&str]) -> StdioConfig {
    StdioConfig::new("mock", bin("mock-server")).args(flags.iter().copied())
}

/// Starts the mock server with these flags.
pub(super) async fn spawn(flags: &[&str]) -> StdioTransport {
    StdioTransport::spawn(mock(flags))
        .await
        .expect("spawn mock-server")
}

/// A client builder over the mock server with these flags, plus its
/// transport handle.
pub(super) async fn builder(flags: &[&str]) -> (ClientBuilder, StdioTransport) {
    let transport = spawn(flags).await;
    (
        Client::builder("mock", transport.clone()).timeout(Duration::from_secs(20)),
        transport,
    )
}

/// [`builder`] with the mock server logging every message to a fresh
/// [`log_path`]: the log's path, the builder, the transport.
pub(super) async fn logged_builder(flags: &[&str]) -> (PathBuf, ClientBuilder, StdioTransport) {
    let log = log_path();
    let mut flags = flags.to_vec();
    flags.extend(["--log", log.to_str().expect("a UTF-8 temp path")]);
    let (builder, transport) = builder(&flags).await;
    (log, builder, transport)
}

/// A connected client over the mock server with these flags.
pub(super) async fn connect(flags: &[&str]) -> (Client, StdioTransport) {
    let (builder, transport) = builder(flags).await;
    (builder.connect().await.expect("connect"), transport)
}

/// A fresh path for a request log. A file left there by an earlier
/// process with the same id (ids are reused) is removed first: the mock
/// appends, and its old lines would be read as this test's.
pub(super) fn log_path() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "switchboard-client-test-{}-{}.jsonl",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// Every message the mock server received, in order.
pub(super) fn read_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("log line is JSON"))
        .collect()
}

/// Requests of the log with this method.
pub(super) fn requests<'a>(log: &'a [Value], method: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|m| m["method"] == method && m.get("id").is_some())
        .collect()
}

/// Whether the process exists and is not a zombie.
pub(super) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.trim().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
    }
}

/// Waits up to `within` for the process to be gone.
pub(super) async fn gone(pid: u32, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

/// `builder` with the tasks extension and an input handler answering
/// every question: the client, and the methods it was asked.
pub(super) async fn answering_tasks(builder: ClientBuilder) -> (Client, Arc<Mutex<Vec<String>>>) {
    let answers = Answers::all();
    let asked = Arc::clone(&answers.asked);
    let client = builder
        .tasks(true)
        .input_handler(answers)
        .connect()
        .await
        .unwrap();
    (client, asked)
}

/// An input handler that answers everything it declares and records what
/// it was asked.
#[derive(Debug, Default)]
pub(super) struct Answers {
    pub(super) support: InputSupport,
    pub(super) asked: Arc<Mutex<Vec<String>>>,
}

impl Answers {
    pub(super) fn all() -> Self {
        Answers {
            support: InputSupport {
                elicitation_form: true,
                elicitation_url: false,
                sampling: true,
                sampling_tools: false,
                roots: true,
            },
            asked: Arc::default(),
        }
    }

    fn note(&self, what: &str) {
        self.asked.lock().unwrap().push(what.to_owned());
    }
}

impl InputHandler for Answers {
    fn support(&self) -> InputSupport {
        self.support
    }

    fn elicit(
        &self,
        _cx: InputContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, InputError>> {
        self.note("elicitation/create");
        assert!(!params.message.is_empty());
        Box::pin(async {
            Ok(ElicitResult::accept(
                json!({"ok": true}).as_object().cloned(),
            ))
        })
    }

    fn sample(
        &self,
        _cx: InputContext,
        _params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, InputError>> {
        self.note("sampling/createMessage");
        Box::pin(async {
            Ok(serde_json::from_value(
                json!({"role": "assistant", "content": {"type": "text", "text": "a summary"}, "model": "test-model"}),
            )
            .unwrap())
        })
    }

    fn roots(&self, _cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, InputError>> {
        self.note("roots/list");
        Box::pin(async {
            Ok(
                serde_json::from_value(json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]}))
                    .unwrap(),
            )
        })
    }
}
