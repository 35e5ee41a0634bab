//! The steps the child runs between fork and exec: async-signal-safe
//! system calls only, each reported on the status pipe.

use super::*;

impl ChildSetup {
    /// Runs in the child between fork and exec: async-signal-safe calls
    /// only, on memory allocated before the fork.
    #[allow(unsafe_code)]
    pub(super) fn apply(&mut self) -> io::Result<()> {
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

pub(super) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Writes a two-byte step report to the status pipe (async-signal-safe).
pub(super) fn report(fd: RawFd, step: u8, detail: i32) {
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
pub(super) type RlimitResource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
pub(super) type RlimitResource = libc::c_int;

pub(super) fn set_limit(resource: RlimitResource, soft: u64, hard: u64) -> libc::c_int {
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
pub(super) fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
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
pub(super) fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
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
