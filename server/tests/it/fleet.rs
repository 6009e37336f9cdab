//! A team's deployment at test scale: two `conclave serve` processes (API only) and
//! two `conclave worker` processes on one PostgreSQL, with Anthropic faked over
//! loopback. Fifty review runs started through both servers each run exactly once,
//! never more than two provider calls at once across the fleet; and a client
//! streaming from a server that is killed resumes from the other with
//! `Last-Event-ID`, missing nothing.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Reply, Route};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::review_e2e::{TRAVERSAL, findings, fixture_repo};
use crate::workers_cli::{conclave, fresh_postgres, serve_with, workspace};

/// Child processes killed when the test ends, passed or not, so a failing test leaves
/// no server or worker running.
#[derive(Default)]
struct Processes(Vec<Child>);

impl Processes {
    fn add(&mut self, child: Child) -> usize {
        self.0.push(child);
        self.0.len() - 1
    }

    /// SIGKILLs one process now.
    fn kill(&mut self, at: usize) {
        let child = &mut self.0[at];
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The four agents of the built-in review, each answering after `millis`.
fn review_routes(millis: u64) -> Vec<Route> {
    let slow = |text: String| vec![Reply::After { millis, reply: Box::new(Vendor::Anthropic.answer(&text)) }];
    let concern = |severity: &str, line: u64, text: &str, lane: &str| json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": text, "raisedBy": lane, "stance": "concern"});
    let atomic = "The write is not atomic; a crash leaves a partial file. Write to a temporary file and rename it.";
    vec![
        Route {
            marker: "You are the security reviewer".into(),
            replies: slow(findings(json!([concern("blocker", 8, TRAVERSAL, "security")]), [1, 0, 0, 0])),
        },
        Route {
            marker: "You are the correctness reviewer".into(),
            replies: slow(findings(json!([concern("minor", 9, atomic, "correctness")]), [0, 0, 1, 0])),
        },
        Route { marker: "You are the conventions reviewer".into(), replies: slow(findings(json!([]), [0, 0, 0, 0])) },
        Route {
            marker: "You are the Writer".into(),
            replies: slow(findings(
                json!([concern("blocker", 8, TRAVERSAL, "security"), concern("minor", 9, atomic, "correctness")]),
                [1, 0, 1, 0],
            )),
        },
    ]
}

/// `conclave ARGS` in `dir` on the database `db`.
fn on(dir: &Path, server: &FakeServer, db: &str) -> Command {
    let mut cmd = conclave(dir, server);
    cmd.env("CONCLAVE_DB", db);
    cmd
}

/// A worker process on `db` with a fleet-wide Anthropic limit of 2.
fn limited_worker(dir: &Path, server: &FakeServer, db: &str) -> Child {
    on(dir, server, db)
        .env("CONCLAVE_PROVIDER_LIMITS", "anthropic=2")
        .args(["worker", "--lease-secs", "10", "--runs", "8"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("a worker starts")
}

/// The sequence numbers in an SSE body.
fn ids(body: &str) -> Vec<u64> {
    body.lines().filter_map(|l| l.strip_prefix("id:")).filter_map(|s| s.trim().parse().ok()).collect()
}

/// How many SSE events of `body` are named `name`.
fn named(body: &str, name: &str) -> usize {
    body.lines().filter_map(|l| l.strip_prefix("event:")).filter(|n| n.trim() == name).count()
}

/// The whole event stream of a run from a server, ending after `run_finished`.
async fn stream(client: &reqwest::Client, port: u16, token: &str, id: &str) -> String {
    let url = format!("http://127.0.0.1:{port}/api/runs/{id}/events");
    let response = client.get(url).bearer_auth(token).send().await.expect("the server answers");
    assert_eq!(response.status().as_u16(), 200);
    response.text().await.expect("the stream ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_review_runs_through_two_servers_and_two_workers_run_once_each_within_a_limit_of_two() {
    let dir = workspace();
    let repo = fixture_repo(dir.path());
    let db = fresh_postgres();
    let server = FakeServer::start_routed(review_routes(40)).await;
    let mut fleet = Processes::default();
    let api_only = ["--workers", "0", "--repo-root", &dir.path().display().to_string()];
    let (a, port_a, token_a) = serve_with(on(dir.path(), &server, &db), &api_only);
    let (b, port_b, token_b) = serve_with(on(dir.path(), &server, &db), &api_only);
    fleet.add(a);
    fleet.add(b);
    fleet.add(limited_worker(dir.path(), &server, &db));
    fleet.add(limited_worker(dir.path(), &server, &db));
    let servers = [(port_a, token_a), (port_b, token_b)];

    let client = reqwest::Client::new();
    let start = |i: usize| {
        let (port, token) = &servers[i % 2];
        let body = json!({"conclave_id": "light-code-review", "review": {"repository": repo.display().to_string(), "base": "main"}});
        client.post(format!("http://127.0.0.1:{port}/api/runs")).bearer_auth(token).json(&body).send()
    };
    let started_id = |response: reqwest::Response| async move {
        assert_eq!(response.status().as_u16(), 202);
        let started: Value = response.json().await.expect("json");
        started["run_id"].as_str().expect("a run id").to_string()
    };
    // One run alone first: how many provider calls one review makes.
    let first = started_id(start(0).await.expect("the server answers")).await;
    stream(&client, port_b, &servers[1].1, &first).await;
    let calls_per_run = server.requests().len();
    assert!(calls_per_run >= 4, "each of the four agents called the provider");
    let mut ids_started = vec![first];
    for i in 1..50 {
        ids_started.push(started_id(start(i).await.expect("the server answers")).await);
    }
    for (i, id) in ids_started.iter().enumerate() {
        // Each run streamed from the server that did not start it.
        let (port, token) = &servers[(i + 1) % 2];
        let body = stream(&client, *port, token, id).await;
        let seqs = ids(&body);
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "run {id}: every event once, in order");
        assert_eq!(named(&body, "run_started"), 1, "run {id} started once: {body}");
        assert_eq!(named(&body, "run_resumed"), 0, "run {id} was never taken over: {body}");
        assert!(body.contains(r#""status":"succeeded""#), "run {id} succeeded: {body}");
    }
    assert_eq!(server.requests().len(), 50 * calls_per_run, "every run made its calls once, none repeated");
    assert_eq!(server.peak_in_flight(), 2, "sixteen run slots across two workers, two calls at once across the fleet");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_streaming_from_a_killed_server_resumes_from_the_other_with_last_event_id() {
    let dir = workspace();
    let db = fresh_postgres();
    // The first agent streams its answer in pieces; the second takes a while.
    let first = Vendor::Anthropic.answer(&"a streamed piece of the first answer ".repeat(40));
    let second = Reply::After { millis: 1_500, reply: Box::new(Vendor::Anthropic.answer("second done")) };
    let server = FakeServer::start_routed(vec![
        Route { marker: "You are the first agent.".into(), replies: vec![first] },
        Route { marker: "You are the second agent.".into(), replies: vec![second] },
    ])
    .await;
    let mut fleet = Processes::default();
    let (a, port_a, token_a) = serve_with(on(dir.path(), &server, &db), &["--workers", "0"]);
    let (b, port_b, token_b) = serve_with(on(dir.path(), &server, &db), &["--workers", "0"]);
    let at_a = fleet.add(a);
    fleet.add(b);
    let out = on(dir.path(), &server, &db).args(["run", "pair", "--input", "watched", "--queue"]).output();
    let out = out.expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    fleet.add(
        on(dir.path(), &server, &db)
            .args(["worker", "--lease-secs", "10"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("a worker starts"),
    );

    // Watch through A until the second agent has started, then kill A.
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port_a}/api/runs/{id}/events");
    let mut response = client.get(url).bearer_auth(&token_a).send().await.expect("server A answers");
    let mut seen = String::new();
    while !seen.contains("\"node_id\":\"second\"") {
        let chunk = tokio::time::timeout(Duration::from_secs(60), response.chunk()).await;
        let chunk = chunk.expect("events keep coming").expect("the stream holds").expect("the run is not over");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    fleet.kill(at_a);
    // What arrived before the stream broke; a partly received event is not counted.
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout(Duration::from_secs(5), response.chunk()).await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let complete = &seen[..seen.rfind("\n\n").map_or(0, |i| i + 2)];
    let before = ids(complete);
    let last = *before.last().expect("events arrived from A");
    assert_eq!(named(complete, "run_finished"), 0, "A was killed while the run went on");

    // The client reconnects to B with the last id it has.
    let url = format!("http://127.0.0.1:{port_b}/api/runs/{id}/events");
    let rest = client
        .get(url)
        .bearer_auth(&token_b)
        .header("last-event-id", last.to_string())
        .send()
        .await
        .expect("server B answers")
        .text()
        .await
        .expect("the stream ends");
    let after = ids(&rest);
    assert_eq!(after.first(), Some(&(last + 1)), "B resumes right after the last event A delivered: {rest}");
    let all: Vec<u64> = before.iter().chain(&after).copied().collect();
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>(), "nothing missed, nothing twice");
    assert!(rest.contains("run_finished") && rest.contains("second done"), "{rest}");
    let stored = stream(&client, port_b, &token_b, &id).await;
    assert_eq!(ids(&stored), all, "the client saw exactly what is stored");
}
