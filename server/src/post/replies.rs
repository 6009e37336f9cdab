//! Dismissals from replies, the pure part both forges share: a reply to a Conclave
//! comment that starts with `/conclave dismiss REASON` dismisses the comment's
//! findings; each such reply is answered once in its thread, the answer carrying a
//! hidden marker naming the reply, so that a later posting finds it answered.

use super::plan::{Kind, split};

/// The command a reply starts with.
const COMMAND: &str = "/conclave dismiss";
/// The start of the marker of an answer to a reply (not a Conclave item's marker,
/// so the plan never takes an answer for a comment to reconcile).
const ANSWER_MARKER: &str = "<!-- conclave-answer reply=";

/// What becomes of a `/conclave dismiss` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its author may dismiss, and gave a reason: the findings are dismissed.
    Dismissed,
    /// No reason was given.
    NoReason,
    /// Its author lacks write access to the repository.
    NoPermission,
}

/// A `/conclave dismiss` reply not yet answered, with its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The reply's id (a review comment's on GitHub, a note's on GitLab).
    pub id: String,
    /// Where to answer: the Conclave comment's id on GitHub, the discussion's on GitLab.
    pub thread: String,
    /// The fingerprints of the findings the Conclave comment is about.
    pub fingerprints: Vec<String>,
    /// Who replied: a GitHub login or a GitLab username.
    pub author: String,
    /// The reason, trimmed (empty when none was given).
    pub reason: String,
    /// What becomes of it.
    pub verdict: Verdict,
    /// Where it was made, for people: `github acme/app#7 comment 123`.
    pub source: String,
}

impl Reply {
    /// The answer posted in its thread, its marker included.
    pub fn answer(&self, who_may: &str) -> String {
        let text = match self.verdict {
            Verdict::Dismissed => {
                format!("Dismissed by @{}: {}; later reviews will not raise it.", self.author, self.reason)
            }
            Verdict::NoReason => format!(
                "Not dismissed: a reason is needed, @{}. Reply `{COMMAND} REASON`, saying why the finding does not \
                 apply.",
                self.author
            ),
            Verdict::NoPermission => format!(
                "Not dismissed: @{} does not have write access to this repository. Only {who_may} may dismiss a \
                 finding.",
                self.author
            ),
        };
        format!("{text}\n\n{ANSWER_MARKER}{} -->", self.id)
    }
}

/// The reason of a `/conclave dismiss REASON` body (trimmed, maybe empty), or `None`
/// when the body is not the command.
pub fn command(body: &str) -> Option<String> {
    let rest = body.trim_start().strip_prefix(COMMAND)?;
    if rest.starts_with(|c: char| !c.is_whitespace()) {
        return None;
    }
    Some(rest.trim().to_string())
}

/// The id of the reply a body answers, when it is one of Conclave's answers.
pub fn answered(body: &str) -> Option<String> {
    let start = body.find(ANSWER_MARKER)? + ANSWER_MARKER.len();
    let len = body[start..].find(" -->")?;
    Some(body[start..start + len].to_string())
}

/// The fingerprints of the findings a Conclave comment is about (a contradiction's
/// sides each), or none when it is not one comment about one item.
pub fn fingerprints(body: &str) -> Vec<String> {
    let (_, sections) = split(body);
    match sections.as_slice() {
        [section] => match section.kind {
            Kind::Finding => vec![section.key.clone()],
            Kind::Contradiction => section.key.split('+').map(str::to_string).collect(),
        },
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_starts_the_reply_and_its_answer_names_the_reply() {
        assert_eq!(command("/conclave dismiss the caller validates\n"), Some("the caller validates".into()));
        assert_eq!(command("  /conclave dismiss  "), Some(String::new()));
        assert_eq!(command("/conclave dismissal x"), None);
        assert_eq!(command("please /conclave dismiss x"), None);
        let reply = Reply {
            id: "1005".into(),
            thread: "1002".into(),
            fingerprints: vec!["a".repeat(32)],
            author: "ann".into(),
            reason: "the caller validates".into(),
            verdict: Verdict::Dismissed,
            source: "github acme/app#7 comment 1005".into(),
        };
        let answer = reply.answer("people with write access");
        assert!(answer.starts_with("Dismissed by @ann: the caller validates; later reviews will not raise it."));
        assert_eq!(answered(&answer), Some("1005".into()));
        assert!(!super::super::plan::is_conclave(&answer), "an answer is not an item to reconcile");
        let refused = Reply { verdict: Verdict::NoPermission, ..reply };
        assert!(refused.answer("people with write access").contains("Only people with write access may dismiss"));
    }
}
