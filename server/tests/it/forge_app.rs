//! Conclave as a GitHub App against the fake GitHub: the app's JWT accepted, one
//! installation token for many uses and a new one after it expires, a revoked
//! installation named in the error, who may command a review on GitHub and GitLab,
//! and bare mirrors fetched through `git http-backend` with the installation token
//! (the merge base reached, a second fetch only of what is new, worktrees removed,
//! hostile names refused, the token in no file and no error).

use conclave_server::forge_app::{AuthError, Commenter, ForgeAuth, RepoRef, RepoToken, may_command};
use conclave_server::mirrors::{MirrorError, Mirrors, git::git_command, path::mirror_dir};
use conclave_server::post::Forge;
use conclave_testkit::{FakeGitHub, FakeGitLab, git};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::review_post::git_out;

const APP_ID: &str = "12345";
const INSTALLATION: u64 = 42;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/github-app").join(name)
}

/// The fake GitHub playing the app installed on `acme/app` (it accepts no fixed token).
async fn github_app() -> FakeGitHub {
    let github = FakeGitHub::start("acme/app", 7, "", 10).await;
    let public = std::fs::read(fixture("test-app-key.pub.pem")).expect("the test key's public half");
    github.install_app(APP_ID, &public, INSTALLATION);
    github
}

fn app_auth(github: &FakeGitHub, app_id: &str) -> ForgeAuth {
    let key = fixture("test-app-key.pem").to_string_lossy().into_owned();
    let env: HashMap<&str, String> = [
        ("CONCLAVE_GITHUB_APP_ID", app_id.to_string()),
        ("CONCLAVE_GITHUB_APP_KEY_FILE", key),
        ("CONCLAVE_GITHUB_API_URL", github.base.clone()),
        ("CONCLAVE_GITHUB_URL", github.base.clone()),
    ]
    .into();
    ForgeAuth::from_env(&|name| env.get(name).cloned()).expect("the app's configuration")
}

fn repo(path: &str) -> RepoRef {
    RepoRef { forge: Forge::Github, path: path.into(), installation: Some(INSTALLATION) }
}

#[tokio::test]
async fn the_apps_jwt_is_accepted_and_one_exchange_serves_many_concurrent_uses() {
    let github = github_app().await;
    let auth = app_auth(&github, APP_ID);
    let repo = repo("acme/app");
    let tokens = futures::future::join_all((0..20).map(|_| auth.token(&repo))).await;
    let tokens: Vec<String> = tokens.into_iter().map(|t| t.expect("a token").secret().expose().to_string()).collect();
    assert_eq!(github.refused_jwts(), Vec::<String>::new());
    assert_eq!(github.minted().len(), 1, "20 concurrent requests make one exchange");
    assert!(tokens.iter().all(|t| *t == github.minted()[0]));
    // The token works on the API: the permission check goes through with it.
    github.set_permission("octocat", "write");
    let token = auth.token(&repo).await.expect("a token");
    assert!(may_command(&token, &Commenter::Login("octocat".into())).await.expect("asked"));
    assert_eq!(github.minted().len(), 1, "the cached token served the API request too");
}

#[tokio::test]
async fn a_rate_limited_exchange_is_retried_as_posting_retries() {
    let github = github_app().await;
    github.misbehave(1, false);
    let token = app_auth(&github, APP_ID).token(&repo("acme/app")).await.expect("a token after the wait");
    assert_eq!(github.minted(), vec![token.secret().expose().to_string()]);
    let posts = github.requests().iter().filter(|r| r.path.ends_with("/access_tokens")).count();
    assert_eq!(posts, 2, "one 429, then the exchange");
}

#[tokio::test]
async fn a_token_is_minted_again_shortly_before_it_expires() {
    let github = github_app().await;
    github.set_app(Duration::from_secs(4), false);
    let auth = app_auth(&github, APP_ID);
    let first = auth.token(&repo("acme/app")).await.expect("a token");
    let again = auth.token(&repo("acme/app")).await.expect("a token");
    assert_eq!(first.secret().expose(), again.secret().expose());
    assert_eq!(github.minted().len(), 1);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let renewed = auth.token(&repo("acme/app")).await.expect("a token");
    assert_eq!(github.minted().len(), 2, "a token close to its expiry is replaced");
    assert_ne!(renewed.secret().expose(), first.secret().expose());
}

#[tokio::test]
async fn a_revoked_installation_or_a_refused_jwt_is_an_error_naming_the_installation() {
    let github = github_app().await;
    github.set_app(Duration::from_secs(3600), true);
    let error = app_auth(&github, APP_ID).token(&repo("acme/app")).await.expect_err("revoked");
    assert!(matches!(error, AuthError::Installation { status: 404, installation: INSTALLATION, .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("installation 42") && message.contains("uninstalled"), "{message}");
    // Another app's id: the JWT's `iss` is wrong and GitHub answers 401.
    github.set_app(Duration::from_secs(3600), false);
    let error = app_auth(&github, "999").token(&repo("acme/app")).await.expect_err("the wrong app");
    let message = error.to_string();
    assert!(message.contains("installation 42") && message.contains("refused the app's JWT"), "{message}");
    assert_eq!(github.refused_jwts().len(), 1, "{:?}", github.refused_jwts());
    // An event without an installation has no token.
    let unnamed = RepoRef { installation: None, ..repo("acme/app") };
    let error = app_auth(&github, APP_ID).token(&unnamed).await.expect_err("no installation");
    assert!(error.to_string().contains("names no installation"), "{error}");
}

#[tokio::test]
async fn write_access_decides_who_may_command_a_review_on_github_and_gitlab() {
    let github = github_app().await;
    let token = app_auth(&github, APP_ID).token(&repo("acme/app")).await.expect("a token");
    for (login, permission, may) in [("ada", "admin", true), ("max", "maintain", true), ("wes", "write", true)]
        .into_iter()
        .chain([("tia", "triage", false), ("rea", "read", false)])
    {
        github.set_permission(login, permission);
        let answer = may_command(&token, &Commenter::Login(login.into())).await.expect("asked");
        assert_eq!(answer, may, "{login} ({permission})");
    }
    assert!(!may_command(&token, &Commenter::Login("stranger".into())).await.expect("asked"));

    let gitlab = FakeGitLab::start("group/app", 3, "glpat-test-token", 10).await;
    gitlab.set_member(5, 30);
    gitlab.set_member(6, 20);
    let env: HashMap<&str, String> =
        [("CONCLAVE_GITLAB_TOKEN", "glpat-test-token".to_string()), ("CONCLAVE_GITLAB_URL", gitlab.base.clone())]
            .into();
    let auth = ForgeAuth::from_env(&|name| env.get(name).cloned()).expect("GitLab's configuration");
    let project = RepoRef { forge: Forge::Gitlab, path: "group/app".into(), installation: None };
    let token = auth.token(&project).await.expect("GitLab's token");
    assert!(may_command(&token, &Commenter::UserId(5)).await.expect("asked"), "a developer may");
    assert!(!may_command(&token, &Commenter::UserId(6)).await.expect("asked"), "a reporter may not");
    assert!(!may_command(&token, &Commenter::UserId(7)).await.expect("asked"), "a non-member may not");
}

/// The origin of `acme/app` served by the fake: `main` with three commits, `feature`
/// branching after the second with two of its own, `main` one ahead. Returns the
/// origin's bare repository, the base (main), the head (feature) and the merge base.
fn origin(root: &Path) -> (PathBuf, String, String, String) {
    let work = root.join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    git(&work, &["init", "-q", "-b", "main"]);
    let commit = |file: &str, text: &str| {
        std::fs::write(work.join(file), text).expect("write");
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", file]);
        git_out(&work, &["rev-parse", "HEAD"]).trim().to_string()
    };
    commit("a.txt", "one\n");
    let merge_base = commit("b.txt", "two\n");
    git(&work, &["checkout", "-q", "-b", "feature"]);
    commit("c.txt", "three\n");
    let head = commit("d.txt", "four\n");
    git(&work, &["checkout", "-q", "main"]);
    let base = commit("e.txt", "five\n");
    let bare = root.join("served/acme/app.git");
    git(root, &["clone", "-q", "--bare", &work.to_string_lossy(), &bare.to_string_lossy()]);
    (work, base, head, merge_base)
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes())) {
                found.push(path);
            }
        }
    }
    found
}

fn objects(mirror: &Path) -> u64 {
    let out = git_out(mirror, &["count-objects", "-v"]);
    out.lines()
        .filter_map(|l| l.strip_prefix("count: ").or_else(|| l.strip_prefix("in-pack: ")))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .sum()
}

async fn served_app() -> (FakeGitHub, tempfile::TempDir, RepoToken) {
    let github = github_app().await;
    let dir = tempfile::tempdir().expect("temp dir");
    github.serve_git(&dir.path().join("served"));
    let token = app_auth(&github, APP_ID).token(&repo("acme/app")).await.expect("a token");
    (github, dir, token)
}

#[tokio::test]
async fn a_mirror_fetches_base_and_head_with_the_installation_token_and_then_only_what_is_new() {
    let (github, dir, token) = served_app().await;
    let (work, base, head, merge_base) = origin(dir.path());
    let mirrors = Mirrors::new(dir.path().join("cache"));
    let fetched = mirrors.fetch(&token, &base, &head).await.expect("fetched");
    assert!(fetched.fetched);
    assert_eq!(fetched.merge_base, merge_base, "deepened until the merge base is there");
    assert_eq!(fetched.deepened, 1);
    assert!(fetched.mirror.starts_with(dir.path().join("cache")), "{}", fetched.mirror.display());
    let presented = github.git_tokens();
    assert!(presented.iter().all(|t| t == token.secret().expose()) && !presented.is_empty(), "{presented:?}");
    // Both commits there: nothing to fetch.
    let again = mirrors.fetch(&token, &base, &head).await.expect("fetched again");
    assert!(!again.fetched);
    assert_eq!(github.git_tokens().len(), presented.len(), "no request to the forge");
    // A push to the pull request: only its objects come (a commit, its tree, a blob).
    git(&work, &["checkout", "-q", "feature"]);
    std::fs::write(work.join("f.txt"), "six\n").expect("write");
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "f"]);
    git(&work, &["push", "-q", &dir.path().join("served/acme/app.git").to_string_lossy(), "feature"]);
    let pushed = git_out(&work, &["rev-parse", "HEAD"]).trim().to_string();
    let before = objects(&fetched.mirror);
    let third = mirrors.fetch(&token, &base, &pushed).await.expect("the new head fetched");
    assert!(third.fetched);
    assert_eq!(third.merge_base, merge_base);
    let added = objects(&fetched.mirror) - before;
    assert!((1..=3).contains(&added), "{added} objects fetched for one new commit of one file");
}

#[tokio::test]
async fn two_fetches_into_one_mirror_take_turns() {
    let (_github, dir, token) = served_app().await;
    let (_work, base, head, merge_base) = origin(dir.path());
    let (one, two) = (Mirrors::new(dir.path().join("cache")), Mirrors::new(dir.path().join("cache")));
    let (a, b) = tokio::join!(one.fetch(&token, &base, &head), two.fetch(&token, &base, &head));
    let (a, b) = (a.expect("the first fetch"), b.expect("the second fetch"));
    assert_eq!((a.merge_base.as_str(), b.merge_base.as_str()), (merge_base.as_str(), merge_base.as_str()));
    assert_eq!([a.fetched, b.fetched].iter().filter(|f| **f).count(), 1, "the second waited and found both commits");
}

#[tokio::test]
async fn a_worktree_is_checked_out_for_the_review_and_removed_after_even_on_failure() {
    let (_github, dir, token) = served_app().await;
    let (_work, base, head, _) = origin(dir.path());
    let mirrors = Mirrors::new(dir.path().join("cache"));
    let fetched = mirrors.fetch(&token, &base, &head).await.expect("fetched");
    let worktree = mirrors.worktree(&fetched.mirror, &head).await.expect("a worktree");
    let path = worktree.path().to_path_buf();
    assert_eq!(std::fs::read_to_string(path.join("d.txt")).expect("the head's file"), "four\n");
    worktree.remove().await.expect("removed");
    assert!(!path.exists());
    assert_eq!(git_out(&fetched.mirror, &["worktree", "list"]).lines().count(), 1, "the mirror holds no worktree");
    // A review that fails drops its worktree without removing it: it goes all the same.
    let dropped = mirrors.worktree(&fetched.mirror, &base).await.expect("a worktree");
    let path = dropped.path().to_path_buf();
    drop(dropped);
    assert!(!path.exists());
    assert_eq!(git_out(&fetched.mirror, &["worktree", "list"]).lines().count(), 1);
}

#[tokio::test]
async fn no_token_is_written_under_the_cache_or_into_an_error() {
    let (github, dir, token) = served_app().await;
    let (_work, base, head, _) = origin(dir.path());
    let cache = dir.path().join("cache");
    let mirrors = Mirrors::new(&cache);
    let fetched = mirrors.fetch(&token, &base, &head).await.expect("fetched");
    let worktree = mirrors.worktree(&fetched.mirror, &head).await.expect("a worktree");
    let secret = token.secret().expose().to_string();
    let header = token.git_authorization().expose().to_string();
    let basic = header.trim_start_matches("Authorization: Basic ").to_string();
    for needle in [&secret, &basic, &"extraHeader".to_string()] {
        assert_eq!(files_containing(&cache, needle), Vec::<PathBuf>::new(), "{needle} written under the cache");
    }
    worktree.remove().await.expect("removed");
    // A repository that cannot be fetched: git's message, without the token.
    let env: HashMap<&str, String> = [
        ("CONCLAVE_GITHUB_TOKEN", secret.clone()),
        ("CONCLAVE_GITHUB_REPOSITORY", "acme/missing".into()),
        ("CONCLAVE_GITHUB_URL", github.base.clone()),
        ("CONCLAVE_GITHUB_API_URL", github.base.clone()),
    ]
    .into();
    let single = ForgeAuth::from_env(&|name| env.get(name).cloned()).expect("a single repository's token");
    let missing = single.token(&RepoRef { installation: None, ..repo("acme/missing") }).await.expect("its token");
    let error = mirrors.fetch(&missing, &base, &head).await.expect_err("no such repository");
    let message = error.to_string();
    assert!(matches!(error, MirrorError::Git { .. }), "{error:?}");
    assert!(message.contains("acme/missing") && message.contains("not found"), "git's message: {message}");
    assert!(!message.contains(&secret) && !message.contains(&basic), "{message}");
    // The token is known to the process's redactor from the moment it was minted.
    assert!(!conclave_core::process_redactor().redact(&format!("token {secret}")).contains(&secret));
}

#[tokio::test]
async fn git_gets_the_token_through_its_environment_not_its_arguments_or_a_config_file() {
    let (_github, dir, token) = served_app().await;
    let url = token.clone_url().expect("a clone URL");
    let header = token.git_authorization();
    let command = git_command(dir.path(), Some((&url, &header)));
    let command = command.as_std();
    let args: Vec<String> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    assert!(args.iter().all(|a| !a.contains(header.expose()) && !a.contains("extraHeader")), "{args:?}");
    let envs: HashMap<String, String> = command
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_string_lossy().into_owned(), v?.to_string_lossy().into_owned())))
        .collect();
    let origin = url.origin().ascii_serialization();
    let keyed = (0..envs["GIT_CONFIG_COUNT"].parse::<usize>().expect("a count"))
        .find(|i| envs[&format!("GIT_CONFIG_KEY_{i}")] == format!("http.{origin}/.extraHeader"))
        .expect("the header is scoped to the forge's origin");
    assert_eq!(envs[&format!("GIT_CONFIG_VALUE_{keyed}")], header.expose());
    assert_eq!(envs["GIT_CONFIG_GLOBAL"], "/dev/null", "no user configuration (helpers, filters) applies");
}

#[tokio::test]
async fn a_hostile_repository_name_is_refused_before_git_runs() {
    let root = Path::new("/cache");
    let web = reqwest::Url::parse("https://github.com").expect("url");
    assert_eq!(mirror_dir(root, &web, "Acme/App").expect("safe"), root.join("github.com/acme/app.git"));
    for hostile in
        ["../etc", "acme/..", "/etc/passwd", "acme", "acme/a b", "acme/.git", "acme/x.lock", "a/b\nc", "acme/ä", ""]
    {
        let error = mirror_dir(root, &web, hostile).expect_err(hostile);
        assert!(matches!(error, MirrorError::HostileName { .. }), "{hostile}: {error:?}");
    }
    // Through the whole path: an event naming `../..` reaches no git command.
    let (github, dir, _) = served_app().await;
    let env: HashMap<&str, String> = [
        ("CONCLAVE_GITHUB_TOKEN", "a-single-repository-token".to_string()),
        ("CONCLAVE_GITHUB_REPOSITORY", "../..".into()),
        ("CONCLAVE_GITHUB_URL", github.base.clone()),
        ("CONCLAVE_GITHUB_API_URL", github.base.clone()),
    ]
    .into();
    let auth = ForgeAuth::from_env(&|name| env.get(name).cloned()).expect("configured");
    let token = auth.token(&RepoRef { installation: None, ..repo("../..") }).await.expect("its token");
    let error = Mirrors::new(dir.path().join("cache")).fetch(&token, "abcdef1", "abcdef2").await.expect_err("hostile");
    assert!(error.to_string().contains("is refused"), "{error}");
    assert!(github.git_tokens().is_empty(), "git never ran");
    assert!(!dir.path().join("cache").exists(), "nothing was created");
}

#[test]
fn the_jwt_is_backdated_signed_with_rs256_and_lives_under_ten_minutes() {
    use conclave_server::forge_app::AppKey;
    use jsonwebtoken::{Algorithm, DecodingKey, Validation};
    let key = AppKey::from_file(APP_ID, &fixture("test-app-key.pem")).expect("the test key");
    let now = std::time::SystemTime::now();
    let jwt = key.jwt(now).expect("signed");
    let public = std::fs::read(fixture("test-app-key.pub.pem")).expect("public half");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[APP_ID]);
    let claims = jsonwebtoken::decode::<serde_json::Value>(
        jwt.expose(),
        &DecodingKey::from_rsa_pem(&public).expect("public key"),
        &validation,
    )
    .expect("a valid RS256 JWT of the app")
    .claims;
    let secs = now.duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs();
    let (iat, exp) = (claims["iat"].as_u64().expect("iat"), claims["exp"].as_u64().expect("exp"));
    assert_eq!(secs - iat, 60, "iat is backdated a minute against clock drift");
    assert!(exp - iat < 600 && exp > secs, "iat {iat}, exp {exp}, now {secs}");
}

#[test]
fn a_misconfigured_app_is_refused_with_every_problem_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let not_a_key = dir.path().join("key.pem");
    std::fs::write(&not_a_key, "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n")
        .expect("write");
    let cases: [(&[(&str, &str)], &str); 5] = [
        (&[("CONCLAVE_GITHUB_APP_ID", "1")], "CONCLAVE_GITHUB_APP_ID is set without CONCLAVE_GITHUB_APP_KEY_FILE"),
        (
            &[("CONCLAVE_GITHUB_APP_ID", "1"), ("CONCLAVE_GITHUB_APP_KEY_FILE", "/nonexistent/key.pem")],
            "cannot be read",
        ),
        (
            &[("CONCLAVE_GITHUB_APP_ID", "1"), ("CONCLAVE_GITHUB_APP_KEY_FILE", &not_a_key.to_string_lossy())],
            "is not an RSA private key in PEM",
        ),
        (&[("CONCLAVE_GITHUB_TOKEN", "a-token-value")], "without CONCLAVE_GITHUB_REPOSITORY"),
        (&[("CONCLAVE_GITHUB_API_URL", "ftp://example.com")], "CONCLAVE_GITHUB_API_URL is not an http(s) URL"),
    ];
    for (env, expected) in cases {
        let env: HashMap<&str, &str> = env.iter().copied().collect();
        let error = ForgeAuth::from_env(&|name| env.get(name).map(|v| v.to_string())).expect_err(expected);
        assert!(error.to_string().contains(expected), "{env:?}: {error}");
        assert!(!error.to_string().contains("bm90IGEga2V5"), "the key's content is not echoed: {error}");
    }
    // Nothing configured is not an error; a repository then has no token, and says why.
    let none = ForgeAuth::from_env(&|_| None).expect("nothing configured");
    let error = futures::executor::block_on(none.token(&repo("acme/app"))).expect_err("no token");
    assert!(error.to_string().contains("set CONCLAVE_GITHUB_APP_ID"), "{error}");
}
