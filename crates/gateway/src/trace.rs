//! W3C Trace Context through the gateway: the upstream request's
//! `traceparent` (from `_meta`) is continued, or a trace is started when it
//! is absent or malformed; the downstream call gets the same trace id with
//! the gateway's span as its parent (or, when the gateway records a span
//! for the downstream call too, that span), and `tracestate` passes on
//! unchanged.

use switchboard_host::TraceContext;
use switchboard_wire::RequestMeta;

/// The trace ids of one upstream `tools/call`, as bytes: they are written
/// as hex once, into the downstream request's `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallTrace {
    /// The trace.
    pub(crate) trace_id: [u8; 16],
    /// The upstream caller's span (the parent of ours), when it sent one.
    pub(crate) remote_parent: Option<[u8; 8]>,
    /// The gateway's span for the upstream request.
    pub(crate) span_id: [u8; 8],
    /// The span of the downstream call, the child of `span_id`, when one
    /// is recorded: the downstream server then sees it as its parent, and
    /// `span_id` otherwise.
    pub(crate) downstream_span_id: Option<[u8; 8]>,
    /// The sampled flag (the only trace flag defined).
    pub(crate) sampled: bool,
    /// Vendor entries, passed on unchanged.
    pub(crate) tracestate: Option<String>,
}

impl CallTrace {
    /// The trace of a request carrying `meta`: its trace continued, or a
    /// new one (sampled) when it has none or a malformed one; with a span
    /// of its own for the downstream call when `downstream_span`.
    pub(crate) fn of(meta: &RequestMeta, downstream_span: bool) -> CallTrace {
        let parsed = meta.traceparent.as_deref().and_then(parse);
        let (trace_id, remote_parent, sampled, tracestate) = match parsed {
            Some(p) => (
                p.trace_id,
                Some(p.span_id),
                p.sampled,
                meta.tracestate.clone(),
            ),
            // A tracestate without a valid traceparent is dropped, as the
            // W3C recommendation says.
            None => (random::<16>(), None, true, None),
        };
        CallTrace {
            trace_id,
            remote_parent,
            span_id: random::<8>(),
            downstream_span_id: downstream_span.then(random::<8>),
            sampled,
            tracestate,
        }
    }

    /// What the downstream request carries in `_meta` (and, when the
    /// downstream call has a span of its own, that span's parent, for the
    /// host's observer to record it).
    pub(crate) fn downstream(&self) -> TraceContext {
        let parent = self.downstream_span_id.as_ref().unwrap_or(&self.span_id);
        // `00-` trace `-` span `-` flags: 55 characters.
        let mut traceparent = String::with_capacity(55);
        traceparent.push_str("00-");
        push_hex(&mut traceparent, &self.trace_id);
        traceparent.push('-');
        push_hex(&mut traceparent, parent);
        traceparent.push_str(if self.sampled { "-01" } else { "-00" });
        TraceContext {
            traceparent,
            tracestate: self.tracestate.clone(),
            parent_span_id: self
                .downstream_span_id
                .is_some()
                .then(|| hex(&self.span_id)),
        }
    }
}

/// A valid `traceparent`'s fields.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    sampled: bool,
}

/// Parses `VERSION-TRACEID-SPANID-FLAGS` (lowercase hex; a future version
/// may append fields after a `-`; version `ff` and all-zero ids are
/// invalid).
fn parse(text: &str) -> Option<Parsed> {
    let mut parts = text.trim().split('-');
    let version = parts.next()?;
    let trace_id = parts.next()?;
    let span_id = parts.next()?;
    let flags = parts.next()?;
    let rest = parts.next();
    let lower_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !(version.len() == 2 && lower_hex(version) && version != "ff")
        || (version == "00" && rest.is_some())
        || !(lower_hex(trace_id) && lower_hex(span_id) && lower_hex(flags))
    {
        return None;
    }
    let trace_id = unhex::<16>(trace_id).filter(|id| id.iter().any(|b| *b != 0))?;
    let span_id = unhex::<8>(span_id).filter(|id| id.iter().any(|b| *b != 0))?;
    // Only the sampled bit is defined; pass on what we understand.
    let [flags] = unhex::<1>(flags)?;
    Some(Parsed {
        trace_id,
        span_id,
        sampled: flags & 1 == 1,
    })
}

/// `N` random bytes, never all zero (an all-zero id is invalid).
///
/// Trace ids need to be unique and unpredictable enough not to collide,
/// not secret: a per-thread SplitMix64 stream seeded once from the system's
/// randomness gives them without a system call per id.
fn random<const N: usize>() -> [u8; N] {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(seed());
    }
    let mut bytes = [0u8; N];
    for chunk in bytes.chunks_mut(8) {
        let word = STATE.with(|state| {
            let next = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
            state.set(next);
            mix(next)
        });
        chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
    }
    if bytes.iter().all(|b| *b == 0) {
        bytes[N - 1] = 1;
    }
    bytes
}

/// The seed of one thread's id stream: system randomness, or (without
/// any) the time and a process-wide counter, which still keep ids unique.
fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_ok() {
        return u64::from_le_bytes(bytes);
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Any 64 bits of the time serve as a seed.
    mix(time as u64 ^ n.rotate_left(32))
}

/// SplitMix64's output function: every bit of the input reaches every bit
/// of the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    out
}

/// Appends `bytes` to `out` in lowercase hex.
fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
}

/// The `N` bytes that `text` (exactly `2 * N` hex digits, either case)
/// spells; `None` for anything else.
pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unhex_reads_back_what_hex_writes_and_nothing_else() {
        let bytes = [0x00, 0x0a, 0xf7, 0x65, 0xff, 0x10, 0x9c, 0x01];
        assert_eq!(unhex::<8>(&hex(&bytes)), Some(bytes));
        assert_eq!(unhex::<2>("ABcd"), Some([0xab, 0xcd]));
        for bad in ["abc", "abcdef", "0g00", "+1ab", " 1ab", "ab\u{e9}"] {
            assert_eq!(unhex::<2>(bad), None, "{bad:?}");
        }
    }

    fn meta(tp: Option<&str>, ts: Option<&str>) -> RequestMeta {
        let mut m = RequestMeta::new("2026-07-28");
        m.traceparent = tp.map(str::to_owned);
        m.tracestate = ts.map(str::to_owned);
        m
    }

    #[test]
    fn continues_a_valid_traceparent_with_new_span_ids() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = CallTrace::of(&meta(Some(tp), Some("congo=t61rcWkgMzE")), true);
        assert_eq!(hex(&t.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(
            t.remote_parent.map(|p| hex(&p)).as_deref(),
            Some("00f067aa0ba902b7")
        );
        assert_ne!(hex(&t.span_id), "00f067aa0ba902b7");
        let own = t.downstream_span_id.unwrap();
        assert_ne!(own, t.span_id);
        let down = t.downstream();
        assert_eq!(
            down.traceparent,
            format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01", hex(&own))
        );
        assert_eq!(down.parent_span_id, Some(hex(&t.span_id)));
        assert_eq!(down.tracestate.as_deref(), Some("congo=t61rcWkgMzE"));
    }

    #[test]
    fn without_a_downstream_span_the_gateways_span_is_the_parent() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = CallTrace::of(&meta(Some(tp), None), false);
        assert_eq!(t.downstream_span_id, None);
        let down = t.downstream();
        assert_eq!(
            down.traceparent,
            format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01", hex(&t.span_id))
        );
        // Nothing for the host's observer to record as a span.
        assert_eq!(down.parent_span_id, None);
    }

    #[test]
    fn starts_a_trace_when_absent_or_malformed() {
        let cases = [
            None,
            Some("garbage"),
            Some("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
            Some("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
        ];
        for tp in cases {
            let t = CallTrace::of(&meta(tp, Some("a=b")), false);
            assert_eq!(t.remote_parent, None, "{tp:?}");
            assert_ne!(
                hex(&t.trace_id),
                "4bf92f3577b34da6a3ce929d0e0e4736",
                "{tp:?}"
            );
            assert!(t.sampled, "a new trace is sampled");
            assert_eq!(t.tracestate, None, "{tp:?}");
            assert!(parse(&t.downstream().traceparent).is_some());
        }
    }

    #[test]
    fn ids_are_distinct_nonzero_lowercase_hex() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let t = CallTrace::of(&meta(None, None), true);
            let own = hex(&t.downstream_span_id.unwrap());
            for id in [hex(&t.trace_id), hex(&t.span_id), own] {
                assert!(
                    id.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                );
                assert!(id.bytes().any(|b| b != b'0'));
                assert!(seen.insert(id.clone()), "repeated id {id}");
            }
        }
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn a_future_version_may_carry_more_fields() {
        let p = parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-more");
        assert_eq!(p.map(|p| p.sampled), Some(true));
        let p = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        assert_eq!(p.map(|p| p.sampled), Some(false));
        let t = CallTrace::of(
            &meta(
                Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02"),
                None,
            ),
            false,
        );
        assert!(
            t.downstream().traceparent.ends_with("-00"),
            "unsampled stays unsampled"
        );
    }
}
