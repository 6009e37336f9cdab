//! A pull (merge) request through the forge's API with a repository's token: its
//! head and base as they are now, where its review posts (the same `Target` that
//! `conclave review --post` posts to), and the plain comments the service writes on
//! its conversation (the reason a review could not run, and the answer to a command
//! that is refused).

use conclave_review::inert::{LinkPolicy, sanitize};
use reqwest::{Method, Url};
use serde_json::{Value, json};

use crate::forge_app::RepoToken;
use crate::post::http::Api;
use crate::post::{Forge, PostError, Target, github, github_threads, gitlab};

/// The hidden marker of the comment that says why a review could not run: one such
/// comment per request, edited in place by the next failure.
const FAILURE_MARKER: &str = "<!-- conclave:failure -->";

/// A pull request's commits as the forge says they are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullDetails {
    /// The head commit.
    pub head: String,
    /// The base branch's commit the request is compared with.
    pub base: String,
    /// Whether it is open.
    pub open: bool,
}

/// The request's head and base now.
pub async fn details(token: &RepoToken, number: u64) -> Result<PullDetails, PostError> {
    let api = token.api()?;
    let repository = &token.repo.path;
    let n = number.to_string();
    let text = |value: &Value, pointer: &str| value.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string();
    let details = match token.repo.forge {
        Forge::Github => {
            let (owner, name) = repository.split_once('/').unwrap_or((repository, ""));
            let (_, pull) = api.send(Method::GET, api.url(&["repos", owner, name, "pulls", &n]), None).await?;
            PullDetails {
                head: text(&pull, "/head/sha"),
                base: text(&pull, "/base/sha"),
                open: text(&pull, "/state") == "open",
            }
        }
        Forge::Gitlab => {
            let url = api.url(&["projects", repository, "merge_requests", &n]);
            let (_, request) = api.send(Method::GET, url, None).await?;
            let head = Some(text(&request, "/diff_refs/head_sha")).filter(|s| !s.is_empty());
            PullDetails {
                head: head.unwrap_or_else(|| text(&request, "/sha")),
                base: text(&request, "/diff_refs/base_sha"),
                open: text(&request, "/state") == "opened",
            }
        }
    };
    if details.head.is_empty() || details.base.is_empty() {
        return Err(PostError::Config(format!(
            "the forge's answer for {repository} request {number} names no head or base commit"
        )));
    }
    Ok(details)
}

/// Where the review of request `number` posts, as `conclave review --post` would.
pub fn target(token: &RepoToken, number: u64) -> Target {
    let repository = token.repo.path.clone();
    let web_url = format!("{}/{repository}", token.urls.web.as_str().trim_end_matches('/'));
    match token.repo.forge {
        Forge::Github => Target::GitHub(github::Config {
            graphql: github_threads::endpoint(&token.urls.api, None),
            api: token.urls.api.clone(),
            token: token.secret().clone(),
            repository,
            number,
            web_url,
        }),
        Forge::Gitlab => Target::GitLab(gitlab::Config {
            api: token.urls.api.clone(),
            token: token.secret().clone(),
            project: repository.clone(),
            key: repository,
            iid: number,
            web_url: Some(web_url),
        }),
    }
}

/// The web URL of the token's repository, the one place links may point to.
pub fn web_url(token: &RepoToken) -> String {
    format!("{}/{}", token.urls.web.as_str().trim_end_matches('/'), token.repo.path)
}

/// Says on request `number` why its review could not run: one comment, edited in
/// place when an earlier failure's is still there.
pub async fn post_failure(token: &RepoToken, number: u64, reason: &str) -> Result<(), PostError> {
    let body = format!(
        "{FAILURE_MARKER}\n**Conclave could not review this change.**\n\n{}\n\nThe reason is kept with the review \
         run; push again or comment `/conclave review` once it is fixed.",
        quoted(token, reason)
    );
    let api = token.api()?;
    let (list, edit) = comment_urls(&api, token, number);
    let earlier = api
        .get_all(list.clone())
        .await?
        .into_iter()
        .rev()
        .find(|c| c["body"].as_str().is_some_and(|b| b.starts_with(FAILURE_MARKER)) && c["id"].as_u64().is_some());
    if let Some(earlier) = earlier {
        let id = earlier["id"].as_u64().unwrap_or_default().to_string();
        let method = if token.repo.forge == Forge::Github { Method::PATCH } else { Method::PUT };
        let url = edit(&id);
        // A human's comment may carry the marker too: it is not ours to edit, so a
        // refused edit posts a new comment instead.
        if api.send(method, url, Some(&json!({ "body": body }))).await.is_ok() {
            return Ok(());
        }
    }
    api.send(Method::POST, list, Some(&json!({ "body": body }))).await?;
    Ok(())
}

/// Writes `text` as a new comment on request `number`'s conversation.
pub async fn post_comment(token: &RepoToken, number: u64, text: &str) -> Result<(), PostError> {
    let api = token.api()?;
    let (list, _) = comment_urls(&api, token, number);
    api.send(Method::POST, list, Some(&json!({ "body": quoted(token, text) }))).await?;
    Ok(())
}

/// `text` made inert for the request's page: no links outside the repository, no
/// mentions, no markup that hides or forges anything.
fn quoted(token: &RepoToken, text: &str) -> String {
    let links = LinkPolicy::repository(&web_url(token)).unwrap_or_default();
    sanitize(text, &links)
}

/// The URL of the request's conversation comments (to list and create them), and of
/// one of them by its id (to edit it).
fn comment_urls(api: &Api, token: &RepoToken, number: u64) -> (Url, impl Fn(&str) -> Url) {
    let repository = token.repo.path.clone();
    let n = number.to_string();
    let (list, one): (Url, Vec<String>) = match token.repo.forge {
        Forge::Github => {
            let (owner, name) = repository.split_once('/').unwrap_or((&repository, ""));
            let list = api.url(&["repos", owner, name, "issues", &n, "comments"]);
            (list, ["repos", owner, name, "issues", "comments"].map(str::to_string).to_vec())
        }
        Forge::Gitlab => {
            let segments = ["projects", repository.as_str(), "merge_requests", &n, "notes"];
            (api.url(&segments), segments.map(str::to_string).to_vec())
        }
    };
    let one = api.url(&one.iter().map(String::as_str).collect::<Vec<_>>());
    let edit = move |id: &str| {
        let mut url = one.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.push(id);
        }
        url
    };
    (list, edit)
}
