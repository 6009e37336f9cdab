//! The record of one repository's files (like git's index): each file's size,
//! modification time, inode, blob id and symbols, packed in one binary file
//! (postcard, compact and quick to decode) under the cache
//! directory, keyed by the digest of the repository's canonical root. A file whose
//! stat matches its record is neither opened nor hashed, and every file's symbols are
//! read in one go rather than from one cache entry each. A record that does not read
//! back, or is for another root or format, is ignored (the per-blob cache serves),
//! never a failure.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::cache::{CACHE_FORMAT, Cache, Compact};
use crate::symbol::{Lang, Skip};

/// A file modified this close (in nanoseconds) before the record's stamp, or after
/// it, may have changed within the same mtime tick without its stat showing it, so
/// it is hashed ("racy", as git says).
const RACY_NS: u64 = 2_000_000_000;

/// What a file's stat says, to tell whether it changed since the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stat {
    pub size: u64,
    /// Nanoseconds since the epoch.
    pub mtime_ns: u64,
    /// 0 where the platform has none.
    pub inode: u64,
}

impl Stat {
    pub fn of(metadata: &std::fs::Metadata) -> Stat {
        let mtime_ns = metadata.modified().ok().map_or(0, nanos);
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(metadata);
        #[cfg(not(unix))]
        let inode = 0;
        Stat { size: metadata.len(), mtime_ns, inode }
    }
}

/// Nanoseconds since the epoch (0 before it).
pub(crate) fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// One file as recorded.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Known {
    pub path: String,
    pub lang: Lang,
    pub stat: Stat,
    pub blob: String,
    pub outcome: Result<Compact, Skip>,
}

impl Known {
    /// Whether `stat` (taken now) shows the file as recorded, and the record is old
    /// enough (by `stamp_ns`) for its mtime to be trusted.
    pub fn unchanged(&self, stat: Option<Stat>, stamp_ns: u64) -> bool {
        stat == Some(self.stat) && self.stat.mtime_ns.saturating_add(RACY_NS) < stamp_ns
    }
}

/// The file's contents.
#[derive(Debug, Serialize, Deserialize)]
struct Packed {
    format: u32,
    root: String,
    /// When the build that wrote it started, in nanoseconds since the epoch: stats
    /// were taken after it.
    stamp_ns: u64,
    files: Vec<Known>,
}

/// A record read back.
pub(crate) struct Loaded {
    pub stamp_ns: u64,
    pub files: HashMap<String, Known>,
}

/// Where one repository's record lives.
pub(crate) struct Record {
    path: PathBuf,
    root: String,
}

impl Record {
    pub fn new(cache: &Cache, root: &Path) -> Record {
        let root = root.to_string_lossy().into_owned();
        let digest = hex::encode(Sha1::digest(root.as_bytes()));
        Record { path: cache.dir().join("repos").join(format!("{}.postcard", &digest[..20])), root }
    }

    /// The record, `Ok(None)` when there is none, `Err(())` when it does not read
    /// back or is another root's or format's.
    #[allow(clippy::result_unit_err)]
    pub fn load(&self) -> Result<Option<Loaded>, ()> {
        let Ok(bytes) = std::fs::read(&self.path) else { return Ok(None) };
        match postcard::from_bytes::<Packed>(&bytes) {
            Ok(packed) if packed.format == CACHE_FORMAT && packed.root == self.root => {
                let files = packed.files.into_iter().map(|known| (known.path.clone(), known)).collect();
                Ok(Some(Loaded { stamp_ns: packed.stamp_ns, files }))
            }
            _ => Err(()),
        }
    }

    /// Writes the record through a temporary file renamed into place.
    pub fn save(&self, stamp_ns: u64, files: Vec<Known>) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let packed = Packed { format: CACHE_FORMAT, root: self.root.clone(), stamp_ns, files };
        let bytes = postcard::to_stdvec(&packed).map_err(std::io::Error::other)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&bytes)?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}
