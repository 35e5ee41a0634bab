//! `%XX` escapes (RFC 3986 percent-encoding) decoded, strictly: one
//! decoder for every place that reads them (URI template variables, root
//! paths, cache file names, credentials in a store URL), and the bytes a
//! URI host may hold.

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

/// A byte of an RFC 3986 reg-name: unreserved, sub-delims or `%`. A
/// `match` (a bit test), not a search of the list for each byte of every
/// `Host` header or URL host read.
#[must_use]
pub fn is_reg_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b'%'
        )
}

#[cfg(test)]
mod tests {
    use super::{decode, is_reg_name_byte};

    #[test]
    fn reg_name_bytes_are_the_rfc_3986_ones() {
        for b in 0..=u8::MAX {
            let rfc = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b);
            assert_eq!(is_reg_name_byte(b), rfc, "byte {b:#04x}");
        }
    }

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
