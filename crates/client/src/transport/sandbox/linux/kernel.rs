//! What this machine offers, probed once: a cgroup hierarchy with the
//! pids controller, Landlock's ABI and unprivileged user namespaces.

use super::*;

/// The cgroup directory new per-server cgroups go under, on a hierarchy
/// with the pids controller this process may write to.
pub(super) fn cgroup_parent() -> Result<PathBuf, String> {
    static PARENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PARENT.get_or_init(find_cgroup_parent).clone()
}

pub(super) fn find_cgroup_parent() -> Result<PathBuf, String> {
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

pub(super) fn access_writable(dir: &Path) -> bool {
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
pub(super) fn make_cgroup(name: &str, max: u64) -> Result<(PathBuf, OwnedFd), String> {
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
pub(super) fn kernel() -> &'static Kernel {
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

pub(super) fn landlock_abi() -> Result<i32, String> {
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
pub(super) fn userns_available() -> Result<(), String> {
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
