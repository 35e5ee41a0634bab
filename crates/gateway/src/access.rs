//! Files that grant access to the gateway: the tokens file (who may call),
//! the state key file (what seals approvals and tasks) and the config it
//! serves (which servers run, under which rules). Whoever can write one of
//! them can make themselves a caller, forge an approval or run a command,
//! so [`check_access_file`] refuses a file that its group or other users
//! may write, or that belongs to a user other than this process's (or
//! root), and warns about a secret one (tokens, key) that others may read.
//! It is the one check: the tokens and config files are checked at start
//! and at every reload (a refused file is reported and the one in use
//! kept), the state key file when it is read.
//!
//! A file's folder is not checked: one writable by others can have the
//! file replaced, which the next reload's check then refuses.

use std::fmt;
use std::path::{Path, PathBuf};

/// What a checked file is for, which decides the words used and whether
/// others reading it is worth a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessFile {
    /// The named tokens callers authenticate with (`--tokens-file`).
    Tokens,
    /// The key `requestState` and task ids are sealed with
    /// (`--state-key-file`).
    StateKey,
    /// The config the gateway serves.
    Config,
}

impl AccessFile {
    /// The file as messages name it.
    fn what(self) -> &'static str {
        match self {
            AccessFile::Tokens => "tokens file",
            AccessFile::StateKey => "state key file",
            AccessFile::Config => "config file",
        }
    }

    /// What someone who can write it could do, for the refusal.
    fn stake(self) -> &'static str {
        match self {
            AccessFile::Tokens => "could add a token of their own and call every tool",
            AccessFile::StateKey => "could replace the key and forge approvals",
            AccessFile::Config => "could add a server command or allow rules",
        }
    }

    /// Whether reading it gives access (its contents are secrets).
    fn secret(self) -> bool {
        matches!(self, AccessFile::Tokens | AccessFile::StateKey)
    }
}

/// A file [`check_access_file`] refused: who else may write it, or whose
/// it is, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing the {what} {path}: {problem}, so another user {stake}; {fix}")]
pub struct AccessFileError {
    what: &'static str,
    path: PathBuf,
    problem: String,
    stake: &'static str,
    fix: String,
}

impl AccessFileError {
    /// The refused file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A warning about a file [`check_access_file`] accepted: a secret that
/// others may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessWarning(String);

impl fmt::Display for AccessWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks the file at `path` that grants access as `kind` says: refused
/// when its group or other users may write it, or when it belongs to
/// another user than this process's effective one or root; accepted with
/// a warning when it holds secrets ([`AccessFile::Tokens`],
/// [`AccessFile::StateKey`]) its group or other users may read. A file
/// that cannot be looked at is left to the read that follows, which
/// reports it. Symbolic links are followed: the file read is checked.
/// On platforms without Unix permissions nothing is checked.
///
/// # Errors
/// [`AccessFileError`] naming the file, the problem and the fix.
pub fn check_access_file(
    path: &Path,
    kind: AccessFile,
) -> Result<Option<AccessWarning>, AccessFileError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None);
        };
        check_mode(path, kind, meta.mode(), meta.uid(), effective_uid())
    }
    #[cfg(not(unix))]
    {
        let _ = (path, kind);
        Ok(None)
    }
}

/// This process's effective user id.
#[cfg(unix)]
fn effective_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// [`check_access_file`] on a file's mode and owner, for a process of
/// user `euid`.
fn check_mode(
    path: &Path,
    kind: AccessFile,
    mode: u32,
    owner: u32,
    euid: u32,
) -> Result<Option<AccessWarning>, AccessFileError> {
    let refuse = |problem: String, fix: String| AccessFileError {
        what: kind.what(),
        path: path.to_owned(),
        problem,
        stake: kind.stake(),
        fix,
    };
    let shown = path.display();
    let writers = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => Some("its group and all users"),
        (true, false) => Some("its group"),
        (false, true) => Some("all users"),
        (false, false) => None,
    };
    if let Some(writers) = writers {
        return Err(refuse(
            format!("{writers} may write it (mode {:04o})", mode & 0o7777),
            format!("run `chmod go-w {shown}`"),
        ));
    }
    // Root may write any file anyway: a file of root's is as safe as one
    // of our own (as ssh's StrictModes has it).
    if owner != euid && owner != 0 {
        return Err(refuse(
            format!("it belongs to user {owner}, not to this process's user {euid} or root"),
            format!("make it this user's (`chown {euid} {shown}`) or root's"),
        ));
    }
    if kind.secret() && mode & 0o044 != 0 {
        let readers = if mode & 0o004 != 0 {
            "all users"
        } else {
            "its group"
        };
        return Ok(Some(AccessWarning(format!(
            "the {} {shown} may be read by {readers} (mode {:04o}): whoever reads it can use what it holds; \
             run `chmod go-r {shown}`",
            kind.what(),
            mode & 0o7777
        ))));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The decision on every mode and owner, without files (the tests of
    // the watched files use real ones).
    #[test]
    fn modes_and_owners_decide() {
        let p = Path::new("/x/tokens");
        let ok = |mode, kind| check_mode(p, kind, mode, 1000, 1000);
        assert_eq!(ok(0o600, AccessFile::Tokens), Ok(None));
        assert_eq!(ok(0o400, AccessFile::StateKey), Ok(None));
        assert_eq!(ok(0o644, AccessFile::Config), Ok(None));
        for mode in [0o620, 0o602, 0o666, 0o777] {
            for kind in [AccessFile::Tokens, AccessFile::StateKey, AccessFile::Config] {
                let e = ok(mode, kind).unwrap_err();
                assert!(e.to_string().contains("may write it"), "{e}");
                assert!(e.to_string().contains("chmod go-w /x/tokens"), "{e}");
            }
        }
        let warned = ok(0o644, AccessFile::Tokens).unwrap().unwrap();
        assert!(warned.to_string().contains("all users"), "{warned}");
        let warned = ok(0o640, AccessFile::StateKey).unwrap().unwrap();
        assert!(warned.to_string().contains("its group"), "{warned}");
        // Another user's file is refused; root's is not.
        let e = check_mode(p, AccessFile::Tokens, 0o600, 65534, 1000).unwrap_err();
        assert!(e.to_string().contains("belongs to user 65534"), "{e}");
        assert_eq!(check_mode(p, AccessFile::Config, 0o644, 0, 1000), Ok(None));
    }

    // The same on real files: a key others may read is used with a
    // warning, one they may write is refused, a missing one is left to
    // the read.
    #[cfg(unix)]
    #[test]
    fn real_files_are_checked() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "k").unwrap();
        let chmod = |mode| {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        chmod(0o600);
        assert_eq!(check_access_file(&path, AccessFile::StateKey), Ok(None));
        chmod(0o644);
        let warning = check_access_file(&path, AccessFile::StateKey)
            .unwrap()
            .unwrap();
        assert!(warning.to_string().contains("chmod go-r"), "{warning}");
        assert_eq!(check_access_file(&path, AccessFile::Config), Ok(None));
        chmod(0o660);
        let e = check_access_file(&path, AccessFile::StateKey).unwrap_err();
        assert!(e.to_string().contains("forge approvals"), "{e}");
        let missing = dir.path().join("missing");
        assert_eq!(check_access_file(&missing, AccessFile::Tokens), Ok(None));
    }
}
