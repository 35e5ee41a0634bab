//! Integrity-protected tokens the client carries for us: MRTR
//! `requestState` and pagination cursors, plus the server's secret keys and
//! its source of unguessable identifiers.
//!
//! Both tokens are `base64url(payload || HMAC-SHA256 tag)`: the client can
//! read them but not change them, and the server keeps no table of them.
//! Verification is constant-time (`Mac::verify_slice`).
//!
//! A resumable task's id ([`Keys::seal_task`]) carries the application's
//! note for resuming the task after a restart. Unlike the other tokens it
//! is encrypted as well (ChaCha20-Poly1305, `ring`): the note may name
//! things the client has no business reading, such as another server's
//! task id.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
pub(crate) use switchboard_wire::shared::unix_millis as now_ms;

type HmacSha256 = Hmac<Sha256>;

/// The secrets one server process signs with.
pub(crate) struct Keys {
    state: [u8; 32],
    cursor: [u8; 32],
    /// Seals resumable task ids.
    task: LessSafeKey,
    ids: IdSource,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

/// Why an operating-system random source could not be read.
#[derive(Debug)]
pub(crate) struct NoRandomness(pub(crate) String);

impl Keys {
    /// Keys derived from `master` (so several replicas behind a load
    /// balancer accept each other's tokens), or random for this process.
    pub(crate) fn new(master: Option<&[u8]>) -> Result<Keys, NoRandomness> {
        let mut random = [0u8; 32];
        let master: Vec<u8> = match master {
            Some(m) => m.to_vec(),
            None => {
                getrandom::fill(&mut random).map_err(|e| NoRandomness(e.to_string()))?;
                random.to_vec()
            }
        };
        // The id source always gets fresh randomness: ids must not repeat
        // across restarts even when the signing key is configured.
        let mut id_seed = [0u8; 32];
        getrandom::fill(&mut id_seed).map_err(|e| NoRandomness(e.to_string()))?;
        Ok(Keys {
            state: derive(&master, b"switchboard request-state v1"),
            cursor: derive(&master, b"switchboard cursor v1"),
            task: task_key(&derive(&master, b"switchboard task note v1")),
            ids: IdSource {
                key: id_seed,
                counter: AtomicU64::new(0),
            },
        })
    }

    /// 32 unguessable bytes, never repeated in this process.
    pub(crate) fn random(&self) -> [u8; 32] {
        self.ids.next()
    }
}

/// A keyed counter: HMAC(secret seed, n) for n = 0, 1, 2, … Unpredictable
/// without the seed and cheap (no system call per identifier).
struct IdSource {
    key: [u8; 32],
    counter: AtomicU64,
}

impl IdSource {
    fn next(&self) -> [u8; 32] {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut mac = new_mac(&self.key);
        mac.update(&n.to_be_bytes());
        mac.finalize().into_bytes().into()
    }
}

fn task_key(bytes: &[u8; 32]) -> LessSafeKey {
    // A 32-byte key is the one length ChaCha20-Poly1305 takes.
    match UnboundKey::new(&CHACHA20_POLY1305, bytes) {
        Ok(key) => LessSafeKey::new(key),
        Err(_) => unreachable!("ChaCha20-Poly1305 takes a 32-byte key"),
    }
}

fn derive(master: &[u8], label: &[u8]) -> [u8; 32] {
    let mut mac = new_mac(master);
    mac.update(label);
    mac.finalize().into_bytes().into()
}

fn new_mac(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length.
    match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable_hmac(),
    }
}

#[cold]
fn unreachable_hmac() -> HmacSha256 {
    // `new_from_slice` only fails for fixed-size-key MACs; HMAC has none.
    // Fall back to an all-zero key rather than panicking.
    <HmacSha256 as Mac>::new(&Default::default())
}

/// Text encoding of tokens.
pub(crate) fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.as_bytes()).ok()
}

// ---------------------------------------------------------------------------
// requestState

const STATE_VERSION: u8 = 1;
const TAG_LEN: usize = 32;
/// version, expiry, nonce, method, name digest, principal digest, params digest.
const STATE_HEADER_LEN: usize = 1 + 8 + 16 + 1 + 8 + 16 + 16;

/// What a `requestState` is bound to: the request that received it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Binding<'a> {
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub(crate) method: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub(crate) name: &'a str,
    /// The authenticated principal's subject; `None` on stdio.
    pub(crate) principal: Option<&'a str>,
    /// Digest of the request's salient params ([`params_digest`]).
    pub(crate) params: &'a [u8; 16],
}

/// A verified `requestState`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpenedState {
    /// Unique per issued state: the key for at-most-once use (MRTR-10).
    pub(crate) nonce: [u8; 16],
    /// When it lapses, in Unix milliseconds.
    pub(crate) expires_at_ms: u64,
    /// The handler's own state, as it gave it.
    pub(crate) value: Value,
}

/// Why a `requestState` was refused; each is a -32602 error (MRTR-08/09).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StateError {
    /// Not ours or altered: bad encoding, bad tag, bad layout.
    Forged,
    /// Past its expiry.
    Expired,
    /// Issued to another principal.
    OtherPrincipal,
    /// Issued for another method, tool, prompt or resource.
    OtherRequest,
    /// Issued for the same target with other arguments.
    OtherArguments,
}

impl StateError {
    pub(crate) fn message(self) -> &'static str {
        match self {
            StateError::Forged => {
                "requestState is invalid: it was not issued by this server or has been altered"
            }
            StateError::Expired => {
                "requestState has expired; send the request again without requestState and inputResponses"
            }
            StateError::OtherPrincipal => "requestState was issued to a different principal",
            StateError::OtherRequest => {
                "requestState was issued for a different request (method, tool, prompt or resource)"
            }
            StateError::OtherArguments => {
                "requestState was issued for a request with different arguments; retry with the original arguments"
            }
        }
    }
}

fn method_code(method: &str) -> u8 {
    match method {
        "tools/call" => 1,
        "prompts/get" => 2,
        "resources/read" => 3,
        _ => 0,
    }
}

fn digest16(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let out = h.finalize();
    let mut d = [0u8; 16];
    d.copy_from_slice(&out[..16]);
    d
}

fn name_digest(name: &str) -> [u8; 8] {
    let d = digest16(&[b"name", name.as_bytes()]);
    let mut out = [0u8; 8];
    out.copy_from_slice(&d[..8]);
    out
}

fn principal_digest(principal: Option<&str>) -> [u8; 16] {
    match principal {
        None => digest16(&[b"no principal"]),
        Some(p) => digest16(&[b"principal", p.as_bytes()]),
    }
}

impl Keys {
    /// Seals `value` into a `requestState` bound to `binding`, valid for `ttl`.
    pub(crate) fn seal_state(&self, binding: &Binding<'_>, value: &Value, ttl: Duration) -> String {
        let expires = now_ms().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let nonce = self.random();
        let body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
        let mut out = Vec::with_capacity(STATE_HEADER_LEN + body.len() + TAG_LEN);
        out.push(STATE_VERSION);
        out.extend_from_slice(&expires.to_be_bytes());
        out.extend_from_slice(&nonce[..16]);
        out.push(method_code(binding.method));
        out.extend_from_slice(&name_digest(binding.name));
        out.extend_from_slice(&principal_digest(binding.principal));
        out.extend_from_slice(binding.params);
        out.extend_from_slice(&body);
        let mut mac = new_mac(&self.state);
        mac.update(&out);
        out.extend_from_slice(&mac.finalize().into_bytes());
        encode(&out)
    }

    /// Verifies a `requestState` for the request `binding` describes.
    ///
    /// # Errors
    /// [`StateError`] saying why it is refused. The tag is checked first, in
    /// constant time, so nothing about an altered token is revealed.
    pub(crate) fn open_state(
        &self,
        token: &str,
        binding: &Binding<'_>,
    ) -> Result<OpenedState, StateError> {
        let raw = decode(token).ok_or(StateError::Forged)?;
        if raw.len() < STATE_HEADER_LEN + TAG_LEN {
            return Err(StateError::Forged);
        }
        let (payload, tag) = raw.split_at(raw.len() - TAG_LEN);
        let mut mac = new_mac(&self.state);
        mac.update(payload);
        mac.verify_slice(tag).map_err(|_| StateError::Forged)?;
        if payload[0] != STATE_VERSION {
            return Err(StateError::Forged);
        }
        let mut expiry = [0u8; 8];
        expiry.copy_from_slice(&payload[1..9]);
        let expires_at_ms = u64::from_be_bytes(expiry);
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&payload[9..25]);
        let method = payload[25];
        let name = &payload[26..34];
        let principal = &payload[34..50];
        let params = &payload[50..66];
        if now_ms() >= expires_at_ms {
            return Err(StateError::Expired);
        }
        if principal != principal_digest(binding.principal) {
            return Err(StateError::OtherPrincipal);
        }
        if method != method_code(binding.method) || name != name_digest(binding.name) {
            return Err(StateError::OtherRequest);
        }
        if params != binding.params {
            return Err(StateError::OtherArguments);
        }
        let value =
            serde_json::from_slice(&payload[STATE_HEADER_LEN..]).map_err(|_| StateError::Forged)?;
        Ok(OpenedState {
            nonce,
            expires_at_ms,
            value,
        })
    }
}

// ---------------------------------------------------------------------------
// Resumable task ids

const TASK_VERSION: u8 = 1;
/// version, created, expiry (Unix ms), nonce.
const TASK_HEADER_LEN: usize = 1 + 8 + 8 + NONCE_LEN;
/// ChaCha20-Poly1305's tag.
const TASK_TAG_LEN: usize = 16;

/// What a resumable task id carries, once opened.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpenedTask {
    /// When the task was created, in Unix milliseconds.
    pub(crate) created_ms: u64,
    /// The application's note ([`crate::TaskWork::resumable`]).
    pub(crate) note: Value,
}

impl Keys {
    /// Seals `note` for a task `principal` owns, created at `created_ms`
    /// and kept for `ttl`: the task id's unguessable part. Only this
    /// server's key (or a replica's sharing it) opens it, only for the same
    /// principal, and only until the task would have expired.
    pub(crate) fn seal_task(
        &self,
        principal: Option<&str>,
        created_ms: u64,
        ttl: Duration,
        note: &Value,
    ) -> String {
        let expires = created_ms.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let random = self.random();
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&random[..NONCE_LEN]);
        let mut out = Vec::with_capacity(TASK_HEADER_LEN + 64 + TASK_TAG_LEN);
        out.push(TASK_VERSION);
        out.extend_from_slice(&created_ms.to_be_bytes());
        out.extend_from_slice(&expires.to_be_bytes());
        out.extend_from_slice(&nonce);
        let mut body = serde_json::to_vec(note).unwrap_or_else(|_| b"null".to_vec());
        let aad = task_aad(&out, principal);
        if self
            .task
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut body,
            )
            .is_err()
        {
            // Only a body longer than ChaCha20 can count (256 GiB) fails.
            body.clear();
        }
        out.extend_from_slice(&body);
        encode(&out)
    }

    /// Opens a resumable task id's unguessable part for `principal`:
    /// `None` when it is not one of ours, was altered, belongs to another
    /// principal or has expired.
    pub(crate) fn open_task(&self, token: &str, principal: Option<&str>) -> Option<OpenedTask> {
        let raw = decode(token)?;
        if raw.len() < TASK_HEADER_LEN + TASK_TAG_LEN || raw[0] != TASK_VERSION {
            return None;
        }
        let (header, sealed) = raw.split_at(TASK_HEADER_LEN);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&header[17..]);
        let aad = task_aad(header, principal);
        let mut sealed = sealed.to_vec();
        let body = self
            .task
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut sealed,
            )
            .ok()?;
        let mut field = [0u8; 8];
        field.copy_from_slice(&header[1..9]);
        let created_ms = u64::from_be_bytes(field);
        field.copy_from_slice(&header[9..17]);
        if now_ms() >= u64::from_be_bytes(field) {
            return None;
        }
        let note = serde_json::from_slice(body).ok()?;
        Some(OpenedTask { created_ms, note })
    }
}

/// What a task id's seal authenticates besides its body: the header and
/// the owner.
fn task_aad(header: &[u8], principal: Option<&str>) -> Vec<u8> {
    let mut aad = Vec::with_capacity(header.len() + 16);
    aad.extend_from_slice(header);
    aad.extend_from_slice(&principal_digest(principal));
    aad
}

/// Digest of a request's salient params: everything but `_meta`,
/// `inputResponses` and `requestState`, keys sorted, `arguments` absent,
/// `null` and `{}` treated alike. A retry carries the same params (MRTR-14).
pub(crate) fn params_digest(params: &Map<String, Value>) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(b"switchboard params v1");
    let mut keys: Vec<&String> = params
        .keys()
        .filter(|k| !matches!(k.as_str(), "_meta" | "inputResponses" | "requestState"))
        .collect();
    keys.sort();
    for k in keys {
        let v = &params[k.as_str()];
        if k == "arguments" && (v.is_null() || v.as_object().is_some_and(|o| o.is_empty())) {
            continue;
        }
        canonical(&mut h, &Value::String(k.clone()));
        canonical(&mut h, v);
    }
    let out = h.finalize();
    let mut d = [0u8; 16];
    d.copy_from_slice(&out[..16]);
    d
}

/// Feeds a canonical rendering of `v` (object keys sorted) to `h`.
fn canonical(h: &mut Sha256, v: &Value) {
    match v {
        Value::Object(map) => {
            h.update(b"{");
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                canonical(h, &Value::String(k.clone()));
                h.update(b":");
                canonical(h, &map[k.as_str()]);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(items) => {
            h.update(b"[");
            for item in items {
                canonical(h, item);
                h.update(b",");
            }
            h.update(b"]");
        }
        Value::Number(n) => {
            // 42 and 42.0 are the same argument.
            match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                    h.update(format!("n{}", f as i64).as_bytes());
                }
                _ => h.update(format!("n{n}").as_bytes()),
            }
        }
        other => {
            let text = serde_json::to_string(other).unwrap_or_default();
            h.update(text.as_bytes());
        }
    }
}

// ---------------------------------------------------------------------------
// cursors

// Version 2 carries the list's generation (version 1, offsets alone, is
// refused like any unknown cursor: its client lists again from the start).
const CURSOR_VERSION: u8 = 2;
const CURSOR_TAG_LEN: usize = 16;
/// Version, kind, offset (4 bytes), generation (4 bytes).
const CURSOR_PAYLOAD_LEN: usize = 10;

/// Which list a cursor pages through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools = 1,
    Prompts = 2,
    Resources = 3,
    Templates = 4,
    /// `skills/list`.
    Skills = 5,
    /// `resources/directory/read` (the cursor pages any directory).
    Directory = 6,
}

/// Where a cursor points: an offset into the list as it stood when the
/// cursor was issued, and that list's generation ([`generation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CursorAt {
    /// The first item of the page.
    pub(crate) offset: usize,
    /// The generation of the list the offset counts in.
    pub(crate) generation: u32,
}

/// The generation of a list: a digest of its items' keys (names, URIs) in
/// order. An offset means the same items only while it is unchanged; a
/// digest, unlike a counter, is the same on every replica serving the same
/// list, and a reload that changes nothing does not end a listing.
pub(crate) fn generation<'a>(keys: impl IntoIterator<Item = &'a str>) -> u32 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same digest in every process of one
    // build, which is what replicas sharing cursors are.
    let mut h = std::hash::DefaultHasher::new();
    for key in keys {
        key.hash(&mut h);
    }
    let d = h.finish();
    (d ^ (d >> 32)) as u32
}

impl Keys {
    /// An opaque cursor for the page of `kind` starting at `at`.
    pub(crate) fn cursor(&self, kind: ListKind, at: CursorAt) -> String {
        let offset = u32::try_from(at.offset).unwrap_or(u32::MAX);
        let mut out = Vec::with_capacity(CURSOR_PAYLOAD_LEN + CURSOR_TAG_LEN);
        out.push(CURSOR_VERSION);
        out.push(kind as u8);
        out.extend_from_slice(&offset.to_be_bytes());
        out.extend_from_slice(&at.generation.to_be_bytes());
        let mut mac = new_mac(&self.cursor);
        mac.update(&out);
        let tag = mac.finalize().into_bytes();
        out.extend_from_slice(&tag[..CURSOR_TAG_LEN]);
        encode(&out)
    }

    /// Where a cursor we issued for `kind` points; `None` for anything
    /// else (forged, altered, another list's cursor, an older version).
    pub(crate) fn open_cursor(&self, kind: ListKind, cursor: &str) -> Option<CursorAt> {
        let raw = decode(cursor)?;
        if raw.len() != CURSOR_PAYLOAD_LEN + CURSOR_TAG_LEN {
            return None;
        }
        let (payload, tag) = raw.split_at(CURSOR_PAYLOAD_LEN);
        let mut mac = new_mac(&self.cursor);
        mac.update(payload);
        mac.verify_truncated_left(tag).ok()?;
        if payload[0] != CURSOR_VERSION || payload[1] != kind as u8 {
            return None;
        }
        let mut off = [0u8; 4];
        off.copy_from_slice(&payload[2..6]);
        let mut generation = [0u8; 4];
        generation.copy_from_slice(&payload[6..10]);
        Some(CursorAt {
            offset: usize::try_from(u32::from_be_bytes(off)).ok()?,
            generation: u32::from_be_bytes(generation),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> &'static Map<String, Value> {
        Box::leak(Box::new(v.as_object().unwrap().clone()))
    }

    fn keys() -> Keys {
        Keys::new(Some(b"test key")).unwrap()
    }

    fn binding<'a>(principal: Option<&'a str>, params: &'a [u8; 16]) -> Binding<'a> {
        Binding {
            method: "tools/call",
            name: "book",
            principal,
            params,
        }
    }

    #[test]
    fn a_task_note_opens_for_its_owner_on_any_replica_sharing_the_key() {
        let note = json!({"task": "downstream-7", "tool": "mcp__s__export"});
        let token = keys().seal_task(Some("alice"), now_ms(), Duration::from_secs(60), &note);
        // Another process with the same master key (a restarted replica).
        let opened = keys().open_task(&token, Some("alice")).unwrap();
        assert_eq!(opened.note, note);
        // The note is not readable in the id.
        assert!(!String::from_utf8_lossy(&decode(&token).unwrap()).contains("downstream-7"));
        // Another principal, no principal, another key: nothing.
        assert!(keys().open_task(&token, Some("bob")).is_none());
        assert!(keys().open_task(&token, None).is_none());
        let other = Keys::new(Some(b"another key")).unwrap();
        assert!(other.open_task(&token, Some("alice")).is_none());
    }

    #[test]
    fn an_altered_or_expired_task_id_does_not_open() {
        let k = keys();
        let token = k.seal_task(None, now_ms(), Duration::from_secs(60), &json!(1));
        let mut raw = decode(&token).unwrap();
        for at in [0, 3, 12, TASK_HEADER_LEN, raw.len() - 1] {
            raw[at] ^= 1;
            assert!(
                k.open_task(&encode(&raw), None).is_none(),
                "byte {at} altered"
            );
            raw[at] ^= 1;
        }
        assert!(k.open_task(&encode(&raw), None).is_some());
        // Created an hour ago with a minute to live.
        let old = k.seal_task(
            None,
            now_ms() - 3_600_000,
            Duration::from_secs(60),
            &json!(1),
        );
        assert!(k.open_task(&old, None).is_none());
        // A random id (not a sealed one) and garbage.
        assert!(k.open_task(&encode(&k.random()), None).is_none());
        assert!(k.open_task("not base64!", None).is_none());
    }

    #[test]
    fn state_round_trips_and_binds() {
        let k = keys();
        let p = params_digest(obj(json!({"name":"book","arguments":{"n":1}})));
        let token = k.seal_state(
            &binding(Some("alice"), &p),
            &json!({"step": 2}),
            Duration::from_secs(60),
        );
        let opened = k.open_state(&token, &binding(Some("alice"), &p)).unwrap();
        assert_eq!(opened.value, json!({"step": 2}));

        assert_eq!(
            k.open_state(&token, &binding(Some("bob"), &p)),
            Err(StateError::OtherPrincipal)
        );
        let other = Binding {
            name: "cancel",
            ..binding(Some("alice"), &p)
        };
        assert_eq!(k.open_state(&token, &other), Err(StateError::OtherRequest));
        let p2 = params_digest(obj(json!({"name":"book","arguments":{"n":2}})));
        assert_eq!(
            k.open_state(&token, &binding(Some("alice"), &p2)),
            Err(StateError::OtherArguments)
        );
        // Another server's key.
        let other_keys = Keys::new(Some(b"other")).unwrap();
        assert_eq!(
            other_keys.open_state(&token, &binding(Some("alice"), &p)),
            Err(StateError::Forged)
        );
    }

    // MRTR-08: any change to the token is detected.
    #[test]
    fn every_altered_byte_is_detected() {
        let k = keys();
        let p = params_digest(&Map::new());
        let token = k.seal_state(&binding(None, &p), &json!("s"), Duration::from_secs(60));
        let raw = decode(&token).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                k.open_state(&encode(&bad), &binding(None, &p)),
                Err(StateError::Forged),
                "byte {i}"
            );
        }
        assert_eq!(
            k.open_state(&format!("{token}-TAMPERED"), &binding(None, &p)),
            Err(StateError::Forged)
        );
        assert_eq!(
            k.open_state("", &binding(None, &p)),
            Err(StateError::Forged)
        );
    }

    #[test]
    fn expired_state_is_refused() {
        let k = keys();
        let p = params_digest(&Map::new());
        let token = k.seal_state(&binding(None, &p), &json!(1), Duration::ZERO);
        assert_eq!(
            k.open_state(&token, &binding(None, &p)),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn params_digest_ignores_mrtr_members_and_key_order() {
        let a = params_digest(obj(json!({"name":"t","arguments":{"a":1,"b":[1,2]}})));
        let b = params_digest(obj(
            json!({"arguments":{"b":[1,2],"a":1.0},"name":"t","inputResponses":{"x":{}},"requestState":"s","_meta":{"k":1}}),
        ));
        assert_eq!(a, b);
        let c = params_digest(obj(json!({"name":"t"})));
        let d = params_digest(obj(json!({"name":"t","arguments":{}})));
        assert_eq!(c, d);
        assert_ne!(a, c);
    }

    // PAGE-06: only our own cursors open.
    #[test]
    fn cursors_open_only_for_their_list() {
        let k = keys();
        let at = CursorAt {
            offset: 40,
            generation: 7,
        };
        let c = k.cursor(ListKind::Tools, at);
        assert_eq!(k.open_cursor(ListKind::Tools, &c), Some(at));
        assert_eq!(k.open_cursor(ListKind::Prompts, &c), None);
        assert_eq!(k.open_cursor(ListKind::Tools, ""), None);
        assert_eq!(k.open_cursor(ListKind::Tools, "garbage"), None);
        let mut raw = decode(&c).unwrap();
        raw[5] ^= 1;
        assert_eq!(k.open_cursor(ListKind::Tools, &encode(&raw)), None);
    }

    #[test]
    fn ids_do_not_repeat() {
        let k = keys();
        assert_ne!(k.random(), k.random());
    }
}
