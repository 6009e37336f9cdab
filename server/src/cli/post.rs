//! The command line's side of `--post`: where to post, resolved from the CI
//! environment before the review spends any provider call; the `/conclave dismiss`
//! replies read and their dismissals stored before the review's report is built;
//! and the posting of the finished review, answering those replies, with its exit
//! code.

use conclave_core::RunStore;
use conclave_review::ReviewReport;
use conclave_shared::RunStatus;
use std::path::Path;

use super::exit;
use crate::post::{self, Forge, Reply, Target};

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
    post::gather_replies(target, store, &|line| eprintln!("{line}")).await
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
