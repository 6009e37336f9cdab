//! Which repository paths configure a review: the catalog's and schema roots'
//! places in the repository, a conclave file given by path, and the fixed places of
//! rules files and of `.conclave/`.

use super::source::ConfigKind;
use crate::dismissals;
use crate::rules::{INSTRUCTION_FILES, RULES_DIR};

/// Which repository paths configure a review: the catalog's and schema roots'
/// places in the repository (when they lie inside it), the conclave file given by
/// path, and the fixed places of rules and settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// The catalog directory, relative to the repository root.
    pub catalog: Option<String>,
    /// Schema roots inside the repository, relative to its root.
    pub schemas: Vec<String>,
    /// A conclave file given by path inside the repository.
    pub conclave_file: Option<String>,
    /// Rules files given with the request that lie inside the repository.
    pub given_rules: Vec<String>,
}

impl Layout {
    /// What `path` (relative to the repository root) configures, if anything.
    pub fn kind_of(&self, path: &str) -> Option<ConfigKind> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let parent = path.rfind('/').map_or("", |i| &path[..i]);
        if self.conclave_file.as_deref() == Some(path)
            || (self.catalog.as_deref() == Some(parent) && name.ends_with(".conclave.json"))
        {
            return Some(ConfigKind::Conclave);
        }
        if self.schemas.iter().any(|root| under(path, root)) && name.ends_with(".schema.json") {
            return Some(ConfigKind::Schema);
        }
        if INSTRUCTION_FILES.contains(&name) || under(path, RULES_DIR) || self.given_rules.iter().any(|g| g == path) {
            return Some(ConfigKind::Rules);
        }
        if path == dismissals::FILE {
            return Some(ConfigKind::Dismissals);
        }
        under(path, ".conclave").then_some(ConfigKind::Settings)
    }

    /// Whether the base's copy of `path` is needed.
    pub fn wanted(&self, path: &str) -> bool {
        self.kind_of(path).is_some()
    }
}

/// Whether `path` lies under the directory `dir` (both relative; `""` is the root).
fn under(path: &str, dir: &str) -> bool {
    dir.is_empty() || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}
