//! Helpers shared by Switchboard's test suites and benches; not part of
//! the product. It depends on no Switchboard crate, so any crate's tests
//! may use it.
//!
//! # Example
//! ```
//! use switchboard_testutil::LogCapture;
//!
//! let logs = LogCapture::default();
//! {
//!     let _guard = logs.install();
//!     tracing::info!(user = "ada", "signed in");
//! }
//! assert!(logs.text().contains("signed in"));
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub mod tls;

use tracing::subscriber::DefaultGuard;
use tracing_subscriber::fmt::MakeWriter;

/// Which artifacts of a workspace package a test needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Artifacts {
    /// Its binaries, found in the profile directory.
    Bins,
    /// Its examples, found in the profile's `examples` directory.
    Examples,
}

/// The directory holding `package`'s `what` for the profile the running
/// test (or bench) executable was built with, building them first.
///
/// `cargo test` does not build other packages' binaries, and `cargo
/// nextest run` builds no examples, so the first caller in a process runs
/// `cargo build` once (a no-op when they are fresh); under nextest a stamp
/// file makes that once per run rather than once per test.
///
/// # Panics
/// When the executable is not in `<target>/<profile>/deps`, or the build
/// fails: a test cannot go on without what it runs.
pub fn built(package: &str, what: Artifacts) -> PathBuf {
    static DONE: Mutex<Option<HashMap<(String, Artifacts), PathBuf>>> = Mutex::new(None);
    let mut done = DONE.lock().unwrap_or_else(PoisonError::into_inner);
    let done = done.get_or_insert_with(HashMap::new);
    let key = (package.to_owned(), what);
    if let Some(dir) = done.get(&key) {
        return dir.clone();
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test executable in <target>/<profile>/deps")
        .to_path_buf();
    let (flag, dir) = match what {
        Artifacts::Bins => ("--bins", profile_dir.clone()),
        Artifacts::Examples => ("--examples", profile_dir.join("examples")),
    };
    let stamp = std::env::var("NEXTEST_RUN_ID")
        .ok()
        .map(|run| profile_dir.join(format!(".built-{package}{flag}-{run}")));
    if !stamp.as_ref().is_some_and(|s| s.exists()) {
        build(&profile_dir, package, flag);
        if let Some(stamp) = stamp {
            let _ = std::fs::write(stamp, b"");
        }
    }
    done.insert(key, dir.clone());
    dir
}

fn build(profile_dir: &Path, package: &str, flag: &str) {
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug");
    let target_dir = profile_dir.parent().expect("a target directory");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", package, flag])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd.status().expect("running cargo build");
    assert!(status.success(), "cargo build -p {package} {flag} failed");
}

/// Everything logged through `tracing` on this thread while installed,
/// at every level, as plain text: for tests that prove a secret never
/// reaches the logs.
#[derive(Clone, Debug, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// Captures the current thread's events at TRACE level until the
    /// guard is dropped. On a current-thread runtime that includes every
    /// task the test spawns.
    pub fn install(&self) -> DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(self.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// What was captured so far.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;

    fn make_writer(&'a self) -> LogCapture {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_events_while_installed_only() {
        let capture = LogCapture::default();
        {
            let _guard = capture.install();
            tracing::trace!(secret = "s3cr3t", "inside");
        }
        tracing::error!("outside");
        let text = capture.text();
        assert!(text.contains("inside") && text.contains("s3cr3t"), "{text}");
        assert!(!text.contains("outside"), "{text}");
    }

    #[test]
    fn finds_this_crates_own_profile_dir() {
        // Building this very package's (absent) examples is a no-op that
        // still proves the command line and the directory layout.
        let dir = built("switchboard-testutil", Artifacts::Examples);
        assert!(dir.ends_with("examples"), "{}", dir.display());
        let exe = std::env::current_exe().unwrap();
        assert!(exe.starts_with(dir.parent().unwrap()));
    }
}
