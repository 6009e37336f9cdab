//! Dismissals from replies, end to end through the real binary: a `/conclave dismiss
//! REASON` reply to a Conclave comment on the fake GitHub or GitLab, from someone
//! with write access, is stored in the run store and applied by the next `review
//! --post` (the finding reported dismissed, with the reason and the replier, and not
//! gated), and answered once in its thread; the same reply from someone without
//! write access, or without a reason, is answered saying why it was ignored.
//! `conclave dismissals list|export` read what was stored.

use conclave_testkit::{FakeGitHub, FakeGitLab};
use serde_json::{Value, json};
use std::process::Command;

use crate::review_post::{
    Fixture, JOIN, TOKEN, WRITE, at, fixture, git_out, github_env, gitlab_env, head, ours, patches, posts_nothing,
    review_reporting,
};

const REASON: &str = "The name is checked by the caller.";

/// The report the last review wrote.
fn report(fx: &Fixture) -> Value {
    let text = std::fs::read_to_string(fx.workdir.join("review.json")).expect("report");
    serde_json::from_str(&text).expect("json")
}

/// The finding of the report that says `description`.
fn finding(report: &Value, description: &str) -> Value {
    let findings = report["review"]["findings"].as_array().cloned().unwrap_or_default();
    findings.into_iter().find(|f| f["description"] == description).expect("the finding is reported")
}

/// Runs `conclave ARGS` with the fixture's run store; exit code, stdout, stderr.
fn conclave(fx: &Fixture, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(args)
        .env("CONCLAVE_DB", fx.workdir.join("runs.db"))
        .env_remove("CONCLAVE_REPOSITORY_KEY")
        .current_dir(&fx.workdir)
        .output()
        .expect("conclave runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The bodies of the replies in the thread that starts with comment `first`.
fn thread(github: &FakeGitHub, first: u64) -> Vec<String> {
    let comments = github.comments();
    let replies = comments.iter().filter(|c| c["in_reply_to_id"].as_u64() == Some(first));
    replies.filter_map(|c| c["body"].as_str().map(str::to_string)).collect()
}

#[tokio::test]
async fn github_a_writer_s_reply_dismisses_on_the_next_push_and_a_reader_s_is_answered_why_not() {
    let fx = fixture();
    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let env = github_env(&fx, &github, 7);
    let items = json!([at(&fx.repo, "blocker", JOIN, "Path traversal."), at(&fx.repo, "minor", WRITE, "Not atomic.")]);
    let gate = ["--post", "github", "--fail-on", "blocker"];
    let (code, stderr) = review_reporting(&fx, &items, &gate, &env).await;
    assert_eq!(code, Some(5), "the blocker gates before it is dismissed: {stderr}");
    let posted = ours(&github.comments());
    let (blocker, minor) = (posted[0]["id"].as_u64().expect("id"), posted[1]["id"].as_u64().expect("id"));

    github.set_permission("ann", "write");
    github.set_permission("mallory", "read");
    github.add_reply(blocker, "ann", &format!("/conclave dismiss {REASON}"));
    github.add_reply(minor, "mallory", "/conclave dismiss it is fine");
    github.add_reply(minor, "ann", "/conclave dismiss   ");
    github.add_reply(minor, "bob", "I think this matters.");
    let (code, stderr) = review_reporting(&fx, &items, &gate, &env).await;
    assert_eq!(code, Some(0), "the dismissed blocker does not gate: {stderr}");
    assert!(stderr.contains("3 `/conclave dismiss` reply(ies) answered"), "{stderr}");
    let dismissed = finding(&report(&fx), "Path traversal.");
    assert_eq!(dismissed["dismissed"], json!({"reason": REASON, "author": "@ann"}), "{dismissed}");
    assert_eq!(finding(&report(&fx), "Not atomic.")["dismissed"], Value::Null, "a reader cannot dismiss");
    let run = report(&fx)["run_id"].as_str().expect("run id").to_string();
    let (code, markdown, stderr) = conclave(&fx, &["runs", "report", &run, "--format", "markdown"]);
    assert_eq!(code, Some(0), "{stderr}");
    // The Markdown report is sanitized whole: the replier is named, not notified.
    assert!(markdown.contains(&format!("| Path traversal. | {REASON} | `@ann` |")), "{markdown}");

    let answers = thread(&github, blocker);
    assert_eq!(answers.len(), 2, "the reply and its answer: {answers:?}");
    assert!(answers[1].starts_with(&format!("Dismissed by @ann: {REASON}; later reviews will not raise it.")));
    let answers = thread(&github, minor);
    assert!(
        answers.iter().any(|a| a.starts_with("Not dismissed: @mallory does not have write access")
            && a.contains("Only people with write access (the write, maintain or admin role) may dismiss")),
        "{answers:?}"
    );
    assert!(answers.iter().any(|a| a.starts_with("Not dismissed: a reason is needed, @ann.")), "{answers:?}");
    assert_eq!(answers.len(), 5, "three replies, two answers, nothing for a plain comment: {answers:?}");
    let now = ours(&github.comments());
    assert_eq!(now[0]["body"], posted[0]["body"], "a dismissed finding's comment is not marked fixed");
    assert!(github.mutations().is_empty(), "nor its thread resolved");

    posts_nothing(&fx, &items, "github", &env, &github, "every reply was answered once").await;
    assert_eq!(thread(&github, blocker).len(), 2);

    let (code, stdout, stderr) = conclave(&fx, &["dismissals", "list", "--format", "json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["repository"], "acme/uploads");
    assert_eq!(listed[0]["fingerprint"], dismissed["fingerprint"]);
    assert_eq!(listed[0]["author"], "@ann");
    let source = listed[0]["source"].as_str().expect("source");
    assert!(source.starts_with("github acme/uploads#7 comment "), "{source}");
}

#[tokio::test]
async fn gitlab_a_developer_s_note_dismisses_on_the_next_push_and_a_reporter_s_is_answered_why_not() {
    let fx = fixture();
    let gitlab = FakeGitLab::start("42", 3, TOKEN, 2).await;
    let base = git_out(&fx.repo, &["rev-parse", "main"]).trim().to_string();
    gitlab.set_head(&base, &head(&fx.repo), &patches(&fx.repo));
    let mut env = gitlab_env(&gitlab);
    env.push(("CI_PROJECT_PATH".into(), "acme/uploads".into()));
    let items = json!([at(&fx.repo, "blocker", JOIN, "Path traversal."), at(&fx.repo, "minor", WRITE, "Not atomic.")]);
    let gate = ["--post", "gitlab", "--fail-on", "blocker"];
    let (code, stderr) = review_reporting(&fx, &items, &gate, &env).await;
    assert_eq!(code, Some(5), "{stderr}");
    let ids: Vec<String> = gitlab.discussions().iter().filter_map(|d| d["id"].as_str().map(str::to_string)).collect();
    let (blocker, minor) = (&ids[0], &ids[1]);

    gitlab.set_member(7, 30);
    gitlab.set_member(8, 20);
    gitlab.add_human_note(blocker, 7, "ann", &format!("/conclave dismiss {REASON}"));
    gitlab.add_human_note(minor, 8, "rita", "/conclave dismiss it is fine");
    gitlab.add_human_note(minor, 9, "stranger", "/conclave dismiss who am I");
    let (code, stderr) = review_reporting(&fx, &items, &gate, &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let dismissed = finding(&report(&fx), "Path traversal.");
    assert_eq!(dismissed["dismissed"], json!({"reason": REASON, "author": "@ann"}), "{dismissed}");
    assert_eq!(finding(&report(&fx), "Not atomic.")["dismissed"], Value::Null);

    let notes = |id: &str| -> Vec<String> {
        let discussion = gitlab.discussions().into_iter().find(|d| d["id"] == id).expect("discussion");
        let notes = discussion["notes"].as_array().cloned().unwrap_or_default();
        notes.iter().filter_map(|n| n["body"].as_str().map(str::to_string)).collect()
    };
    let on_blocker = notes(blocker);
    assert_eq!(on_blocker.len(), 3, "{on_blocker:?}");
    assert!(on_blocker[2].starts_with(&format!("Dismissed by @ann: {REASON}; later reviews will not raise it.")));
    let on_minor = notes(minor);
    for who in ["rita", "stranger"] {
        let expected = format!(
            "Not dismissed: @{who} does not have write access to this repository. Only project \
                                members with the Developer role or above may dismiss"
        );
        assert!(on_minor.iter().any(|n| n.starts_with(&expected)), "{who}: {on_minor:?}");
    }

    posts_nothing(&fx, &items, "gitlab", &env, &gitlab, "every note was answered once").await;
    assert_eq!(notes(blocker).len(), 3);

    let (code, stdout, stderr) = conclave(&fx, &["dismissals", "list", "--repository", "acme/uploads"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(dismissed["fingerprint"].as_str().expect("fp")) && stdout.contains(REASON), "{stdout}");
    assert!(stdout.contains("gitlab acme/uploads!3 note "), "{stdout}");
    let (code, stdout, _) = conclave(&fx, &["dismissals", "list", "--repository", "acme/other"]);
    assert_eq!((code, stdout.trim()), (Some(0), "no stored dismissals of acme/other"));
}

#[tokio::test]
async fn stored_dismissals_export_into_the_repository_file_and_apply_without_post_by_key() {
    let fx = fixture();
    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let env = github_env(&fx, &github, 7);
    let items = json!([at(&fx.repo, "blocker", JOIN, "Path traversal.")]);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let comment = ours(&github.comments())[0]["id"].as_u64().expect("id");
    github.set_permission("ann", "admin");
    github.add_reply(comment, "ann", &format!("/conclave dismiss {REASON}"));
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let fingerprint = finding(&report(&fx), "Path traversal.")["fingerprint"].clone();

    // Without --post, the key names the repository whose stored dismissals apply.
    let gate = ["--fail-on", "blocker"];
    let (code, stderr) = review_reporting(&fx, &items, &gate, &[]).await;
    assert_eq!(code, Some(5), "no key, no stored dismissals: {stderr}");
    let keyed = ["--fail-on", "blocker", "--repository-key", "acme/uploads"];
    let (code, stderr) = review_reporting(&fx, &items, &keyed, &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(finding(&report(&fx), "Path traversal.")["dismissed"]["author"], "@ann");

    let repo = fx.repo.display().to_string();
    let (code, _, stderr) = conclave(&fx, &["dismissals", "export", &repo]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("pass --repository KEY"), "{stderr}");
    let (code, stdout, stderr) = conclave(&fx, &["dismissals", "export", "--repository", "acme/uploads", &repo]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("1 of 1 stored dismissal(s) of acme/uploads added to"), "{stdout}");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.repo.join(".conclave/dismissed.json")).expect("file"))
            .expect("json");
    assert_eq!(
        file,
        json!({"version": 1, "dismissed": [{"fingerprint": fingerprint, "reason": REASON, "author": "@ann"}]})
    );
    let (code, stdout, _) = conclave(&fx, &["dismissals", "export", "--repository", "acme/uploads", &repo]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("0 of 1 stored dismissal(s)"), "exporting again adds nothing: {stdout}");
}

#[tokio::test]
async fn the_fake_github_graphql_refuses_an_unknown_field() {
    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    let client = reqwest::Client::new();
    let query = r#"{ repository(owner: "acme", name: "uploads") { pullRequest(number: 7) { bogus } } }"#;
    let answer: Value = client
        .post(format!("{}/graphql", github.base))
        .bearer_auth(TOKEN)
        .json(&json!({"query": query}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(answer["errors"][0]["message"], "Field 'bogus' doesn't exist on type 'PullRequest'", "{answer}");
    assert!(github.mutations().is_empty());
}

#[tokio::test]
async fn a_graphql_error_fails_the_posting_with_its_message_and_the_next_posting_resolves() {
    let fx = fixture();
    let github = FakeGitHub::start("acme/uploads", 7, TOKEN, 2).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let env = github_env(&fx, &github, 7);
    let items = json!([at(&fx.repo, "blocker", JOIN, "Path traversal."), at(&fx.repo, "minor", WRITE, "Not atomic.")]);
    let (code, stderr) = review_reporting(&fx, &items, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let minor = ours(&github.comments())[1]["id"].as_u64().expect("id");

    let only_blocker = json!([at(&fx.repo, "blocker", JOIN, "Path traversal.")]);
    github.fail_graphql(Some("Resource not accessible by integration"));
    let (code, stderr) = review_reporting(&fx, &only_blocker, &["--post", "github"], &env).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "POST /graphql (reviewThreads) was refused by GitHub's GraphQL API: Resource not accessible by integration"
        ),
        "{stderr}"
    );
    let open = ours(&github.comments())[1]["body"].as_str().expect("body").to_string();
    assert!(open.contains("state=open"), "the comment is not marked fixed while its thread is open: {open}");

    github.fail_graphql(None);
    let (code, stderr) = review_reporting(&fx, &only_blocker, &["--post", "github"], &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(github.mutations(), [format!("PRRT_{minor}")]);
    let fixed = ours(&github.comments())[1]["body"].as_str().expect("body").to_string();
    assert!(fixed.starts_with("**Fixed**") && fixed.contains("state=fixed"), "{fixed}");
}
