//! The `review` and `get_review` tools: a review through the same path as
//! `POST /api/runs` (the request a server builds from a target, the review pipeline,
//! the launch on this server's engine or run queue), followed to its end with
//! progress, and its findings read from the stored report.

use conclave_catalog::LoadError;
use conclave_review::ConclaveChoice;
use conclave_review::diff::Change;
use conclave_review::pipeline::{self, ReviewError};
use conclave_shared::RunStatus;
use conclave_shared::api::ReviewTarget;
use std::time::{Duration, Instant};

use super::answers::ReviewAnswer;
use super::args::{Detail, GetReviewArgs, ReviewArgs};
use super::context::{McpContext, Refusal, message};
use super::findings;
use super::progress::{Reporter, follow};
use crate::api::runs::{Launched, follow_live, launch_review, resolve_since, target_request};

/// How long a finished review's report may take to be stored by the process that ran it.
const REPORT_WAIT: Duration = Duration::from_secs(120);

/// A review started: its run and the notices of its start.
pub struct StartedReview {
    /// The run's id.
    pub run_id: String,
    /// What the server changed before starting.
    pub notices: Vec<String>,
}

/// Runs `review`: starts it, and unless `wait` is false follows it to its end and
/// returns the first page of its findings.
pub async fn review(context: &McpContext, args: ReviewArgs, reporter: &Reporter) -> Result<ReviewAnswer, Refusal> {
    let wait = args.wait.unwrap_or(true);
    let started = start(context, args).await?;
    if !wait {
        return Ok(pending(&started.run_id, "queued", started.notices));
    }
    follow(context, &started.run_id, reporter).await?;
    let mut answer = answer(context, &started.run_id, None, Detail::Compact, REPORT_WAIT).await?;
    answer.notices = started.notices;
    Ok(answer)
}

/// Runs `get_review`: a page of a review's findings, or its status while it runs.
pub async fn get_review(context: &McpContext, args: GetReviewArgs) -> Result<ReviewAnswer, Refusal> {
    let detail = args.detail.unwrap_or_default();
    answer(context, &args.run, args.cursor.as_deref(), detail, Duration::ZERO).await
}

/// Prepares and starts a review as `POST /api/runs` does; refusals carry the
/// messages `conclave review` gives.
pub async fn start(context: &McpContext, args: ReviewArgs) -> Result<StartedReview, Refusal> {
    let state = &context.state;
    let repository = context.repository(args.repository.as_deref()).await?;
    let conclave = match args.conclave {
        None => ConclaveChoice::Default,
        Some(given) if context.takes_paths() => ConclaveChoice::PathOrId(given),
        Some(given) => ConclaveChoice::Id(given),
    };
    let target = ReviewTarget {
        repository: repository.display().to_string(),
        base: args.base.clone(),
        provider: args.provider,
        model: args.model,
        no_fallback: false,
        analyzers: None,
        max_parts: None,
        trust: None,
        since: args.since.clone(),
        ..ReviewTarget::default()
    };
    let mut request = target_request(state, repository, conclave, &target).map_err(message)?;
    resolve_since(state, &mut request, target.since.as_deref()).await.map_err(message)?;
    let review =
        pipeline::prepare(&request, state.workspace.catalog(), &state.workspace.providers).await.map_err(refusal)?;
    let run_id = match launch_review(state, &review, None).await.map_err(message)? {
        Launched::Queued(id) => id,
        Launched::Started(handle) => follow_live(state, handle, true, review.notices.clone()),
    };
    Ok(StartedReview { run_id, notices: review.notices })
}

/// A review's answer: its findings' page once its report is stored (waiting up to
/// `patience` for a finished run's), else its status.
pub async fn answer(
    context: &McpContext,
    run_id: &str,
    cursor: Option<&str>,
    detail: Detail,
    patience: Duration,
) -> Result<ReviewAnswer, Refusal> {
    let store = context.state.store();
    let deadline = Instant::now() + patience;
    loop {
        if let Some(report) = store.get_report(run_id, "json").await.map_err(|e| e.to_string())? {
            return findings::page(&report, cursor, detail);
        }
        let record = store.get_run(run_id).await.map_err(|e| e.to_string())?.ok_or_else(|| unknown_run(run_id))?;
        if Change::from_run_input(&record.input).is_none() {
            return Err(format!("run `{run_id}` is not a review (it ran `{}`): get_run shows it", record.conclave.id));
        }
        let status = record.summary.status;
        if !status.is_terminal() || Instant::now() >= deadline {
            let mut pending = pending(run_id, status.as_str(), Vec::new());
            if status.is_terminal() {
                pending.note =
                    format!("the review ended ({}) but its report is not stored yet; {}", status.as_str(), AGAIN);
            } else if status == RunStatus::Waiting {
                pending.note = format!(
                    "the review waits for a decision at an approval node: get_run shows which, approve decides; {AGAIN}"
                );
            }
            return Ok(pending);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

const AGAIN: &str = "call get_review again later";

/// The answer of a review that has no report yet.
fn pending(run_id: &str, status: &str, notices: Vec<String>) -> ReviewAnswer {
    ReviewAnswer {
        run_id: run_id.to_string(),
        status: status.to_string(),
        totals: Default::default(),
        total_findings: 0,
        findings: Vec::new(),
        next_cursor: None,
        degraded: Vec::new(),
        notices,
        report_uri: None,
        note: format!("the review is under way; call get_review with run `{run_id}` for its findings once it ends"),
    }
}

/// The message of an unknown run, as `conclave runs show` says it.
pub fn unknown_run(run_id: &str) -> Refusal {
    format!("no run `{run_id}`; list_runs shows the recent ones")
}

/// A review that could not be prepared, in the words of `conclave review`.
fn refusal(error: ReviewError) -> Refusal {
    match error {
        ReviewError::Conclave(LoadError::Invalid { file, diagnostics }) => {
            let listed: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
            format!(
                "{file} is not valid; fix these errors (`conclave validate {file}` lists them):\n{}",
                listed.join("\n")
            )
        }
        other => other.to_string(),
    }
}
