//! `conclave review --post github|gitlab` end to end: the real binary reviews a
//! fixture repository against a fake LLM, then posts on loopback fakes of the GitHub
//! and GitLab REST APIs that keep their comments, paginate in small pages, refuse
//! (403) or slow down (429) when told to, and record every request.

use conclave_testkit::{FakeForge, FakeGitHub, FakeGitLab, FakeServer, ForgeRequest, ForgeState, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::review_e2e::{fixture_repo, routes, writer_routes};

pub(crate) const TOKEN: &str = "ghs_fake_token_0123456789";

/// A header long enough that its first lines are outside every hunk of the change.
const HEADER: &str = "//! Saving uploaded files.
//! Uploads arrive from the web form and are stored under one root.
//!
//! The root is configured once at start-up.
//! Names are chosen by the client.
//! Sizes are capped by the web server.
//! Nothing here deletes files.
//! Nothing here reads files.
//! Errors are returned to the caller.
//! The caller logs them.
";

const CODE_BEFORE: &str = "
use std::io;
use std::path::{Component, Path};

/// Saves `data` as `name` under `root`, refusing names that leave it.
pub fn save_upload(root: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let relative = Path::new(name);
    if relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, \"bad name\"));
    }
    std::fs::write(root.join(relative), data)
}
";

const CODE_AFTER: &str = "
use std::io;
use std::path::Path;

/// Saves `data` as `name` under `root`.
pub fn save_upload(root: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let target = root.join(name);
    std::fs::write(target, data)
}
";

pub(crate) const JOIN: &str = "let target = root.join(name);";
pub(crate) const WRITE: &str = "std::fs::write(target, data)";
const OFF_DIFF: &str = "//! Uploads arrive from the web form and are stored under one root.";

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) repo: PathBuf,
    pub(crate) workdir: PathBuf,
}

/// A repository whose `feature` branch, checked out, rewrites the code under the header.
pub(crate) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/upload.rs"), format!("{HEADER}{CODE_BEFORE}")).expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "safe uploads"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("src/upload.rs"), format!("{HEADER}{CODE_AFTER}")).expect("write");
    git(&repo, &["commit", "-q", "-am", "simplify uploads"]);
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    Fixture { _dir: dir, repo, workdir }
}

/// A repository with a `main` branch and no commit yet, and a working directory beside it.
pub(crate) fn bare_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let (repo, workdir) = (dir.path().join("repo"), dir.path().join("work"));
    std::fs::create_dir_all(&repo).expect("mkdir");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    Fixture { _dir: dir, repo, workdir }
}

pub(crate) fn git_out(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The pull request as a forge shows it: each changed file's hunks against `main`.
pub(crate) fn patches(repo: &Path) -> Vec<(String, String)> {
    let names = git_out(repo, &["diff", "--name-only", "main...HEAD"]);
    names
        .lines()
        .map(|path| {
            let patch = git_out(repo, &["diff", "main...HEAD", "--", path]);
            let hunks = patch.find("@@").map_or("", |at| &patch[at..]);
            (path.to_string(), hunks.trim_end_matches('\n').to_string())
        })
        .collect()
}

/// The line of `file` in the working tree that reads `text` (1-based).
pub(crate) fn line_of(repo: &Path, file: &str, text: &str) -> u64 {
    let content = std::fs::read_to_string(repo.join(file)).expect("read");
    content.lines().position(|l| l.trim() == text.trim()).expect("the line exists") as u64 + 1
}

/// A finding of the security lane on `src/upload.rs` quoting `evidence`.
pub(crate) fn at(repo: &Path, severity: &str, evidence: &str, description: &str) -> Value {
    json!({"severity": severity, "file": "src/upload.rs", "line": line_of(repo, "src/upload.rs", evidence),
           "description": description, "raisedBy": "security", "evidence": evidence})
}

/// Every variable a review could pick up from the machine running the tests.
const FOREIGN: &[&str] = &[
    "CI",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "CI_COMMIT_BRANCH",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CONCLAVE_REPOSITORY_KEY",
    "GITHUB_TOKEN",
    "GITHUB_REPOSITORY",
    "GITHUB_API_URL",
    "GITHUB_EVENT_PATH",
    "GITLAB_TOKEN",
    "CI_API_V4_URL",
    "CI_PROJECT_ID",
    "CI_MERGE_REQUEST_IID",
    "OPENAI_API_KEY",
];

/// Runs `conclave review REPO --base main --format json --output-file … ARGS` with
/// `env`, against an LLM faked by `llm`; the exit code and standard error.
pub(crate) async fn review(
    fx: &Fixture,
    llm: &FakeServer,
    args: &[&str],
    env: &[(String, String)],
) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_conclave"));
    command.arg("review").arg(&fx.repo).args(["--base", "main", "--format", "json", "--output-file"]);
    command.arg(fx.workdir.join("review.json")).args(args).current_dir(&fx.workdir);
    for name in FOREIGN {
        command.env_remove(name);
    }
    command
        .env("CONCLAVE_DB", fx.workdir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", fx.workdir.join("config"))
        .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
        .env("ANTHROPIC_BASE_URL", &llm.base)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let out = tokio::task::spawn_blocking(move || command.output().expect("conclave runs")).await.expect("joined");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Reviews with the Writer reporting `items`.
pub(crate) async fn review_reporting(
    fx: &Fixture,
    items: &Value,
    args: &[&str],
    env: &[(String, String)],
) -> (Option<i32>, String) {
    let llm = FakeServer::start_routed(writer_routes(items.clone())).await;
    review(fx, &llm, args, env).await
}

pub(crate) fn github_env(fx: &Fixture, github: &FakeGitHub, number: u64) -> Vec<(String, String)> {
    let event = fx.workdir.join("event.json");
    std::fs::write(&event, json!({"action": "synchronize", "pull_request": {"number": number}}).to_string())
        .expect("write");
    [
        ("GITHUB_TOKEN", TOKEN.to_string()),
        ("GITHUB_REPOSITORY", "acme/uploads".to_string()),
        ("GITHUB_API_URL", github.base.clone()),
        ("GITHUB_EVENT_PATH", event.display().to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec()
}

pub(crate) fn gitlab_env(gitlab: &FakeGitLab) -> Vec<(String, String)> {
    [("GITLAB_TOKEN", TOKEN), ("CI_API_V4_URL", &gitlab.api()), ("CI_PROJECT_ID", "42"), ("CI_MERGE_REQUEST_IID", "3")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec()
}

pub(crate) fn writes(requests: &[ForgeRequest]) -> Vec<String> {
    requests.iter().filter(|r| r.writes()).map(|r| format!("{} {}?{}", r.method, r.path, r.query)).collect()
}

/// Reviews and posts again, asserting that the forge was not written to; the
/// requests it made.
pub(crate) async fn posts_nothing<S: ForgeState>(
    fx: &Fixture,
    items: &Value,
    forge: &str,
    env: &[(String, String)],
    fake: &FakeForge<S>,
    why: &str,
) -> Vec<ForgeRequest> {
    let before = fake.requests().len();
    let (code, stderr) = review_reporting(fx, items, &["--post", forge], env).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(": nothing new to post"), "{stderr}");
    let requests = fake.requests().split_off(before);
    assert_eq!(writes(&requests), Vec::<String>::new(), "{why}");
    requests
}

pub(crate) fn ours(comments: &[Value]) -> Vec<Value> {
    comments.iter().filter(|c| c["body"].as_str().is_some_and(|b| b.contains("<!-- conclave:"))).cloned().collect()
}

pub(crate) fn head(repo: &Path) -> String {
    git_out(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

/// Fixes the partial write in a new commit.
fn fix_the_write(repo: &Path) {
    let fixed = std::fs::read_to_string(repo.join("src/upload.rs"))
        .expect("read")
        .replace(WRITE, "crate::atomic::write(&target, data)");
    std::fs::write(repo.join("src/upload.rs"), fixed).expect("write");
    git(repo, &["commit", "-q", "-am", "write atomically"]);
}

#[tokio::test]
async fn github_posts_once_then_nothing_then_marks_the_fixed_comment() {
    let fx = fixture();
    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    // People commented first, so Conclave's own comments land on later pages.
    for text in ["Why not sanitize here?", "+1", "Can we have a test?"] {
        github.add_human_comment("src/upload.rs", line_of(&fx.repo, "src/upload.rs", JOIN), text);
    }
    let env = github_env(&fx, &github, 7);
    let (blocker, minor) =
        (at(&fx.repo, "blocker", JOIN, "Path traversal."), at(&fx.repo, "minor", WRITE, "Not atomic."));
    let items = json!([blocker, minor, at(&fx.repo, "nit", OFF_DIFF, "Say which root.")]);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("posted to GitHub pull request acme/uploads#7: 2 new comment(s) on the diff, 1 outside it"),
        "{stderr}"
    );
    let reviews = github.reviews();
    assert_eq!(reviews.len(), 1, "one review per posting");
    assert_eq!(reviews[0]["commit_id"], json!(head(&fx.repo)));
    let body = reviews[0]["body"].as_str().expect("body");
    assert!(body.contains("`src/upload.rs` line 2: **nit** · security") && body.contains("Say which root."), "{body}");
    let posted = ours(&github.comments());
    let lines: Vec<&Value> = posted.iter().map(|c| &c["line"]).collect();
    assert_eq!(lines, [&blocker["line"], &minor["line"]], "inline on the diff's lines: {posted:?}");
    assert!(posted.iter().all(|c| c["side"] == "RIGHT"));
    assert!(
        posted[0]["body"]
            .as_str()
            .is_some_and(|b| b.starts_with("**blocker** · security") && b.contains("Path traversal."))
    );

    let again = posts_nothing(&fx, &items, "github", &env, &github, "an unchanged review writes nothing").await;
    assert!(again.iter().any(|r| r.path.ends_with("/comments") && r.query.contains("page=3")), "all pages were read");

    fix_the_write(&fx.repo);
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let now =
        json!([at(&fx.repo, "blocker", JOIN, "Path traversal."), at(&fx.repo, "nit", OFF_DIFF, "Say which root.")]);
    let before = github.requests().len();
    let (code, stderr) = review_reporting(&fx, &now, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let minor_id = posted[1]["id"].to_string();
    assert_eq!(
        writes(&github.requests()[before..]),
        ["POST /graphql?".to_string(), format!("PATCH /repos/acme/uploads/pulls/comments/{minor_id}?")],
        "the fixed comment's thread is resolved and the comment edited"
    );
    let thread = format!("PRRT_{minor_id}");
    assert_eq!(github.mutations(), std::slice::from_ref(&thread), "resolveReviewThread for the fixed comment's thread");
    let resolved: Vec<String> = github.threads().into_iter().filter(|(_, r)| *r).map(|(t, _)| t.id()).collect();
    assert_eq!(resolved, std::slice::from_ref(&thread), "only that thread is resolved");
    let fixed = ours(&github.comments())[1]["body"].as_str().expect("body").to_string();
    assert!(
        fixed.starts_with("**Fixed**") && fixed.contains("Not atomic.") && fixed.contains("state=fixed"),
        "{fixed}"
    );
    assert_eq!(ours(&github.comments())[0]["body"], posted[0]["body"], "the blocker's comment is left alone");

    posts_nothing(&fx, &now, "github", &env, &github, "a fixed comment is marked once").await;
    assert_eq!(github.mutations(), [thread], "a resolved thread is resolved once");
}

#[tokio::test]
async fn gitlab_posts_discussions_and_a_note_then_nothing_then_resolves_the_fixed_one() {
    let fx = fixture();
    let gitlab = FakeGitLab::start("42", 3, TOKEN, 2).await;
    let base = git_out(&fx.repo, &["rev-parse", "main"]).trim().to_string();
    gitlab.set_head(&base, &head(&fx.repo), &patches(&fx.repo));
    for text in ["Looks good so far.", "Please add a changelog entry.", "Ping @ann"] {
        gitlab.add_human_discussion(text);
    }
    let env = gitlab_env(&gitlab);
    let items = json!([
        at(&fx.repo, "blocker", JOIN, "Path traversal."),
        at(&fx.repo, "minor", WRITE, "Not atomic."),
        at(&fx.repo, "nit", OFF_DIFF, "Say which root.")
    ]);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "gitlab"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("posted to GitLab merge request !3 of project 42: 2 new comment(s) on the diff, 1 outside it"),
        "{stderr}"
    );
    let ours: Vec<Value> = gitlab
        .discussions()
        .into_iter()
        .filter(|d| d["notes"][0]["body"].as_str().is_some_and(|b| b.contains("<!-- conclave:")))
        .collect();
    assert_eq!(ours.len(), 3, "two discussions on the diff and one note: {ours:?}");
    let position = &ours[0]["notes"][0]["position"];
    assert_eq!(
        (position["position_type"].as_str(), position["new_path"].as_str(), position["new_line"].as_u64()),
        (Some("text"), Some("src/upload.rs"), Some(line_of(&fx.repo, "src/upload.rs", JOIN)))
    );
    assert_eq!(position["head_sha"], json!(head(&fx.repo)));
    assert_eq!(position["base_sha"], json!(base));
    assert!(
        ours[2]["individual_note"] == true
            && ours[2]["notes"][0]["body"].as_str().is_some_and(|b| b.contains("Say which root."))
    );

    let again = posts_nothing(&fx, &items, "gitlab", &env, &gitlab, "an unchanged review writes nothing").await;
    assert!(
        again.iter().any(|r| r.path.ends_with("/discussions") && r.query.contains("page=3")),
        "all pages were read"
    );

    fix_the_write(&fx.repo);
    gitlab.set_head(&base, &head(&fx.repo), &patches(&fx.repo));
    let now =
        json!([at(&fx.repo, "blocker", JOIN, "Path traversal."), at(&fx.repo, "nit", OFF_DIFF, "Say which root.")]);
    let before = gitlab.requests().len();
    let (code, stderr) = review_reporting(&fx, &now, &["--post", "gitlab"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let (thread, note) = (ours[1]["id"].as_str().expect("id"), ours[1]["notes"][0]["id"].to_string());
    let prefix = "/api/v4/projects/42/merge_requests/3/discussions";
    assert_eq!(
        writes(&gitlab.requests()[before..]),
        [format!("PUT {prefix}/{thread}/notes/{note}?"), format!("PUT {prefix}/{thread}?resolved=true")]
    );
    let fixed = gitlab.discussions().into_iter().find(|d| d["id"] == thread).expect("the discussion");
    assert!(fixed["notes"][0]["body"].as_str().is_some_and(|b| b.starts_with("**Fixed**")), "{fixed}");
    assert_eq!(fixed["notes"][0]["resolved"], true);

    posts_nothing(&fx, &now, "gitlab", &env, &gitlab, "a fixed discussion is resolved once").await;
}

#[tokio::test]
async fn a_contradiction_is_one_comment_naming_both_sides() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fx = Fixture { repo: fixture_repo(dir.path()), workdir: dir.path().join("work"), _dir: dir };
    std::fs::create_dir_all(&fx.workdir).expect("mkdir");
    let github = FakeGitHub::start("acme/uploads", 9, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let env = github_env(&fx, &github, 9);
    for round in 0..2 {
        let before = github.requests().len();
        let llm = FakeServer::start_routed(routes()).await;
        let (code, stderr) = review(&fx, &llm, &["--post", "github"], &env).await;
        assert_eq!(code, Some(0), "{stderr}");
        if round == 1 {
            assert_eq!(
                writes(&github.requests()[before..]),
                Vec::<String>::new(),
                "the contradiction keeps its marker"
            );
        }
    }
    let comments = ours(&github.comments());
    let contradictions: Vec<&str> = comments
        .iter()
        .filter_map(|c| c["body"].as_str())
        .filter(|b| b.contains("<!-- conclave:contradiction"))
        .collect();
    assert_eq!(contradictions.len(), 1, "{comments:?}");
    let text = contradictions[0];
    assert!(
        text.contains("**security** (blocker, concern)") && text.contains("**conventions** (nit, approval)"),
        "{text}"
    );
    assert_eq!(comments.len(), 3, "the Writer's two findings and the contradiction, no comment per side: {comments:?}");
    assert!(comments.iter().all(|c| c["line"].is_u64()));
}

#[tokio::test]
async fn unanchored_and_dismissed_findings_are_not_posted() {
    let fx = fixture();
    let minor = at(&fx.repo, "minor", WRITE, "Not atomic.");
    let (code, stderr) = review_reporting(&fx, &json!([minor]), &[], &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.workdir.join("review.json")).expect("report")).expect("json");
    let fingerprint = report["review"]["findings"][0]["fingerprint"].as_str().expect("fingerprint").to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["dismiss", &fingerprint, "--reason", "Atomicity is the storage layer's job.", "--author", "Ann"])
        .current_dir(&fx.repo)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    crate::review_history::land_on_main(&fx.repo, ".conclave/dismissed.json");

    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let mut unanchored = at(&fx.repo, "major", JOIN, "Panics on a bad name.");
    unanchored["evidence"] = json!("let target = sanitize(name).unwrap();");
    let items = json!([at(&fx.repo, "blocker", JOIN, "Path traversal."), minor, unanchored]);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &github_env(&fx, &github, 7)).await;
    assert_eq!(code, Some(0), "{stderr}");
    let posted = ours(&github.comments());
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert!(posted[0]["body"].as_str().is_some_and(|b| b.contains("Path traversal.")));
    assert!(
        !github.reviews()[0]["body"].as_str().unwrap_or("").contains("conclave:finding"),
        "nothing outside the diff"
    );
}

#[tokio::test]
async fn permission_refusals_are_explained_and_rate_limits_waited_out() {
    let fx = fixture();
    let items = json!([at(&fx.repo, "blocker", JOIN, "Path traversal.")]);
    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let env = github_env(&fx, &github, 7);
    github.misbehave(0, true);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &env).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("POST /repos/acme/uploads/pulls/7/reviews was refused (HTTP 403: Resource not accessible by integration): the token lacks permission; give GITHUB_TOKEN `pull-requests: write`"), "{stderr}");
    assert!(fx.workdir.join("review.json").is_file(), "the report is written all the same");
    assert!(!stderr.contains(TOKEN), "the token never prints");

    github.misbehave(1, false);
    let before = github.requests().len();
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("was rate limited (the forge asks to wait 1s)") && stderr.contains("retrying in 1.0s"),
        "{stderr}"
    );
    let again = &github.requests()[before..];
    let first = |r: &ForgeRequest| (r.method.clone(), r.path.clone(), r.query.clone());
    assert_eq!(first(&again[0]), first(&again[1]), "the refused request was sent again");
    assert_eq!(ours(&github.comments()).len(), 1);

    let mut wrong = env.clone();
    wrong[0].1 = "ghs_expired_token_987654".into();
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &wrong).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("(HTTP 401: Bad credentials): the token in GITHUB_TOKEN is not valid"), "{stderr}");

    let gitlab = FakeGitLab::start("42", 3, TOKEN, 2).await;
    gitlab.set_head("b", &head(&fx.repo), &patches(&fx.repo));
    gitlab.misbehave(0, true);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "gitlab"], &gitlab_env(&gitlab)).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("the token lacks permission; give GITLAB_TOKEN the `api` scope"), "{stderr}");
}

#[tokio::test]
async fn a_missing_environment_is_exit_2_before_any_provider_call() {
    let fx = fixture();
    let llm = FakeServer::start_routed(writer_routes(json!([]))).await;
    let (code, stderr) = review(&fx, &llm, &["--post", "github"], &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    for piece in
        ["GITHUB_TOKEN is not set", "GITHUB_REPOSITORY is not set", "GITHUB_EVENT_PATH is not set; pass --pr N"]
    {
        assert!(stderr.contains(piece), "{piece:?} in {stderr}");
    }
    let env =
        [("GITHUB_TOKEN", "t0ken-value"), ("GITHUB_REPOSITORY", "acme")].map(|(k, v)| (k.to_string(), v.to_string()));
    let (code, stderr) = review(&fx, &llm, &["--post", "github", "--pr", "7"], &env).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("GITHUB_REPOSITORY `acme` is not `owner/name`") && !stderr.contains("GITHUB_EVENT_PATH"),
        "{stderr}"
    );
    let (code, stderr) = review(&fx, &llm, &["--post", "gitlab"], &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    for piece in [
        "GITLAB_TOKEN is not set",
        "CI_API_V4_URL is not set",
        "CI_PROJECT_ID is not set",
        "CI_MERGE_REQUEST_IID is not set",
    ] {
        assert!(stderr.contains(piece), "{piece:?} in {stderr}");
    }
    assert!(llm.requests().is_empty(), "no provider was called");
}
