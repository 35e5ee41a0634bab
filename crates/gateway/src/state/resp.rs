//! RESP2, the Redis protocol, as far as the shared store needs it:
//! commands written as arrays of bulk strings, and replies parsed from a
//! buffer (simple strings, errors, integers, bulk strings, arrays).
//! Parsing is a pure function of the bytes read so far, so a reply cut
//! anywhere by the network is simply "not yet whole".

/// A reply of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`.
    Simple(String),
    /// `-ERR …`: the command failed (the text says why).
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nabc` (`None`: the null bulk string, `$-1`).
    Bulk(Option<Vec<u8>>),
    /// `*2\r\n…` (`None`: the null array, `*-1`).
    Array(Option<Vec<Reply>>),
}

/// The most a reply may hold: the store's replies are a few bytes, so
/// anything larger is not a store speaking RESP.
pub(crate) const MAX_REPLY: usize = 1 << 20;

/// The reply is not RESP, or larger than [`MAX_REPLY`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the store's reply is not RESP: {0}")]
pub(crate) struct ProtocolError(pub(crate) String);

/// `args` as one command, appended to `out`.
pub(crate) fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The first reply in `buf` and how many bytes it took; `None` while it
/// is not whole.
///
/// # Errors
/// [`ProtocolError`] when the bytes are not RESP.
pub(crate) fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    if buf.len() > MAX_REPLY {
        return Err(ProtocolError(format!("more than {MAX_REPLY} bytes")));
    }
    parse_at(buf, 0, 0)
}

/// Arrays nest no deeper than this in the store's replies.
const MAX_DEPTH: usize = 8;

/// The reply starting at `at`, and where it ends.
fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let Some(end) = line_end(buf, at + 1) else {
        return Ok(None);
    };
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let line = std::str::from_utf8(&buf[at + 1..end])
        .map_err(|_| ProtocolError("a header line that is not UTF-8".into()))?;
    let next = end + 2;
    let number = || {
        line.parse::<i64>()
            .map_err(|_| ProtocolError(format!("{line:?} is not a number")))
    };
    match kind {
        b'+' => Ok(Some((Reply::Simple(line.to_owned()), next))),
        b'-' => Ok(Some((Reply::Error(line.to_owned()), next))),
        b':' => Ok(Some((Reply::Integer(number()?), next))),
        b'$' => {
            let len = number()?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), next)));
            }
            let len = usize::try_from(len)
                .unwrap_or(usize::MAX)
                .min(MAX_REPLY + 1);
            if len > MAX_REPLY {
                return Err(ProtocolError(format!("more than {MAX_REPLY} bytes")));
            }
            if buf.len() < next + len + 2 {
                return Ok(None);
            }
            if &buf[next + len..next + len + 2] != b"\r\n" {
                return Err(ProtocolError("a bulk string not ended by CRLF".into()));
            }
            Ok(Some((
                Reply::Bulk(Some(buf[next..next + len].to_vec())),
                next + len + 2,
            )))
        }
        b'*' => {
            let count = number()?;
            if count < 0 {
                return Ok(Some((Reply::Array(None), next)));
            }
            if depth >= MAX_DEPTH {
                return Err(ProtocolError("arrays nested too deep".into()));
            }
            let mut items = Vec::new();
            let mut at = next;
            for _ in 0..count {
                match parse_at(buf, at, depth + 1)? {
                    Some((item, after)) => {
                        items.push(item);
                        at = after;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Reply::Array(Some(items)), at)))
        }
        other => Err(ProtocolError(format!(
            "unknown reply type {:?}",
            other as char
        ))),
    }
}

/// Where the line starting at `from` ends (its `\r`), once it is whole.
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    rest.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&[b"SET", b"k", b"a b"], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n");
    }

    #[test]
    fn every_reply_type_parses_and_says_where_it_ends() {
        let cases: &[(&[u8], Reply)] = &[
            (b"+OK\r\n", Reply::Simple("OK".into())),
            (b"-NOSCRIPT x\r\n", Reply::Error("NOSCRIPT x".into())),
            (b":-12\r\n", Reply::Integer(-12)),
            (b"$-1\r\n", Reply::Bulk(None)),
            (b"$4\r\na\r\nb\r\n", Reply::Bulk(Some(b"a\r\nb".to_vec()))),
            (b"*-1\r\n", Reply::Array(None)),
            (
                b"*2\r\n:1\r\n*1\r\n$0\r\n\r\n",
                Reply::Array(Some(vec![
                    Reply::Integer(1),
                    Reply::Array(Some(vec![Reply::Bulk(Some(Vec::new()))])),
                ])),
            ),
        ];
        for (bytes, want) in cases {
            let mut with_more = bytes.to_vec();
            with_more.extend_from_slice(b"+next\r\n");
            let (got, used) = parse(&with_more).unwrap().unwrap();
            assert_eq!(&got, want);
            assert_eq!(used, bytes.len());
            // Cut anywhere, the reply is not whole yet.
            for cut in 0..bytes.len() {
                assert_eq!(parse(&bytes[..cut]).unwrap(), None, "cut at {cut}");
            }
        }
    }

    #[test]
    fn what_is_not_resp_is_an_error() {
        for bad in [
            &b"?x\r\n"[..],
            b":one\r\n",
            b"$2\r\nabcd\r\n",
            b"$99999999999\r\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "*1\r\n".repeat(MAX_DEPTH + 1) + ":1\r\n";
        assert!(parse(deep.as_bytes()).is_err());
    }
}
