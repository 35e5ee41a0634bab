//! What the child installs to confine itself: the Landlock ruleset of
//! its paths and the baseline seccomp filter.

use super::*;

/// System calls the baseline filter answers with `EPERM`: debugging other
/// processes, (un)mounting and changing the root, loading kernel code or
/// a new kernel, eBPF, swap, reboot, the kernel keyring, perf events,
/// userfaultfd, the clock, kernel logs, raw I/O ports and file handles
/// that bypass path checks.
pub(super) const DENIED: &[i64] = &[
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
pub(super) const X32_BIT: i64 = 0x4000_0000;
#[cfg(target_arch = "x86_64")]
pub(super) const X32_OWN: &[i64] = &[521, 528, 539, 540];

/// The Landlock ruleset of `confinement`'s paths, with the network (TCP)
/// and abstract sockets closed when `network` is off and signals scoped to
/// the server's own processes.
pub(super) fn build_ruleset(
    confinement: &Confinement,
    sandbox: &Sandbox,
) -> Result<RulesetCreated, String> {
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

/// The baseline seccomp filter, compiled once: every syscall of
/// [`DENIED`] answers `EPERM`, everything else is allowed.
pub(super) fn filter() -> Option<&'static BpfProgram> {
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
