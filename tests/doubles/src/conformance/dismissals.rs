//! The conformance checks of dismissals: one per repository and fingerprint (a
//! second of the same finding leaves the first and says it was not new), listed by
//! repository then fingerprint, of one repository or of all.

use conclave_core::{RunStore, StoredDismissal};
use std::sync::Arc;

/// Every check of dismissals, each against a fresh store from `make`.
pub(super) async fn run_all(make: &dyn Fn() -> Arc<dyn RunStore>) {
    a_dismissal_is_kept_once_per_repository_and_fingerprint(make()).await;
    dismissals_are_listed_by_repository_then_fingerprint(make()).await;
}

/// A dismissal of `fingerprint` in `repository` by `author`.
pub fn stored_dismissal(repository: &str, fingerprint: &str, reason: &str, author: &str) -> StoredDismissal {
    StoredDismissal {
        repository: repository.into(),
        fingerprint: fingerprint.into(),
        reason: reason.into(),
        author: author.into(),
        created_at_ms: 1_700_000_000_123,
        source: format!("github {repository}#7 comment 1001"),
    }
}

async fn a_dismissal_is_kept_once_per_repository_and_fingerprint(store: Arc<dyn RunStore>) {
    let fp = "0123456789abcdef0123456789abcdef";
    let first = stored_dismissal("acme/app", fp, "the caller validates the name", "@ann");
    assert!(store.put_dismissal(&first).await.expect("put_dismissal"), "a first dismissal is new");
    let again = stored_dismissal("acme/app", fp, "another reason", "@bo");
    assert!(!store.put_dismissal(&again).await.expect("put_dismissal"), "the same finding again is not new");
    assert_eq!(
        store.dismissals(Some("acme/app")).await.expect("dismissals"),
        vec![first.clone()],
        "the first dismissal stays as it was, every field read back"
    );
    let elsewhere = stored_dismissal("acme/other", fp, "generated code", "@bo");
    assert!(store.put_dismissal(&elsewhere).await.expect("put_dismissal"), "another repository's is its own");
    assert_eq!(store.dismissals(Some("acme/nothing")).await.expect("dismissals"), vec![]);
}

async fn dismissals_are_listed_by_repository_then_fingerprint(store: Arc<dyn RunStore>) {
    let (a, b, c) = ("a".repeat(32), "b".repeat(32), "c".repeat(32));
    let puts = [("zeta/app", &a), ("acme/app", &c), ("acme/app", &a), ("acme/app", &b)];
    for (repository, fp) in puts {
        let put = stored_dismissal(repository, fp, "reason", "@ann");
        assert!(store.put_dismissal(&put).await.expect("put_dismissal"));
    }
    let keys = |list: Vec<StoredDismissal>| -> Vec<(String, String)> {
        list.into_iter().map(|d| (d.repository, d.fingerprint)).collect()
    };
    let acme = keys(store.dismissals(Some("acme/app")).await.expect("dismissals"));
    let expected: Vec<(String, String)> =
        [&a, &b, &c].iter().map(|f| ("acme/app".to_string(), f.to_string())).collect();
    assert_eq!(acme, expected, "one repository's, by fingerprint");
    let all = keys(store.dismissals(None).await.expect("dismissals"));
    let mut expected_all = expected.clone();
    expected_all.push(("zeta/app".to_string(), a.clone()));
    assert_eq!(all, expected_all, "every repository's, by repository then fingerprint");
}
