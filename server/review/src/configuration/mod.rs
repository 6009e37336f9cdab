//! What configures a review, and from which side of the change it is read.
//!
//! The change under review is untrusted: a pull request that edited the review's own
//! conclave (adding a command node), its rules files (telling reviewers to report
//! nothing) or its dismissals (dismissing its own blocker) would otherwise decide how
//! it is reviewed. So a review with a base reads everything that configures it from
//! the base side, the merge base of base and head, through git's objects
//! ([`snapshot::Snapshot`]), never from the working tree:
//! - the conclave file (by id in the catalog, or a path inside the repository) and
//!   every conclave it nests, when the catalog lies inside the repository;
//! - the schemas of the catalog's `schemas/` (and any schema root in the repository);
//! - the rules files (`AGENTS.md`, `CLAUDE.md`, `REVIEW.md`, `.conclave/rules/`);
//! - `.conclave/dismissed.json` and anything else under `.conclave/`.
//!
//! Files outside the repository (a catalog elsewhere, a `--conclave` path the caller
//! gave outside it, the user's configuration directory) were chosen by the caller and
//! are read as they are. The change's edits to configuration files are not applied;
//! they are recorded in the run input ([`ConfigurationSource`], under
//! [`CONFIGURATION_INPUT`]) for the report to name and raise as findings
//! (`findings.rs`). [`Trust::Head`] is the caller's explicit opt-in for a change it
//! trusts; a review of the working tree without a base reads the working tree.

pub mod dismissals;
mod edits;
pub mod findings;
mod layout;
pub mod snapshot;
mod source;

use conclave_catalog::CatalogContext;
use conclave_schema::SchemaCatalog;
use conclave_shared::Trust;
use std::path::{Component, Path, PathBuf};

use crate::choice::{Catalog, ConclaveChoice};
use crate::diff::{ChangeError, ChangedFile};
use crate::rules::GivenRules;
pub use layout::Layout;
pub use snapshot::Snapshot;
pub use source::{CONFIGURATION_INPUT, ConfigKind, ConfigurationSource, EditedFile, short};

/// Where a review's conclave, schemas and rules are read from: the workspace's
/// catalog and the repository as they are, or the base side's copy of them.
#[derive(Debug)]
pub struct Configuration {
    /// What the run input records; `None` for a review of the working tree.
    pub source: Option<ConfigurationSource>,
    /// The catalog directory to read conclaves from.
    pub catalog_dir: PathBuf,
    /// What conclaves are checked against (schema roots and nested conclaves
    /// pointing into the base's copy where they lie in the repository).
    pub context: CatalogContext,
    /// The conclave to review with (a path inside the repository mapped to the copy).
    pub choice: ConclaveChoice,
    /// The directory the repository's rules files are read from.
    pub rules_root: PathBuf,
    /// The rules files given with the request, where each is read: one inside the
    /// repository from the base side's copy when the base configures the review.
    pub rules_given: Vec<GivenRules>,
    /// The base's copy, kept until the review is prepared.
    snapshot: Option<Snapshot>,
}

impl Configuration {
    /// The catalog, as the pipeline takes it.
    pub fn catalog(&self) -> Catalog<'_> {
        Catalog { dir: &self.catalog_dir, context: &self.context }
    }

    /// Turns a path inside the base's copy in a message back into `COMMIT:PATH`, as
    /// git names a file of a commit, so errors name the repository's file.
    pub fn shown(&self, text: &str) -> String {
        match &self.snapshot {
            Some(snapshot) => {
                let prefix = format!("{}/", snapshot.root().display());
                text.replace(&prefix, &format!("{}:", short(snapshot.commit())))
            }
            None => text.to_string(),
        }
    }
}

/// What a review of the change in `root` reads its configuration from. With a `base`
/// and [`Trust::Base`], the base side's copy (the merge base of `base` and `HEAD`);
/// with [`Trust::Head`], the working tree, recording that the change configured its
/// own review; without a base, the working tree as it is. `changed` are the change's
/// files, of which the configuration files are recorded as edited. Runs git and reads
/// the file system: call it on a blocking thread.
pub fn configure(
    root: &Path,
    base: Option<&str>,
    trust: Trust,
    request: (Catalog<'_>, &ConclaveChoice, &[PathBuf]),
    changed: &[ChangedFile],
) -> Result<Configuration, ChangeError> {
    let (catalog, choice, given) = request;
    let as_is = |source| Configuration {
        source,
        catalog_dir: catalog.dir.to_path_buf(),
        context: catalog.context.clone(),
        choice: choice.clone(),
        rules_root: root.to_path_buf(),
        rules_given: given.iter().map(|p| GivenRules::as_is(p)).collect(),
        snapshot: None,
    };
    let Some(base) = base else { return Ok(as_is(None)) };
    let root = root.canonicalize().map_err(|e| ChangeError::NotARepository(format!("{}: {e}", root.display())))?;
    let layout = layout(&root, catalog, choice, given);
    let commit = merge_base(&root, base)?;
    let snapshot = Snapshot::extract(&root, &commit, &layout)?;
    let edited = edits::edited(&root, &snapshot, &layout, changed);
    if trust == Trust::Head {
        return Ok(as_is(Some(ConfigurationSource { read_from: Trust::Head, commit: None, edited })));
    }
    let inside = |dir: &Path| relative_inside(&root, dir).map(|rel| snapshot.path(&rel));
    let catalog_dir = inside(catalog.dir).unwrap_or_else(|| catalog.dir.to_path_buf());
    let mut context = catalog.context.clone();
    let roots = context.schemas.roots().iter().map(|r| inside(r).unwrap_or_else(|| r.clone())).collect();
    context.schemas = SchemaCatalog::with_roots(roots);
    if context.catalog.is_some() {
        context.catalog = Some(catalog_dir.clone());
    }
    let choice = match (choice, &layout.conclave_file) {
        (ConclaveChoice::PathOrId(_), Some(file)) => {
            ConclaveChoice::PathOrId(snapshot.path(file).display().to_string())
        }
        _ => choice.clone(),
    };
    let rules_given = given
        .iter()
        .map(|path| match relative_inside(&root, path) {
            Some(rel) => GivenRules {
                path: snapshot.path(&rel),
                shown: format!("{} (the base's version, commit {})", path.display(), short(&commit)),
            },
            None => GivenRules::as_is(path),
        })
        .collect();
    let source = ConfigurationSource { read_from: Trust::Base, commit: Some(commit), edited };
    Ok(Configuration {
        source: Some(source),
        catalog_dir,
        context,
        choice,
        rules_root: snapshot.root().to_path_buf(),
        rules_given,
        snapshot: Some(snapshot),
    })
}

/// Where the catalog, the schema roots and a conclave given by path lie in the
/// repository at `root` (canonical).
fn layout(root: &Path, catalog: Catalog<'_>, choice: &ConclaveChoice, given: &[PathBuf]) -> Layout {
    let conclave_file = match choice {
        ConclaveChoice::PathOrId(given) if looks_like_path(given, catalog.dir) => {
            relative_inside(root, Path::new(given))
        }
        _ => None,
    };
    Layout {
        catalog: relative_inside(root, catalog.dir),
        schemas: catalog.context.schemas.roots().iter().filter_map(|r| relative_inside(root, r)).collect(),
        conclave_file,
        given_rules: given.iter().filter_map(|p| relative_inside(root, p)).filter(|r| !r.is_empty()).collect(),
    }
}

/// Whether `--conclave` names a file rather than an id of the catalog: a path with a
/// separator or a `.json` name, or a file that exists while the catalog has no
/// conclave of that id (as the catalog's loader decides).
fn looks_like_path(given: &str, catalog_dir: &Path) -> bool {
    given.contains('/')
        || given.ends_with(".json")
        || (Path::new(given).is_file() && !catalog_dir.join(format!("{given}.conclave.json")).is_file())
}

/// `path` relative to `root` (canonical), when it lies inside it: resolved against
/// the current directory, its existing part canonicalized (so a symlink into the
/// repository counts as inside), `/`-separated; `""` for the root itself.
pub fn relative_inside(root: &Path, path: &Path) -> Option<String> {
    let absolute = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().ok()?.join(path) };
    let resolved = canonical_prefix(&absolute);
    let relative = resolved.strip_prefix(root).ok()?;
    let parts: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    Some(parts.join("/"))
}

/// `path` with its longest existing prefix canonicalized and the rest appended,
/// `.` and `..` in the rest resolved lexically.
fn canonical_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while existing.canonicalize().is_err() {
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut resolved = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        match Path::new(&name).components().next() {
            Some(Component::ParentDir) => {
                resolved.pop();
            }
            Some(Component::CurDir) => {}
            _ => resolved.push(name),
        }
    }
    resolved
}

/// Whether `path` is a file of the repository that `repo` lies in, tracked by git:
/// one the checkout of a change brought, not one the caller made. A path outside the
/// repository is not. Runs git: call it on a blocking thread.
pub fn tracked_in_repository(repo: &Path, path: &Path) -> bool {
    let Ok(root) = crate::diff::repository_root(repo)
        .and_then(|r| r.canonicalize().map_err(|e| ChangeError::NotARepository(format!("{}: {e}", r.display()))))
    else {
        return false;
    };
    let Some(relative) = relative_inside(&root, path) else { return false };
    !relative.is_empty() && crate::diff::git(&root, &["ls-files", "--error-unmatch", "--", &relative]).is_ok()
}

/// The merge base of `base` and `HEAD` in the repository at `root`: the side of the
/// change that configures its review.
pub fn merge_base(root: &Path, base: &str) -> Result<String, ChangeError> {
    let commit = crate::diff::verify_base(root, base)?;
    let found = crate::diff::git(root, &["merge-base", "--end-of-options", &commit, "HEAD"]).map_err(|_| {
        ChangeError::InvalidBase {
            base: base.to_string(),
            reason: " that shares history with HEAD (they have no common ancestor, so there is no base side to \
                     read the review's configuration from)"
                .to_string(),
        }
    })?;
    Ok(found.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let out = std::process::Command::new("git").arg("-C").arg(root).args(args).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn write(root: &Path, path: &str, text: &str) {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }

    #[test]
    fn the_layout_names_what_each_path_configures() {
        let layout = Layout {
            catalog: Some("conclaves".into()),
            schemas: vec!["conclaves/schemas".into()],
            conclave_file: Some("ci/review.json".into()),
            given_rules: vec!["docs/review-guide.md".into()],
        };
        let kinds = [
            ("conclaves/light-code-review.conclave.json", Some(ConfigKind::Conclave)),
            ("conclaves/nested/x.conclave.json", None),
            ("ci/review.json", Some(ConfigKind::Conclave)),
            ("conclaves/schemas/review/findings/v1.schema.json", Some(ConfigKind::Schema)),
            ("conclaves/schemas/notes.md", None),
            ("AGENTS.md", Some(ConfigKind::Rules)),
            ("src/db/CLAUDE.md", Some(ConfigKind::Rules)),
            (".conclave/rules/sql.md", Some(ConfigKind::Rules)),
            (".conclave/dismissed.json", Some(ConfigKind::Dismissals)),
            (".conclave/other.json", Some(ConfigKind::Settings)),
            (".conclaveish/x", None),
            ("src/main.rs", None),
        ];
        for (path, kind) in kinds {
            assert_eq!(layout.kind_of(path), kind, "{path}");
        }
        let at_root = Layout { catalog: Some(String::new()), ..Layout::default() };
        assert_eq!(at_root.kind_of("x.conclave.json"), Some(ConfigKind::Conclave), "a catalog at the root");
        assert_eq!(at_root.kind_of("src/x.conclave.json"), None);
    }

    #[test]
    fn paths_inside_the_repository_are_found_through_symlinks_and_dot_dot_and_others_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical").join("repo");
        std::fs::create_dir_all(root.join("conclaves")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("conclaves"), dir.path().join("linked")).expect("symlink");
        assert_eq!(relative_inside(&root, &root.join("conclaves")).as_deref(), Some("conclaves"));
        assert_eq!(relative_inside(&root, &dir.path().join("linked")).as_deref(), Some("conclaves"));
        assert_eq!(relative_inside(&root, &root.join("missing/x.json")).as_deref(), Some("missing/x.json"));
        assert_eq!(relative_inside(&root, &root.join("conclaves/../../outside")), None);
        assert_eq!(relative_inside(&root, &root).as_deref(), Some(""));
        assert_eq!(relative_inside(&root, dir.path()), None);
    }

    #[test]
    fn the_base_copy_holds_the_merge_base_s_configuration_files_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        git(&root, &["init", "-q", "-b", "main"]);
        write(&root, "conclaves/review.conclave.json", "{\"base\": true}\n");
        write(&root, "src/AGENTS.md", "base rules\n");
        write(&root, "src/main.rs", "fn main() {}\n");
        std::os::unix::fs::symlink("/etc/passwd", root.join("AGENTS.md")).expect("symlink");
        git(&root, &["add", "."]);
        git(&root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"]);
        git(&root, &["checkout", "-q", "-b", "feature"]);
        write(&root, "conclaves/review.conclave.json", "{\"head\": true}\n");
        write(&root, ".conclave/dismissed.json", "{}\n");
        git(&root, &["add", "."]);
        git(&root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "head"]);
        let commit = merge_base(&root, "main").expect("a merge base");
        let layout = Layout { catalog: Some("conclaves".into()), ..Layout::default() };
        let snapshot = Snapshot::extract(&root, &commit, &layout).expect("extracted");
        let read = |p: &str| std::fs::read_to_string(snapshot.path(p)).ok();
        assert_eq!(read("conclaves/review.conclave.json").as_deref(), Some("{\"base\": true}\n"));
        assert_eq!(read("src/AGENTS.md").as_deref(), Some("base rules\n"));
        assert_eq!(read("src/main.rs"), None, "code is not configuration");
        assert_eq!(read(".conclave/dismissed.json"), None, "the change's file is not the base's");
        let link = std::fs::symlink_metadata(snapshot.path("AGENTS.md")).expect("made again");
        assert!(link.file_type().is_symlink(), "a rules file's symlink stays a symlink, for the reader to refuse");
        assert_eq!(std::fs::read_link(snapshot.path("AGENTS.md")).expect("a link"), Path::new("/etc/passwd"));
        let no_history = merge_base(&root, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        assert!(no_history.is_err(), "the empty tree is no commit");
    }
}
