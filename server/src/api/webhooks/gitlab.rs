//! GitLab's deliveries read into what the run store keeps: merge request events
//! (opened, reopened, updated with new commits or marked ready; drafts unless the
//! server reviews them) and notes on a merge request (`/conclave review [--full]`, and
//! `/conclave dismiss` in a discussion). Each is deserialized into the typed shape of
//! its event; any other event is acknowledged and ignored.

use conclave_shared::delivery::{Asks, Command, Delivery, DeliveryEvent, Forge, Ignored};
use serde::Deserialize;

use super::command::{self, Written};
use crate::api::error::{ApiError, parse_json};

/// The event a `X-Gitlab-Event` header names.
pub fn event_of(name: &str) -> DeliveryEvent {
    match name {
        "Merge Request Hook" => DeliveryEvent::MergeRequest,
        "Note Hook" => DeliveryEvent::Note,
        other => DeliveryEvent::Other(other.to_string()),
    }
}

/// The delivery `body` of `event` makes, with the id and time given; a body that is
/// not JSON, or not the event's shape, is a 400 saying what is wrong.
pub fn read(
    event: DeliveryEvent,
    body: &[u8],
    review_drafts: bool,
    id: &str,
    now_ms: u64,
) -> Result<Delivery, ApiError> {
    let mut delivery = Delivery::received(Forge::Gitlab, id, event.clone(), now_ms);
    match event {
        DeliveryEvent::MergeRequest => merge_request(&mut delivery, parse_json(body)?, review_drafts),
        DeliveryEvent::Note => note(&mut delivery, parse_json(body)?),
        _ => {
            let value: serde_json::Value = parse_json(body)?;
            set_origin(&mut delivery, Origin::deserialize(&value).unwrap_or_default());
        }
    }
    Ok(delivery)
}

#[derive(Deserialize)]
struct Project {
    path_with_namespace: String,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

/// What every event may carry about where it comes from.
#[derive(Deserialize, Default)]
struct Origin {
    project: Option<Project>,
    user: Option<User>,
}

#[derive(Deserialize)]
struct LastCommit {
    id: String,
}

#[derive(Deserialize)]
struct MergeRequest {
    iid: u64,
    #[serde(default)]
    action: Option<String>,
    /// The head before this update: present only when the update pushed commits.
    #[serde(default)]
    oldrev: Option<String>,
    last_commit: Option<LastCommit>,
    target_branch: Option<String>,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    work_in_progress: bool,
}

#[derive(Deserialize)]
struct Change<T> {
    previous: Option<T>,
    current: Option<T>,
}

#[derive(Deserialize, Default)]
struct Changes {
    draft: Option<Change<bool>>,
}

#[derive(Deserialize)]
struct MergeRequestHook {
    object_attributes: MergeRequest,
    #[serde(default)]
    changes: Option<Changes>,
    #[serde(flatten)]
    origin: Origin,
}

#[derive(Deserialize)]
struct Note {
    id: u64,
    #[serde(default)]
    note: Option<String>,
    noteable_type: String,
    discussion_id: Option<String>,
    #[serde(default)]
    action: Option<String>,
}

#[derive(Deserialize)]
struct NoteHook {
    object_attributes: Note,
    merge_request: Option<MergeRequest>,
    #[serde(flatten)]
    origin: Origin,
}

fn set_origin(delivery: &mut Delivery, origin: Origin) {
    delivery.repository = origin.project.map(|p| p.path_with_namespace);
    delivery.sender = origin.user.map(|u| u.username);
}

fn set_merge_request(delivery: &mut Delivery, request: &MergeRequest) {
    delivery.number = Some(request.iid);
    delivery.head_sha = request.last_commit.as_ref().map(|c| c.id.clone());
    delivery.base_ref = request.target_branch.clone();
}

fn merge_request(delivery: &mut Delivery, hook: MergeRequestHook, review_drafts: bool) {
    set_origin(delivery, hook.origin);
    let request = hook.object_attributes;
    set_merge_request(delivery, &request);
    let action = request.action.clone().unwrap_or_default();
    let marked_ready =
        hook.changes.and_then(|c| c.draft).is_some_and(|d| d.previous == Some(true) && d.current == Some(false));
    let draft = request.draft || request.work_in_progress;
    delivery.asks = match action.as_str() {
        "open" | "reopen" => Asks::Command(Command::Review { full: false }),
        "update" if request.oldrev.is_some() || marked_ready => Asks::Command(Command::Review { full: false }),
        "update" => Asks::Nothing(Ignored::NoNewCommits),
        _ => Asks::Nothing(Ignored::Action),
    };
    if draft && !review_drafts && delivery.command().is_some() {
        delivery.asks = Asks::Nothing(Ignored::Draft);
    }
    delivery.action = action;
}

fn note(delivery: &mut Delivery, hook: NoteHook) {
    set_origin(delivery, hook.origin);
    let note = hook.object_attributes;
    delivery.action = note.action.clone().unwrap_or_default();
    let Some(request) = hook.merge_request.filter(|_| note.noteable_type == "MergeRequest") else {
        delivery.asks = Asks::Nothing(Ignored::NotPullRequest);
        return;
    };
    set_merge_request(delivery, &request);
    // Older GitLab sends no action; an edited note does not ask again.
    if !matches!(note.action.as_deref(), None | Some("create")) {
        delivery.asks = Asks::Nothing(Ignored::Action);
        return;
    }
    delivery.asks = match (command::read(note.note.as_deref().unwrap_or_default()), note.discussion_id) {
        (Written::Review { full }, _) => Asks::Command(Command::Review { full }),
        (Written::Dismiss(reason), Some(thread)) => {
            Asks::Command(Command::Dismiss { reason, reply: note.id.to_string(), thread })
        }
        (Written::Dismiss(_), None) => Asks::Nothing(Ignored::DismissOutsideThread),
        (Written::Nothing(why), _) => Asks::Nothing(why),
    };
}
