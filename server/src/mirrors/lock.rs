//! One writer per mirror: an exclusive `flock` on a file beside it, which also holds
//! between separate `conclave worker` processes on one machine, and is released by
//! the kernel if the holder dies.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::error::MirrorError;

/// A held lock of one mirror; dropping it releases the lock.
#[derive(Debug)]
pub struct MirrorLock {
    _file: File,
}

impl MirrorLock {
    /// Waits for the lock of the mirror at `mirror` (the file `<mirror>.lock`).
    pub async fn acquire(mirror: &Path) -> Result<MirrorLock, MirrorError> {
        let path = lock_path(mirror);
        let what = format!("cannot lock {}", path.display());
        let file = tokio::task::spawn_blocking(move || -> std::io::Result<File> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            Ok(file)
        })
        .await
        .map_err(|e| MirrorError::Io { what: what.clone(), source: std::io::Error::other(e) })?
        .map_err(MirrorError::io(what))?;
        Ok(MirrorLock { _file: file })
    }
}

fn lock_path(mirror: &Path) -> PathBuf {
    let mut name = mirror.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    mirror.with_file_name(name)
}
