//! `conclave eval` with the real binary: a dataset whose cases are a git repository,
//! a git bundle and a directory with `base/` and `change.patch`, reviewed through the
//! fake Anthropic server and scored; broken datasets refused with where and why.

use conclave_testkit::{FakeServer, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::review_e2e::{TRAVERSAL, fixture_repo, routes};

/// `conclave eval ARGS` in `workdir` against `server` (off the async runtime).
pub(crate) async fn eval(workdir: &Path, base_url: &str, args: Vec<String>) -> Output {
    let (workdir, base) = (workdir.to_path_buf(), base_url.to_string());
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("eval")
            .args(&args)
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
            .env("ANTHROPIC_BASE_URL", base)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env_remove("OPENAI_API_KEY")
            .output()
            .expect("conclave runs")
    })
    .await
    .expect("joined")
}

/// A dataset of the same change three ways, each with the path traversal as its one
/// golden issue.
fn three_ways(dir: &Path) -> PathBuf {
    let dataset = dir.join("dataset");
    std::fs::create_dir_all(dataset.join("patch/base/src")).expect("mkdir");
    let repo = fixture_repo(&dataset);
    let bundle = dataset.join("repo.bundle");
    git(&repo, &["bundle", "create", "-q", &bundle.display().to_string(), "--all"]);
    for file in ["src/upload.rs", "README.md"] {
        let out =
            Command::new("git").arg("-C").arg(&repo).args(["show", &format!("main:{file}")]).output().expect("git");
        std::fs::write(dataset.join("patch/base").join(file), out.stdout).expect("write");
    }
    let patch = Command::new("git").arg("-C").arg(&repo).args(["diff", "main", "feature"]).output().expect("git");
    std::fs::write(dataset.join("patch/change.patch"), patch.stdout).expect("write");
    let issues = json!([{"file": "src/upload.rs", "line": 8, "severity": "blocker",
        "description": "Path traversal: the client-supplied name is joined to the upload root without rejecting `..` or absolute paths."}]);
    let cases = [
        json!({"id": "as-repository", "repo": "repo", "base": "main", "head": "feature", "issues": issues}),
        json!({"id": "as-bundle", "repo": "repo.bundle", "base": "main", "head": "feature", "issues": issues}),
        json!({"id": "as-patch", "repo": "patch", "issues": issues}),
    ];
    let lines: Vec<String> = cases.iter().map(Value::to_string).collect();
    std::fs::write(dataset.join("cases.jsonl"), lines.join("\n") + "\n").expect("write");
    dataset
}

#[tokio::test]
async fn cases_from_a_repository_a_bundle_and_a_patch_are_reviewed_kept_and_scored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = three_ways(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let server = FakeServer::start_routed(routes()).await;
    let summary_file = workdir.join("summary.json");
    let args = [dataset.display().to_string(), "--format".into(), "json".into(), "--jobs".into(), "2".into()]
        .into_iter()
        .chain(["--output-file".to_string(), summary_file.display().to_string()])
        .collect();
    let out = eval(&workdir, &server.base, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&summary_file).expect("summary")).expect("json");
    assert_eq!(summary["cases"], 3);
    let ids: Vec<&str> =
        summary["cases_detail"].as_array().expect("cases").iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["as-repository", "as-bundle", "as-patch"], "in the dataset's order whatever --jobs");
    for case in summary["cases_detail"].as_array().expect("cases") {
        assert_eq!(case["status"], "succeeded", "{case}");
        assert_eq!(case["matched"][0]["finding"]["description"], TRAVERSAL, "the Writer's blocker matches");
        assert_eq!(case["matched"][0]["issue"]["line"], 8);
        assert_eq!(case["extra"].as_array().map(Vec::len), Some(1), "the non-atomic write is not a golden issue");
    }
    assert_eq!(summary["counts"], json!({"true_positives": 3, "false_positives": 3, "false_negatives": 0}));
    assert_eq!((summary["precision"].as_f64(), summary["recall"].as_f64()), (Some(0.5), Some(1.0)));
    let nodes: Vec<&str> =
        summary["by_node"].as_array().expect("nodes").iter().filter_map(|n| n["node"].as_str()).collect();
    assert_eq!(nodes, ["security", "correctness", "conventions", "writer"]);
    assert_eq!(summary["by_node"][0]["recall"], 1.0, "security raised the traversal");
    assert_eq!(summary["by_node"][2]["findings"], 0, "conventions only approved");
    assert!(summary["tokens"]["input"].as_u64().is_some_and(|t| t > 0));

    // Each review is kept in the store like any other.
    let listed = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["runs", "list", "--json"])
        .current_dir(&workdir)
        .env("CONCLAVE_DB", workdir.join("runs.db"))
        .output()
        .expect("runs list");
    let runs: Value = serde_json::from_slice(&listed.stdout).expect("json");
    for case in summary["cases_detail"].as_array().expect("cases") {
        assert!(runs.as_array().expect("runs").iter().any(|r| r["id"] == case["run_id"]), "{case}");
    }
}

#[tokio::test]
async fn a_broken_dataset_is_refused_saying_where_and_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = dir.path().join("bad");
    std::fs::create_dir_all(&dataset).expect("mkdir");
    let cases = |text: &str| std::fs::write(dataset.join("cases.jsonl"), text).expect("write");
    let workdir = dir.path().to_path_buf();
    let run = |dataset: &Path| {
        let (workdir, dataset) = (workdir.clone(), dataset.display().to_string());
        async move {
            let out = eval(&workdir, "http://127.0.0.1:9", vec![dataset]).await;
            (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
        }
    };
    let (code, stderr) = run(&dir.path().join("nowhere")).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cases.jsonl"), "{stderr}");

    cases("{\"id\": \"a\", \"repo\": \"../../etc\", \"issues\": []}\n");
    let (code, stderr) = run(&dataset).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cases.jsonl:1 (/repo)") && stderr.contains("leaves the dataset"), "{stderr}");

    cases(
        "{\"id\": \"a\", \"repo\": \"r\", \"issues\": []}\n{\"id\": \"b\", \"repo\": \"r\", \"issues\": [{\"file\": \"x\"}]}\n",
    );
    let (code, stderr) = run(&dataset).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cases.jsonl:2") && stderr.contains("missing field `line`"), "{stderr}");

    cases("{\"id\": \"a\", \"repo\": \"missing\", \"issues\": []}\n");
    let (code, stderr) = run(&dataset).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("case `a`") && stderr.contains("not a git repository"), "{stderr}");
}

/// A judge conclave on Anthropic whose agent answers `{"same": bool}`.
fn judge_conclave(path: &Path) {
    let conclave = json!({
        "version": 1, "id": "judge", "name": "Judge", "description": "Says whether a finding is a golden issue.",
        "nodes": [
            {"id": "pair", "kind": "trigger", "label": "Pair", "position": {"x": 0, "y": 0}},
            {"id": "judge", "kind": "agent", "label": "Judge", "position": {"x": 200, "y": 0}, "agent": {
                "provider": "anthropic", "model": "claude-sonnet-4-5",
                "system_prompt": "You are the judge of an eval: is the finding the golden issue?",
                "output_schema": {"type": "object", "properties": {"same": {"type": "boolean"}}, "required": ["same"]}}},
            {"id": "verdict", "kind": "output", "label": "Verdict", "position": {"x": 400, "y": 0}}
        ],
        "edges": [{"from": "pair", "to": "judge"}, {"from": "judge", "to": "verdict"}]
    });
    std::fs::write(path, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
}

#[tokio::test]
async fn a_judge_conclave_decides_each_candidate_pair_instead_of_the_wording_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = three_ways(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let judge = workdir.join("judge.conclave.json");
    judge_conclave(&judge);
    // Per case the candidates are, in order, the Writer's blocker (which the security
    // reviewer worded the same, so it is asked about once) and minor finding, then the
    // correctness reviewer's (approvals are not asked about): the judge calls the
    // blocker the issue and the others not.
    let a = conclave_testkit::wire::Vendor::Anthropic;
    let verdicts = (0..9).map(|k| a.answer(&json!({"same": k % 3 == 0}).to_string())).collect();
    let mut all = vec![conclave_testkit::Route { marker: "You are the judge".into(), replies: verdicts }];
    all.extend(routes());
    let server = FakeServer::start_routed(all).await;
    let summary_file = workdir.join("summary.json");
    let args =
        [dataset.display().to_string(), "--judge".into(), judge.display().to_string(), "--jobs".into(), "1".into()]
            .into_iter()
            .chain(["--format", "json", "--output-file"].map(String::from))
            .chain([summary_file.display().to_string()])
            .collect();
    let out = eval(&workdir, &server.base, args).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&summary_file).expect("summary")).expect("json");
    assert_eq!(summary["matching"]["judge"], "judge");
    assert_eq!(summary["matching"]["threshold"], Value::Null);
    let judged = server.requests().iter().filter(|r| r.body.to_string().contains("You are the judge")).count();
    assert_eq!(judged, 9, "one judge run per distinct candidate pair");
    assert_eq!(summary["counts"], json!({"true_positives": 3, "false_positives": 3, "false_negatives": 0}));
    for case in summary["cases_detail"].as_array().expect("cases") {
        assert_eq!(case["matched"][0]["similarity"], 1.0, "a judged match scores 1: {case}");
        assert_eq!(case["matched"][0]["finding"]["line"], 8);
    }
}

/// A dataset of `n` copies of the same case: their agents' first calls are the same
/// requests, made at once under `--jobs`.
fn copies(dir: &Path, n: usize) -> PathBuf {
    let dataset = dir.join("copies");
    std::fs::create_dir_all(&dataset).expect("mkdir");
    fixture_repo(&dataset);
    let issues = json!([{"file": "src/upload.rs", "line": 8, "severity": "blocker", "description": TRAVERSAL}]);
    let lines: Vec<String> = (1..=n)
        .map(
            |i| json!({"id": format!("copy-{i}"), "repo": "repo", "base": "main", "head": "feature", "issues": issues}),
        )
        .map(|case| case.to_string())
        .collect();
    std::fs::write(dataset.join("cases.jsonl"), lines.join("\n") + "\n").expect("write");
    dataset
}

#[tokio::test]
async fn identical_calls_recorded_at_once_all_record_and_replay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = copies(dir.path(), 4);
    let (workdir, recordings) = (dir.path().join("work"), dir.path().join("recordings"));
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let server = FakeServer::start_routed(routes()).await;
    let args = |mode: &str, summary: &str| -> Vec<String> {
        let mut args = vec![dataset.display().to_string(), "--jobs".into(), "4".into(), "--format".into()];
        args.extend(["json".into(), "--output-file".into(), workdir.join(summary).display().to_string()]);
        args.extend([mode.to_string(), recordings.display().to_string()]);
        args
    };
    let succeeded = |summary: &str| -> Vec<String> {
        let text = std::fs::read_to_string(workdir.join(summary)).expect("a summary");
        let summary: Value = serde_json::from_str(&text).expect("json");
        let cases = summary["cases_detail"].as_array().cloned().unwrap_or_default();
        cases
            .iter()
            .map(|c| format!("{} {}", c["id"].as_str().unwrap_or(""), c["status"].as_str().unwrap_or("")))
            .collect()
    };
    let all = (1..=4).map(|i| format!("copy-{i} succeeded")).collect::<Vec<_>>();
    let out = eval(&workdir, &server.base, args("--record", "recorded.json")).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(succeeded("recorded.json"), all, "every copy recorded its calls");
    let names: Vec<String> = std::fs::read_dir(&recordings)
        .expect("the recordings")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".json") && !n.starts_with('.')), "no temporary file is left: {names:?}");

    let replayed = crate::record_replay::offline(&workdir, "eval", &args("--replay", "replayed.json"));
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(succeeded("replayed.json"), all, "every copy replays without a connection");
}
