//! The audit log: one hash-chained JSON line per governed request (a tool
//! call, and a prompt get, a read or a completion, which name their
//! `method`).
//!
//! Every line carries `seq` (1, 2, …), `prev` (sha256 of the previous line,
//! 64 zeros for the first) and, last, `hash` (sha256 of the line up to
//! `,"hash"`). Editing a line breaks its own hash (and, if the editor
//! recomputes it, the next line's `prev`); deleting one breaks the next
//! line's `prev` and the `seq` run. [`verify`] reports both. Removing lines
//! from the end leaves a shorter valid chain; compare [`VerifyReport::head`]
//! with a copy kept elsewhere to catch that.
//!
//! A line is written (under an exclusive file lock shared with other
//! Switchboard processes) before the call's result is returned, so none is
//! dropped under load. A log writing lines back to back keeps the lock
//! between them for a few milliseconds (`lease`), so other processes wait
//! that long at most. Calls that end together share one write
//! ([`AuditLog::append_grouped`]): the first waits for the others once and
//! writes every waiting line under one lock, each caller still returning
//! only when its own line is in the file. A call that is the only one in
//! flight ([`AuditLog::call_in_flight`]) has nobody to wait for and writes
//! at once. Arguments are recorded as their field names and a sha256 of
//! their canonical JSON, never their values.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Instant, SystemTime};

use switchboard_wire::shared::lock;
use tokio::sync::oneshot;

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_wire::JsonObject;

use crate::HostError;
use crate::digest::{
    canonical_object_sha256, canonical_sha256, sha256_hex, sha256_hex_then_extended,
};

mod find;
mod lease;
mod rotate;
mod verify;

pub(crate) use find::holds_task_line;
pub use rotate::{Rotation, archives_of};
pub use verify::{VerifyProblem, VerifyReport, verify};

const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const HASH_KEY: &str = ",\"hash\":\"";

/// What became of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and succeeded.
    Ok,
    /// The tool ran and reported `isError: true`.
    ToolError,
    /// The server answered with a JSON-RPC error, or broke the protocol.
    ProtocolError,
    /// No answer within the timeout.
    Timeout,
    /// The server could not be reached, or the connection broke.
    Transport,
    /// The gate said no.
    Denied,
    /// The server's breaker is open; the call was not sent.
    Breaker,
    /// The model named a tool that is not in the table.
    UnknownTool,
    /// The server needs authorization first (an OAuth login, or valid
    /// credentials); the call did not run.
    AuthRequired,
    /// The server asked a question that was relayed to the caller
    /// (`relay_input` in [`crate::CallOptions::request`]); the retry with the answers is
    /// a call (and a line) of its own.
    InputRequired,
    /// The gate asked and the approver handed the question back to the
    /// caller ([`crate::Approval::Defer`]: the gateway put it to its
    /// upstream user); the call did not run. The answer comes as another
    /// call, with its own line.
    Asked,
    /// The caller was over one of its limits (`callerLimits`, a
    /// principal's `limits`); the call did not run.
    Limited,
}

impl Outcome {
    /// The outcome as the audit log writes it (`ok`, `tool_error`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::ProtocolError => "protocol_error",
            Outcome::Timeout => "timeout",
            Outcome::Transport => "transport",
            Outcome::Denied => "denied",
            Outcome::Breaker => "breaker",
            Outcome::UnknownTool => "unknown_tool",
            Outcome::AuthRequired => "auth_required",
            Outcome::InputRequired => "input_required",
            Outcome::Asked => "asked",
            Outcome::Limited => "limited",
        }
    }

    /// Whether the call was refused by policy (the rules, or the caller's
    /// limits) rather than failing: not an error of the tool or server.
    pub fn is_refusal(self) -> bool {
        matches!(self, Outcome::Denied | Outcome::Limited)
    }

    /// Whether the request was handed back to its caller unfinished (a
    /// question for the upstream user, [`Outcome::Asked`], or a server's
    /// relayed question, [`Outcome::InputRequired`]): not a call of its
    /// own, since the answered retry has a line of its own. Figures
    /// (`audit stats`, the gateway's metrics) leave such lines out.
    pub fn is_handed_back(self) -> bool {
        matches!(self, Outcome::Asked | Outcome::InputRequired)
    }

    /// Whether the call failed: anything but ok, a refusal or a request
    /// handed back. Failures are what error rates count, by the kind
    /// [`Outcome::as_str`] names.
    pub fn is_error(self) -> bool {
        !(self == Outcome::Ok || self.is_refusal() || self.is_handed_back())
    }

    /// Whether this outcome counts against the server's breaker.
    pub fn is_failure_of_server(self) -> bool {
        matches!(self, Outcome::Timeout | Outcome::Transport)
    }
}

/// Who made the gate's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decider {
    /// A permission rule; `rule` names where it is written.
    Rule,
    /// A person answered the prompt.
    Human,
    /// `--yes` answered the question.
    #[serde(rename = "--yes")]
    Yes,
    /// No one could be asked (no terminal, no `--yes`).
    NoApprover,
    /// The question was handed back to be put to the gateway's upstream
    /// user ([`crate::Approval::Defer`]).
    Upstream,
    /// No decision was needed (unknown tool, breaker open).
    None,
}

/// The `method` of the audit line a person's acceptance of a changed
/// definition leaves ([`crate::Host::accept_pins_by`]): not a call.
pub(crate) const PINS_ACCEPT_METHOD: &str = "pins/accept";

/// One call, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// When the call started (RFC 3339, UTC).
    pub time: String,
    /// The gateway replica that served the call (`serve --replica`), so
    /// the logs of several replicas can be told apart; part of the hashed
    /// line like every field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The server's alias (`null` for an unknown tool).
    pub alias: Option<String>,
    /// The model-facing name called (the served name of a prompt or of
    /// what a completion is for, the URI read).
    pub tool: String,
    /// The request's method when it is not a tool call (`prompts/get`,
    /// `resources/read`, `completion/complete`); absent for `tools/call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The name (or URI) sent to the server.
    pub original_tool: Option<String>,
    /// Top-level argument field names, in the order given.
    pub argument_names: Vec<String>,
    /// sha256 of the canonical (key-sorted, compact) arguments.
    pub arguments_sha256: String,
    /// `allow` or `deny`; `null` when no decision was made.
    pub decision: Option<String>,
    /// Who decided.
    pub decided_by: Decider,
    /// The deciding rule's place in the config, when a rule decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// What happened.
    pub outcome: Outcome,
    /// The result's `isError`.
    pub is_error: bool,
    /// Wall time of the call, in milliseconds.
    pub duration_ms: u64,
    /// The task the server turned the call into (tasks extension), if any;
    /// the outcome is the task's final one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who called, when the call came through an authenticated gateway
    /// (the token's name or subject); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The identity the call carried to its server when the server takes
    /// each caller's own (`"identity"`): `exchange:NAME` (a token
    /// exchanged for the caller) or `principal:NAME` (the principal's
    /// credentials); absent for the gateway's own. Never a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// Why the server's sandbox stopped it, when the call failed because
    /// it did (a limit, a refused mechanism): the host's words, never the
    /// server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The call was sent a second time, after the connection broke before
    /// its answer (a tool the config's `idempotent` names); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retried: bool,
}

impl AuditRecord {
    /// A record for a call with `arguments`, starting now; the caller fills
    /// in the decision and outcome.
    pub fn new(tool: &str, arguments: Option<&Value>) -> AuditRecord {
        let (argument_names, arguments_sha256) = match arguments {
            Some(Value::Object(m)) => (m.keys().cloned().collect(), canonical_object_sha256(m)),
            Some(other) => (Vec::new(), canonical_sha256(other)),
            None => (Vec::new(), canonical_sha256(&Value::Null)),
        };
        AuditRecord::with_hash(tool, argument_names, arguments_sha256)
    }

    /// [`AuditRecord::new`] for a call's arguments object, read in place.
    pub fn for_arguments(tool: &str, arguments: Option<&JsonObject>) -> AuditRecord {
        match arguments {
            Some(m) => AuditRecord::with_hash(
                tool,
                m.keys().cloned().collect(),
                canonical_object_sha256(m),
            ),
            None => AuditRecord::new(tool, None),
        }
    }

    fn with_hash(tool: &str, argument_names: Vec<String>, arguments_sha256: String) -> AuditRecord {
        let time = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        AuditRecord::with(time, tool, argument_names, arguments_sha256)
    }

    fn with(
        time: String,
        tool: &str,
        argument_names: Vec<String>,
        arguments_sha256: String,
    ) -> AuditRecord {
        AuditRecord {
            time,
            replica: None,
            alias: None,
            tool: tool.to_owned(),
            method: None,
            original_tool: None,
            argument_names,
            arguments_sha256,
            decision: None,
            decided_by: Decider::None,
            rule: None,
            outcome: Outcome::Ok,
            is_error: false,
            duration_ms: 0,
            task_id: None,
            principal: None,
            identity: None,
            sandbox: None,
            retried: false,
        }
    }
}

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    replica: Option<String>,
    state: Arc<Mutex<WriterState>>,
    /// The thread that drops the file lock kept between lines (`lease`),
    /// started with the first write that keeps it; `None` when it could
    /// not be started.
    releaser: OnceLock<Option<Thread>>,
    group: Mutex<Group>,
    /// Writes made (one per group), for the tests of grouping.
    writes: std::sync::atomic::AtomicU64,
    /// Times the file lock was taken for a write, for the tests of `lease`.
    locks: std::sync::atomic::AtomicU64,
    /// Calls in flight that will write a line ([`AuditLog::call_in_flight`]).
    in_flight: std::sync::atomic::AtomicUsize,
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        // Its releaser ends once it finds the log gone.
        if let Some(Some(releaser)) = self.releaser.get() {
            releaser.unpark();
        }
    }
}

/// One call in flight, counted by its log until dropped
/// ([`AuditLog::call_in_flight`]).
#[derive(Debug)]
#[must_use = "the call counts as in flight only while this is held"]
pub struct CallInFlight<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for CallInFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The lines waiting for the next group write.
#[derive(Debug, Default)]
struct Group {
    /// Each record's serialised fields, and whom to tell once written.
    waiting: Vec<(String, oneshot::Sender<Result<(), std::io::ErrorKind>>)>,
    /// Whether a caller has taken on writing what waits.
    writer: bool,
}

/// The caller writing the group; dropped (even with its call cancelled),
/// it writes whatever waits, so no queued line is lost.
struct GroupWriter<'a>(&'a AuditLog);

impl Drop for GroupWriter<'_> {
    fn drop(&mut self) {
        let log = self.0;
        loop {
            let batch = {
                let mut group = log.lock_group();
                if group.waiting.is_empty() {
                    group.writer = false;
                    return;
                }
                std::mem::take(&mut group.waiting)
            };
            let (lines, waiters): (Vec<String>, Vec<_>) = batch.into_iter().unzip();
            let written = log.write_locked(&lines, true).map_err(|e| e.kind());
            for waiter in waiters {
                let _ = waiter.send(written);
            }
        }
    }
}

#[derive(Debug)]
struct WriterState {
    /// The log's path: it may come to name another file than `file` (a
    /// rotation).
    path: PathBuf,
    /// When the log is rotated, if it is.
    rotation: Option<Rotation>,
    /// After a rotation failed: the file length below which it is not
    /// tried again (one more bound's worth of lines), so a log that cannot
    /// be rotated does not retry and warn at every write.
    rotation_retry_at: u64,
    file: File,
    /// File length after our last write; another writer changes it.
    known_len: u64,
    prev: String,
    seq: u64,
    /// The exclusive lock kept from an earlier line (`lease`).
    held: Option<lease::Held>,
}

impl AuditLog {
    /// Opens (creating, mode 0600) the log at `path` and finds the end of
    /// its chain.
    ///
    /// # Errors
    /// [`HostError`] when the file cannot be opened or read.
    pub fn open(path: &Path) -> Result<AuditLog, HostError> {
        let io = |source| HostError::AuditIo {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = rotate::open_log_file(path, false).map_err(io)?;
        let mut state = WriterState {
            path: path.to_path_buf(),
            rotation: None,
            rotation_retry_at: 0,
            file,
            known_len: u64::MAX,
            prev: GENESIS.into(),
            seq: 0,
            held: None,
        };
        FileExt::lock_shared(&state.file).map_err(io)?;
        let synced = state.resync();
        let _ = FileExt::unlock(&state.file);
        synced.map_err(io)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            replica: None,
            state: Arc::new(Mutex::new(state)),
            releaser: OnceLock::new(),
            group: Mutex::default(),
            writes: std::sync::atomic::AtomicU64::new(0),
            locks: std::sync::atomic::AtomicU64::new(0),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The same log, naming `replica` in every line written through it
    /// (records that name none get it).
    #[must_use]
    pub fn with_replica(mut self, replica: Option<String>) -> AuditLog {
        self.replica = replica;
        self
    }

    /// The same log, archived before a write would take it past
    /// `rotation.max_bytes` (its chain going on in a fresh file).
    #[must_use]
    pub fn with_rotation(self, rotation: Option<Rotation>) -> AuditLog {
        lock(&self.state).rotation = rotation;
        self
    }

    /// The replica this log names in its lines.
    pub fn replica(&self) -> Option<&str> {
        self.replica.as_deref()
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as the next line of the chain, durably ordered with
    /// other writers (processes included).
    ///
    /// # Errors
    /// [`HostError`] when the line cannot be written.
    pub fn append(&self, record: &AuditRecord) -> Result<(), HostError> {
        let fields = fields_of(record).map_err(|e| self.io_error(e))?;
        self.write_locked(&[fields], false)
            .map_err(|e| self.io_error(e))
    }

    /// Counts a call as in flight until the returned guard is dropped
    /// (after its line is appended). [`AuditLog::append_grouped`] lets the
    /// calls ready alongside join its write only when some are counted
    /// besides its own: the only call in flight writes at once. When no
    /// call is counted at all (a caller that does not count), it waits for
    /// the others as before.
    pub fn call_in_flight(&self) -> CallInFlight<'_> {
        self.in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CallInFlight(&self.in_flight)
    }

    /// [`AuditLog::append`] for a call ending among others: the line joins
    /// those waiting, and the first of them writes them all under one lock
    /// and one `write` once the tasks ready alongside it had their turn.
    /// Returns when this record's line is in the file (a cancelled caller's
    /// line is written all the same).
    ///
    /// # Errors
    /// [`HostError`] when the group's lines cannot be written.
    pub async fn append_grouped(&self, record: &AuditRecord) -> Result<(), HostError> {
        let fields = fields_of(record).map_err(|e| self.io_error(e))?;
        if self.in_flight.load(std::sync::atomic::Ordering::Relaxed) == 1 {
            // The only call in flight: nobody to wait for or to join.
            return self
                .write_locked(&[fields], true)
                .map_err(|e| self.io_error(e));
        }
        let (done, written) = oneshot::channel();
        let writes = {
            let mut group = self.lock_group();
            group.waiting.push((fields, done));
            !std::mem::replace(&mut group.writer, true)
        };
        if writes {
            let writer = GroupWriter(self);
            tokio::task::yield_now().await;
            drop(writer);
        }
        match written.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(kind)) => Err(self.io_error(std::io::Error::new(
                kind,
                "the group of audit lines this one was in could not be written",
            ))),
            Err(_) => Err(self.io_error(std::io::Error::other(
                "the audit writer stopped before writing this line",
            ))),
        }
    }

    fn io_error(&self, source: std::io::Error) -> HostError {
        HostError::AuditIo {
            path: self.path.clone(),
            source,
        }
    }

    fn lock_group(&self) -> std::sync::MutexGuard<'_, Group> {
        lock(&self.group)
    }

    /// Writes `lines` (each a record's serialised fields) as the next
    /// lines of the chain, in one `write` under the exclusive file lock:
    /// the one kept from an earlier line, or taken now (and the chain's
    /// end looked up again, in case another process wrote since). With
    /// `keep`, the lock is kept for the next lines (`lease`); without, it
    /// is dropped.
    fn write_locked(&self, lines: &[String], keep: bool) -> std::io::Result<()> {
        let mut state = lock(&self.state);
        if !state.is_held() {
            FileExt::lock_exclusive(&state.file)?;
            self.locks
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Another writer may have rotated the log since.
            if let Err(e) = state.follow_path().and_then(|()| state.resync()) {
                state.release();
                return Err(e);
            }
        }
        let written = state.write_lines(lines);
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match (keep.then(|| self.releaser()).flatten(), &written) {
            (Some(releaser), Ok(())) => {
                if state.keep(Instant::now()) {
                    releaser.unpark();
                }
            }
            _ => state.release(),
        }
        written
    }

    /// The thread dropping the kept lock, started on first use.
    fn releaser(&self) -> Option<&Thread> {
        self.releaser
            .get_or_init(|| lease::start_releaser(Arc::downgrade(&self.state)))
            .as_ref()
    }
}

/// A record's fields, serialised once (`{…}`).
fn fields_of(record: &AuditRecord) -> std::io::Result<String> {
    serde_json::to_string(record).map_err(std::io::Error::other)
}

impl WriterState {
    /// Re-reads the end of the chain when someone else wrote since us.
    fn resync(&mut self) -> std::io::Result<()> {
        let len = self.file.metadata()?.len();
        if len == self.known_len {
            return Ok(());
        }
        match last_line(&mut self.file, len)? {
            None => {
                self.prev = GENESIS.into();
                self.seq = 0;
            }
            Some(line) => {
                self.prev = sha256_hex(&line);
                self.seq = match seq_of(&line) {
                    Some(seq) => seq,
                    // A torn or foreign last line: continue after the
                    // highest sequence number in the file.
                    None => {
                        let mut all = Vec::new();
                        self.file.seek(SeekFrom::Start(0))?;
                        Read::by_ref(&mut self.file)
                            .take(len)
                            .read_to_end(&mut all)?;
                        all.split(|b| *b == b'\n')
                            .filter_map(seq_of)
                            .max()
                            .unwrap_or(0)
                    }
                };
            }
        }
        // A crash mid-write can leave a line without its newline; end it so
        // the next record starts on a line of its own (verify reports it).
        if len > 0 && !ends_with_newline(&mut self.file, len)? {
            self.file.write_all(b"\n")?;
        }
        self.known_len = self.file.metadata()?.len();
        Ok(())
    }

    /// Chains `records` (each a record's serialised fields) after the
    /// file's last line and appends them in one write.
    /// Call with the exclusive lock held and the chain's end known.
    fn write_lines(&mut self, records: &[String]) -> std::io::Result<()> {
        let (mut seq, mut prev) = (self.seq, self.prev.clone());
        let size: usize = records.iter().map(|r| r.len() + 2 * 64 + 48).sum();
        let mut out = String::with_capacity(size);
        for fields in records {
            seq += 1;
            // `{"seq":N,<the record's fields>,"prev":"…"`, then the hash of
            // exactly that, then the closing brace: serialised once.
            let inner = fields
                .strip_prefix('{')
                .and_then(|f| f.strip_suffix('}'))
                .unwrap_or_default();
            let start = out.len();
            out.push_str("{\"seq\":");
            out.push_str(&seq.to_string());
            if !inner.is_empty() {
                out.push(',');
                out.push_str(inner);
            }
            out.push_str(",\"prev\":\"");
            out.push_str(&prev);
            out.push('"');
            // The line's own hash, then (hashing the line once) the hash of
            // the whole line, the next line's `prev`.
            (_, prev) = sha256_hex_then_extended(&mut out, start, |out, hash| {
                out.push_str(HASH_KEY);
                out.push_str(hash);
                out.push_str("\"}");
            });
            out.push('\n');
        }
        if self.rotation_due(out.len()) {
            match self.rotate(out.as_bytes()) {
                Ok(()) => {
                    (self.seq, self.prev) = (seq, prev);
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!(
                        log = %self.path.display(),
                        "cannot rotate the audit log ({e}); it grows past its bound until a later try works: check its folder's permissions and free space"
                    );
                    self.rotation_failed();
                }
            }
        }
        self.file.write_all(out.as_bytes())?;
        (self.seq, self.prev) = (seq, prev);
        // Appended under the exclusive lock: the file grew by exactly this.
        self.known_len += out.len() as u64;
        Ok(())
    }
}

fn seq_of(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("seq").and_then(Value::as_u64))
}

fn ends_with_newline(file: &mut File, len: u64) -> std::io::Result<bool> {
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// The last non-empty line of the file (without its newline).
fn last_line(file: &mut File, len: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut window: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
        Read::by_ref(file).take(len - start).read_to_end(&mut buf)?;
        let trimmed = buf.trim_ascii_end();
        match trimmed.iter().rposition(|b| *b == b'\n') {
            Some(i) => return Ok(Some(trimmed[i + 1..].to_vec())),
            None if start == 0 => {
                return Ok((!trimmed.is_empty()).then(|| trimmed.to_vec()));
            }
            None => window *= 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tool: &str) -> AuditRecord {
        let mut r = AuditRecord::new(tool, Some(&serde_json::json!({"b": 1, "a": [2]})));
        r.alias = Some("notes".into());
        r.decision = Some("allow".into());
        r.decided_by = Decider::Rule;
        r.rule = Some("permissions.allow[0]".into());
        r
    }

    #[test]
    fn arguments_are_hashed_canonically_and_never_recorded() {
        let a = AuditRecord::new("t", Some(&serde_json::json!({"b": "secret", "a": 1})));
        let b = AuditRecord::new("t", Some(&serde_json::json!({"a": 1, "b": "secret"})));
        assert_eq!(a.arguments_sha256, b.arguments_sha256);
        assert_eq!(a.argument_names, ["b", "a"]);
        assert!(!serde_json::to_string(&a).unwrap().contains("secret"));
    }

    #[test]
    fn chain_survives_reopening_and_a_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let one = AuditLog::open(&path).unwrap();
        one.append(&record("a")).unwrap();
        let two = AuditLog::open(&path).unwrap();
        two.append(&record("b")).unwrap();
        one.append(&record("c")).unwrap();
        drop((one, two));
        AuditLog::open(&path).unwrap().append(&record("d")).unwrap();
        let report = verify(&path).unwrap();
        assert_eq!(report.lines, 4);
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(seqs(&path), [1, 2, 3, 4]);
    }

    #[test]
    fn a_torn_last_line_is_reported_and_the_log_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        AuditLog::open(&path).unwrap().append(&record("a")).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"seq\":2,\"ti").unwrap();
        drop(f);
        AuditLog::open(&path).unwrap().append(&record("b")).unwrap();
        let report = verify(&path).unwrap();
        assert_eq!(report.lines, 3);
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert_eq!(report.problems[0].line, 2);
    }

    /// A new log in a directory of its own (kept while the guard lives).
    fn fresh_log() -> (tempfile::TempDir, PathBuf, AuditLog) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        (dir, path, log)
    }

    /// `key` of each of the file's lines, in order.
    fn column(path: &Path, key: &str) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()[key].clone())
            .collect()
    }

    fn seqs(path: &Path) -> Vec<u64> {
        column(path, "seq")
            .iter()
            .map(|seq| seq.as_u64().unwrap())
            .collect()
    }

    #[tokio::test]
    async fn calls_ending_together_share_one_write_and_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = std::sync::Arc::new(AuditLog::open(&path).unwrap());
        // A second writer (another replica's process, say) in between.
        AuditLog::open(&path)
            .unwrap()
            .append(&record("first"))
            .unwrap();
        let tasks: Vec<_> = (0..40)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move { log.append_grouped(&record(&format!("t{i}"))).await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        AuditLog::open(&path)
            .unwrap()
            .append(&record("last"))
            .unwrap();
        let report = verify(&path).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(seqs(&path), (1..=42).collect::<Vec<_>>());
        // Forty lines ready in one scheduler turn: far fewer writes.
        let writes = log.writes.load(std::sync::atomic::Ordering::Relaxed);
        assert!(writes < 10, "{writes} writes for 40 grouped lines");
    }

    #[tokio::test]
    async fn the_only_call_in_flight_writes_without_waiting_for_others() {
        use std::future::Future;
        let (_dir, path, log) = fresh_log();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let only = log.call_in_flight();
        let r = record("alone");
        let mut append = Box::pin(log.append_grouped(&r));
        assert!(
            append.as_mut().poll(&mut cx).is_ready(),
            "the only call in flight waited for others"
        );
        drop(only);
        // Two in flight: the first to end waits for the other once.
        let (first, _second) = (log.call_in_flight(), log.call_in_flight());
        let r = record("one of two");
        let mut append = Box::pin(log.append_grouped(&r));
        assert!(append.as_mut().poll(&mut cx).is_pending());
        append.await.unwrap();
        drop(first);
        assert_eq!(seqs(&path), [1, 2]);
    }

    /// Appends `tool`'s line through a second log on `path` (to the file
    /// lock, another process) from a thread of its own; the receiver hears
    /// once it is written.
    fn append_from_another_log(path: &Path, tool: &'static str) -> std::sync::mpsc::Receiver<()> {
        let (done, written) = std::sync::mpsc::channel();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            AuditLog::open(&path)
                .unwrap()
                .append(&record(tool))
                .unwrap();
            let _ = done.send(());
        });
        written
    }

    #[tokio::test]
    async fn back_to_back_lines_keep_the_file_lock() {
        let (_dir, path, log) = fresh_log();
        for i in 0..50 {
            let _only = log.call_in_flight();
            log.append_grouped(&record(&format!("t{i}"))).await.unwrap();
        }
        let locks = log.locks.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            locks < 10,
            "the lock was taken {locks} times for 50 lines in a row"
        );
        assert_eq!(seqs(&path), (1..=50).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn another_writer_gets_the_lock_once_the_log_goes_quiet() {
        let (_dir, path, log) = fresh_log();
        log.append_grouped(&record("kept")).await.unwrap();
        let written = append_from_another_log(&path, "other");
        let waited = tokio::task::spawn_blocking(move || {
            written.recv_timeout(std::time::Duration::from_secs(10))
        });
        assert!(
            waited.await.unwrap().is_ok(),
            "the other writer never got the lock"
        );
        // The log takes the lock again and chains after the other's line.
        log.append_grouped(&record("after")).await.unwrap();
        assert_eq!(column(&path, "tool"), ["kept", "other", "after"]);
        assert!(verify(&path).unwrap().is_intact());
    }

    #[test]
    fn a_busy_log_lets_another_writer_in() {
        let (_dir, path, log) = fresh_log();
        let log = Arc::new(log);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // A line every millisecond: never quiet for long enough.
        let busy = std::thread::spawn({
            let (log, stop) = (log.clone(), stop.clone());
            move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        log.append_grouped(&record("busy")).await.unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                });
            }
        });
        let started = std::time::Instant::now();
        while !log.state.lock().unwrap().is_held() {
            assert!(
                started.elapsed().as_secs() < 10,
                "the busy log never kept the lock"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let written = append_from_another_log(&path, "other");
        let got_in = written.recv_timeout(std::time::Duration::from_secs(10));
        // The busy log goes on after it, taking the lock again.
        let in_between = |tools: &[Value]| {
            let other = tools.iter().position(|t| t == "other");
            other.is_some_and(|i| i > 0 && i + 1 < tools.len())
        };
        let started = std::time::Instant::now();
        while got_in.is_ok()
            && !in_between(&column(&path, "tool"))
            && started.elapsed().as_secs() < 10
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.join().unwrap();
        assert!(got_in.is_ok(), "the other writer never got in");
        let tools = column(&path, "tool");
        assert!(in_between(&tools), "{tools:?}");
        assert!(verify(&path).unwrap().is_intact());
    }

    #[tokio::test]
    async fn a_cancelled_group_writer_still_writes_every_waiting_line() {
        use std::future::Future;
        let (_dir, path, log) = fresh_log();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let (a, b) = (record("a"), record("b"));
        let mut writer = Box::pin(log.append_grouped(&a));
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        let mut waiter = Box::pin(log.append_grouped(&b));
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        // The writing caller goes away before writing (its call cancelled).
        drop(writer);
        waiter.await.unwrap();
        assert_eq!(seqs(&path), [1, 2]);
        assert!(verify(&path).unwrap().is_intact());
        // And the group goes on with a writer of its own next time.
        log.append_grouped(&record("c")).await.unwrap();
        assert_eq!(seqs(&path), [1, 2, 3]);
    }
}
