//! A hostile Skills server over Streamable HTTP: it serves whatever entries
//! and bytes a test gives it (wrong digests, sizes, frontmatter, files its
//! entry does not list, 513 files), counts every `resources/read`, and can
//! die in the middle of one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::util::{Serving, complete, json_body, respond, serve_loopback};

/// The `sha256:` digest of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// A `SKILL.md` with `name` and `description` (and `extra` frontmatter
/// lines), then `body`.
pub(crate) fn skill_md(name: &str, description: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}")
}

/// A skill at `skill://PATH`, its files as `(relative path, bytes)` with
/// `SKILL.md` first: the entry (true digests and sizes) and the files by
/// URI.
pub(crate) fn skill(path: &str, files: &[(&str, &[u8])]) -> (Value, Vec<(String, Vec<u8>)>) {
    let name = path.rsplit('/').next().unwrap();
    let skill_md = String::from_utf8(files[0].1.to_vec()).unwrap();
    let front: String = skill_md
        .lines()
        .skip(1)
        .take_while(|l| *l != "---")
        .collect::<Vec<_>>()
        .join("\n");
    let mut frontmatter = serde_json::Map::new();
    for line in front.lines() {
        if let Some((k, v)) = line.split_once(": ") {
            frontmatter.insert(k.to_owned(), Value::from(v));
        }
    }
    assert_eq!(frontmatter["name"], name);
    let mut resources = Vec::new();
    let mut served = Vec::new();
    for (rel, bytes) in files {
        let uri = format!("skill://{path}/{rel}");
        resources.push(json!({"uri": uri, "digest": digest(bytes), "size": bytes.len()}));
        served.push((uri, bytes.to_vec()));
    }
    let entry = json!({
        "uri": format!("skill://{path}/SKILL.md"),
        "frontmatter": frontmatter,
        "resources": resources,
    });
    (entry, served)
}

/// A skill at `skill://PATH` whose one file is its SKILL.md, `md`.
pub(crate) fn md_skill(path: &str, md: &str) -> (Value, Vec<(String, Vec<u8>)>) {
    skill(path, &[("SKILL.md", md.as_bytes())])
}

/// What the server serves, and what it saw.
#[derive(Debug, Default)]
pub(crate) struct SkillState {
    /// Entries of `skills/list`.
    pub(crate) listed: Mutex<Vec<Value>>,
    /// Entries `skills/get` answers (the listed ones and these).
    pub(crate) unlisted: Mutex<Vec<Value>>,
    /// Bytes `resources/read` serves, by URI.
    pub(crate) files: Mutex<BTreeMap<String, Vec<u8>>>,
    /// Children `resources/directory/read` lists, by directory URI.
    pub(crate) dirs: Mutex<BTreeMap<String, Vec<Value>>>,
    /// Every `resources/read` URI, in order.
    pub(crate) reads: Mutex<Vec<String>>,
    pub(crate) gets: AtomicUsize,
    pub(crate) lists: AtomicUsize,
    /// A read of this URI kills the server (connections dropped, every
    /// later request refused).
    pub(crate) die_on: Mutex<Option<String>>,
    dead: AtomicBool,
    /// `ttlMs` of the listings (0 unless set).
    pub(crate) ttl_ms: Mutex<u64>,
}

impl SkillState {
    /// Serves a skill: its entry listed, its files readable.
    pub(crate) fn add(&self, (entry, files): (Value, Vec<(String, Vec<u8>)>)) {
        self.listed.lock().unwrap().push(entry);
        self.files.lock().unwrap().extend(files);
    }

    /// Serves a skill whose one file is its SKILL.md, `md`.
    pub(crate) fn add_md(&self, path: &str, md: &str) {
        self.add(md_skill(path, md));
    }

    pub(crate) fn reads(&self) -> Vec<String> {
        self.reads.lock().unwrap().clone()
    }
}

/// The server, on 127.0.0.1.
pub(crate) struct SkillServer {
    pub(crate) url: String,
    pub(crate) state: Arc<SkillState>,
    _serving: Serving,
}

impl SkillServer {
    pub(crate) async fn start() -> SkillServer {
        let state = Arc::new(SkillState::default());
        let st = state.clone();
        let (url, _serving) = serve_loopback(move |req| handle(st.clone(), req)).await;
        SkillServer {
            url,
            state,
            _serving,
        }
    }

    /// The server's config entry.
    pub(crate) fn entry(&self) -> Value {
        json!({"type": "http", "url": self.url, "oauth": false})
    }
}

/// Why a request got no answer: the server died.
#[derive(Debug)]
struct Died;

impl std::fmt::Display for Died {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server died")
    }
}

impl std::error::Error for Died {}

async fn handle(
    state: Arc<SkillState>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Died> {
    if state.dead.load(Ordering::SeqCst) {
        return Err(Died);
    }
    let msg = json_body(req).await;
    let reply = |body: Value| -> Result<hyper::Response<Full<Bytes>>, Died> {
        Ok(respond(200, "application/json", body.to_string()))
    };
    let Some(id) = msg.get("id").cloned() else {
        return Ok(respond(202, "text/plain", String::new()));
    };
    let error = |code: i64, message: String| {
        reply(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    };
    let params = &msg["params"];
    let ttl = *state.ttl_ms.lock().unwrap();
    let result = match msg["method"].as_str().unwrap_or("") {
        "server/discover" => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {
                "tools": {},
                "resources": {},
                "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}},
            },
            "ttlMs": 0, "cacheScope": "public",
        }),
        "tools/list" => json!({
            "tools": [
                {"name": "danger", "description": "Deletes things.", "inputSchema": {"type": "object"}},
                {"name": "note", "description": "Writes a note.", "inputSchema": {"type": "object"}},
            ],
            "ttlMs": 0, "cacheScope": "public",
        }),
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or("");
            json!({"content": [{"type": "text", "text": format!("{name} ran with {}", params["arguments"])}]})
        }
        "resources/list" => json!({"resources": [], "ttlMs": 0, "cacheScope": "public"}),
        "resources/templates/list" => {
            json!({"resourceTemplates": [], "ttlMs": 0, "cacheScope": "public"})
        }
        "skills/list" => {
            state.lists.fetch_add(1, Ordering::SeqCst);
            json!({"skills": state.listed.lock().unwrap().clone(), "ttlMs": ttl, "cacheScope": "public"})
        }
        "skills/get" => {
            state.gets.fetch_add(1, Ordering::SeqCst);
            let uri = params["uri"].as_str().unwrap_or("");
            let found = state
                .listed
                .lock()
                .unwrap()
                .iter()
                .chain(state.unlisted.lock().unwrap().iter())
                .find(|s| s["uri"] == uri)
                .cloned();
            match found {
                Some(skill) => json!({"skill": skill, "ttlMs": ttl, "cacheScope": "public"}),
                None => return error(-32602, format!("no skill is served at {uri}")),
            }
        }
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap_or("").to_owned();
            state.reads.lock().unwrap().push(uri.clone());
            if state.die_on.lock().unwrap().as_deref() == Some(uri.as_str()) {
                state.dead.store(true, Ordering::SeqCst);
                return Err(Died);
            }
            let bytes = state.files.lock().unwrap().get(&uri).cloned();
            match bytes {
                Some(bytes) => json!({
                    "contents": [{"uri": uri, "text": String::from_utf8_lossy(&bytes)}],
                    "ttlMs": 0, "cacheScope": "public",
                }),
                None => return error(-32602, format!("no resource {uri}")),
            }
        }
        "resources/directory/read" => {
            let uri = params["uri"].as_str().unwrap_or("");
            match state.dirs.lock().unwrap().get(uri) {
                Some(children) => json!({"resources": children}),
                None => return error(-32602, format!("{uri} is not a directory resource")),
            }
        }
        other => return error(-32601, format!("method not found: {other}")),
    };
    reply(complete(id, result, "skill-test"))
}
