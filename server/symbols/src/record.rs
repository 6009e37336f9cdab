//! The record of one repository's files (like git's index): each file's size,
//! modification time, inode, blob id and symbols, packed in one binary file
//! (postcard, compact and quick to decode) under the cache
//! directory, keyed by the digest of the repository's canonical root. A file whose
//! stat matches its record is neither opened nor hashed, and every file's symbols are
//! read in one go rather than from one cache entry each. A build that changed a few
//! files writes only a delta beside the base record (what changed since it), and
//! writes the base anew once the delta has grown. A record that does not read back,
//! or is for another root or format, is ignored (the per-blob cache serves), never a
//! failure.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::collections::{HashMap, HashSet};
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

/// The base record: every file, as one build saw it.
#[derive(Debug, Serialize, Deserialize)]
struct Packed {
    format: u32,
    root: String,
    /// When the build that wrote it started, in nanoseconds since the epoch: stats
    /// were taken after it. It also names this base for its deltas.
    stamp_ns: u64,
    files: Vec<Known>,
}

/// What changed since the base: written instead of the base while it is small, so
/// a build after a few changed files writes a few entries, not every file's.
#[derive(Debug, Serialize, Deserialize)]
struct Delta {
    format: u32,
    root: String,
    /// The stamp of the base it applies to; a delta of another base is ignored.
    base_stamp_ns: u64,
    stamp_ns: u64,
    /// New files, and files whose stat or blob differ from the base's.
    files: Vec<Known>,
    /// The base's files that are gone.
    removed: Vec<String>,
}

/// One file as recorded, with the stamp of the build that recorded it.
pub(crate) struct Recorded {
    pub known: Known,
    pub stamp_ns: u64,
    /// Whether the base holds it (otherwise the delta does).
    pub in_base: bool,
}

/// A record read back: the base with its delta applied.
pub(crate) struct Loaded {
    pub files: HashMap<String, Recorded>,
    /// Whether a delta was there but did not read back (ignored: the base serves,
    /// and every file it does not match is hashed).
    pub delta_corrupt: bool,
    base_stamp_ns: u64,
    base_paths: HashSet<String>,
}

/// A delta grows to at most this many files, or an eighth of the base's, whichever
/// is more; past it the base is written anew.
const DELTA_MIN_CAP: usize = 64;

/// Where one repository's record lives.
pub(crate) struct Record {
    path: PathBuf,
    delta_path: PathBuf,
    root: String,
}

impl Record {
    pub fn new(cache: &Cache, root: &Path) -> Record {
        let root = root.to_string_lossy().into_owned();
        let digest = hex::encode(Sha1::digest(root.as_bytes()));
        let name = format!("{}.postcard", &digest[..20]);
        Record { path: cache.dir().join("repos").join(&name), delta_path: cache.dir().join("deltas").join(name), root }
    }

    /// The record, `Ok(None)` when there is none, `Err(())` when its base does not
    /// read back or is another root's or format's.
    #[allow(clippy::result_unit_err)]
    pub fn load(&self) -> Result<Option<Loaded>, ()> {
        let Ok(bytes) = std::fs::read(&self.path) else { return Ok(None) };
        let packed = match postcard::from_bytes::<Packed>(&bytes) {
            Ok(packed) if packed.format == CACHE_FORMAT && packed.root == self.root => packed,
            _ => return Err(()),
        };
        let base_paths = packed.files.iter().map(|known| known.path.clone()).collect();
        let mut files: HashMap<String, Recorded> = packed
            .files
            .into_iter()
            .map(|known| (known.path.clone(), Recorded { known, stamp_ns: packed.stamp_ns, in_base: true }))
            .collect();
        let mut delta_corrupt = false;
        if let Ok(bytes) = std::fs::read(&self.delta_path) {
            match postcard::from_bytes::<Delta>(&bytes) {
                Ok(delta) if delta.format == CACHE_FORMAT && delta.root == self.root => {
                    if delta.base_stamp_ns == packed.stamp_ns {
                        for path in &delta.removed {
                            files.remove(path);
                        }
                        for known in delta.files {
                            let recorded = Recorded { known, stamp_ns: delta.stamp_ns, in_base: false };
                            files.insert(recorded.known.path.clone(), recorded);
                        }
                    }
                }
                _ => delta_corrupt = true,
            }
        }
        Ok(Some(Loaded { files, delta_corrupt, base_stamp_ns: packed.stamp_ns, base_paths }))
    }

    /// Whether `changed` files (new, or differing from the base) may go in a delta
    /// over `loaded`'s base rather than in a new base.
    pub fn fits_delta(loaded: Option<&Loaded>, changed: usize) -> bool {
        loaded.is_some_and(|l| changed <= DELTA_MIN_CAP.max(l.base_paths.len() / 8))
    }

    /// Writes a delta over `loaded`'s base: `changed` are the files that differ from
    /// it, `current` every file's path now.
    pub fn save_delta(
        &self,
        stamp_ns: u64,
        loaded: &Loaded,
        changed: Vec<Known>,
        current: &HashSet<&str>,
    ) -> std::io::Result<()> {
        let removed = loaded.base_paths.iter().filter(|p| !current.contains(p.as_str())).cloned().collect();
        let delta = Delta {
            format: CACHE_FORMAT,
            root: self.root.clone(),
            base_stamp_ns: loaded.base_stamp_ns,
            stamp_ns,
            files: changed,
            removed,
        };
        write_whole(&self.delta_path, &postcard::to_stdvec(&delta).map_err(std::io::Error::other)?)
    }

    /// Writes a new base of every file, and drops the delta of the old one.
    pub fn save(&self, stamp_ns: u64, files: Vec<Known>) -> std::io::Result<()> {
        let packed = Packed { format: CACHE_FORMAT, root: self.root.clone(), stamp_ns, files };
        write_whole(&self.path, &postcard::to_stdvec(&packed).map_err(std::io::Error::other)?)?;
        match std::fs::remove_file(&self.delta_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Writes `bytes` to `path` through a temporary file renamed into place, so a reader
/// never sees half of it.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
