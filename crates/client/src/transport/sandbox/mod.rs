//! What a stdio server may do: its environment ([`Environment`]) and its
//! confinement ([`Sandbox`]), applied between fork and exec so that every
//! process the server starts inherits them.
//!
//! The mechanisms are the kernel's own (Linux):
//! - the environment is rebuilt from a short list of names instead of
//!   inherited whole ([`Environment::Scrubbed`]);
//! - `no_new_privs` and a seccomp filter that answers `EPERM` to system
//!   calls no tool server needs (`ptrace`, `mount`, `bpf`, module loading,
//!   `kexec`, …) form the *baseline*;
//! - Landlock confines the file system to the allowed paths (read and
//!   execute, or read and write), at the best ABI the kernel offers;
//! - a new network namespace with no interface but a down loopback takes
//!   the network away;
//! - rlimits bound memory (address space), CPU time and processes; the
//!   process bound is a per-server cgroup (`pids.max`) where one can be
//!   made, else `RLIMIT_NPROC` in a user namespace of the server's own,
//!   else `RLIMIT_NPROC` as the kernel counts it: over all the user's
//!   processes (see [`Confinement`] for what each means).
//!
//! Everything that allocates (the BPF program, the Landlock ruleset and
//! its path handles, the cgroup, the temp dir, the uid map lines) is built
//! before the fork: the child of a multithreaded parent may only make
//! async-signal-safe calls. The child reports each step on a pipe
//! (`status`), so the parent knows what was applied, what was skipped and
//! which step refused.
//!
//! Where the kernel lacks a mechanism that the sandbox asks for, the spawn
//! fails with a reason naming it, unless [`Sandbox::required`] is `false`;
//! the baseline is best effort everywhere (it never stops a server).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{Leftovers, Prepared, plan, prepare};

#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
pub(crate) use other::{Leftovers, Prepared, plan, prepare};

/// Words naming the system calls the baseline filter refuses, as servers
/// write them in their errors.
const DENIED_NAMES: &[&str] = &[
    "ptrace",
    "process_vm",
    "mount",
    "pivot_root",
    "chroot",
    "kexec",
    "bpf",
    "init_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "perf_event",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "settimeofday",
    "clock_settime",
    "syslog",
    "open_by_handle_at",
];

/// Variables every scrubbed environment keeps: what a program needs to
/// find its tools, its home, its locale, its terminal and a temp dir.
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TMPDIR", "LC_*"];

/// Variables kept for diagnostics, never secrets: a Rust server's log
/// filter and backtraces, and where coverage-instrumented binaries write
/// their profiles (the test suite's coverage runs need it).
pub const DIAGNOSTIC_ENV: &[&str] = &["RUST_LOG", "RUST_BACKTRACE", "LLVM_PROFILE_FILE"];

/// Variables Windows programs cannot start without.
#[cfg(windows)]
const PLATFORM_ENV: &[&str] = &[
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "TEMP",
    "TMP",
];
#[cfg(not(windows))]
const PLATFORM_ENV: &[&str] = &[];

/// Which of the host's environment variables a server gets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Environment {
    /// All of them (what `Command` does by default).
    #[default]
    Inherit,
    /// Only [`BASE_ENV`], [`DIAGNOSTIC_ENV`] and the names or `PREFIX_*`
    /// patterns listed here (`"*"` alone passes everything); the entry's
    /// own variables ([`StdioConfig::env`](crate::StdioConfig::env)) are
    /// added on top.
    Scrubbed {
        /// Extra names or `PREFIX_*` patterns to pass through.
        passthrough: Vec<String>,
    },
}

impl Environment {
    /// A scrubbed environment passing `passthrough` on top of the base.
    pub fn scrubbed<I, S>(passthrough: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Environment::Scrubbed {
            passthrough: passthrough.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the host's variable `name` reaches the server.
    pub fn passes(&self, name: &OsStr) -> bool {
        match self {
            Environment::Inherit => true,
            Environment::Scrubbed { passthrough } => {
                let Some(name) = name.to_str() else {
                    return false;
                };
                BASE_ENV
                    .iter()
                    .chain(DIAGNOSTIC_ENV)
                    .chain(PLATFORM_ENV)
                    .copied()
                    .chain(passthrough.iter().map(String::as_str))
                    .any(|pattern| name_matches(pattern, name))
            }
        }
    }

    /// The variables a server started with this policy receives from
    /// `host` (the host's environment), before the entry's own and the
    /// sandbox's `TMPDIR` are added.
    pub fn select<I>(&self, host: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        host.into_iter().filter(|(k, _)| self.passes(k)).collect()
    }
}

/// Whether `name` matches `pattern`: equal (case-sensitive; Windows names
/// are compared without case), or `PREFIX_*` and `name` starts with the
/// prefix. `"*"` matches everything.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let eq = |a: &str, b: &str| {
        if cfg!(windows) {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    match pattern.strip_suffix('*') {
        Some(prefix) => name.len() >= prefix.len() && eq(&name[..prefix.len()], prefix),
        None => eq(pattern, name),
    }
}

/// How a stdio server is confined. [`Sandbox::none`] (the `Default`) is
/// the plain child process; [`Sandbox::baseline`] adds `no_new_privs` and
/// the seccomp filter; [`Sandbox::strict`] adds file-system confinement
/// (nothing beyond the system's runtime, the server's install directory and
/// a private temp dir) and takes the network away.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sandbox {
    /// `no_new_privs` and the seccomp filter (best effort: never stops a
    /// server where the kernel lacks them).
    pub baseline: bool,
    /// File-system confinement; `None`: the server sees what the user sees.
    pub fs: Option<FsAccess>,
    /// Whether the server may use the network (`false`: a network
    /// namespace of its own, with nothing in it).
    pub network: bool,
    /// The address space of each of its processes, in MiB (`RLIMIT_AS`).
    pub memory_mib: Option<u64>,
    /// How many processes and threads it may have at once.
    pub processes: Option<u64>,
    /// CPU seconds each of its processes may use (`RLIMIT_CPU`: `SIGXCPU`,
    /// then `SIGKILL` a second later).
    pub cpu_seconds: Option<u64>,
    /// Whether a mechanism the kernel lacks stops the server from starting
    /// (`true`, the default of configs) or is skipped with a note.
    pub required: bool,
}

/// The paths a confined server may use, besides the ones every confined
/// server gets: the system's runtime (read and execute), the directory of
/// its own program (read and execute) and a private temp dir (read and
/// write; its `TMPDIR`, removed when the server has exited).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FsAccess {
    /// Readable (and executable) paths, each with everything beneath it.
    pub read: Vec<PathBuf>,
    /// Readable and writable paths, each with everything beneath it.
    pub write: Vec<PathBuf>,
}

impl FsAccess {
    /// Access to `read` and `write` on top of the runtime's.
    pub fn new(read: Vec<PathBuf>, write: Vec<PathBuf>) -> Self {
        FsAccess { read, write }
    }
}

impl Default for Sandbox {
    /// [`Sandbox::none`].
    fn default() -> Self {
        Sandbox::none()
    }
}

impl Sandbox {
    /// No confinement at all (`"sandbox": "none"`).
    pub fn none() -> Self {
        Sandbox {
            baseline: false,
            fs: None,
            network: true,
            memory_mib: None,
            processes: None,
            cpu_seconds: None,
            required: true,
        }
    }

    /// `no_new_privs` and the seccomp filter only: what every configured
    /// server gets unless its entry says otherwise.
    pub fn baseline() -> Self {
        Sandbox {
            baseline: true,
            ..Sandbox::none()
        }
    }

    /// The `"strict"` preset: the baseline, the file system confined to the
    /// runtime, the program's own directory and a private temp dir, and no
    /// network.
    pub fn strict() -> Self {
        Sandbox {
            fs: Some(FsAccess::default()),
            network: false,
            ..Sandbox::baseline()
        }
    }

    /// Whether nothing at all is applied.
    pub fn is_none(&self) -> bool {
        *self == Sandbox::none() || (!self.confines() && !self.baseline)
    }

    /// Whether anything beyond the baseline is asked for (the part that can
    /// refuse to start a server).
    pub fn confines(&self) -> bool {
        self.fs.is_some()
            || !self.network
            || self.memory_mib.is_some()
            || self.processes.is_some()
            || self.cpu_seconds.is_some()
    }
}

/// Why a sandbox stopped a server: the source of the
/// [`TransportError`](crate::TransportError) (see
/// [`TransportError::sandbox_stop`](crate::TransportError::sandbox_stop)),
/// in the client's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
#[non_exhaustive]
pub struct SandboxStop {
    /// What happened, e.g. `stopped by the sandbox: it ran out of memory
    /// under its limit (memoryMiB: 64)`.
    pub reason: String,
}

impl SandboxStop {
    /// A stop for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        SandboxStop {
            reason: reason.into(),
        }
    }
}

/// One mechanism of a sandbox and whether it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mechanism {
    /// What it is (`landlock`, `network namespace`, `seccomp`, …).
    pub name: &'static str,
    /// Whether it is in force.
    pub state: MechanismState,
}

/// Whether a [`Mechanism`] is in force.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MechanismState {
    /// Applied, with details (the Landlock ABI, what a limit counts).
    Active(String),
    /// Applied, but weaker than asked (an older Landlock ABI, a process
    /// count over all the user's processes); the text says how.
    Partial(String),
    /// Asked for and missing from this kernel or platform; the text says
    /// what is missing.
    Missing(String),
}

/// What a server may do, as planned (`doctor`) or as applied at start
/// ([`StdioTransport::confinement`](crate::StdioTransport::confinement)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Confinement {
    /// The names of the environment variables it receives (never values).
    pub env_names: Vec<String>,
    /// Whether the file system is confined; when not, `read` and `write`
    /// are empty and everything the user may touch is open.
    pub fs_confined: bool,
    /// Readable (and executable) paths.
    pub read: Vec<PathBuf>,
    /// Writable paths (the private temp dir among them).
    pub write: Vec<PathBuf>,
    /// Whether it has the network.
    pub network: bool,
    /// `memoryMiB`, `processes`, `cpuSeconds` as set.
    pub memory_mib: Option<u64>,
    /// See [`Sandbox::processes`].
    pub processes: Option<u64>,
    /// See [`Sandbox::cpu_seconds`].
    pub cpu_seconds: Option<u64>,
    /// Each mechanism involved and whether it holds.
    pub mechanisms: Vec<Mechanism>,
}

/// Why a server whose sandbox is `required` must not start: it needs the
/// `missing` mechanisms ([`Confinement::missing`]) this system lacks.
pub(crate) fn lacking(missing: &str) -> String {
    format!(
        "its sandbox needs what this system lacks: {missing} (set \"required\": false \
         in its sandbox to run it without)"
    )
}

impl Confinement {
    /// The mechanisms asked for and missing, joined for a message;
    /// `None` when nothing is missing.
    pub fn missing(&self) -> Option<String> {
        let missing: Vec<String> = self
            .mechanisms
            .iter()
            .filter_map(|m| match &m.state {
                MechanismState::Missing(why) => Some(format!("{}: {why}", m.name)),
                _ => None,
            })
            .collect();
        (!missing.is_empty()).then(|| missing.join("; "))
    }

    /// Why a server that ended with `status` (not at the client's request)
    /// was most likely stopped by its sandbox, judged from the signal, the
    /// limits that were set and the last lines of its stderr; `None` when
    /// nothing points at the sandbox.
    pub fn explain_exit(&self, status: Option<ExitStatus>, stderr: &[String]) -> Option<String> {
        let signal = status.and_then(exit_signal);
        let said = |needles: &[&str]| {
            stderr.iter().any(|line| {
                let line = line.to_ascii_lowercase();
                needles.iter().any(|n| line.contains(n))
            })
        };
        if let Some(cpu) = self.cpu_seconds {
            if signal == Some(SIGXCPU) || (signal == Some(SIGKILL) && self.memory_mib.is_none()) {
                return Some(format!(
                    "stopped by the sandbox: it used up its CPU time (cpuSeconds: {cpu})"
                ));
            }
        }
        if let Some(mib) = self.memory_mib {
            let memory_words = said(&[
                "memory allocation of",
                "out of memory",
                "cannot allocate memory",
                "memoryerror",
                "bad_alloc",
                "enomem",
                "allocation failed",
            ]);
            if memory_words || matches!(signal, Some(SIGABRT | SIGSEGV | SIGBUS | SIGKILL)) {
                return Some(format!(
                    "stopped by the sandbox: it ran out of memory under its limit (memoryMiB: {mib})"
                ));
            }
        }
        if let Some(n) = self.processes {
            if said(&["resource temporarily unavailable", "eagain"]) {
                return Some(format!(
                    "stopped by the sandbox: it could not start more processes (processes: {n})"
                ));
            }
        }
        if !self.network && said(&["network is unreachable", "enetunreach"]) {
            return Some("stopped by the sandbox: it has no network (network: false)".to_owned());
        }
        if self.fs_confined && said(&["permission denied", "eacces"]) {
            return Some(
                "stopped by the sandbox: a file access outside its allowed paths was refused \
                 (sandbox.fs)"
                    .to_owned(),
            );
        }
        let seccomp = self
            .mechanisms
            .iter()
            .any(|m| m.name == "seccomp" && matches!(m.state, MechanismState::Active(_)));
        // EPERM has many causes: blame the filter only when the server
        // names a call it refuses.
        let refused_call = stderr.iter().any(|line| {
            let line = line.to_ascii_lowercase();
            (line.contains("operation not permitted") || line.contains("eperm"))
                && DENIED_NAMES.iter().any(|n| line.contains(n))
        });
        if seccomp && (signal == Some(SIGSYS) || refused_call) {
            return Some(
                "stopped by the sandbox: a system call it refuses (seccomp: ptrace, mount, bpf, \
                 module loading and the like) failed"
                    .to_owned(),
            );
        }
        None
    }
}

impl fmt::Display for Confinement {
    /// Several lines, for `doctor`: environment names, file system,
    /// network, limits, mechanisms.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "environment: {}", self.env_names.join(" "))?;
        if self.fs_confined {
            writeln!(f, "read: {}", paths(&self.read))?;
            writeln!(f, "write: {}", paths(&self.write))?;
        } else {
            writeln!(f, "files: everything the user may read and write")?;
        }
        writeln!(f, "network: {}", if self.network { "yes" } else { "none" })?;
        let mut limits = Vec::new();
        if let Some(m) = self.memory_mib {
            limits.push(format!("memory {m} MiB"));
        }
        if let Some(p) = self.processes {
            limits.push(format!("processes {p}"));
        }
        if let Some(c) = self.cpu_seconds {
            limits.push(format!("cpu {c} s"));
        }
        if limits.is_empty() {
            writeln!(f, "limits: none")?;
        } else {
            writeln!(f, "limits: {}", limits.join(", "))?;
        }
        for m in &self.mechanisms {
            let (word, text) = match &m.state {
                MechanismState::Active(t) => ("on", t),
                MechanismState::Partial(t) => ("partial", t),
                MechanismState::Missing(t) => ("MISSING", t),
            };
            if text.is_empty() {
                writeln!(f, "{}: {word}", m.name)?;
            } else {
                writeln!(f, "{}: {word} ({text})", m.name)?;
            }
        }
        Ok(())
    }
}

fn paths(list: &[PathBuf]) -> String {
    if list.is_empty() {
        return "(nothing)".to_owned();
    }
    list.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The environment a server gets: `environment` applied to the host's
/// variables, then the entry's own `extra` (which win), then `tmpdir`.
pub(crate) fn compose_env(
    environment: &Environment,
    extra: &[(OsString, OsString)],
    tmpdir: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let mut out = environment.select(std::env::vars_os());
    for (k, v) in extra {
        out.retain(|(name, _)| name != k);
        out.push((k.clone(), v.clone()));
    }
    if let Some(tmp) = tmpdir {
        out.retain(|(name, _)| name != "TMPDIR");
        out.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
    }
    out
}

/// The names of [`compose_env`]'s result, sorted.
pub(crate) fn env_names(env: &[(OsString, OsString)]) -> Vec<String> {
    let mut names: Vec<String> = env
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(unix)]
use libc::{SIGABRT, SIGBUS, SIGKILL, SIGSEGV, SIGSYS, SIGXCPU};
// Never matched: no signals off Unix.
#[cfg(not(unix))]
const SIGABRT: i32 = -1;
#[cfg(not(unix))]
const SIGBUS: i32 = -2;
#[cfg(not(unix))]
const SIGKILL: i32 = -3;
#[cfg(not(unix))]
const SIGSEGV: i32 = -4;
#[cfg(not(unix))]
const SIGSYS: i32 = -5;
#[cfg(not(unix))]
const SIGXCPU: i32 = -6;

#[cfg(unix)]
fn exit_signal(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn exit_signal(_status: ExitStatus) -> Option<i32> {
    None
}

#[cfg(test)]
mod tests;
