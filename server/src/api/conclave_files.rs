//! The conclave files behind the API, read and written on blocking threads (the
//! handlers in `conclaves.rs` call these through `blocking.rs`, never on an async
//! thread). Every file has an ETag, a hash of its bytes; a create persists a unique
//! temporary file without clobbering, so of two creates of one id one wins and the
//! other is told the id is taken; a replace renames a unique temporary file over the
//! old one, after checking the caller's `If-Match` against the file as it is.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::precondition::IfMatch;

/// Why a file operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A create found the file there already.
    #[error("the file exists")]
    Exists,
    /// The file is not there.
    #[error("the file does not exist")]
    Missing,
    /// The file is not the one the caller's `If-Match` names.
    #[error("the file changed since it was read")]
    Changed,
    /// The disk refused: what was done, and what the system said.
    #[error("{0}")]
    Io(String),
}

/// A file's bytes and their ETag.
#[derive(Debug, Clone)]
pub struct Read {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The ETag of those bytes (quoted, as the header carries it).
    pub etag: String,
}

/// The conclave files of one catalog directory.
#[derive(Debug)]
pub struct ConclaveFiles {
    dir: PathBuf,
    /// Held from an `If-Match` check to the rename it allows, so that two requests of
    /// this server cannot both pass the check on the same old file.
    writing: Mutex<()>,
}

/// The strong ETag of a file's bytes: their SHA-256, in hex, quoted.
pub fn etag_of(bytes: &[u8]) -> String {
    format!("\"{}\"", hex::encode(Sha256::digest(bytes)))
}

impl ConclaveFiles {
    /// The files of the catalog in `dir`.
    pub fn new(dir: PathBuf) -> ConclaveFiles {
        ConclaveFiles { dir, writing: Mutex::new(()) }
    }

    /// Where conclave `id` is kept.
    pub fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.conclave.json"))
    }

    /// Conclave `id`'s file, with its ETag.
    pub fn read(&self, id: &str) -> Result<Read, FileError> {
        let bytes = std::fs::read(self.path(id)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::Missing,
            _ => FileError::Io(format!("reading {}: {e}", self.path(id).display())),
        })?;
        let etag = etag_of(&bytes);
        Ok(Read { bytes, etag })
    }

    /// Writes conclave `id` as `text` where no file of that id exists; the new file's ETag.
    pub fn create(&self, id: &str, text: &str) -> Result<String, FileError> {
        let _writing = self.writing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = self.path(id);
        let staged = self.stage(id, text)?;
        staged.persist_noclobber(&path).map_err(|e| match e.error.kind() {
            std::io::ErrorKind::AlreadyExists => FileError::Exists,
            _ => FileError::Io(format!("creating {}: {}", path.display(), e.error)),
        })?;
        Ok(etag_of(text.as_bytes()))
    }

    /// Replaces conclave `id` with `text` when its file exists and passes `expected`
    /// (no `If-Match` passes always); the new file's ETag.
    pub fn replace(&self, id: &str, text: &str, expected: Option<&IfMatch>) -> Result<String, FileError> {
        let _writing = self.writing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = self.read(id)?;
        if expected.is_some_and(|expected| !expected.passes(&current.etag)) {
            return Err(FileError::Changed);
        }
        let path = self.path(id);
        let staged = self.stage(id, text)?;
        staged.persist(&path).map_err(|e| FileError::Io(format!("replacing {}: {}", path.display(), e.error)))?;
        Ok(etag_of(text.as_bytes()))
    }

    /// Deletes conclave `id`'s file.
    pub fn remove(&self, id: &str) -> Result<(), FileError> {
        let _writing = self.writing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        std::fs::remove_file(self.path(id)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::Missing,
            _ => FileError::Io(format!("deleting {}: {e}", self.path(id).display())),
        })
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `text` written and synced to a temporary file of a unique name beside the
    /// conclave files, so a crash never leaves half a conclave file and concurrent
    /// saves never share a temporary file.
    fn stage(&self, id: &str, text: &str) -> Result<tempfile::NamedTempFile, FileError> {
        let failed = |what: &str, e: std::io::Error| FileError::Io(format!("{what} in {}: {e}", self.dir.display()));
        std::fs::create_dir_all(&self.dir).map_err(|e| failed("creating the directory", e))?;
        let mut staged = tempfile::Builder::new()
            .prefix(&format!(".{id}."))
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .map_err(|e| failed("creating a temporary file", e))?;
        staged.write_all(text.as_bytes()).map_err(|e| failed("writing a temporary file", e))?;
        staged.as_file().sync_all().map_err(|e| failed("syncing a temporary file", e))?;
        Ok(staged)
    }
}
