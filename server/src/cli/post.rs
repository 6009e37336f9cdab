//! The command line's side of `--post`: where to post, resolved from the CI
//! environment before the review spends any provider call; the `/conclave dismiss`
//! replies read and their dismissals stored before the review's report is built;
//! and the posting of the finished review, answering those replies, with its exit
//! code.

use conclave_core::{RunStore, StoredDismissal};
use conclave_review::ReviewReport;
use conclave_shared::RunStatus;
use std::path::Path;

use super::exit;
use crate::post::{self, Forge, Reply, Target, Verdict};

/// Where `--post` posts, or `Ok(None)` without it; exit 2 with every missing or
/// invalid piece of the environment named. GitHub's event file is read on a
/// blocking thread.
pub async fn target(forge: Option<Forge>, pr: Option<u64>) -> Result<Option<Target>, u8> {
    let Some(forge) = forge else { return Ok(None) };
    let env = |name: &str| std::env::var(name).ok();
    match super::offload::blocking(move || Target::from_env(forge, pr, &env)).await {
        Ok(target) => Ok(Some(target)),
        Err(e) => {
            eprintln!("error: {e}");
            Err(exit::CONFIG)
        }
    }
}

/// The `/conclave dismiss` replies on the request not answered yet, the dismissals
/// of those that count stored in the run store under the target's repository key
/// (so this review already applies them). A forge or store failure is a warning:
/// the review goes on without them, and a later posting reads them again.
pub async fn gather_replies(target: Option<&Target>, store: &dyn RunStore) -> Vec<Reply> {
    let Some(target) = target else { return Vec::new() };
    let replies = match target.read_replies().await {
        Ok(replies) => replies,
        Err(e) => {
            eprintln!("warning: the replies on {} were not read: {e}", target.describe());
            return Vec::new();
        }
    };
    let mut kept = Vec::with_capacity(replies.len());
    'replies: for reply in replies {
        if reply.verdict == Verdict::Dismissed {
            for fingerprint in &reply.fingerprints {
                let dismissal = StoredDismissal {
                    repository: target.repository_key().to_string(),
                    fingerprint: fingerprint.clone(),
                    reason: reply.reason.clone(),
                    author: format!("@{}", reply.author),
                    created_at_ms: conclave_core::now_ms(),
                    source: reply.source.clone(),
                };
                if let Err(e) = store.put_dismissal(&dismissal).await {
                    eprintln!("warning: the dismissal in {} was not stored: {e}", reply.source);
                    continue 'replies;
                }
            }
        }
        let what = match reply.verdict {
            Verdict::Dismissed => format!("dismissed by @{}: {}", reply.author, reply.reason),
            Verdict::NoReason => format!("not dismissed: @{} gave no reason", reply.author),
            Verdict::NoPermission => format!("not dismissed: @{} lacks write access", reply.author),
        };
        eprintln!("reply {}: {what}", reply.source);
        kept.push(reply);
    }
    kept
}

/// Posts the review when `--post` asked for it and the run succeeded; the exit code
/// (`exit::OTHER` when posting failed: the report was already written).
pub async fn publish(target: Option<&Target>, report: &ReviewReport, status: RunStatus, repository: &Path) -> u8 {
    publish_answering(target, report, status, repository, &[]).await
}

/// [`publish`], answering the `/conclave dismiss` `replies` in their threads.
pub async fn publish_answering(
    target: Option<&Target>,
    report: &ReviewReport,
    status: RunStatus,
    repository: &Path,
    replies: &[Reply],
) -> u8 {
    let Some(target) = target else { return exit::OK };
    if status != RunStatus::Succeeded {
        eprintln!("not posted to {}: the run did not succeed", target.describe());
        return exit::OK;
    }
    if !report.degraded.is_empty() {
        eprintln!("posting a degraded review: earlier comments are not marked fixed");
    }
    match post::publish(target, report, repository, replies).await {
        Ok(posted) => {
            eprintln!("posted to {}: {posted}", target.describe());
            exit::OK
        }
        Err(e) => {
            eprintln!(
                "error: the review was not posted to {}: {e}\n  the report was written; fix the above and run \
                 the review again to post it",
                target.describe()
            );
            exit::OTHER
        }
    }
}
