//! `conclave run CONCLAVE --from NODE --reuse RUN_ID` as a process: the re-run and
//! reused nodes in `runs show`, and exit 2 with a clear message for a node the
//! conclave lacks or a run of another conclave.

use conclave_testkit::{TempWorkspace, fake_conclave};

const BIN: &str = env!("CARGO_BIN_EXE_conclave-testbed");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn last_run_id(ws: &TempWorkspace) -> String {
    let list = ws.run(BIN, &["runs", "list", "--json", "--limit", "1"]).expect("runs list");
    let runs: serde_json::Value = serde_json::from_str(&text(&list.stdout)).expect("json");
    runs[0]["id"].as_str().expect("a run").to_string()
}

#[test]
fn running_from_a_node_reruns_it_and_shows_what_was_reused() {
    let ws = TempWorkspace::new().expect("workspace");
    let agents = [("a", "json={\"from\":\"a\"}"), ("b<a", "text=b's answer"), ("c<a", "text=c's answer")];
    ws.write_conclave("chain", &fake_conclave("chain", &agents)).expect("write");
    let first = ws.run(BIN, &["run", "chain", "--input", "hello"]).expect("runs");
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let first_id = last_run_id(&ws);

    let prefix = &first_id[..first_id.len() - 4];
    let out = ws.run(BIN, &["run", "chain", "--from", "b", "--reuse", prefix]).expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text(&out.stdout)).expect("the result"),
        serde_json::json!({"b": "b's answer", "c": "c's answer"})
    );
    let progress = text(&out.stderr);
    for line in [format!("node a: reused from run {first_id}"), format!("node c: reused from run {first_id}")] {
        assert!(progress.contains(&line), "missing {line:?} in:\n{progress}");
    }
    assert!(progress.contains("node b: succeeded in"), "{progress}");

    let second_id = last_run_id(&ws);
    let show = ws.run(BIN, &["runs", "show", &second_id]).expect("runs show");
    let shown = text(&show.stdout);
    for line in [
        format!("  a                    succeeded (reused from run {first_id})"),
        format!("  c                    succeeded (reused from run {first_id})"),
        "  b                    succeeded\n".to_string(),
        format!("node_reused      a from run {first_id}"),
        "node_started     b\n".to_string(),
        "    input: ## Run input\n    \n    hello".to_string(),
    ] {
        assert!(shown.contains(&line), "missing {line:?} in:\n{shown}");
    }
    assert!(!shown.contains("node_started     a"), "a did not run again:\n{shown}");
}

#[test]
fn a_node_the_conclave_lacks_or_a_run_of_another_conclave_is_exit_2() {
    let ws = TempWorkspace::new().expect("workspace");
    ws.write_conclave("chain", &fake_conclave("chain", &[("a", "text=a"), ("b<a", "text=b")])).expect("write");
    ws.write_conclave("other", &fake_conclave("other", &[("a", "text=x")])).expect("write");
    assert_eq!(ws.run(BIN, &["run", "other"]).expect("runs").status.code(), Some(0));
    let other_id = last_run_id(&ws);
    assert_eq!(ws.run(BIN, &["run", "chain"]).expect("runs").status.code(), Some(0));
    let chain_id = last_run_id(&ws);

    let out = ws.run(BIN, &["run", "chain", "--from", "zzz", "--reuse", &chain_id]).expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        "error: conclave `chain` has no node `zzz` to run from; give the id of one of its nodes"
    );
    let out = ws.run(BIN, &["run", "chain", "--from", "b", "--reuse", &other_id]).expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!("error: run `{other_id}` is a run of conclave `other`, not `chain`; reuse a run of `chain`")
    );
    let out = ws.run(BIN, &["run", "chain", "--from", "b", "--reuse", "ffffffff"]).expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).trim_end(), "error: no run `ffffffff`; `conclave runs list` shows the recent ones");
    let out = ws.run(BIN, &["run", "chain", "--from", "b"]).expect("runs");
    assert_eq!(out.status.code(), Some(2), "--from needs --reuse");
    assert!(text(&out.stderr).contains("--reuse <RUN_ID>"), "{}", text(&out.stderr));
}

#[test]
fn running_from_the_writer_of_a_review_reviews_the_same_change_and_stores_reports() {
    let ws = TempWorkspace::new().expect("workspace");
    let repo = ws.root().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    conclave_testkit::git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.rs"), "fn a() {}\n").expect("write");
    conclave_testkit::git(&repo, &["add", "."]);
    conclave_testkit::git(&repo, &["commit", "-q", "-m", "a"]);
    std::fs::write(repo.join("a.rs"), "fn a() { b() }\n").expect("write");
    let answer = r#"json={"findings":[{"severity":"minor","file":"a.rs","line":1,"description":"b is undefined","raisedBy":"correctness"}],"counts":{"blocker":0,"major":0,"minor":1,"nit":0}}"#;
    let conclave = fake_conclave("mini", &[("reviewer", answer), ("writer<reviewer", answer)])
        .replace("\"system_prompt\": \"\"", "\"system_prompt\": \"\", \"output_schema_ref\": \"review.findings.v1\"");
    ws.write_conclave("mini", &conclave).expect("write");
    let review = ws.run(BIN, &["review", &repo.display().to_string(), "--conclave", "mini"]).expect("reviews");
    assert_eq!(review.status.code(), Some(0), "{}", text(&review.stderr));
    let first_id = last_run_id(&ws);

    let out = ws.run(BIN, &["run", "mini", "--from", "writer", "--reuse", &first_id]).expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("node reviewer: reused from run {first_id}")), "{}", text(&out.stderr));
    let second_id = last_run_id(&ws);
    let runs_show = |id: &str| {
        let show = ws.run(BIN, &["runs", "show", "--json", id]).expect("runs show");
        serde_json::from_str::<serde_json::Value>(&text(&show.stdout)).expect("json")
    };
    assert_eq!(runs_show(&second_id)["run"]["input"], runs_show(&first_id)["run"]["input"], "the same change");
    let report = ws.run(BIN, &["runs", "report", &second_id]).expect("report");
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    assert!(
        text(&report.stdout).contains("| 1 | minor | correctness · support 1 | b is undefined |"),
        "{}",
        text(&report.stdout)
    );
}
