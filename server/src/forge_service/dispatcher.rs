//! The webhook dispatcher: turns the deliveries `conclave serve` kept into queued
//! reviews, one review per pull (merge) request at a time.
//!
//! - One dispatcher works at a time across every server sharing the store: it holds
//!   a leased slot of the run queue, renewed on each pass; another server's takes
//!   over when that lease lapses.
//! - Each pass reads the pending deliveries oldest first. A review asked for is
//!   recorded on its request (`wanted`), the delivery marked dispatched in the same
//!   pass; a `/conclave review` from someone without write access is answered once
//!   (the delivery is never read again) and runs nothing.
//! - A newer push cancels the request's review: at once when it is still queued (it
//!   never runs), at its worker's next lease renewal when it runs (it posts nothing).
//!   A command does not cancel; it queues one more review after the one running.
//! - The next review is queued only once the request's review has ended and its
//!   worker has dealt with the forge (its [`POSTING_REPORT`]), so the newest head's
//!   review always posts last. A push whose head was reviewed already is dropped.

use conclave_core::{Cancel, RunQueue, StoreError, now_ms};
use conclave_shared::delivery::{
    Command, Delivery, DeliveryEvent, PULL_REQUEST_INPUT, PullRequestRef, PullRequestReviews, WantedReview,
};
use conclave_shared::{Conclave, RunStatus};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{ForgeService, POSTING_REPORT, Posting, PullRequestJob, pull, repo_ref};
use crate::forge_app::{Commenter, may_command};
use crate::observe::prometheus::{WEBHOOK_OLDEST_REVIEW_SECONDS, WEBHOOK_REVIEWS_SUPERSEDED};
use crate::worker::{JobSpec, enqueue};

/// The run queue's slot scope that makes one dispatcher work at a time.
const SLOT_SCOPE: &str = "webhook-dispatcher";
/// How long the slot holds without renewal.
const SLOT_LEASE: Duration = Duration::from_secs(15);
/// Deliveries and requests read per pass, unless [`Dispatcher::batch`] says otherwise.
const BATCH: usize = 200;

/// The dispatcher of one server.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    queue: Arc<dyn RunQueue>,
    service: Arc<ForgeService>,
    placeholder: Conclave,
    holder: String,
    wake: Arc<Notify>,
    every: Duration,
    /// How long after a review run ended without its worker's posting report the
    /// worker is taken for dead and the request's next review may start.
    posting_grace: Duration,
    /// Deliveries and requests read per pass.
    batch: usize,
}

impl Dispatcher {
    /// A dispatcher enqueueing on `queue`, holding `placeholder` as the conclave of a
    /// review until its worker has read the base's configuration. `wake` starts a
    /// pass at once (the webhook endpoints notify it when they keep a delivery).
    pub fn new(queue: Arc<dyn RunQueue>, service: Arc<ForgeService>, placeholder: Conclave, wake: Arc<Notify>) -> Self {
        let holder = format!("{}-dispatcher", conclave_core::owner_token());
        let (every, posting_grace) = (Duration::from_millis(500), Duration::from_secs(120));
        Dispatcher { queue, service, placeholder, holder, wake, every, posting_grace, batch: BATCH }
    }

    /// The same dispatcher passing every `every` when not woken, and taking a worker
    /// for dead `posting_grace` after a review ended without its posting report.
    pub fn pacing(self, every: Duration, posting_grace: Duration) -> Self {
        Dispatcher { every, posting_grace, ..self }
    }

    /// The same dispatcher reading `batch` deliveries and requests a pass.
    pub fn batch(self, batch: usize) -> Self {
        Dispatcher { batch: batch.max(1), ..self }
    }

    /// Dispatches until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut slot = None;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.every) => {}
            }
            slot = self.hold(slot).await;
            if slot.is_none() {
                continue;
            }
            if let Err(e) = self.pass().await {
                tracing::warn!("the webhook dispatcher's pass failed (it tries again): {e}");
            }
        }
        if let Some(slot) = slot {
            let _ = self.queue.release_slot(SLOT_SCOPE, slot, &self.holder).await;
        }
    }

    /// Keeps (or takes) the dispatcher's slot; `None` while another server holds it.
    async fn hold(&self, slot: Option<u32>) -> Option<u32> {
        let lease = SLOT_LEASE.as_millis() as u64;
        if let Some(slot) = slot
            && let Ok(true) = self.queue.renew_slot(SLOT_SCOPE, slot, &self.holder, now_ms(), lease).await
        {
            return Some(slot);
        }
        self.queue.take_slot(SLOT_SCOPE, 1, &self.holder, now_ms(), lease).await.ok().flatten()
    }

    /// One pass: every pending delivery, then every request with work on it.
    pub async fn pass(&self) -> Result<(), StoreError> {
        for delivery in self.queue.pending_deliveries(self.batch).await? {
            self.dispatch(&delivery).await?;
            self.queue.mark_delivery_dispatched(delivery.forge, &delivery.id, now_ms()).await?;
        }
        let mut oldest: Option<u64> = None;
        let busy = self.queue.busy_pull_requests(self.batch).await?;
        // More requests have work than a pass reads: each one read goes to the back of
        // the listing (least recently changed first), so every request gets its turn.
        let rotate = busy.len() >= self.batch;
        for reviews in busy {
            if let Some(waiting_since) = self.advance(reviews, rotate).await? {
                oldest = Some(oldest.map_or(waiting_since, |o| o.min(waiting_since)));
            }
        }
        let age = oldest.map_or(0.0, |since| now_ms().saturating_sub(since) as f64 / 1000.0);
        metrics::gauge!(WEBHOOK_OLDEST_REVIEW_SECONDS).set(age);
        Ok(())
    }

    /// Records what `delivery` asks on its request.
    async fn dispatch(&self, delivery: &Delivery) -> Result<(), StoreError> {
        let (Some(repository), Some(number)) = (&delivery.repository, delivery.number) else {
            tracing::warn!("webhook delivery {} names no pull request; nothing to do", delivery.id);
            return Ok(());
        };
        let pull_request = PullRequestRef {
            forge: delivery.forge,
            repository: repository.clone(),
            number,
            installation: delivery.installation,
        };
        match delivery.command() {
            Some(Command::Review { full }) => {
                let commanded = !matches!(delivery.event, DeliveryEvent::PullRequest | DeliveryEvent::MergeRequest);
                if commanded && !self.allowed(delivery, &pull_request).await {
                    return Ok(());
                }
                let wanted = WantedReview {
                    head: delivery.head_sha.clone(),
                    full: *full,
                    commanded,
                    delivery: delivery.id.clone(),
                    asked_ms: delivery.received_ms,
                };
                self.want(pull_request, wanted).await
            }
            Some(Command::Dismiss { .. }) => {
                self.store_dismissals(&pull_request).await;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Whether the delivery's sender may command a review; a refusal is answered on
    /// the request (once: the delivery is not read again).
    async fn allowed(&self, delivery: &Delivery, pull_request: &PullRequestRef) -> bool {
        let sender = delivery.sender.clone().unwrap_or_default();
        let token = match self.service.auth.token(&repo_ref(pull_request)).await {
            Ok(token) => token,
            Err(e) => {
                tracing::warn!("`/conclave review` on {} not run: {e}", pull_request.label());
                return false;
            }
        };
        let answer = match commenter(&token, delivery.forge, &sender).await {
            Ok(Some(who)) => may_command(&token, &who).await.map_err(|e| e.to_string()),
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        };
        match answer {
            Ok(true) => true,
            Ok(false) => {
                let who = if sender.is_empty() { "someone unknown".to_string() } else { format!("`{sender}`") };
                let text = format!(
                    "`/conclave review` from {who} was not run: only people with write access to {} may ask for a \
                     review (on GitHub the write, maintain or admin role; on GitLab the Developer role or above).",
                    pull_request.repository
                );
                tracing::info!("refused `/conclave review` from {sender} on {}", pull_request.label());
                if let Err(e) = pull::post_comment(&token, pull_request.number, &text).await {
                    tracing::warn!("the refusal on {} was not posted: {e}", pull_request.label());
                }
                false
            }
            Err(e) => {
                tracing::warn!("who may review {} could not be checked, so nothing runs: {e}", pull_request.label());
                false
            }
        }
    }

    /// Stores the dismissals of the `/conclave dismiss` replies on the request now;
    /// the next posting answers them in their threads.
    async fn store_dismissals(&self, pull_request: &PullRequestRef) {
        match self.service.auth.token(&repo_ref(pull_request)).await {
            Ok(token) => {
                let target = pull::target(&token, pull_request.number);
                let store: &dyn conclave_core::RunStore = self.queue.as_ref();
                let say = |line: String| tracing::info!("{}: {line}", pull_request.label());
                crate::post::gather_replies(&target, store, &say).await;
            }
            Err(e) => tracing::warn!("the replies on {} were not read: {e}", pull_request.label()),
        }
    }

    /// Records `wanted` on its request: it replaces a review not started yet, and a
    /// push cancels the review in progress.
    async fn want(&self, pull_request: PullRequestRef, wanted: WantedReview) -> Result<(), StoreError> {
        let store = &self.queue;
        let found = store.pull_request(pull_request.forge, &pull_request.repository, pull_request.number).await?;
        let mut reviews = found.unwrap_or_else(|| PullRequestReviews::new(pull_request.clone(), now_ms()));
        if pull_request.installation.is_some() {
            reviews.pull_request.installation = pull_request.installation;
        }
        let merged = match reviews.wanted.take() {
            Some(earlier) => WantedReview {
                full: earlier.full || wanted.full,
                commanded: earlier.commanded || wanted.commanded,
                head: wanted.head.clone().or(earlier.head),
                ..wanted.clone()
            },
            None => wanted.clone(),
        };
        reviews.wanted = Some(merged);
        let push = !wanted.commanded;
        if let Some(run) = reviews.run.clone()
            && push
            && (wanted.head.is_none() || wanted.head != reviews.run_head)
        {
            match store.request_cancel(&run, now_ms()).await? {
                Cancel::Dequeued => {
                    tracing::info!("review {run} of {} superseded before it started", pull_request.label());
                    reviews.run = None;
                    reviews.superseded += 1;
                    metrics::counter!(WEBHOOK_REVIEWS_SUPERSEDED).increment(1);
                }
                Cancel::Requested => {
                    tracing::info!("review {run} of {} superseded by a newer push: cancelled", pull_request.label());
                    reviews.superseded += 1;
                    metrics::counter!(WEBHOOK_REVIEWS_SUPERSEDED).increment(1);
                }
                Cancel::AlreadyEnded => {}
            }
        }
        reviews.updated_ms = now_ms();
        store.put_pull_request(&reviews).await
    }

    /// Moves a request on: notes its review's end once the worker is done with the
    /// forge, and queues the review waiting. Returns since when a review of it has
    /// waited to start, if one has.
    async fn advance(&self, mut reviews: PullRequestReviews, rotate: bool) -> Result<Option<u64>, StoreError> {
        let before = reviews.clone();
        let mut waiting = None;
        if let Some(run) = reviews.run.clone() {
            match self.ended(&run).await? {
                Ended::No { queued_since } => waiting = queued_since,
                Ended::Yes(posting) => {
                    // Only a posted review counts: the next starts from it, and its
                    // head is not reviewed again for a push.
                    if let Some(posting) = posting.filter(|p| p.posted) {
                        reviews.posted_run = Some(run.clone());
                        reviews.reviewed_head = posting.head.or(reviews.reviewed_head);
                    }
                    reviews.run = None;
                    reviews.run_head = None;
                }
            }
        }
        if reviews.run.is_none()
            && let Some(wanted) = reviews.wanted.take()
        {
            let reviewed = wanted.head.is_some() && wanted.head == reviews.reviewed_head;
            if reviewed && !wanted.commanded {
                tracing::debug!("{} is reviewed at its head already", reviews.pull_request.label());
            } else {
                let run = self.enqueue(&reviews, &wanted).await?;
                tracing::info!("queued review {run} of {}", reviews.pull_request.label());
                (reviews.run, reviews.run_head) = (Some(run), wanted.head.clone());
                waiting = Some(now_ms());
            }
        }
        if let Some(wanted) = &reviews.wanted {
            waiting = Some(waiting.map_or(wanted.asked_ms, |w: u64| w.min(wanted.asked_ms)));
        }
        if reviews != before || rotate {
            reviews.updated_ms = now_ms();
            self.queue.put_pull_request(&reviews).await?;
        }
        Ok(waiting)
    }

    /// Whether `run` has ended and its worker has dealt with the forge.
    async fn ended(&self, run: &str) -> Result<Ended, StoreError> {
        let Some(summary) = self.queue.run_summary(run).await? else { return Ok(Ended::Yes(None)) };
        if !summary.status.is_terminal() {
            let queued_since = (summary.status == RunStatus::Queued).then_some(summary.created_ms);
            return Ok(Ended::No { queued_since });
        }
        if let Some(text) = self.queue.get_report(run, POSTING_REPORT).await? {
            return Ok(Ended::Yes(serde_json::from_str(&text).ok()));
        }
        // Ended before any worker had it (cancelled while queued), or its worker died
        // between the run's end and the forge: no report will come.
        let ended_ms = summary.finished_ms.unwrap_or(summary.created_ms);
        let grace = self.posting_grace.as_millis() as u64;
        let never_claimed = summary.status == RunStatus::Cancelled && self.queue.events(run, 0).await?.len() <= 1;
        if never_claimed || now_ms() > ended_ms + grace {
            return Ok(Ended::Yes(None));
        }
        Ok(Ended::No { queued_since: None })
    }

    /// Enqueues a review of the request as `wanted` asks; its run id.
    async fn enqueue(&self, reviews: &PullRequestReviews, wanted: &WantedReview) -> Result<String, StoreError> {
        let job = PullRequestJob {
            pull_request: reviews.pull_request.clone(),
            head: wanted.head.clone(),
            full: wanted.full,
            since_run: reviews.posted_run.clone(),
            delivery: wanted.delivery.clone(),
        };
        let input = serde_json::json!({ PULL_REQUEST_INPUT: reviews.pull_request });
        enqueue(self.queue.as_ref(), &self.placeholder, input, &JobSpec::PullRequest(job), None).await
    }
}

/// Whether a review run is over for the dispatcher.
enum Ended {
    /// It goes on; since when it has been queued, when it is.
    No { queued_since: Option<u64> },
    /// It is over, with its worker's posting report when there is one.
    Yes(Option<Posting>),
}

/// Who wrote a command, as the forge's access check names them: a GitHub login, or
/// the GitLab user of a username (asked through the API); `None` when unknown.
async fn commenter(
    token: &crate::forge_app::RepoToken,
    forge: conclave_shared::delivery::Forge,
    sender: &str,
) -> Result<Option<Commenter>, String> {
    if sender.is_empty() {
        return Ok(None);
    }
    match forge {
        conclave_shared::delivery::Forge::Github => Ok(Some(Commenter::Login(sender.to_string()))),
        conclave_shared::delivery::Forge::Gitlab => {
            let api = token.api().map_err(|e| e.to_string())?;
            let mut url = api.url(&["users"]);
            url.query_pairs_mut().append_pair("username", sender);
            let (_, users) = api.send(reqwest::Method::GET, url, None).await.map_err(|e| e.to_string())?;
            Ok(users.pointer("/0/id").and_then(serde_json::Value::as_u64).map(Commenter::UserId))
        }
    }
}
