//! The fake GitLab's routes of one merge request,
//! `/api/v4/projects/:id/merge_requests/:iid/…`, each acting on merge request `iid`
//! alone (404 for one the fake lacks): the merge request, its diffs, discussions
//! (created on a diff line, replied to, edited, resolved) and notes, checked and
//! answered as GitLab does, lists paginated with `X-Next-Page`.

use serde_json::{Value, json};

use super::gitlab_state::{MergeRequest, MergeRequestState};
use super::{Answer, Behaviour, Incoming, page, timestamp};

/// Answers `tail`, the path after `…/merge_requests/{iid}`.
pub(crate) fn route(state: &mut MergeRequestState, incoming: &Incoming, iid: &str, tail: &[&str]) -> Answer {
    let Ok(iid) = iid.parse::<u64>() else { return Answer::status(404, "404 Not found") };
    let (size, project_id, web_url) = (state.behaviour.page_size, state.project_id, web_url(state, iid));
    let body = &incoming.body;
    let MergeRequestState { merge_requests, behaviour, .. } = state;
    let Some(mr) = merge_requests.iter_mut().find(|m| m.iid == iid) else {
        return Answer::status(404, "404 Not found");
    };
    match (incoming.method.as_str(), tail) {
        ("GET", []) => Answer::ok(merge_request_json(mr, project_id, &web_url)),
        ("GET", ["diffs"]) => list(&mr.diffs, incoming, size),
        ("GET", ["discussions"]) => list(&mr.discussions, incoming, size),
        ("GET", ["notes"]) => {
            let mut notes = notes(mr);
            if incoming.query.get("sort").map(String::as_str) != Some("asc") {
                notes.reverse();
            }
            list(&notes, incoming, size)
        }
        ("POST", ["discussions"]) => create_discussion(mr, behaviour, body),
        ("POST", ["notes"]) => create_note(mr, behaviour, body),
        ("PUT", ["notes", note]) => edit_note(mr, None, note, body),
        ("PUT", ["discussions", id, "notes", note]) => edit_note(mr, Some(id), note, body),
        ("POST", ["discussions", id, "notes"]) => {
            let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
            let author = json!({"id": 1, "username": "conclave-bot"});
            match add_note(mr, behaviour, id, author, text) {
                Some(note) => Answer::created(note),
                None => Answer::status(404, "404 Discussion Not Found"),
            }
        }
        ("PUT", ["discussions", id]) => resolve(mr, id, incoming.query.get("resolved").map(String::as_str)),
        _ => Answer::status(404, "404 Not found"),
    }
}

/// Every note of a merge request, oldest first: those of every discussion.
pub(crate) fn notes(mr: &MergeRequest) -> Vec<Value> {
    let mut notes: Vec<Value> =
        mr.discussions.iter().flat_map(|d| d["notes"].as_array().into_iter().flatten()).cloned().collect();
    notes.sort_by_key(|n| n["id"].as_u64());
    notes
}

/// Adds a note by `author` to discussion `discussion` of a merge request; the note.
pub(crate) fn add_note(
    mr: &mut MergeRequest,
    behaviour: &mut Behaviour,
    discussion: &str,
    author: Value,
    text: &str,
) -> Option<Value> {
    let id = behaviour.id();
    let thread = mr.discussions.iter_mut().find(|d| d["id"] == discussion)?;
    let note = json!({"id": id, "type": "DiffNote", "body": text, "system": false, "resolvable": true,
        "resolved": false, "author": author});
    thread["notes"].as_array_mut()?.push(note.clone());
    Some(note)
}

/// The web page of merge request `iid`: under the project's path, or its id when
/// the fake was given no path.
fn web_url(state: &MergeRequestState, iid: u64) -> String {
    let project = match (&state.project_path, state.project_id) {
        (Some(path), _) => path.clone(),
        (None, id) => id.unwrap_or_default().to_string(),
    };
    format!("{}/{project}/-/merge_requests/{iid}", state.base)
}

/// `GET …/merge_requests/{iid}`: the fields a reviewer reads, shaped as GitLab's.
fn merge_request_json(mr: &MergeRequest, project_id: Option<u64>, web_url: &str) -> Value {
    let iid = mr.iid;
    json!({"iid": iid, "project_id": project_id, "title": format!("Merge request !{iid}"), "state": "opened",
        "draft": mr.draft, "work_in_progress": mr.draft, "sha": mr.diff_refs["head_sha"],
        "source_branch": mr.source_branch, "target_branch": "main", "author": {"username": "ann"},
        "web_url": web_url, "diff_refs": mr.diff_refs})
}

/// A page of a list with GitLab's pagination headers.
fn list(all: &[Value], incoming: &Incoming, size: usize) -> Answer {
    let page = page(all, incoming, size);
    let next = if page.number < page.last { (page.number + 1).to_string() } else { String::new() };
    let mut answer = Answer::ok(Value::Array(page.items));
    answer.headers.extend([
        ("x-page".to_string(), page.number.to_string()),
        ("x-next-page".to_string(), next),
        ("x-per-page".to_string(), size.to_string()),
        ("x-total".to_string(), all.len().to_string()),
    ]);
    answer
}

/// `POST …/discussions` with a text position, checked as GitLab checks it.
fn create_discussion(mr: &mut MergeRequest, behaviour: &mut Behaviour, body: &Value) -> Answer {
    let position = &body["position"];
    let refs_match = ["base_sha", "start_sha", "head_sha"].iter().all(|k| position[k] == mr.diff_refs[k]);
    let known = mr.diffs.iter().any(|d| d["new_path"] == position["new_path"] && d["old_path"] == position["old_path"]);
    if position["position_type"] != "text" || !refs_match || !known || !position["new_line"].is_u64() {
        return Answer::status(
            400,
            "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}",
        );
    }
    let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
    let (id, note) = (behaviour.id(), behaviour.id());
    let discussion = json!({"id": format!("{id:040x}"), "individual_note": false, "notes": [
        {"id": note, "type": "DiffNote", "body": text, "system": false, "resolvable": true, "resolved": false,
         "position": position, "author": {"username": "conclave-bot"}}]});
    mr.discussions.push(discussion.clone());
    Answer::created(discussion)
}

/// `POST …/notes`: a note on the merge request, its own discussion.
fn create_note(mr: &mut MergeRequest, behaviour: &mut Behaviour, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
    let (id, note_id) = (behaviour.id(), behaviour.id());
    let now = timestamp();
    let note = json!({"id": note_id, "type": null, "body": text, "system": false, "resolvable": false,
        "noteable_type": "MergeRequest", "noteable_iid": mr.iid, "created_at": now, "updated_at": now,
        "author": {"username": "conclave-bot"}});
    mr.discussions.push(json!({"id": format!("{id:040x}"), "individual_note": true, "notes": [note.clone()]}));
    Answer::created(note)
}

/// `PUT …/notes/{note}`, or `PUT …/discussions/{id}/notes/{note}` when `discussion`
/// names the discussion: a new body.
fn edit_note(mr: &mut MergeRequest, discussion: Option<&str>, note: &str, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(400, "body is missing") };
    let found = mr
        .discussions
        .iter_mut()
        .filter(|d| discussion.is_none_or(|id| d["id"] == id))
        .flat_map(|d| d["notes"].as_array_mut().into_iter().flatten())
        .find(|n| n["id"].as_u64().is_some_and(|id| note.parse() == Ok(id)));
    match found {
        Some(n) => {
            n["body"] = json!(text);
            if n.get("updated_at").is_some() {
                n["updated_at"] = json!(timestamp());
            }
            Answer::ok(n.clone())
        }
        None => Answer::status(404, "404 Note Not Found"),
    }
}

fn resolve(mr: &mut MergeRequest, id: &str, resolved: Option<&str>) -> Answer {
    let Some(resolved) = resolved.and_then(|r| r.parse::<bool>().ok()) else {
        return Answer::status(400, "400 Bad request - resolved is missing");
    };
    let Some(discussion) = mr.discussions.iter_mut().find(|d| d["id"] == id) else {
        return Answer::status(404, "404 Discussion Not Found");
    };
    for note in discussion["notes"].as_array_mut().into_iter().flatten() {
        if note["resolvable"] == true {
            note["resolved"] = json!(resolved);
        }
    }
    Answer::ok(discussion.clone())
}
