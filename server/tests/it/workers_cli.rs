//! `conclave worker` processes sharing one SQLite file, with runs queued by `conclave
//! run --queue` and the agents on Anthropic faked over loopback: two workers run
//! every queued run exactly once, and when a worker is killed mid-run (SIGKILL) the
//! other resumes the run once its lease lapses, keeping what had succeeded, with no
//! event lost or repeated.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Reply, Route};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn agent(id: &str, prompt: &str) -> Value {
    json!({"id": id, "kind": "agent", "label": id, "position": {"x": 0, "y": 0},
           "agent": {"provider": "anthropic", "model": "claude-sonnet-4-5", "system_prompt": prompt}})
}

/// A workspace with `conclaves/pair.conclave.json`: trigger → first → second → output.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    let conclave = json!({
        "version": 1, "id": "pair", "name": "Pair",
        "nodes": [
            {"id": "in", "kind": "trigger", "label": "In", "position": {"x": 0, "y": 0}},
            agent("first", "You are the first agent."),
            agent("second", "You are the second agent."),
            {"id": "out", "kind": "output", "label": "Out", "position": {"x": 0, "y": 0}}
        ],
        "edges": [{"from": "in", "to": "first"}, {"from": "first", "to": "second"}, {"from": "second", "to": "out"}]
    });
    std::fs::write(dir.path().join("conclaves/pair.conclave.json"), conclave.to_string()).expect("write");
    dir
}

fn conclave(dir: &Path, server: &FakeServer) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
    cmd.current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", dir.join("config"))
        .env("ANTHROPIC_BASE_URL", &server.base)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("CI");
    cmd
}

fn queue_run(dir: &Path, server: &FakeServer, input: &str) -> String {
    let out: Output = conclave(dir, server).args(["run", "pair", "--input", input, "--queue"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn worker(dir: &Path, server: &FakeServer, lease_secs: &str) -> Child {
    conclave(dir, server)
        .args(["worker", "--lease-secs", lease_secs])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("a worker starts")
}

fn show(dir: &Path, server: &FakeServer, run_id: &str) -> Value {
    let out = conclave(dir, server).args(["runs", "show", run_id, "--json"]).output().expect("runs");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Waits (off the async runtime, so the fake keeps serving) until `run_id` ends.
async fn ended(dir: &Path, server: &FakeServer, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let shown = tokio::task::block_in_place(|| show(dir, server, run_id));
        let status = shown["run"]["status"].as_str().unwrap_or("").to_string();
        if !["", "queued", "running"].contains(&status.as_str()) {
            return shown;
        }
        assert!(Instant::now() < deadline, "run {run_id} did not end: {shown}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn routes(second: Vec<Reply>) -> Vec<Route> {
    vec![
        Route { marker: "You are the first agent.".into(), replies: vec![Vendor::Anthropic.answer("first done")] },
        Route { marker: "You are the second agent.".into(), replies: second },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_run_every_queued_run_exactly_once() {
    let dir = workspace();
    let server = FakeServer::start_routed(routes(vec![Vendor::Anthropic.answer("second done")])).await;
    let ids: Vec<String> = (0..6).map(|i| queue_run(dir.path(), &server, &format!("input-{i}"))).collect();
    let workers = [worker(dir.path(), &server, "10"), worker(dir.path(), &server, "10")];
    for id in &ids {
        let shown = ended(dir.path(), &server, id).await;
        assert_eq!(shown["run"]["status"], "succeeded", "{shown}");
    }
    workers.into_iter().for_each(stop);
    for i in 0..6 {
        let marker = format!("input-{i}");
        let calls = server.requests().iter().filter(|r| r.body.to_string().contains(&marker)).count();
        assert_eq!(calls, 2, "run {i}: each agent called once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_run_is_resumed_by_another_with_no_event_lost_or_repeated() {
    let dir = workspace();
    let slow = Reply::After { millis: 60_000, reply: Box::new(Vendor::Anthropic.answer("never")) };
    let server = FakeServer::start_routed(routes(vec![slow, Vendor::Anthropic.answer("second done")])).await;
    let id = queue_run(dir.path(), &server, "the one run");
    let doomed = worker(dir.path(), &server, "2");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !server.requests().iter().any(|r| r.body.to_string().contains("You are the second agent.")) {
        assert!(Instant::now() < deadline, "the first worker never reached the second agent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop(doomed);
    let survivor = worker(dir.path(), &server, "2");
    let shown = ended(dir.path(), &server, &id).await;
    stop(survivor);
    assert_eq!(shown["run"]["status"], "succeeded", "{shown}");
    let first_calls =
        server.requests().iter().filter(|r| r.body.to_string().contains("You are the first agent.")).count();
    assert_eq!(first_calls, 1, "the first agent had succeeded: its output is kept");
    let events = shown["events"].as_array().expect("events");
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "no event lost or repeated");
    assert!(events.iter().any(|e| e["type"] == "run_resumed"), "the run says it was resumed");
}

/// `conclave serve` on a free loopback port over the workspace's database; the
/// process and its token.
fn serve(dir: &Path, server: &FakeServer, extra: &[&str]) -> (Child, u16, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut child = conclave(dir, server)
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .args(extra)
        .env_remove("CONCLAVE_TOKEN")
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut banner = String::new();
    while !banner.contains("serving on") {
        banner.clear();
        assert!(std::io::BufRead::read_line(&mut stderr, &mut banner).expect("read") > 0, "serve printed no URL");
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let token = banner.split_once("#token=").and_then(|(_, t)| t.split_whitespace().next()).unwrap_or("").to_string();
    (child, port, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_to_a_server_stops_the_run_on_a_worker_process_and_servers_run_queued_runs() {
    let dir = workspace();
    let slow = Reply::After { millis: 60_000, reply: Box::new(Vendor::Anthropic.answer("never")) };
    let server = FakeServer::start_routed(routes(vec![slow, Vendor::Anthropic.answer("second done")])).await;
    let id = queue_run(dir.path(), &server, "to be cancelled");
    let worker = worker(dir.path(), &server, "30");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !server.requests().iter().any(|r| r.body.to_string().contains("You are the second agent.")) {
        assert!(Instant::now() < deadline, "the worker never reached the second agent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An API-only server (no embedded worker) on the same database.
    let (api, port, token) = serve(dir.path(), &server, &["--workers", "0"]);
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/api/runs/{id}/cancel"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status().as_u16(), 202, "{}", response.text().await.unwrap_or_default());
    let shown = ended(dir.path(), &server, &id).await;
    assert_eq!(shown["run"]["status"], "cancelled", "the worker stopped the run: {shown}");
    stop(worker);
    stop(api);

    // A server with its embedded worker runs what is queued.
    let (with_worker, _, _) = serve(dir.path(), &server, &[]);
    let next = queue_run(dir.path(), &server, "for the server");
    let shown = ended(dir.path(), &server, &next).await;
    stop(with_worker);
    assert_eq!(shown["run"]["status"], "succeeded", "{shown}");
}
