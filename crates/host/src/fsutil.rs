//! Small file helpers shared by the lockfile, the config editor and the
//! audit log: a cross-process lock on a folder and atomic replacement.

use std::io::{self, Write};
use std::path::Path;

use fs4::fs_std::FileExt;

/// An exclusive advisory lock on a folder, released on drop.
///
/// Files that are replaced by rename cannot carry their own lock (a waiter
/// would lock the old inode), so writers of such files lock their folder.
#[derive(Debug)]
pub(crate) struct DirLock {
    file: std::fs::File,
}

impl DirLock {
    /// Waits for and takes the lock on `dir`.
    pub(crate) fn acquire(dir: &Path) -> io::Result<DirLock> {
        let file = std::fs::File::open(dir)?;
        FileExt::lock_exclusive(&file)?;
        Ok(DirLock { file })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock as well.
        let _ = FileExt::unlock(&self.file);
    }
}

/// The folder a file lives in (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Replaces `path` with `bytes` atomically (temp file, fsync, rename),
/// keeping the old file's permissions.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(parent_dir(path))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
