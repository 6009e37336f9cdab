//! The cache of parsed files, one entry per git blob id and language under the cache
//! directory, so a second index of a repository (or of another worktree of it) parses
//! only the files that changed. An entry holds its format and blob id; one that does
//! not read back is parsed again and rewritten, never a failure.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::lang::query_sources;
use crate::symbol::{FileSymbols, Lang, Skip};

/// The version of an entry's layout; the key also holds a digest of the queries, so
/// a changed query never reads an old entry.
pub const CACHE_FORMAT: u32 = 1;

/// The git blob id of `content`: the SHA-1 of `blob <len>\0<content>`, in hex.
pub fn blob_id(content: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", content.len()).as_bytes());
    hasher.update(content);
    hex::encode(hasher.finalize())
}

/// The cache directory when none is given: `$CONCLAVE_SYMBOLS_CACHE`, else
/// `$XDG_CACHE_HOME/conclave/symbols`, else `~/.cache/conclave/symbols` (next to
/// the review mirrors' `conclave/mirrors`).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CONCLAVE_SYMBOLS_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("conclave").join("symbols"))
}

/// One cached outcome of parsing a blob. Paths are left empty and filled in on read,
/// since the same blob may sit at several paths.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    format: u32,
    blob: String,
    lang: Lang,
    outcome: Result<FileSymbols, Skip>,
}

/// The cache under one directory.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
}

/// What reading an entry gave.
pub(crate) enum Read {
    Hit(Result<FileSymbols, Skip>),
    Miss,
    /// An entry was there but did not read back (corrupt, or another format).
    Corrupt,
}

impl Cache {
    pub fn new(dir: &Path) -> Cache {
        Cache { dir: dir.join(format!("v{CACHE_FORMAT}-{}", query_digest())) }
    }

    pub fn read(&self, blob: &str, lang: Lang, path: &str) -> Read {
        let Ok(bytes) = std::fs::read(self.path(blob, lang)) else { return Read::Miss };
        match serde_json::from_slice::<Entry>(&bytes) {
            Ok(entry) if entry.format == CACHE_FORMAT && entry.blob == blob && entry.lang == lang => {
                Read::Hit(entry.outcome.map(|symbols| with_path(symbols, path)))
            }
            _ => Read::Corrupt,
        }
    }

    /// Writes an entry through a temporary file renamed into place, so a reader never
    /// sees half an entry.
    pub fn write(&self, blob: &str, lang: Lang, outcome: &Result<FileSymbols, Skip>) -> std::io::Result<()> {
        let path = self.path(blob, lang);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let outcome = outcome.clone().map(|symbols| with_path(symbols, ""));
        let entry = Entry { format: CACHE_FORMAT, blob: blob.to_string(), lang, outcome };
        let bytes = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&bytes)?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    fn path(&self, blob: &str, lang: Lang) -> PathBuf {
        let (shard, rest) = blob.split_at(2.min(blob.len()));
        self.dir.join(shard).join(format!("{rest}.{}.json", lang.name()))
    }
}

fn with_path(mut symbols: FileSymbols, path: &str) -> FileSymbols {
    for definition in &mut symbols.definitions {
        definition.file = path.to_string();
    }
    for reference in &mut symbols.references {
        reference.file = path.to_string();
    }
    symbols
}

/// The first 12 hex digits of the SHA-1 of every query, computed once.
fn query_digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let mut hasher = Sha1::new();
        hasher.update(query_sources().as_bytes());
        hex::encode(hasher.finalize())[..12].to_string()
    })
}
