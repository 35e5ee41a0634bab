//! The wire each HTTP endpoint was found to speak, remembered for the life
//! of the process (VER-07: cache the modern/legacy verdict per origin, and
//! probe again when it fails).
//!
//! Keyed by origin and path: two MCP servers behind one origin may be of
//! different eras, and a wrong guess costs a probe.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use http::Uri;
use switchboard_wire::Era;

/// What was learned about an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireKind {
    /// It answered a 2026-07-28 request.
    Modern,
    /// It completed a 2025-11-25 Streamable HTTP `initialize`.
    Legacy,
    /// It is a 2024-11-05 HTTP+SSE server.
    HttpSse,
}

fn table() -> &'static Mutex<HashMap<String, WireKind>> {
    static TABLE: OnceLock<Mutex<HashMap<String, WireKind>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The key of an endpoint: scheme, lowercase authority and path, no query.
pub(crate) fn endpoint_key(uri: &Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_ascii_lowercase())
        .unwrap_or_default();
    let path = match uri.path() {
        "" => "/",
        p => p,
    };
    format!("{scheme}://{authority}{path}")
}

pub(crate) fn remember(key: &str, kind: WireKind) {
    let mut table = table().lock().unwrap_or_else(|e| e.into_inner());
    if table.get(key) != Some(&kind) {
        table.insert(key.to_owned(), kind);
    }
}

pub(crate) fn remembered(key: &str) -> Option<WireKind> {
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
        .copied()
}

pub(crate) fn forget_key(key: &str) {
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(key);
}

/// The era remembered for the MCP endpoint at `url`, if it has been
/// reached before in this process.
pub fn remembered_era(url: &str) -> Option<Era> {
    let uri: Uri = url.parse().ok()?;
    remembered(&endpoint_key(&uri)).map(|k| match k {
        WireKind::Modern => Era::Modern,
        WireKind::Legacy | WireKind::HttpSse => Era::Legacy,
    })
}

/// Forgets what was learned about the endpoint at `url`, so the next
/// transport probes it again (after the remembered era failed).
pub fn forget_era(url: &str) {
    if let Ok(uri) = url.parse::<Uri>() {
        forget_key(&endpoint_key(&uri));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_host_case_and_query() {
        let a: Uri = "http://LocalHost:8080/mcp?x=1".parse().unwrap();
        let b: Uri = "http://localhost:8080/mcp".parse().unwrap();
        assert_eq!(endpoint_key(&a), endpoint_key(&b));
        let c: Uri = "http://localhost:8080".parse().unwrap();
        assert_eq!(endpoint_key(&c), "http://localhost:8080/");
    }

    #[test]
    fn remembers_and_forgets() {
        let url = "http://era-test.invalid:1/mcp";
        assert_eq!(remembered_era(url), None);
        remember(&endpoint_key(&url.parse().unwrap()), WireKind::HttpSse);
        assert_eq!(remembered_era(url), Some(Era::Legacy));
        forget_era(url);
        assert_eq!(remembered_era(url), None);
    }
}
