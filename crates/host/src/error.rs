//! The host's one error type.

use std::path::{Path, PathBuf};

use switchboard_oauth::OAuthProvider;

use crate::config::{ConfigProblem, ConfigProblems};
use crate::connect::ConnectError;

/// What can go wrong in the host's own operations (never in
/// [`Host::call`](crate::Host::call), which turns every failure into a
/// result).
///
/// Variants are sorted by who is at fault: the user's files and names
/// first, the environment (I/O) last. Match on them, or ask the
/// predicates ([`HostError::is_config`], [`HostError::is_io`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The config has problems (every one is listed).
    #[error(transparent)]
    Config(#[from] ConfigProblems),
    /// `pins accept` named nothing that is mounted.
    #[error(
        "no mounted tool or server matches {0:?}; name a tool (mcp__alias__tool) or a server alias"
    )]
    NoMatch(String),
    /// No server has this alias.
    #[error("no server is configured as {0:?}")]
    UnknownServer(String),
    /// The lockfile is not a lockfile we can read; it is left untouched.
    #[error(
        "the lockfile {path} is damaged ({reason}); fix it from version control or delete it to re-approve every tool"
    )]
    PinsDamaged {
        /// The lockfile.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The config file's shape does not allow an "allow always" edit (e.g.
    /// `permissions` is not an object).
    #[error("cannot update {path}: {what}")]
    ConfigEditShape {
        /// The file.
        path: PathBuf,
        /// What is in the way.
        what: String,
    },
    /// A configured server could not be started, reached or spoken to
    /// (the peer or the environment failed; the cause says which).
    #[error(transparent)]
    Connect(Box<ConnectError>),
    /// Reading or writing the lockfile failed.
    #[error("cannot access the lockfile {path}: {source}")]
    PinsIo {
        /// The lockfile.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Opening, reading or writing the audit log failed.
    #[error("audit log {path}: {source}")]
    AuditIo {
        /// The log file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing the config file for an edit failed.
    #[error("cannot update {path}: {source}")]
    ConfigEditIo {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl HostError {
    /// Whether the config has problems ([`HostError::Config`]).
    pub fn is_config(&self) -> bool {
        matches!(self, HostError::Config(_))
    }

    /// Whether a file could not be read or written (lockfile, audit log,
    /// config edit).
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            HostError::PinsIo { .. } | HostError::AuditIo { .. } | HostError::ConfigEditIo { .. }
        )
    }

    /// Whether a server refused authorization (401/403, or authorizing
    /// failed) while connecting.
    pub fn is_auth_failure(&self) -> bool {
        matches!(self, HostError::Connect(e) if e.is_auth_failure())
    }

    /// The server's OAuth client, when a connect failed after it was set
    /// up.
    pub fn auth(&self) -> Option<&OAuthProvider> {
        match self {
            HostError::Connect(e) => e.auth(),
            _ => None,
        }
    }

    /// Why a server could not be connected, when this is
    /// [`HostError::Connect`].
    pub fn connect_error(&self) -> Option<&ConnectError> {
        match self {
            HostError::Connect(e) => Some(e),
            _ => None,
        }
    }

    /// The config's problems, when this is [`HostError::Config`].
    pub fn config_problems(&self) -> Option<&ConfigProblems> {
        match self {
            HostError::Config(p) => Some(p),
            _ => None,
        }
    }

    /// The file involved, when one is.
    pub fn path(&self) -> Option<&Path> {
        match self {
            HostError::PinsDamaged { path, .. }
            | HostError::ConfigEditShape { path, .. }
            | HostError::PinsIo { path, .. }
            | HostError::AuditIo { path, .. }
            | HostError::ConfigEditIo { path, .. } => Some(path),
            _ => None,
        }
    }

    /// A config error of one problem in `file`.
    pub(crate) fn config(file: impl Into<String>, problem: ConfigProblem) -> HostError {
        HostError::Config(ConfigProblems {
            file: file.into(),
            problems: vec![problem],
        })
    }
}

impl From<ConnectError> for HostError {
    fn from(e: ConnectError) -> Self {
        HostError::Connect(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::HostError;
    use crate::AuditLog;

    #[test]
    fn io_failures_name_their_file_and_keep_the_cause() {
        let dir = std::env::temp_dir().join(format!("sb-host-error-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A directory is not a log file: opening it as one fails.
        let err = AuditLog::open(&dir).unwrap_err();
        assert!(err.is_io(), "{err}");
        assert!(!err.is_config());
        assert_eq!(err.path(), Some(dir.as_path()));
        assert!(std::error::Error::source(&err).is_some());
        assert!(err.to_string().starts_with("audit log "), "{err}");
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn config_problems_are_reachable() {
        let err = crate::Config::parse("{", crate::ConfigOrigin::Inline, &Default::default())
            .unwrap_err();
        assert!(err.is_config() && !err.is_io() && err.path().is_none());
        assert!(!err.config_problems().unwrap().problems.is_empty());
        assert!(matches!(err, HostError::Config(_)));
    }
}
