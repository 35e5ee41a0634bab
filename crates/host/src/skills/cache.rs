//! The verified-content cache: skill files the host fetched and verified,
//! kept on disk so a later load or read need not fetch them again
//! (SK-VER-7, SK-SEC-19).
//!
//! - It lives under the user's cache directory (`$XDG_CACHE_HOME/switchboard/skills`,
//!   else `~/.cache/switchboard/skills`), outside every place skills are
//!   discovered from (SK-SEC-21); content read from it is served-over-MCP
//!   content for ever, as it was (SK-SEC-22).
//! - A file's path encodes the server's alias and the file's URI:
//!   `ROOT/ALIAS/URI-ENCODED`, every byte of the URI outside
//!   `[A-Za-z0-9._-]` written `%XX`, so the same URI on two servers lands
//!   at two paths and both halves are recoverable from the path (SK-ENT-3).
//! - Only the host writes it (folders `0700`, files `0600`), and a file is
//!   never changed in place: new content goes to a temporary file renamed
//!   over the old one. Every use re-hashes the cached bytes against the
//!   current entry anyway (SK-SEC-20), so a stale or tampered file is
//!   fetched again, never used.
//! - A server's folder goes when the server is removed (SK-SEC-23).

use std::io::Write;
use std::path::{Path, PathBuf};

use tracing::debug;

/// The cache root the host uses when none is configured.
pub(crate) fn default_root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("switchboard").join("skills"))
}

/// The cache at one root.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
    root: PathBuf,
}

impl Cache {
    pub(crate) fn at(root: PathBuf) -> Cache {
        Cache { root }
    }

    /// Where the file at `uri` of `alias` is kept.
    pub(crate) fn path_of(&self, alias: &str, uri: &str) -> PathBuf {
        self.root.join(alias).join(encode(uri))
    }

    /// The cached bytes of the file at `uri` of `alias`, if any (to be
    /// verified by the caller before any use).
    pub(crate) fn get(&self, alias: &str, uri: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path_of(alias, uri)).ok()
    }

    /// Keeps verified bytes; a failure to write is only logged (the cache
    /// is an optimisation).
    pub(crate) fn put(&self, alias: &str, uri: &str, bytes: &[u8]) {
        if let Err(e) = self.write(alias, uri, bytes) {
            debug!(server = %alias, uri = %uri, error = %e, "could not cache a skill file");
        }
    }

    fn write(&self, alias: &str, uri: &str, bytes: &[u8]) -> std::io::Result<()> {
        let dir = self.root.join(alias);
        private_dir(&self.root)?;
        private_dir(&dir)?;
        // A fresh file renamed into place: the cached file is never
        // changed in place, and a reader never sees half of one.
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all().ok();
        tmp.persist(dir.join(encode(uri))).map_err(|e| e.error)?;
        Ok(())
    }

    /// Removes everything cached for `alias`.
    pub(crate) fn remove_server(&self, alias: &str) {
        let dir = self.root.join(alias);
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                debug!(server = %alias, error = %e, "could not remove the skill cache");
            }
        }
    }
}

/// Creates `dir` (and its parents) and makes it `0700`.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// A URI as one file name: bytes outside `[A-Za-z0-9._-]` as `%XX`
/// (reversible): the file name a cached file of `uri` has.
pub fn encode(uri: &str) -> String {
    let mut out = String::with_capacity(uri.len() + 8);
    for b in uri.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    // `.` and `..` alone would name folders.
    if out.chars().all(|c| c == '.') {
        out = out.replace('.', "%2E");
    }
    out
}

/// The URI a cache file name encodes.
#[cfg(test)]
fn decode(name: &str) -> Option<String> {
    switchboard_wire::percent::decode(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    // SK-ENT-3: the path encodes the server and the URI, both recoverable.
    #[test]
    fn a_cached_file_path_names_its_server_and_uri() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path().join("skills"));
        let uri = "skill://acme/billing/refunds/SKILL.md";
        let a = cache.path_of("a", uri);
        let b = cache.path_of("b", uri);
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(!name.contains('/'));
        assert_eq!(decode(name).as_deref(), Some(uri));
        assert_eq!(a.parent().unwrap().file_name().unwrap(), "a");
        assert_eq!(encode(".."), "%2E%2E");

        cache.put("a", uri, b"one");
        assert_eq!(cache.get("a", uri).as_deref(), Some(&b"one"[..]));
        assert!(cache.get("b", uri).is_none());
        cache.put("a", uri, b"two");
        assert_eq!(cache.get("a", uri).as_deref(), Some(&b"two"[..]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&a), 0o600);
            assert_eq!(mode(a.parent().unwrap()), 0o700);
        }
        cache.remove_server("a");
        assert!(cache.get("a", uri).is_none());
        assert!(!dir.path().join("skills").join("a").exists());
    }
}
