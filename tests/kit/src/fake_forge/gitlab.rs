//! A fake of GitLab's merge-request REST API (v4): the merge request with its
//! `diff_refs`, its diffs, discussions with notes (created, edited, resolved, and
//! replies added to them) and plain notes, paginated with `X-Next-Page`; and the
//! project's members with their access levels.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Answer, Behaviour, FakeForge, ForgeState, Incoming, page, serve, start};

/// One merge request's state on the fake.
#[derive(Debug, Default)]
pub struct MergeRequestState {
    /// The only token accepted (as `PRIVATE-TOKEN`).
    pub token: String,
    /// The project id.
    pub project: String,
    /// The merge request's iid.
    pub iid: u64,
    /// `base_sha`, `start_sha`, `head_sha`.
    pub diff_refs: Value,
    /// Diffs as `GET …/diffs` lists them.
    pub diffs: Vec<Value>,
    /// Discussions as `GET …/discussions` lists them.
    pub discussions: Vec<Value>,
    /// Members' access levels (10 guest, 20 reporter, 30 developer, 40 maintainer,
    /// 50 owner) by user id; anyone else is not a member (404).
    pub members: HashMap<u64, u64>,
    /// Paging, refusals and the requests seen.
    pub behaviour: Behaviour,
}

impl ForgeState for MergeRequestState {
    fn behaviour(&mut self) -> &mut Behaviour {
        &mut self.behaviour
    }
}

/// The fake; [`FakeGitLab::api`] is what `CI_API_V4_URL` is set to.
pub type FakeGitLab = FakeForge<MergeRequestState>;

impl FakeForge<MergeRequestState> {
    /// Serves merge request `iid` of project `project`, in pages of `page_size`.
    pub async fn start(project: &str, iid: u64, token: &str, page_size: usize) -> FakeGitLab {
        let state = MergeRequestState {
            token: token.into(),
            project: project.into(),
            iid,
            behaviour: Behaviour { page_size, ..Behaviour::default() },
            ..MergeRequestState::default()
        };
        start(state, handle).await
    }

    /// The API's base URL, as `CI_API_V4_URL` gives it.
    pub fn api(&self) -> String {
        format!("{}/api/v4", self.base)
    }

    /// Sets the diff's commits (base and head) and its files (path, patch).
    pub fn set_head(&self, base_sha: &str, head_sha: &str, files: &[(String, String)]) {
        let mut state = self.state.lock().expect("lock");
        state.diff_refs = json!({"base_sha": base_sha, "start_sha": base_sha, "head_sha": head_sha});
        state.diffs = files
            .iter()
            .map(|(path, diff)| {
                json!({"old_path": path, "new_path": path, "a_mode": "100644", "b_mode": "100644",
                "new_file": false, "renamed_file": false, "deleted_file": false, "diff": diff})
            })
            .collect();
    }

    /// Adds a discussion someone else started, as GitLab lists it.
    pub fn add_human_discussion(&self, body: &str) {
        let mut state = self.state.lock().expect("lock");
        let (id, note) = (state.behaviour.id(), state.behaviour.id());
        state.discussions.push(json!({"id": format!("{id:040x}"), "individual_note": true, "notes": [
            {"id": note, "type": null, "body": body, "system": false, "resolvable": false,
             "author": {"username": "ann"}}]}));
    }

    /// Adds a note by user `user_id` (`username`) to discussion `discussion`, as a
    /// reply in its thread; the note's id.
    pub fn add_human_note(&self, discussion: &str, user_id: u64, username: &str, body: &str) -> u64 {
        let mut state = self.state.lock().expect("lock");
        let author = json!({"id": user_id, "username": username});
        add_note(&mut state, discussion, author, body).map_or(0, |n| n["id"].as_u64().unwrap_or_default())
    }

    /// Makes user `user_id` a member with `access_level` (30 is developer).
    pub fn set_member(&self, user_id: u64, access_level: u64) {
        self.state.lock().expect("lock").members.insert(user_id, access_level);
    }

    /// The discussions now.
    pub fn discussions(&self) -> Vec<Value> {
        self.state.lock().expect("lock").discussions.clone()
    }
}

async fn handle(State(state): State<Arc<Mutex<MergeRequestState>>>, request: Request<Body>) -> Response<Body> {
    serve(&state, request, route, json!({"message": "403 Forbidden"})).await
}

fn route(state: &mut MergeRequestState, incoming: &Incoming) -> Answer {
    let token = incoming.headers.get("private-token").and_then(|v| v.to_str().ok()).unwrap_or("");
    if token != state.token {
        return Answer::status(401, "401 Unauthorized");
    }
    let project = ["api", "v4", "projects", state.project.as_str()];
    let segments: Vec<&str> = incoming.segments.iter().map(String::as_str).collect();
    if let ("GET", [p @ .., "members", "all", user]) = (incoming.method.as_str(), segments.as_slice())
        && *p == project
    {
        return member(state, user);
    }
    let iid = state.iid.to_string();
    let prefix = ["api", "v4", "projects", state.project.as_str(), "merge_requests", iid.as_str()];
    if !incoming.segments.iter().map(String::as_str).take(prefix.len()).eq(prefix) {
        return Answer::status(404, "404 Not found");
    }
    let rest: Vec<&str> = incoming.segments[prefix.len()..].iter().map(String::as_str).collect();
    match (incoming.method.as_str(), rest.as_slice()) {
        ("GET", []) => Answer::ok(json!({"iid": state.iid, "state": "opened", "diff_refs": state.diff_refs})),
        ("GET", ["diffs"]) => list(state, incoming, |s| &s.diffs),
        ("GET", ["discussions"]) => list(state, incoming, |s| &s.discussions),
        ("POST", ["discussions"]) => create_discussion(state, &incoming.body),
        ("POST", ["notes"]) => create_note(state, &incoming.body),
        ("PUT", ["discussions", id, "notes", note]) => edit_note(state, id, note, &incoming.body),
        ("POST", ["discussions", id, "notes"]) => {
            let Some(text) = incoming.body["body"].as_str() else { return Answer::status(400, "body is missing") };
            let author = json!({"id": 1, "username": "conclave-bot"});
            match add_note(state, id, author, text) {
                Some(note) => Answer::ok(note),
                None => Answer::status(404, "404 Discussion Not Found"),
            }
        }
        ("PUT", ["discussions", id]) => resolve(state, id, incoming.query.get("resolved").map(String::as_str)),
        _ => Answer::status(404, "404 Not found"),
    }
}

/// A page of a list with GitLab's pagination headers.
fn list(state: &MergeRequestState, incoming: &Incoming, of: fn(&MergeRequestState) -> &Vec<Value>) -> Answer {
    let page = page(of(state), incoming, state.behaviour.page_size);
    let next = if page.number < page.last { (page.number + 1).to_string() } else { String::new() };
    let mut answer = Answer::ok(Value::Array(page.items));
    answer.headers.extend([
        ("x-page".to_string(), page.number.to_string()),
        ("x-next-page".to_string(), next),
        ("x-per-page".to_string(), state.behaviour.page_size.to_string()),
        ("x-total".to_string(), of(state).len().to_string()),
    ]);
    answer
}

/// `POST …/discussions` with a text position, checked as GitLab checks it.
fn create_discussion(state: &mut MergeRequestState, body: &Value) -> Answer {
    let position = &body["position"];
    let refs_match = ["base_sha", "start_sha", "head_sha"].iter().all(|k| position[k] == state.diff_refs[k]);
    let known =
        state.diffs.iter().any(|d| d["new_path"] == position["new_path"] && d["old_path"] == position["old_path"]);
    if position["position_type"] != "text" || !refs_match || !known || !position["new_line"].is_u64() {
        return Answer::status(
            400,
            "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}",
        );
    }
    let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
    let (id, note) = (state.behaviour.id(), state.behaviour.id());
    let discussion = json!({"id": format!("{id:040x}"), "individual_note": false, "notes": [
        {"id": note, "type": "DiffNote", "body": text, "system": false, "resolvable": true, "resolved": false,
         "position": position, "author": {"username": "conclave-bot"}}]});
    state.discussions.push(discussion.clone());
    Answer::ok(discussion)
}

/// `POST …/notes`: a note on the merge request, its own discussion.
fn create_note(state: &mut MergeRequestState, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
    let (id, note_id) = (state.behaviour.id(), state.behaviour.id());
    let note = json!({"id": note_id, "type": null, "body": text, "system": false, "resolvable": false,
        "author": {"username": "conclave-bot"}});
    state.discussions.push(json!({"id": format!("{id:040x}"), "individual_note": true, "notes": [note.clone()]}));
    Answer::ok(note)
}

fn edit_note(state: &mut MergeRequestState, id: &str, note: &str, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
    let found = state
        .discussions
        .iter_mut()
        .filter(|d| d["id"] == id)
        .flat_map(|d| d["notes"].as_array_mut().into_iter().flatten())
        .find(|n| n["id"].as_u64().is_some_and(|id| note.parse() == Ok(id)));
    match found {
        Some(n) => {
            n["body"] = json!(text);
            Answer::ok(n.clone())
        }
        None => Answer::status(404, "404 Note Not Found"),
    }
}

fn resolve(state: &mut MergeRequestState, id: &str, resolved: Option<&str>) -> Answer {
    let Some(resolved) = resolved.and_then(|r| r.parse::<bool>().ok()) else {
        return Answer::status(400, "400 Bad request - resolved is missing");
    };
    let Some(discussion) = state.discussions.iter_mut().find(|d| d["id"] == id) else {
        return Answer::status(404, "404 Discussion Not Found");
    };
    for note in discussion["notes"].as_array_mut().into_iter().flatten() {
        if note["resolvable"] == true {
            note["resolved"] = json!(resolved);
        }
    }
    Answer::ok(discussion.clone())
}

/// `GET /projects/:id/members/all/:user_id`: a member with its access level, else 404.
fn member(state: &MergeRequestState, user: &str) -> Answer {
    let level = user.parse::<u64>().ok().and_then(|id| state.members.get(&id).map(|level| (id, *level)));
    match level {
        Some((id, level)) => Answer::ok(json!({"id": id, "username": format!("user{id}"), "state": "active",
            "access_level": level})),
        None => Answer::status(404, "404 Not found"),
    }
}

/// Adds a note by `author` to a discussion; the note.
fn add_note(state: &mut MergeRequestState, discussion: &str, author: Value, text: &str) -> Option<Value> {
    let id = state.behaviour.id();
    let thread = state.discussions.iter_mut().find(|d| d["id"] == discussion)?;
    let note = json!({"id": id, "type": "DiffNote", "body": text, "system": false, "resolvable": true,
        "resolved": false, "author": author});
    thread["notes"].as_array_mut()?.push(note.clone());
    Some(note)
}
