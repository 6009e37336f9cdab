//! A review through the HTTP API and its twin on the command line, side by side:
//! `since`, `repository_key` and `no_cache` in `POST /api/runs` behave as
//! `--since`, `--repository-key` and `--no-cache` do. Each side is the real binary
//! (`conclave review`, and `conclave serve` with its embedded worker), with a run
//! store of its own and one fake LLM between them; the test reviews the same
//! repository through both and compares what they reported and what they asked the
//! model for. Their refusals of bad values match too.

use conclave_core::{RunStore, StoredDismissal};
use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Reply, Route, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::mcp_server::{Served, serve};
use crate::review_e2e::{TRAVERSAL, findings, fixture_repo};

const TOKEN: &str = "twins-token-4471";

/// The repository, a working directory for each side, the fake LLM and the server.
struct Twins {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    cli: PathBuf,
    api: PathBuf,
    llm: FakeServer,
    served: Served,
}

/// What one review reported, and how many calls it made of the model.
struct Reviewed {
    report: Value,
    calls: usize,
    /// The reviewers' request bodies (not the Writer's), as text.
    asked: Vec<String>,
}

/// The light review conclave without tools (each agent answers in one call), every
/// agent cached, as `twin-review` in `workdir`'s catalog.
fn write_conclave(workdir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conclaves/light-code-review.conclave.json");
    let mut conclave: Value = serde_json::from_str(&std::fs::read_to_string(source).expect("read")).expect("json");
    conclave["id"] = json!("twin-review");
    for node in conclave["nodes"].as_array_mut().expect("nodes") {
        if let Some(agent) = node.get_mut("agent").and_then(Value::as_object_mut) {
            agent.remove("tools");
            agent.insert("cache".into(), json!(true));
        }
    }
    std::fs::create_dir_all(workdir.join("conclaves")).expect("mkdir");
    let text = serde_json::to_string_pretty(&conclave).expect("json");
    std::fs::write(workdir.join("conclaves/twin-review.conclave.json"), text).expect("write");
}

/// The Writer's answer reporting the traversal.
fn traversal() -> Reply {
    let item = json!([{"severity": "blocker", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL,
                       "raisedBy": "security", "stance": "concern"}]);
    Vendor::Anthropic.answer(&findings(item, [1, 0, 0, 0]))
}

/// The Writer's answer on the commit that adds `src/limits.rs`.
fn limit() -> Reply {
    let item = json!([{"severity": "minor", "file": "src/limits.rs", "line": 3, "raisedBy": "correctness",
                       "description": "A 1 MiB cap is below the sizes the web form allows.", "stance": "concern"}]);
    Vendor::Anthropic.answer(&findings(item, [0, 0, 1, 0]))
}

/// Reviewers that find nothing, and a Writer answering `writer` in turn (the last
/// one again and again).
fn routes(writer: Vec<Reply>) -> Vec<Route> {
    let a = Vendor::Anthropic;
    let mut routes: Vec<Route> = ["security", "correctness", "conventions"]
        .iter()
        .map(|lane| Route {
            marker: format!("You are the {lane} reviewer"),
            replies: vec![a.answer(&findings(json!([]), [0, 0, 0, 0]))],
        })
        .collect();
    routes.push(Route { marker: "You are the Writer".into(), replies: writer });
    routes
}

fn env(workdir: &Path, llm: &FakeServer) -> Vec<(String, String)> {
    vec![
        ("CONCLAVE_DB".into(), workdir.join("runs.db").display().to_string()),
        ("CONCLAVE_CONFIG_DIR".into(), workdir.join("config").display().to_string()),
        ("ANTHROPIC_BASE_URL".into(), llm.base.clone()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
        ("CONCLAVE_PROMPT_CACHE".into(), "off".into()),
    ]
}

async fn twins(writer: Vec<Reply>) -> Twins {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture_repo(dir.path());
    let (cli, api) = (dir.path().join("cli"), dir.path().join("api"));
    for workdir in [&cli, &api] {
        write_conclave(workdir);
    }
    let llm = FakeServer::start_routed(routes(writer)).await;
    let served = serve(&api, &env(&api, &llm), TOKEN, dir.path());
    Twins { _dir: dir, repo, cli, api, llm, served }
}

impl Twins {
    /// `conclave review REPO --base main --conclave twin-review ARGS` in the CLI's
    /// workdir; no analyzer lane runs on either side, so the agents alone report.
    async fn cli(&self, args: &[&str]) -> Reviewed {
        let report = self.cli.join("review.json");
        let _ = std::fs::remove_file(&report);
        let mut command = Command::new(env!("CARGO_BIN_EXE_conclave"));
        command.arg("review").arg(&self.repo).args([
            "--base",
            "main",
            "--conclave",
            "twin-review",
            "--analyzers",
            "none",
        ]);
        command.args(["--format", "json"]);
        command.arg("--output-file").arg(&report).args(args).current_dir(&self.cli).envs(env(&self.cli, &self.llm));
        let before = self.llm.requests().len();
        let out = tokio::task::spawn_blocking(move || command.output().expect("conclave runs")).await.expect("joined");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(matches!(out.status.code(), Some(0 | 5)), "conclave review {args:?}: {stderr}");
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("a report")).expect("json");
        self.reviewed(report, before)
    }

    /// `POST /api/runs` reviewing the repository against `main` with `fields` added,
    /// then its stored JSON report once the embedded worker has finished it.
    async fn api(&self, fields: Value) -> Reviewed {
        let before = self.llm.requests().len();
        let (status, started) = self.post(fields).await;
        assert_eq!(status, 202, "{started}");
        let id = started["run_id"].as_str().expect("a run id").to_string();
        let url = format!("http://127.0.0.1:{}/api/runs/{id}/report?format=json", self.served.port);
        let deadline = Instant::now() + Duration::from_secs(120);
        let report = loop {
            let response = reqwest::Client::new().get(&url).bearer_auth(TOKEN).send().await.expect("GET");
            if response.status() == 200 {
                break serde_json::from_str(&response.text().await.expect("text")).expect("json");
            }
            assert!(Instant::now() < deadline, "run {id} stored no report");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        self.reviewed(report, before)
    }

    /// The status and body of `POST /api/runs` for a review with `fields` added.
    async fn post(&self, fields: Value) -> (u16, Value) {
        let mut review = json!({"repository": self.repo.display().to_string(), "base": "main", "analyzers": []});
        for (key, value) in fields.as_object().into_iter().flatten() {
            review[key] = value.clone();
        }
        let url = format!("http://127.0.0.1:{}/api/runs", self.served.port);
        let body = json!({"conclave_id": "twin-review", "review": review});
        let response = reqwest::Client::new().post(url).bearer_auth(TOKEN).json(&body).send().await.expect("POST");
        let status = response.status().as_u16();
        (status, serde_json::from_str(&response.text().await.expect("text")).unwrap_or(Value::Null))
    }

    fn reviewed(&self, report: Value, before: usize) -> Reviewed {
        let requests = self.llm.requests();
        let asked = requests[before..]
            .iter()
            .map(|r| r.body.to_string())
            .filter(|body| !body.contains("You are the Writer"))
            .collect();
        Reviewed { report, calls: requests.len() - before, asked }
    }

    /// Keeps a dismissal of `fingerprint` under `key` in both sides' run stores.
    async fn dismiss_in_both(&self, key: &str, fingerprint: &str) {
        for workdir in [&self.cli, &self.api] {
            let store = conclave_store::SqliteStore::open(&workdir.join("runs.db")).expect("the store");
            let dismissal = StoredDismissal {
                repository: key.into(),
                fingerprint: fingerprint.into(),
                reason: "the root is a fresh temporary directory".into(),
                author: "@ann".into(),
                created_at_ms: 1,
                source: "the test".into(),
            };
            assert!(store.put_dismissal(&dismissal).await.expect("stored"));
        }
    }
}

/// Each finding's file, line, baseline state and dismissal author, sorted.
fn states(reviewed: &Reviewed) -> Vec<(String, u64, String, String)> {
    let list = reviewed.report["review"]["findings"].as_array().cloned().unwrap_or_default();
    let mut states: Vec<_> = list
        .iter()
        .map(|f| {
            let text = |v: &Value| v.as_str().unwrap_or("").to_string();
            (text(&f["file"]), f["line"].as_u64().unwrap_or(0), text(&f["baseline"]), text(&f["dismissed"]["author"]))
        })
        .collect();
    states.sort();
    states
}

/// The scope a report records, without the earlier run's id (each side has its own).
fn scope(reviewed: &Reviewed) -> Value {
    let mut scope = reviewed.report["review"]["scope"].clone();
    if let Some(incremental) = scope.get_mut("incremental").and_then(Value::as_object_mut) {
        assert!(incremental.remove("earlier_run").is_some_and(|run| run.is_string()), "an earlier run: {scope}");
    }
    scope
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn since_reviews_only_the_new_commit_through_the_api_as_on_the_command_line() {
    // Each side's first review finds the traversal, and its review of the new commit a limit.
    let twins = twins(vec![traversal(), traversal(), limit()]).await;
    let (cli, api) = (twins.cli(&[]).await, twins.api(json!({})).await);
    assert_eq!(states(&cli), states(&api), "the first reviews agree");
    assert_eq!(states(&cli).len(), 1, "{}", cli.report);

    std::fs::write(twins.repo.join("src/limits.rs"), "//! Limits.\n\npub const MAX_UPLOAD: u64 = 1 << 20;\n")
        .expect("write");
    git(&twins.repo, &["add", "."]);
    git(&twins.repo, &["commit", "-q", "-m", "limits"]);
    let (cli, api) = (twins.cli(&["--since", "auto"]).await, twins.api(json!({"since": "auto"})).await);
    assert_eq!(scope(&cli), scope(&api));
    let subject = |s: &Value| s["incremental"]["now"]["listed"][0]["subject"].clone();
    assert_eq!(subject(&scope(&api)), "limits", "{}", api.report["review"]["scope"]);
    assert_eq!(states(&cli), states(&api), "the earlier finding is carried on both sides");
    assert!(states(&api).iter().any(|(file, _, state, _)| file == "src/upload.rs" && state == "unchanged"));
    for side in [&cli, &api] {
        assert!(!side.asked.is_empty(), "the reviewers were asked");
        for body in &side.asked {
            assert!(body.contains("src/limits.rs"), "the new commit's file is reviewed");
            assert!(!body.contains("src/upload.rs (modified)"), "the earlier commits are not sent again");
        }
    }
    assert_eq!(cli.calls, api.calls);

    // A commit that is not one is refused alike; `since` with `full` is refused.
    let hostile = "--output=/tmp/owned";
    let (status, body) = twins.post(json!({"since": hostile})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["path"], "/review/since", "{body}");
    let message = body["error"]["message"].as_str().expect("a message").to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .arg("review")
        .arg(&twins.repo)
        .args(["--base", "main", &format!("--since={hostile}")])
        .current_dir(&twins.cli)
        .envs(env(&twins.cli, &twins.llm))
        .output()
        .expect("conclave runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{message} (--since)")), "{message}");
    let (status, body) = twins.post(json!({"since": "auto", "full": true})).await;
    assert_eq!((status, &body["error"]["path"]), (422, &json!("/review/full")), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repository_key_and_no_cache_act_through_the_api_as_on_the_command_line() {
    let twins = twins(vec![traversal()]).await;
    let (cli, api) = (twins.cli(&[]).await, twins.api(json!({})).await);
    assert_eq!((cli.calls, api.calls), (4, 4), "three reviewers and the Writer on each side");
    let fingerprint = cli.report["review"]["findings"][0]["fingerprint"].as_str().expect("a fingerprint").to_string();
    assert_eq!(api.report["review"]["findings"][0]["fingerprint"], fingerprint.as_str());
    twins.dismiss_in_both("acme/uploads", &fingerprint).await;

    // The same review again: every answer comes from the cache, on both sides.
    let again = (twins.cli(&[]).await, twins.api(json!({})).await);
    assert_eq!((again.0.calls, again.1.calls), (0, 0), "every answer came from the cache");
    assert_eq!(states(&again.1)[0].3, "", "no key, no stored dismissals: {}", again.1.report);

    // The key names whose stored dismissals apply.
    let keyed = (
        twins.cli(&["--repository-key", "acme/uploads"]).await,
        twins.api(json!({"repository_key": "acme/uploads"})).await,
    );
    assert_eq!(states(&keyed.0), states(&keyed.1));
    assert_eq!(states(&keyed.1)[0].3, "@ann", "dismissed by the stored reply: {}", keyed.1.report);
    assert_eq!(keyed.0.calls, keyed.1.calls);
    let other = (
        twins.cli(&["--repository-key", "acme/other"]).await,
        twins.api(json!({"repository_key": "acme/other"})).await,
    );
    assert_eq!(states(&other.0), states(&other.1));
    assert_eq!(states(&other.1)[0].3, "", "another repository's dismissals do not apply");

    // Without the cache, every agent is asked again on both sides.
    let fresh = (twins.cli(&["--no-cache"]).await, twins.api(json!({"no_cache": true})).await);
    assert_eq!((fresh.0.calls, fresh.1.calls), (4, 4));
    assert_eq!(states(&fresh.0), states(&fresh.1));

    let (status, body) = twins.post(json!({"repository_key": "acme/up loads"})).await;
    assert_eq!((status, &body["error"]["path"]), (422, &json!("/review/repository_key")), "{body}");
    let message = body["error"]["message"].as_str().expect("a message").to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .arg("review")
        .arg(&twins.repo)
        .args(["--repository-key", "acme/up loads"])
        .current_dir(&twins.cli)
        .output()
        .expect("conclave runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&message), "{message}");
}
