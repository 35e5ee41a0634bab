//! Protocol revisions Switchboard speaks.

/// The modern, stateless revision this implementation is built for.
pub const LATEST: &str = "2026-07-28";

/// The last revision with the `initialize` handshake; spoken to legacy peers.
pub const LEGACY: &str = "2025-11-25";

/// Older handshake revisions a legacy peer may answer `initialize` with.
pub const LEGACY_ACCEPTED: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Modern revisions (no `initialize`, per-request `_meta`) we can speak.
pub const MODERN_SUPPORTED: &[&str] = &[LATEST];

/// Whether `version` is a modern revision we speak.
pub fn is_modern_supported(version: &str) -> bool {
    MODERN_SUPPORTED.contains(&version)
}

/// Picks the newest modern revision that both sides support, given the
/// `supported` list a server sent.
pub fn pick_modern(supported: &[String]) -> Option<&'static str> {
    MODERN_SUPPORTED
        .iter()
        .copied()
        .find(|ours| supported.iter().any(|theirs| theirs == ours))
}

/// The era of a peer: which wire it speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 and later: stateless, `server/discover`, `_meta` on every request.
    Modern,
    /// 2025-11-25 and earlier: `initialize` handshake, sessions.
    Legacy,
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_a_shared_version_or_none() {
        assert_eq!(
            pick_modern(&["2026-07-28".into(), "2099-01-01".into()]),
            Some(LATEST)
        );
        assert_eq!(pick_modern(&["2099-01-01".into()]), None);
    }
}
