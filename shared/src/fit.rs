//! An agent's input fitted to its provider's context window (the embedded model's):
//! the window, the room kept for the answer, the prompt's size before and after, and
//! what was cut from the findings it was given, in the order it was cut. The engine
//! records it as an `input_fitted` event; a review's report lists it.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::review::Severity;

/// One step of cutting the findings in an agent's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "cut", rename_all = "snake_case")]
pub enum InputCut {
    /// Every description longer than `chars` characters was shortened to that.
    Shortened {
        /// The longest a description was left.
        chars: u32,
        /// The findings whose description was shortened in this step (a finding the
        /// engine's comparison repeats counts once per copy).
        findings: u32,
    },
    /// The findings of one severity were left out; findings without a severity go
    /// with the nits.
    Dropped {
        /// The severity.
        severity: Severity,
        /// How many (a finding the engine's comparison repeats counts once per copy).
        findings: u32,
    },
}

impl fmt::Display for InputCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputCut::Shortened { chars, findings } => {
                write!(f, "descriptions longer than {chars} characters shortened ({findings} of them)")
            }
            InputCut::Dropped { severity, findings } => {
                write!(f, "{findings} {} finding(s) left out", severity.as_str())
            }
        }
    }
}

/// What fitting an agent's input to its provider's window did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InputFit {
    /// The provider's window, in tokens: prompt and answer.
    pub window: u32,
    /// The tokens kept free for the answer.
    pub answer_room: u32,
    /// The prompt's tokens as the agent's input first was.
    pub tokens_before: u32,
    /// The prompt's tokens as it was sent.
    pub tokens_after: u32,
    /// What was cut, in order.
    pub cuts: Vec<InputCut>,
}

impl InputFit {
    /// Whether the prompt sent leaves the answer its room.
    pub fn fits(&self) -> bool {
        self.tokens_after.saturating_add(self.answer_room) <= self.window
    }

    /// Whether findings of `severity` were left out.
    pub fn dropped(&self, severity: Severity) -> bool {
        self.cuts
            .iter()
            .any(|c| matches!(c, InputCut::Dropped { severity: s, findings } if *s == severity && *findings > 0))
    }

    /// The cuts, in order, as one clause (`descriptions longer than ... ; 3 nit
    /// finding(s) left out`), or `nothing` when there were none.
    pub fn cuts_text(&self) -> String {
        match self.cuts.is_empty() {
            true => "nothing".to_string(),
            false => self.cuts.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
        }
    }
}

impl fmt::Display for InputFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the input ({} tokens) did not fit the model's window of {} tokens with {} kept for the answer: {}; it then \
             took {} tokens",
            self.tokens_before,
            self.window,
            self.answer_room,
            self.cuts_text(),
            self.tokens_after
        )?;
        if !self.fits() {
            write!(f, ", still more than the window leaves")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_says_what_was_cut_in_order_and_whether_it_fits() {
        let fit = InputFit {
            window: 8192,
            answer_room: 2048,
            tokens_before: 9000,
            tokens_after: 6000,
            cuts: vec![
                InputCut::Shortened { chars: 80, findings: 7 },
                InputCut::Dropped { severity: Severity::Nit, findings: 3 },
            ],
        };
        assert!(fit.fits() && fit.dropped(Severity::Nit) && !fit.dropped(Severity::Blocker));
        assert_eq!(
            fit.to_string(),
            "the input (9000 tokens) did not fit the model's window of 8192 tokens with 2048 kept for the answer: \
             descriptions longer than 80 characters shortened (7 of them); 3 nit finding(s) left out; it then took \
             6000 tokens"
        );
        let json = serde_json::to_value(&fit).expect("serializes");
        assert_eq!(json["cuts"][1], serde_json::json!({"cut": "dropped", "severity": "nit", "findings": 3}));
        assert_eq!(serde_json::from_value::<InputFit>(json).expect("reads back"), fit);
        let over = InputFit { tokens_after: 7000, ..fit };
        assert!(!over.fits() && over.to_string().ends_with(", still more than the window leaves"));
    }
}
