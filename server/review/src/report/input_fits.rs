//! The agents whose input was cut to fit their model's context window (the embedded
//! model's), in the report: from the run's `input_fitted` events, what each was cut
//! (the longest descriptions shortened, then the lowest severities left out; see
//! `input_fit.rs`), as a Markdown section and the JSON envelope's `review.input_fits`.
//! A review whose Writer never saw some blockers is degraded: a `--fail-on blocker`
//! gate could not see them either.

use conclave_shared::{EventKind, InputFit, RunEvent, Severity};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

/// One agent's input fitted to its window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FittedInput {
    /// The agent.
    pub node_id: String,
    /// What was done.
    #[serde(flatten)]
    pub fit: InputFit,
}

/// The fitted inputs a run's events record, in the order they were fitted.
pub fn of_events(events: &[RunEvent]) -> Vec<FittedInput> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::InputFitted { node_id, fit } => Some(FittedInput { node_id: node_id.clone(), fit: fit.clone() }),
            _ => None,
        })
        .collect()
}

/// Why the cuts make the review degraded: blockers an agent was not given.
pub fn degraded(fits: &[FittedInput]) -> Vec<String> {
    fits.iter()
        .filter(|f| f.fit.dropped(Severity::Blocker))
        .map(|f| {
            format!(
                "agent `{}` was not given every blocker finding: its input was cut to fit its model's window of {} tokens",
                f.node_id, f.fit.window
            )
        })
        .collect()
}

/// The Markdown section; nothing when no input was cut.
pub(super) fn markdown(out: &mut String, fits: &[FittedInput]) {
    if fits.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Cut to fit the model's window\n");
    out.push_str(
        "An agent's input (the reviewers' findings and the engine's comparison of them) is cut when it does not \
         fit its model's context window with room for the answer: the longest descriptions are shortened first, \
         then the lowest severities are left out (nits, then minor, major and blocker findings), until it fits.\n\n",
    );
    for f in fits {
        let _ = writeln!(out, "- `{}`: {}.", f.node_id, f.fit);
    }
}

/// `review.input_fits` in the JSON envelope; left out when no input was cut.
pub(super) fn json(review: &mut Map<String, Value>, fits: &[FittedInput]) {
    if !fits.is_empty() {
        review.insert("input_fits".into(), json!(fits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_shared::InputCut;

    fn event(node_id: &str, cuts: Vec<InputCut>) -> RunEvent {
        let fit = InputFit { window: 8192, answer_room: 2048, tokens_before: 9500, tokens_after: 6100, cuts };
        RunEvent { run_id: "r".into(), seq: 1, at_ms: 0, kind: EventKind::InputFitted { node_id: node_id.into(), fit } }
    }

    #[test]
    fn the_cuts_are_listed_and_only_dropped_blockers_degrade_the_review() {
        let events = [
            event("writer", vec![InputCut::Dropped { severity: Severity::Nit, findings: 2 }]),
            event("verifier", vec![InputCut::Dropped { severity: Severity::Blocker, findings: 1 }]),
        ];
        let fits = of_events(&events);
        assert_eq!(fits.len(), 2);
        assert_eq!(
            degraded(&fits),
            ["agent `verifier` was not given every blocker finding: its input was cut to fit its model's window of \
              8192 tokens"]
        );
        let mut out = String::new();
        markdown(&mut out, &fits);
        assert!(
            out.contains(
                "- `writer`: the input (9500 tokens) did not fit the model's window of 8192 tokens with 2048 kept for \
                 the answer: 2 nit finding(s) left out; it then took 6100 tokens."
            ),
            "{out}"
        );
        let mut review = Map::new();
        json(&mut review, &fits);
        assert_eq!(review["input_fits"][0]["node_id"], "writer");
        assert_eq!(review["input_fits"][0]["cuts"][0]["severity"], "nit");
        let mut empty = Map::new();
        json(&mut empty, &[]);
        assert!(empty.is_empty());
    }
}
