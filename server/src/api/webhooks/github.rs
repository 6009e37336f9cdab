//! GitHub's deliveries read into what the run store keeps: `pull_request` (opened,
//! pushed to, reopened, ready for review; drafts unless the server reviews them),
//! `issue_comment` on a pull request (`/conclave review [--full]`) and
//! `pull_request_review_comment` (the same, and `/conclave dismiss` replies). Each is
//! deserialized into the typed shape of its event; any other event is acknowledged
//! with what identifies it and ignored.

use conclave_shared::delivery::{Asks, Command, Delivery, DeliveryEvent, Forge, Ignored};
use serde::Deserialize;

use super::command::{self, Written};
use crate::api::error::{ApiError, parse_json};

/// The actions of `pull_request` that ask for a review of the head.
const REVIEWED_ACTIONS: &[&str] = &["opened", "synchronize", "reopened", "ready_for_review"];

/// The event a `X-GitHub-Event` header names.
pub fn event_of(name: &str) -> DeliveryEvent {
    match name {
        "pull_request" => DeliveryEvent::PullRequest,
        "issue_comment" => DeliveryEvent::IssueComment,
        "pull_request_review_comment" => DeliveryEvent::ReviewComment,
        "ping" => DeliveryEvent::Ping,
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
    let mut delivery = Delivery::received(Forge::Github, id, event.clone(), now_ms);
    match event {
        DeliveryEvent::PullRequest => pull_request(&mut delivery, parse_json(body)?, review_drafts),
        DeliveryEvent::IssueComment => issue_comment(&mut delivery, parse_json(body)?),
        DeliveryEvent::ReviewComment => review_comment(&mut delivery, parse_json(body)?),
        _ => other(&mut delivery, body)?,
    }
    Ok(delivery)
}

#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

#[derive(Deserialize)]
struct Installation {
    id: u64,
}

#[derive(Deserialize)]
struct Account {
    login: String,
}

/// What every event may carry about where it comes from.
#[derive(Deserialize, Default)]
struct Origin {
    repository: Option<Repository>,
    installation: Option<Installation>,
    sender: Option<Account>,
    action: Option<String>,
}

#[derive(Deserialize)]
struct Head {
    sha: String,
}

#[derive(Deserialize)]
struct Base {
    #[serde(rename = "ref")]
    name: String,
}

#[derive(Deserialize)]
struct PullRequest {
    number: u64,
    #[serde(default)]
    draft: bool,
    head: Head,
    base: Base,
}

#[derive(Deserialize)]
struct PullRequestEvent {
    action: String,
    pull_request: PullRequest,
    #[serde(flatten)]
    origin: Origin,
}

#[derive(Deserialize)]
struct Issue {
    number: u64,
    /// Present only when the issue is a pull request.
    pull_request: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    in_reply_to_id: Option<u64>,
}

#[derive(Deserialize)]
struct IssueCommentEvent {
    action: String,
    issue: Issue,
    comment: Comment,
    #[serde(flatten)]
    origin: Origin,
}

#[derive(Deserialize)]
struct ReviewCommentEvent {
    action: String,
    pull_request: PullRequest,
    comment: Comment,
    #[serde(flatten)]
    origin: Origin,
}

/// Where the delivery comes from: repository, installation and sender.
fn set_origin(delivery: &mut Delivery, origin: Origin) {
    delivery.repository = origin.repository.map(|r| r.full_name);
    delivery.installation = origin.installation.map(|i| i.id);
    delivery.sender = origin.sender.map(|s| s.login);
    if let Some(action) = origin.action {
        delivery.action = action;
    }
}

fn set_pull_request(delivery: &mut Delivery, pull: &PullRequest) {
    delivery.number = Some(pull.number);
    delivery.head_sha = Some(pull.head.sha.clone());
    delivery.base_ref = Some(pull.base.name.clone());
}

fn pull_request(delivery: &mut Delivery, event: PullRequestEvent, review_drafts: bool) {
    set_origin(delivery, event.origin);
    set_pull_request(delivery, &event.pull_request);
    delivery.asks = if !REVIEWED_ACTIONS.contains(&event.action.as_str()) {
        Asks::Nothing(Ignored::Action)
    } else if event.pull_request.draft && !review_drafts {
        Asks::Nothing(Ignored::Draft)
    } else {
        Asks::Command(Command::Review { full: false })
    };
    delivery.action = event.action;
}

fn issue_comment(delivery: &mut Delivery, event: IssueCommentEvent) {
    set_origin(delivery, event.origin);
    delivery.number = Some(event.issue.number);
    delivery.asks = if event.action != "created" {
        Asks::Nothing(Ignored::Action)
    } else if event.issue.pull_request.is_none() {
        Asks::Nothing(Ignored::NotPullRequest)
    } else {
        match command::read(event.comment.body.as_deref().unwrap_or_default()) {
            Written::Review { full } => Asks::Command(Command::Review { full }),
            // A pull request's conversation has no threads to reply in.
            Written::Dismiss(_) => Asks::Nothing(Ignored::DismissOutsideThread),
            Written::Nothing(why) => Asks::Nothing(why),
        }
    };
    delivery.action = event.action;
}

fn review_comment(delivery: &mut Delivery, event: ReviewCommentEvent) {
    set_origin(delivery, event.origin);
    set_pull_request(delivery, &event.pull_request);
    let comment = event.comment;
    delivery.asks = if event.action != "created" {
        Asks::Nothing(Ignored::Action)
    } else {
        match (command::read(comment.body.as_deref().unwrap_or_default()), comment.in_reply_to_id) {
            (Written::Review { full }, _) => Asks::Command(Command::Review { full }),
            (Written::Dismiss(reason), Some(thread)) => {
                Asks::Command(Command::Dismiss { reason, reply: comment.id.to_string(), thread: thread.to_string() })
            }
            (Written::Dismiss(_), None) => Asks::Nothing(Ignored::DismissOutsideThread),
            (Written::Nothing(why), _) => Asks::Nothing(why),
        }
    };
    delivery.action = event.action;
}

/// An event Conclave does not act on: its body must still be JSON; what identifies
/// it is kept when it has the usual shape.
fn other(delivery: &mut Delivery, body: &[u8]) -> Result<(), ApiError> {
    let value: serde_json::Value = parse_json(body)?;
    set_origin(delivery, Origin::deserialize(&value).unwrap_or_default());
    delivery.asks = Asks::Nothing(Ignored::Event);
    Ok(())
}
