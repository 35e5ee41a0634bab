//! A JSON string written by hand, byte for byte as serde_json writes it,
//! eight bytes at a time while nothing needs escaping: the text of a tool
//! result is the longest string of most answers, and serde_json looks up
//! each of its bytes in a table.

/// Appends `s` to `out` as a JSON string, quotes included, escaped exactly
/// as `serde_json::to_writer` escapes a `&str`: `"` and `\` with a
/// backslash, the control characters below U+0020 as `\b`, `\t`, `\n`,
/// `\f`, `\r` or `\u00xx`, and nothing else.
///
/// ```
/// let mut out = Vec::new();
/// switchboard_wire::json_text::write_str(&mut out, "say \"hi\"\n");
/// assert_eq!(out, br#""say \"hi\"\n""#);
/// ```
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `copied`: where the bytes not yet written begin.
    let (mut copied, mut at) = (0, 0);
    while let Some(&chunk) = bytes.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
        let flags = escape_flags(u64::from_le_bytes(chunk));
        if flags == 0 {
            at += 8;
            continue;
        }
        // The lowest flag is always a byte to escape (a false flag only
        // ever sits above a true one): write up to it, then its escape,
        // and read on from the byte after it.
        at += (flags.trailing_zeros() / 8) as usize;
        out.extend_from_slice(&bytes[copied..at]);
        write_escape(out, bytes[at]);
        at += 1;
        copied = at;
    }
    // The last few bytes, one by one.
    for (offset, &byte) in bytes[at..].iter().enumerate() {
        if needs_escaping(byte) {
            out.extend_from_slice(&bytes[copied..at + offset]);
            write_escape(out, byte);
            copied = at + offset + 1;
        }
    }
    out.extend_from_slice(&bytes[copied..]);
    out.push(b'"');
}

/// Whether JSON needs `byte` escaped: below 0x20, `"` or `\`.
fn needs_escaping(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Each byte of a word set to 0x01.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Each byte of a word set to 0x80.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` (little-endian) that may need
/// escaping: zero when none does, and the lowest bit set, if any, is
/// always that of a byte that does (the subtraction's borrow can only
/// set bits above a byte that sets its own).
fn escape_flags(word: u64) -> u64 {
    // A byte below n (n <= 0x80) sets its high bit in (w - n·ONES) & !w;
    // a zero byte, after xor with the byte sought, is below 1.
    let below = |w: u64, n: u64| w.wrapping_sub(n * ONES) & !w;
    let control = below(word, 0x20);
    let quote = below(word ^ (u64::from(b'"') * ONES), 1);
    let backslash = below(word ^ (u64::from(b'\\') * ONES), 1);
    (control | quote | backslash) & HIGHS
}

/// The escape of one byte below 0x20, `"` or `\`, as serde_json writes it.
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x09 => b't',
        0x0a => b'n',
        0x0c => b'f',
        0x0d => b'r',
        _ => {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0x0f)]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_as_serde(s: &str) {
        let mut ours = Vec::new();
        write_str(&mut ours, s);
        let theirs = serde_json::to_vec(s).expect("a string serializes");
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{s:?}"
        );
    }

    #[test]
    fn every_ascii_and_latin_1_character_is_written_as_serde_writes_it() {
        for c in (0u32..0x100).filter_map(char::from_u32) {
            same_as_serde(&c.to_string());
            // At every offset within and across the eight-byte words.
            for pad in 0..17 {
                same_as_serde(&format!("{}{c}{}", "a".repeat(pad), "b".repeat(16 - pad)));
            }
        }
    }

    #[test]
    fn mixed_strings_are_written_as_serde_writes_them() {
        let pieces = [
            "a", "\"", "\\", "\n", "\u{1}", "\u{1f}", " ", "~", "\u{7f}", "é", "日本", "😀",
            "\u{202e}", "/", "\r\n", "\t", "\u{0}",
        ];
        // A fixed pseudo-random walk over the pieces, lengths 0 to 60.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..3000 {
            let mut s = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 61) as usize;
            for i in 0..len {
                let pick =
                    (state.rotate_left(i as u32 * 5) as usize).wrapping_add(i) % pieces.len();
                s.push_str(pieces[pick]);
            }
            same_as_serde(&s);
        }
        same_as_serde("");
        same_as_serde(&"x".repeat(1000));
        same_as_serde(&"\"".repeat(33));
    }

    #[test]
    fn the_lowest_flag_of_a_word_is_its_first_byte_to_escape() {
        // Every byte at every place among plain letters, and after another
        // byte to escape (where a false flag could arise).
        for byte in 0u8..=255 {
            for at in 0..8 {
                for before in [b'a', b'"', 0x00, 0x1f, b'\\'] {
                    let mut word = [b'a'; 8];
                    word[at] = byte;
                    if at > 0 {
                        word[at - 1] = before;
                    }
                    let first = word.iter().position(|&b| needs_escaping(b));
                    let flags = escape_flags(u64::from_le_bytes(word));
                    let lowest = (flags != 0).then(|| (flags.trailing_zeros() / 8) as usize);
                    assert_eq!(lowest, first, "{word:?}");
                }
            }
        }
    }
}
