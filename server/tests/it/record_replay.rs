//! Recording provider calls and replaying them (`--record DIR`, `--replay DIR`): a
//! review through the fake Anthropic server recorded, then replayed with every
//! provider pointing at a closed port and no key, gives the same report; a call with
//! no recording fails with exit 2, naming the node and the hash.

use conclave_testkit::FakeServer;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

use crate::review_e2e::{fixture_workspace, review, routes};

/// A loopback URL nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// `conclave SUBCOMMAND ARGS` in `workdir` with every provider's URL on a closed port
/// and no keys (nor `CI`), its runs in `workdir/offline.db`.
pub(crate) fn offline(workdir: &Path, subcommand: &str, args: &[String]) -> Output {
    let closed = closed_port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_conclave"));
    command.arg(subcommand).args(args).current_dir(workdir).env("CONCLAVE_DB", workdir.join("offline.db"));
    command.env("CONCLAVE_CONFIG_DIR", workdir.join("config"));
    command.env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools());
    for url in ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OLLAMA_HOST", "OLLAMA_BASE_URL"] {
        command.env(url, &closed);
    }
    for key in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CONCLAVE_LOCAL_MODEL", "CI"] {
        command.env_remove(key);
    }
    command.output().expect("conclave runs")
}

/// The report without what differs from run to run: run ids and times.
fn steady(report: &Value) -> Value {
    let run_id = report["run_id"].as_str().unwrap_or_default().to_string();
    let mut text = report.to_string();
    if !run_id.is_empty() {
        text = text.replace(&run_id, "<run>");
    }
    let mut value: Value = serde_json::from_str(&text).expect("json");
    strip_times(&mut value);
    value
}

fn strip_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key.ends_with("_at") || key.ends_with("_ms") || key == "duration" {
                    *v = Value::Null;
                } else {
                    strip_times(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_times),
        _ => {}
    }
}

#[tokio::test]
async fn a_recorded_review_replays_to_the_same_report_without_a_connection_and_a_missing_call_is_named() {
    let (_dir, repo, workdir) = fixture_workspace();
    let server = FakeServer::start_routed(routes()).await;
    let recordings = workdir.join("recordings");
    let (recorded, replayed) = (workdir.join("recorded.json"), workdir.join("replayed.json"));
    let common = |out: &Path| {
        vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()]
            .into_iter()
            .chain(["--output-file".to_string(), out.display().to_string()])
            .collect::<Vec<String>>()
    };
    let mut args = common(&recorded);
    args.extend(["--record".to_string(), recordings.display().to_string()]);
    let out = review(&workdir, &server, args).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let calls = server.requests().len();
    let files: Vec<_> = std::fs::read_dir(&recordings).expect("recordings").flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), calls, "one recording per distinct provider call");
    let one: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).expect("read")).expect("json");
    assert_eq!(one["format"], 1);
    assert_eq!(one["provider"], "anthropic");
    assert_eq!(files[0].file_stem().and_then(|s| s.to_str()), one["hash"].as_str(), "named by the request's hash");
    assert!(one["response"]["stream"].as_array().is_some_and(|s| !s.is_empty()), "the stream is kept");
    assert!(one["response"]["usage"]["input_tokens"].is_u64());
    let text = std::fs::read_to_string(&files[0]).expect("read");
    assert!(!text.contains("sk-ant-test"), "no key in a recording");
    assert!(!text.contains(&repo.display().to_string()), "the checkout's path is $WORKDIR: {text:.400}");

    let mut args = common(&replayed);
    args.extend(["--replay".to_string(), recordings.display().to_string()]);
    let out = offline(&workdir, "review", &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.requests().len(), calls, "the replay asked the server nothing");
    let read = |p: &Path| serde_json::from_str::<Value>(&std::fs::read_to_string(p).expect("report")).expect("json");
    let (a, b) = (read(&recorded), read(&replayed));
    assert_ne!(a["run_id"], b["run_id"]);
    assert_eq!(steady(&a), steady(&b), "the same report apart from run ids and times");

    // One recording gone: the replay fails naming the node and the missing hash.
    let writer = files
        .iter()
        .find(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("You are the Writer")))
        .expect("the Writer's call was recorded");
    let hash = writer.file_stem().and_then(|s| s.to_str()).expect("name").to_string();
    std::fs::remove_file(writer).expect("remove");
    let out = offline(&workdir, "review", &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("node `writer`") && stderr.contains(&hash), "{stderr}");
    assert!(stderr.contains("--record"), "says how to fix it: {stderr}");
}
