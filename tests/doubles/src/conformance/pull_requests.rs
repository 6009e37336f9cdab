//! The conformance checks of the webhook dispatcher's pull request records: one per
//! forge, repository and number, every field read back as written, a put replacing
//! the earlier record, the busy ones listed least recently changed first; and run
//! summaries naming the pull request their input names, as people write it.

use conclave_core::{NewRun, RunStore};
use conclave_shared::delivery::{Forge, PULL_REQUEST_INPUT, PullRequestRef, PullRequestReviews, WantedReview};
use conclave_shared::{EventKind, RunStatus};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{event, new_run};

/// Every check of pull request records, each against a fresh store from `make`.
pub(super) async fn run_all(make: &dyn Fn() -> Arc<dyn RunStore>) {
    an_unknown_request_has_no_record(make()).await;
    every_field_reads_back_as_written(make()).await;
    a_put_replaces_the_earlier_record(make()).await;
    busy_records_are_listed_least_recently_changed_first(make()).await;
    the_same_number_on_two_forges_is_two_requests(make()).await;
    run_summaries_name_the_pull_request_of_their_input(make()).await;
}

/// Pull request `number` of `repository` on `forge`, reached without an installation.
pub fn pull_request_ref(forge: Forge, repository: &str, number: u64) -> PullRequestRef {
    PullRequestRef { forge, repository: repository.into(), number, installation: None }
}

/// The record of a request whose review `run` is queued or running, changed at
/// `updated_ms`.
pub fn stored_pull_request(forge: Forge, repository: &str, number: u64, updated_ms: u64) -> PullRequestReviews {
    PullRequestReviews {
        run: Some(format!("review-{repository}-{number}")),
        ..PullRequestReviews::new(pull_request_ref(forge, repository, number), updated_ms)
    }
}

async fn an_unknown_request_has_no_record(store: Arc<dyn RunStore>) {
    let read = |forge, repository: &'static str, number| {
        let store = store.clone();
        async move { store.pull_request(forge, repository, number).await.expect("pull_request") }
    };
    assert_eq!(read(Forge::Github, "acme/app", 7).await, None, "an empty store has no record");
    store.put_pull_request(&stored_pull_request(Forge::Github, "acme/app", 7, 10)).await.expect("put");
    assert_eq!(read(Forge::Github, "acme/app", 8).await, None, "another number");
    assert_eq!(read(Forge::Github, "acme/other", 7).await, None, "another repository");
    assert_eq!(read(Forge::Github, "Acme/App", 7).await, None, "a repository matches as written");
    assert_eq!(read(Forge::Github, "acme", 7).await, None, "a repository matches whole");
    assert!(read(Forge::Github, "acme/app", 7).await.is_some(), "the one put is there");
}

async fn every_field_reads_back_as_written(store: Arc<dyn RunStore>) {
    let full = PullRequestReviews {
        pull_request: PullRequestRef {
            forge: Forge::Gitlab,
            repository: "group/sub/prøject ' \" x".into(),
            number: u64::from(u32::MAX) + 9,
            installation: Some(4_242_424_242),
        },
        run: Some("run-2".into()),
        run_head: Some("89abcdef0123456789abcdef0123456789abcdef".into()),
        wanted: Some(WantedReview {
            head: Some("0123456789abcdef0123456789abcdef01234567".into()),
            full: true,
            commanded: true,
            delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
            asked_ms: 1_700_000_000_456,
        }),
        posted_run: Some("run-1".into()),
        reviewed_head: Some("fedcba9876543210fedcba9876543210fedcba98".into()),
        superseded: 3,
        updated_ms: 1_700_000_000_789,
    };
    let waiting = PullRequestReviews {
        wanted: Some(WantedReview { head: None, full: false, commanded: false, delivery: "d-1".into(), asked_ms: 5 }),
        ..PullRequestReviews::new(pull_request_ref(Forge::Github, "acme/app", 1), 6)
    };
    let idle = PullRequestReviews::new(pull_request_ref(Forge::Github, "acme/app", 2), 7);
    for record in [&full, &waiting, &idle] {
        store.put_pull_request(record).await.expect("put_pull_request");
    }
    for record in [full, waiting, idle] {
        let request = &record.pull_request;
        let read = store.pull_request(request.forge, &request.repository, request.number).await.expect("read");
        assert_eq!(read, Some(record.clone()), "every field read back as written");
    }
}

async fn a_put_replaces_the_earlier_record(store: Arc<dyn RunStore>) {
    let busy = stored_pull_request(Forge::Github, "acme/app", 7, 10);
    store.put_pull_request(&busy).await.expect("put");
    let ended = PullRequestReviews {
        run: None,
        posted_run: busy.run.clone(),
        reviewed_head: Some("c0ffee".into()),
        updated_ms: 20,
        ..busy.clone()
    };
    store.put_pull_request(&ended).await.expect("replace");
    let read = store.pull_request(Forge::Github, "acme/app", 7).await.expect("read");
    assert_eq!(read, Some(ended.clone()), "the later record replaces the earlier");
    assert_eq!(store.busy_pull_requests(10).await.expect("busy"), vec![], "an idle record is not busy");
    let again = PullRequestReviews { run: Some("review-2".into()), updated_ms: 30, ..ended };
    store.put_pull_request(&again).await.expect("replace");
    assert_eq!(store.busy_pull_requests(10).await.expect("busy"), vec![again], "busy again, and listed once");
}

async fn busy_records_are_listed_least_recently_changed_first(store: Arc<dyn RunStore>) {
    let waiting = |forge, repository, number, updated_ms| PullRequestReviews {
        run: None,
        wanted: Some(WantedReview { head: None, full: false, commanded: true, delivery: "d".into(), asked_ms: 1 }),
        ..stored_pull_request(forge, repository, number, updated_ms)
    };
    let puts = [
        stored_pull_request(Forge::Github, "b/x", 1, 30),
        waiting(Forge::Github, "a/y", 10, 10),
        stored_pull_request(Forge::Gitlab, "a/y", 1, 10),
        stored_pull_request(Forge::Github, "a/y", 9, 10),
        PullRequestReviews::new(pull_request_ref(Forge::Github, "idle/one", 1), 0),
        // Repositories compare byte by byte: `Z` comes before `a`.
        waiting(Forge::Github, "Zeta/app", 1, 10),
        stored_pull_request(Forge::Github, "c/late", 1, 40),
    ];
    for record in &puts {
        store.put_pull_request(record).await.expect("put_pull_request");
    }
    let keys = |list: Vec<PullRequestReviews>| -> Vec<(Forge, String, u64)> {
        list.into_iter().map(|r| (r.pull_request.forge, r.pull_request.repository, r.pull_request.number)).collect()
    };
    let expected: Vec<(Forge, String, u64)> = [
        (Forge::Github, "Zeta/app", 1),
        (Forge::Github, "a/y", 9),
        (Forge::Github, "a/y", 10),
        (Forge::Gitlab, "a/y", 1),
        (Forge::Github, "b/x", 1),
        (Forge::Github, "c/late", 1),
    ]
    .into_iter()
    .map(|(forge, repository, number)| (forge, repository.to_string(), number))
    .collect();
    let busy = store.busy_pull_requests(10).await.expect("busy");
    assert_eq!(keys(busy.clone()), expected, "least recently changed first, then by forge, repository and number");
    assert_eq!(busy[0], puts[5], "the records whole, one busy with only a wanted review among them");
    assert_eq!(keys(store.busy_pull_requests(3).await.expect("busy")), expected[..3].to_vec(), "at most the limit");
    assert!(store.busy_pull_requests(0).await.expect("busy").is_empty(), "a limit of none");
}

async fn the_same_number_on_two_forges_is_two_requests(store: Arc<dyn RunStore>) {
    let github = stored_pull_request(Forge::Github, "acme/app", 7, 10);
    let gitlab =
        PullRequestReviews { run: Some("on-gitlab".into()), ..stored_pull_request(Forge::Gitlab, "acme/app", 7, 20) };
    store.put_pull_request(&github).await.expect("put");
    store.put_pull_request(&gitlab).await.expect("put");
    assert_eq!(store.pull_request(Forge::Github, "acme/app", 7).await.expect("read"), Some(github.clone()));
    assert_eq!(store.pull_request(Forge::Gitlab, "acme/app", 7).await.expect("read"), Some(gitlab.clone()));
    assert_eq!(store.busy_pull_requests(10).await.expect("busy"), vec![github, gitlab], "both listed");
}

/// The label [`PullRequestRef::of_input`] reads from `input`, which is what every
/// store's summary must say.
fn label_of(input: &Value) -> Option<String> {
    PullRequestRef::of_input(input).map(|request| request.label())
}

async fn run_summaries_name_the_pull_request_of_their_input(store: Arc<dyn RunStore>) {
    let github = json!(pull_request_ref(Forge::Github, "o/r", 7));
    let gitlab = json!({"forge": "gitlab", "repository": "g/s/p", "number": 3, "installation": 12});
    let inputs = [
        ("github", json!({PULL_REQUEST_INPUT: github, "text": "review", "diff": "+ x"}), Some("o/r#7")),
        ("gitlab", json!({PULL_REQUEST_INPUT: gitlab}), Some("g/s/p!3")),
        ("plain", json!({"text": "hello"}), None),
        ("no-number", json!({PULL_REQUEST_INPUT: {"forge": "github", "repository": "o/r"}}), None),
        ("other-forge", json!({PULL_REQUEST_INPUT: {"forge": "gitea", "repository": "o/r", "number": 7}}), None),
        ("a-string", json!({PULL_REQUEST_INPUT: "o/r#7"}), None),
        ("json-in-a-string", json!({PULL_REQUEST_INPUT: github.to_string()}), None),
        ("a-number", json!({PULL_REQUEST_INPUT: 7}), None),
        ("null", json!({PULL_REQUEST_INPUT: null}), None),
        ("not-an-object", json!(["pull_request"]), None),
        ("nested", json!({"head": {PULL_REQUEST_INPUT: github}}), None),
    ];
    for (i, (id, input, _)) in inputs.iter().enumerate() {
        let run = NewRun { input: input.clone(), ..new_run(id, i as u64, "me") };
        store.create_run(&run).await.expect("create_run");
    }
    let finished = EventKind::RunFinished { status: RunStatus::Succeeded, failed_node: None, error: None };
    store.append_event(&event("github", 1, finished)).await.expect("finish");
    let listed = store.list_runs(100).await.expect("list_runs");
    for (id, input, label) in &inputs {
        let expected = label.map(str::to_string);
        assert_eq!(expected, label_of(input), "the check agrees with PullRequestRef::of_input for {id}");
        let summary = listed.iter().find(|s| s.id == *id).expect("listed");
        assert_eq!(summary.pull_request, expected, "list_runs names the pull request of {id}");
        let summary = store.run_summary(id).await.expect("run_summary").expect("the run");
        assert_eq!(summary.pull_request, expected, "run_summary names the pull request of {id}");
        let run = store.get_run(id).await.expect("get_run").expect("the run");
        assert_eq!(run.summary.pull_request, expected, "get_run names the pull request of {id}");
    }
}
