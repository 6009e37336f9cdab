//! A worker's review of a pull (merge) request: the repository's token, the
//! request's commits as the forge says they are now, both fetched into the
//! repository's mirror, a worktree at the request's own path, the review prepared as
//! `conclave review` prepares one (configuration from the base, incremental from the
//! last posted review), run under the worker's lease, posted, and the worktree
//! removed. A review that cannot run ends failed with the reason, and the reason is
//! posted in one comment on the request.
//!
//! A run taken up again after its worker died is fetched again at the head it was
//! prepared for, in the same worktree path (the run input names it), and resumed.

use conclave_core::{Job, RunStore};
use conclave_engine::RunHandle;
use conclave_review::diff::Change;
use conclave_review::pipeline::{self, ConclaveChoice, ReviewError};
use conclave_shared::RunStatus;
use conclave_shared::delivery::PULL_REQUEST_INPUT;
use futures::future::BoxFuture;
use std::path::PathBuf;

use super::{ForgeService, POSTING_REPORT, Posting, PullRequestJob, pull, repo_ref};
use crate::forge_app::RepoToken;
use crate::mirrors::Worktree;
use crate::post::{self, Target};
use crate::worker::{ForgeJobs, JobSpec, LiveRun, Worker, prepare_job};

/// A review ready to run: the run's handle, and what posting needs.
struct Started {
    handle: RunHandle,
    token: RepoToken,
    worktree: Worktree,
    head: String,
    notices: Vec<String>,
}

/// Why a review could not start: the reason, and the token when there is one to say
/// it on the request with (`None` also when it is not worth a comment).
struct NotStarted {
    reason: String,
    comment_with: Option<RepoToken>,
}

impl ForgeJobs for ForgeService {
    fn review<'a>(&'a self, worker: &'a Worker, job: &'a Job, spec: PullRequestJob) -> BoxFuture<'a, ()> {
        Box::pin(run(worker, self, job, spec))
    }
}

/// Runs the claimed review of a request to its end, and deals with the forge.
pub(crate) async fn run(worker: &Worker, service: &ForgeService, job: &Job, spec: PullRequestJob) {
    let run_id = job.run_id.as_str();
    let label = spec.pull_request.label();
    let started = match start(worker, service, job, &spec).await {
        Ok(Some(started)) => started,
        // The lease was lost while preparing: another worker has the run.
        Ok(None) => return,
        Err(failure) => {
            worker.fail(run_id, failure.reason.clone()).await;
            if let Some(token) = &failure.comment_with
                && let Err(e) = pull::post_failure(token, spec.pull_request.number, &failure.reason).await
            {
                tracing::warn!(run_id, "the reason {label} was not reviewed was not posted: {e}");
            }
            let outcome = format!("not reviewed: {}", failure.reason);
            keep_posting(worker, run_id, Posting { posted: false, head: None, outcome }).await;
            return;
        }
    };
    let Started { handle, token, worktree, head, notices } = started;
    worker.announce(run_id, Some(LiveRun { cancel: handle.cancel_token(), bus: handle.bus() }));
    let held = worker.hold_lease(run_id, handle).await;
    worker.announce(run_id, None);
    // Lost lease: the worker that took the run over posts it, in the same worktree
    // path, which is left to it.
    let Some(status) = held else { return worktree.leave() };
    let posting = finish(worker, &token, &spec, (run_id, status), (&worktree, &head, &notices)).await;
    // The worktree goes before the posting report: that report lets the request's
    // next review start, which checks out the same path.
    if let Err(e) = worktree.remove().await {
        tracing::warn!(run_id, "the review's worktree was not removed: {e}");
    }
    keep_posting(worker, run_id, posting).await;
}

/// Builds the report of the ended run and deals with the forge: the review posted
/// when it succeeded, the reason posted when it failed, nothing when cancelled.
async fn finish(
    worker: &Worker,
    token: &RepoToken,
    spec: &PullRequestJob,
    (run_id, status): (&str, RunStatus),
    (worktree, head, notices): (&Worktree, &str, &[String]),
) -> Posting {
    let store: &dyn RunStore = worker.store();
    let head = Some(head.to_string());
    let target = pull::target(token, spec.pull_request.number);
    let label = spec.pull_request.label();
    if status == RunStatus::Cancelled {
        let outcome = "cancelled (a newer push superseded it, or someone cancelled it): nothing posted".into();
        return Posting { posted: false, head: None, outcome };
    }
    // Dismissals by reply are stored before the report, so it applies them.
    let say = |line: String| tracing::info!(run_id, "{label}: {line}");
    let replies =
        if status == RunStatus::Succeeded { post::gather_replies(&target, store, &say).await } else { vec![] };
    let report = match pipeline::finish_against(store, run_id, None, notices).await {
        Ok(report) => report,
        Err(e) => return failed(token, spec, format!("its report could not be built: {e}"), head).await,
    };
    if status != RunStatus::Succeeded {
        let summary = store.run_summary(run_id).await.ok().flatten();
        let why = summary.and_then(|s| s.error.or(s.failed_node.map(|n| format!("node `{n}` failed"))));
        let reason = format!("the review run {run_id} ended {}: {}", status.as_str(), why.unwrap_or_default());
        return failed(token, spec, reason, head).await;
    }
    match post::publish(&target, &report, worktree.path(), &replies).await {
        Ok(posted) => {
            tracing::info!(run_id, "posted to {}: {posted}", target.describe());
            Posting { posted: true, head, outcome: format!("posted: {posted}") }
        }
        Err(e) => {
            tracing::warn!(run_id, "the review was not posted to {}: {e}", target.describe());
            Posting { posted: false, head, outcome: format!("not posted: {e}") }
        }
    }
}

/// Says on the request why its review failed; the posting report of that.
async fn failed(token: &RepoToken, spec: &PullRequestJob, reason: String, head: Option<String>) -> Posting {
    if let Err(e) = pull::post_failure(token, spec.pull_request.number, &reason).await {
        tracing::warn!("the reason {} was not reviewed was not posted: {e}", spec.pull_request.label());
    }
    Posting { posted: false, head, outcome: format!("failed: {reason}") }
}

/// Keeps the worker's posting report, which lets the dispatcher go on to the
/// request's next review.
async fn keep_posting(worker: &Worker, run_id: &str, posting: Posting) {
    let text = serde_json::to_string(&posting).unwrap_or_default();
    if let Err(e) = worker.store().put_report(run_id, POSTING_REPORT, &text).await {
        tracing::error!(run_id, "could not keep what was posted: {e}");
    }
}

/// Prepares and starts (or resumes) the review; `Ok(None)` when the lease was lost.
async fn start(
    worker: &Worker,
    service: &ForgeService,
    job: &Job,
    spec: &PullRequestJob,
) -> Result<Option<Started>, NotStarted> {
    let quiet = |reason: String| NotStarted { reason, comment_with: None };
    let token = service.auth.token(&repo_ref(&spec.pull_request)).await.map_err(|e| quiet(e.to_string()))?;
    let loud = |reason: String| NotStarted { reason, comment_with: Some(token.clone()) };
    let record = worker.store().get_run(&job.run_id).await.map_err(|e| quiet(e.to_string()))?;
    let record = record.ok_or_else(|| quiet("the run is gone from the store".into()))?;
    let prepared = Change::from_run_input(&record.input);
    let number = spec.pull_request.number;
    let (head, base) = match &prepared {
        Some(change) => (change.head.commit.clone().unwrap_or_default(), change.base.clone().unwrap_or_default()),
        None => {
            let details = pull::details(&token, number).await.map_err(|e| loud(e.to_string()))?;
            if !details.open {
                return Err(quiet(format!("{} is closed", spec.pull_request.label())));
            }
            (details.head, details.base)
        }
    };
    let fetched = service.mirrors.fetch(&token, &base, &head).await.map_err(|e| loud(e.to_string()))?;
    let name = worktree_name(&spec.pull_request);
    let worktree =
        service.mirrors.worktree_named(&fetched.mirror, &name, &head).await.map_err(|e| loud(e.to_string()))?;
    let root = worktree.path().to_path_buf();
    let (conclave, options, notices) = match prepared {
        Some(_) => {
            let (run_id, context) = (job.run_id.clone(), service.workspace.catalog_context().clone());
            let spec = JobSpec::Review {
                allow_paths: service.workspace.allow_paths.clone(),
                samples: 1,
                fell_back: vec![],
                no_cache: false,
            };
            let prepared = tokio::task::spawn_blocking(move || prepare_job(&run_id, &record, spec, &context)).await;
            let (conclave, options, _) = prepared.map_err(|e| loud(e.to_string()))?.map_err(loud)?;
            (conclave, options, Vec::new())
        }
        None => {
            let review = prepare(worker, service, spec, (&token, root, &base)).await.map_err(|e| match e {
                e @ ReviewError::NothingToReview { .. } => quiet(e.to_string()),
                e => loud(e.to_string()),
            })?;
            let mut input = review.run_input();
            if let Some(object) = input.as_object_mut() {
                object.insert(PULL_REQUEST_INPUT.into(), serde_json::json!(spec.pull_request));
            }
            let conclave = review.conclave.conclave();
            if !worker.prepare_claimed(&job.run_id, conclave, &input).await.map_err(|e| quiet(e.to_string()))? {
                return Ok(None);
            }
            (review.conclave.clone(), pipeline::run_options(&review, None), review.notices.clone())
        }
    };
    let handle = worker.engine().resume(conclave, &job.run_id, options).await.map_err(|e| loud(e.to_string()))?;
    Ok(Some(Started { handle, token, worktree, head, notices }))
}

/// The review of the worktree at `root` against `base`, prepared as the API and the
/// CLI prepare one: configuration from the base, incremental from the last posted
/// review unless `--full` was asked for, the repository's key and web URL set.
async fn prepare(
    worker: &Worker,
    service: &ForgeService,
    spec: &PullRequestJob,
    (token, root, base): (&RepoToken, PathBuf, &str),
) -> Result<pipeline::PreparedReview, ReviewError> {
    let workspace = &service.workspace;
    let scope = if spec.full {
        let why = "asked for with `/conclave review --full`".to_string();
        Some(conclave_review::incremental::Scope::Full { why })
    } else {
        let since = spec.since_run.as_deref();
        let resolved = conclave_review::incremental::resolve_from_run(worker.store(), &root, Some(base), since).await;
        Some(
            resolved
                .map_err(|e| ReviewError::Repository { root: root.display().to_string(), message: e.to_string() })?
                .scope,
        )
    };
    // The change under review never configures its own review: the base does.
    let mut request = workspace.review_request(root, ConclaveChoice::Default, worker.engine().allows_unsandboxed());
    (request.base, request.scope) = (Some(base.to_string()), scope);
    let mut review = pipeline::prepare(&request, workspace.catalog(), &workspace.providers).await?;
    review.repository_key = Some(Target::repository_key(&pull::target(token, spec.pull_request.number)).to_string());
    review.repository_url = Some(pull::web_url(token));
    Ok(review)
}

/// The request's worktree directory under the cache: one per request, so a run
/// taken up again finds the path its input names.
fn worktree_name(pull_request: &conclave_shared::delivery::PullRequestRef) -> String {
    use sha2::Digest;
    let named = format!("{}/{}", pull_request.forge.name(), pull_request.repository);
    let digest = hex::encode(sha2::Sha256::digest(named.as_bytes()));
    format!("{}-{}-{}", pull_request.forge.name(), &digest[..16], pull_request.number)
}
