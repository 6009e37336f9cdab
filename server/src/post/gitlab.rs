//! Posting on a GitLab merge request: the environment of GitLab CI, one discussion
//! per inline item (positioned on the diff's `diff_refs`), one note for the items
//! outside the diff, edited in place later, and fixed discussions resolved.

use conclave_core::Secret;
use reqwest::{Method, Url};
use serde_json::{Value, json};

use super::ci_env::{api_url, required};
use super::error::PostError;
use super::http::Api;
use super::lines::Diff;
use super::plan::Posted;
use super::plan::{self, Existing, Item, NewInline, Options, SUMMARY_MARKER};

/// What a token needs to post, for the permission error.
const PERMISSION_HINT: &str = "give GITLAB_TOKEN the `api` scope, from a user or bot with at least the Reporter \
                               role on the project (a project access token works)";

/// Where and how to post on GitLab.
#[derive(Debug)]
pub struct Config {
    /// `CI_API_V4_URL`.
    pub api: Url,
    /// `GITLAB_TOKEN`, sent as `PRIVATE-TOKEN`.
    pub token: Secret,
    /// `CI_PROJECT_ID` (a number, or a `group/name` path).
    pub project: String,
    /// The merge request: `--pr`, else `CI_MERGE_REQUEST_IID`.
    pub iid: u64,
}

impl Config {
    /// The configuration from GitLab CI's variables; every problem, when any.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>, pr: Option<u64>) -> Result<Config, Vec<String>> {
        let mut problems = Vec::new();
        let token = required(
            env,
            "GITLAB_TOKEN",
            "a token with the `api` scope; add it as a masked CI/CD variable",
            &mut problems,
        );
        let base = required(env, "CI_API_V4_URL", "the API base URL; GitLab CI sets it", &mut problems);
        let api = if base.is_empty() { None } else { api_url(&base, "CI_API_V4_URL", &mut problems) };
        let project = required(env, "CI_PROJECT_ID", "the project; GitLab CI sets it", &mut problems);
        let iid = match pr {
            Some(n) => Some(n),
            None => merge_request_iid(env).map_err(|p| problems.push(p)).ok(),
        };
        match (api, iid) {
            (Some(api), Some(iid)) if problems.is_empty() => {
                Ok(Config { api, token: Secret::new(token), project, iid })
            }
            _ => Err(problems),
        }
    }
}

fn merge_request_iid(env: &dyn Fn(&str) -> Option<String>) -> Result<u64, String> {
    let help = "pass --pr N, or run the job in a merge request pipeline (`rules: - if: $CI_PIPELINE_SOURCE == \
                \"merge_request_event\"`)";
    match env("CI_MERGE_REQUEST_IID").map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
        None => Err(format!("no merge request: CI_MERGE_REQUEST_IID is not set; {help}")),
        Some(v) => v.parse().map_err(|_| format!("CI_MERGE_REQUEST_IID `{v}` is not a number; {help}")),
    }
}

/// Posts the items on the merge request.
/// `scope`, when given, says what was reviewed at the head of a new note.
pub async fn post(config: &Config, items: &[Item], mark_fixed: bool, scope: Option<&str>) -> Result<Posted, PostError> {
    let api = Api::new(
        config.api.clone(),
        ("private-token", config.token.clone()),
        &config.token,
        vec![],
        ("GITLAB_TOKEN", PERMISSION_HINT),
    )?;
    let iid = config.iid.to_string();
    let mr = |tail: &[&str]| api.url(&[&["projects", config.project.as_str(), "merge_requests", &iid], tail].concat());
    let (_, request) = api.send(Method::GET, mr(&[]), None).await?;
    let refs = ["base_sha", "start_sha", "head_sha"]
        .map(|k| request.pointer(&format!("/diff_refs/{k}")).and_then(Value::as_str).unwrap_or_default().to_string());
    if refs.iter().any(String::is_empty) {
        let message = "no `diff_refs` yet (GitLab is still preparing the diff); run the job again".to_string();
        return Err(PostError::Malformed { request: format!("GET {}", mr(&[]).path()), message });
    }
    let diff = Diff::from_files(&api.get_all(mr(&["diffs"])).await?, ["new_path", "old_path", "diff"])?;
    let existing = discussions(&api.get_all(mr(&["discussions"])).await?);
    let plan = plan::plan(items, &diff, &existing, Options { mark_fixed, append_to_summary: true });
    for edit in &plan.edits {
        let thread = edit.thread.as_deref().unwrap_or_default();
        let body = json!({"body": edit.body});
        api.send(Method::PUT, mr(&["discussions", thread, "notes", &edit.id]), Some(&body)).await?;
        if let Some(resolved) = edit.resolve {
            let mut url = mr(&["discussions", thread]);
            url.query_pairs_mut().append_pair("resolved", if resolved { "true" } else { "false" });
            api.send(Method::PUT, url, None).await?;
        }
    }
    for inline in &plan.inline {
        api.send(Method::POST, mr(&["discussions"]), Some(&discussion(inline, &refs))).await?;
    }
    if !plan.outside.is_empty() {
        let mut title = "**Conclave review**: findings outside the diff".to_string();
        if let Some(scope) = scope {
            title.push_str(&format!("\n\n{scope}"));
        }
        let body = plan::summary(&title, &plan.outside);
        api.send(Method::POST, mr(&["notes"]), Some(&json!({"body": body}))).await?;
    }
    Ok(Posted::from(&plan))
}

/// Conclave's discussions: each one's first note with a marker.
fn discussions(discussions: &[Value]) -> Vec<Existing> {
    discussions
        .iter()
        .filter_map(|d| {
            let thread = d.get("id")?.as_str()?.to_string();
            let note = d.get("notes")?.as_array()?.iter().find(|n| {
                n.get("body").and_then(Value::as_str).is_some_and(plan::is_conclave)
                    && n.get("system").and_then(Value::as_bool) != Some(true)
            })?;
            let body = note.get("body")?.as_str()?.to_string();
            Some(Existing {
                id: note.get("id")?.as_u64()?.to_string(),
                thread: Some(thread),
                summary: body.contains(SUMMARY_MARKER),
                body,
            })
        })
        .collect()
}

/// A new discussion on a diff line.
fn discussion(inline: &NewInline, [base, start, head]: &[String; 3]) -> Value {
    let mut position = json!({
        "position_type": "text",
        "base_sha": base,
        "start_sha": start,
        "head_sha": head,
        "old_path": inline.old_path,
        "new_path": inline.path,
        "new_line": inline.line,
    });
    // An unchanged line is named by both its lines, or GitLab refuses the position.
    if let Some(old) = inline.old_line {
        position["old_line"] = json!(old);
    }
    json!({"body": inline.body, "position": position})
}
