//! Posting on a GitHub pull request: the environment of GitHub Actions, one review
//! per posting with inline comments on diff lines (items outside the diff in its
//! body), and Conclave's earlier comments and review bodies edited in place.

use conclave_core::Secret;
use reqwest::{Method, Url};
use serde_json::{Value, json};

use super::ci_env::{api_url, required};
use super::error::PostError;
use super::http::Api;
use super::lines::Diff;
use super::plan::Posted;
use super::plan::{self, Existing, Item, Options, Plan, SUMMARY_MARKER};

/// What a token needs to post, for the permission error.
const PERMISSION_HINT: &str = "give GITHUB_TOKEN `pull-requests: write` (in GitHub Actions: `permissions: \
                               pull-requests: write` on the workflow or job; a pull request from a fork gets a \
                               read-only token)";

/// Where and how to post on GitHub.
#[derive(Debug)]
pub struct Config {
    /// `GITHUB_API_URL` (default `https://api.github.com`).
    pub api: Url,
    /// `GITHUB_TOKEN`.
    pub token: Secret,
    /// `GITHUB_REPOSITORY`: `owner/name`.
    pub repository: String,
    /// The pull request: `--pr`, else `pull_request.number` of `GITHUB_EVENT_PATH`.
    pub number: u64,
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
        let number = match pr {
            Some(n) => Some(n),
            None => pull_request_number(env).map_err(|p| problems.push(p)).ok(),
        };
        match (api, number) {
            (Some(api), Some(number)) if problems.is_empty() => {
                Ok(Config { api, token: Secret::new(token), repository, number })
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

/// Posts the items on the pull request.
/// `scope`, when given, says what was reviewed at the head of a new review's body.
pub async fn post(config: &Config, items: &[Item], mark_fixed: bool, scope: Option<&str>) -> Result<Posted, PostError> {
    let headers = vec![("accept", "application/vnd.github+json"), ("x-github-api-version", "2022-11-28")];
    let token = Secret::new(format!("Bearer {}", config.token.expose()));
    let api = Api::new(
        config.api.clone(),
        ("authorization", token),
        &config.token,
        headers,
        ("GITHUB_TOKEN", PERMISSION_HINT),
    )?;
    let number = config.number.to_string();
    let (owner, name) = config.repository.split_once('/').unwrap_or((&config.repository, ""));
    let pull = |tail: &[&str]| api.url(&[&["repos", owner, name, "pulls"], tail].concat());
    let (_, pr) = api.send(Method::GET, pull(&[&number]), None).await?;
    let head = pr.pointer("/head/sha").and_then(Value::as_str).unwrap_or_default().to_string();
    let diff =
        Diff::from_files(&api.get_all(pull(&[&number, "files"])).await?, ["filename", "previous_filename", "patch"])?;
    let mut existing = conclave_comments(&api.get_all(pull(&[&number, "comments"])).await?, false);
    existing.extend(conclave_comments(&api.get_all(pull(&[&number, "reviews"])).await?, true));
    let plan = plan::plan(items, &diff, &existing, Options { mark_fixed, append_to_summary: false });
    for edit in &plan.edits {
        let (method, url) = match edit.summary {
            true => (Method::PUT, pull(&[&number, "reviews", &edit.id])),
            false => (Method::PATCH, pull(&["comments", &edit.id])),
        };
        api.send(method, url, Some(&json!({"body": edit.body}))).await?;
    }
    if !plan.inline.is_empty() || !plan.outside.is_empty() {
        let review = review(&plan, &head, scope);
        api.send(Method::POST, pull(&[&number, "reviews"]), Some(&review)).await?;
    }
    Ok(Posted::from(&plan))
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
            ours.then(|| Existing { id, thread: None, summary, body: body.to_string() })
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
