//! The hook through which a run's output policy works on structured outputs beyond
//! the schema. Code review is one such policy (in `conclave-review`): it narrows the
//! `file` of findings to the files of the change, normalizes finding paths, compares
//! sibling reviewers and checks a Writer's counts. The engine calls the hook at fixed
//! points and records what it returns as events; it does not know what findings are.

use conclave_shared::{CountMismatch, FindingsCheck, InputCut, LoweringNote};
use serde_json::Value;
use std::fmt;

use crate::input::{AgentInput, ComparisonHeadings};

/// The output of one upstream agent whose output is findings-shaped.
#[derive(Debug, Clone, Copy)]
pub struct SiblingOutput<'a> {
    /// The agent.
    pub node_id: &'a str,
    /// Its validated output.
    pub output: &'a Value,
    /// The root property holding its findings.
    pub findings_field: &'a str,
}

/// How a run treats agents' structured outputs beyond the schema. Every method has a
/// default that does nothing, so a policy implements only what it needs.
pub trait OutputPolicy: Send + Sync + fmt::Debug {
    /// Adjusts an agent's output schema before it is lowered and compiled (the
    /// schema answers are then validated against); returns a note per change.
    fn shape_schema(&self, _schema: &mut Value, _findings_field: Option<&str>) -> Vec<LoweringNote> {
        Vec::new()
    }

    /// Adjusts an answer before it is validated.
    fn normalize_answer(&self, _answer: &mut Value, _findings_field: Option<&str>) {}

    /// Compares the outputs of two or more findings-shaped agents that feed one node,
    /// before that node runs; the result is given to the node and recorded. Called
    /// off the async threads: it may read files.
    fn compare(&self, _siblings: &[SiblingOutput<'_>]) -> Option<FindingsCheck> {
        None
    }

    /// The headings under which the node that [`compare`](OutputPolicy::compare)
    /// fed reads each section of the comparison.
    fn comparison_headings(&self) -> ComparisonHeadings {
        ComparisonHeadings::default()
    }

    /// Cuts an agent's input that does not fit its provider's context window, in the
    /// policy's own order, one step at a time until `fits` says the input fits (or
    /// nothing is left to cut); returns the steps taken, in order. `findings` names
    /// the findings-shaped upstream outputs and the root property holding their
    /// findings. Called off the async threads: `fits` counts tokens with the
    /// provider's tokenizer.
    fn cut_to_fit(
        &self,
        _input: &mut AgentInput,
        _findings: &[(String, String)],
        _fits: &mut dyn FnMut(&AgentInput) -> bool,
    ) -> Vec<InputCut> {
        Vec::new()
    }

    /// Problems in one agent's finished output, such as counts that disagree with
    /// the findings they count.
    fn check_output(&self, _output: &Value) -> Vec<CountMismatch> {
        Vec::new()
    }

    /// Problems with a valid answer that the agent could fix with its tools, such as
    /// findings whose quoted code is not in the file. They are told to the agent like
    /// schema errors while it has retries left; an answer still rejected on its last
    /// attempt is kept. Called off the async threads: it may read files.
    fn reject_answer(&self, _answer: &Value, _findings_field: Option<&str>) -> Vec<String> {
        Vec::new()
    }

    /// Merges the validated answers of an agent's samples into its output;
    /// `findings_field` holds their findings, `failed` says why the other samples
    /// gave none. Called off the async threads: it may read files.
    fn merge_samples(&self, answers: Vec<Value>, _findings_field: &str, _failed: &[String]) -> Value {
        // With nothing better to do, the first answer.
        answers.into_iter().next().unwrap_or(Value::Null)
    }

    /// Merges the validated answers of an agent that ran once per part of a
    /// partitioned run input (in part order, the parts that failed left out) into its
    /// output; `failed` says which parts gave none and why. Called off the async
    /// threads: it may read files.
    fn merge_parts(&self, answers: Vec<Value>, _findings_field: &str, _failed: &[String]) -> Value {
        // With nothing better to do, the first answer.
        answers.into_iter().next().unwrap_or(Value::Null)
    }
}
