//! Route and command nodes on every store (memory, SQLite, PostgreSQL): a route
//! that skips a branch while the join after it still runs, a route taken up again
//! after its worker died, and a command whose output joins the agents' (text, JSON
//! checked against its schema, SARIF as findings), fails on its exit code, or is
//! refused when the run does not allow it.

use conclave_core::RunStore;
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{
    Commands, Decision, DecisionError, Engine, EngineConfig, RunOptions, RunOutcome, StartError, decide,
};
use conclave_shared::command::AnalyzerConfig;
use conclave_shared::{
    ApprovalConfig, CacheSetting, ChildConclave, CommandConfig, CommandParse, Conclave, Edge, ErrorKind, EventKind,
    LoopConfig, Node, NodeKind, NodeOutput, NodeState, Predicate, PredicateOp, RouteCase, RouteConfig, RunEvent,
    RunStatus, Usage,
};
use conclave_store::{PostgresStore, SqliteStore};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

use crate::engine::{engine_with, graph};

/// The stores every test here runs on; PostgreSQL at `CONCLAVE_TEST_POSTGRES_URL`
/// (set by `scripts/test.sh`), without which these tests fail rather than skip it.
async fn stores(dir: &Path) -> Vec<(&'static str, Arc<dyn RunStore>)> {
    let url = std::env::var("CONCLAVE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("CONCLAVE_TEST_POSTGRES_URL is not set: run `bash scripts/test.sh`, or start a server with `bash scripts/postgres.sh start DIR` and export the URL it prints")
    });
    let postgres = PostgresStore::connect(&url).await.expect("connect to the test PostgreSQL server");
    let sqlite = SqliteStore::open(&dir.join("runs.db")).expect("open SQLite");
    vec![("memory", Arc::new(MemoryStore::new())), ("sqlite", Arc::new(sqlite)), ("postgres", Arc::new(postgres))]
}

fn case(name: &str, pointer: &str, op: PredicateOp, value: Option<Value>) -> RouteCase {
    RouteCase { name: name.into(), when: Predicate { pointer: pointer.into(), op, value } }
}

fn routed(from: &str, to: &str, case: &str) -> Edge {
    Edge { case: Some(case.into()), ..Edge::new(from, to) }
}

/// `in → classify → lanes`, where `lanes` sends `security` or `docs`; both join in
/// `writer`; `docs → docs_check` hangs off the docs branch.
fn lanes() -> Conclave {
    let mut conclave = graph(
        &["in:t", "classify:a", "security:a", "docs:a", "docs_check:a", "writer:a", "out:o"],
        &["in>classify", "security>writer", "docs>writer", "docs>docs_check", "writer>out"],
    );
    let mut route = Node::new("lanes", NodeKind::Route);
    route.route = Some(RouteConfig {
        cases: vec![case("security", "/classify/touches_auth", PredicateOp::Equals, Some(json!(true)))],
        otherwise: Some("docs".into()),
    });
    conclave.nodes.insert(2, route);
    conclave.edges.push(Edge::new("classify", "lanes"));
    conclave.edges.push(routed("lanes", "security", "security"));
    conclave.edges.push(routed("lanes", "docs", "docs"));
    conclave
}

async fn run(engine: &Engine, conclave: Conclave, options: RunOptions) -> (RunOutcome, Vec<RunEvent>) {
    let handle = engine.start(checked(conclave), json!({"text": "the change"}), options).await.expect("run starts");
    let outcome = handle.wait().await;
    let events = engine.store().events(&outcome.run_id, 0).await.expect("events");
    (outcome, events)
}

#[tokio::test]
async fn a_route_skips_the_branch_it_did_not_take_and_the_join_still_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        fake.script("classify", [FakeStep::json(json!({"touches_auth": true}))]);
        fake.script("security", [FakeStep::json(json!({"finding": "token logged"}))]);
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (outcome, events) = run(&engine, lanes(), RunOptions::default()).await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
        assert_eq!(
            outcome.outputs["lanes"],
            NodeOutput::Json(json!({"case": "security", "inputs": {"classify": {"touches_auth": true}}})),
            "{name}: the route says which case it took and passes its inputs on"
        );
        let skipped: Vec<(String, String, bool)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::NodeSkipped { node_id, because_of, route } => {
                    Some((node_id.clone(), because_of.clone(), *route))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            skipped,
            [("docs".to_string(), "lanes".to_string(), true), ("docs_check".to_string(), "docs".to_string(), true)],
            "{name}: the branch not taken, and what hangs off it, are skipped by the route"
        );
        assert!(fake.calls_for("docs").is_empty() && fake.calls_for("docs_check").is_empty(), "{name}");
        let writer = fake.calls_for("writer");
        assert_eq!(writer.len(), 1, "{name}: the join runs once, on the branch that was taken");
        assert_eq!(writer[0].input["upstream"], json!({"security": {"finding": "token logged"}}), "{name}");

        let record = store.get_run(&outcome.run_id).await.expect("get").expect("stored");
        let node = |id: &str| record.nodes.iter().find(|n| n.node_id == id).expect("node").clone();
        assert_eq!((node("docs").state, node("docs").routed_out), (NodeState::Skipped, true), "{name}");
        assert_eq!(
            node("docs").error.as_deref(),
            Some("skipped (route): `lanes` took another branch"),
            "{name}: the record says why"
        );
        assert_eq!(node("writer").state, NodeState::Succeeded, "{name}");
        assert_eq!(record.summary.status, RunStatus::Succeeded, "{name}: a route's skip is not a failure");
    }
}

#[tokio::test]
async fn a_route_that_matches_nothing_skips_every_branch_and_the_run_still_succeeds() {
    let mut conclave = lanes();
    conclave.nodes.iter_mut().find(|n| n.id == "lanes").and_then(|n| n.route.as_mut()).expect("route").otherwise = None;
    conclave.edges.retain(|e| e.case.as_deref() != Some("docs"));
    conclave.edges.push(Edge::new("in", "docs"));
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("classify", [FakeStep::json(json!({"touches_auth": false}))]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let (outcome, _) = run(&engine, conclave, RunOptions::default()).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(
        outcome.outputs["lanes"],
        NodeOutput::Json(json!({"case": null, "inputs": {"classify": {"touches_auth": false}}}))
    );
    assert!(fake.calls_for("security").is_empty());
    // `docs` hangs off the trigger now, so the writer joins it alone.
    assert_eq!(fake.calls_for("writer")[0].input["upstream"], json!({"docs": {"node": "docs", "upstream": []}}));
}

#[tokio::test]
async fn a_resumed_run_keeps_the_route_s_choice() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        // A first run goes as far as the route; its process then "dies": the run is
        // marked running again and the nodes after the route are forgotten.
        let fake = Arc::new(FakeProvider::new("fake"));
        fake.script("classify", [FakeStep::json(json!({"touches_auth": false}))]);
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (first, events) = run(&engine, lanes(), RunOptions::default()).await;
        assert_eq!(first.status, RunStatus::Succeeded, "{name}");
        let cut = events
            .iter()
            .position(|e| matches!(&e.kind, EventKind::NodeSkipped { node_id, .. } if node_id == "security"))
            .expect("security skipped")
            + 1;
        let copy = copy_run(store.as_ref(), &first.run_id, &events[..cut]).await;

        let again = Arc::new(FakeProvider::new("fake"));
        let engine = engine_with(again.clone(), store.clone(), EngineConfig::default());
        let handle = engine.resume(checked(lanes()), &copy, RunOptions::default()).await.expect("resumes");
        let outcome = handle.wait().await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
        assert!(again.calls_for("classify").is_empty() && again.calls_for("security").is_empty(), "{name}");
        assert_eq!(again.calls_for("docs").len(), 1, "{name}: the branch the route took runs");
        let record = store.get_run(&copy).await.expect("get").expect("stored");
        let security = record.nodes.iter().find(|n| n.node_id == "security").expect("security");
        assert!(security.routed_out, "{name}: the stored skip stays a route's skip");
    }
}

/// Stores a new running run of `lanes()` holding `events` (renumbered for it); its id.
async fn copy_run(store: &dyn RunStore, from: &str, events: &[RunEvent]) -> String {
    let record = store.get_run(from).await.expect("get").expect("stored");
    let id = format!("{from}-resumed");
    let new_run = conclave_core::NewRun {
        id: id.clone(),
        conclave: record.conclave,
        input: record.input,
        created_ms: record.summary.created_ms,
        owner: "a-worker-that-died".into(),
    };
    store.create_run(&new_run).await.expect("create");
    let copied: Vec<RunEvent> = events.iter().map(|e| RunEvent { run_id: id.clone(), ..e.clone() }).collect();
    store.append_events(&copied).await.expect("append");
    id
}

fn command(id: &str, argv: &[&str], parse: CommandParse) -> Node {
    let mut config = CommandConfig::new(argv.iter().map(|a| a.to_string()).collect());
    config.parse = parse;
    Node { command: Some(config), ..Node::new(id, NodeKind::Command) }
}

/// `in → lint (command) → writer ← review (agent) ← in`.
fn with_command(node: Node) -> Conclave {
    let mut conclave = graph(&["in:t", "review:a", "writer:a", "out:o"], &["in>review", "review>writer", "writer>out"]);
    conclave.edges.push(Edge::new("in", &node.id));
    conclave.edges.push(Edge::new(&node.id, "writer"));
    conclave.nodes.insert(1, node);
    conclave
}

fn allowing(workdir: &Path) -> RunOptions {
    RunOptions {
        workdir: Some(workdir.to_path_buf()),
        commands: Some(Arc::new(Commands::any(None))),
        ..RunOptions::default()
    }
}

#[tokio::test]
async fn a_command_s_output_joins_the_agents_and_its_exit_is_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sarif = json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "lint"}}, "results": [
        {"ruleId": "no-eval", "level": "error", "message": {"text": "eval of input"},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": "src/app.js"}, "region": {"startLine": 12}}}]}
    ]}]});
    std::fs::write(dir.path().join("lint.sarif"), sarif.to_string()).expect("write");
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (outcome, events) = run(
            &engine,
            with_command(command("lint", &["cat", "lint.sarif"], CommandParse::Sarif)),
            allowing(dir.path()),
        )
        .await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
        let findings = json!({"findings": [{"severity": "blocker", "file": "src/app.js", "line": 12,
            "description": "[no-eval] eval of input", "raisedBy": "lint"}],
            "counts": {"blocker": 1, "major": 0, "minor": 0, "nit": 0}});
        assert_eq!(outcome.outputs["lint"], NodeOutput::Json(findings.clone()), "{name}");
        let writer = fake.calls_for("writer");
        assert_eq!(writer[0].input["upstream"]["lint"], findings, "{name}: the findings join the agents'");
        let exited = events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::CommandExited { node_id, exit_code, stdout, argv, .. } if node_id == "lint" => {
                    Some((*exit_code, stdout.clone(), argv.clone()))
                }
                _ => None,
            })
            .expect("command_exited recorded");
        assert_eq!(exited, (Some(0), sarif.to_string(), vec!["cat".to_string(), "lint.sarif".to_string()]), "{name}");
    }
}

#[tokio::test]
async fn a_failed_analyzer_lane_leaves_the_writer_to_run_on_the_agents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let lane = |analyzer: bool| {
        let mut node = command("shellcheck", &["sh", "-c", "echo 'not json1'; exit 1"], CommandParse::Shellcheck);
        let config = node.command.as_mut().expect("command");
        config.ok_exit_codes = vec![0, 1];
        config.analyzer = analyzer.then(|| AnalyzerConfig::new(vec!["*.sh".into()]));
        node
    };
    let (outcome, events) = run(&engine, with_command(lane(true)), allowing(dir.path())).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let failed = events.iter().find_map(|e| match &e.kind {
        EventKind::NodeFailed { node_id, message, .. } if node_id == "shellcheck" => Some(message.clone()),
        _ => None,
    });
    assert!(failed.is_some_and(|m| m.contains("not a ShellCheck json1 report")), "the lane's failure is recorded");
    let writer = fake.calls_for("writer");
    assert_eq!(writer.len(), 1, "the Writer ran on the agent's output");
    assert!(
        writer[0].input["upstream"].get("shellcheck").is_none() && writer[0].input["upstream"].get("review").is_some()
    );

    // The same command outside an analyzer lane fails the run as any node does.
    let (outcome, _) = run(&engine, with_command(lane(false)), allowing(dir.path())).await;
    assert_eq!((outcome.status, outcome.failed_node.as_deref()), (RunStatus::Failed, Some("shellcheck")));
}

#[tokio::test]
async fn json_output_is_checked_against_the_command_s_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let mut good = command("probe", &["echo", r#"{"ok": true}"#], CommandParse::Json);
    good.command.as_mut().expect("command").output_schema = Some(schema.clone());
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let (outcome, _) = run(&engine, with_command(good), allowing(dir.path())).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(outcome.outputs["probe"], NodeOutput::Json(json!({"ok": true})));

    let mut bad = command("probe", &["echo", r#"{"ok": "yes"}"#], CommandParse::Json);
    bad.command.as_mut().expect("command").output_schema = Some(schema);
    let (outcome, _) = run(&engine, with_command(bad), allowing(dir.path())).await;
    assert_eq!((outcome.status, outcome.error_kind), (RunStatus::Failed, Some(ErrorKind::InvalidOutput)));
    assert!(outcome.error.as_deref().unwrap_or("").contains("/ok"), "the failure names the path: {:?}", outcome.error);
}

#[tokio::test]
async fn a_failing_exit_code_fails_the_node_unless_it_is_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let exits_2 = || {
        command("check", &["sh", "-c", "echo 'a.rs:3: trailing whitespace'; echo bad >&2; exit 2"], CommandParse::Text)
    };
    let (outcome, events) = run(&engine, with_command(exits_2()), allowing(dir.path())).await;
    assert_eq!((outcome.status, outcome.error_kind), (RunStatus::Failed, Some(ErrorKind::Command)));
    assert_eq!(outcome.failed_node.as_deref(), Some("check"));
    let error = outcome.error.unwrap_or_default();
    assert!(error.contains("exited with code 2: bad") && error.contains("ok_exit_codes"), "{error}");
    let stderr = events.iter().find_map(|e| match &e.kind {
        EventKind::CommandExited { stderr, exit_code: Some(2), .. } => Some(stderr.clone()),
        _ => None,
    });
    assert_eq!(stderr.as_deref(), Some("bad\n"), "the exit and stderr are recorded before the node fails");

    let mut listed = exits_2();
    listed.command.as_mut().expect("command").ok_exit_codes = vec![0, 2];
    let (outcome, _) = run(&engine, with_command(listed), allowing(dir.path())).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(outcome.outputs["check"], NodeOutput::Text("a.rs:3: trailing whitespace\n".into()));
}

#[tokio::test]
async fn a_run_that_does_not_allow_commands_or_the_program_is_refused_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeProvider::new("fake"));
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let engine = engine_with(fake, store.clone(), EngineConfig::default());
    let conclave = || checked(with_command(command("lint", &["echo", "hi"], CommandParse::Text)));
    let refused = engine.start(conclave(), json!({}), RunOptions::default()).await.expect_err("refused");
    assert!(matches!(&refused, StartError::Command { node_id, .. } if node_id == "lint"), "{refused}");
    assert!(refused.to_string().contains("does not allow commands"), "{refused}");
    let only_git = RunOptions {
        commands: Some(Arc::new(Commands { programs: Some(vec!["git".into()]), workspace: Some(dir.path().into()) })),
        ..RunOptions::default()
    };
    let refused = engine.start(conclave(), json!({}), only_git).await.expect_err("refused");
    assert!(refused.to_string().contains("`echo` is not among the programs"), "{refused}");
    assert!(store.list_runs(10).await.expect("list").is_empty(), "nothing was recorded");
}

/// `in → review (cached agent) → out`, the agent saying `prompt`.
fn cached_review(prompt: &str) -> Conclave {
    let mut conclave = graph(&["in:t", "review:a", "out:o"], &["in>review", "review>out"]);
    let agent = conclave.nodes[1].agent.as_mut().expect("agent");
    agent.system_prompt = prompt.into();
    agent.cache = Some(CacheSetting::On(true));
    conclave
}

#[tokio::test]
async fn a_cache_hit_makes_no_provider_call_and_a_changed_prompt_misses() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        // Each store is a fresh cache only for SQLite and memory: a unique prompt keeps
        // PostgreSQL's entries of earlier test runs out of the way.
        let prompt = format!("Review the change ({name}, {}).", uuid_like());
        fake.script(
            "review",
            [FakeStep::json(json!({"verdict": "first"})), FakeStep::json(json!({"verdict": "second"}))],
        );
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (first, _) = run(&engine, cached_review(&prompt), RunOptions::default()).await;
        assert_eq!(first.status, RunStatus::Succeeded, "{name}: {:?}", first.error);
        assert_eq!(fake.calls_for("review").len(), 1, "{name}");

        let (second, events) = run(&engine, cached_review(&prompt), RunOptions::default()).await;
        assert_eq!(second.status, RunStatus::Succeeded, "{name}: {:?}", second.error);
        assert_eq!(fake.calls_for("review").len(), 1, "{name}: a hit makes no provider call");
        assert_eq!(second.outputs["review"], NodeOutput::Json(json!({"verdict": "first"})), "{name}");
        let cached = events.iter().find_map(|e| match &e.kind {
            EventKind::NodeCached { node_id, from_run, .. } if node_id == "review" => Some(from_run.clone()),
            _ => None,
        });
        assert_eq!(cached.as_deref(), Some(first.run_id.as_str()), "{name}: the hit names the run that stored it");
        let record = store.get_run(&second.run_id).await.expect("get").expect("stored");
        let review = record.nodes.iter().find(|n| n.node_id == "review").expect("review");
        assert_eq!(review.cached_from.as_deref(), Some(first.run_id.as_str()), "{name}");
        assert_eq!(review.usage, Some(Usage::default()), "{name}: a hit costs no tokens and nothing");

        let (third, _) = run(&engine, cached_review(&format!("{prompt} Be brief.")), RunOptions::default()).await;
        assert_eq!(fake.calls_for("review").len(), 2, "{name}: a changed prompt is a miss");
        assert_eq!(third.outputs["review"], NodeOutput::Json(json!({"verdict": "second"})), "{name}");
    }
}

#[tokio::test]
async fn no_cache_runs_a_cached_node_and_keeps_nothing() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("review", [FakeStep::json(json!({"verdict": "kept"})), FakeStep::json(json!({"verdict": "fresh"}))]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let prompt = "Review the change.";
    run(&engine, cached_review(prompt), RunOptions::default()).await;
    let (fresh, events) =
        run(&engine, cached_review(prompt), RunOptions { no_cache: true, ..RunOptions::default() }).await;
    assert_eq!(fake.calls_for("review").len(), 2, "--no-cache runs the node");
    assert_eq!(fresh.outputs["review"], NodeOutput::Json(json!({"verdict": "fresh"})));
    assert!(!events.iter().any(|e| matches!(e.kind, EventKind::NodeCached { .. })));
    let (later, _) = run(&engine, cached_review(prompt), RunOptions::default()).await;
    assert_eq!(later.outputs["review"], NodeOutput::Json(json!({"verdict": "kept"})), "the fresh answer was not kept");
    assert_eq!(fake.calls_for("review").len(), 2);
}

#[tokio::test]
async fn a_cached_command_runs_once_for_the_same_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut node = command("count", &["sh", "-c", "echo ran >> runs.txt; echo counted"], CommandParse::Text);
    node.command.as_mut().expect("command").cache = Some(CacheSetting::For { ttl_secs: 3600 });
    // The repository is read-only in the sandbox: the node opens it for writing.
    let sandbox =
        conclave_shared::SandboxConfig { write: vec![dir.path().display().to_string()], ..Default::default() };
    node.command.as_mut().expect("command").sandbox = Some(sandbox);
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine_with(fake, Arc::new(MemoryStore::new()), EngineConfig::default());
    for _ in 0..2 {
        let (outcome, _) = run(&engine, with_command(node.clone()), allowing(dir.path())).await;
        assert_eq!(outcome.outputs["count"], NodeOutput::Text("counted\n".into()), "{:?}", outcome.error);
    }
    let runs = std::fs::read_to_string(dir.path().join("runs.txt")).expect("ran");
    assert_eq!(runs.lines().count(), 1, "the second run took the cached output");
}

/// A value no earlier run of the tests used.
fn uuid_like() -> String {
    format!("{}-{}", std::process::id(), conclave_core::now_ms())
}

/// `in → draft → verify (loop: check → fix) → writer → out`: the loop stops when
/// `check` confirms, after at most `max` iterations.
fn verify_loop(max: u32) -> Conclave {
    let mut conclave =
        graph(&["in:t", "draft:a", "check:a", "fix:a", "writer:a", "out:o"], &["in>draft", "check>fix", "writer>out"]);
    let mut node = Node::new("verify", NodeKind::Loop);
    node.repeat = Some(LoopConfig {
        body: vec!["check".into(), "fix".into()],
        until: Predicate { pointer: "/check/confirmed".into(), op: PredicateOp::Equals, value: Some(json!(true)) },
        max_iterations: max,
    });
    conclave.nodes.push(node);
    conclave.edges.push(Edge::new("draft", "verify"));
    conclave.edges.push(Edge::new("verify", "writer"));
    conclave
}

#[tokio::test]
async fn a_loop_ends_when_its_predicate_holds_and_records_each_iteration() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        fake.script("draft", [FakeStep::json(json!({"findings": 2}))]);
        fake.script("verify/1/check", [FakeStep::json(json!({"confirmed": false}))]);
        fake.script("verify/2/check", [FakeStep::json(json!({"confirmed": true}))]);
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (outcome, _) = run(&engine, verify_loop(5), RunOptions::default()).await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
        let NodeOutput::Json(verify) = &outcome.outputs["verify"] else { panic!("{name}: the loop's output is JSON") };
        assert_eq!((&verify["outcome"], &verify["iterations"]), (&json!("done"), &json!(2)), "{name}: {verify}");
        assert_eq!(verify["last"]["check"], json!({"confirmed": true}), "{name}");
        assert!(fake.calls_for("verify/3/check").is_empty(), "{name}: no iteration after the predicate held");

        let first = &fake.calls_for("verify/1/check")[0].input["upstream"];
        assert_eq!(first["draft"], json!({"findings": 2}), "{name}: the body's first node gets the loop's inputs");
        assert_eq!(first["verify"], json!({"iteration": 1, "previous": null}), "{name}");
        let second = &fake.calls_for("verify/2/check")[0].input["upstream"];
        assert_eq!(
            second["verify"]["previous"]["check"],
            json!({"confirmed": false}),
            "{name}: the body sees the previous iteration's outputs"
        );
        let fix = &fake.calls_for("verify/2/fix")[0].input["upstream"];
        assert_eq!(fix["check"], json!({"confirmed": true}), "{name}: inside the body, outputs flow by its edges");
        let writer = &fake.calls_for("writer")[0].input["upstream"];
        assert_eq!(writer["verify"]["outcome"], "done", "{name}: the next node reads how the loop ended");

        let record = store.get_run(&outcome.run_id).await.expect("get").expect("stored");
        let entry = |id: &str| record.nodes.iter().find(|n| n.node_id == id).cloned();
        for (id, iteration) in [("verify/1/check", 1), ("verify/1/fix", 1), ("verify/2/check", 2), ("verify/2/fix", 2)]
        {
            let node = entry(id).unwrap_or_else(|| panic!("{name}: no entry for {id}"));
            assert_eq!((node.state, node.iteration), (NodeState::Succeeded, Some(iteration)), "{name}: {id}");
        }
        let check = entry("check").expect("the body's own node");
        assert_eq!(
            (check.state, check.iteration),
            (NodeState::Succeeded, Some(2)),
            "{name}: it shows its last iteration"
        );
        assert_eq!(record.summary.status, RunStatus::Succeeded, "{name}");
    }
}

#[tokio::test]
async fn a_loop_that_exhausts_its_iterations_says_so_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        for n in 1..=2 {
            fake.script(&format!("verify/{n}/check"), [FakeStep::json(json!({"confirmed": false}))]);
        }
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (outcome, _) = run(&engine, verify_loop(2), RunOptions::default()).await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: exhausting a loop is not a failure");
        let NodeOutput::Json(verify) = &outcome.outputs["verify"] else { panic!("{name}: JSON") };
        assert_eq!((&verify["outcome"], &verify["iterations"]), (&json!("exhausted"), &json!(2)), "{name}");
        assert!(fake.calls_for("verify/3/check").is_empty(), "{name}: max_iterations is a hard stop");
        assert_eq!(fake.calls_for("writer")[0].input["upstream"]["verify"]["outcome"], "exhausted", "{name}");
    }
}

#[tokio::test]
async fn a_failing_body_node_fails_the_loop_and_skips_what_follows() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("verify/1/check", [FakeStep::fail(conclave_core::ProviderError::Auth("key refused".into()))]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let (outcome, events) = run(&engine, verify_loop(3), RunOptions::default()).await;
    assert_eq!((outcome.status, outcome.failed_node.as_deref()), (RunStatus::Failed, Some("verify")));
    assert!(outcome.error.unwrap_or_default().contains("`verify/1/check` failed"), "the failure names the body's node");
    assert!(fake.calls_for("verify/1/fix").is_empty() && fake.calls_for("writer").is_empty());
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::NodeSkipped { node_id, .. } if node_id == "writer")));
}

/// `in → draft → approve (approval) → post → out`.
fn approved_post() -> Conclave {
    let mut conclave = graph(&["in:t", "draft:a", "post:a", "out:o"], &["in>draft", "post>out"]);
    let mut node = Node::new("approve", NodeKind::Approval);
    node.approval = Some(ApprovalConfig { prompt: "Post this review?".into(), timeout_secs: None });
    conclave.nodes.insert(2, node);
    conclave.edges.push(Edge::new("draft", "approve"));
    conclave.edges.push(Edge::new("approve", "post"));
    conclave
}

/// Reopens `name`'s store as a restarted process would: SQLite from its file,
/// PostgreSQL through a new connection, the memory store as it is.
async fn reopened(name: &str, store: &Arc<dyn RunStore>, dir: &Path) -> Arc<dyn RunStore> {
    match name {
        "sqlite" => Arc::new(SqliteStore::open(&dir.join("runs.db")).expect("reopen SQLite")),
        "postgres" => {
            let url = std::env::var("CONCLAVE_TEST_POSTGRES_URL").expect("set");
            Arc::new(PostgresStore::connect(&url).await.expect("reconnect"))
        }
        _ => store.clone(),
    }
}

#[tokio::test]
async fn an_approval_parks_the_run_across_a_restart_then_goes_on_or_stops_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        for approved in [true, false] {
            let fake = Arc::new(FakeProvider::new("fake"));
            let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
            let (parked, _) = run(&engine, approved_post(), RunOptions::default()).await;
            assert_eq!(parked.status, RunStatus::Waiting, "{name}: {:?}", parked.error);
            assert!(fake.calls_for("post").is_empty(), "{name}: nothing after the approval runs before the decision");
            let record = store.get_run(&parked.run_id).await.expect("get").expect("stored");
            assert_eq!(record.summary.status, RunStatus::Waiting, "{name}");
            let state =
                |r: &conclave_shared::RunRecord, id: &str| r.nodes.iter().find(|n| n.node_id == id).map(|n| n.state);
            assert_eq!(state(&record, "approve"), Some(NodeState::Waiting), "{name}");
            // The process dies (the engine and its tasks are gone) and another starts:
            // marking dead owners' runs interrupted leaves a parked run alone.
            drop(engine);
            let store = reopened(name, &store, dir.path()).await;
            store.mark_interrupted(&|_| false, conclave_core::now_ms()).await.expect("mark");
            let record = store.get_run(&parked.run_id).await.expect("get").expect("stored");
            assert_eq!(record.summary.status, RunStatus::Waiting, "{name}: a parked run is not interrupted");

            let decision = Decision { approved, by: "alice".into(), comment: Some("looks right".into()) };
            decide(store.as_ref(), &parked.run_id, "approve", decision.clone()).await.expect("decided");
            let again = decide(store.as_ref(), &parked.run_id, "approve", decision).await;
            assert!(
                matches!(again, Err(DecisionError::NotWaiting { .. })),
                "{name}: a node is decided once: {again:?}"
            );

            let fake = Arc::new(FakeProvider::new("fake"));
            let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
            let handle = engine.resume(checked(approved_post()), &parked.run_id, RunOptions::default()).await;
            let outcome = handle.expect("resumes").wait().await;
            assert!(fake.calls_for("draft").is_empty(), "{name}: what ran before the approval is kept");
            let record = store.get_run(&parked.run_id).await.expect("get").expect("stored");
            let events = store.events(&parked.run_id, 0).await.expect("events");
            let decided = events.iter().find_map(|e| match &e.kind {
                EventKind::ApprovalDecided { by, comment, approved, .. } => {
                    Some((by.clone(), comment.clone(), *approved))
                }
                _ => None,
            });
            assert_eq!(
                decided,
                Some(("alice".into(), Some("looks right".into()), approved)),
                "{name}: the decision is an event"
            );
            if approved {
                assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
                assert_eq!(fake.calls_for("post").len(), 1, "{name}: the run goes on past the approval");
                assert_eq!(
                    outcome.outputs["approve"],
                    NodeOutput::Json(json!({"approved": true, "by": "alice", "comment": "looks right"})),
                    "{name}"
                );
            } else {
                assert_eq!(outcome.status, RunStatus::Rejected, "{name}: {:?}", outcome.error);
                assert!(fake.calls_for("post").is_empty(), "{name}: a rejected run stops before what needs approval");
                assert_eq!(state(&record, "post"), Some(NodeState::Skipped), "{name}");
                assert!(outcome.error.unwrap_or_default().contains("rejected by alice: looks right"), "{name}");
            }
            assert_eq!(record.summary.status, outcome.status, "{name}");
        }
    }
}

#[tokio::test]
async fn a_conclave_node_runs_the_other_conclave_nested_in_the_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("conclaves");
    std::fs::create_dir_all(&catalog).expect("mkdir");
    let mut lane = graph(&["in:t", "security:a", "out:o"], &["in>security", "security>out"]);
    lane.id = "lane".into();
    std::fs::write(catalog.join("lane.conclave.json"), lane.to_file_text()).expect("write");
    let mut parent = graph(&["in:t", "prep:a", "writer:a", "out:o"], &["in>prep", "writer>out"]);
    parent
        .nodes
        .insert(2, Node { child: Some(ChildConclave { id: "lane".into() }), ..Node::new("lane", NodeKind::Conclave) });
    parent.edges.extend([Edge::new("prep", "lane"), Edge::new("lane", "writer")]);
    let mut context = conclave_testkit::test_catalog();
    context.catalog = Some(catalog);
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        fake.script("prep", [FakeStep::json(json!({"files": 3}))]);
        fake.script("lane/security", [FakeStep::json(json!({"finding": "token logged"}))]);
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let checked =
            conclave_catalog::check_conclave("parent.conclave.json", parent.clone(), &context).expect("checks");
        let outcome =
            engine.start(checked, json!({"text": "the change"}), RunOptions::default()).await.expect("starts");
        let outcome = outcome.wait().await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
        let security = &fake.calls_for("lane/security")[0].input;
        assert_eq!(security["input"], json!({"text": "the change"}), "{name}: the child's trigger gets the run input");
        assert_eq!(security["upstream"]["prep"], json!({"files": 3}), "{name}: and its first nodes the node's inputs");
        assert_eq!(
            outcome.outputs["lane"],
            NodeOutput::Json(json!({"security": {"finding": "token logged"}})),
            "{name}: the node's output is the child's output node's value"
        );
        assert_eq!(fake.calls_for("writer")[0].input["upstream"]["lane"]["security"]["finding"], "token logged");
        let record = store.get_run(&outcome.run_id).await.expect("get").expect("stored");
        let nested = record.nodes.iter().find(|n| n.node_id == "lane/security").expect("the child's node is nested");
        assert_eq!(nested.state, NodeState::Succeeded, "{name}");
        assert!(record.nodes.iter().all(|n| n.node_id != "lane/in" || n.state == NodeState::Succeeded), "{name}");
    }
}

#[tokio::test]
async fn a_loop_taken_up_again_goes_on_after_its_last_whole_iteration() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, store) in stores(dir.path()).await {
        let fake = Arc::new(FakeProvider::new("fake"));
        fake.script("verify/1/check", [FakeStep::json(json!({"confirmed": false}))]);
        fake.script("verify/1/fix", [FakeStep::json(json!({"fixed": 1}))]);
        fake.script("verify/2/check", [FakeStep::json(json!({"confirmed": true}))]);
        let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
        let (first, events) = run(&engine, verify_loop(5), RunOptions::default()).await;
        assert_eq!(first.status, RunStatus::Succeeded, "{name}");
        // The worker "dies" once the first iteration is whole and the second has begun.
        let cut = events
            .iter()
            .position(|e| matches!(&e.kind, EventKind::NodeStarted { node_id, .. } if node_id == "verify/2/check"))
            .expect("the second iteration started")
            + 1;
        let copy = copy_run(store.as_ref(), &first.run_id, &events[..cut]).await;

        let again = Arc::new(FakeProvider::new("fake"));
        again.script("verify/2/check", [FakeStep::json(json!({"confirmed": true}))]);
        let engine = engine_with(again.clone(), store.clone(), EngineConfig::default());
        let handle = engine.resume(checked(verify_loop(5)), &copy, RunOptions::default()).await.expect("resumes");
        let outcome = handle.wait().await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{name}: {:?}", outcome.error);
        assert!(again.calls_for("verify/1/check").is_empty(), "{name}: the whole first iteration is not run again");
        let second = &again.calls_for("verify/2/check")[0].input["upstream"]["verify"];
        assert_eq!(
            second["previous"]["check"],
            json!({"confirmed": false}),
            "{name}: it sees the first iteration's outputs"
        );
        let NodeOutput::Json(verify) = &outcome.outputs["verify"] else { panic!("{name}: JSON") };
        assert_eq!((&verify["outcome"], &verify["iterations"]), (&json!("done"), &json!(2)), "{name}");
    }
}
