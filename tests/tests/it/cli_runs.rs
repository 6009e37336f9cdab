//! The `conclave` CLI as a process: runs, exit codes, progress lines, run listing,
//! and recovery after the process is killed mid-run.

use conclave_testkit::{TempWorkspace, fake_conclave};
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_conclave-testbed");

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_successful_run_prints_the_result_and_plain_progress_lines() {
    let ws = TempWorkspace::new().expect("workspace");
    ws.write_conclave("pair", &fake_conclave("pair", &[("a", "json={\"ok\":true}"), ("b<a", "text=done")]))
        .expect("write");
    let out = ws.run(BIN, &["run", "pair", "--input", "hello"]).expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout(&out)).expect("stdout is the JSON result"),
        serde_json::json!({"b": "done"})
    );
    let progress = stderr(&out);
    for line in ["node a: running", "node a: succeeded in", "node b: succeeded in", "succeeded"] {
        assert!(progress.contains(line), "missing {line:?} in:\n{progress}");
    }
}

fn last_run_id(ws: &TempWorkspace) -> String {
    let list = ws.run(BIN, &["runs", "list", "--json", "--limit", "1"]).expect("runs list");
    let runs: serde_json::Value = serde_json::from_str(&stdout(&list)).expect("json");
    runs[0]["id"].as_str().expect("a run").to_string()
}

#[test]
fn exit_codes_follow_the_design() {
    let ws = TempWorkspace::new().expect("workspace");
    ws.write_conclave("fails", &fake_conclave("fails", &[("a", "fail=upstream exploded")])).expect("write");
    let out = ws.command(BIN).args(["run", "fails"]).env("CONCLAVE_PROVIDER_RETRIES", "1").output().expect("runs");
    assert_eq!(out.status.code(), Some(3), "provider failure is exit 3: {}", stderr(&out));
    let show = ws.run(BIN, &["runs", "show", "--json", &last_run_id(&ws)]).expect("runs show");
    let retries = stdout(&show).matches("\"type\": \"provider_retry\"").count();
    assert_eq!(retries, 1, "a 500 is retried once with CONCLAVE_PROVIDER_RETRIES=1");
    assert!(
        stderr(&out).contains("node `a` failed: provider server error (HTTP 500): upstream exploded"),
        "{}",
        stderr(&out)
    );

    let out = ws.run(BIN, &["run", "nope"]).expect("runs");
    assert_eq!(out.status.code(), Some(2), "unknown conclave is exit 2");
    assert!(
        stderr(&out).contains("no conclave `nope`: it is neither a file nor an id in conclaves/ (ids there: fails)"),
        "{}",
        stderr(&out)
    );

    ws.write_conclave("broken", "{ \"id\": \"broken\", ").expect("write");
    let out = ws.run(BIN, &["run", "broken"]).expect("runs");
    assert_eq!(out.status.code(), Some(2), "invalid conclave is exit 2");
    assert!(stderr(&out).contains("error[malformed-json]"), "{}", stderr(&out));

    let mut text = fake_conclave("strict", &[("a", "text=not json")]);
    text = text.replace(
        "\"system_prompt\": \"\"",
        "\"system_prompt\": \"\", \"output_schema\": {\"type\": \"object\"}, \"output_retries\": 1",
    );
    ws.write_conclave("strict", &text).expect("write");
    let out = ws.run(BIN, &["run", "strict"]).expect("runs");
    assert_eq!(out.status.code(), Some(4), "invalid structured output is exit 4: {}", stderr(&out));
}

#[test]
fn runs_list_and_show_describe_stored_runs() {
    let ws = TempWorkspace::new().expect("workspace");
    ws.write_conclave("solo", &fake_conclave("solo", &[("a", "text=the answer")])).expect("write");
    assert_eq!(ws.run(BIN, &["run", "solo"]).expect("runs").status.code(), Some(0));
    let list = ws.run(BIN, &["runs", "list"]).expect("runs");
    let text = stdout(&list);
    assert!(text.starts_with("RUN "), "{text}");
    let line = text.lines().nth(1).expect("one run listed");
    assert!(line.contains("solo") && line.contains("succeeded"), "{line}");
    let id = line.split_whitespace().next().expect("id");
    let show = ws.run(BIN, &["runs", "show", &id[..13]]).expect("runs");
    let text = stdout(&show);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    for expected in [
        "status    succeeded",
        "  a                    succeeded",
        "output: the answer",
        "run_started",
        "text_delta       a: \"the answer\"",
        "run_finished     succeeded",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn runs_list_and_show_name_the_pull_request_a_review_reviews() {
    let ws = TempWorkspace::new().expect("workspace");
    ws.write_conclave("solo", &fake_conclave("solo", &[("a", "text=reviewed")])).expect("write");
    // The input a webhook's review run has: the request it reviews.
    let github = r#"{"pull_request": {"forge": "github", "repository": "o/r", "number": 7}}"#;
    let gitlab = r#"{"pull_request": {"forge": "gitlab", "repository": "group/project", "number": 3}}"#;
    for args in [["run", "solo", "--input-json", github], ["run", "solo", "--input-json", gitlab]] {
        let out = ws.run(BIN, &args).expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_eq!(ws.run(BIN, &["run", "solo", "--input", "plain"]).expect("runs").status.code(), Some(0));

    let list = ws.run(BIN, &["runs", "list"]).expect("runs list");
    let text = stdout(&list);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("RUN ") && lines[0].ends_with("  DURATION  REQUEST"), "{text}");
    // Newest first: the plain run, then GitLab's merge request, then GitHub's pull request.
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[1].ends_with('s') && !lines[1].contains("o/r"), "no request, no trailing space: {:?}", lines[1]);
    assert!(lines[2].ends_with("s  group/project!3"), "{:?}", lines[2]);
    assert!(lines[3].ends_with("s  o/r#7"), "{:?}", lines[3]);

    let list = ws.run(BIN, &["runs", "list", "--json"]).expect("runs list");
    let runs: serde_json::Value = serde_json::from_str(&stdout(&list)).expect("json");
    assert_eq!(runs[0].get("pull_request"), None, "a run without one has no key: {runs}");
    assert_eq!(
        (runs[1]["pull_request"].as_str(), runs[2]["pull_request"].as_str()),
        (Some("group/project!3"), Some("o/r#7"))
    );

    let id = runs[2]["id"].as_str().expect("id");
    let show = stdout(&ws.run(BIN, &["runs", "show", id]).expect("runs show"));
    assert!(show.contains("\nconclave  solo\nrequest   o/r#7\nstatus    succeeded\n"), "{show}");
    let show = stdout(&ws.run(BIN, &["runs", "show", runs[0]["id"].as_str().expect("id")]).expect("runs show"));
    assert!(show.contains("\nconclave  solo\nstatus    succeeded\n"), "no request line for a plain run: {show}");
}

#[test]
fn a_run_killed_mid_flight_is_listed_as_interrupted_with_every_event_before_the_kill() {
    let ws = TempWorkspace::new().expect("workspace");
    let text = fake_conclave("slow", &[("quick", "text=first"), ("slow", "delay=30000;text=never")]);
    ws.write_conclave("slow", &text).expect("write");
    let mut child =
        ws.command(BIN).args(["run", "slow"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");

    // Wait until the slow node is running and the quick one has finished.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (run_id, before) = loop {
        assert!(Instant::now() < deadline, "the run never reached the slow node");
        std::thread::sleep(Duration::from_millis(50));
        let Ok(conn) = rusqlite::Connection::open_with_flags(ws.db(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        else {
            continue;
        };
        // The store keeps each write's events of a run as one block, a JSON array.
        let Ok(mut stmt) = conn.prepare("SELECT run_id, events FROM event_blocks ORDER BY last_seq") else { continue };
        let rows: Vec<(String, u64, String)> = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .expect("query")
            .map(|r| r.expect("row"))
            .flat_map(|(run_id, block)| {
                let events: Vec<serde_json::Value> = serde_json::from_str(&block).expect("a block of events");
                events.into_iter().map(move |e| (run_id.clone(), e["seq"].as_u64().unwrap_or(0), e.to_string()))
            })
            .collect();
        let slow_started =
            rows.iter().any(|(_, _, p)| p.contains("\"node_started\"") && p.contains("\"node_id\":\"slow\""));
        let quick_done =
            rows.iter().any(|(_, _, p)| p.contains("\"node_completed\"") && p.contains("\"node_id\":\"quick\""));
        if slow_started && quick_done {
            break (rows[0].0.clone(), rows);
        }
    };
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reaped");
    assert!(!status.success());
    let mut ignored = String::new();
    let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut ignored));

    let list = ws.run(BIN, &["runs", "list"]).expect("runs list");
    let text = stdout(&list);
    let line = text.lines().find(|l| l.starts_with(&run_id)).unwrap_or_else(|| panic!("run missing from:\n{text}"));
    assert!(line.contains("interrupted"), "{line}");

    let show = ws.run(BIN, &["runs", "show", "--json", &run_id]).expect("runs show");
    let doc: serde_json::Value = serde_json::from_str(&stdout(&show)).expect("json");
    let events = doc["events"].as_array().expect("events");
    assert_eq!(events.len(), before.len() + 1, "every event before the kill, plus the interruption");
    for (stored, (_, seq, payload)) in events.iter().zip(&before) {
        assert_eq!(stored["seq"].as_u64(), Some(*seq));
        assert_eq!(stored, &serde_json::from_str::<serde_json::Value>(payload).expect("payload"));
    }
    let last = events.last().expect("last");
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("run_finished"), Some("interrupted")));
    let nodes = doc["run"]["nodes"].as_array().expect("nodes");
    let state = |id: &str| nodes.iter().find(|n| n["node_id"] == id).map(|n| n["state"].clone());
    assert_eq!(state("quick"), Some("succeeded".into()));
    assert_eq!(state("slow"), Some("interrupted".into()));
}

/// Starts `count` runs of `conclave` at once in `ws` and waits for all of them.
fn concurrent_runs(ws: &TempWorkspace, conclave: &str, count: usize) -> Vec<std::process::Output> {
    let children: Vec<std::process::Child> = (0..count)
        .map(|i| {
            ws.command(BIN)
                .args(["run", conclave, "--input", &format!("run {i}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawns")
        })
        .collect();
    children.into_iter().map(|c| c.wait_with_output().expect("waits")).collect()
}

#[test]
fn eight_processes_share_one_run_database_fresh_and_existing() {
    let ws = TempWorkspace::new().expect("workspace");
    let agents = [("a", "delay=30;text=one"), ("b", "delay=30;text=two"), ("c<a", "text=three")];
    ws.write_conclave("busy", &fake_conclave("busy", &agents)).expect("write");
    // A fresh file: every process races to create and migrate it.
    for out in concurrent_runs(&ws, "busy", 8) {
        assert_eq!(out.status.code(), Some(0), "a run on a fresh file failed: {}", stderr(&out));
    }
    // The same file again, now existing, with eight more writers.
    for out in concurrent_runs(&ws, "busy", 8) {
        assert_eq!(out.status.code(), Some(0), "a run on an existing file failed: {}", stderr(&out));
    }
    let list = ws.run(BIN, &["runs", "list", "--json", "--limit", "100"]).expect("runs list");
    let runs: serde_json::Value = serde_json::from_str(&stdout(&list)).expect("json");
    let runs = runs.as_array().expect("a list");
    assert_eq!(runs.len(), 16, "every run is recorded");
    for run in runs {
        assert_eq!(run["status"], "succeeded", "{run}");
        let id = run["id"].as_str().expect("id");
        let show = ws.run(BIN, &["runs", "show", "--json", id]).expect("runs show");
        let record: serde_json::Value = serde_json::from_str(&stdout(&show)).expect("json");
        let seqs: Vec<u64> =
            record["events"].as_array().expect("events").iter().filter_map(|e| e["seq"].as_u64()).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "run {id} lost or reordered events");
        let finished = record["events"].as_array().and_then(|e| e.last()).map(|e| e["type"].clone());
        assert_eq!(finished, Some(serde_json::json!("run_finished")), "run {id} has its whole log");
    }
}
