//! A repository on a forge and a token for it: what the API client and git are
//! given, and nothing else. The token leaves this type only as a request header.

use base64::Engine;
use conclave_core::Secret;
use reqwest::Url;

use super::error::AuthError;
use crate::post::http::Api;
use crate::post::{Forge, PostError};

/// A repository as an event names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRef {
    /// Which forge.
    pub forge: Forge,
    /// GitHub's `owner/name`, GitLab's `group/…/name` path.
    pub path: String,
    /// The GitHub App installation the event came from, when it came from one.
    pub installation: Option<u64>,
}

/// Where one forge is: its API and its web (and git) origin.
#[derive(Debug, Clone)]
pub struct ForgeUrls {
    /// The REST API's base: `https://api.github.com`, `https://gitlab.com/api/v4`.
    pub api: Url,
    /// The web origin repositories are cloned from: `https://github.com`.
    pub web: Url,
}

/// A token that may act on one repository: the REST client and git's header.
#[derive(Debug, Clone)]
pub struct RepoToken {
    /// The repository.
    pub repo: RepoRef,
    /// Its forge's URLs.
    pub urls: ForgeUrls,
    token: Secret,
}

impl RepoToken {
    /// A token for `repo`; the caller registered it with the process's redactor.
    pub(super) fn new(repo: RepoRef, urls: ForgeUrls, token: Secret) -> RepoToken {
        RepoToken { repo, urls, token }
    }

    /// The token itself, to register with a redactor or compare in tests; it is sent
    /// only by [`RepoToken::api`] and [`RepoToken::git_authorization`].
    pub fn secret(&self) -> &Secret {
        &self.token
    }

    /// The REST client of the forge's API with this token.
    pub fn api(&self) -> Result<Api, PostError> {
        match self.repo.forge {
            Forge::Github => {
                let headers = vec![("accept", "application/vnd.github+json"), ("x-github-api-version", "2022-11-28")];
                let bearer = Secret::new(format!("Bearer {}", self.token.expose()));
                let explain = (
                    "CONCLAVE_GITHUB_TOKEN (or the GitHub App's installation token)",
                    "give the GitHub App (or the token) the permission the request needs",
                );
                Api::new(self.urls.api.clone(), ("authorization", bearer), &self.token, headers, explain)
            }
            Forge::Gitlab => {
                let explain = ("CONCLAVE_GITLAB_TOKEN", "give the token the `api` scope and the Developer role");
                Api::new(self.urls.api.clone(), ("private-token", self.token.clone()), &self.token, vec![], explain)
            }
        }
    }

    /// The URL git fetches the repository from: `<web>/<path>.git`. The path was
    /// checked when the repository was named (see `mirrors::path`), but a URL is
    /// built by segments all the same.
    pub fn clone_url(&self) -> Result<Url, AuthError> {
        let mut url = self.urls.web.clone();
        let segments: Vec<&str> = self.repo.path.split('/').collect();
        let Some((last, owners)) = segments.split_last() else {
            return Err(AuthError::Config(format!("`{}` is not a repository path", self.repo.path)));
        };
        let last = format!("{last}.git");
        url.path_segments_mut()
            .map_err(|()| AuthError::Config(format!("`{}` cannot hold a repository path", self.urls.web)))?
            .pop_if_empty()
            .extend(owners)
            .push(&last);
        Ok(url)
    }

    /// The `Authorization` header git sends for this token over HTTPS: Basic, with
    /// the user name each forge documents for a token (`x-access-token` for a GitHub
    /// App's installation token, `oauth2` for GitLab).
    pub fn git_authorization(&self) -> Secret {
        let user = match self.repo.forge {
            Forge::Github => "x-access-token",
            Forge::Gitlab => "oauth2",
        };
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", self.token.expose()));
        Secret::new(format!("Authorization: Basic {basic}"))
    }
}
