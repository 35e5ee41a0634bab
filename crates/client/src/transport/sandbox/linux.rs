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

use super::{Confinement, Environment, Mechanism, MechanismState, Sandbox, compose_env, env_names};

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

/// System calls the baseline filter answers with `EPERM`: debugging other
/// processes, (un)mounting and changing the root, loading kernel code or
/// a new kernel, eBPF, swap, reboot, the kernel keyring, perf events,
/// userfaultfd, the clock, kernel logs, raw I/O ports and file handles
/// that bypass path checks.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_acct,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_syslog,
    libc::SYS_open_by_handle_at,
    libc::SYS_quotactl,
    libc::SYS_vhangup,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// x32 system calls (x86-64 kernels built with the x32 ABI) carry this bit
/// and share the x86-64 audit architecture, so a deny list must name them
/// too; a few have numbers of their own.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;
#[cfg(target_arch = "x86_64")]
const X32_OWN: &[i64] = &[521, 528, 539, 540];

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
            return Err(format!(
                "its sandbox needs what this system lacks: {missing} (set \"required\": false \
                 in its sandbox to run it without)"
            ));
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

impl ChildSetup {
    /// Runs in the child between fork and exec: async-signal-safe calls
    /// only, on memory allocated before the fork.
    #[allow(unsafe_code)]
    fn apply(&mut self) -> io::Result<()> {
        let status = self.status.as_raw_fd();
        // SAFETY (for every block below): plain system calls on valid
        // pointers to memory this struct owns; none allocates.
        let fail = |step: u8, err: i32| -> io::Error {
            report(status, step, err);
            io::Error::from_raw_os_error(err)
        };
        if let Some(bytes) = self.memory_bytes {
            if set_limit(libc::RLIMIT_AS, bytes, bytes) != 0 {
                return Err(fail(STEP_LIMITS, errno()));
            }
        }
        if let Some(secs) = self.cpu_seconds {
            // SIGXCPU at the soft limit, SIGKILL a second later.
            if set_limit(libc::RLIMIT_CPU, secs, secs.saturating_add(1)) != 0 {
                return Err(fail(STEP_LIMITS, errno()));
            }
        }
        if let Some(procs) = &self.cgroup_procs {
            let zero = b"0";
            let n = unsafe { libc::write(procs.as_raw_fd(), zero.as_ptr().cast(), 1) };
            if n != 1 {
                return Err(fail(STEP_CGROUP, errno()));
            }
        }
        if self.unshare != 0 {
            let mut flags = self.unshare;
            let mut rc = unsafe { libc::unshare(flags) };
            if rc != 0 && self.unshare_fallback != 0 {
                flags = self.unshare_fallback;
                rc = unsafe { libc::unshare(flags) };
            }
            if rc != 0 {
                let err = errno();
                if self.unshare_required {
                    return Err(fail(STEP_UNSHARE, err));
                }
                report(status, STEP_UNSHARE | SKIPPED, err);
            } else if flags & libc::CLONE_NEWUSER != 0 {
                // Map our own user and group, so files keep their owners
                // and the server runs as who it was, not as `nobody`.
                let ok = write_file(c"/proc/self/setgroups", b"deny")
                    && write_file(c"/proc/self/uid_map", &self.uid_map)
                    && write_file(c"/proc/self/gid_map", &self.gid_map);
                if !ok {
                    let err = errno();
                    if self.unshare_required {
                        return Err(fail(STEP_IDMAP, err));
                    }
                    report(status, STEP_IDMAP | SKIPPED, err);
                }
            }
        }
        if let Some(n) = self.nproc {
            // After the user namespace: its count starts at zero there.
            if set_limit(libc::RLIMIT_NPROC, n, n) != 0 {
                return Err(fail(STEP_NPROC, errno()));
            }
        }
        if let Some(ruleset) = self.ruleset.take() {
            match ruleset.restrict_self() {
                Ok(s) => {
                    let detail = match s.ruleset {
                        RulesetStatus::FullyEnforced => 0,
                        RulesetStatus::PartiallyEnforced => 1,
                        _ => 2,
                    };
                    report(status, STEP_LANDLOCK | DONE, detail);
                }
                Err(_) => {
                    let err = errno();
                    if self.landlock_required {
                        return Err(fail(STEP_LANDLOCK, err));
                    }
                    report(status, STEP_LANDLOCK | SKIPPED, err);
                }
            }
        }
        if self.no_new_privs {
            let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
            if rc != 0 {
                report(status, STEP_NNP | SKIPPED, errno());
            }
        }
        if let Some(program) = &self.seccomp {
            if seccompiler::apply_filter(program).is_err() {
                // Best effort: the baseline never stops a server.
                report(status, STEP_SECCOMP | SKIPPED, errno());
            }
        }
        Ok(())
    }
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Writes a two-byte step report to the status pipe (async-signal-safe).
fn report(fd: RawFd, step: u8, detail: i32) {
    let bytes = [step, u8::try_from(detail).unwrap_or(u8::MAX)];
    // SAFETY: write on a valid buffer; a failure only loses the report.
    #[allow(unsafe_code)]
    unsafe {
        libc::write(fd, bytes.as_ptr().cast(), 2);
    }
}

/// The type of `setrlimit`'s resource: glibc's own enum type, a plain
/// `int` elsewhere (musl, for the static build the container ships).
#[cfg(target_env = "gnu")]
type RlimitResource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type RlimitResource = libc::c_int;

fn set_limit(resource: RlimitResource, soft: u64, hard: u64) -> libc::c_int {
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct on the stack.
    #[allow(unsafe_code)]
    unsafe {
        libc::setrlimit(resource, &limit)
    }
}

/// Writes `data` to `path` with open/write/close (async-signal-safe).
fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
    // SAFETY: open with a NUL-terminated path, write from a valid buffer,
    // close the descriptor opened here.
    #[allow(unsafe_code)]
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        usize::try_from(n).is_ok_and(|n| n == data.len())
    }
}

/// A close-on-exec pipe whose read end does not block.
fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here.
    #[allow(unsafe_code)]
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor owned here.
    #[allow(unsafe_code)]
    unsafe {
        let flags = libc::fcntl(r.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(r.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok((r, w))
}

/// The Landlock ruleset of `confinement`'s paths, with the network (TCP)
/// and abstract sockets closed when `network` is off and signals scoped to
/// the server's own processes.
fn build_ruleset(confinement: &Confinement, sandbox: &Sandbox) -> Result<RulesetCreated, String> {
    let e = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if sandbox.fs.is_some() {
        ruleset = ruleset
            .handle_access(AccessFs::from_all(LANDLOCK_ABI))
            .map_err(e)?;
    }
    if !sandbox.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(LANDLOCK_ABI))
            .map_err(e)?
            .scope(Scope::AbstractUnixSocket)
            .map_err(e)?;
    }
    ruleset = ruleset.scope(Scope::Signal).map_err(e)?;
    let mut created = ruleset.create().map_err(e)?;
    if sandbox.fs.is_some() {
        let read = AccessFs::from_read(LANDLOCK_ABI);
        let all = AccessFs::from_all(LANDLOCK_ABI);
        let file_bits = AccessFs::from_file(LANDLOCK_ABI);
        for (list, access) in [(&confinement.read, read), (&confinement.write, all)] {
            for path in list {
                let fd = match PathFd::new(path) {
                    Ok(fd) => fd,
                    Err(err) => {
                        debug!(path = %path.display(), error = %err, "a sandbox path cannot be opened; skipped");
                        continue;
                    }
                };
                let is_dir = fs::metadata(path).map(|m| m.is_dir()).unwrap_or(true);
                let access = if is_dir { access } else { access & file_bits };
                created = created.add_rule(PathBeneath::new(fd, access)).map_err(e)?;
            }
        }
    }
    Ok(created)
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

/// The cgroup directory new per-server cgroups go under, on a hierarchy
/// with the pids controller this process may write to.
fn cgroup_parent() -> Result<PathBuf, String> {
    static PARENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PARENT.get_or_init(find_cgroup_parent).clone()
}

fn find_cgroup_parent() -> Result<PathBuf, String> {
    let own = fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let mounts = fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    // (fstype, super options) → (mount root, mount point)
    let mut by_kind: BTreeMap<String, (String, String)> = BTreeMap::new();
    for line in mounts.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 5 || r.len() < 3 {
            continue;
        }
        let (root, point) = (l[3].to_owned(), l[4].to_owned());
        match r[0] {
            "cgroup2" => {
                by_kind.insert("2".into(), (root, point));
            }
            "cgroup" if r[2].split(',').any(|o| o == "pids") => {
                by_kind.insert("pids".into(), (root, point));
            }
            _ => {}
        }
    }
    let mut reasons = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        let (Some(controllers), Some(path)) = (controllers, path) else {
            continue;
        };
        let key = if controllers.is_empty() {
            "2"
        } else if controllers.split(',').any(|c| c == "pids") {
            "pids"
        } else {
            continue;
        };
        let Some((root, point)) = by_kind.get(key) else {
            continue;
        };
        let rel = path.strip_prefix(root.as_str()).unwrap_or(path);
        let dir = Path::new(point).join(rel.trim_start_matches('/'));
        if key == "2" {
            let control =
                fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
            if !control.split_whitespace().any(|c| c == "pids") {
                reasons.push(format!(
                    "the pids controller is not delegated to {}",
                    dir.display()
                ));
                continue;
            }
        }
        if access_writable(&dir) {
            return Ok(dir);
        }
        reasons.push(format!("{} is not writable", dir.display()));
    }
    if reasons.is_empty() {
        reasons.push("no cgroup hierarchy with the pids controller".into());
    }
    Err(reasons.join("; "))
}

fn access_writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access with a NUL-terminated path.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::access(c.as_ptr(), libc::W_OK) };
    rc == 0
}

/// Makes a cgroup for one server with `pids.max` = `max`; returns its
/// directory and its `cgroup.procs`, open for the child to join.
fn make_cgroup(name: &str, max: u64) -> Result<(PathBuf, OwnedFd), String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let parent = cgroup_parent()?;
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(32)
        .collect();
    let dir = parent.join(format!(
        "switchboard-{}-{safe}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let cleanup = |why: String| {
        let _ = fs::remove_dir(&dir);
        why
    };
    fs::write(dir.join("pids.max"), max.to_string())
        .map_err(|e| cleanup(format!("cannot set pids.max: {e}")))?;
    let procs = fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
        .map_err(|e| cleanup(format!("cannot open cgroup.procs: {e}")))?;
    Ok((dir, OwnedFd::from(procs)))
}

/// The kernel's features, probed once.
fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| {
        // SAFETY: geteuid has no preconditions.
        #[allow(unsafe_code)]
        let root = unsafe { libc::geteuid() } == 0;
        Kernel {
            landlock: landlock_abi(),
            seccomp: if filter().is_some() {
                Ok(())
            } else {
                Err(format!(
                    "no seccomp filter for the {} architecture",
                    std::env::consts::ARCH
                ))
            },
            root,
            userns: userns_available(),
        }
    })
}

fn landlock_abi() -> Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no ruleset pointer.
    #[allow(unsafe_code)]
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return Ok(i32::try_from(v).unwrap_or(i32::MAX));
    }
    Err(match errno() {
        libc::EOPNOTSUPP => "Landlock is built into this kernel but not enabled (boot with \
                             lsm=landlock,…)"
            .to_owned(),
        _ => "this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
            .to_owned(),
    })
}

/// Whether an unprivileged user namespace can be made, judged from the
/// kernel's switches (the spawn itself is the final word).
fn userns_available() -> Result<(), String> {
    let read = |p: &str| fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Err("user namespaces are off (user.max_user_namespaces = 0)".into());
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Err(
            "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0)".into(),
        );
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Err("AppArmor restricts unprivileged user namespaces \
                    (kernel.apparmor_restrict_unprivileged_userns = 1)"
            .into());
    }
    if !Path::new("/proc/self/ns/user").exists() {
        return Err("this kernel has no user namespaces".into());
    }
    Ok(())
}

/// The baseline seccomp filter, compiled once: every syscall of
/// [`DENIED`] answers `EPERM`, everything else is allowed.
fn filter() -> Option<&'static BpfProgram> {
    static FILTER: OnceLock<Option<BpfProgram>> = OnceLock::new();
    FILTER
        .get_or_init(|| {
            let arch = std::env::consts::ARCH.try_into().ok()?;
            let mut rules = BTreeMap::new();
            for &nr in DENIED {
                rules.insert(nr, Vec::new());
                #[cfg(target_arch = "x86_64")]
                rules.insert(nr | X32_BIT, Vec::new());
            }
            #[cfg(target_arch = "x86_64")]
            for &nr in X32_OWN {
                rules.insert(nr | X32_BIT, Vec::new());
            }
            let errno = u32::try_from(libc::EPERM).ok()?;
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(errno),
                arch,
            )
            .map_err(|e| debug!(error = %e, "cannot build the seccomp filter"))
            .ok()?;
            BpfProgram::try_from(filter)
                .map_err(|e| debug!(error = %e, "cannot compile the seccomp filter"))
                .ok()
        })
        .as_ref()
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
