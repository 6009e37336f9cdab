//! Copies a directory's files into a backup directory.

pub mod walk;

use std::fs;
use std::io;
use std::path::Path;

/// Copies one file into `dest`, keeping its name; returns the bytes copied.
pub fn copy_one(file: &Path, dest: &Path) -> io::Result<u64> {
    let name = file
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    fs::copy(file, dest.join(name))
}

/// Copies every file under `src` into `dest`; returns the bytes copied.
pub fn run_backup(src: &Path, dest: &Path) -> io::Result<u64> {
    fs::create_dir_all(dest)?;
    let mut copied = 0;
    for file in walk::files(src)? {
        copied += copy_one(&file, dest)?;
    }
    Ok(copied)
}
