//! The change under review, read from git: the diff of `BASE...HEAD`, or of the
//! working tree (staged, unstaged and untracked files) against `HEAD`, parsed into
//! files with their exact paths and changed line ranges (`parse.rs`), re-rendered
//! with new-file line numbers on every line so reviewers can cite lines exactly, and,
//! when it is larger than one agent call can take, split into parts (`parts.rs`).

mod parse;
pub mod parts;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use parse::{ChangedFile, ParseError};
use parse::{ParsedFile, parse_patch_with_raw, parse_single};
pub use parts::{DEFAULT_MAX_PARTS, LeftOutHunk, OmittedFile, Part};

use crate::impact::ChangeImpact;
use crate::rules::{RULES_FILES_KEY, RULES_KEY, RepositoryRules, insert_rules};

/// The default cap on the diff text sent to providers.
pub const DEFAULT_MAX_DIFF_BYTES: usize = 1024 * 1024;

/// Why a change could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The path is not inside a git repository.
    #[error("{0} is not a git repository (or a directory inside one); give the repository to review")]
    NotARepository(String),
    /// The base is not a commit of the repository (or looks like an option).
    #[error("`{base}` is not a commit in this repository{}; give a branch, tag or commit as the base", .reason)]
    InvalidBase {
        /// The base as given.
        base: String,
        /// Why, with a leading separator, or empty.
        reason: String,
    },
    /// git failed.
    #[error("git {command} failed: {message}")]
    Git {
        /// The git subcommand.
        command: String,
        /// git's error output.
        message: String,
    },
    /// git's output could not be read.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Even the smallest hunk is larger than a part.
    #[error(
        "the change is too large to review: the smallest hunk is {smallest} bytes and a part holds {max} bytes; review a smaller change or raise the cap"
    )]
    TooLarge {
        /// The smallest hunk's diff, in bytes.
        smallest: usize,
        /// The cap.
        max: usize,
    },
}

/// A change ready for review.
#[derive(Debug, Clone)]
pub struct Change {
    /// The repository root.
    pub root: PathBuf,
    /// The base ref, when reviewing `BASE...HEAD`.
    pub base: Option<String>,
    /// The files changed.
    pub files: Vec<ChangedFile>,
    /// The diff with new-file line numbers on every line; in a change split into
    /// parts, a note saying so (each part has its own diff).
    pub annotated: String,
    /// Files left out because the change needed more parts than allowed, largest first.
    pub omitted: Vec<OmittedFile>,
    /// The parts of a change too large for one agent call; empty when it fits in one.
    pub parts: Vec<Part>,
    /// Hunks left out because each alone is larger than a part.
    pub left_out: Vec<LeftOutHunk>,
    /// What was reviewed: the branch and commit checked out.
    pub head: Head,
    /// The change's impact (callers and tests of the functions it touches), once the
    /// pipeline built it (`impact/`); read back with the change from a stored run.
    pub impact: Option<ChangeImpact>,
}

/// The branch and commit a review reviewed, so that a later review can take the
/// latest review of a branch as its baseline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// The branch checked out; in a detached checkout (as CI systems make), the
    /// branch the CI system names (`GITHUB_HEAD_REF`, `GITHUB_REF_NAME`,
    /// `CI_MERGE_REQUEST_SOURCE_BRANCH_NAME`, `CI_COMMIT_BRANCH`).
    pub branch: Option<String>,
    /// The commit checked out, if there is one.
    pub commit: Option<String>,
}

impl Head {
    /// The head of the repository at `root`.
    pub fn of(root: &Path) -> Head {
        let commit = git(root, &["rev-parse", "--verify", "--quiet", "HEAD"]).ok().map(|c| c.trim().to_string());
        let checked_out = git(root, &["symbolic-ref", "--short", "-q", "HEAD"]).ok().map(|b| b.trim().to_string());
        let from_ci = || {
            ["GITHUB_HEAD_REF", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_BRANCH", "GITHUB_REF_NAME"]
                .iter()
                .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        };
        let branch = checked_out.filter(|b| !b.is_empty()).or_else(from_ci);
        Head { branch, commit: commit.filter(|c| !c.is_empty()) }
    }

    /// Whether this head is the branch `name`, as a base is written: `main`,
    /// `origin/main` or `refs/remotes/origin/main` all name the branch `main`.
    pub fn is_branch(&self, name: &str) -> bool {
        self.branch.as_deref().is_some_and(|b| Head::names_for(name).iter().any(|n| n == b))
    }

    /// The branch names a head may have to be the branch `name`: `name` itself
    /// (without `refs/heads/`) and every part of it after a `/`, so that
    /// `refs/remotes/origin/main` gives `refs/remotes/origin/main`,
    /// `remotes/origin/main`, `origin/main` and `main`.
    pub fn names_for(name: &str) -> Vec<String> {
        let name = name.strip_prefix("refs/heads/").unwrap_or(name);
        let suffixes = name.match_indices('/').map(|(i, _)| name[i + 1..].to_string());
        std::iter::once(name.to_string()).chain(suffixes).collect()
    }
}

impl Change {
    /// The run input of a review.
    pub fn run_input(&self) -> Value {
        let mut input = json!({
            "repository": self.root.display().to_string(),
            "base": self.base,
            "files": self.files,
            "diff": self.annotated,
            "head": self.head,
        });
        if let Some(object) = input.as_object_mut() {
            if !self.omitted.is_empty() {
                object.insert(OMITTED_KEY.into(), omitted_summary(&self.omitted));
                object.insert(OMITTED_RECORD_KEY.into(), json!(self.omitted));
            }
            if !self.parts.is_empty() {
                object.insert(conclave_engine::PARTS_FIELD.into(), Value::Array(self.parts_input(None)));
            }
            if !self.left_out.is_empty() {
                object.insert(LEFT_OUT_KEY.into(), json!(self.left_out));
            }
            if let Some(impact) = &self.impact {
                impact.insert_into(object);
            }
        }
        input
    }

    /// The input of each part: the fields of the part that replace the run input's
    /// for a reviewer of that part (its `diff`, its `files`, which part it is, and
    /// the repository's rules whose paths match its files, when the review has
    /// `rules`). The one place a part's input is built: what else a part needs is
    /// added here.
    pub fn parts_input(&self, rules: Option<&RepositoryRules>) -> Vec<Value> {
        self.parts
            .iter()
            .map(|part| {
                let Value::Object(mut fields) = json!(part) else { return json!(part) };
                if rules.is_some() {
                    let paths: Vec<String> = part.files.iter().map(|f| f.path.clone()).collect();
                    insert_rules(&mut fields, rules, &paths);
                    // Null hides the whole change's rules from a part none of them apply to.
                    for key in [RULES_KEY, RULES_FILES_KEY] {
                        fields.entry(key).or_insert(Value::Null);
                    }
                }
                Value::Object(fields)
            })
            .collect()
    }

    /// Splits a change larger than `part_bytes` into parts of at most `part_bytes`
    /// (at most `max_parts` of them; the files beyond go to `omitted`), leaving out
    /// only hunks larger than a part. A change that fits, or one already split (read
    /// back from a run), stays as it is. An error when no hunk fits in a part.
    pub fn split_into_parts(&mut self, part_bytes: usize, max_parts: usize) -> Result<(), ChangeError> {
        if !self.parts.is_empty() || self.annotated.len() < part_bytes {
            return Ok(());
        }
        let sections = file_sections(&self.annotated, &self.files)?;
        let diffs: Vec<parts::FileDiff<'_>> =
            self.files.iter().zip(&sections).map(|(file, diff)| parts::FileDiff { file, diff }).collect();
        let split = parts::split(&diffs, part_bytes, max_parts);
        if split.parts.is_empty() {
            let smallest = split.left_out.iter().map(|h| h.diff_bytes).min().unwrap_or(self.annotated.len());
            return Err(ChangeError::TooLarge { smallest, max: part_bytes });
        }
        let beyond: std::collections::HashSet<&str> = split.not_reviewed.iter().map(|f| f.path.as_str()).collect();
        let files = self.files.iter().filter(|f| !beyond.contains(f.path.as_str())).cloned().collect();
        let mut parts = split.parts;
        self.annotated = match parts.len() {
            1 => parts.pop().map(|p| p.diff).unwrap_or_default(),
            n => format!(
                "(This change is too large for one request: it was split into {n} parts and each reviewer reviewed every part on its own; their findings are what you have of it. Read a file with the tools to see its code.)"
            ),
        };
        self.files = files;
        self.parts = parts;
        self.omitted = split.not_reviewed;
        self.left_out = split.left_out;
        Ok(())
    }

    /// The change a review run reviewed, read back from its stored run input (see
    /// [`Change::run_input`]); `None` when the input is not a review's.
    pub fn from_run_input(input: &Value) -> Option<Change> {
        let field = |key: &str| input.get(key);
        Some(Change {
            root: PathBuf::from(field("repository")?.as_str()?),
            base: serde_json::from_value(field("base")?.clone()).ok()?,
            files: serde_json::from_value(field("files")?.clone()).ok()?,
            annotated: field("diff")?.as_str()?.to_string(),
            omitted: match field(OMITTED_RECORD_KEY).or_else(|| field(OMITTED_KEY).filter(|o| o.is_array())) {
                Some(list) => serde_json::from_value(list.clone()).ok()?,
                None => Vec::new(),
            },
            parts: match field(conclave_engine::PARTS_FIELD) {
                Some(list) => serde_json::from_value(list.clone()).ok()?,
                None => Vec::new(),
            },
            left_out: match field(LEFT_OUT_KEY) {
                Some(list) => serde_json::from_value(list.clone()).ok()?,
                None => Vec::new(),
            },
            head: field("head").and_then(|h| serde_json::from_value(h.clone()).ok()).unwrap_or_default(),
            impact: ChangeImpact::of_input(input),
        })
    }

    /// Every path in the change.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}

/// The run input's key of what the agents see of the files beyond the cap on parts:
/// how many, their diff's bytes and the first [`OMITTED_NAMED`] paths. Every part's
/// request carries it, so the whole list (hundreds of paths in a large change) would
/// cost each call its tokens and could overflow a small model's window.
pub const OMITTED_KEY: &str = "omitted";
/// The run input's key of every file beyond the cap, with its diff's bytes: a
/// record field (its leading `_`), which reports read and agents never see. Runs
/// stored before it have the whole list under [`OMITTED_KEY`].
pub const OMITTED_RECORD_KEY: &str = "_omitted";
/// How many omitted paths the agents see by name.
pub const OMITTED_NAMED: usize = 20;

/// What the agents see of the files beyond the cap on parts.
fn omitted_summary(omitted: &[OmittedFile]) -> Value {
    json!({
        "files": omitted.len(),
        "diff_bytes": omitted.iter().map(|f| f.diff_bytes).sum::<usize>(),
        "paths": omitted.iter().take(OMITTED_NAMED).map(|f| f.path.as_str()).collect::<Vec<_>>(),
    })
}

/// The run input's key of the hunks left out because each alone is larger than a part.
pub const LEFT_OUT_KEY: &str = "left_out";

/// Each file's part of the annotated diff, which joins them with a newline: every
/// annotated line has text, so an empty line is always a join.
fn file_sections<'a>(annotated: &'a str, files: &[ChangedFile]) -> Result<Vec<&'a str>, ChangeError> {
    let mut sections = Vec::with_capacity(files.len());
    let mut start = 0;
    for (k, file) in files.iter().enumerate() {
        let end = match k + 1 == files.len() {
            true => annotated.len(),
            false => annotated[start..].find("\n\n").map(|p| start + p + 1).unwrap_or(annotated.len()),
        };
        let section = &annotated[start..end];
        if !section.starts_with(&format!("--- {} (", file.path)) {
            return Err(ParseError(format!("the numbered diff of `{}` is not where it should be", file.path)).into());
        }
        sections.push(section);
        start = (end + 1).min(annotated.len());
    }
    Ok(sections)
}

fn git_bytes(root: &Path, args: &[&str]) -> Result<Vec<u8>, ChangeError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "core.quotePath=false"])
        .args(args)
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| ChangeError::Git { command: args.join(" "), message: format!("cannot run git: {e}") })?;
    // `git diff --no-index` exits 1 when the files differ, which is the point.
    let differs = args.contains(&"--no-index") && out.status.code() == Some(1);
    if !out.status.success() && !differs {
        return Err(ChangeError::Git {
            command: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

pub(crate) fn git(root: &Path, args: &[&str]) -> Result<String, ChangeError> {
    git_bytes(root, args).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// The root of the git repository `repo` is in.
pub fn repository_root(repo: &Path) -> Result<PathBuf, ChangeError> {
    let root = git(repo, &["rev-parse", "--show-toplevel"])
        .map_err(|_| ChangeError::NotARepository(repo.display().to_string()))?;
    Ok(PathBuf::from(root.trim()))
}

/// `Name <email>` from the repository's git configuration, when both are set.
pub fn git_author(root: &Path) -> Option<String> {
    let name = git(root, &["config", "user.name"]).ok()?.trim().to_string();
    let email = git(root, &["config", "user.email"]).ok()?.trim().to_string();
    (!name.is_empty() && !email.is_empty()).then(|| format!("{name} <{email}>"))
}

/// Reads the change in `repo`: `base...HEAD` when `base` is given, otherwise the
/// working tree against `HEAD`. `None` when there is nothing to review. The change is
/// read whole: [`Change::split_into_parts`] splits one too large for a call.
pub fn collect_change(repo: &Path, base: Option<&str>) -> Result<Option<Change>, ChangeError> {
    collect_change_since(repo, base, None)
}

/// [`collect_change`], reviewing only what is new since the commit `since` (an
/// ancestor of `HEAD` an earlier review reviewed) when it is given: the diff of
/// `since..HEAD`, and with a base only the files the change `BASE...HEAD` has too,
/// so commits merged in from the base are not reviewed as the branch's own.
pub fn collect_change_since(
    repo: &Path,
    base: Option<&str>,
    since: Option<&str>,
) -> Result<Option<Change>, ChangeError> {
    let root = repository_root(repo)?;
    let diff_args = ["diff", "--patch-with-raw", "-z", "--no-color", "--no-ext-diff", "--find-renames", "-U3"];
    let branch_range = match base {
        Some(base) => Some(format!("{}...HEAD", verify_base(&root, base)?)),
        None => None,
    };
    let range = match (&branch_range, since) {
        (_, Some(since)) => format!("{}..HEAD", verify_base(&root, since)?),
        (Some(range), None) => range.clone(),
        (None, None) if git(&root, &["rev-parse", "--verify", "--quiet", "HEAD"]).is_ok() => "HEAD".to_string(),
        // No commit yet: everything staged is new, compared with the empty tree.
        (None, None) => "4b825dc642cb6eb9a060e54bf8d69288fbee4904".to_string(),
    };
    let mut files = parse_patch_with_raw(&git_bytes(&root, &[&diff_args[..], &[range.as_str(), "--"]].concat())?)?;
    if let (Some(branch_range), Some(_)) = (&branch_range, since) {
        let listed = git_bytes(&root, &["diff", "--name-only", "-z", "--no-renames", branch_range.as_str(), "--"])?;
        let of_branch: std::collections::HashSet<&[u8]> = listed.split(|&b| b == 0).collect();
        files.retain(|f| of_branch.contains(f.file.path.as_bytes()));
    }
    if base.is_none() && since.is_none() {
        files.extend(untracked(&root)?);
    }
    if files.is_empty() {
        return Ok(None);
    }
    let annotated = files.iter().map(|f| f.annotated.as_str()).collect::<Vec<_>>().join("\n");
    Ok(Some(Change {
        head: Head::of(&root),
        root,
        base: base.map(str::to_string),
        files: files.into_iter().map(|f| f.file).collect(),
        annotated,
        omitted: Vec::new(),
        parts: Vec::new(),
        left_out: Vec::new(),
        impact: None,
    }))
}

/// The lines of `files` (repository paths) that the working tree adds or changes
/// against the merge base of `base` and `HEAD` (`HEAD` itself for a review of the
/// working tree), as analyzers see the change: untracked files count whole. Files
/// unchanged are left out.
pub fn working_tree_changes(repo: &Path, base: &str, files: &[String]) -> Result<Vec<ChangedFile>, ChangeError> {
    let root = repository_root(repo)?;
    let commit = verify_base(&root, base)?;
    let mut args = vec!["diff", "--patch-with-raw", "-z", "--no-color", "--no-ext-diff", "--find-renames", "-U0"];
    args.extend(["--merge-base", commit.as_str(), "--"]);
    args.extend(files.iter().map(String::as_str));
    let mut changed: Vec<ChangedFile> =
        parse_patch_with_raw(&git_bytes(&root, &args)?)?.into_iter().map(|f| f.file).collect();
    let wanted: std::collections::HashSet<&str> = files.iter().map(String::as_str).collect();
    changed.extend(
        untracked(&root)?.into_iter().map(|f| f.file).filter(|f| files.is_empty() || wanted.contains(f.path.as_str())),
    );
    Ok(changed)
}

/// Untracked files (not ignored), each diffed against `/dev/null`; the paths come
/// from `git ls-files -z`, exact.
fn untracked(root: &Path) -> Result<Vec<ParsedFile>, ChangeError> {
    let listed = git_bytes(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    let mut files = Vec::new();
    for path in listed.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        let patch = git_bytes(root, &["diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", &path])?;
        files.push(parse_single(path, "added", &patch)?);
    }
    Ok(files)
}

/// The commit `base` names, as a full hash. Anything that starts with `-` is refused
/// before git sees it, and git is told where its options end, so a base can never
/// become an option (`--output=...`).
pub(crate) fn verify_base(root: &Path, base: &str) -> Result<String, ChangeError> {
    let invalid = |reason: &str| ChangeError::InvalidBase { base: base.to_string(), reason: reason.to_string() };
    if base.starts_with('-') {
        return Err(invalid(" (it starts with `-`, like an option)"));
    }
    if base.is_empty() || base.contains(['\0', '\n']) {
        return Err(invalid(""));
    }
    let commit = format!("{base}^{{commit}}");
    let hash =
        git(root, &["rev-parse", "--verify", "--quiet", "--end-of-options", &commit]).map_err(|_| invalid(""))?;
    let hash = hash.trim();
    if hash.len() < 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(""));
    }
    Ok(hash.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_read_back_from_its_run_input_exactly() {
        let change = Change {
            root: PathBuf::from("/repo with space"),
            base: Some("main".into()),
            files: vec![ChangedFile { path: "a.rs".into(), status: "modified".into(), changed_lines: vec![(1, 3)] }],
            annotated: "diff --git a/a.rs b/a.rs\n1 + x".into(),
            omitted: vec![OmittedFile { path: "big.json".into(), diff_bytes: 9 }],
            parts: Vec::new(),
            left_out: Vec::new(),
            head: Head { branch: Some("feature".into()), commit: Some("0123abcd".into()) },
            impact: None,
        };
        let input = change.run_input();
        let back = Change::from_run_input(&input).expect("a review input");
        assert_eq!(back.run_input(), input, "the same input again, byte for byte");
        assert_eq!((back.root, back.base, back.files), (change.root, change.base, change.files));
        assert_eq!(back.head, change.head);
        assert!(back.head.is_branch("origin/feature") && back.head.is_branch("refs/heads/feature"));
        assert!(!back.head.is_branch("ature") && !back.head.is_branch("origin/main"));
        let working_tree = Change { base: None, omitted: Vec::new(), ..Change::from_run_input(&input).expect("again") };
        let again = Change::from_run_input(&working_tree.run_input()).expect("without base or omitted files");
        assert_eq!(again.run_input(), working_tree.run_input());
        assert!(Change::from_run_input(&json!({"text": "not a review"})).is_none());
        assert!(Change::from_run_input(&json!("plain")).is_none());
    }

    #[test]
    fn agents_see_a_summary_of_the_omitted_files_and_the_record_keeps_them_all() {
        let omitted: Vec<OmittedFile> =
            (0..30).map(|i| OmittedFile { path: format!("big/f{i}.rs"), diff_bytes: 100 }).collect();
        let change = Change {
            root: PathBuf::from("/repo"),
            base: Some("main".into()),
            files: vec![],
            annotated: String::new(),
            omitted: omitted.clone(),
            parts: vec![],
            left_out: vec![],
            head: Head::default(),
            impact: None,
        };
        let input = change.run_input();
        assert_eq!(input[OMITTED_KEY]["files"], 30);
        assert_eq!(input[OMITTED_KEY]["diff_bytes"], 3000);
        let named = input[OMITTED_KEY]["paths"].as_array().expect("paths");
        assert_eq!((named.len(), &named[0]), (OMITTED_NAMED, &json!("big/f0.rs")));
        assert!(OMITTED_RECORD_KEY.starts_with(conclave_engine::RECORD_PREFIX), "agents never see the whole list");
        assert_eq!(Change::from_run_input(&input).expect("a review input").omitted, omitted);
        // A run stored before the summary has the whole list under `omitted`.
        let mut older = input.clone();
        let whole = older.as_object_mut().and_then(|o| o.remove(OMITTED_RECORD_KEY)).expect("the record");
        older[OMITTED_KEY] = whole;
        assert_eq!(Change::from_run_input(&older).expect("an older input").omitted, omitted);
    }

    #[test]
    fn a_review_input_records_its_repository_and_branch_where_stores_index_them() {
        let head = Head { branch: Some("feature/x".into()), commit: None };
        let change = Change {
            root: PathBuf::from("/srv/repo"),
            base: None,
            files: vec![],
            annotated: String::new(),
            omitted: vec![],
            parts: vec![],
            left_out: vec![],
            head,
            impact: None,
        };
        let input = change.run_input();
        assert_eq!(input[conclave_core::REVIEW_REPOSITORY_KEY], "/srv/repo");
        let [outer, inner] = conclave_core::REVIEW_BRANCH_PATH;
        assert_eq!(input[outer][inner], "feature/x");
    }

    #[test]
    fn a_base_names_the_branch_by_any_of_its_tails() {
        assert_eq!(
            Head::names_for("refs/remotes/origin/main"),
            ["refs/remotes/origin/main", "remotes/origin/main", "origin/main", "main"]
        );
        assert_eq!(Head::names_for("refs/heads/feature/x"), ["feature/x", "x"]);
        assert_eq!(Head::names_for("main"), ["main"]);
    }
}
