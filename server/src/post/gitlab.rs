//! Posting on a GitLab merge request: the environment of GitLab CI, one discussion
//! per inline item (positioned on the diff's `diff_refs`), one note for the items
//! outside the diff, edited in place later, fixed discussions resolved, and
//! `/conclave dismiss` notes in Conclave's discussions read (with their authors'
//! access level) and answered in the discussion.

use conclave_core::Secret;
use reqwest::{Method, Url};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};

use super::ci_env::{api_url, required};
use super::error::PostError;
use super::http::Api;
use super::lines::Diff;
use super::plan::Posted;
use super::plan::{self, Existing, NewInline, Options, SUMMARY_MARKER};
use super::posting::Posting;
use super::replies::{self, Reply, Verdict};

/// What a token needs to post, for the permission error.
const PERMISSION_HINT: &str = "give GITLAB_TOKEN the `api` scope, from a user or bot with at least the Reporter \
                               role on the project (a project access token works)";

/// Who may dismiss a finding by replying, for the answer to one who may not.
const WHO_MAY: &str = "project members with the Developer role or above";
/// The least access level that may dismiss: Developer.
const DEVELOPER: u64 = 30;

/// Where and how to post on GitLab.
#[derive(Debug)]
pub struct Config {
    /// `CI_API_V4_URL`.
    pub api: Url,
    /// `GITLAB_TOKEN`, sent as `PRIVATE-TOKEN`.
    pub token: Secret,
    /// `CI_PROJECT_ID` (a number, or a `group/name` path).
    pub project: String,
    /// The repository's key for stored dismissals: `CI_PROJECT_PATH` (`group/name`)
    /// when set, else the project.
    pub key: String,
    /// The merge request: `--pr`, else `CI_MERGE_REQUEST_IID`.
    pub iid: u64,
    /// The project's web pages: `CI_PROJECT_URL`, when set.
    pub web_url: Option<String>,
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
        let key = env("CI_PROJECT_PATH").map(|p| p.trim().to_string()).filter(|p| !p.is_empty());
        let iid = match pr {
            Some(n) => Some(n),
            None => merge_request_iid(env).map_err(|p| problems.push(p)).ok(),
        };
        match (api, iid) {
            (Some(api), Some(iid)) if problems.is_empty() => {
                let key = key.unwrap_or_else(|| project.clone());
                let web_url = env("CI_PROJECT_URL").map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
                Ok(Config { api, token: Secret::new(token), project, key, iid, web_url })
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

/// The REST client of the project's API, with its token.
fn client(config: &Config) -> Result<Api, PostError> {
    let auth = ("private-token", config.token.clone());
    Api::new(config.api.clone(), auth, &config.token, vec![], ("GITLAB_TOKEN", PERMISSION_HINT))
}

/// The URL of `tail` under the merge request.
fn merge_request(api: &Api, config: &Config, tail: &[&str]) -> Url {
    let iid = config.iid.to_string();
    api.url(&[&["projects", config.project.as_str(), "merge_requests", &iid], tail].concat())
}

/// Posts the items on the merge request, and answers the replies.
/// The posting's scope, when given, says what was reviewed at the head of a new note.
pub async fn post(config: &Config, posting: &Posting<'_>) -> Result<Posted, PostError> {
    let api = client(config)?;
    let mr = |tail: &[&str]| merge_request(&api, config, tail);
    let (_, request) = api.send(Method::GET, mr(&[]), None).await?;
    let refs = ["base_sha", "start_sha", "head_sha"]
        .map(|k| request.pointer(&format!("/diff_refs/{k}")).and_then(Value::as_str).unwrap_or_default().to_string());
    if refs.iter().any(String::is_empty) {
        let message = "no `diff_refs` yet (GitLab is still preparing the diff); run the job again".to_string();
        return Err(PostError::Malformed { request: format!("GET {}", mr(&[]).path()), message });
    }
    let diff = Diff::from_files(&api.get_all(mr(&["diffs"])).await?, ["new_path", "old_path", "diff"])?;
    let existing = discussions(&api.get_all(mr(&["discussions"])).await?);
    let options = Options { mark_fixed: posting.mark_fixed, append_to_summary: true };
    let plan = plan::plan_keeping(posting.items, &diff, &existing, options, posting.dismissed);
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
        if let Some(scope) = posting.scope {
            title.push_str(&format!("\n\n{scope}"));
        }
        let body = plan::summary(&title, &plan.outside);
        api.send(Method::POST, mr(&["notes"]), Some(&json!({"body": body}))).await?;
    }
    for reply in posting.replies {
        let body = json!({"body": reply.answer(WHO_MAY)});
        api.send(Method::POST, mr(&["discussions", &reply.thread, "notes"]), Some(&body)).await?;
    }
    Ok(Posted { answered: posting.replies.len(), ..Posted::from(&plan) })
}

/// The `/conclave dismiss` notes in Conclave's discussions not answered yet, each
/// with its verdict (its author's access level asked once per author).
pub async fn read_replies(config: &Config) -> Result<Vec<Reply>, PostError> {
    let api = client(config)?;
    let discussions = api.get_all(merge_request(&api, config, &["discussions"])).await?;
    let notes = |d: &Value| d["notes"].as_array().cloned().unwrap_or_default();
    let answered: BTreeSet<String> =
        discussions.iter().flat_map(notes).filter_map(|n| replies::answered(n["body"].as_str()?)).collect();
    let mut may: HashMap<u64, bool> = HashMap::new();
    let mut found = Vec::new();
    for discussion in &discussions {
        let (Some(thread), notes) = (discussion["id"].as_str(), notes(discussion)) else { continue };
        let Some(first) = notes.iter().position(|n| {
            n["system"] != true
                && n["body"].as_str().is_some_and(|b| plan::is_conclave(b) && !b.contains(SUMMARY_MARKER))
        }) else {
            continue;
        };
        let fingerprints = replies::fingerprints(notes[first]["body"].as_str().unwrap_or_default());
        for note in notes.iter().skip(first + 1).filter(|_| !fingerprints.is_empty()) {
            let (Some(id), Some(body), Some(user), Some(author)) = (
                note["id"].as_u64(),
                note["body"].as_str(),
                note.pointer("/author/id").and_then(Value::as_u64),
                note.pointer("/author/username").and_then(Value::as_str),
            ) else {
                continue;
            };
            let Some(reason) = replies::command(body).filter(|_| !answered.contains(&id.to_string())) else { continue };
            let verdict = match reason.is_empty() {
                true => Verdict::NoReason,
                false if may_dismiss(&api, config, user, &mut may).await? => Verdict::Dismissed,
                false => Verdict::NoPermission,
            };
            let source = format!("gitlab {}!{} note {id}", config.key, config.iid);
            let (id, thread, author) = (id.to_string(), thread.to_string(), author.to_string());
            found.push(Reply { id, thread, fingerprints: fingerprints.clone(), author, reason, verdict, source });
        }
    }
    Ok(found)
}

/// Whether user `user` is a member of the project with the Developer role or above
/// (inherited membership counts), asked once per user; a non-member (404) is not.
async fn may_dismiss(api: &Api, config: &Config, user: u64, may: &mut HashMap<u64, bool>) -> Result<bool, PostError> {
    if let Some(known) = may.get(&user) {
        return Ok(*known);
    }
    let allowed = has_developer_access(api, &config.project, user).await?;
    may.insert(user, allowed);
    Ok(allowed)
}

/// Whether user `user` is a member of `project` (an id or a `group/name` path) with
/// the Developer role or above, inherited membership counting; a non-member (404) is
/// not. The one check of who may dismiss a finding or command a review.
pub async fn has_developer_access(api: &Api, project: &str, user: u64) -> Result<bool, PostError> {
    let url = api.url(&["projects", project, "members", "all", &user.to_string()]);
    match api.send(Method::GET, url, None).await {
        Ok((_, member)) => Ok(member["access_level"].as_u64().is_some_and(|level| level >= DEVELOPER)),
        Err(PostError::Status { status: 404, .. }) => Ok(false),
        Err(e) => Err(e),
    }
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
