//! W3C Trace Context through the gateway: the upstream request's
//! `traceparent` (from `_meta`) is continued, or a trace is started when it
//! is absent or malformed; the downstream call gets the same trace id with
//! a span id of its own, and `tracestate` passes on unchanged.

use switchboard_host::TraceContext;
use switchboard_wire::RequestMeta;

/// The trace ids of one upstream `tools/call`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallTrace {
    /// 32 lowercase hex digits.
    pub(crate) trace_id: String,
    /// The upstream caller's span (the parent of ours), when it sent one.
    pub(crate) remote_parent: Option<String>,
    /// The gateway's span for the upstream request.
    pub(crate) span_id: String,
    /// The span of the downstream call, the child of `span_id`: the one the
    /// downstream server sees as its parent.
    pub(crate) downstream_span_id: String,
    /// Trace flags, as two hex digits (`01`: sampled).
    pub(crate) flags: String,
    /// Vendor entries, passed on unchanged.
    pub(crate) tracestate: Option<String>,
}

impl CallTrace {
    /// The trace of a request carrying `meta`: its trace continued, or a
    /// new one (sampled) when it has none or a malformed one.
    pub(crate) fn of(meta: &RequestMeta) -> CallTrace {
        let parsed = meta.traceparent.as_deref().and_then(parse);
        let (trace_id, remote_parent, flags, tracestate) = match parsed {
            Some(p) => (
                p.trace_id,
                Some(p.span_id),
                p.flags,
                meta.tracestate.clone(),
            ),
            // A tracestate without a valid traceparent is dropped, as the
            // W3C recommendation says.
            None => (hex(&random::<16>()), None, "01".to_owned(), None),
        };
        CallTrace {
            trace_id,
            remote_parent,
            span_id: hex(&random::<8>()),
            downstream_span_id: hex(&random::<8>()),
            flags,
            tracestate,
        }
    }

    /// What the downstream request carries in `_meta`.
    pub(crate) fn downstream(&self) -> TraceContext {
        TraceContext {
            traceparent: format!(
                "00-{}-{}-{}",
                self.trace_id, self.downstream_span_id, self.flags
            ),
            tracestate: self.tracestate.clone(),
            parent_span_id: Some(self.span_id.clone()),
        }
    }
}

/// A valid `traceparent`'s fields.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    trace_id: String,
    span_id: String,
    flags: String,
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
    let lower_hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let ok = lower_hex(version, 2)
        && version != "ff"
        && (version != "00" || rest.is_none())
        && lower_hex(trace_id, 32)
        && trace_id.bytes().any(|b| b != b'0')
        && lower_hex(span_id, 16)
        && span_id.bytes().any(|b| b != b'0')
        && lower_hex(flags, 2);
    ok.then(|| Parsed {
        trace_id: trace_id.to_owned(),
        span_id: span_id.to_owned(),
        // Only the sampled bit is defined; pass on what we understand.
        flags: if u8::from_str_radix(flags, 16).is_ok_and(|f| f & 1 == 1) {
            "01".to_owned()
        } else {
            "00".to_owned()
        },
    })
}

/// `N` random bytes, never all zero (an all-zero id is invalid).
fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if getrandom::fill(&mut bytes).is_err() || bytes.iter().all(|b| *b == 0) {
        // No randomness: an id unique in this process still keeps the
        // trace well-formed.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = (time ^ u128::from(n)).to_be_bytes();
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = seed[i % seed.len()];
        }
        bytes[N - 1] |= 1;
    }
    bytes
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(tp: Option<&str>, ts: Option<&str>) -> RequestMeta {
        let mut m = RequestMeta::new("2026-07-28");
        m.traceparent = tp.map(str::to_owned);
        m.tracestate = ts.map(str::to_owned);
        m
    }

    #[test]
    fn continues_a_valid_traceparent_with_new_span_ids() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = CallTrace::of(&meta(Some(tp), Some("congo=t61rcWkgMzE")));
        assert_eq!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.remote_parent.as_deref(), Some("00f067aa0ba902b7"));
        assert_ne!(t.span_id, "00f067aa0ba902b7");
        assert_ne!(t.downstream_span_id, t.span_id);
        let down = t.downstream();
        assert!(
            down.traceparent
                .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
        );
        assert!(down.traceparent.ends_with("-01"));
        assert!(!down.traceparent.contains("00f067aa0ba902b7"));
        assert_eq!(down.tracestate.as_deref(), Some("congo=t61rcWkgMzE"));
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
            let t = CallTrace::of(&meta(tp, Some("a=b")));
            assert_eq!(t.remote_parent, None, "{tp:?}");
            assert_eq!(t.trace_id.len(), 32);
            assert_ne!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736", "{tp:?}");
            assert_eq!(t.tracestate, None, "{tp:?}");
            assert!(parse(&t.downstream().traceparent).is_some());
        }
    }

    #[test]
    fn a_future_version_may_carry_more_fields() {
        let p = parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-more");
        assert_eq!(p.map(|p| p.flags).as_deref(), Some("01"));
    }
}
