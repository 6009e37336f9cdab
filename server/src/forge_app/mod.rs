//! Conclave's credentials on the forges when it runs as a service: a GitHub App (its
//! JWT exchanged for installation tokens), or a token for a single repository, or a
//! GitLab token, all behind one question, "a token for this repository"
//! ([`ForgeAuth::token`]), and who may command a review (`access.rs`).
//!
//! Layout: `jwt.rs` signs the app's JWT, `installation.rs` mints and caches
//! installation tokens, `repo.rs` is a repository and its token (the API client and
//! git's header, the only ways a token leaves), `access.rs` the write-access check,
//! `error.rs` the errors.
//!
//! **Invariant:** a token goes only to the forge's API and to git (see `mirrors/`);
//! every token minted is registered with the process's redactor before it is used.

pub mod access;
pub mod error;
pub mod installation;
pub mod jwt;
pub mod repo;

pub use access::{Commenter, may_command};
pub use error::AuthError;
pub use installation::InstallationTokens;
pub use jwt::AppKey;
pub use repo::{ForgeUrls, RepoRef, RepoToken};

use conclave_core::Secret;
use reqwest::Url;
use std::path::PathBuf;

use crate::post::Forge;

/// Every credential configured, by forge.
#[derive(Debug, Default)]
pub struct ForgeAuth {
    /// GitHub: an app, or a single repository's token.
    pub github: Option<(GitHubAuth, ForgeUrls)>,
    /// GitLab: a token (a project, group or bot user's), and the instance.
    pub gitlab: Option<(Secret, ForgeUrls)>,
}

/// How Conclave authenticates to GitHub.
#[derive(Debug)]
pub enum GitHubAuth {
    /// As a GitHub App: installation tokens for the events' installations.
    App(InstallationTokens),
    /// With one token for one repository (`owner/name`).
    Repository { repository: String, token: Secret },
}

impl ForgeAuth {
    /// The credentials the environment configures (`env` reads a variable); every
    /// problem at once.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<ForgeAuth, AuthError> {
        let var = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let mut problems = Vec::new();
        let mut url = |name: &str, default: &str| match Url::parse(&var(name).unwrap_or_else(|| default.to_string())) {
            Ok(url) if matches!(url.scheme(), "https" | "http") => Some(url),
            _ => {
                problems.push(format!("{name} is not an http(s) URL"));
                None
            }
        };
        let github_urls = url("CONCLAVE_GITHUB_API_URL", "https://api.github.com")
            .zip(url("CONCLAVE_GITHUB_URL", "https://github.com"))
            .map(|(api, web)| ForgeUrls { api, web });
        let gitlab_web = url("CONCLAVE_GITLAB_URL", "https://gitlab.com");
        let gitlab_api = gitlab_web.as_ref().and_then(|web| {
            let default = format!("{}/api/v4", web.as_str().trim_end_matches('/'));
            url("CONCLAVE_GITLAB_API_URL", &default)
        });
        let gitlab_urls = gitlab_api.zip(gitlab_web).map(|(api, web)| ForgeUrls { api, web });
        let github = match github(&var, &mut problems) {
            Some(auth) => github_urls.map(|urls| (auth, urls)),
            None => None,
        };
        let gitlab = var("CONCLAVE_GITLAB_TOKEN").zip(gitlab_urls).map(|(token, urls)| (Secret::new(token), urls));
        if !problems.is_empty() {
            return Err(AuthError::Config(problems.join("; ")));
        }
        Ok(ForgeAuth { github, gitlab })
    }

    /// A token for `repo`: its installation's, the single repository's, or GitLab's.
    /// The token is registered with the process's redactor.
    pub async fn token(&self, repo: &RepoRef) -> Result<RepoToken, AuthError> {
        let no_token = |hint: String| AuthError::NoToken {
            forge: if repo.forge == Forge::Github { "GitHub" } else { "GitLab" },
            repository: repo.path.clone(),
            hint,
        };
        let (token, urls) = match (repo.forge, &self.github, &self.gitlab) {
            (Forge::Github, Some((GitHubAuth::App(app), urls)), _) => {
                let Some(installation) = repo.installation else {
                    return Err(no_token(format!(
                        "the event names no installation of GitHub App {}; deliver it from the app's webhook",
                        app.app_id()
                    )));
                };
                (app.token(installation).await?, urls)
            }
            (Forge::Github, Some((GitHubAuth::Repository { repository, token }, urls)), _) => {
                if !repository.eq_ignore_ascii_case(&repo.path) {
                    return Err(no_token(format!(
                        "CONCLAVE_GITHUB_TOKEN is for {repository} only; run Conclave as a GitHub App \
                         (CONCLAVE_GITHUB_APP_ID) to review other repositories"
                    )));
                }
                (token.clone(), urls)
            }
            (Forge::Gitlab, _, Some((token, urls))) => (token.clone(), urls),
            (Forge::Github, None, _) => {
                return Err(no_token(
                    "set CONCLAVE_GITHUB_APP_ID and CONCLAVE_GITHUB_APP_KEY_FILE, or CONCLAVE_GITHUB_TOKEN with \
                     CONCLAVE_GITHUB_REPOSITORY"
                        .into(),
                ));
            }
            (Forge::Gitlab, _, None) => return Err(no_token("set CONCLAVE_GITLAB_TOKEN".into())),
        };
        conclave_core::register_secret(token.expose());
        Ok(RepoToken::new(repo.clone(), urls.clone(), token))
    }
}

/// GitHub's credentials from the environment: the app, else a single repository's
/// token; `None` when neither is set.
fn github(var: &dyn Fn(&str) -> Option<String>, problems: &mut Vec<String>) -> Option<GitHubAuth> {
    let api = var("CONCLAVE_GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
    match (var("CONCLAVE_GITHUB_APP_ID"), var("CONCLAVE_GITHUB_APP_KEY_FILE")) {
        (Some(id), Some(file)) => {
            let app = AppKey::from_file(&id, &PathBuf::from(file)).map_err(|e| problems.push(e.to_string())).ok()?;
            let api = Url::parse(&api).ok()?;
            return Some(GitHubAuth::App(InstallationTokens::new(app, api)));
        }
        (Some(_), None) => problems.push("CONCLAVE_GITHUB_APP_ID is set without CONCLAVE_GITHUB_APP_KEY_FILE".into()),
        (None, Some(_)) => problems.push("CONCLAVE_GITHUB_APP_KEY_FILE is set without CONCLAVE_GITHUB_APP_ID".into()),
        (None, None) => {}
    }
    match (var("CONCLAVE_GITHUB_TOKEN"), var("CONCLAVE_GITHUB_REPOSITORY")) {
        (Some(token), Some(repository)) if repository.split('/').count() == 2 => {
            Some(GitHubAuth::Repository { repository, token: Secret::new(token) })
        }
        (Some(_), Some(repository)) => {
            problems.push(format!("CONCLAVE_GITHUB_REPOSITORY `{repository}` is not `owner/name`"));
            None
        }
        (Some(_), None) => {
            problems.push("CONCLAVE_GITHUB_TOKEN is set without CONCLAVE_GITHUB_REPOSITORY (`owner/name`)".into());
            None
        }
        _ => None,
    }
}
