//! The conformance suite every [`RunQueue`] must pass: each claim goes to exactly one
//! worker, oldest first; leases are held, renewed, lost and taken over; cancels reach
//! queued and running runs; runs made without the queue are never claimed; a claimed
//! run's conclave and input are replaced only by its worker, before its first event.

use conclave_shared::{EventKind, RunStatus};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::conformance::{event, new_run, pull_request_ref, sample_conclave};
use conclave_core::{Cancel, Lease, QueueStats, RunQueue};
use conclave_shared::delivery::{Forge, PULL_REQUEST_INPUT};
use conclave_shared::{Conclave, NodeState};

/// Runs every check, each on a fresh queue from `make`.
pub async fn run_all(make: &dyn Fn() -> Arc<dyn RunQueue>) {
    claims_go_oldest_first_to_one_worker_each(make()).await;
    leases_are_renewed_by_their_holder_only(make()).await;
    an_expired_lease_is_taken_over_with_a_higher_attempt(make()).await;
    cancels_reach_queued_and_running_runs(make()).await;
    runs_made_without_the_queue_are_never_claimed(make()).await;
    the_queue_reports_its_depth_and_oldest_wait(make()).await;
    concurrent_claims_never_share_a_run(make()).await;
    slots_are_limited_leased_and_given_back(make()).await;
    pauses_hold_for_everyone_until_they_end(make()).await;
    a_claimed_run_is_prepared_by_its_worker_before_any_event(make()).await;
    only_the_holder_prepares_a_run_and_only_before_its_first_event(make()).await;
}

/// A review of pull request `o/r#7` on GitHub: the input names it, and the conclave
/// (`review`, of two nodes) is not the one the run was enqueued with.
fn prepared() -> (Conclave, serde_json::Value) {
    let mut review = sample_conclave();
    review.id = "review".into();
    review.nodes.truncate(2);
    review.edges.truncate(1);
    let input = json!({PULL_REQUEST_INPUT: pull_request_ref(Forge::Github, "o/r", 7), "diff": "+ x"});
    (review, input)
}

async fn a_claimed_run_is_prepared_by_its_worker_before_any_event(queue: Arc<dyn RunQueue>) {
    queue.enqueue(&new_run("r", 10, "api"), &json!({"kind": "review"})).await.expect("enqueue");
    queue.claim("w1", 100, 1000).await.expect("claim").expect("a run");
    let (review, input) = prepared();
    assert!(queue.prepare_claimed("r", "w1", &review, &input).await.expect("prepare"), "its worker prepares it");
    let run = queue.get_run("r").await.expect("get").expect("run");
    assert_eq!((run.conclave, run.input), (review.clone(), input.clone()), "the new conclave and input are kept");
    assert_eq!((run.summary.conclave_id.as_str(), run.summary.status), ("review", RunStatus::Running));
    let nodes: Vec<(&str, NodeState)> = run.nodes.iter().map(|n| (n.node_id.as_str(), n.state)).collect();
    assert_eq!(nodes, vec![("in", NodeState::Queued), ("a", NodeState::Queued)], "the new conclave's nodes");
    let summary = queue.run_summary("r").await.expect("run_summary").expect("run");
    assert_eq!((summary.conclave_id.as_str(), summary.pull_request.as_deref()), ("review", Some("o/r#7")));
    let listed = queue.list_runs(10).await.expect("list_runs");
    assert_eq!(listed.first().and_then(|s| s.pull_request.as_deref()), Some("o/r#7"), "listed with its request");
    assert_eq!(queue.renew("r", "w1", 200, 1000).await.expect("renew"), Lease::Held { cancel_requested: false });
    queue.append_event(&event("r", 1, finished(RunStatus::Succeeded))).await.expect("the run goes on");
    let run = queue.get_run("r").await.expect("get").expect("run");
    assert_eq!((run.summary.status, run.nodes.len()), (RunStatus::Succeeded, 2), "and ends with the new conclave");
}

async fn only_the_holder_prepares_a_run_and_only_before_its_first_event(queue: Arc<dyn RunQueue>) {
    let (review, input) = prepared();
    for (id, created) in [("held", 10), ("started", 20), ("waiting", 30)] {
        queue.enqueue(&new_run(id, created, "api"), &json!({})).await.expect("enqueue");
    }
    queue.create_run(&new_run("local", 40, "cli")).await.expect("create");
    assert_eq!(queue.claim("w1", 100, 1000).await.expect("claim").map(|j| j.run_id), Some("held".into()));
    assert_eq!(queue.claim("w1", 100, 1000).await.expect("claim").map(|j| j.run_id), Some("started".into()));
    queue
        .append_event(&event("started", 1, EventKind::RunStarted { conclave_id: "sample".into(), node_count: 3 }))
        .await
        .expect("append");
    let refused = [
        ("held", "w2", "another worker's run"),
        ("started", "w1", "a run with an event"),
        ("waiting", "w1", "a queued run nobody holds"),
        ("local", "w1", "a run made without the queue"),
        ("no-such", "w1", "an unknown run"),
    ];
    for (run_id, worker, what) in refused {
        let prepared = queue.prepare_claimed(run_id, worker, &review, &input).await.expect("prepare");
        assert!(!prepared, "{what} is not prepared");
    }
    for run_id in ["held", "started", "waiting", "local"] {
        let run = queue.get_run(run_id).await.expect("get").expect("run");
        assert_eq!((run.conclave, run.input), (sample_conclave(), json!({"text": "hello"})), "{run_id} is unchanged");
        assert_eq!(run.summary.pull_request, None, "{run_id} names no request");
    }
    assert_eq!(queue.claim("w2", 1101, 1000).await.expect("claim").map(|j| j.run_id), Some("held".into()));
    assert!(!queue.prepare_claimed("held", "w1", &review, &input).await.expect("prepare"), "nor its lost holder's");
    assert!(queue.prepare_claimed("held", "w2", &review, &input).await.expect("prepare"), "but the new holder's");
}

async fn pauses_hold_for_everyone_until_they_end(queue: Arc<dyn RunQueue>) {
    assert_eq!(queue.paused_until("provider:anthropic", 100).await.expect("read"), None);
    queue.pause("provider:anthropic", 2000).await.expect("pause");
    queue.pause("provider:anthropic", 1500).await.expect("an earlier end changes nothing");
    assert_eq!(queue.paused_until("provider:anthropic", 100).await.expect("read"), Some(2000));
    assert_eq!(queue.paused_until("provider:openai", 100).await.expect("read"), None, "scopes are apart");
    queue.pause("provider:anthropic", 3000).await.expect("a later end extends it");
    assert_eq!(queue.paused_until("provider:anthropic", 2500).await.expect("read"), Some(3000));
    assert_eq!(queue.paused_until("provider:anthropic", 3000).await.expect("read"), None, "over at its end");
}

async fn slots_are_limited_leased_and_given_back(queue: Arc<dyn RunQueue>) {
    let take = |holder: &'static str, now: u64| {
        let queue = queue.clone();
        async move { queue.take_slot("provider:anthropic", 2, holder, now, 1000).await.expect("take") }
    };
    let first = take("h1", 100).await.expect("a first slot");
    let second = take("h2", 100).await.expect("a second slot");
    assert_ne!(first, second);
    assert_eq!(take("h3", 100).await, None, "two slots, both held");
    let other = queue.take_slot("provider:openai", 2, "h4", 100, 1000).await.expect("take");
    assert!(other.is_some(), "scopes are apart");
    queue.release_slot("provider:anthropic", first, "someone-else").await.expect("release");
    assert_eq!(take("h3", 200).await, None, "only the holder gives a slot back");
    queue.release_slot("provider:anthropic", first, "h1").await.expect("release");
    assert_eq!(take("h3", 200).await, Some(first), "a slot given back is taken again");
    assert!(queue.renew_slot("provider:anthropic", second, "h2", 900, 1000).await.expect("renew"));
    assert!(!queue.renew_slot("provider:anthropic", second, "h3", 900, 1000).await.expect("renew"), "not h3's");
    assert_eq!(take("h5", 1100).await, None, "h2 renewed until 1900 and h3 holds until 1200");
    assert!(take("h5", 2000).await.is_some(), "an expired lease frees its slot (a dead process's)");
}

async fn claims_go_oldest_first_to_one_worker_each(queue: Arc<dyn RunQueue>) {
    queue.enqueue(&new_run("old", 10, "api"), &json!({"kind": "run", "n": 1})).await.expect("enqueue");
    queue.enqueue(&new_run("new", 20, "api"), &json!({"kind": "run", "n": 2})).await.expect("enqueue");
    let run = queue.get_run("old").await.expect("get").expect("run");
    assert_eq!(run.summary.status, RunStatus::Queued, "an enqueued run waits");
    let first = queue.claim("w1", 100, 1000).await.expect("claim").expect("a run");
    assert_eq!((first.run_id.as_str(), first.attempt), ("old", 1), "the oldest first, on its first attempt");
    assert_eq!(first.spec, json!({"kind": "run", "n": 1}), "the spec comes back as enqueued");
    assert!(!first.is_resumed());
    let second = queue.claim("w2", 100, 1000).await.expect("claim").expect("a run");
    assert_eq!(second.run_id, "new");
    assert_eq!(queue.claim("w3", 100, 1000).await.expect("claim"), None, "nothing left");
    let run = queue.get_run("old").await.expect("get").expect("run");
    assert_eq!(run.summary.status, RunStatus::Running, "a claimed run runs");
}

async fn leases_are_renewed_by_their_holder_only(queue: Arc<dyn RunQueue>) {
    queue.enqueue(&new_run("r", 10, "api"), &json!({})).await.expect("enqueue");
    queue.claim("w1", 100, 1000).await.expect("claim").expect("a run");
    assert_eq!(queue.renew("r", "w1", 900, 1000).await.expect("renew"), Lease::Held { cancel_requested: false });
    assert_eq!(queue.claim("w2", 1500, 1000).await.expect("claim"), None, "renewed until 1900: not expired at 1500");
    assert_eq!(queue.renew("r", "w2", 1500, 1000).await.expect("renew"), Lease::Lost, "w2 never held it");
    queue.append_event(&event("r", 1, finished(RunStatus::Succeeded))).await.expect("finish");
    assert_eq!(queue.renew("r", "w1", 1600, 1000).await.expect("renew"), Lease::Lost, "an ended run has no lease");
    assert_eq!(queue.claim("w2", 99_999, 1000).await.expect("claim"), None, "an ended run is never claimed again");
}

async fn an_expired_lease_is_taken_over_with_a_higher_attempt(queue: Arc<dyn RunQueue>) {
    queue.enqueue(&new_run("r", 10, "api"), &json!({"kind": "review"})).await.expect("enqueue");
    queue.claim("dead", 100, 1000).await.expect("claim").expect("a run");
    let again = queue.claim("alive", 1101, 1000).await.expect("claim").expect("the expired run");
    assert_eq!((again.run_id.as_str(), again.attempt), ("r", 2));
    assert!(again.is_resumed(), "a run claimed again is resumed");
    assert_eq!(queue.renew("r", "dead", 1200, 1000).await.expect("renew"), Lease::Lost, "the old holder lost it");
    assert_eq!(queue.renew("r", "alive", 1200, 1000).await.expect("renew"), Lease::Held { cancel_requested: false });
    let marked = queue.mark_interrupted(&|_| false, 5000).await.expect("mark");
    assert!(marked.is_empty(), "a queued run's lease, not its owner, says whether it lives: {marked:?}");
}

async fn cancels_reach_queued_and_running_runs(queue: Arc<dyn RunQueue>) {
    queue.enqueue(&new_run("waiting", 10, "api"), &json!({})).await.expect("enqueue");
    queue.enqueue(&new_run("working", 20, "api"), &json!({})).await.expect("enqueue");
    assert_eq!(queue.claim("w", 100, 1000).await.expect("claim").map(|j| j.run_id), Some("waiting".into()));
    assert_eq!(queue.request_cancel("working", 150).await.expect("cancel"), Cancel::Dequeued);
    let run = queue.get_run("working").await.expect("get").expect("run");
    assert_eq!(run.summary.status, RunStatus::Cancelled, "a queued run ends cancelled at once");
    let events = queue.events("working", 0).await.expect("events");
    assert!(matches!(events.as_slice(), [e] if e.kind == finished_cancelled()), "{events:?}");
    assert_eq!(queue.claim("w", 200, 1000).await.expect("claim"), None, "and is never claimed");
    assert_eq!(queue.request_cancel("waiting", 210).await.expect("cancel"), Cancel::Requested);
    assert_eq!(queue.renew("waiting", "w", 220, 1000).await.expect("renew"), Lease::Held { cancel_requested: true });
    assert_eq!(queue.request_cancel("working", 230).await.expect("cancel"), Cancel::AlreadyEnded);
    assert!(queue.request_cancel("no-such", 240).await.is_err(), "an unknown run is an error");
}

async fn runs_made_without_the_queue_are_never_claimed(queue: Arc<dyn RunQueue>) {
    queue.create_run(&new_run("local", 10, "cli")).await.expect("create");
    assert_eq!(queue.claim("w", 99_999, 1000).await.expect("claim"), None);
    assert_eq!(queue.queue_stats(100).await.expect("stats"), QueueStats::default());
}

async fn the_queue_reports_its_depth_and_oldest_wait(queue: Arc<dyn RunQueue>) {
    for (id, created) in [("a", 100), ("b", 200), ("c", 300)] {
        queue.enqueue(&new_run(id, created, "api"), &json!({})).await.expect("enqueue");
    }
    queue.claim("w", 400, 1000).await.expect("claim").expect("a");
    let stats = queue.queue_stats(1000).await.expect("stats");
    assert_eq!(stats, QueueStats { queued: 2, running: 1, oldest_queued_ms: Some(800) }, "b waited from 200 to 1000");
}

async fn concurrent_claims_never_share_a_run(queue: Arc<dyn RunQueue>) {
    for i in 0..20 {
        queue.enqueue(&new_run(&format!("run-{i:02}"), i, "api"), &json!({})).await.expect("enqueue");
    }
    let workers: Vec<_> = (0..5)
        .map(|w| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                while let Some(job) = queue.claim(&format!("w{w}"), 100, 60_000).await.expect("claim") {
                    mine.push(job.run_id);
                    tokio::task::yield_now().await;
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.expect("worker"));
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (20, 20), "every run claimed exactly once: {all:?}");
}

fn finished(status: RunStatus) -> EventKind {
    EventKind::RunFinished { status, failed_node: None, error: None }
}

fn finished_cancelled() -> EventKind {
    EventKind::RunFinished {
        status: RunStatus::Cancelled,
        failed_node: None,
        error: Some("cancelled by request before it started".into()),
    }
}
