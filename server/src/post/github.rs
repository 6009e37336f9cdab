//! Posting on a GitHub pull request: the environment of GitHub Actions, one review
//! per posting with inline comments on diff lines (items outside the diff in its
//! body), Conclave's earlier comments and review bodies edited in place, the threads
//! of fixed findings resolved (`github_threads.rs`), and `/conclave dismiss` replies
//! read (with their authors' permission) and answered in their threads.

use conclave_core::Secret;
use reqwest::{Method, Url};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};

use super::ci_env::{api_url, required};
use super::error::PostError;
use super::github_threads;
use super::http::Api;
use super::lines::Diff;
use super::plan::Posted;
use super::plan::{self, Existing, Options, Plan, SUMMARY_MARKER};
use super::posting::Posting;
use super::replies::{self, Reply, Verdict};

/// What a token needs to post, for the permission error.
const PERMISSION_HINT: &str = "give GITHUB_TOKEN `pull-requests: write` (in GitHub Actions: `permissions: \
                               pull-requests: write` on the workflow or job; a pull request from a fork gets a \
                               read-only token)";

/// Who may dismiss a finding by replying, for the answer to one who may not.
const WHO_MAY: &str = "people with write access (the write, maintain or admin role)";

/// Where and how to post on GitHub.
#[derive(Debug)]
pub struct Config {
    /// `GITHUB_API_URL` (default `https://api.github.com`).
    pub api: Url,
    /// `GITHUB_GRAPHQL_URL`, else beside `api` (see [`github_threads::endpoint`]).
    pub graphql: Url,
    /// `GITHUB_TOKEN`.
    pub token: Secret,
    /// `GITHUB_REPOSITORY`: `owner/name`.
    pub repository: String,
    /// The pull request: `--pr`, else `pull_request.number` of `GITHUB_EVENT_PATH`.
    pub number: u64,
    /// The repository's web pages: `GITHUB_SERVER_URL` (default
    /// `https://github.com`) and the repository.
    pub web_url: String,
}

impl Config {
    /// The configuration from GitHub Actions' variables; every problem, when any.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>, pr: Option<u64>) -> Result<Config, Vec<String>> {
        let mut problems = Vec::new();
        let token = required(
            env,
            "GITHUB_TOKEN",
            "a token that may write pull-request reviews; in GitHub Actions, `GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` \
             in the step's env",
            &mut problems,
        );
        let repository = required(env, "GITHUB_REPOSITORY", "`owner/name`; GitHub Actions sets it", &mut problems);
        if !repository.is_empty() && !valid_repository(&repository) {
            problems.push(format!("GITHUB_REPOSITORY `{repository}` is not `owner/name`"));
        }
        let base = env("GITHUB_API_URL").filter(|v| !v.trim().is_empty());
        let api = api_url(base.as_deref().unwrap_or("https://api.github.com"), "GITHUB_API_URL", &mut problems);
        let graphql = env("GITHUB_GRAPHQL_URL").filter(|v| !v.trim().is_empty());
        let graphql = graphql.and_then(|g| api_url(&g, "GITHUB_GRAPHQL_URL", &mut problems));
        let number = match pr {
            Some(n) => Some(n),
            None => pull_request_number(env).map_err(|p| problems.push(p)).ok(),
        };
        match (api, number) {
            (Some(api), Some(number)) if problems.is_empty() => {
                let graphql = github_threads::endpoint(&api, graphql);
                let server = env("GITHUB_SERVER_URL").filter(|v| !v.trim().is_empty());
                let web_url =
                    format!("{}/{repository}", server.as_deref().unwrap_or("https://github.com").trim_end_matches('/'));
                Ok(Config { api, graphql, token: Secret::new(token), repository, number, web_url })
            }
            _ => Err(problems),
        }
    }
}

fn valid_repository(repository: &str) -> bool {
    let mut parts = repository.split('/');
    let ok = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p != "." && p != "..");
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// `pull_request.number` of the event file GitHub Actions names in `GITHUB_EVENT_PATH`.
fn pull_request_number(env: &dyn Fn(&str) -> Option<String>) -> Result<u64, String> {
    let help = "pass --pr N, or run on a `pull_request` event";
    let Some(path) = env("GITHUB_EVENT_PATH").filter(|p| !p.trim().is_empty()) else {
        return Err(format!("no pull request number: GITHUB_EVENT_PATH is not set; {help}"));
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("no pull request number: cannot read GITHUB_EVENT_PATH `{path}` ({e}); {help}"))?;
    let event: Value = serde_json::from_str(&text)
        .map_err(|e| format!("no pull request number: GITHUB_EVENT_PATH `{path}` is not JSON ({e}); {help}"))?;
    event.pointer("/pull_request/number").and_then(Value::as_u64).ok_or_else(|| {
        format!("no pull request number: `{path}` has no `pull_request.number` (not a pull_request event); {help}")
    })
}

/// The REST client of the pull request's API, with GitHub's headers and token.
fn client(config: &Config) -> Result<Api, PostError> {
    let headers = vec![("accept", "application/vnd.github+json"), ("x-github-api-version", "2022-11-28")];
    let token = Secret::new(format!("Bearer {}", config.token.expose()));
    Api::new(config.api.clone(), ("authorization", token), &config.token, headers, ("GITHUB_TOKEN", PERMISSION_HINT))
}

/// The URL of `tail` under the pull requests of the repository.
fn pulls(api: &Api, config: &Config, tail: &[&str]) -> Url {
    let (owner, name) = config.repository.split_once('/').unwrap_or((&config.repository, ""));
    api.url(&[&["repos", owner, name, "pulls"], tail].concat())
}

/// Posts the items on the pull request, resolves the threads of the fixed ones, and
/// answers the replies.
pub async fn post(config: &Config, posting: &Posting<'_>) -> Result<Posted, PostError> {
    let api = client(config)?;
    let number = config.number.to_string();
    let pull = |tail: &[&str]| pulls(&api, config, tail);
    let (_, pr) = api.send(Method::GET, pull(&[&number]), None).await?;
    let head = pr.pointer("/head/sha").and_then(Value::as_str).unwrap_or_default().to_string();
    let diff =
        Diff::from_files(&api.get_all(pull(&[&number, "files"])).await?, ["filename", "previous_filename", "patch"])?;
    let mut existing = conclave_comments(&api.get_all(pull(&[&number, "comments"])).await?, false);
    existing.extend(conclave_comments(&api.get_all(pull(&[&number, "reviews"])).await?, true));
    let options = Options { mark_fixed: posting.mark_fixed, append_to_summary: false };
    let plan = plan::plan_keeping(posting.items, &diff, &existing, options, posting.dismissed);
    // Threads are resolved before their comments are marked fixed: a posting that
    // fails between the two leaves the comment open, so the next one does both.
    let fixed: Vec<String> =
        plan.edits.iter().filter(|e| !e.summary && e.resolve == Some(true)).map(|e| e.id.clone()).collect();
    github_threads::resolve(&api, &config.graphql, &config.repository, config.number, &fixed).await?;
    for edit in &plan.edits {
        let (method, url) = match edit.summary {
            true => (Method::PUT, pull(&[&number, "reviews", &edit.id])),
            false => (Method::PATCH, pull(&["comments", &edit.id])),
        };
        api.send(method, url, Some(&json!({"body": edit.body}))).await?;
    }
    if !plan.inline.is_empty() || !plan.outside.is_empty() {
        let review = review(&plan, &head, posting.scope);
        api.send(Method::POST, pull(&[&number, "reviews"]), Some(&review)).await?;
    }
    for reply in posting.replies {
        let body = json!({"body": reply.answer(WHO_MAY)});
        api.send(Method::POST, pull(&[&number, "comments", &reply.thread, "replies"]), Some(&body)).await?;
    }
    Ok(Posted { answered: posting.replies.len(), ..Posted::from(&plan) })
}

/// The `/conclave dismiss` replies to Conclave's inline comments not answered yet,
/// each with its verdict (its author's permission asked once per author).
pub async fn read_replies(config: &Config) -> Result<Vec<Reply>, PostError> {
    let api = client(config)?;
    let comments = api.get_all(pulls(&api, config, &[&config.number.to_string(), "comments"])).await?;
    let answered: BTreeSet<String> = comments.iter().filter_map(|c| replies::answered(c["body"].as_str()?)).collect();
    let ours: HashMap<u64, Vec<String>> = comments
        .iter()
        .filter(|c| c["in_reply_to_id"].is_null() && c["body"].as_str().is_some_and(plan::is_conclave))
        .filter_map(|c| Some((c["id"].as_u64()?, replies::fingerprints(c["body"].as_str()?))))
        .filter(|(_, fingerprints)| !fingerprints.is_empty())
        .collect();
    let mut may: HashMap<String, bool> = HashMap::new();
    let mut found = Vec::new();
    for comment in &comments {
        let (Some(id), Some(to), Some(body), Some(author)) = (
            comment["id"].as_u64(),
            comment["in_reply_to_id"].as_u64(),
            comment["body"].as_str(),
            comment.pointer("/user/login").and_then(Value::as_str),
        ) else {
            continue;
        };
        let (Some(fingerprints), Some(reason)) = (ours.get(&to), replies::command(body)) else { continue };
        if answered.contains(&id.to_string()) {
            continue;
        }
        let verdict = match reason.is_empty() {
            true => Verdict::NoReason,
            false if may_dismiss(&api, config, author, &mut may).await? => Verdict::Dismissed,
            false => Verdict::NoPermission,
        };
        found.push(Reply {
            id: id.to_string(),
            thread: to.to_string(),
            fingerprints: fingerprints.clone(),
            author: author.to_string(),
            reason,
            verdict,
            source: format!("github {}#{} comment {id}", config.repository, config.number),
        });
    }
    Ok(found)
}

/// Whether `login` has write access to the repository (the write, maintain or admin
/// role), asked once per login; someone who is not a collaborator (404) has not.
async fn may_dismiss(
    api: &Api,
    config: &Config,
    login: &str,
    may: &mut HashMap<String, bool>,
) -> Result<bool, PostError> {
    if let Some(known) = may.get(login) {
        return Ok(*known);
    }
    let allowed = has_write_access(api, &config.repository, login).await?;
    may.insert(login.to_string(), allowed);
    Ok(allowed)
}

/// Whether `login` has write access to `repository` (`owner/name`): the write,
/// maintain or admin role. Someone who is not a collaborator (404) has not. The one
/// check of who may dismiss a finding or command a review.
pub async fn has_write_access(api: &Api, repository: &str, login: &str) -> Result<bool, PostError> {
    let (owner, name) = repository.split_once('/').unwrap_or((repository, ""));
    let url = api.url(&["repos", owner, name, "collaborators", login, "permission"]);
    match api.send(Method::GET, url, None).await {
        Ok((_, answer)) => Ok(["permission", "role_name"]
            .iter()
            .any(|k| matches!(answer[*k].as_str(), Some("admin" | "maintain" | "write")))),
        Err(PostError::Status { status: 404, .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Conclave's inline review comments (`summary` false), or its review bodies that
/// list items outside the diff (`summary` true).
fn conclave_comments(list: &[Value], summary: bool) -> Vec<Existing> {
    list.iter()
        .filter_map(|c| {
            let body = c.get("body")?.as_str()?;
            let ours = match summary {
                true => body.contains(SUMMARY_MARKER) && !plan::split(body).1.is_empty(),
                false => plan::is_conclave(body),
            };
            let id = c.get("id")?.as_u64()?.to_string();
            // A reply in a thread (a person's, or an answer) is not a comment to reconcile.
            let reply = c.get("in_reply_to_id").is_some_and(|r| !r.is_null());
            (ours && !reply).then(|| Existing { id, thread: None, summary, body: body.to_string() })
        })
        .collect()
}

/// The new review: a comment review on the head commit, with its inline comments.
fn review(plan: &Plan, head: &str, scope: Option<&str>) -> Value {
    let comments: Vec<Value> =
        plan.inline.iter().map(|c| json!({"path": c.path, "line": c.line, "side": "RIGHT", "body": c.body})).collect();
    let mut title = format!("**Conclave review**: {} new comment(s) on the diff", plan.inline.len());
    if !plan.outside.is_empty() {
        title.push_str(&format!(", {} outside it", plan.outside.len()));
        title.push_str(if scope.is_some() { " (listed below)." } else { ":" });
    }
    if let Some(scope) = scope {
        title.push_str(&format!("\n\n{scope}"));
    }
    let body = plan::summary(&title, &plan.outside);
    let mut review = json!({"body": body, "event": "COMMENT", "comments": comments});
    if !head.is_empty() {
        review["commit_id"] = json!(head);
    }
    review
}
