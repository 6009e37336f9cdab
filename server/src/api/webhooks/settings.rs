//! Which forges' webhooks a server receives: a forge's endpoint exists only when its
//! secret is set (`CONCLAVE_GITHUB_WEBHOOK_SECRET`, `CONCLAVE_GITLAB_WEBHOOK_SECRET`),
//! and whether drafts are reviewed (`--review-drafts`).

use conclave_core::Secret;
use std::sync::Arc;
use tokio::sync::Notify;

/// The environment variable holding GitHub's webhook secret.
pub const GITHUB_SECRET_VARIABLE: &str = "CONCLAVE_GITHUB_WEBHOOK_SECRET";
/// The environment variable holding GitLab's webhook secret token.
pub const GITLAB_SECRET_VARIABLE: &str = "CONCLAVE_GITLAB_WEBHOOK_SECRET";

/// How a server receives webhooks.
#[derive(Debug, Clone, Default)]
pub struct Webhooks {
    /// The secret GitHub signs deliveries with; `None`: `/webhooks/github` does not exist.
    pub github: Option<Secret>,
    /// The secret token GitLab sends; `None`: `/webhooks/gitlab` does not exist.
    pub gitlab: Option<Secret>,
    /// Whether drafts ask for reviews as ready requests do.
    pub review_drafts: bool,
    /// Notified each time a new delivery is kept, so the dispatcher passes at once.
    pub kept: Arc<Notify>,
}

impl Webhooks {
    /// The settings from the environment (`var` reads a variable; an empty value
    /// counts as unset) and `--review-drafts`.
    pub fn from_env(var: &dyn Fn(&str) -> Option<String>, review_drafts: bool) -> Webhooks {
        let secret = |name: &str| var(name).filter(|v| !v.trim().is_empty()).map(Secret::new);
        Webhooks {
            github: secret(GITHUB_SECRET_VARIABLE),
            gitlab: secret(GITLAB_SECRET_VARIABLE),
            review_drafts,
            kept: Arc::default(),
        }
    }

    /// Whether any forge's endpoint is on.
    pub fn any(&self) -> bool {
        self.github.is_some() || self.gitlab.is_some()
    }
}
