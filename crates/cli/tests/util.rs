//! Running the binary in a sandbox: its own working directory and config
//! directory, so the built-in demo is what it finds unless a test writes a
//! config.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

/// Longest a command may run before the test kills it and fails.
const LIMIT: Duration = Duration::from_secs(120);

/// A working directory with no config in sight.
pub(crate) struct Sandbox {
    pub(crate) dir: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A command for the binary, run in the sandbox, with stdin closed.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(self.path())
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env("HOME", self.path())
            // Skill content is cached in the sandbox too.
            .env("XDG_CACHE_HOME", self.path().join("cache"))
            // OAuth logins live in the sandbox, and no browser is opened.
            .env("SWITCHBOARD_STATE_DIR", self.state_dir())
            .env("SWITCHBOARD_NO_BROWSER", "1")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("RUST_LOG")
            .env_remove("MCP_TOOL_TIMEOUT")
            .env_remove("MCP_TIMEOUT")
            .env_remove("MAX_MCP_OUTPUT_TOKENS")
            .stdin(Stdio::null());
        c
    }

    /// Where the binary keeps its per-user state (the OAuth token store).
    pub(crate) fn state_dir(&self) -> PathBuf {
        self.path().join("state")
    }

    /// Runs the binary to completion.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        run(self.cmd(args))
    }

    /// Writes `name` in the sandbox and returns its path.
    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Writes `turns` in `name` as the JSON lines a `script:` model reads:
    /// the model's name for `--model` or a config's `"model"`.
    pub(crate) fn script_model(&self, name: &str, turns: &[Value]) -> String {
        let lines: Vec<String> = turns.iter().map(Value::to_string).collect();
        let script = self.write(name, &lines.join("\n"));
        format!("script:{}", script.display())
    }

    /// `chat -p PROMPT --yes --json` (no `--config`) with the scripted
    /// model of `turns`: the run, which must exit 0, and the events it
    /// printed.
    pub(crate) fn scripted_chat(&self, turns: &[Value], prompt: &str) -> (Run, Vec<Value>) {
        let model = self.script_model("s.jsonl", turns);
        let run = self.run(&["chat", "--model", &model, "-p", prompt, "--yes", "--json"]);
        assert_eq!(run.code, 0, "{run:?}");
        let events = json_lines(&run.stdout);
        (run, events)
    }

    /// Writes a config naming the notes demo (stdio) and `extra` entries.
    pub(crate) fn config(&self, extra: Value, top: Value) -> PathBuf {
        let mut servers = serde_json::json!({
            "notes": {"command": bin(), "args": ["demo-server", "notes"]}
        });
        for (k, v) in extra.as_object().unwrap() {
            servers[k] = v.clone();
        }
        let mut config = serde_json::json!({ "mcpServers": servers });
        for (k, v) in top.as_object().unwrap() {
            config[k] = v.clone();
        }
        self.write("config.json", &config.to_string())
    }
}

/// A finished run.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// The one JSON error line on stderr.
    pub(crate) fn error_line(&self) -> Value {
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "want exactly one stderr line, got:\n{}",
            self.stderr
        );
        serde_json::from_str(lines[0]).unwrap()
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd`, killing it if it outlives [`LIMIT`].
pub(crate) fn run(mut cmd: Command) -> Run {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = spawn(&mut cmd);
    let output = wait_limited(child);
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Starts the binary under test.
pub(crate) fn spawn(cmd: &mut Command) -> Child {
    // The process under test is our own binary; the servers it starts go
    // through the client's spawn helper.
    #[allow(clippy::disallowed_methods)]
    let child = cmd.spawn().expect("the binary starts");
    child
}

fn wait_limited(child: Child) -> Output {
    let id = child.id();
    let done = Arc::new(Mutex::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < LIMIT {
            std::thread::sleep(Duration::from_millis(100));
            if *flag.lock().unwrap() {
                return;
            }
        }
        // Still running: kill it so the test fails instead of hanging.
        let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
    });
    let output = child.wait_with_output().unwrap();
    *done.lock().unwrap() = true;
    output
}

/// Each line of `stdout` as JSON (`chat --json` prints one event a line).
pub(crate) fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A loopback port with nothing listening on it.
pub(crate) fn empty_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Reads a child's pipe in the background into a shared buffer.
pub(crate) fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let out = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => out.lock().unwrap().extend_from_slice(&chunk[..n]),
            }
        }
    });
    buf
}

/// Waits until `buf` holds `needle` (as text), or panics after `limit`.
pub(crate) fn wait_for(buf: &Arc<Mutex<Vec<u8>>>, needle: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let text = String::from_utf8_lossy(&buf.lock().unwrap()).into_owned();
        if text.contains(needle) {
            return text;
        }
        assert!(
            start.elapsed() < limit,
            "{needle:?} did not appear; saw:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a browser does with `url` (plain `http://HOST:PORT/…`): one GET,
/// redirects not followed. Returns the status and the `Location` header.
pub(crate) fn browser_get(url: &str) -> (u16, Option<String>) {
    use std::io::Write;
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = match rest.split_once('/') {
        Some((host, path)) => (host, format!("/{path}")),
        None => (rest, "/".to_owned()),
    };
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response);
    let (head, _) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
    let location = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    (status, location)
}

/// The first MCP endpoint (an `http://` or `https://` URL ending in
/// `/mcp`) in `text`, a server's "listening on" line; a gateway names its
/// console first.
pub(crate) fn url_in(text: &str) -> String {
    text.split_whitespace()
        .find(|w| (w.starts_with("http://") || w.starts_with("https://")) && w.ends_with("/mcp"))
        .unwrap_or_else(|| panic!("no URL in {text:?}"))
        .to_owned()
}

/// The tickets demo server (`demo-server tickets`) on a free loopback
/// port, for configs of a test's own; stopped when dropped.
pub(crate) struct Tickets {
    child: Child,
    /// Its MCP endpoint.
    pub(crate) url: String,
}

impl Tickets {
    pub(crate) fn start(sb: &Sandbox) -> Tickets {
        let (child, url) = spawn_serving(&mut sb.cmd(&["demo-server", "tickets", "--port", "0"]));
        Tickets { child, url }
    }

    /// The config's server entry for it (`sb.config`'s `extra`).
    pub(crate) fn entry(&self) -> Value {
        serde_json::json!({"tickets": {"type": "http", "url": self.url}})
    }
}

impl Drop for Tickets {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `cmd`, a server that says where it listens on stderr, and waits
/// for that: the child and the URL of its MCP endpoint.
pub(crate) fn spawn_serving(cmd: &mut Command) -> (Child, String) {
    let (child, _, url) = spawn_serving_logged(cmd);
    (child, url)
}

/// [`spawn_serving`], keeping what the server writes on stderr (read on in
/// the background): the child, its stderr and its MCP endpoint's URL.
pub(crate) fn spawn_serving_logged(cmd: &mut Command) -> (Child, Arc<Mutex<Vec<u8>>>, String) {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = spawn(cmd);
    let stderr = collect(child.stderr.take().unwrap());
    let text = wait_for(&stderr, "/mcp", Duration::from_secs(60));
    (child, stderr, url_in(&text))
}
