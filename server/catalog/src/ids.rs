//! Conclave ids: which names can be one (a file name stem, never a path), and the
//! ids of a catalog directory's files.

use std::path::Path;

/// Whether `id` can be a conclave id: a file name stem of lowercase letters, digits,
/// `-` and `_` (never a path).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !id.starts_with(['-', '_'])
}

/// Ids of the conclave files directly in `dir`, sorted.
pub fn list_ids(dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".conclave.json").map(str::to_string))
        .collect();
    ids.sort();
    ids
}
