//! A webhook delivery from a forge as the run store keeps it: parsed and decided
//! once, when `conclave serve` receives it (the event, the pull or merge request it is
//! about, and what it asks Conclave to do, or why it asks nothing), so the dispatcher
//! that later queues reviews reads typed fields and never the forge's JSON again.

use serde::{Deserialize, Serialize};

/// The forge a delivery came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Forge {
    /// A GitHub App's (or repository's) webhook.
    Github,
    /// A GitLab project's or group's webhook.
    Gitlab,
}

impl Forge {
    /// Its name in the store, the metrics and messages: `github`, `gitlab`.
    pub fn name(self) -> &'static str {
        match self {
            Forge::Github => "github",
            Forge::Gitlab => "gitlab",
        }
    }

    /// The forge of a stored name.
    pub fn from_name(name: &str) -> Option<Forge> {
        match name {
            "github" => Some(Forge::Github),
            "gitlab" => Some(Forge::Gitlab),
            _ => None,
        }
    }
}

/// The kind of event a delivery carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryEvent {
    /// GitHub's `pull_request`.
    PullRequest,
    /// GitHub's `issue_comment` (a comment on an issue or a pull request's conversation).
    IssueComment,
    /// GitHub's `pull_request_review_comment` (a comment on a diff, or a reply to one).
    ReviewComment,
    /// GitHub's `ping`, sent when a webhook is created.
    Ping,
    /// GitLab's `Merge Request Hook`.
    MergeRequest,
    /// GitLab's `Note Hook` (a comment).
    Note,
    /// Any other event, named as the forge named it.
    Other(String),
}

/// The prefix of an event Conclave does not know, in its stored name.
const OTHER_PREFIX: &str = "other:";

impl DeliveryEvent {
    /// Its name in the store: `pull_request`, …, `other:NAME` for another event.
    pub fn name(&self) -> String {
        match self {
            DeliveryEvent::Other(name) => format!("{OTHER_PREFIX}{name}"),
            known => known.label().to_string(),
        }
    }

    /// The event of a stored name (every name [`DeliveryEvent::name`] gives).
    pub fn from_name(name: &str) -> Option<DeliveryEvent> {
        if let Some(other) = name.strip_prefix(OTHER_PREFIX) {
            return Some(DeliveryEvent::Other(other.to_string()));
        }
        let known = [
            DeliveryEvent::PullRequest,
            DeliveryEvent::IssueComment,
            DeliveryEvent::ReviewComment,
            DeliveryEvent::Ping,
            DeliveryEvent::MergeRequest,
            DeliveryEvent::Note,
        ];
        known.into_iter().find(|event| event.label() == name)
    }

    /// A name with few values, for metric labels: another event is `other`, whatever
    /// the forge (or someone posing as it) called it.
    pub fn label(&self) -> &'static str {
        match self {
            DeliveryEvent::PullRequest => "pull_request",
            DeliveryEvent::IssueComment => "issue_comment",
            DeliveryEvent::ReviewComment => "pull_request_review_comment",
            DeliveryEvent::Ping => "ping",
            DeliveryEvent::MergeRequest => "merge_request",
            DeliveryEvent::Note => "note",
            DeliveryEvent::Other(_) => "other",
        }
    }
}

/// What a delivery asks Conclave to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// Review the request's head: what is new since the last posted review (a push,
    /// an opened request, `/conclave review`), or all of it (`/conclave review --full`).
    Review {
        /// Review the whole change, not only what is new.
        full: bool,
    },
    /// A `/conclave dismiss REASON` reply to one of Conclave's comments.
    Dismiss {
        /// The reason, trimmed (empty when none was given: the answer asks for one).
        reason: String,
        /// The reply's id (a review comment's on GitHub, a note's on GitLab).
        reply: String,
        /// The thread it replies in: the comment it answers on GitHub, the
        /// discussion on GitLab.
        thread: String,
    },
}

impl Command {
    /// The command as a person types it: `review`, `review --full`, `dismiss REASON`.
    pub fn text(&self) -> String {
        match self {
            Command::Review { full: false } => "review".into(),
            Command::Review { full: true } => "review --full".into(),
            Command::Dismiss { reason, .. } => format!("dismiss {reason}").trim_end().to_string(),
        }
    }
}

/// Why a delivery asks nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ignored {
    /// An event Conclave does not act on (`ping` among them).
    Event,
    /// An action of a known event that asks for no review (closed, edited, labeled…).
    Action,
    /// A draft, and drafts are not reviewed here.
    Draft,
    /// A comment on an issue, not on a pull or merge request.
    NotPullRequest,
    /// A comment that is not a `/conclave` command.
    NoCommand,
    /// A `/conclave` command Conclave does not know, as written.
    UnknownCommand(String),
    /// A `/conclave dismiss` that replies to nothing: it works only in the thread of
    /// one of Conclave's comments.
    DismissOutsideThread,
    /// A merge request updated without new commits (a title, a label, a reviewer).
    NoNewCommits,
}

impl Ignored {
    /// Why, for people: the answer to the forge and the log.
    pub fn reason(&self) -> String {
        match self {
            Ignored::Event => "Conclave does not act on this event".into(),
            Ignored::Action => "this action asks for no review".into(),
            Ignored::Draft => "a draft is not reviewed until it is ready (or the server reviews drafts)".into(),
            Ignored::NotPullRequest => "a comment on an issue, not on a pull or merge request".into(),
            Ignored::NoCommand => "the comment holds no /conclave command".into(),
            Ignored::UnknownCommand(command) => format!(
                "`{command}` is not a command Conclave knows: write `/conclave review`, `/conclave review --full` \
                 or, replying to Conclave's comment, `/conclave dismiss REASON`"
            ),
            Ignored::DismissOutsideThread => {
                "`/conclave dismiss` works only as a reply to one of Conclave's comments".into()
            }
            Ignored::NoNewCommits => "the merge request was updated without new commits".into(),
        }
    }
}

/// What a delivery comes to: a command, or nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Asks {
    /// Something to do.
    Command(Command),
    /// Nothing.
    Nothing(Ignored),
}

/// A delivery as the run store keeps it: what was decided when it was received,
/// and never its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// Where it came from.
    pub forge: Forge,
    /// The forge's id of the delivery (`X-GitHub-Delivery`; GitLab's
    /// `Idempotency-Key`): one per forge, so a redelivery is recognised.
    pub id: String,
    /// The event.
    pub event: DeliveryEvent,
    /// The event's action as the forge words it (`opened`, `synchronize`, `update`,
    /// `created`); empty when the event has none.
    pub action: String,
    /// The repository: `owner/name` on GitHub, the project's path on GitLab.
    pub repository: Option<String>,
    /// The pull (merge) request's number (GitLab's `iid`).
    pub number: Option<u64>,
    /// The request's head commit, when the delivery says it.
    pub head_sha: Option<String>,
    /// The branch the request merges into, when the delivery says it.
    pub base_ref: Option<String>,
    /// The GitHub App installation that sent it.
    pub installation: Option<u64>,
    /// Who caused it: a GitHub login, a GitLab username.
    pub sender: Option<String>,
    /// What it asks.
    pub asks: Asks,
    /// When it was received, Unix milliseconds.
    pub received_ms: u64,
}

impl Delivery {
    /// A delivery of `event` from `forge` received at `received_ms`, before its body
    /// is read: nothing known of it yet, and asking nothing.
    pub fn received(forge: Forge, id: &str, event: DeliveryEvent, received_ms: u64) -> Delivery {
        Delivery {
            forge,
            id: id.to_string(),
            event,
            action: String::new(),
            repository: None,
            number: None,
            head_sha: None,
            base_ref: None,
            installation: None,
            sender: None,
            asks: Asks::Nothing(Ignored::Event),
            received_ms,
        }
    }

    /// The command, when it asks one.
    pub fn command(&self) -> Option<&Command> {
        match &self.asks {
            Asks::Command(command) => Some(command),
            Asks::Nothing(_) => None,
        }
    }

    /// Why it asks nothing, when it does.
    pub fn ignored(&self) -> Option<&Ignored> {
        match &self.asks {
            Asks::Command(_) => None,
            Asks::Nothing(why) => Some(why),
        }
    }
}

/// The key of a review run's input that names the pull (merge) request it reviews,
/// when a webhook asked for it: a [`PullRequestRef`].
pub const PULL_REQUEST_INPUT: &str = "pull_request";

/// A pull (merge) request on a forge, as a review run's input names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PullRequestRef {
    /// The forge.
    pub forge: Forge,
    /// `owner/name` on GitHub, the project's path on GitLab.
    pub repository: String,
    /// The request's number (GitLab's `iid`).
    pub number: u64,
    /// The GitHub App installation whose token reaches it, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation: Option<u64>,
}

impl PullRequestRef {
    /// How people write it: `owner/name#7` on GitHub, `group/project!7` on GitLab.
    pub fn label(&self) -> String {
        let sign = match self.forge {
            Forge::Github => '#',
            Forge::Gitlab => '!',
        };
        format!("{}{sign}{}", self.repository, self.number)
    }

    /// The request a run input names, if any.
    pub fn of_input(input: &serde_json::Value) -> Option<PullRequestRef> {
        serde_json::from_value(input.get(PULL_REQUEST_INPUT)?.clone()).ok()
    }
}

/// A review asked for and not queued yet: it waits for the request's review in
/// progress to end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WantedReview {
    /// The head the delivery named (`None` for a comment, which names none: the
    /// request's head when the review starts).
    pub head: Option<String>,
    /// The whole change, not only what is new (`/conclave review --full`).
    pub full: bool,
    /// Someone asked for it with a comment (a push's review of a head already
    /// reviewed is not run again; a command's is).
    pub commanded: bool,
    /// The newest delivery that asked for it.
    pub delivery: String,
    /// When that delivery was received, Unix milliseconds.
    pub asked_ms: u64,
}

/// One pull (merge) request's reviews as the webhook dispatcher keeps them in the
/// run store: the review queued or running, the one waiting for it to end, and the
/// last one posted (where the next incremental review starts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestReviews {
    /// The request.
    pub pull_request: PullRequestRef,
    /// The review run queued or running for it.
    pub run: Option<String>,
    /// The head `run` was asked for (`None`: the request's head when it started).
    #[serde(default)]
    pub run_head: Option<String>,
    /// A review asked for while `run` goes on.
    pub wanted: Option<WantedReview>,
    /// The last review run that was posted on the request.
    pub posted_run: Option<String>,
    /// The head the last ended review reviewed.
    pub reviewed_head: Option<String>,
    /// How many reviews were superseded by a newer push before they ended.
    pub superseded: u64,
    /// When it last changed, Unix milliseconds.
    pub updated_ms: u64,
}

impl PullRequestReviews {
    /// A request with no review yet.
    pub fn new(pull_request: PullRequestRef, now_ms: u64) -> PullRequestReviews {
        PullRequestReviews {
            pull_request,
            run: None,
            run_head: None,
            wanted: None,
            posted_run: None,
            reviewed_head: None,
            superseded: 0,
            updated_ms: now_ms,
        }
    }

    /// Whether the dispatcher has work on it: a review queued or running, or one
    /// waiting.
    pub fn is_busy(&self) -> bool {
        self.run.is_some() || self.wanted.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reads_back_from_its_stored_name() {
        let events = [
            DeliveryEvent::PullRequest,
            DeliveryEvent::IssueComment,
            DeliveryEvent::ReviewComment,
            DeliveryEvent::Ping,
            DeliveryEvent::MergeRequest,
            DeliveryEvent::Note,
            DeliveryEvent::Other("push".into()),
            DeliveryEvent::Other("other:pull_request".into()),
        ];
        for event in events {
            assert_eq!(DeliveryEvent::from_name(&event.name()), Some(event.clone()), "{event:?}");
        }
        assert_eq!(DeliveryEvent::Other("pull_request".into()).label(), "other");
        assert_eq!(DeliveryEvent::from_name("push"), None);
    }

    #[test]
    fn commands_read_as_typed() {
        assert_eq!(Command::Review { full: true }.text(), "review --full");
        let dismiss = Command::Dismiss { reason: String::new(), reply: "5".into(), thread: "2".into() };
        assert_eq!(dismiss.text(), "dismiss");
    }

    #[test]
    fn requests_read_as_people_write_them() {
        let github = PullRequestRef { forge: Forge::Github, repository: "o/r".into(), number: 7, installation: None };
        assert_eq!(github.label(), "o/r#7");
        let gitlab = PullRequestRef { forge: Forge::Gitlab, repository: "g/s/p".into(), number: 3, installation: None };
        assert_eq!(gitlab.label(), "g/s/p!3");
        let input = serde_json::json!({ PULL_REQUEST_INPUT: github });
        assert_eq!(PullRequestRef::of_input(&input), Some(github));
        assert_eq!(PullRequestRef::of_input(&serde_json::json!({})), None);
    }
}
