//! The catalog's listing (`GET /api/conclaves`) without reading and checking every
//! file on every request: each file's summary is kept with the file's stamp (length
//! and modification time), and with the stamp of the schema files it was checked
//! against, and is used again while both are unchanged. A file modified on disk is
//! checked again at the next listing.
//!
//! File systems keep modification times in coarse ticks, so two writes of the same
//! length within one tick would look alike: a summary is trusted only when the file
//! had been settled for [`SETTLE`] when it was read (git's "racy clean" rule), and a
//! file changed more recently than that is checked again on every listing until it
//! settles. The listing runs on a blocking thread.

use conclave_catalog::list_ids;
use conclave_schema::{SchemaCatalog, SchemaSource};
use conclave_shared::Conclave;
use conclave_shared::api::ConclaveSummary;
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::checking::validation;
use crate::workspace::Workspace;

/// How long before it was read a file must have last changed for its summary to be
/// kept: longer than any file system's tick of modification times.
pub const SETTLE: Duration = Duration::from_secs(2);

/// The summaries kept between listings.
#[derive(Debug, Default)]
pub struct Listing {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// The stamp of the schema files the summaries were checked against.
    schemas: Option<u64>,
    /// Summaries by conclave id.
    files: HashMap<String, Entry>,
}

#[derive(Debug)]
struct Entry {
    stamp: Stamp,
    summary: ConclaveSummary,
}

/// What tells one version of a file from another without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Stamp {
    len: u64,
    modified: SystemTime,
}

impl Listing {
    /// Every conclave of `workspace`'s catalog, summarized, in id order.
    pub fn list(&self, workspace: &Workspace) -> Vec<ConclaveSummary> {
        let now = SystemTime::now();
        let schemas = schema_stamp(&workspace.schemas, now);
        let ids = list_ids(&workspace.catalog_dir);
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.schemas.is_none() || kept.schemas != schemas {
            kept.files.clear();
            kept.schemas = schemas;
        }
        let present: HashSet<&String> = ids.iter().collect();
        kept.files.retain(|id, _| present.contains(id));
        let mut out = Vec::with_capacity(ids.len());
        for id in &ids {
            let path = workspace.catalog_dir.join(format!("{id}.conclave.json"));
            let stamp = stamp_of(&path).filter(|s| settled(s, now));
            match (stamp, kept.files.get(id)) {
                (Some(stamp), Some(entry)) if entry.stamp == stamp => out.push(entry.summary.clone()),
                _ => {
                    let summary = summarize(workspace, id, &path);
                    match stamp.filter(|_| schemas.is_some()) {
                        Some(stamp) => kept.files.insert(id.clone(), Entry { stamp, summary: summary.clone() }),
                        None => kept.files.remove(id),
                    };
                    out.push(summary);
                }
            }
        }
        out
    }
}

/// Conclave `id`'s summary, read and checked now.
fn summarize(workspace: &Workspace, id: &str, path: &Path) -> ConclaveSummary {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let parsed = Conclave::from_json(&text).ok();
    let errors = validation(workspace.catalog_context(), &format!("{id}.conclave.json"), &text).errors;
    ConclaveSummary {
        name: parsed.as_ref().map(|c| c.name.clone()),
        description: parsed.as_ref().map(|c| c.description.clone()),
        nodes: parsed.as_ref().map_or(0, |c| c.nodes.len()),
        errors,
        id: id.to_string(),
    }
}

fn stamp_of(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp { len: meta.len(), modified: meta.modified().ok()? })
}

/// Whether a file of this stamp, read at `now`, had settled (see [`SETTLE`]).
fn settled(stamp: &Stamp, now: SystemTime) -> bool {
    now.duration_since(stamp.modified).is_ok_and(|age| age >= SETTLE)
}

/// One number for the schema files a check can read: which file each reference
/// resolves to, with its stamp. `None` while one of them has not settled, so nothing
/// checked against it is kept.
fn schema_stamp(schemas: &SchemaCatalog, now: SystemTime) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    for (reference, source) in schemas.list() {
        reference.hash(&mut hasher);
        if let SchemaSource::File(path) = source {
            let stamp = stamp_of(&path);
            if !stamp.is_some_and(|s| settled(&s, now)) {
                return None;
            }
            (path, stamp).hash(&mut hasher);
        }
    }
    Some(hasher.finish())
}
