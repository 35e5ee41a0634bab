//! Entry points for the fuzz targets (`fuzz/`) and their corpus replay on
//! stable; hidden from the documentation and not part of the API. Each
//! returns `Err` describing a broken property; none may panic.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::seal::{Binding, CursorAt, Keys, ListKind, StateError, generation, params_digest};

/// The differential check of the `tools/call` fast path: the fast path
/// either declines `body` or reads exactly what the general path reads;
/// so does it for each line of `body`, each read after the line before
/// (a line like the one before it is read through that one's shape).
///
/// # Errors
/// A description of the disagreement.
pub fn fast_path_agrees(body: &[u8]) -> Result<bool, String> {
    crate::fast::agree_in_a_row(body)
}

fn keys() -> Result<Keys, String> {
    Keys::new(Some(b"fuzzing master key")).map_err(|e| e.0)
}

/// Pagination cursors: `token` is opened as every kind of cursor and must
/// be refused unless it is exactly what the server itself would issue; the
/// genuine cursor at the offset `data` names, altered by `data`
/// (truncated, one byte changed, extended), must be refused unless the
/// alteration left it unchanged.
///
/// # Errors
/// The forged or truncated token that was accepted.
pub fn cursors(data: &[u8]) -> Result<(), String> {
    let keys = keys()?;
    let kinds = [
        ListKind::Tools,
        ListKind::Prompts,
        ListKind::Resources,
        ListKind::Templates,
    ];
    if let Ok(token) = std::str::from_utf8(data) {
        for kind in kinds {
            if let Some(at) = keys.open_cursor(kind, token) {
                if keys.cursor(kind, at) != token {
                    return Err(format!(
                        "accepted a cursor the server never issued: {token:?}"
                    ));
                }
            }
        }
    }
    let [a, b, c, d, rest @ ..] = data else {
        return Ok(());
    };
    let offset = usize::try_from(u32::from_be_bytes([*a, *b, *c, *d])).unwrap_or(usize::MAX);
    let kind = kinds[offset % kinds.len()];
    let at = CursorAt {
        offset,
        generation: generation([String::from_utf8_lossy(rest).as_ref()]),
    };
    let genuine = keys.cursor(kind, at);
    if keys.open_cursor(kind, &genuine) != Some(at) {
        return Err(format!("refused its own cursor for offset {offset}"));
    }
    let altered = alter(&genuine, rest);
    if altered != genuine && keys.open_cursor(kind, &altered).is_some() {
        return Err(format!(
            "accepted an altered cursor {altered:?} (genuine {genuine:?})"
        ));
    }
    Ok(())
}

/// MRTR `requestState`: `token` (the input as text) must never open, since
/// this process sealed nothing it could have seen; a genuine token altered
/// by `data` must be refused as forged unless the alteration left it
/// unchanged, and a genuine one must open only for its own request.
///
/// # Errors
/// The forged, truncated or misbound token that was accepted.
pub fn request_state(data: &[u8]) -> Result<(), String> {
    let keys = keys()?;
    let mut params = Map::new();
    params.insert("name".into(), Value::String("echo".into()));
    params.insert("arguments".into(), serde_json::json!({"text": "hi"}));
    let digest = params_digest(&params);
    let binding = Binding {
        method: "tools/call",
        name: "echo",
        principal: Some("alice"),
        params: &digest,
    };
    if let Ok(token) = std::str::from_utf8(data) {
        if keys.open_state(token, &binding).is_ok() {
            return Err(format!(
                "accepted a requestState it never issued: {token:?}"
            ));
        }
    }
    let value = serde_json::json!({"step": data.len(), "note": String::from_utf8_lossy(data)});
    let genuine = keys.seal_state(&binding, &value, Duration::from_secs(60));
    match keys.open_state(&genuine, &binding) {
        Ok(opened) if opened.value == value => {}
        other => return Err(format!("its own requestState did not open: {other:?}")),
    }
    let other = Binding {
        principal: Some("mallory"),
        ..binding
    };
    if keys.open_state(&genuine, &other) != Err(StateError::OtherPrincipal) {
        return Err("a requestState opened for another principal".into());
    }
    let altered = alter(&genuine, data);
    if altered != genuine && keys.open_state(&altered, &binding).is_ok() {
        return Err(format!("accepted an altered requestState {altered:?}"));
    }
    Ok(())
}

/// `token` changed as `how` says: its first byte picks truncation, one
/// character replaced, characters appended or inserted.
fn alter(token: &str, how: &[u8]) -> String {
    let [op, at, rest @ ..] = how else {
        return token.chars().rev().collect();
    };
    let mut chars: Vec<char> = token.chars().collect();
    let at = usize::from(*at) % (chars.len() + 1);
    let extra: String = String::from_utf8_lossy(rest).into_owned();
    match op % 4 {
        0 => chars.truncate(at),
        1 => {
            if let Some(c) = chars.get_mut(at) {
                let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
                *c = char::from(alphabet[usize::from(rest.first().copied().unwrap_or(0)) % 64]);
            } else {
                chars.push('A');
            }
        }
        2 => chars.extend(extra.chars()),
        _ => {
            let tail = chars.split_off(at);
            chars.extend(extra.chars());
            chars.extend(tail);
        }
    }
    chars.into_iter().collect()
}
