//! `conclave worker` processes sharing one SQLite file, with runs queued by `conclave
//! run --queue` and the agents on Anthropic faked over loopback: two workers run
//! every queued run exactly once, and when a worker is killed mid-run (SIGKILL) the
//! other resumes the run once its lease lapses, keeping what had succeeded, with no
//! event lost or repeated (on a SQLite file and on PostgreSQL). On PostgreSQL, a run worked by one server streams through
//! another (LISTEN/NOTIFY), resumable with `Last-Event-ID`.

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
pub(crate) fn workspace() -> tempfile::TempDir {
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

/// Makes the workspace's processes share the database at `url` instead of its
/// SQLite file.
fn use_database(dir: &Path, url: &str) {
    std::fs::write(dir.join("database-url"), url).expect("write");
}

pub(crate) fn conclave(dir: &Path, server: &FakeServer) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
    let db =
        std::fs::read_to_string(dir.join("database-url")).unwrap_or_else(|_| dir.join("runs.db").display().to_string());
    cmd.current_dir(dir)
        .env("CONCLAVE_DB", db)
        .env("CONCLAVE_CONFIG_DIR", dir.join("config"))
        .env("ANTHROPIC_BASE_URL", &server.base)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
        .env_remove("CONCLAVE_TOKEN")
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

pub(crate) fn stop(mut child: Child) {
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
    a_killed_worker_s_run_is_resumed(workspace()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_killed_worker_s_run_is_resumed_by_another_with_no_event_lost_or_repeated() {
    let dir = workspace();
    use_database(dir.path(), &fresh_postgres());
    a_killed_worker_s_run_is_resumed(dir).await;
}

/// SIGKILLs a worker while its run's second agent is answering, then starts another
/// worker on the same database: the run must end resumed there, with the first
/// agent's output kept and every event stored once, in order.
async fn a_killed_worker_s_run_is_resumed(dir: tempfile::TempDir) {
    let slow = Reply::After { millis: 60_000, reply: Box::new(Vendor::Anthropic.answer("never")) };
    let server = FakeServer::start_routed(routes(vec![slow, Vendor::Anthropic.answer("second done")])).await;
    let id = queue_run(dir.path(), &server, "the one run");
    let doomed = worker(dir.path(), &server, "2");
    // The kill comes once the second agent is answering and the first agent's end is
    // stored: the store holds a prefix of the run's events, and an end that was still
    // on its way to the store when the process died is run again on resuming.
    let deadline = Instant::now() + Duration::from_secs(60);
    let first_stored = |shown: &Value| {
        shown["events"]
            .as_array()
            .is_some_and(|events| events.iter().any(|e| e["type"] == "node_completed" && e["node_id"] == "first"))
    };
    while !server.requests().iter().any(|r| r.body.to_string().contains("You are the second agent."))
        || !first_stored(&tokio::task::block_in_place(|| show(dir.path(), &server, &id)))
    {
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
    serve_with(conclave(dir, server), extra)
}

/// `conclave serve` from `cmd` (its directory and environment) on a free loopback port;
/// its reviews find no linter in the tool directory unless `cmd` names one.
pub(crate) fn serve_with(mut cmd: Command, extra: &[&str]) -> (Child, u16, String) {
    if !cmd.get_envs().any(|(name, _)| name == "CONCLAVE_TOOLS_DIR") {
        cmd.env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools());
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut child = cmd
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .args(extra)
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

/// A fresh database on the test PostgreSQL server (`CONCLAVE_TEST_POSTGRES_URL`, set
/// by `scripts/test.sh`), made with `psql`; its URL.
pub(crate) fn fresh_postgres() -> String {
    let admin = std::env::var("CONCLAVE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("CONCLAVE_TEST_POSTGRES_URL is not set: run `bash scripts/test.sh`, or start one with `bash scripts/postgres.sh start DIR`")
    });
    let name = format!("conclave_cli_{}_{}", std::process::id(), uuid_suffix());
    let out =
        Command::new("psql").args([&admin, "-v", "ON_ERROR_STOP=1", "-c", &format!("CREATE DATABASE {name}")]).output();
    let out = out.expect("psql runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (base, query) = admin.split_once('?').map_or((admin.as_str(), String::new()), |(b, q)| (b, format!("?{q}")));
    let cut = base.rfind('/').filter(|&i| i > base.find("://").map_or(0, |s| s + 2)).unwrap_or(base.len());
    format!("{}/{name}{query}", &base[..cut])
}

fn uuid_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_worked_through_one_server_streams_through_another_on_postgres() {
    let dir = workspace();
    let db = fresh_postgres();
    let slow = Reply::After { millis: 1_500, reply: Box::new(Vendor::Anthropic.answer("second done")) };
    let server = FakeServer::start_routed(routes(vec![slow])).await;
    let with_db = |mut cmd: Command| {
        cmd.env("CONCLAVE_DB", &db);
        cmd
    };
    let (a, _, _) = serve_with(with_db(conclave(dir.path(), &server)), &[]);
    let (b, port_b, token_b) = serve_with(with_db(conclave(dir.path(), &server)), &["--workers", "0"]);
    let out = with_db(conclave(dir.path(), &server)).args(["run", "pair", "--input", "streamed", "--queue"]).output();
    let out = out.expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let client = reqwest::Client::new();
    let events = |after: Option<&str>| {
        let mut request = client.get(format!("http://127.0.0.1:{port_b}/api/runs/{id}/events")).bearer_auth(&token_b);
        if let Some(after) = after {
            request = request.header("last-event-id", after);
        }
        request.send()
    };
    let body = events(None).await.expect("server B answers").text().await.expect("the stream ends");
    let seqs: Vec<u64> =
        body.lines().filter_map(|l| l.strip_prefix("id:")).filter_map(|s| s.trim().parse().ok()).collect();
    assert!(body.contains("event: run_finished") || body.contains("event:run_finished"), "{body}");
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "every event once, in order: {body}");
    let resumed = events(Some("3")).await.expect("answers").text().await.expect("ends");
    let after: Vec<u64> =
        resumed.lines().filter_map(|l| l.strip_prefix("id:")).filter_map(|s| s.trim().parse().ok()).collect();
    assert_eq!(after.first(), Some(&4), "Last-Event-ID resumes after it: {resumed}");
    stop(a);
    stop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_through_the_api_is_queued_and_streams_live_from_the_embedded_worker() {
    let dir = workspace();
    let server = FakeServer::start_routed(routes(vec![Vendor::Anthropic.answer("second done")])).await;
    let (serve, port, token) = serve(dir.path(), &server, &[]);
    let client = reqwest::Client::new();
    let started: Value = client
        .post(format!("http://127.0.0.1:{port}/api/runs"))
        .bearer_auth(&token)
        .json(&json!({"conclave_id": "pair", "input": "through the api"}))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("json");
    let id = started["run_id"].as_str().expect("a run id").to_string();
    let body = client
        .get(format!("http://127.0.0.1:{port}/api/runs/{id}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("events")
        .text()
        .await
        .expect("the stream ends");
    stop(serve);
    let seqs: Vec<u64> =
        body.lines().filter_map(|l| l.strip_prefix("id:")).filter_map(|s| s.trim().parse().ok()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{body}");
    assert!(body.contains("run_finished") && body.contains("second done"), "{body}");
    let shown = tokio::task::block_in_place(|| show(dir.path(), &server, &id));
    assert_eq!(shown["run"]["status"], "succeeded", "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_limit_of_two_holds_across_two_worker_processes() {
    let dir = workspace();
    let slow = |text: &str| Reply::After { millis: 300, reply: Box::new(Vendor::Anthropic.answer(text)) };
    let routes = vec![
        Route { marker: "You are the first agent.".into(), replies: vec![slow("first done")] },
        Route { marker: "You are the second agent.".into(), replies: vec![slow("second done")] },
    ];
    let server = FakeServer::start_routed(routes).await;
    let ids: Vec<String> = (0..8).map(|i| queue_run(dir.path(), &server, &format!("limited-{i}"))).collect();
    let limited = |mut child: Command| {
        child.env("CONCLAVE_PROVIDER_LIMITS", "anthropic=2");
        child.args(["worker", "--lease-secs", "10", "--runs", "4"]).stdout(Stdio::null()).stderr(Stdio::null());
        child.spawn().expect("a worker starts")
    };
    let workers = [limited(conclave(dir.path(), &server)), limited(conclave(dir.path(), &server))];
    for id in &ids {
        let shown = ended(dir.path(), &server, id).await;
        assert_eq!(shown["run"]["status"], "succeeded", "{shown}");
    }
    workers.into_iter().for_each(stop);
    assert_eq!(server.requests().len(), 16, "two calls a run");
    assert_eq!(server.peak_in_flight(), 2, "eight runs on two workers of four, but two calls at once across the fleet");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_told_to_one_worker_holds_for_the_other() {
    let dir = workspace();
    let limited = Reply::Status {
        status: 429,
        headers: vec![("retry-after", "2".into())],
        body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}).to_string(),
    };
    let routes = vec![
        Route {
            marker: "You are the first agent.".into(),
            replies: vec![limited, Vendor::Anthropic.answer("first done")],
        },
        Route { marker: "You are the second agent.".into(), replies: vec![Vendor::Anthropic.answer("second done")] },
    ];
    let server = FakeServer::start_routed(routes).await;
    let (a_id, b_id) = (queue_run(dir.path(), &server, "paused-a"), queue_run(dir.path(), &server, "paused-b"));
    let one_at_a_time = |mut cmd: Command| {
        cmd.args(["worker", "--runs", "1"]).stdout(Stdio::null()).stderr(Stdio::null());
        cmd.spawn().expect("a worker starts")
    };
    let first = one_at_a_time(conclave(dir.path(), &server));
    let asked = |marker: &str| server.requests().iter().filter(|r| r.body.to_string().contains(marker)).count();
    while asked("paused-a") == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let told = Instant::now();
    let second = one_at_a_time(conclave(dir.path(), &server));
    while asked("paused-b") == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let waited = told.elapsed();
    for id in [&a_id, &b_id] {
        assert_eq!(ended(dir.path(), &server, id).await["run"]["status"], "succeeded");
    }
    [first, second].into_iter().for_each(stop);
    assert!(waited >= Duration::from_millis(1500), "the other worker called only after the pause: {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_in_the_manual_runs_runs_and_cancels_them() {
    let chapter =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/runs.md")).expect("docs/runs.md");
    let block =
        chapter.split("<!-- deployment:begin -->").nth(1).and_then(|b| b.split("<!-- deployment:end -->").next());
    let block = block.expect("the deployment block of docs/runs.md");
    for command in [
        "export CONCLAVE_DB='postgres://",
        "export CONCLAVE_PROVIDER_LIMITS='anthropic=4'",
        "export CONCLAVE_TOKEN=",
        "conclave serve --bind 0.0.0.0:7700 --allowed-host conclave.example.com --repo-root /srv/repos --workers 0",
        "conclave worker --runs 4",
    ] {
        assert!(block.contains(command), "the deployment block of docs/runs.md no longer says `{command}`");
    }
    let dir = workspace();
    let db = fresh_postgres();
    let slow = Reply::After { millis: 60_000, reply: Box::new(Vendor::Anthropic.answer("never")) };
    let server = FakeServer::start_routed(routes(vec![Vendor::Anthropic.answer("second done"), slow])).await;
    let token = "a-token-the-servers-share";
    let deployed = |extra: &[&str]| {
        let mut cmd = conclave(dir.path(), &server);
        cmd.env("CONCLAVE_DB", &db).env("CONCLAVE_PROVIDER_LIMITS", "anthropic=4").env("CONCLAVE_TOKEN", token);
        cmd.args(extra);
        cmd
    };
    let repos = dir.path().display().to_string();
    let server_args = ["--allowed-host", "conclave.example.com", "--repo-root", repos.as_str(), "--workers", "0"];
    let (a, port_a, _) = serve_with(deployed(&[]), &server_args);
    let (b, port_b, _) = serve_with(deployed(&[]), &server_args);
    let spawn_worker = || deployed(&["worker", "--runs", "4"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let workers = [spawn_worker().expect("worker"), spawn_worker().expect("worker")];
    let client = reqwest::Client::new();
    let url = |port: u16, path: &str| format!("http://127.0.0.1:{port}{path}");
    let start = |body: Value| client.post(url(port_a, "/api/runs")).bearer_auth(token).json(&body).send();
    let started: Value =
        start(json!({"conclave_id": "pair", "input": "deployed"})).await.expect("A").json().await.expect("json");
    let id = started["run_id"].as_str().unwrap_or_else(|| panic!("no run id: {started}")).to_string();
    let events = client.get(url(port_b, &format!("/api/runs/{id}/events"))).bearer_auth(token).send();
    let body = events.await.expect("B streams").text().await.expect("to the end");
    assert!(body.contains("run_finished") && body.contains("second done"), "{body}");

    let started: Value =
        start(json!({"conclave_id": "pair", "input": "cancelled"})).await.expect("A").json().await.expect("json");
    let cancelled = started["run_id"].as_str().expect("run id").to_string();
    while !server
        .requests()
        .iter()
        .any(|r| r.body.to_string().contains("cancelled") && r.body.to_string().contains("second agent"))
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancel = client.post(url(port_b, &format!("/api/runs/{cancelled}/cancel"))).bearer_auth(token);
    let answer = cancel.header("content-type", "application/json").body("{}").send().await.expect("B answers");
    assert_eq!(answer.status().as_u16(), 202);
    let shown = ended_with(&deployed, &cancelled).await;
    assert_eq!(shown["run"]["status"], "cancelled", "{shown}");
    let metrics = client.get(url(port_b, "/metrics")).bearer_auth(token).send().await.expect("metrics").text().await;
    assert!(metrics.expect("text").contains("conclave_queue_depth 0"), "B sees the whole queue");
    for mut worker in workers {
        let pid = worker.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(worker.wait().expect("the worker exits").success(), "a worker stops cleanly on SIGTERM");
    }
    [a, b].into_iter().for_each(stop);
}

/// Waits until `run_id` ends, reading it with the deployment's environment.
async fn ended_with(deployed: &dyn Fn(&[&str]) -> Command, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = tokio::task::block_in_place(|| deployed(&["runs", "show", run_id, "--json"]).output().expect("runs"));
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if !["", "queued", "running"].contains(&shown["run"]["status"].as_str().unwrap_or("")) {
            return shown;
        }
        assert!(Instant::now() < deadline, "run {run_id} did not end: {shown}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Adds `conclaves/gate.conclave.json` to the workspace: trigger → first → approve
/// (an approval) → second → output.
fn with_gate(dir: &Path) {
    let conclave = json!({
        "version": 1, "id": "gate", "name": "Gate",
        "nodes": [
            {"id": "in", "kind": "trigger"},
            agent("first", "You are the first agent."),
            {"id": "approve", "kind": "approval", "approval": {"prompt": "Go on?"}},
            agent("second", "You are the second agent."),
            {"id": "out", "kind": "output"}
        ],
        "edges": [{"from": "in", "to": "first"}, {"from": "first", "to": "approve"},
                  {"from": "approve", "to": "second"}, {"from": "second", "to": "out"}]
    });
    std::fs::write(dir.join("conclaves/gate.conclave.json"), conclave.to_string()).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_waits_across_a_killed_worker_and_goes_on_or_stops_with_conclave_approve() {
    an_approval_waits_across_a_killed_worker(workspace()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_approval_waits_across_a_killed_worker() {
    let dir = workspace();
    use_database(dir.path(), &fresh_postgres());
    an_approval_waits_across_a_killed_worker(dir).await;
}

async fn an_approval_waits_across_a_killed_worker(dir: tempfile::TempDir) {
    with_gate(dir.path());
    let answers = (0..4).map(|_| Vendor::Anthropic.answer("done")).collect::<Vec<_>>();
    let server = FakeServer::start_routed(vec![
        Route { marker: "You are the first agent.".into(), replies: answers.clone() },
        Route { marker: "You are the second agent.".into(), replies: answers },
    ])
    .await;
    let queue = |id: &str, input: &str| {
        let out = conclave(dir.path(), &server).args(["run", id, "--input", input, "--queue"]).output();
        let out = out.expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (approved, rejected) = (queue("gate", "to approve"), queue("gate", "to reject"));
    let doomed = worker(dir.path(), &server, "2");
    for id in [&approved, &rejected] {
        let shown = ended(dir.path(), &server, id).await;
        assert_eq!(shown["run"]["status"], "waiting", "{shown}");
    }
    stop(doomed);
    // Another worker runs other runs, and leaves the parked ones parked.
    let survivor = worker(dir.path(), &server, "2");
    let other = queue("gate", "another");
    assert_eq!(ended(dir.path(), &server, &other).await["run"]["status"], "waiting");
    stop(survivor);
    let second = |input: &str| {
        server
            .requests()
            .iter()
            .filter(|r| {
                let body = r.body.to_string();
                body.contains("You are the second agent.") && body.contains(input)
            })
            .count()
    };
    assert_eq!(second("to approve"), 0, "nothing after the approval ran before the decision");

    let decided = conclave(dir.path(), &server)
        .args(["approve", &approved, "approve", "--comment", "ship it", "--by", "bob"])
        .output()
        .expect("approve");
    assert_eq!(decided.status.code(), Some(0), "{}", String::from_utf8_lossy(&decided.stderr));
    let shown = show(dir.path(), &server, &approved);
    assert_eq!(shown["run"]["status"], "succeeded", "{shown}");
    assert_eq!(second("to approve"), 1, "the run went on past the approval");
    let decision =
        shown["events"].as_array().expect("events").iter().find(|e| e["type"] == "approval_decided").cloned();
    let decision = decision.expect("the decision is an event");
    assert_eq!(
        (&decision["by"], &decision["comment"], &decision["approved"]),
        (&json!("bob"), &json!("ship it"), &json!(true))
    );

    let stopped =
        conclave(dir.path(), &server).args(["approve", &rejected, "approve", "--reject"]).output().expect("reject");
    assert_eq!(stopped.status.code(), Some(8), "{}", String::from_utf8_lossy(&stopped.stderr));
    assert_eq!(show(dir.path(), &server, &rejected)["run"]["status"], "rejected");
    assert_eq!(second("to reject"), 0, "a rejected run stops before what needed approval");
    let again = conclave(dir.path(), &server).args(["approve", &rejected, "approve"]).output().expect("approve");
    assert_eq!(again.status.code(), Some(1), "a decided node is not decided again");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("is not waiting"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}
