//! An eval's dataset: a directory with `cases.jsonl`, one labelled change per line,
//! and the repositories the lines name; and making a case's repository real in a
//! temporary directory.
//!
//! A line is `{"id", "repo", "base"?, "head"?, "issues": [{"file", "line",
//! "description", "severity"?}]}`. `repo` is a path inside the dataset: a git
//! repository, a `git bundle` file, or a directory holding `base/` and
//! `change.patch`, which becomes a repository with a `base` branch (the directory as
//! it is) and a `head` branch (the patch applied). `head` defaults to the tip; `base`
//! defaults to `base` for a patch directory and is required otherwise.

use conclave_shared::Severity;
use serde::Deserialize;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The file of cases in a dataset's directory.
pub const CASES_FILE: &str = "cases.jsonl";

/// The branch a case's head is checked out on, so a review names the same branch
/// wherever it runs.
pub const HEAD_BRANCH: &str = "eval-head";

/// One labelled change.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Its id, unique in the dataset.
    pub id: String,
    /// Its repository, relative to the dataset.
    pub repo: String,
    /// The base of the change.
    #[serde(default)]
    pub base: Option<String>,
    /// The head of the change (default: the tip).
    #[serde(default)]
    pub head: Option<String>,
    /// The real issues in the change.
    pub issues: Vec<GoldenIssue>,
}

/// A real issue of a case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenIssue {
    /// Its file, relative to the repository's root.
    pub file: String,
    /// Its line in the head's version of the file.
    pub line: u64,
    /// What is wrong.
    pub description: String,
    /// How bad it is.
    #[serde(default)]
    pub severity: Option<Severity>,
}

/// A dataset read from its directory.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The directory.
    pub dir: PathBuf,
    /// The cases, in the file's order.
    pub cases: Vec<Case>,
}

/// Why a dataset or one of its repositories could not be used: what, where, and
/// what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct DatasetError(pub String);

fn fail<T>(message: String) -> Result<T, DatasetError> {
    Err(DatasetError(message))
}

impl Dataset {
    /// Reads `dir/cases.jsonl`, checking every line.
    pub fn load(dir: &Path) -> Result<Dataset, DatasetError> {
        let file = dir.join(CASES_FILE);
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) => {
                return fail(format!(
                    "cannot read {}: {e}; a dataset is a directory with a {CASES_FILE} file, one case per line",
                    file.display()
                ));
            }
        };
        let mut cases: Vec<Case> = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = format!("{}:{}", file.display(), n + 1);
            let case: Case = serde_json::from_str(line).map_err(|e| {
                DatasetError(format!(
                    "{at}: {e}; a case is {{\"id\", \"repo\", \"base\", \"head\", \"issues\": [{{\"file\", \"line\", \
                     \"description\", \"severity\"}}]}}"
                ))
            })?;
            check_case(&case, &at)?;
            if cases.iter().any(|c| c.id == case.id) {
                return fail(format!("{at}: the id `{}` is used twice; give each case its own id", case.id));
            }
            cases.push(case);
        }
        if cases.is_empty() {
            return fail(format!("{} has no case", file.display()));
        }
        Ok(Dataset { dir: dir.to_path_buf(), cases })
    }
}

fn check_case(case: &Case, at: &str) -> Result<(), DatasetError> {
    if case.id.is_empty() || !case.id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return fail(format!("{at}: the id `{}` must be letters, digits, `-`, `_` or `.`", case.id));
    }
    if !inside(&case.repo) {
        return fail(format!(
            "{at} (/repo): `{}` leaves the dataset; give a relative path inside its directory",
            case.repo
        ));
    }
    for (i, issue) in case.issues.iter().enumerate() {
        if !inside(&issue.file) {
            return fail(format!("{at} (/issues/{i}/file): `{}` is not a path inside the repository", issue.file));
        }
        if issue.line == 0 {
            return fail(format!("{at} (/issues/{i}/line): lines start at 1"));
        }
    }
    for (field, value) in [("base", &case.base), ("head", &case.head)] {
        if let Some(rev) = value
            && (rev.is_empty() || rev.starts_with('-') || rev.contains(char::is_whitespace))
        {
            return fail(format!("{at} (/{field}): `{rev}` is not a git revision"));
        }
    }
    Ok(())
}

/// Whether `path` is relative and stays inside its root.
fn inside(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty() && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// A case's repository made real: where it is, and the base to review from.
#[derive(Debug, Clone)]
pub struct Checkout {
    /// The repository, its head checked out on [`HEAD_BRANCH`].
    pub root: PathBuf,
    /// The base commit.
    pub base: String,
}

/// Makes `case`'s repository real in `into/<id>` (which must not exist), its head
/// checked out.
pub fn check_out(dataset: &Path, case: &Case, into: &Path) -> Result<Checkout, DatasetError> {
    let source = dataset.join(&case.repo);
    let root = into.join(&case.id);
    let what = |e: String| DatasetError(format!("case `{}` ({}): {e}", case.id, source.display()));
    let default_base = if source.join("change.patch").is_file() && source.join("base").is_dir() {
        from_patch(&source, &root).map_err(what)?;
        "base"
    } else if source.is_file() || source.join(".git").exists() || source.join("HEAD").is_file() {
        git(into, &["clone", "-q", "--no-hardlinks", "--", &source.display().to_string(), &case.id])
            .map_err(|e| what(e.0))?;
        ""
    } else {
        return Err(what(
            "not a git repository, a git bundle, or a directory holding base/ and change.patch".to_string(),
        ));
    };
    let head = case.head.as_deref().unwrap_or(if default_base.is_empty() { "HEAD" } else { "head" });
    let head = resolve(&root, head).map_err(|e| what(format!("/head: {e}")))?;
    git(&root, &["checkout", "-q", "-B", HEAD_BRANCH, &head]).map_err(|e| what(e.0))?;
    let base = match (&case.base, default_base) {
        (Some(base), _) => base.as_str(),
        (None, "") => return Err(what("/base is missing; name the commit the change starts from".into())),
        (None, default) => default,
    };
    let base = resolve(&root, base).map_err(|e| what(format!("/base: {e}")))?;
    Ok(Checkout { root, base })
}

/// A repository at `root` with `source/base` committed on `base` and
/// `source/change.patch` applied and committed on `head`.
fn from_patch(source: &Path, root: &Path) -> Result<(), String> {
    copy_tree(&source.join("base"), root).map_err(|e| format!("cannot copy base/: {e}"))?;
    git(root, &["init", "-q", "-b", "base"]).map_err(|e| e.0)?;
    git(root, &["add", "-A"]).map_err(|e| e.0)?;
    git(root, &["commit", "-q", "--allow-empty", "-m", "base"]).map_err(|e| e.0)?;
    git(root, &["checkout", "-q", "-b", "head"]).map_err(|e| e.0)?;
    let patch = source.join("change.patch").canonicalize().map_err(|e| format!("change.patch: {e}"))?;
    git(root, &["apply", "--whitespace=nowarn", &patch.display().to_string()])
        .map_err(|e| format!("change.patch does not apply to base/: {}", e.0))?;
    git(root, &["add", "-A"]).map_err(|e| e.0)?;
    git(root, &["commit", "-q", "--allow-empty", "-m", "change"]).map(drop).map_err(|e| e.0)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
        // Symbolic links are left out: a dataset must not reach outside itself.
    }
    Ok(())
}

/// The commit `rev` names; in a clone, a branch of the source is also found as
/// `origin/<rev>`.
fn resolve(root: &Path, rev: &str) -> Result<String, String> {
    [rev.to_string(), format!("origin/{rev}")]
        .iter()
        .find_map(|r| {
            git(root, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{r}^{{commit}}")]).ok()
        })
        .map(|c| c.trim().to_string())
        .ok_or_else(|| format!("`{rev}` is not a commit of the repository"))
}

/// Runs git in `dir` with a fixed author, committer and dates, so a case's commits
/// are the same wherever and whenever it is checked out.
fn git(dir: &Path, args: &[&str]) -> Result<String, DatasetError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=conclave-eval", "-c", "user.email=eval@conclave.invalid", "-c", "commit.gpgsign=false"])
        .args(["-c", "core.autocrlf=false", "-c", "init.defaultBranch=base"])
        .args(args)
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .map_err(|e| DatasetError(format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(DatasetError(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
    }
}
