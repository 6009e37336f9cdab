//! What a mirror saves: fetching a pull request's base and head into a mirror that
//! already holds the repository, against a fresh full clone and a first shallow
//! fetch into an empty cache, all over git's HTTP (`git http-backend` behind the fake
//! GitHub, with a GitHub App's installation token). The repository is built here:
//! 3,000 commits over 300 files, and a pull request branching 20 commits back.
//! Medians and minima of several runs.
//!
//! Run with `cargo bench -p conclave-server --bench mirrors` (the time is git's, so
//! `--profile dev` measures the same).

use conclave_server::forge_app::{ForgeAuth, RepoRef, RepoToken};
use conclave_server::mirrors::Mirrors;
use conclave_server::mirrors::git::git_command;
use conclave_server::post::Forge;
use conclave_testkit::{FakeGitHub, git};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const COMMITS: usize = 3000;
const FILES: usize = 300;
const RUNS: usize = 7;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(bench());
}

async fn bench() {
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("work");
    let served = dir.path().join("served/acme/app.git");
    let started = Instant::now();
    let (base, mut head) = build_repository(&work, &served);
    println!("repository: {COMMITS} commits over {FILES} files, built in {:.1} s", started.elapsed().as_secs_f64());
    let github = FakeGitHub::start("acme/app", 1, "", 10).await;
    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/github-app");
    github.install_app("1", &std::fs::read(keys.join("test-app-key.pub.pem")).expect("public key"), 9);
    github.serve_git(&dir.path().join("served"));
    let env: HashMap<&str, String> = [
        ("CONCLAVE_GITHUB_APP_ID", "1".to_string()),
        ("CONCLAVE_GITHUB_APP_KEY_FILE", keys.join("test-app-key.pem").to_string_lossy().into_owned()),
        ("CONCLAVE_GITHUB_API_URL", github.base.clone()),
        ("CONCLAVE_GITHUB_URL", github.base.clone()),
    ]
    .into();
    let auth = ForgeAuth::from_env(&|name| env.get(name).cloned()).expect("configured");
    let repo = RepoRef { forge: Forge::Github, path: "acme/app".into(), installation: Some(9) };
    let token = auth.token(&repo).await.expect("a token");

    let clone = measure(RUNS, |i| {
        let (token, into) = (token.clone(), dir.path().join(format!("clone-{i}")));
        async move { full_clone(&token, &into).await }
    })
    .await;
    report("a fresh full clone (git clone --bare)", clone);
    let partial = measure(RUNS, |i| {
        let (token, into) = (token.clone(), dir.path().join(format!("partial-{i}")));
        async move { partial_clone(&token, &into).await }
    })
    .await;
    report("a fresh partial clone (--filter=blob:none, blobs of the head fetched on checkout)", partial);
    let cold = measure(RUNS, |i| {
        let mirrors = Mirrors::new(dir.path().join(format!("cold-{i}")));
        let (token, base, head) = (token.clone(), base.clone(), head.clone());
        async move {
            let fetched = mirrors.fetch(&token, &base, &head).await.expect("fetched");
            assert!(fetched.deepened > 0);
        }
    })
    .await;
    report("the first fetch into an empty cache (shallow, deepened)", cold);
    let mirrors = Mirrors::new(dir.path().join("warm"));
    mirrors.fetch(&token, &base, &head).await.expect("the mirror");
    let mut warm = Vec::new();
    for i in 0..RUNS {
        head = push_commit(&work, &served, i);
        let started = Instant::now();
        mirrors.fetch(&token, &base, &head).await.expect("fetched");
        warm.push(started.elapsed());
    }
    report("a push fetched into the mirror (one new commit)", warm);
    let unchanged = measure(RUNS, |_| {
        let (mirrors, token, base, head) = (mirrors.clone(), token.clone(), base.clone(), head.clone());
        async move {
            assert!(!mirrors.fetch(&token, &base, &head).await.expect("fetched").fetched);
        }
    })
    .await;
    report("the mirror already holding both commits", unchanged);
}

async fn measure<F, Fut>(runs: usize, mut once: F) -> Vec<Duration>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut times = Vec::new();
    for i in 0..runs {
        let started = Instant::now();
        once(i).await;
        times.push(started.elapsed());
    }
    times
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{what}: median {:.0} ms, min {:.0} ms ({} runs)", ms(times[times.len() / 2]), ms(times[0]), times.len());
}

async fn full_clone(token: &RepoToken, into: &Path) {
    let url = token.clone_url().expect("url");
    let header = token.git_authorization();
    let mut command = git_command(Path::new("/"), Some((&url, &header)));
    command.args(["clone", "--bare", "--quiet", url.as_str()]).arg(into);
    let out = command.output().await.expect("git clone runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// What a partial clone costs a review: the history without blobs, then the head's
/// blobs, fetched as a worktree of it is checked out.
async fn partial_clone(token: &RepoToken, into: &Path) {
    let url = token.clone_url().expect("url");
    let header = token.git_authorization();
    let mut clone = git_command(Path::new("/"), Some((&url, &header)));
    clone.args(["clone", "--bare", "--quiet", "--filter=blob:none", url.as_str()]).arg(into);
    let out = clone.output().await.expect("git clone runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut checkout = git_command(into, Some((&url, &header)));
    checkout.args(["worktree", "add", "--detach", "--quiet"]).arg(into.join("wt")).arg("feature");
    let out = checkout.output().await.expect("git worktree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The repository, written with `git fast-import`: `main` with [`COMMITS`] commits,
/// `feature` branching 20 commits before its tip with 3 of its own. The base and head.
fn build_repository(work: &Path, served: &Path) -> (String, String) {
    std::fs::create_dir_all(work).expect("work dir");
    git(work, &["init", "-q", "-b", "main"]);
    let mut stream = String::new();
    for i in 0..COMMITS {
        commit_text(&mut stream, "main", i);
        if i == COMMITS - 21 {
            stream.push_str("reset refs/heads/feature\nfrom refs/heads/main\n\n");
        }
    }
    for i in 0..3 {
        commit_text(&mut stream, "feature", COMMITS + i);
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(work)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("fast-import");
    child.stdin.take().expect("stdin").write_all(stream.as_bytes()).expect("stream");
    assert!(child.wait().expect("fast-import ran").success());
    git(work, &["checkout", "-q", "feature"]);
    std::fs::create_dir_all(served).expect("served dir");
    git(served, &["init", "-q", "--bare"]);
    git(served, &["config", "uploadpack.allowFilter", "true"]);
    git(work, &["push", "-q", &served.to_string_lossy(), "main", "feature"]);
    let rev = |r: &str| {
        let out = Command::new("git").arg("-C").arg(work).args(["rev-parse", r]).output().expect("rev-parse");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    (rev("main"), rev("feature"))
}

/// One commit of `fast-import`'s stream on `branch` (continuing it), changing one file.
fn commit_text(stream: &mut String, branch: &str, i: usize) {
    let file = format!("src/file{}.rs", i % FILES);
    let content = format!("// {i}\n{}", "fn f() { let x = 1; }\n".repeat(20 + i % 40));
    stream.push_str(&format!(
        "commit refs/heads/{branch}\ncommitter Dev <dev@example.com> {} +0000\ndata {}\ncommit {i}\n",
        1_700_000_000 + i,
        format!("commit {i}").len()
    ));
    stream.push_str(&format!("M 644 inline {file}\ndata {}\n{content}\n", content.len()));
}

/// A new commit on `feature`, pushed to the served repository; its id.
fn push_commit(work: &Path, served: &Path, i: usize) -> String {
    std::fs::write(work.join(format!("src/new{i}.rs")), format!("fn new{i}() {{}}\n")).expect("write");
    git(work, &["add", "."]);
    git(work, &["commit", "-q", "-m", &format!("push {i}")]);
    git(work, &["push", "-q", &served.to_string_lossy(), "feature"]);
    let out = Command::new("git").arg("-C").arg(work).args(["rev-parse", "HEAD"]).output().expect("rev-parse");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
