//! `%XX` escapes (RFC 3986 percent-encoding) decoded, strictly: one
//! decoder for every place that reads them (URI template variables, root
//! paths, cache file names, credentials in a store URL).

/// `text` with every `%XX` escape decoded; `None` when an escape is not
/// two hex digits or the bytes are not UTF-8. A `+` stays a `+`.
#[must_use]
pub fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn escapes_are_decoded_and_bad_ones_refused() {
        assert_eq!(decode("a%20b%2Fc+d").as_deref(), Some("a b/c+d"));
        assert_eq!(decode("caf%C3%A9").as_deref(), Some("café"));
        assert_eq!(decode("plain").as_deref(), Some("plain"));
        // Not two hex digits, cut short, a sign inside, not UTF-8.
        for bad in ["%zz", "%4", "%", "%+1", "%FF"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
