//! The `/conclave` commands of a comment, read once when a delivery is received:
//! `/conclave review` (what is new since the last review), `/conclave review --full`
//! and, replying to one of Conclave's comments, `/conclave dismiss REASON` (read by
//! the posting code's own `replies::command`, so both read it alike).

use conclave_shared::delivery::Ignored;

use crate::post::replies;

/// The word every command starts with.
const PREFIX: &str = "/conclave";
/// The longest unknown command kept for the reason it was ignored.
const MAX_QUOTED: usize = 80;

/// What a comment's body asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// A review, of the whole change when `full`.
    Review {
        /// `--full` was given.
        full: bool,
    },
    /// `/conclave dismiss`, with its reason (maybe empty).
    Dismiss(String),
    /// Nothing Conclave knows: why.
    Nothing(Ignored),
}

/// Reads the command a comment's body starts with.
pub fn read(body: &str) -> Written {
    let first_line = body.trim_start().lines().next().unwrap_or_default().trim_end();
    let Some(rest) = first_line.strip_prefix(PREFIX) else { return Written::Nothing(Ignored::NoCommand) };
    if rest.starts_with(|c: char| !c.is_whitespace()) {
        return Written::Nothing(Ignored::NoCommand);
    }
    if let Some(reason) = replies::command(body) {
        return Written::Dismiss(reason);
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        ["review"] => Written::Review { full: false },
        ["review", "--full"] => Written::Review { full: true },
        _ => Written::Nothing(Ignored::UnknownCommand(first_line.chars().take(MAX_QUOTED).collect())),
    }
}
