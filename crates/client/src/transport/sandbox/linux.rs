//! The Linux sandbox: everything built before the fork ([`prepare`]), the
//! async-signal-safe steps run in the child between fork and exec
//! ([`ChildSetup::apply`]), and the status pipe through which the child
//! tells the parent what it applied.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, DirBuilder};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
use tokio::process::Command;
use tracing::debug;

use super::{
    Confinement, Environment, Mechanism, MechanismState, Sandbox, compose_env, env_names, lacking,
};

mod child;
mod kernel;
mod rules;

use child::{errno, status_pipe};
use kernel::{cgroup_parent, kernel, make_cgroup};
use rules::{DENIED, build_ruleset, filter};

/// Read-only (and executable) paths every confined server gets: the
/// system's programs and libraries, the loader's cache, certificates, time
/// zones, name resolution, `/proc` (other processes' memory and
/// environment stay closed: Landlock denies ptrace-class access across its
/// domain) and the CPU topology runtimes size their thread pools from.
/// Paths this machine lacks are skipped.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix/store",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/mime.types",
    "/etc/os-release",
    "/proc",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/dev/random",
    "/dev/urandom",
];

/// Devices every confined server may read and write.
const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// The Landlock ABI whose rights are asked for; newer kernels are used at
/// this level, older ones degrade (best effort, reported).
const LANDLOCK_ABI: ABI = ABI::V6;

/// Steps the child reports on the status pipe (first byte), or'ed with
/// [`DONE`] or [`SKIPPED`]; without either the step failed and stopped
/// the spawn. The second byte is the errno or a detail.
const STEP_LIMITS: u8 = 1;
const STEP_CGROUP: u8 = 2;
const STEP_UNSHARE: u8 = 3;
const STEP_IDMAP: u8 = 4;
const STEP_NPROC: u8 = 5;
const STEP_LANDLOCK: u8 = 6;
const STEP_NNP: u8 = 7;
const STEP_SECCOMP: u8 = 8;
const DONE: u8 = 0x40;
const SKIPPED: u8 = 0x80;

/// What [`prepare`] built for one spawn.
pub(crate) struct Prepared {
    /// The environment the server gets.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// What it may do, updated from the child's report after the spawn.
    pub(crate) confinement: Confinement,
    /// The steps for the child; taken by [`Prepared::install`].
    setup: Option<ChildSetup>,
    /// The read end of the status pipe.
    status: Option<OwnedFd>,
    /// Removed when the server is gone.
    pub(crate) leftovers: Leftovers,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("confinement", &self.confinement)
            .finish_non_exhaustive()
    }
}

/// What outlives the spawn and is cleaned up when the server is gone: its
/// private temp dir and its cgroup.
#[derive(Debug, Default)]
pub(crate) struct Leftovers {
    tmpdir: Option<PathBuf>,
    cgroup: Option<PathBuf>,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if let Some(dir) = self.tmpdir.take() {
            if let Err(e) = fs::remove_dir_all(&dir) {
                debug!(dir = %dir.display(), error = %e, "could not remove a server's temp dir");
            }
        }
        if let Some(dir) = self.cgroup.take() {
            if let Err(e) = fs::remove_dir(&dir) {
                debug!(dir = %dir.display(), error = %e, "could not remove a server's cgroup");
            }
        }
    }
}

/// The parts of a sandbox the child applies, all allocated beforehand.
struct ChildSetup {
    status: OwnedFd,
    memory_bytes: Option<u64>,
    cpu_seconds: Option<u64>,
    cgroup_procs: Option<OwnedFd>,
    /// `unshare` flags (0: none), and whether a failure stops the spawn.
    unshare: libc::c_int,
    unshare_required: bool,
    /// As root without `CAP_SYS_ADMIN` a network namespace needs a user
    /// namespace too: the flags to try when the first ones are refused.
    unshare_fallback: libc::c_int,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    nproc: Option<u64>,
    ruleset: Option<RulesetCreated>,
    landlock_required: bool,
    no_new_privs: bool,
    seccomp: Option<BpfProgram>,
}

/// What the kernel offers, probed once per process.
#[derive(Debug, Clone)]
struct Kernel {
    /// The Landlock ABI (0: none), or why there is none.
    landlock: Result<i32, String>,
    /// Whether the seccomp filter could be built for this architecture.
    seccomp: Result<(), String>,
    /// Whether this process runs as root (`RLIMIT_NPROC` does not bind it).
    root: bool,
    /// Whether unprivileged user namespaces look available, or why not.
    userns: Result<(), String>,
}

/// Plans and builds the sandbox of one spawn: environment, paths, the
/// ruleset, the filter, the cgroup, the temp dir and the status pipe.
///
/// # Errors
/// Why the server must not start: a mechanism its sandbox requires is
/// missing, a configured path does not exist, or a resource (temp dir,
/// pipe) cannot be made.
pub(crate) fn prepare(
    name: &str,
    sandbox: &Sandbox,
    environment: &Environment,
    extra_env: &[(OsString, OsString)],
    command: &OsStr,
    cwd: Option<&Path>,
) -> Result<Prepared, String> {
    prepare_on(
        kernel(),
        name,
        sandbox,
        (environment, extra_env),
        command,
        cwd,
    )
}

/// [`prepare`] on a kernel described by `kernel` (tests describe kernels
/// that lack a mechanism).
fn prepare_on(
    kernel: &Kernel,
    name: &str,
    sandbox: &Sandbox,
    (environment, extra_env): (&Environment, &[(OsString, OsString)]),
    command: &OsStr,
    cwd: Option<&Path>,
) -> Result<Prepared, String> {
    let mut leftovers = Leftovers::default();
    let mut mechanisms = Vec::new();
    let mut confinement = Confinement {
        network: sandbox.network,
        memory_mib: sandbox.memory_mib,
        processes: sandbox.processes,
        cpu_seconds: sandbox.cpu_seconds,
        fs_confined: sandbox.fs.is_some(),
        ..Confinement::default()
    };

    // The private temp dir comes first: it is the server's TMPDIR.
    if sandbox.fs.is_some() {
        let dir =
            private_tmp(name).map_err(|e| format!("cannot create a private temp dir: {e}"))?;
        leftovers.tmpdir = Some(dir);
    }
    let env = compose_env(environment, extra_env, leftovers.tmpdir.as_deref());
    confinement.env_names = env_names(&env);

    let mut ruleset = None;
    let mut landlock_asked = false;
    if let Some(fs) = &sandbox.fs {
        landlock_asked = true;
        let mut read: Vec<PathBuf> = Vec::new();
        for p in SYSTEM_READ {
            if Path::new(p).exists() {
                read.push(PathBuf::from(p));
            }
        }
        if let Some(dir) = install_dir(command, &env, cwd) {
            read.push(dir);
        }
        for p in &fs.read {
            if !p.exists() {
                return Err(format!(
                    "sandbox.fs.read names {} which does not exist",
                    p.display()
                ));
            }
            read.push(p.clone());
        }
        let mut write: Vec<PathBuf> = SYSTEM_WRITE
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect();
        write.extend(leftovers.tmpdir.clone());
        for p in &fs.write {
            if !p.exists() {
                return Err(format!(
                    "sandbox.fs.write names {} which does not exist",
                    p.display()
                ));
            }
            write.push(p.clone());
        }
        read.dedup();
        confinement.read = read;
        confinement.write = write;
    }
    // Without file-system rules Landlock only adds TCP and scopes (ABI 4
    // and 6), a second layer under the network namespace.
    if !sandbox.network && matches!(kernel.landlock, Ok(abi) if abi >= 4) {
        landlock_asked = true;
    }
    if landlock_asked {
        match &kernel.landlock {
            Ok(abi) => {
                let rs = build_ruleset(&confinement, sandbox)
                    .map_err(|e| format!("cannot build the Landlock ruleset: {e}"))?;
                ruleset = Some(rs);
                let state = if sandbox.fs.is_none() {
                    // Only the network part and the scopes: the network
                    // namespace does the real work.
                    MechanismState::Active(format!("ABI {abi}, TCP and signals scoped"))
                } else if *abi >= 3 {
                    MechanismState::Active(format!("ABI {abi}"))
                } else {
                    MechanismState::Partial(format!(
                        "ABI {abi}: truncating files is not restricted before ABI 3"
                    ))
                };
                mechanisms.push(Mechanism {
                    name: "landlock",
                    state,
                });
            }
            Err(why) if sandbox.fs.is_some() => mechanisms.push(Mechanism {
                name: "landlock",
                state: MechanismState::Missing(why.clone()),
            }),
            Err(_) => {}
        }
    }

    // Processes: a cgroup of its own where one can be made; else, for a
    // user that is not root, RLIMIT_NPROC inside a user namespace of its
    // own (counted per namespace since Linux 5.14); else RLIMIT_NPROC as
    // the kernel counts it, over every process of the user.
    let mut cgroup_procs = None;
    let mut want_userns = false;
    let mut nproc = None;
    if let Some(max) = sandbox.processes {
        match make_cgroup(name, max) {
            Ok((dir, procs)) => {
                mechanisms.push(Mechanism {
                    name: "processes",
                    state: MechanismState::Active(format!(
                        "cgroup pids.max {max}, threads included"
                    )),
                });
                leftovers.cgroup = Some(dir);
                cgroup_procs = Some(procs);
            }
            Err(cgroup_why) if kernel.root => mechanisms.push(Mechanism {
                name: "processes",
                state: MechanismState::Missing(format!(
                    "running as root, the kernel does not apply RLIMIT_NPROC, and no cgroup \
                     could be made ({cgroup_why})"
                )),
            }),
            Err(_) => {
                nproc = Some(max);
                if kernel.userns.is_ok() {
                    want_userns = true;
                    mechanisms.push(Mechanism {
                        name: "processes",
                        state: MechanismState::Active(format!(
                            "RLIMIT_NPROC {max} in a user namespace of its own, threads included"
                        )),
                    });
                } else {
                    mechanisms.push(Mechanism {
                        name: "processes",
                        state: MechanismState::Partial(format!(
                            "RLIMIT_NPROC {max} counts every process of your user, not only \
                             this server's"
                        )),
                    });
                }
            }
        }
    }

    let mut unshare = 0;
    let mut unshare_fallback = 0;
    if !sandbox.network {
        if kernel.root {
            unshare = libc::CLONE_NEWNET;
            unshare_fallback = libc::CLONE_NEWNET | libc::CLONE_NEWUSER;
            mechanisms.push(Mechanism {
                name: "network namespace",
                state: MechanismState::Active("empty: no interface but a down loopback".into()),
            });
        } else {
            match &kernel.userns {
                Ok(()) => {
                    unshare = libc::CLONE_NEWNET | libc::CLONE_NEWUSER;
                    mechanisms.push(Mechanism {
                        name: "network namespace",
                        state: MechanismState::Active(
                            "empty: no interface but a down loopback".into(),
                        ),
                    });
                }
                Err(why) => mechanisms.push(Mechanism {
                    name: "network namespace",
                    state: MechanismState::Missing(why.clone()),
                }),
            }
        }
    } else if want_userns {
        unshare = libc::CLONE_NEWUSER;
    }
    if let Some(m) = sandbox.memory_mib {
        mechanisms.push(Mechanism {
            name: "memory",
            state: MechanismState::Active(format!(
                "RLIMIT_AS {m} MiB of address space per process"
            )),
        });
    }
    if let Some(c) = sandbox.cpu_seconds {
        mechanisms.push(Mechanism {
            name: "cpu",
            state: MechanismState::Active(format!("RLIMIT_CPU {c} s per process")),
        });
    }

    let mut seccomp = None;
    if sandbox.baseline {
        mechanisms.push(Mechanism {
            name: "no_new_privs",
            state: MechanismState::Active(String::new()),
        });
        match (&kernel.seccomp, filter()) {
            (Ok(()), Some(program)) => {
                seccomp = Some(program.clone());
                mechanisms.push(Mechanism {
                    name: "seccomp",
                    state: MechanismState::Active(format!(
                        "{} system calls answered EPERM",
                        DENIED.len()
                    )),
                });
            }
            (Err(why), _) => mechanisms.push(Mechanism {
                name: "seccomp",
                state: MechanismState::Partial(format!("not applied: {why}")),
            }),
            (Ok(()), None) => mechanisms.push(Mechanism {
                name: "seccomp",
                state: MechanismState::Partial("not applied: the filter could not be built".into()),
            }),
        }
    }
    confinement.mechanisms = mechanisms;

    if let Some(missing) = confinement.missing() {
        if sandbox.required {
            return Err(lacking(&missing));
        }
        debug!(server = %name, %missing, "starting without the sandbox mechanisms this system lacks");
    }

    if sandbox.is_none() {
        return Ok(Prepared {
            env,
            confinement,
            setup: None,
            status: None,
            leftovers,
        });
    }
    let (status_r, status_w) = status_pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    // SAFETY: getuid and getgid cannot fail and have no preconditions.
    #[allow(unsafe_code)]
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let landlock_ok = ruleset.is_some();
    let setup = ChildSetup {
        status: status_w,
        memory_bytes: sandbox.memory_mib.map(|m| m.saturating_mul(1 << 20)),
        cpu_seconds: sandbox.cpu_seconds,
        cgroup_procs,
        unshare,
        unshare_required: sandbox.required,
        unshare_fallback,
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        nproc,
        ruleset,
        landlock_required: sandbox.required && landlock_ok && sandbox.fs.is_some(),
        no_new_privs: sandbox.baseline || landlock_ok,
        seccomp,
    };
    Ok(Prepared {
        env,
        confinement,
        setup: Some(setup),
        status: Some(status_r),
        leftovers,
    })
}

impl Prepared {
    /// Registers the child's steps on `command` (after the parent-death
    /// signal, which `spawn_server` registers first).
    pub(crate) fn install(&mut self, command: &mut Command) {
        let Some(mut setup) = self.setup.take() else {
            return;
        };
        // SAFETY: the closure runs in the child between fork and exec. It
        // makes only async-signal-safe system calls (setrlimit, write,
        // open, close, unshare, prctl, landlock and seccomp calls) on
        // memory allocated before the fork; it allocates nothing.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || setup.apply());
        }
    }

    /// Reads what the child reported and updates the confinement: steps
    /// skipped (`required: false`) become partial or missing.
    ///
    /// # Errors
    /// When the spawn failed at a sandbox step: the reason, naming it.
    pub(crate) fn after_spawn(&mut self, spawned: Result<(), &io::Error>) -> Result<(), String> {
        let mut report = Vec::new();
        if let Some(fd) = self.status.take() {
            let mut file = fs::File::from(fd);
            let mut buf = [0u8; 64];
            loop {
                match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => report.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        for pair in report.chunks_exact(2) {
            let (step, detail) = (pair[0], pair[1]);
            let errno = io::Error::from_raw_os_error(i32::from(detail));
            if step & SKIPPED != 0 {
                let name = step_name(step & !SKIPPED);
                self.mark(
                    name,
                    MechanismState::Missing(format!("the kernel refused it: {errno}")),
                );
            } else if step & DONE != 0 && step & !DONE == STEP_LANDLOCK && detail != 0 {
                let state = if detail == 1 {
                    MechanismState::Partial("enforced in part: the kernel's ABI is older".into())
                } else {
                    MechanismState::Missing("not enforced by this kernel".into())
                };
                self.mark("landlock", state);
            } else if step & (DONE | SKIPPED) == 0 && spawned.is_err() {
                return Err(refusal(step, &errno));
            }
        }
        Ok(())
    }

    fn mark(&mut self, name: &'static str, state: MechanismState) {
        match self
            .confinement
            .mechanisms
            .iter_mut()
            .find(|m| m.name == name)
        {
            Some(m) => m.state = state,
            None => self.confinement.mechanisms.push(Mechanism { name, state }),
        }
    }
}

/// The message for a spawn a sandbox step stopped.
fn refusal(step: u8, errno: &io::Error) -> String {
    let what = match step {
        STEP_LIMITS => "could not set its resource limits",
        STEP_CGROUP => "could not join its cgroup",
        STEP_UNSHARE => {
            "could not create its network or user namespace (user namespaces may be off: \
             kernel.unprivileged_userns_clone, user.max_user_namespaces, or an AppArmor \
             restriction)"
        }
        STEP_IDMAP => "could not map its user in its user namespace",
        STEP_NPROC => "could not set its process limit",
        STEP_LANDLOCK => "could not apply its Landlock ruleset",
        STEP_NNP => "could not set no_new_privs",
        STEP_SECCOMP => "could not install its seccomp filter",
        _ => "failed at an unknown step",
    };
    format!(
        "its sandbox {what}: {errno} (set \"required\": false in its sandbox to run it without)"
    )
}

fn step_name(step: u8) -> &'static str {
    match step {
        STEP_UNSHARE | STEP_IDMAP => "network namespace",
        STEP_NPROC | STEP_CGROUP => "processes",
        STEP_LANDLOCK => "landlock",
        STEP_NNP => "no_new_privs",
        STEP_SECCOMP => "seccomp",
        _ => "limits",
    }
}

/// What a server with this sandbox may do, planned without starting it
/// (nothing is created; paths that would be made are named by what they
/// are).
pub(crate) fn plan(
    sandbox: &Sandbox,
    environment: &Environment,
    extra_env: &[(OsString, OsString)],
    command: &OsStr,
    cwd: Option<&Path>,
) -> Confinement {
    let kernel = kernel();
    let tmp_marker = sandbox
        .fs
        .as_ref()
        .map(|_| PathBuf::from("<private temp dir>"));
    let env = compose_env(environment, extra_env, tmp_marker.as_deref());
    let mut c = Confinement {
        env_names: env_names(&env),
        fs_confined: sandbox.fs.is_some(),
        network: sandbox.network,
        memory_mib: sandbox.memory_mib,
        processes: sandbox.processes,
        cpu_seconds: sandbox.cpu_seconds,
        ..Confinement::default()
    };
    if let Some(fs) = &sandbox.fs {
        c.read = SYSTEM_READ
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .chain(install_dir(command, &env, cwd))
            .chain(fs.read.iter().cloned())
            .collect();
        c.write = SYSTEM_WRITE
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .chain(tmp_marker)
            .chain(fs.write.iter().cloned())
            .collect();
    }
    let mut m = Vec::new();
    if sandbox.fs.is_some() {
        m.push(Mechanism {
            name: "landlock",
            state: match &kernel.landlock {
                Ok(abi) if *abi >= 3 => MechanismState::Active(format!("ABI {abi}")),
                Ok(abi) => MechanismState::Partial(format!("ABI {abi}")),
                Err(why) => MechanismState::Missing(why.clone()),
            },
        });
    }
    if !sandbox.network {
        m.push(Mechanism {
            name: "network namespace",
            state: match (&kernel.userns, kernel.root) {
                (_, true) | (Ok(()), _) => MechanismState::Active("empty".into()),
                (Err(why), false) => MechanismState::Missing(why.clone()),
            },
        });
    }
    if let Some(p) = sandbox.processes {
        m.push(Mechanism {
            name: "processes",
            state: match (cgroup_parent(), kernel.root, &kernel.userns) {
                (Ok(_), _, _) => MechanismState::Active(format!("cgroup pids.max {p}")),
                (Err(why), true, _) => MechanismState::Missing(format!(
                    "running as root, the kernel does not apply RLIMIT_NPROC, and no cgroup \
                     could be made ({why})"
                )),
                (Err(_), false, Ok(())) => {
                    MechanismState::Active(format!("RLIMIT_NPROC {p} in a user namespace"))
                }
                (Err(_), false, Err(_)) => MechanismState::Partial(format!(
                    "RLIMIT_NPROC {p} counts every process of your user"
                )),
            },
        });
    }
    if let Some(mib) = sandbox.memory_mib {
        m.push(Mechanism {
            name: "memory",
            state: MechanismState::Active(format!("RLIMIT_AS {mib} MiB")),
        });
    }
    if let Some(s) = sandbox.cpu_seconds {
        m.push(Mechanism {
            name: "cpu",
            state: MechanismState::Active(format!("RLIMIT_CPU {s} s")),
        });
    }
    if sandbox.baseline {
        m.push(Mechanism {
            name: "no_new_privs",
            state: MechanismState::Active(String::new()),
        });
        m.push(Mechanism {
            name: "seccomp",
            state: match &kernel.seccomp {
                Ok(()) => {
                    MechanismState::Active(format!("{} system calls answered EPERM", DENIED.len()))
                }
                Err(why) => MechanismState::Partial(format!("not applied: {why}")),
            },
        });
    }
    c.mechanisms = m;
    c
}

/// The directory of the server's program, resolved like `execvp` would
/// (through `PATH` of the server's environment) and through symlinks.
fn install_dir(
    command: &OsStr,
    env: &[(OsString, OsString)],
    cwd: Option<&Path>,
) -> Option<PathBuf> {
    let program = Path::new(command);
    let found = if command.as_bytes().contains(&b'/') {
        let base = cwd
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok());
        match base {
            Some(base) if program.is_relative() => base.join(program),
            _ => program.to_path_buf(),
        }
    } else {
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os("PATH"))?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())?
    };
    let real = fs::canonicalize(found).ok()?;
    real.parent().map(Path::to_path_buf)
}

/// Creates `$TMPDIR/switchboard-NAME-XXXX`, mode 0700, fresh (never an
/// existing directory).
fn private_tmp(name: &str) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "switchboard-{safe}-{}-{n}-{nanos:x}",
            std::process::id()
        ));
        match DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel without Landlock and without user namespaces, whose
    /// seccomp filter could not be built.
    fn bare_kernel() -> Kernel {
        Kernel {
            landlock: Err("this kernel has no Landlock".into()),
            seccomp: Err("no seccomp filter for this architecture".into()),
            root: false,
            userns: Err("user namespaces are off".into()),
        }
    }

    fn prepare_bare(sandbox: &Sandbox) -> Result<Prepared, String> {
        prepare_on(
            &bare_kernel(),
            "t",
            sandbox,
            (&Environment::scrubbed(Vec::<String>::new()), &[]),
            OsStr::new("sh"),
            None,
        )
    }

    #[test]
    fn a_required_mechanism_the_kernel_lacks_stops_the_start_and_is_named() {
        let why = prepare_bare(&Sandbox::strict()).unwrap_err();
        assert!(
            why.contains("landlock: this kernel has no Landlock"),
            "{why}"
        );
        assert!(
            why.contains("network namespace: user namespaces are off"),
            "{why}"
        );
        assert!(why.contains("\"required\": false"), "{why}");
    }

    #[test]
    fn without_required_the_server_starts_and_the_gap_is_reported() {
        let mut sandbox = Sandbox::strict();
        sandbox.required = false;
        let prepared = prepare_bare(&sandbox).unwrap();
        let missing = prepared.confinement.missing().unwrap();
        assert!(
            missing.contains("landlock") && missing.contains("network namespace"),
            "{missing}"
        );
    }

    #[test]
    fn the_baseline_never_stops_a_server() {
        let prepared = prepare_bare(&Sandbox::baseline()).unwrap();
        let seccomp = prepared
            .confinement
            .mechanisms
            .iter()
            .find(|m| m.name == "seccomp")
            .unwrap();
        assert!(
            matches!(seccomp.state, MechanismState::Partial(_)),
            "{seccomp:?}"
        );
        assert_eq!(prepared.confinement.missing(), None);
    }

    #[test]
    fn the_process_limit_without_user_namespaces_counts_every_process_of_the_user() {
        // Only where no cgroup can be made (not as root with a writable
        // pids hierarchy, where the cgroup is used instead).
        if cgroup_parent().is_ok() {
            return;
        }
        let mut sandbox = Sandbox::baseline();
        sandbox.processes = Some(10);
        let prepared = prepare_bare(&sandbox).unwrap();
        let p = prepared
            .confinement
            .mechanisms
            .iter()
            .find(|m| m.name == "processes")
            .unwrap();
        assert!(
            matches!(&p.state, MechanismState::Partial(t) if t.contains("every process of your user")),
            "{p:?}"
        );
    }

    #[test]
    fn the_filter_compiles_for_this_architecture() {
        assert!(filter().is_some());
    }
}
