//! The fake GitHub's routes of one pull request, `/repos/{owner}/{repo}/pulls/{n}/…`
//! and its conversation `/repos/{owner}/{repo}/issues/{n}/comments`, each acting on
//! pull request `n` alone (404 for a number the fake lacks): the pull request, its
//! files, review comments and replies, reviews and issue comments, checked and
//! answered as GitHub does.

use serde_json::{Value, json};

use super::github_graphql::Thread;
use super::github_state::{Pull, PullState};
use super::{Answer, Incoming, page, page_url, timestamp};

/// Answers `rest`, the path after `/repos/{owner}/{repo}`: `pulls/…` or `issues/…`.
pub(crate) fn route(state: &mut PullState, incoming: &Incoming, rest: &[&str]) -> Answer {
    let method = incoming.method.as_str();
    match (method, rest) {
        ("PATCH", ["pulls", "comments", id]) => {
            edit(state.pulls.iter_mut().flat_map(|p| p.comments.iter_mut()), id, &incoming.body)
        }
        ("PATCH", ["issues", "comments", id]) => {
            edit(state.pulls.iter_mut().flat_map(|p| p.issue_comments.iter_mut()), id, &incoming.body)
        }
        (_, ["pulls", n, tail @ ..]) => match n.parse().ok().filter(|n| state.pull(*n).is_some()) {
            Some(number) => pull_route(state, incoming, number, tail),
            None => Answer::status(404, "Not Found"),
        },
        (_, ["issues", n, "comments"]) => match n.parse().ok().filter(|n| state.pull(*n).is_some()) {
            Some(number) if method == "GET" => list(state, incoming, |s| &checked(s, number).issue_comments),
            Some(number) if method == "POST" => create_issue_comment(state, number, &incoming.body),
            _ => Answer::status(404, "Not Found"),
        },
        _ => Answer::status(404, "Not Found"),
    }
}

/// A comment by `login` on the conversation of pull request `number`, as GitHub
/// lists it.
pub(crate) fn issue_comment(state: &PullState, number: u64, id: u64, login: &str, text: &str) -> Value {
    let (base, repo, now) = (&state.base, &state.repository, timestamp());
    json!({"id": id, "node_id": format!("IC_{id}"), "body": text, "user": {"login": login},
        "url": format!("{base}/repos/{repo}/issues/comments/{id}"),
        "html_url": format!("{base}/{repo}/pull/{number}#issuecomment-{id}"),
        "issue_url": format!("{base}/repos/{repo}/issues/{number}"),
        "created_at": now, "updated_at": now, "author_association": "NONE"})
}

/// The review threads of a pull request: each top-level comment with the replies to it.
pub(crate) fn threads(pull: &Pull) -> Vec<Thread> {
    let mut threads: Vec<Thread> = Vec::new();
    for comment in &pull.comments {
        let id = comment["id"].as_u64().unwrap_or_default();
        match comment["in_reply_to_id"].as_u64() {
            Some(to) => match threads.iter_mut().find(|t| t.comments.first() == Some(&to)) {
                Some(thread) => thread.comments.push(id),
                None => threads.push(Thread { comments: vec![id] }),
            },
            None => threads.push(Thread { comments: vec![id] }),
        }
    }
    threads
}

/// Adds a reply by `login` to comment `to` of pull request `number` (to its
/// thread's first comment, as GitHub does); the reply, or `None` when the pull
/// request has no comment `to`.
pub(crate) fn reply(state: &mut PullState, number: u64, to: u64, login: &str, text: &str) -> Option<Value> {
    let PullState { pulls, behaviour, .. } = state;
    let pull = pulls.iter_mut().find(|p| p.number == number)?;
    let parent = pull.comments.iter().find(|c| c["id"].as_u64() == Some(to))?.clone();
    let first = parent["in_reply_to_id"].as_u64().unwrap_or(to);
    let id = behaviour.id();
    let comment = json!({"id": id, "in_reply_to_id": first, "pull_request_review_id": parent["pull_request_review_id"],
        "path": parent["path"], "line": parent["line"], "side": "RIGHT", "body": text,
        "commit_id": pull.head_sha, "user": {"login": login}});
    pull.comments.push(comment.clone());
    Some(comment)
}

/// The routes under `/pulls/{number}` of a pull request the fake has.
fn pull_route(state: &mut PullState, incoming: &Incoming, number: u64, tail: &[&str]) -> Answer {
    match (incoming.method.as_str(), tail) {
        ("GET", []) => Answer::ok(pull_json(state, checked(state, number))),
        ("GET", ["files"]) => list(state, incoming, |s| &checked(s, number).files),
        ("GET", ["comments"]) => list(state, incoming, |s| &checked(s, number).comments),
        ("GET", ["reviews"]) => list(state, incoming, |s| &checked(s, number).reviews),
        ("POST", ["reviews"]) => create_review(state, number, &incoming.body),
        ("POST", ["comments", id, "replies"]) => reply_from(state, number, id, &incoming.body),
        ("POST", ["comments"]) if incoming.body["in_reply_to"].is_u64() => {
            let to = incoming.body["in_reply_to"].to_string();
            reply_from(state, number, &to, &incoming.body)
        }
        ("PUT", ["reviews", id]) => {
            let reviews = state.pull_mut(number).map(|p| p.reviews.iter_mut()).into_iter().flatten();
            edit(reviews, id, &incoming.body)
        }
        _ => Answer::status(404, "Not Found"),
    }
}

/// Pull request `number`, which the route has checked the fake has.
fn checked(state: &PullState, number: u64) -> &Pull {
    state.pull(number).expect("a pull request the route checked")
}

/// `GET …/pulls/{n}`: the fields a reviewer reads, shaped as GitHub's.
fn pull_json(state: &PullState, pull: &Pull) -> Value {
    let (base, repo, number) = (&state.base, &state.repository, pull.number);
    let owner = repo.split('/').next().unwrap_or_default();
    let repository = json!({"full_name": repo, "clone_url": format!("{base}/{repo}.git")});
    json!({"number": number, "state": "open", "draft": pull.draft, "title": format!("Pull request #{number}"),
        "user": {"login": "octocat"},
        "url": format!("{base}/repos/{repo}/pulls/{number}"), "html_url": format!("{base}/{repo}/pull/{number}"),
        "head": {"sha": pull.head_sha, "ref": pull.head_ref, "label": format!("{owner}:{}", pull.head_ref),
            "repo": repository},
        "base": {"sha": pull.base_sha, "ref": "main", "label": format!("{owner}:main"), "repo": repository}})
}

/// A page of a list with GitHub's `Link` header.
fn list(state: &PullState, incoming: &Incoming, of: impl Fn(&PullState) -> &Vec<Value>) -> Answer {
    let page = page(of(state), incoming, state.behaviour.page_size);
    let mut links = Vec::new();
    if page.number < page.last {
        links.push(format!("<{}>; rel=\"next\"", page_url(&state.base, incoming, page.number + 1)));
        links.push(format!("<{}>; rel=\"last\"", page_url(&state.base, incoming, page.last)));
    }
    let mut answer = Answer::ok(Value::Array(page.items));
    if !links.is_empty() {
        answer.headers.push(("link".into(), links.join(", ")));
    }
    answer
}

/// `POST …/reviews`, checked as GitHub checks it: the pull request's head commit,
/// comments on lines of the diff's right side.
fn create_review(state: &mut PullState, number: u64, body: &Value) -> Answer {
    let PullState { pulls, behaviour, .. } = state;
    let Some(pull) = pulls.iter_mut().find(|p| p.number == number) else { return Answer::status(404, "Not Found") };
    if body["commit_id"] != json!(pull.head_sha) {
        return Answer::status(422, "commit_id is not part of the pull request");
    }
    if !matches!(body["event"].as_str(), Some("COMMENT" | "APPROVE" | "REQUEST_CHANGES")) {
        return Answer::status(422, "event must be COMMENT, APPROVE or REQUEST_CHANGES");
    }
    let comments = body["comments"].as_array().cloned().unwrap_or_default();
    for c in &comments {
        let known = pull.files.iter().any(|f| f["filename"] == c["path"]);
        if !known || c["side"] != "RIGHT" || !c["line"].is_u64() || !c["body"].is_string() {
            return Answer::status(422, "Unprocessable Entity: pull_request_review_thread.line could not be resolved");
        }
    }
    let id = behaviour.id();
    let review = json!({"id": id, "body": body["body"], "state": "COMMENTED", "commit_id": pull.head_sha,
        "user": {"login": "github-actions[bot]"}});
    pull.reviews.push(review.clone());
    for c in comments {
        let comment_id = behaviour.id();
        pull.comments.push(json!({"id": comment_id, "pull_request_review_id": id, "path": c["path"],
            "line": c["line"], "side": "RIGHT", "body": c["body"], "commit_id": pull.head_sha,
            "user": {"login": "github-actions[bot]"}}));
    }
    Answer::ok(review)
}

/// `PATCH …/comments/{id}` or `PUT …/reviews/{id}`: a new body for the item `id`
/// among `items`.
fn edit<'a>(mut items: impl Iterator<Item = &'a mut Value>, id: &str, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(422, "body is missing") };
    match items.find(|c| c["id"].as_u64().is_some_and(|n| id.parse() == Ok(n))) {
        Some(item) => {
            item["body"] = json!(text);
            if item.get("updated_at").is_some() {
                item["updated_at"] = json!(timestamp());
            }
            Answer::ok(item.clone())
        }
        None => Answer::status(404, "Not Found"),
    }
}

/// A reply to comment `to` by the token's bot (`POST …/comments/{id}/replies`).
fn reply_from(state: &mut PullState, number: u64, to: &str, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(422, "body is missing") };
    let Ok(to) = to.parse::<u64>() else { return Answer::status(404, "Not Found") };
    match reply(state, number, to, "github-actions[bot]", text) {
        Some(comment) => Answer::ok(comment),
        None => Answer::status(404, "Not Found"),
    }
}

/// `POST …/issues/{n}/comments`: a comment on the conversation by the token's bot.
fn create_issue_comment(state: &mut PullState, number: u64, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(422, "body is missing") };
    let id = state.behaviour.id();
    let comment = issue_comment(state, number, id, "github-actions[bot]", text);
    match state.pull_mut(number) {
        Some(pull) => {
            pull.issue_comments.push(comment.clone());
            Answer::created(comment)
        }
        None => Answer::status(404, "Not Found"),
    }
}
