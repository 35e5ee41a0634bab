//! Hashes of JSON: sha256 in lowercase hex, and the canonical (key-sorted,
//! compact) form of a value written straight into the hasher, without
//! building a sorted copy first. Pins and audit lines share these.

use std::io::{self, Write};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lowercase hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex sha256 of `buf[start..]`, then of it with what `extend`
/// appends to `buf` (given the first hash): the common part is hashed
/// once for both (the hasher's state is copied in between).
pub(crate) fn sha256_hex_then_extended(
    buf: &mut String,
    start: usize,
    extend: impl FnOnce(&mut String, &str),
) -> (String, String) {
    let mut hasher = Sha256::new();
    hasher.update(&buf.as_bytes()[start..]);
    let first = hex(&hasher.clone().finalize());
    let at = buf.len();
    extend(buf, &first);
    hasher.update(&buf.as_bytes()[at..]);
    (first, hex(&hasher.finalize()))
}

/// Lowercase hex sha256 of the canonical JSON of `value`: the same bytes
/// as `canonical(value).to_string()`, hashed as they are written.
pub(crate) fn canonical_sha256(value: &Value) -> String {
    let mut hasher = HashWriter(Sha256::new());
    // Writing into a hasher cannot fail; serde_json only fails on I/O here.
    let _ = write_canonical(value, &mut hasher);
    hex(&hasher.0.finalize())
}

/// [`canonical_sha256`] of an object given by its entries (the arguments
/// of a call), without wrapping it in a [`Value`].
pub(crate) fn canonical_object_sha256(map: &serde_json::Map<String, Value>) -> String {
    let mut hasher = HashWriter(Sha256::new());
    let _ = write_object(map, &mut hasher);
    hex(&hasher.0.finalize())
}

/// Writes `value` as compact JSON with every object's keys sorted.
pub(crate) fn write_canonical(value: &Value, out: &mut impl Write) -> io::Result<()> {
    match value {
        Value::Object(map) => write_object(map, out),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(item, out)?;
            }
            out.write_all(b"]")
        }
        scalar => serde_json::to_writer(&mut *out, scalar).map_err(io::Error::other),
    }
}

fn write_object(map: &serde_json::Map<String, Value>, out: &mut impl Write) -> io::Result<()> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_unstable();
    out.write_all(b"{")?;
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, key).map_err(io::Error::other)?;
        out.write_all(b":")?;
        write_canonical(&map[key], out)?;
    }
    out.write_all(b"}")
}

struct HashWriter(Sha256);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_extended_hash_is_the_hash_of_the_whole() {
        let mut buf = String::from("ignored{\"a\":1");
        let (first, whole) = sha256_hex_then_extended(&mut buf, 7, |b, h| {
            b.push_str(",\"h\":\"");
            b.push_str(h);
            b.push_str("\"}");
        });
        assert_eq!(first, sha256_hex(b"{\"a\":1"));
        assert_eq!(whole, sha256_hex(&buf.as_bytes()[7..]));
        assert!(buf.ends_with(&format!("{first}\"}}")));
    }

    #[test]
    fn hex_matches_the_usual_rendering() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn streamed_canonical_form_is_the_sorted_copy_byte_for_byte() {
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({"b": 1, "a": [3, {"z": null, "y": "\u{1f600}\"\\\n\u{7}"}], "": 2.5e-8}),
            json!({"n": -0.0, "big": 12345678901234567890u64, "f": 1.0, "s": "</x>"}),
            json!([{"b": true, "a": false}, "é", 1e300]),
        ];
        for v in values {
            let sorted = crate::pins::canonical(&v).to_string();
            let mut streamed = Vec::new();
            write_canonical(&v, &mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), sorted);
            assert_eq!(canonical_sha256(&v), sha256_hex(sorted.as_bytes()));
            if let Value::Object(map) = &v {
                assert_eq!(canonical_object_sha256(map), canonical_sha256(&v));
            }
        }
    }
}
