//! Where a repository's mirror lives in the cache: `<root>/<host>/<owner>/…/<name>.git`,
//! derived only from names that cannot leave the cache or surprise a file system
//! (no `..`, no absolute paths, no hidden or odd names).

use reqwest::Url;
use std::path::{Path, PathBuf};

use super::error::MirrorError;

/// The most segments a repository path has (GitLab's nested groups).
const MAX_SEGMENTS: usize = 20;
/// The longest segment.
const MAX_SEGMENT: usize = 100;

/// The mirror directory of `repository` (`owner/name`, or GitLab's `group/…/name`)
/// on the forge at `web`, under `root`.
pub fn mirror_dir(root: &Path, web: &Url, repository: &str) -> Result<PathBuf, MirrorError> {
    let refuse = |reason: &str| MirrorError::HostileName { name: repository.to_string(), reason: reason.to_string() };
    let host = match (web.host_str(), web.port()) {
        (Some(host), Some(port)) => format!("{host}_{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => return Err(refuse("its forge's URL has no host")),
    };
    if !safe_segment(&host) {
        return Err(refuse("its forge's host cannot name a directory"));
    }
    let segments: Vec<&str> = repository.split('/').collect();
    if segments.len() < 2 || segments.len() > MAX_SEGMENTS {
        return Err(refuse("a repository is `owner/name` (or `group/…/name` on GitLab)"));
    }
    if let Some(bad) = segments.iter().find(|s| !safe_segment(s)) {
        return Err(refuse(&format!(
            "`{}` is not a repository name: names use letters, digits, `-`, `_` and `.`, do not start with `.` \
             and are at most {MAX_SEGMENT} characters",
            bad.escape_debug()
        )));
    }
    let mut dir = root.join(host);
    let (name, owners) = segments.split_last().unwrap_or((&"", &[]));
    for owner in owners {
        dir.push(owner.to_ascii_lowercase());
    }
    dir.push(format!("{}.git", name.to_ascii_lowercase()));
    Ok(dir)
}

/// `name` as one directory under the cache, refused unless it is a plain name (see
/// `safe_segment`).
pub fn checked_segment(name: &str) -> Result<&str, MirrorError> {
    match safe_segment(name) {
        true => Ok(name),
        false => Err(MirrorError::HostileName { name: name.to_string(), reason: "it cannot name a directory".into() }),
    }
}

/// Whether `segment` is a name every forge accepts and that is one plain directory:
/// ASCII letters, digits, `-`, `_`, `.`, not starting with `.` (so neither `.`,
/// `..` nor a hidden name) and not ending in `.git` or `.lock` (git's own suffixes).
fn safe_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= MAX_SEGMENT
        && !segment.starts_with('.')
        && !segment.ends_with(".lock")
        && !segment.ends_with(".git")
        && segment.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
