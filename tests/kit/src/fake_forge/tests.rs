//! Tests of the fake forges themselves, where they hold logic of their own: several
//! pull (merge) requests kept apart, the pagination of conversation comments and
//! notes, and git fetching a commit by its sha through `git http-backend`.

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;

use super::github::FakeGitHub;
use super::gitlab::FakeGitLab;
use crate::git;

const TOKEN: &str = "test-token";

/// One request to a fake: its status, headers and JSON body (`null` when none).
async fn send(
    method: Method,
    url: &str,
    auth: (&str, &str),
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new().request(method, url).header(auth.0, auth.1);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the fake answers");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let body = response.json().await.unwrap_or(Value::Null);
    (status, headers, body)
}

fn files(path: &str) -> Vec<(String, String)> {
    vec![(path.to_string(), "@@ -1 +1 @@\n-old\n+new\n".to_string())]
}

async fn github() -> (FakeGitHub, impl Fn(&str) -> String) {
    let github = FakeGitHub::start("acme/app", 7, TOKEN, 2).await;
    github.set_head("head7", &files("seven.rs"));
    github.add_pull(8, "head8", "base8", &files("eight.rs"));
    let base = github.base.clone();
    (github, move |path: &str| format!("{base}/repos/acme/app/{path}"))
}

const BEARER: (&str, &str) = ("authorization", "Bearer test-token");

#[tokio::test]
async fn github_keeps_its_pull_requests_apart() {
    let (github, url) = github().await;
    let (status, _, eight) = send(Method::GET, &url("pulls/8"), BEARER, None).await;
    assert_eq!(status, 200);
    assert_eq!(
        (&eight["head"]["sha"], &eight["base"]["sha"], &eight["base"]["ref"]),
        (&json!("head8"), &json!("base8"), &json!("main"))
    );
    assert_eq!(
        (&eight["state"], &eight["draft"], &eight["head"]["repo"]["full_name"]),
        (&json!("open"), &json!(false), &json!("acme/app"))
    );
    github.set_draft(8, true);
    github.set_base(7, "base7");
    assert_eq!(send(Method::GET, &url("pulls/8"), BEARER, None).await.2["draft"], true);
    let seven = send(Method::GET, &url("pulls/7"), BEARER, None).await.2;
    assert_eq!(
        (&seven["head"]["sha"], &seven["base"]["sha"], &seven["draft"]),
        (&json!("head7"), &json!("base7"), &json!(false))
    );
    for unknown in ["pulls/9", "pulls/9/files", "issues/9/comments"] {
        assert_eq!(send(Method::GET, &url(unknown), BEARER, None).await.0, 404, "{unknown}");
    }

    // A review must name its own pull request's head and files.
    let review = |commit: &str, path: &str| {
        json!({"commit_id": commit, "event": "COMMENT", "body": "b",
            "comments": [{"path": path, "line": 1, "side": "RIGHT", "body": "c"}]})
    };
    assert_eq!(send(Method::POST, &url("pulls/8/reviews"), BEARER, Some(review("head7", "eight.rs"))).await.0, 422);
    assert_eq!(send(Method::POST, &url("pulls/8/reviews"), BEARER, Some(review("head8", "seven.rs"))).await.0, 422);
    assert_eq!(send(Method::POST, &url("pulls/8/reviews"), BEARER, Some(review("head8", "eight.rs"))).await.0, 200);
    assert_eq!((github.reviews_of(8).len(), github.comments_of(8).len()), (1, 1));
    assert!(github.reviews().is_empty() && github.comments().is_empty(), "nothing on the first pull request");
    let comment = github.comments_of(8)[0]["id"].as_u64().expect("an id");
    let reply = Some(json!({"body": "r"}));
    let (status, _, _) =
        send(Method::POST, &url(&format!("pulls/7/comments/{comment}/replies")), BEARER, reply.clone()).await;
    assert_eq!(status, 404, "a reply goes to a comment of its own pull request");
    let (status, _, _) = send(Method::POST, &url(&format!("pulls/8/comments/{comment}/replies")), BEARER, reply).await;
    assert_eq!(status, 200);

    // GraphQL's review threads are each pull request's own.
    let query = "query($n: Int!) { repository(owner: \"acme\", name: \"app\") { pullRequest(number: $n) { \
                 reviewThreads(first: 10) { nodes { id comments(first: 10) { totalCount } } } } } }";
    let threads = |n: u64| {
        let url = format!("{}/graphql", github.base);
        async move {
            let body = json!({"query": query, "variables": {"n": n}});
            send(Method::POST, &url, BEARER, Some(body)).await.2["data"]["repository"]["pullRequest"].clone()
        }
    };
    assert_eq!(
        threads(8).await["reviewThreads"]["nodes"],
        json!([{"id": format!("PRRT_{comment}"), "comments": {"totalCount": 2}}])
    );
    assert_eq!(threads(7).await["reviewThreads"]["nodes"], json!([]));
    assert_eq!(threads(9).await, Value::Null);
}

#[tokio::test]
async fn github_issue_comments_are_paginated_edited_and_refused_as_other_writes() {
    let (github, url) = github().await;
    for body in ["one", "two", "three"] {
        let (status, _, comment) =
            send(Method::POST, &url("issues/8/comments"), BEARER, Some(json!({"body": body}))).await;
        assert_eq!(status, 201);
        assert_eq!(comment["user"]["login"], "github-actions[bot]");
        let html = comment["html_url"].as_str().expect("html_url");
        assert!(html.starts_with(&format!("{}/acme/app/pull/8#issuecomment-", github.base)), "{html}");
    }
    let human = github.add_issue_comment(8, "ann", "four");

    let (status, headers, first) = send(Method::GET, &url("issues/8/comments"), BEARER, None).await;
    assert_eq!(status, 200);
    assert_eq!(first.as_array().map(Vec::len), Some(2), "pages of two");
    let link = headers.get("link").and_then(|l| l.to_str().ok()).expect("a Link header").to_string();
    let next = link.split(">; rel=\"next\"").next().and_then(|l| l.strip_prefix('<')).expect("a next page");
    let (_, headers, second) = send(Method::GET, next, BEARER, None).await;
    assert_eq!(
        second.as_array().map(|c| c.iter().map(|c| c["body"].clone()).collect()),
        Some(vec![json!("three"), json!("four")])
    );
    assert!(headers.get("link").is_none(), "the last page links nowhere");
    assert!(github.issue_comments_of(7).is_empty());

    let (status, _, edited) =
        send(Method::PATCH, &url(&format!("issues/comments/{human}")), BEARER, Some(json!({"body": "4"}))).await;
    assert_eq!((status, &edited["body"]), (200, &json!("4")));
    assert_eq!(github.issue_comments_of(8)[3]["body"], "4");
    assert_eq!(send(Method::PATCH, &url("issues/comments/1"), BEARER, Some(json!({"body": "x"}))).await.0, 404);

    github.misbehave(1, false);
    assert_eq!(send(Method::GET, &url("issues/8/comments"), BEARER, None).await.0, 429);
    github.misbehave(0, true);
    assert_eq!(send(Method::POST, &url("issues/8/comments"), BEARER, Some(json!({"body": "no"}))).await.0, 403);
    assert_eq!(github.issue_comments_of(8).len(), 4);
    let posts = github
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/repos/acme/app/issues/8/comments")
        .count();
    assert_eq!(posts, 4, "refused writes are recorded too");
}

async fn gitlab() -> FakeGitLab {
    let gitlab = FakeGitLab::start("group/app", 3, TOKEN, 2).await;
    gitlab.set_project(42, "group/app");
    gitlab.set_head("base3", "head3", &files("three.rs"));
    gitlab.add_merge_request(4, "head4", "base4", &files("four.rs"));
    gitlab
}

const PRIVATE_TOKEN: (&str, &str) = ("private-token", TOKEN);

#[tokio::test]
async fn gitlab_keeps_its_merge_requests_apart_and_names_the_project_by_id_or_path() {
    let gitlab = gitlab().await;
    let api = gitlab.api();
    let (status, _, by_id) =
        send(Method::GET, &format!("{api}/projects/42/merge_requests/4"), PRIVATE_TOKEN, None).await;
    assert_eq!(status, 200);
    let by_path =
        send(Method::GET, &format!("{api}/projects/group%2Fapp/merge_requests/4"), PRIVATE_TOKEN, None).await.2;
    assert_eq!(by_id, by_path);
    assert_eq!(
        (&by_id["iid"], &by_id["state"], &by_id["sha"], &by_id["target_branch"]),
        (&json!(4), &json!("opened"), &json!("head4"), &json!("main"))
    );
    assert_eq!(by_id["diff_refs"], json!({"base_sha": "base4", "start_sha": "base4", "head_sha": "head4"}));
    assert_eq!(by_id["web_url"], format!("{}/group/app/-/merge_requests/4", gitlab.base));
    gitlab.set_draft(4, true);
    let three = send(Method::GET, &format!("{api}/projects/42/merge_requests/3"), PRIVATE_TOKEN, None).await.2;
    assert_eq!((&three["sha"], &three["draft"]), (&json!("head3"), &json!(false)));
    for unknown in
        ["projects/43/merge_requests/4", "projects/42/merge_requests/5", "projects/42/merge_requests/5/notes"]
    {
        assert_eq!(send(Method::GET, &format!("{api}/{unknown}"), PRIVATE_TOKEN, None).await.0, 404, "{unknown}");
    }
    assert_eq!(
        send(Method::GET, &format!("{api}/projects/42/merge_requests/4"), ("private-token", "other"), None).await.0,
        401
    );

    gitlab.set_access(5, "dev", 30);
    let (status, _, member) = send(Method::GET, &format!("{api}/projects/42/members/all/5"), PRIVATE_TOKEN, None).await;
    assert_eq!((status, &member["username"], &member["access_level"]), (200, &json!("dev"), &json!(30)));
    assert_eq!(send(Method::GET, &format!("{api}/projects/42/members/all/6"), PRIVATE_TOKEN, None).await.0, 404);
}

#[tokio::test]
async fn gitlab_notes_are_paginated_newest_first_and_edited() {
    let gitlab = gitlab().await;
    let notes = format!("{}/projects/group%2Fapp/merge_requests/4/notes", gitlab.api());
    for body in ["one", "two", "three"] {
        let (status, _, note) = send(Method::POST, &notes, PRIVATE_TOKEN, Some(json!({"body": body}))).await;
        assert_eq!((status, &note["body"], &note["noteable_iid"]), (201, &json!(body), &json!(4)));
    }
    let bodies = |page: &Value| page.as_array().map(|n| n.iter().map(|n| n["body"].clone()).collect::<Vec<_>>());
    let (_, headers, first) = send(Method::GET, &notes, PRIVATE_TOKEN, None).await;
    assert_eq!(bodies(&first), Some(vec![json!("three"), json!("two")]), "newest first, as GitLab's default");
    assert_eq!(headers.get("x-next-page").and_then(|v| v.to_str().ok()), Some("2"));
    let (_, headers, second) = send(Method::GET, &format!("{notes}?page=2"), PRIVATE_TOKEN, None).await;
    assert_eq!(bodies(&second), Some(vec![json!("one")]));
    assert_eq!(headers.get("x-next-page").and_then(|v| v.to_str().ok()), Some(""));
    let ascending = send(Method::GET, &format!("{notes}?sort=asc&per_page=100"), PRIVATE_TOKEN, None).await.2;
    assert_eq!(bodies(&ascending), Some(vec![json!("one"), json!("two")]));

    let id = gitlab.notes_of(4)[0]["id"].as_u64().expect("an id");
    let (status, _, edited) =
        send(Method::PUT, &format!("{notes}/{id}"), PRIVATE_TOKEN, Some(json!({"body": "1"}))).await;
    assert_eq!((status, &edited["body"]), (200, &json!("1")));
    assert_eq!(gitlab.notes_of(4)[0]["body"], "1");
    assert!(gitlab.notes_of(3).is_empty() && gitlab.discussions().is_empty(), "nothing on the first merge request");
    gitlab.misbehave(0, true);
    assert_eq!(send(Method::PUT, &format!("{notes}/{id}"), PRIVATE_TOKEN, Some(json!({"body": "x"}))).await.0, 403);
}

/// A bare repository `group/app.git` under `root` whose `main` has one commit, and a
/// second commit no ref reaches (as a force-pushed pull request's old head); the
/// second commit's sha.
fn served_with_an_unreachable_commit(root: &Path) -> String {
    let (work, bare) = (root.join("work"), root.join("served/group/app.git"));
    std::fs::create_dir_all(&work).expect("work dir");
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("a.txt"), "one\n").expect("write");
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "one"]);
    git(root, &["init", "-q", "--bare", &bare.to_string_lossy()]);
    git(&work, &["push", "-q", &bare.to_string_lossy(), "main"]);
    std::fs::write(work.join("a.txt"), "two\n").expect("write");
    git(&work, &["commit", "-q", "-am", "two"]);
    git(&work, &["push", "-q", &bare.to_string_lossy(), "HEAD:refs/heads/gone"]);
    git(&bare, &["update-ref", "-d", "refs/heads/gone"]);
    let out = std::process::Command::new("git").arg("-C").arg(&work).args(["rev-parse", "HEAD"]).output().expect("git");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `git fetch URL SHA` into `into` with a Basic header of `user` and `password`,
/// over git's protocol `version`; whether it succeeded, and git's stderr.
async fn fetch(into: &Path, url: &str, sha: &str, (user, password): (&str, &str), version: u8) -> (bool, String) {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let out = tokio::process::Command::new("git")
        .arg("-C")
        .arg(into)
        .args(["-c", &format!("http.extraHeader=Authorization: Basic {basic}")])
        .args(["-c", &format!("protocol.version={version}"), "fetch", "-q", url, sha])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .await
        .expect("git runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn gitlab_serves_a_commit_by_its_sha_to_oauth2_with_the_token_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sha = served_with_an_unreachable_commit(dir.path());
    let gitlab = gitlab().await;
    let url = format!("{}/group/app.git", gitlab.base);
    let into = dir.path().join("mirror");
    git(dir.path(), &["init", "-q", "--bare", &into.to_string_lossy()]);
    assert!(!fetch(&into, &url, &sha, ("oauth2", TOKEN), 2).await.0, "no git before serve_git");
    gitlab.serve_git(&dir.path().join("served"));

    for refused in [("x-access-token", TOKEN), ("oauth2", "other")] {
        let (fetched, stderr) = fetch(&into, &url, &sha, refused, 2).await;
        assert!(!fetched, "{refused:?} is refused: {stderr}");
    }
    for version in [0, 2] {
        let (fetched, stderr) = fetch(&into, &url, &sha, ("oauth2", TOKEN), version).await;
        assert!(fetched, "protocol version {version}: {stderr}");
    }
    git(&into, &["cat-file", "-e", &format!("{sha}^{{commit}}")]);
    let tokens = gitlab.git_tokens();
    assert!(tokens.contains(&"other".to_string()) && tokens.contains(&TOKEN.to_string()), "{tokens:?}");
}
