//! Reviews without a CI job, end to end: the real `conclave serve` receives signed
//! GitHub deliveries, its dispatcher queues reviews, its worker (or `conclave worker`
//! processes) fetches the pull request over git's HTTP with the GitHub App's
//! installation token from the fake GitHub, reviews it against a fake LLM and posts
//! on the fake GitHub. A push reviews only what is new since the posted review; a
//! `/conclave review` from someone without write access is answered once; an
//! installation without a token fails the run with the reason.

use conclave_core::RunStore;
use conclave_server::api::webhooks::signature::github_signature;
use conclave_server::forge_service::{POSTING_REPORT, Posting};
use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeGitHub, FakeServer, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::review_e2e::{TRAVERSAL, findings, fixture_repo, writer_routes};
use crate::review_post::{git_out, line_of, patches};
use crate::webhooks::GITHUB_SECRET;
use crate::workers_cli::{serve_with, stop};

const APP_ID: &str = "12345";
const INSTALLATION: u64 = 42;
const REPOSITORY: &str = "acme/app";

fn key(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/github-app").join(name)
}

/// A pull request's repository: a working clone with `main` and `feature`, and the
/// bare repository the fake GitHub serves over git's HTTP.
pub(crate) struct Forge {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) work: PathBuf,
    pub(crate) github: FakeGitHub,
}

impl Forge {
    /// The fake GitHub playing the app on `acme/app`, whose pull request 7 is
    /// `feature` against `main`.
    pub(crate) async fn start() -> Forge {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = fixture_repo(dir.path());
        let bare = dir.path().join("git/acme/app.git");
        std::fs::create_dir_all(bare.parent().expect("parent")).expect("mkdir");
        git(dir.path(), &["clone", "-q", "--bare", &work.display().to_string(), &bare.display().to_string()]);
        let github = FakeGitHub::start(REPOSITORY, 7, "", 10).await;
        let public = std::fs::read(key("test-app-key.pub.pem")).expect("the test key's public half");
        github.install_app(APP_ID, &public, INSTALLATION);
        github.serve_git(&dir.path().join("git"));
        let forge = Forge { dir, work, github };
        forge.publish(7);
        forge
    }

    /// Pushes the working clone's branches to the bare repository and tells the fake
    /// GitHub that pull request `number`'s head is `feature`'s.
    pub(crate) fn publish(&self, number: u64) {
        git(&self.work, &["push", "-q", "--force", "../git/acme/app.git", "main", "feature"]);
        let base = git_out(&self.work, &["rev-parse", "main"]).trim().to_string();
        self.github.set_head_of(number, &self.head(), &patches(&self.work));
        self.github.set_base(number, &base);
    }

    pub(crate) fn head(&self) -> String {
        git_out(&self.work, &["rev-parse", "feature"]).trim().to_string()
    }

    /// The environment of a process serving the app.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        [
            ("CONCLAVE_GITHUB_WEBHOOK_SECRET", GITHUB_SECRET.to_string()),
            ("CONCLAVE_GITHUB_APP_ID", APP_ID.to_string()),
            ("CONCLAVE_GITHUB_APP_KEY_FILE", key("test-app-key.pem").display().to_string()),
            ("CONCLAVE_GITHUB_API_URL", self.github.base.clone()),
            ("CONCLAVE_GITHUB_URL", self.github.base.clone()),
            ("CONCLAVE_MIRRORS", self.dir.path().join("cache/mirrors").display().to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec()
    }
}

/// `conclave` in `dir` with the forge's environment, the runs in `db`, and the agents
/// on the fake LLM.
pub(crate) fn conclave(forge: &Forge, llm: &FakeServer, db: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
    cmd.current_dir(forge.dir.path())
        .env("CONCLAVE_DB", db)
        .env("CONCLAVE_CONFIG_DIR", forge.dir.path().join("config"))
        .env("ANTHROPIC_BASE_URL", &llm.base)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
        .env_remove("CONCLAVE_TOKEN")
        .env_remove("CI")
        .env_remove("GITHUB_TOKEN")
        .envs(forge.env());
    cmd
}

/// A GitHub `pull_request` delivery of pull request `number` at `head`.
pub(crate) fn pushed(action: &str, number: u64, head: &str) -> Value {
    json!({
        "action": action, "number": number,
        "pull_request": {"number": number, "draft": false,
            "head": {"sha": head, "ref": "feature"}, "base": {"sha": "0000000", "ref": "main"}},
        "repository": {"full_name": REPOSITORY}, "installation": {"id": INSTALLATION}, "sender": {"login": "ann"}
    })
}

/// A `/conclave review` comment by `login` on pull request `number`.
pub(crate) fn commented(login: &str, number: u64, body: &str) -> Value {
    json!({
        "action": "created",
        "issue": {"number": number, "pull_request": {"url": "x"}},
        "comment": {"id": 900 + number, "body": body, "user": {"login": login}},
        "repository": {"full_name": REPOSITORY}, "installation": {"id": INSTALLATION}, "sender": {"login": login}
    })
}

/// POSTs a signed GitHub delivery to the server on `port`; the status.
pub(crate) async fn deliver(port: u16, event: &str, id: &str, body: &Value) -> u16 {
    let text = body.to_string();
    let signature = github_signature(GITHUB_SECRET, text.as_bytes());
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/webhooks/github"))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", signature)
        .body(text)
        .send()
        .await
        .expect("the server answers");
    response.status().as_u16()
}

/// Waits (up to two minutes) until `done` holds.
pub(crate) async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `conclave runs list --json` through `cmd`.
pub(crate) fn runs(mut cmd: Command) -> Vec<Value> {
    let out = cmd.args(["runs", "list", "--json"]).output().expect("runs list");
    serde_json::from_slice::<Value>(&out.stdout).ok().and_then(|v| v.as_array().cloned()).unwrap_or_default()
}

/// `conclave runs show ID --json` through `cmd`.
pub(crate) fn show(mut cmd: Command, id: &str) -> Value {
    let out = cmd.args(["runs", "show", id, "--json"]).output().expect("runs show");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn serve(forge: &Forge, llm: &FakeServer, db: &str) -> (Child, u16) {
    let (child, port, _) = serve_with(conclave(forge, llm, db), &["--workers", "2"]);
    (child, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_is_reviewed_and_posted_and_the_next_push_only_for_what_is_new() {
    let forge = Forge::start().await;
    let line = line_of(&forge.work, "src/upload.rs", "let target = root.join(name);");
    let items = json!([{"severity": "blocker", "file": "src/upload.rs", "line": line, "description": TRAVERSAL,
        "raisedBy": "security", "stance": "concern", "evidence": "let target = root.join(name);"}]);
    // The Writer reports the finding in the first review, and nothing in the second,
    // which reviews only the new commit (a note): the finding is carried forward.
    let mut routes = writer_routes(items);
    if let Some(writer) = routes.last_mut() {
        writer.replies.push(Vendor::Anthropic.answer(&findings(json!([]), [0, 0, 0, 0])));
    }
    let llm = FakeServer::start_routed(routes).await;
    let db = forge.dir.path().join("runs.db").display().to_string();
    let (server, port) = serve(&forge, &llm, &db);
    let first = forge.head();
    assert_eq!(deliver(port, "pull_request", "d-1", &pushed("opened", 7, &first)).await, 202);
    until("the first review is posted", || !forge.github.reviews_of(7).is_empty()).await;
    let reviews = forge.github.reviews_of(7);
    assert_eq!(reviews[0]["commit_id"], json!(first), "{reviews:?}");
    let comments = forge.github.comments_of(7);
    assert!(comments.iter().any(|c| c["body"].as_str().is_some_and(|b| b.contains("path traversal"))), "{comments:?}");

    // The run names its pull request, and holds no token anywhere.
    let listed = runs(conclave(&forge, &llm, &db));
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["pull_request"], "acme/app#7", "{listed:?}");
    let run = show(conclave(&forge, &llm, &db), listed[0]["id"].as_str().unwrap_or_default());
    let text = run.to_string();
    for token in forge.github.minted() {
        assert!(!text.contains(&token), "the installation token is in the run");
    }
    // The worktree is gone; the mirror stays for the next push.
    let worktrees = forge.dir.path().join("cache/mirrors/.worktrees");
    let left: Vec<_> = std::fs::read_dir(&worktrees).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "worktrees left: {left:?}");

    // A push: only the new commit is reviewed, from the posted review.
    std::fs::write(forge.work.join("NOTES.md"), "notes\n").expect("write");
    git(&forge.work, &["checkout", "-q", "feature"]);
    git(&forge.work, &["add", "NOTES.md"]);
    git(&forge.work, &["commit", "-q", "-m", "add notes"]);
    forge.publish(7);
    let second = forge.head();
    assert_eq!(deliver(port, "pull_request", "d-2", &pushed("synchronize", 7, &second)).await, 202);
    // A redelivery of it changes nothing.
    assert_eq!(deliver(port, "pull_request", "d-2", &pushed("synchronize", 7, &second)).await, 200);
    // The second review finds nothing new to say: its posting writes nothing new.
    let store = conclave_store::SqliteStore::open(Path::new(&db)).expect("the server's store");
    let mut posted = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    while posted.is_none() {
        assert!(Instant::now() < deadline, "the second review was not dealt with");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let listed = runs(conclave(&forge, &llm, &db));
        if let (2, Some(id)) = (listed.len(), listed[0]["id"].as_str()) {
            posted = store.get_report(id, POSTING_REPORT).await.expect("the store reads");
        }
    }
    let posting: Posting = serde_json::from_str(&posted.unwrap_or_default()).expect("a posting report");
    assert!(posting.posted && posting.head.as_deref() == Some(second.as_str()), "{posting:?}");
    let listed = runs(conclave(&forge, &llm, &db));
    assert_eq!(listed.len(), 2, "one review per push, the redelivery none: {listed:?}");
    let newest = show(conclave(&forge, &llm, &db), listed[0]["id"].as_str().unwrap_or_default());
    let scope = &newest["run"]["input"]["scope"];
    assert_eq!(scope["incremental"]["since"], json!(first), "{scope}");
    let comments = forge.github.comments_of(7);
    let inline: Vec<&Value> = comments.iter().filter(|c| c["in_reply_to_id"].is_null()).collect();
    assert_eq!(inline.len(), 1, "the finding is commented on once: {inline:?}");
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_from_someone_without_write_access_is_answered_once_and_runs_nothing() {
    let forge = Forge::start().await;
    let llm = FakeServer::start_routed(writer_routes(json!([]))).await;
    let db = forge.dir.path().join("runs.db").display().to_string();
    let (server, port) = serve(&forge, &llm, &db);
    forge.github.set_permission("mallory", "read");
    let body = commented("mallory", 7, "/conclave review --full");
    assert_eq!(deliver(port, "issue_comment", "c-1", &body).await, 202);
    assert_eq!(deliver(port, "issue_comment", "c-1", &body).await, 200);
    until("the refusal is answered", || !forge.github.issue_comments_of(7).is_empty()).await;
    // Give a second answer (or a run) the time to appear: none must.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answers = forge.github.issue_comments_of(7);
    assert_eq!(answers.len(), 1, "answered once: {answers:?}");
    let answer = answers[0]["body"].as_str().unwrap_or_default();
    assert!(answer.contains("write access") && answer.contains("mallory"), "{answer}");
    assert!(runs(conclave(&forge, &llm, &db)).is_empty(), "nothing ran");
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installation_without_a_token_fails_its_run_with_the_reason() {
    let forge = Forge::start().await;
    let llm = FakeServer::start_routed(writer_routes(json!([]))).await;
    let db = forge.dir.path().join("runs.db").display().to_string();
    forge.github.set_app(Duration::from_secs(3600), true);
    let (server, port) = serve(&forge, &llm, &db);
    assert_eq!(deliver(port, "pull_request", "d-1", &pushed("opened", 7, &forge.head())).await, 202);
    let ended = || runs(conclave(&forge, &llm, &db)).first().is_some_and(|r| r["status"] == "failed");
    until("the run fails", ended).await;
    let run = &runs(conclave(&forge, &llm, &db))[0];
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("installation") && error.contains("42"), "{run}");
    assert!(llm.requests().is_empty(), "no model was asked");
    stop(server);
}

/// The pull requests of the load test, each its own branch from `main`.
const PULLS: u64 = 10;

/// Commits push `round` of pull request `n` on its branch `pr-N` (the same change to
/// `src/upload.rs` in every request, and a note that changes with each push) and
/// tells the fake GitHub; the new head.
fn push(forge: &Forge, n: u64, round: u32) -> String {
    let branch = format!("pr-{n}");
    if round == 1 {
        git(&forge.work, &["checkout", "-q", "-B", &branch, "feature"]);
    } else {
        git(&forge.work, &["checkout", "-q", &branch]);
    }
    // Each push edits the reviewed file away from the finding's line, so every
    // review (the incremental ones too) has the file in its change.
    let file = forge.work.join("src/upload.rs");
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&format!("// pull request {n}, push {round}\n"));
    std::fs::write(&file, text).expect("write");
    git(&forge.work, &["add", "src/upload.rs"]);
    git(&forge.work, &["commit", "-q", "-m", &format!("pr {n} round {round}")]);
    git(&forge.work, &["push", "-q", "--force", "../git/acme/app.git", &branch]);
    let head = git_out(&forge.work, &["rev-parse", "HEAD"]).trim().to_string();
    let base = git_out(&forge.work, &["rev-parse", "main"]).trim().to_string();
    let files = patches(&forge.work);
    if round == 1 && n != 7 {
        forge.github.add_pull(n, &head, &base, &files);
    } else {
        forge.github.set_head_of(n, &head, &files);
        forge.github.set_base(n, &base);
    }
    head
}

/// The runs of the store at `db` whose worker posted them, by pull request: the head
/// each posted review reviewed.
async fn posted_heads(db: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let store = conclave_store::PostgresStore::connect(db).await.expect("the test database");
    let mut heads = std::collections::BTreeMap::<String, Vec<String>>::new();
    for run in store.list_runs(1000).await.expect("runs") {
        let Some(pull) = run.pull_request.clone() else { continue };
        let posting = store.get_report(&run.id, POSTING_REPORT).await.expect("report");
        let posting: Option<Posting> = posting.and_then(|text| serde_json::from_str(&text).ok());
        if let Some(posting) = posting.filter(|p| p.posted) {
            heads.entry(pull).or_default().push(posting.head.unwrap_or_default());
        }
    }
    // Oldest first.
    heads.values_mut().for_each(|list| list.reverse());
    heads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_pull_requests_under_sixty_deliveries_end_with_one_review_of_each_newest_head() {
    let forge = Forge::start().await;
    let db = crate::workers_cli::fresh_postgres();
    let line = line_of(&forge.work, "src/upload.rs", "let target = root.join(name);");
    let items = json!([{"severity": "blocker", "file": "src/upload.rs", "line": line, "description": TRAVERSAL,
        "raisedBy": "security", "stance": "concern", "evidence": "let target = root.join(name);"}]);
    // Slow enough that pushes arrive while reviews run, and a worker dies in one.
    let llm = FakeServer::start_routed(slowly(writer_routes(items))).await;
    forge.github.set_permission("ann", "write");
    // The dispatcher in an API-only server, two worker processes with short leases.
    let (server, port, token) = serve_with(conclave(&forge, &llm, &db), &["--workers", "0"]);
    let worker = |name: &str| {
        let log = std::fs::File::create(forge.dir.path().join(format!("{name}.log"))).expect("log");
        conclave(&forge, &llm, &db)
            .args(["worker", "--lease-secs", "3", "--runs", "3"])
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("a worker starts")
    };
    let (first, second) = (worker("first"), worker("second"));
    let mut newest = std::collections::BTreeMap::new();
    let mut sent = 0;
    // Opened, then a push, each redelivered once: 40 deliveries.
    for round in 1..=2 {
        for n in 1..=PULLS {
            let head = push(&forge, n, round);
            let action = if round == 1 { "opened" } else { "synchronize" };
            for expected in [202, 200] {
                let status = deliver(port, "pull_request", &format!("p{n}-{round}"), &pushed(action, n, &head)).await;
                assert_eq!(status, expected);
                sent += 1;
            }
            newest.insert(format!("acme/app#{n}"), head);
        }
    }
    // Kill the first worker in the middle of a review it holds.
    until_holding_a_begun_run(&db, &forge.dir.path().join("first.log")).await;
    stop(first);
    // Commands from a writer on five requests, then a burst of pushes on the same five: 20.
    for n in 1..=5 {
        for expected in [202, 200] {
            let status =
                deliver(port, "issue_comment", &format!("c{n}"), &commented("ann", n, "/conclave review")).await;
            assert_eq!(status, expected);
            sent += 1;
        }
    }
    for n in 1..=5 {
        let head = push(&forge, n, 3);
        for expected in [202, 200] {
            assert_eq!(
                deliver(port, "pull_request", &format!("p{n}-3"), &pushed("synchronize", n, &head)).await,
                expected
            );
            sent += 1;
        }
        newest.insert(format!("acme/app#{n}"), head);
    }
    assert_eq!(sent, 60);
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let posted = posted_heads(&db).await;
        if newest.iter().all(|(pull, head)| posted.get(pull).is_some_and(|heads| heads.contains(head))) {
            break;
        }
        assert!(Instant::now() < deadline, "not every newest head was posted: {posted:?}\nnewest: {newest:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Let anything still queued run out, then check the record.
    tokio::time::sleep(Duration::from_secs(5)).await;
    check_the_record(&forge, &llm, &db, &newest).await;
    check_the_metrics(port, &token).await;
    stop(second);
    stop(server);
}

/// Waits until the worker that logs to `log` holds a running run with stored events.
async fn until_holding_a_begun_run(db: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let worker = loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let id = text.lines().find_map(|l| l.strip_prefix("worker ")?.split_whitespace().next().map(str::to_string));
        if let Some(id) = id {
            break id;
        }
        assert!(Instant::now() < deadline, "the worker never said its id: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (client, connection) = tokio_postgres::connect(db, tokio_postgres::NoTls).await.expect("the test database");
    tokio::spawn(connection);
    loop {
        let row = client
            .query_one(
                "SELECT count(*) FROM runs WHERE worker = $1 AND status = 'running' AND last_seq > 0",
                &[&worker],
            )
            .await
            .expect("the runs it holds");
        if row.get::<_, i64>(0) > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "worker {worker} never held a run that began");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `routes`, each reply given after 400 ms.
fn slowly(mut routes: Vec<conclave_testkit::Route>) -> Vec<conclave_testkit::Route> {
    for route in &mut routes {
        let replies = route.replies.drain(..);
        route.replies =
            replies.map(|reply| conclave_testkit::Reply::After { millis: 400, reply: Box::new(reply) }).collect();
    }
    routes
}

/// After the load: one posted review of each newest head, posted last; each finding
/// commented on once; no delivery pending; no token in any run, report or mirror.
async fn check_the_record(
    forge: &Forge,
    llm: &FakeServer,
    db: &str,
    newest: &std::collections::BTreeMap<String, String>,
) {
    let posted = posted_heads(db).await;
    for (pull, head) in newest {
        let reviewed = posted.get(pull).cloned().unwrap_or_default();
        assert_eq!(reviewed.iter().filter(|h| *h == head).count(), 1, "{pull}: {reviewed:?} (newest {head})");
        assert_eq!(reviewed.last(), Some(head), "{pull}: the newest head posted last: {reviewed:?}");
    }
    for n in 1..=PULLS {
        let comments = forge.github.comments_of(n);
        let ours: Vec<&Value> = comments.iter().filter(|c| c["in_reply_to_id"].is_null()).collect();
        assert_eq!(ours.len(), 1, "acme/app#{n}: the finding commented on once: {ours:?}");
    }
    // No delivery was lost: none is pending.
    let store = conclave_store::PostgresStore::connect(db).await.expect("the test database");
    let pending = store.pending_deliveries(100).await.expect("pending");
    assert!(pending.is_empty(), "{pending:?}");
    // No token anywhere: the runs, their events and reports, the mirrors.
    let tokens = forge.github.minted();
    assert!(!tokens.is_empty());
    let mut resumed = 0;
    for run in runs(conclave(forge, llm, db)) {
        let id = run["id"].as_str().unwrap_or_default();
        let shown = show(conclave(forge, llm, db), id).to_string();
        resumed += usize::from(shown.contains("\"run_resumed\""));
        let mut reports = Vec::new();
        for format in ["markdown", "json", "sarif", "posting"] {
            reports.extend(store.get_report(id, format).await.ok().flatten());
        }
        for token in &tokens {
            assert!(!shown.contains(token), "a token in run {id}");
            assert!(reports.iter().all(|r| !r.contains(token)), "a token in a report of {id}");
        }
    }
    assert!(resumed >= 1, "the killed worker's review was taken up by the other worker");
    let cache = forge.dir.path().join("cache");
    let grep = Command::new("grep").args(["-r", "-l", "-F", &tokens[0]]).arg(&cache).output().expect("grep");
    assert!(grep.stdout.is_empty(), "a token under the cache: {}", String::from_utf8_lossy(&grep.stdout));
}

/// A GitLab `Merge Request Hook` of merge request `iid` of `group/app` at `head`.
fn merge_request_hook(action: &str, iid: u64, head: &str) -> Value {
    json!({
        "object_kind": "merge_request", "event_type": "merge_request",
        "user": {"username": "dee"}, "project": {"id": 3, "path_with_namespace": "group/app"},
        "object_attributes": {"iid": iid, "action": action, "draft": false, "target_branch": "main",
            "source_branch": "feature", "last_commit": {"id": head}},
        "changes": {}
    })
}

/// A GitLab `Note Hook`: `body` by `username` on merge request `iid`.
fn note_hook(username: &str, iid: u64, body: &str) -> Value {
    json!({
        "object_kind": "note", "user": {"username": username}, "project": {"path_with_namespace": "group/app"},
        "object_attributes": {"id": 31, "note": body, "noteable_type": "MergeRequest", "discussion_id": "d1",
            "action": "create"},
        "merge_request": {"iid": iid, "target_branch": "main"}
    })
}

/// POSTs a GitLab delivery with its secret token to the server on `port`; the status.
async fn deliver_gitlab(port: u16, event: &str, id: &str, body: &Value) -> u16 {
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/webhooks/gitlab"))
        .header("content-type", "application/json")
        .header("x-gitlab-event", event)
        .header("idempotency-key", id)
        .header("x-gitlab-token", crate::webhooks::GITLAB_SECRET)
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers");
    response.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_merge_request_is_reviewed_and_posted_and_a_note_from_a_guest_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = fixture_repo(dir.path());
    let bare = dir.path().join("git/group/app.git");
    std::fs::create_dir_all(bare.parent().expect("parent")).expect("mkdir");
    git(dir.path(), &["clone", "-q", "--bare", &work.display().to_string(), &bare.display().to_string()]);
    let head = git_out(&work, &["rev-parse", "feature"]).trim().to_string();
    let base = git_out(&work, &["rev-parse", "main"]).trim().to_string();
    let gitlab = conclave_testkit::FakeGitLab::start("group/app", 3, crate::review_post::TOKEN, 10).await;
    gitlab.set_project(3, "group/app");
    gitlab.set_head_of(3, &base, &head, &patches(&work));
    gitlab.serve_git(&dir.path().join("git"));
    gitlab.set_access(77, "guest", 10);
    let line = line_of(&work, "src/upload.rs", "let target = root.join(name);");
    let items = json!([{"severity": "blocker", "file": "src/upload.rs", "line": line, "description": TRAVERSAL,
        "raisedBy": "security", "stance": "concern", "evidence": "let target = root.join(name);"}]);
    let llm = FakeServer::start_routed(writer_routes(items)).await;
    let db = dir.path().join("runs.db").display().to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
    cmd.current_dir(dir.path())
        .env("CONCLAVE_DB", &db)
        .env("CONCLAVE_CONFIG_DIR", dir.path().join("config"))
        .env("ANTHROPIC_BASE_URL", &llm.base)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("CONCLAVE_TOKEN")
        .env_remove("CI")
        .env("CONCLAVE_GITLAB_WEBHOOK_SECRET", crate::webhooks::GITLAB_SECRET)
        .env("CONCLAVE_GITLAB_TOKEN", crate::review_post::TOKEN)
        .env("CONCLAVE_GITLAB_URL", &gitlab.base)
        .env("CONCLAVE_MIRRORS", dir.path().join("cache/mirrors"));
    let (server, port, _) = serve_with(cmd, &["--workers", "1"]);
    assert_eq!(deliver_gitlab(port, "Merge Request Hook", "g-1", &merge_request_hook("open", 3, &head)).await, 202);
    let posted = || gitlab.discussions_of(3).iter().any(|d| d.to_string().contains("path traversal"));
    until("the review is posted on the merge request", posted).await;
    // A guest's `/conclave review` is answered once, in a note, and runs nothing more.
    let notes = gitlab.notes_of(3).len();
    assert_eq!(deliver_gitlab(port, "Note Hook", "g-2", &note_hook("guest", 3, "/conclave review --full")).await, 202);
    let answered = || gitlab.notes_of(3).iter().any(|n| n["body"].as_str().is_some_and(|b| b.contains("write access")));
    until("the guest is answered", answered).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let new_notes = gitlab.notes_of(3).len() - notes;
    assert_eq!(new_notes, 1, "one answer: {:?}", gitlab.notes_of(3));
    let listed = runs({
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
        cmd.current_dir(dir.path()).env("CONCLAVE_DB", &db).env("CONCLAVE_CONFIG_DIR", dir.path().join("config"));
        cmd
    });
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["pull_request"], "group/app!3");
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_that_cannot_be_fetched_fails_with_git_s_message_said_once_on_the_pull_request() {
    let forge = Forge::start().await;
    let llm = FakeServer::start_routed(writer_routes(json!([]))).await;
    let db = forge.dir.path().join("runs.db").display().to_string();
    // The repository is gone from the forge's git: fetching it fails.
    std::fs::remove_dir_all(forge.dir.path().join("git/acme/app.git")).expect("remove");
    let (server, port) = serve(&forge, &llm, &db);
    for (n, id) in ["d-1", "d-2"].iter().enumerate() {
        assert_eq!(deliver(port, "pull_request", id, &pushed("synchronize", 7, &forge.head())).await, 202);
        let failed = || runs(conclave(&forge, &llm, &db)).iter().filter(|r| r["status"] == "failed").count() > n;
        until("the review fails", failed).await;
    }
    let listed = runs(conclave(&forge, &llm, &db));
    let error = listed[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("fetching") && error.contains("acme/app"), "git's message: {error}");
    until("the reason is posted", || !forge.github.issue_comments_of(7).is_empty()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let comments = forge.github.issue_comments_of(7);
    assert_eq!(comments.len(), 1, "one comment, edited by the second failure: {comments:?}");
    let body = comments[0]["body"].as_str().unwrap_or_default();
    assert!(body.contains("could not review") && body.contains("fetching"), "{body}");
    for token in forge.github.minted() {
        assert!(!body.contains(&token) && !error.contains(&token), "the token leaked");
    }
    assert!(llm.requests().is_empty(), "no model was asked");
    stop(server);
}

/// The server counted every delivery (30 kept, 30 redelivered), and the pushes that
/// superseded a review.
async fn check_the_metrics(port: u16, token: &str) {
    // The server counted every delivery, and the pushes that superseded a review.
    let text = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .bearer_auth(token)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("a body");
    let (samples, _) = crate::metrics::parse(&text);
    let count = |event: &str, outcome: &str| {
        let labels = [("forge", "github"), ("event", event), ("outcome", outcome)];
        crate::metrics::value(&samples, "conclave_webhook_deliveries_total", &labels).unwrap_or(0.0)
    };
    assert_eq!(count("pull_request", "accepted") + count("issue_comment", "accepted"), 30.0, "{text}");
    assert_eq!(count("pull_request", "duplicate") + count("issue_comment", "duplicate"), 30.0, "{text}");
    let superseded = crate::metrics::value(&samples, "conclave_webhook_reviews_superseded_total", &[]).unwrap_or(0.0);
    assert!(superseded >= 1.0, "pushes superseded reviews: {text}");
    assert!(crate::metrics::value(&samples, "conclave_webhook_oldest_waiting_review_seconds", &[]).is_some(), "{text}");
}

/// A dispatcher over the SQLite store at `path` with a single repository's token,
/// `batch` requests a pass.
fn dispatcher(
    path: &Path,
    batch: usize,
) -> (conclave_server::forge_service::Dispatcher, std::sync::Arc<conclave_store::SqliteStore>) {
    let store = std::sync::Arc::new(conclave_store::SqliteStore::open(&path.join("runs.db")).expect("a store"));
    let env = |name: &str| match name {
        "CONCLAVE_GITHUB_TOKEN" => Some("ghs_rotation".to_string()),
        "CONCLAVE_GITHUB_REPOSITORY" => Some(REPOSITORY.to_string()),
        _ => None,
    };
    let auth = conclave_server::forge_app::ForgeAuth::from_env(&env).expect("credentials");
    let workspace = conclave_server::Workspace::new(
        path.join("conclaves"),
        conclave_schema::SchemaCatalog::with_roots(vec![]),
        conclave_core::ProviderRegistry::default(),
    );
    let mirrors = conclave_server::mirrors::Mirrors::new(path.join("mirrors"));
    let service = conclave_server::forge_service::ForgeService::new(auth, mirrors, workspace);
    let placeholder = serde_json::from_str(conclave_review::pipeline::BUILTIN_REVIEW).expect("the built-in review");
    let queue: std::sync::Arc<dyn conclave_core::RunQueue> = store.clone();
    let dispatcher =
        conclave_server::forge_service::Dispatcher::new(queue, service, placeholder, Default::default()).batch(batch);
    (dispatcher, store)
}

#[tokio::test]
async fn more_requests_with_reviews_under_way_than_a_pass_reads_all_get_their_reviews_queued() {
    use conclave_shared::delivery::{Asks, Command as Asked, Delivery, DeliveryEvent, Forge as DeliveryForge};
    let dir = tempfile::tempdir().expect("tempdir");
    let (dispatcher, store) = dispatcher(dir.path(), 3);
    for n in 1..=10u64 {
        let mut delivery = Delivery::received(DeliveryForge::Github, &format!("d-{n}"), DeliveryEvent::PullRequest, n);
        delivery.repository = Some(REPOSITORY.into());
        delivery.number = Some(n);
        delivery.head_sha = Some(format!("{n:040x}"));
        delivery.asks = Asks::Command(Asked::Review { full: false });
        assert!(store.put_delivery(&delivery).await.expect("kept"));
    }
    // No worker runs: every review stays queued, and each pass reads 3 busy requests.
    for _ in 0..10 {
        dispatcher.pass().await.expect("a pass");
    }
    for n in 1..=10u64 {
        let reviews = store.pull_request(DeliveryForge::Github, REPOSITORY, n).await.expect("read").expect("a record");
        assert!(reviews.run.is_some(), "acme/app#{n} has its review queued: {reviews:?}");
    }
    assert!(store.pending_deliveries(100).await.expect("pending").is_empty());
}
