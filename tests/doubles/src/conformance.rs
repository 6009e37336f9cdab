//! The conformance suite every [`RunStore`] implementation must pass.
//!
//! Backends call [`run_all`] from their tests with a factory for fresh, empty stores.
//! The checks panic with a message naming the broken behaviour. Those of kept evals
//! are in `conformance/evals.rs`, those of dismissals in `conformance/dismissals.rs`, those of
//! webhook deliveries in `conformance/deliveries.rs`, those of the webhook
//! dispatcher's pull request records (and of run summaries naming a run's pull
//! request) in `conformance/pull_requests.rs`.

use conclave_shared::{
    AgentConfig, Conclave, Edge, ErrorKind, EventKind, Node, NodeKind, NodeOutput, NodeState, OutputDialect, RunEvent,
    RunStatus, Settings, Usage,
};
use serde_json::json;
use std::sync::Arc;

use conclave_core::{CachedOutput, NewRun, ReviewOf, RunStore, StoreError};

mod deliveries;
mod dismissals;
mod evals;
mod pull_requests;

pub use deliveries::stored_delivery;
pub use dismissals::stored_dismissal;
pub use evals::stored_eval;
pub use pull_requests::{pull_request_ref, stored_pull_request};

/// Runs every check against fresh stores from `make`.
pub async fn run_all(make: &dyn Fn() -> Arc<dyn RunStore>) {
    create_and_read_back(make()).await;
    unknown_runs_are_reported(make()).await;
    events_come_back_in_order_and_filter_by_seq(make()).await;
    out_of_order_events_are_refused(make()).await;
    node_events_update_node_state(make()).await;
    nodes_keep_input_timing_attempts_and_reuse(make()).await;
    run_finished_updates_the_run_and_unfinished_nodes(make()).await;
    listing_is_newest_first_and_limited(make()).await;
    interrupted_runs_are_only_those_with_dead_owners(make()).await;
    duplicate_run_ids_are_refused(make()).await;
    reports_are_stored_and_replaced(make()).await;
    endpoint_dialects_are_remembered_per_provider_and_endpoint(make()).await;
    cached_outputs_are_kept_replaced_and_expire(make()).await;
    run_summaries_are_read_without_the_run(make()).await;
    events_are_read_in_pages(make()).await;
    the_latest_review_is_the_newest_succeeded_one_of_the_branch(make()).await;
    the_latest_review_among_a_thousand_runs(make()).await;
    evals::run_all(make).await;
    dismissals::run_all(make).await;
    deliveries::run_all(make).await;
    pull_requests::run_all(make).await;
}

/// A small conclave: trigger -> a, trigger -> b.
pub fn sample_conclave() -> Conclave {
    let node = |id: &str, kind| Node {
        label: id.to_uppercase(),
        agent: (kind == NodeKind::Agent).then(|| AgentConfig::new("fake")),
        ..Node::new(id, kind)
    };
    Conclave {
        version: 1,
        id: "sample".into(),
        name: "Sample".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![node("in", NodeKind::Trigger), node("a", NodeKind::Agent), node("b", NodeKind::Agent)],
        edges: vec![
            Edge { from: "in".into(), to: "a".into(), case: None },
            Edge { from: "in".into(), to: "b".into(), case: None },
        ],
    }
}

pub(crate) fn new_run(id: &str, created_ms: u64, owner: &str) -> NewRun {
    NewRun {
        id: id.into(),
        conclave: sample_conclave(),
        input: json!({"text": "hello"}),
        created_ms,
        owner: owner.into(),
    }
}

pub(crate) fn event(run_id: &str, seq: u64, kind: EventKind) -> RunEvent {
    RunEvent { run_id: run_id.into(), seq, at_ms: 1000 + seq, kind }
}

async fn create_and_read_back(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 5, "me")).await.expect("create_run");
    let run = store.get_run("r1").await.expect("get_run").expect("run exists");
    assert_eq!(run.summary.status, RunStatus::Running, "a new run is running");
    assert_eq!(run.summary.created_ms, 5);
    assert_eq!(run.conclave, sample_conclave(), "the conclave snapshot round-trips");
    assert_eq!(run.input, json!({"text": "hello"}), "the input round-trips");
    let nodes: Vec<(&str, NodeState)> = run.nodes.iter().map(|n| (n.node_id.as_str(), n.state)).collect();
    assert_eq!(
        nodes,
        vec![("in", NodeState::Queued), ("a", NodeState::Queued), ("b", NodeState::Queued)],
        "nodes queued in conclave order"
    );
}

async fn unknown_runs_are_reported(store: Arc<dyn RunStore>) {
    assert!(store.get_run("nope").await.expect("get_run").is_none(), "unknown run is None");
    assert!(matches!(store.events("nope", 0).await, Err(StoreError::UnknownRun(_))), "events of unknown run");
    let err = store.append_event(&event("nope", 1, EventKind::NodeStarted { node_id: "a".into(), input: None })).await;
    assert!(matches!(err, Err(StoreError::UnknownRun(_))), "append to unknown run: {err:?}");
}

async fn events_come_back_in_order_and_filter_by_seq(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    let kinds = [
        EventKind::RunStarted { conclave_id: "sample".into(), node_count: 3 },
        EventKind::NodeStarted { node_id: "a".into(), input: None },
        EventKind::TextDelta { node_id: "a".into(), text: "hé \"quoted\"".into() },
        EventKind::ToolCall { node_id: "a".into(), tool: "grep".into(), arguments: json!({"pattern": "x"}) },
    ];
    for (i, kind) in kinds.iter().enumerate() {
        store.append_event(&event("r1", i as u64 + 1, kind.clone())).await.expect("append");
    }
    let all = store.events("r1", 0).await.expect("events");
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert_eq!(all[2].kind, kinds[2], "event payloads round-trip exactly");
    let later = store.events("r1", 2).await.expect("events");
    assert_eq!(later.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4], "after_seq filters");
}

async fn out_of_order_events_are_refused(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    store
        .append_event(&event("r1", 2, EventKind::NodeStarted { node_id: "a".into(), input: None }))
        .await
        .expect("append");
    for seq in [2, 1] {
        let err =
            store.append_event(&event("r1", seq, EventKind::NodeStarted { node_id: "b".into(), input: None })).await;
        assert!(matches!(err, Err(StoreError::OutOfOrder { .. })), "seq {seq} after 2 must be refused: {err:?}");
    }
    let run = store.get_run("r1").await.expect("get").expect("exists");
    assert_eq!(run.nodes[2].state, NodeState::Queued, "a refused event changes nothing");
    assert_eq!(store.events("r1", 0).await.expect("events").len(), 1);
}

async fn node_events_update_node_state(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    let usage = Usage { cost_usd: Some(0.25), ..Usage::tokens(10, 3) };
    let seq = [
        EventKind::NodeStarted { node_id: "in".into(), input: None },
        EventKind::NodeCompleted {
            node_id: "in".into(),
            output: NodeOutput::Json(json!({"x": 1})),
            usage: usage.clone(),
            duration_ms: 4,
        },
        EventKind::NodeFailed { node_id: "a".into(), error_kind: ErrorKind::Timeout, message: "took too long".into() },
        EventKind::NodeSkipped { node_id: "b".into(), because_of: "a".into(), route: false },
    ];
    for (i, kind) in seq.into_iter().enumerate() {
        store.append_event(&event("r1", i as u64 + 1, kind)).await.expect("append");
    }
    let run = store.get_run("r1").await.expect("get").expect("exists");
    assert_eq!(run.nodes[0].state, NodeState::Succeeded);
    assert_eq!(run.nodes[0].output, Some(NodeOutput::Json(json!({"x": 1}))), "output stored");
    assert_eq!(run.nodes[0].usage, Some(usage), "usage stored");
    assert_eq!(run.nodes[1].state, NodeState::Failed);
    assert_eq!(run.nodes[1].error.as_deref(), Some("timeout: took too long"));
    assert_eq!(run.nodes[2].state, NodeState::Skipped);
    assert_eq!(run.nodes[2].error.as_deref(), Some("skipped because `a` did not succeed"));
}

/// The events of a run of [`sample_conclave`] that ends with every kind of node a
/// run ends with: reused, succeeded after a failed attempt (its usage over both),
/// stopped with the run (cancelled). The agent's usage over both attempts is 9
/// input and 5 output tokens, costing $0.50.
pub fn every_kind_of_node() -> Vec<EventKind> {
    let failed_usage = Usage::tokens(4, 2);
    let total = Usage { cost_usd: Some(0.5), ..Usage::tokens(9, 5) };
    vec![
        EventKind::NodeReused {
            node_id: "in".into(),
            from_run: "r0".into(),
            output: NodeOutput::Text("earlier".into()),
            input: Some("earlier input".into()),
        },
        EventKind::NodeStarted { node_id: "a".into(), input: Some("## Run input\n\nhello".into()) },
        EventKind::AttemptFailed {
            node_id: "a".into(),
            attempt: 1,
            errors: vec!["/x: missing".into()],
            raw: "{}".into(),
            usage: failed_usage,
        },
        EventKind::NodeCompleted {
            node_id: "a".into(),
            output: NodeOutput::Json(json!({"x": 1})),
            usage: total,
            duration_ms: 2,
        },
        EventKind::NodeStarted { node_id: "b".into(), input: None },
        EventKind::RunFinished { status: RunStatus::Cancelled, failed_node: None, error: None },
    ]
}

async fn nodes_keep_input_timing_attempts_and_reuse(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    let total = Usage { cost_usd: Some(0.5), ..Usage::tokens(9, 5) };
    let seq = every_kind_of_node();
    for (i, kind) in seq.into_iter().enumerate() {
        store.append_event(&event("r1", i as u64 + 1, kind)).await.expect("append");
    }
    let run = store.get_run("r1").await.expect("get").expect("exists");
    let reused = &run.nodes[0];
    assert_eq!(
        (reused.state, reused.output.clone(), reused.input.as_deref(), reused.reused_from.as_deref()),
        (NodeState::Succeeded, Some(NodeOutput::Text("earlier".into())), Some("earlier input"), Some("r0")),
        "a reused node keeps the earlier output and input and names the earlier run"
    );
    assert_eq!((reused.started_ms, reused.finished_ms, reused.usage.clone()), (Some(1001), Some(1001), None));
    let a = &run.nodes[1];
    assert_eq!(a.input.as_deref(), Some("## Run input\n\nhello"), "the agent's input is kept");
    assert_eq!((a.attempts, a.started_ms, a.finished_ms), (2, Some(1002), Some(1004)), "attempts and timing");
    assert_eq!(a.usage, Some(total), "the usage over every attempt");
    let b = &run.nodes[2];
    assert_eq!(
        (b.state, b.started_ms, b.finished_ms),
        (NodeState::Cancelled, Some(1005), Some(1006)),
        "a node running when the run ended ends with it"
    );
}

async fn run_finished_updates_the_run_and_unfinished_nodes(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    store
        .append_event(&event("r1", 1, EventKind::NodeStarted { node_id: "a".into(), input: None }))
        .await
        .expect("append");
    let finished = EventKind::RunFinished {
        status: RunStatus::Cancelled,
        failed_node: None,
        error: Some("cancelled by request".into()),
    };
    store.append_event(&event("r1", 2, finished)).await.expect("append");
    let run = store.get_run("r1").await.expect("get").expect("exists");
    assert_eq!(run.summary.status, RunStatus::Cancelled);
    assert_eq!(run.summary.finished_ms, Some(1002), "finished at the event's time");
    assert_eq!(run.summary.error.as_deref(), Some("cancelled by request"));
    assert!(
        run.nodes.iter().all(|n| n.state == NodeState::Cancelled),
        "unfinished nodes are cancelled: {:?}",
        run.nodes
    );

    store.create_run(&new_run("r2", 2, "me")).await.expect("create_run");
    let failed =
        EventKind::RunFinished { status: RunStatus::Failed, failed_node: Some("a".into()), error: Some("boom".into()) };
    store.append_event(&event("r2", 1, failed)).await.expect("append");
    let run = store.get_run("r2").await.expect("get").expect("exists");
    assert_eq!((run.summary.status, run.summary.failed_node.as_deref()), (RunStatus::Failed, Some("a")));
}

async fn listing_is_newest_first_and_limited(store: Arc<dyn RunStore>) {
    for (id, created) in [("r-old", 10), ("r-new", 30), ("r-mid", 20)] {
        store.create_run(&new_run(id, created, "me")).await.expect("create_run");
    }
    let ids: Vec<String> = store.list_runs(10).await.expect("list").into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec!["r-new", "r-mid", "r-old"], "newest first");
    assert_eq!(store.list_runs(2).await.expect("list").len(), 2, "limit honoured");
}

async fn interrupted_runs_are_only_those_with_dead_owners(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("dead", 1, "pid:1")).await.expect("create_run");
    store.create_run(&new_run("alive", 2, "pid:2")).await.expect("create_run");
    store.create_run(&new_run("done", 3, "pid:1")).await.expect("create_run");
    store
        .append_event(&event("dead", 1, EventKind::NodeStarted { node_id: "a".into(), input: None }))
        .await
        .expect("append");
    let done = EventKind::RunFinished { status: RunStatus::Succeeded, failed_node: None, error: None };
    store.append_event(&event("done", 1, done)).await.expect("append");

    let marked = store.mark_interrupted(&|owner| owner == "pid:2", 9000).await.expect("mark_interrupted");
    assert_eq!(marked, vec!["dead".to_string()], "only the running run with a dead owner");
    let dead = store.get_run("dead").await.expect("get").expect("exists");
    assert_eq!(dead.summary.status, RunStatus::Interrupted);
    assert_eq!(dead.nodes[1].state, NodeState::Interrupted, "the node that was running is marked interrupted");
    let events = store.events("dead", 0).await.expect("events");
    assert_eq!(events.len(), 2, "earlier events kept and one appended");
    assert_eq!(events[1].seq, 2);
    assert!(matches!(events[1].kind, EventKind::RunFinished { status: RunStatus::Interrupted, .. }));
    assert_eq!(store.get_run("alive").await.expect("get").expect("exists").summary.status, RunStatus::Running);
    assert_eq!(store.get_run("done").await.expect("get").expect("exists").summary.status, RunStatus::Succeeded);
    assert!(store.mark_interrupted(&|_| false, 9001).await.expect("again").contains(&"alive".to_string()));
}

async fn duplicate_run_ids_are_refused(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    assert!(store.create_run(&new_run("r1", 2, "me")).await.is_err(), "a second run with the same id must be refused");
    assert_eq!(
        store.get_run("r1").await.expect("get").expect("exists").summary.created_ms,
        1,
        "the first run is intact"
    );
}

async fn reports_are_stored_and_replaced(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    assert_eq!(store.get_report("r1", "markdown").await.expect("get"), None, "no report yet");
    store.put_report("r1", "markdown", "# first").await.expect("put");
    store.put_report("r1", "sarif", "{}").await.expect("put");
    store.put_report("r1", "markdown", "# second \u{2014} ünïcode").await.expect("replace");
    assert_eq!(store.get_report("r1", "markdown").await.expect("get").as_deref(), Some("# second \u{2014} ünïcode"));
    assert_eq!(store.get_report("r1", "sarif").await.expect("get").as_deref(), Some("{}"));
    assert!(matches!(store.put_report("nope", "markdown", "x").await, Err(StoreError::UnknownRun(_))));
}

async fn endpoint_dialects_are_remembered_per_provider_and_endpoint(store: Arc<dyn RunStore>) {
    let (local, other) = ("http://127.0.0.1:8080/v1", "http://127.0.0.1:9090/v1");
    assert_eq!(store.endpoint_dialect("openai", local).await.expect("read"), None, "nothing is known at first");
    store.remember_endpoint_dialect("openai", local, OutputDialect::JsonObjectSchema).await.expect("remember");
    store.remember_endpoint_dialect("openai", other, OutputDialect::Prompt).await.expect("remember");
    assert_eq!(store.endpoint_dialect("openai", local).await.expect("read"), Some(OutputDialect::JsonObjectSchema));
    assert_eq!(store.endpoint_dialect("ollama", local).await.expect("read"), None, "another provider's is separate");
    store.remember_endpoint_dialect("openai", local, OutputDialect::JsonObject).await.expect("replace");
    assert_eq!(store.endpoint_dialect("openai", local).await.expect("read"), Some(OutputDialect::JsonObject));
    assert_eq!(store.endpoint_dialect("openai", other).await.expect("read"), Some(OutputDialect::Prompt));
}

async fn cached_outputs_are_kept_replaced_and_expire(store: Arc<dyn RunStore>) {
    let entry = |run: &str, text: &str, expires_ms| CachedOutput {
        output: NodeOutput::Json(serde_json::json!({"text": text, "n": [1, 2.5]})),
        run_id: run.into(),
        node_id: "lint".into(),
        stored_ms: 100,
        expires_ms,
    };
    assert_eq!(store.cached_output("k1", 0).await.expect("read"), None, "nothing is cached at first");
    store.cache_output("k1", &entry("r1", "first", None)).await.expect("store");
    store.cache_output("k2", &entry("r1", "brief", Some(500))).await.expect("store");
    assert_eq!(store.cached_output("k1", 10_000).await.expect("read"), Some(entry("r1", "first", None)));
    assert_eq!(store.cached_output("k2", 499).await.expect("read"), Some(entry("r1", "brief", Some(500))));
    assert_eq!(store.cached_output("k2", 500).await.expect("read"), None, "an entry is gone at its expiry");
    store.cache_output("k1", &entry("r2", "second", Some(900))).await.expect("replace");
    assert_eq!(store.cached_output("k1", 800).await.expect("read"), Some(entry("r2", "second", Some(900))));
    assert_eq!(store.cached_output("k3", 0).await.expect("read"), None, "an unknown key has nothing");
}

async fn run_summaries_are_read_without_the_run(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 7, "me")).await.expect("create_run");
    let summary = store.run_summary("r1").await.expect("run_summary").expect("the run exists");
    assert_eq!((summary.id.as_str(), summary.status, summary.created_ms), ("r1", RunStatus::Running, 7));
    finish(&store, "r1", 1, RunStatus::Failed).await;
    let summary = store.run_summary("r1").await.expect("run_summary").expect("the run exists");
    assert_eq!((summary.status, summary.finished_ms), (RunStatus::Failed, Some(1001)), "the run's end is read");
    assert_eq!(store.run_summary("nope").await.expect("run_summary"), None, "an unknown run has none");
}

async fn events_are_read_in_pages(store: Arc<dyn RunStore>) {
    store.create_run(&new_run("r1", 1, "me")).await.expect("create_run");
    let started = |seq: u64| event("r1", seq, EventKind::NodeStarted { node_id: "a".into(), input: None });
    // Blocks of 4, 1 and 5 events, as three writes store them.
    store.append_events(&(1..=4).map(started).collect::<Vec<_>>()).await.expect("append");
    store.append_event(&started(5)).await.expect("append");
    store.append_events(&(6..=10).map(started).collect::<Vec<_>>()).await.expect("append");
    let seqs = |page: Vec<RunEvent>| page.iter().map(|e| e.seq).collect::<Vec<_>>();
    let mut after = 0;
    let mut pages = Vec::new();
    loop {
        let page = seqs(store.events_page("r1", after, 3).await.expect("events_page"));
        let Some(&last) = page.last() else { break };
        after = last;
        pages.push(page);
    }
    assert_eq!(pages, vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9], vec![10]], "pages of 3, across blocks");
    assert_eq!(seqs(store.events_page("r1", 2, 4).await.expect("page")), vec![3, 4, 5, 6], "from inside a block");
    assert_eq!(seqs(store.events_page("r1", 0, 100).await.expect("page")), (1..=10).collect::<Vec<_>>());
    assert!(store.events_page("r1", 10, 5).await.expect("page").is_empty(), "nothing after the last");
    assert!(store.events_page("r1", 0, 0).await.expect("page").is_empty(), "a page of none");
    let unknown = store.events_page("nope", 0, 5).await;
    assert!(matches!(unknown, Err(StoreError::UnknownRun(ref id)) if id == "nope"), "{unknown:?}");
}

/// A review run's input as the review pipeline records it.
pub fn review_input(repository: &str, branch: Option<&str>) -> serde_json::Value {
    json!({"repository": repository, "base": "main", "files": [], "diff": "", "head": {"branch": branch, "commit": "c0ffee"}})
}

/// Records a run with `input` created at `created_ms` and ends it with `status`.
async fn stored_review(
    store: &Arc<dyn RunStore>,
    id: &str,
    created_ms: u64,
    input: serde_json::Value,
    status: RunStatus,
) {
    let run = NewRun { input, ..new_run(id, created_ms, "me") };
    store.create_run(&run).await.expect("create_run");
    if status != RunStatus::Running {
        finish(store, id, 1, status).await;
    }
}

async fn finish(store: &Arc<dyn RunStore>, id: &str, seq: u64, status: RunStatus) {
    let end = EventKind::RunFinished { status, failed_node: None, error: None };
    store.append_event(&event(id, seq, end)).await.expect("append");
}

/// Stores 1,000 finished reviews of `main` over three repositories (run `i` of
/// `/srv/a`, `/srv/b` or `/srv/c` by `i % 3`, created at `i`, failed when `i % 10`
/// is 7). The newest succeeded review of `/srv/b` ([`review_of_b`]) is run 994: run
/// 997 failed. The stores' own tests look at how they answer it.
pub async fn thousand_reviews(store: Arc<dyn RunStore>) {
    for i in 0..1000u64 {
        let repo = ["/srv/a", "/srv/b", "/srv/c"][(i % 3) as usize];
        let status = if i % 10 == 7 { RunStatus::Failed } else { RunStatus::Succeeded };
        stored_review(&store, &format!("run-{i:04}"), i, review_input(repo, Some("main")), status).await;
    }
}

/// The reviews of `main` (or `origin/main`) of `/srv/b`.
pub fn review_of_b() -> ReviewOf {
    review_of("/srv/b", &["main", "origin/main"])
}

fn review_of(repository: &str, branches: &[&str]) -> ReviewOf {
    ReviewOf { repository: repository.into(), branches: branches.iter().map(|b| b.to_string()).collect() }
}

async fn the_latest_review_is_the_newest_succeeded_one_of_the_branch(store: Arc<dyn RunStore>) {
    let (repo, other) = ("/work/repo", "/work/other");
    let runs = [
        ("old", 10, review_input(repo, Some("main")), RunStatus::Succeeded),
        ("wanted", 20, review_input(repo, Some("main")), RunStatus::Succeeded),
        ("newer-failed", 30, review_input(repo, Some("main")), RunStatus::Failed),
        ("newer-running", 40, review_input(repo, Some("main")), RunStatus::Running),
        ("other-branch", 50, review_input(repo, Some("feature")), RunStatus::Succeeded),
        ("other-repo", 60, review_input(other, Some("main")), RunStatus::Succeeded),
        ("detached", 70, review_input(repo, None), RunStatus::Succeeded),
        ("plain", 80, json!({"text": "main"}), RunStatus::Succeeded),
        ("prefix-repo", 90, review_input("/work/repo2", Some("main")), RunStatus::Succeeded),
    ];
    for (id, created, input, status) in runs {
        stored_review(&store, id, created, input, status).await;
    }
    let latest = |of: ReviewOf| {
        let store = store.clone();
        async move { store.latest_review(&of).await.expect("latest_review") }
    };
    assert_eq!(latest(review_of(repo, &["main"])).await.as_deref(), Some("wanted"), "the newest succeeded one");
    assert_eq!(
        latest(review_of(repo, &["feature", "main"])).await.as_deref(),
        Some("other-branch"),
        "any of the names"
    );
    assert_eq!(latest(review_of(other, &["main"])).await.as_deref(), Some("other-repo"));
    assert_eq!(latest(review_of(repo, &["mai"])).await, None, "a branch matches whole");
    assert_eq!(latest(review_of("/work", &["main"])).await, None, "a repository matches whole");
    assert_eq!(latest(review_of(repo, &[])).await, None, "no names, no review");
    // Created at the same moment: the larger id, as listing orders them.
    stored_review(&store, "wanted-2", 20, review_input(other, Some("next")), RunStatus::Succeeded).await;
    stored_review(&store, "wanted-1", 20, review_input(other, Some("next")), RunStatus::Succeeded).await;
    assert_eq!(latest(review_of(other, &["next"])).await.as_deref(), Some("wanted-2"), "ties go to the larger id");
}

/// 1,000 stored runs: reviews of three repositories and four branches, some failed,
/// some of them not reviews; the answer must be the newest succeeded review of the
/// branch, as a scan of every run would find.
async fn the_latest_review_among_a_thousand_runs(store: Arc<dyn RunStore>) {
    let repos = ["/srv/a", "/srv/b", "/srv/c"];
    let branches = ["main", "dev", "feature/x", "x"];
    let mut stored = Vec::new();
    for i in 0..1000u64 {
        let (repo, branch) = (repos[(i % 3) as usize], branches[(i / 3 % 4) as usize]);
        let status = if i % 7 == 3 { RunStatus::Failed } else { RunStatus::Succeeded };
        let input = if i % 11 == 5 { json!({"text": branch}) } else { review_input(repo, Some(branch)) };
        // Creation times out of id order, so neither alone gives the answer.
        let created = (i * 7919) % 1000;
        stored.push((format!("run-{i:04}"), created, input.clone(), status));
        stored_review(&store, &format!("run-{i:04}"), created, input, status).await;
    }
    for repo in repos {
        for wanted in [vec!["main"], vec!["x", "feature/x"], vec!["dev"]] {
            let expected = stored
                .iter()
                .filter(|(_, _, input, status)| {
                    *status == RunStatus::Succeeded
                        && input["repository"] == repo
                        && input["head"]["branch"].as_str().is_some_and(|b| wanted.contains(&b))
                })
                .max_by_key(|(id, created, _, _)| (*created, id.clone()))
                .map(|(id, ..)| id.clone());
            assert!(expected.is_some(), "the data holds a review of {repo} {wanted:?}");
            let found = store.latest_review(&review_of(repo, &wanted)).await.expect("latest_review");
            assert_eq!(found, expected, "the latest review of {repo} {wanted:?} among 1,000 runs");
        }
    }
}
