//! The one way this crate starts a server process ([`spawn_server`]).
//!
//! Children must never outlive the client (DESIGN item 12), so every spawn:
//! - puts the child in a process group of its own, so shutdown can signal
//!   the whole tree the server started;
//! - on Linux, asks the kernel for `SIGKILL` when the parent dies
//!   (`PR_SET_PDEATHSIG`). That signal fires when the *thread* that forked
//!   the child exits, so the fork happens on one dedicated thread that lives
//!   as long as the process, never on a short-lived blocking-pool thread;
//! - registers the group with a watchdog: a tiny `sh` process holding the
//!   read end of a pipe whose write end only this process has. When this
//!   process dies, however it dies (even `SIGKILL`), the pipe reaches EOF
//!   and the watchdog sends `SIGTERM`, then `SIGKILL`, to every group still
//!   registered: grandchildren, which the parent-death signal does not
//!   reach, die too;
//! - sets `kill_on_drop`, so a child whose handle is dropped is killed;
//! - applies the server's sandbox ([`crate::transport::sandbox`]) last,
//!   between fork and exec, so every descendant inherits it.
//!
//! `clippy.toml` forbids `Command::spawn` elsewhere in the workspace.

use std::io::{self, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use tokio::process::{Child, Command};
use tracing::{debug, warn};

use crate::transport::sandbox::Prepared;

/// A job for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

/// Starts `command` with piped stdio, in its own process group, with the
/// parent-death signal set, killed on drop, and watched by the watchdog.
///
/// Must be called inside a tokio runtime; the child's pipes are registered
/// with that runtime.
///
/// # Errors
/// The spawn's I/O error (command not found, not executable, bad `cwd`).
pub(crate) async fn spawn_server(
    mut command: Command,
    sandbox: &mut Prepared,
) -> io::Result<Child> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    {
        command.process_group(0);
        set_parent_death_signal(&mut command);
    }
    // After the parent-death signal: the sandbox's steps run last, the
    // seccomp filter last of all.
    sandbox.install(&mut command);
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _runtime = handle.enter();
        // The one sanctioned spawn in the workspace (see the module docs).
        #[allow(clippy::disallowed_methods)]
        let result = command.spawn();
        let _ = tx.send(result);
    });
    let unsent = match spawner() {
        Some(spawner) => spawner.send(job).err().map(|mpsc::SendError(job)| job),
        None => Some(job),
    };
    if let Some(job) = unsent {
        // No spawner thread: fork from this thread. The parent-death signal
        // then follows this thread's life; the process group, kill on drop
        // and the watchdog still apply.
        warn!("no spawner thread; starting the server from the calling thread");
        job();
    }
    let child = rx
        .await
        .map_err(|_| io::Error::other("the process spawner thread stopped"))??;
    if let Some(pid) = child.id() {
        watchdog(&format!("+ {pid}"));
    }
    Ok(child)
}

/// Tells the watchdog a group is gone (the client shut it down itself), so
/// it will not signal a recycled group id later.
pub(crate) fn forget_group(pgid: u32) {
    watchdog(&format!("- {pgid}"));
}

/// Sends `signal` to the process group `pgid`; `false` when no process of
/// the group is left (or signalling failed).
#[cfg(unix)]
pub(crate) fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = i32::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale group id
    // at worst fails with ESRCH.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::killpg(pgid, signal) };
    rc == 0
}

/// Whether any process of group `pgid` still exists.
#[cfg(unix)]
pub(crate) fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, 0)
}

#[cfg(target_os = "linux")]
fn set_parent_death_signal(command: &mut Command) {
    // SAFETY: getpid is async-signal-safe and called before the fork.
    #[allow(unsafe_code)]
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only async-signal-safe functions (prctl, getppid); it allocates nothing.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect: then the
            // signal will never come, so refuse to run at all.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn set_parent_death_signal(_command: &mut Command) {}

/// The spawner thread's queue, started on first use. The thread runs for
/// the life of the process, so a parent-death signal tied to it fires only
/// when the process dies.
fn spawner() -> Option<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("switchboard-spawner".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .map_err(|e| debug!(error = %e, "could not start the spawner thread"))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// The watchdog script: collect `+ PGID` / `- PGID` lines; at EOF (our
/// process is gone) signal every group still listed. It ignores the
/// terminal's signals so a Ctrl-C that kills us does not kill it first.
const WATCHDOG: &str = r#"trap '' INT HUP TERM QUIT PIPE
groups=
while read -r op pg; do
  case "$op" in
    +) groups="$groups $pg" ;;
    -) rest=; for g in $groups; do [ "$g" = "$pg" ] || rest="$rest $g"; done; groups=$rest ;;
  esac
done
set -- $groups
[ $# -gt 0 ] || exit 0
for g in "$@"; do kill -TERM -"$g" 2>/dev/null; done
sleep 1
for g in "$@"; do kill -KILL -"$g" 2>/dev/null; done
"#;

/// Sends one line to the watchdog, starting it on first use. Best effort:
/// without a watchdog the parent-death signal still covers direct children.
fn watchdog(line: &str) {
    static WATCHDOG_STDIN: OnceLock<Option<Mutex<std::process::ChildStdin>>> = OnceLock::new();
    let stdin = WATCHDOG_STDIN.get_or_init(|| {
        let mut command = std::process::Command::new("/bin/sh");
        command
            .args(["-c", WATCHDOG])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // The watchdog must outlive us, so it gets no parent-death signal;
        // its stdin's write end is close-on-exec, so only we hold it.
        #[allow(clippy::disallowed_methods)]
        let spawned = command.spawn();
        match spawned {
            Ok(mut child) => child.stdin.take().map(Mutex::new),
            Err(e) => {
                debug!(error = %e, "could not start the process-group watchdog");
                None
            }
        }
    });
    if let Some(stdin) = stdin {
        if let Ok(mut stdin) = stdin.lock() {
            let _ = writeln!(stdin, "{line}");
        }
    }
}
