//! An agent's input, typed: the run input, the outputs of its upstream nodes, and the
//! comparison of its upstream agents when the run's policy made one, under the
//! headings the policy gave it, and what was cut from them to fit the provider's
//! window (`fit.rs`). It is sent to providers as JSON and shown to the
//! model as readable text: the run input, which every agent of a run receives
//! alike, apart from what is the agent's own, so providers can put the shared part
//! first (a prefix a vendor caches, or an embedded model decodes once).

use conclave_shared::{FindingGroup, FindingsCheck, InputFit};
use serde_json::{Map, Value};

/// What begins the name of a run input's field that the run keeps for its own
/// records (who asked for it, where its configuration came from): stored with the
/// run, read by reports, and never given to a node as input, so it changes no prompt,
/// cache key or recording.
pub const RECORD_PREFIX: char = '_';

/// The run input as nodes receive it: without the fields the run keeps for its own
/// records (see [`RECORD_PREFIX`]).
pub(crate) fn without_records(input: Value) -> Value {
    match input {
        Value::Object(fields) => {
            Value::Object(fields.into_iter().filter(|(key, _)| !key.starts_with(RECORD_PREFIX)).collect())
        }
        other => other,
    }
}

/// What one agent node receives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentInput {
    /// The run's input.
    pub run_input: Value,
    /// Upstream outputs (validated JSON, or text), by node id, in edge order;
    /// triggers are left out (their output is the run input).
    pub upstream: Vec<(String, Value)>,
    /// The comparison of the findings-shaped upstream agents, when there was one.
    pub comparison: Option<FindingsCheck>,
    /// How the model is told about the comparison's sections.
    pub headings: ComparisonHeadings,
    /// What was cut from the upstream outputs and the comparison so that the input
    /// fits the provider's window, when anything was: the model is told so last.
    pub fitted: Option<InputFit>,
}

/// The headings under which the model reads each section of a comparison: the run's
/// `OutputPolicy` words them for what its outputs are (review words them for code
/// review); the defaults name only what the engine knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparisonHeadings {
    /// Over `contradictions`.
    pub contradictions: String,
    /// Over `disagreements`.
    pub disagreements: String,
    /// Over `duplicates`.
    pub duplicates: String,
}

impl Default for ComparisonHeadings {
    fn default() -> Self {
        ComparisonHeadings {
            contradictions: "Contradictions between the outputs above".into(),
            disagreements: "Disagreements between the outputs above".into(),
            duplicates: "Near-duplicates among the outputs above".into(),
        }
    }
}

impl AgentInput {
    /// The input as JSON: `{input, upstream}`, plus `contradictions`,
    /// `disagreements` and `duplicates` when there was a comparison.
    pub fn to_value(&self) -> Value {
        let mut input = Map::new();
        input.insert("input".into(), self.run_input.clone());
        input.insert("upstream".into(), Value::Object(self.upstream.iter().cloned().collect()));
        if let Some(check) = &self.comparison {
            for (key, groups) in sections(check) {
                input.insert(key.into(), serde_json::to_value(groups).unwrap_or_default());
            }
        }
        Value::Object(input)
    }

    /// The agent's input, readable: [`AgentInput::shared_context`] then
    /// [`AgentInput::own_sections`]. What `node_started` shows and cache keys hash.
    pub fn render(&self) -> String {
        let mut out = self.shared_context();
        out.push_str(&self.own_sections());
        out
    }

    /// The part every agent of the run receives alike: the run input. Long
    /// multi-line strings (a diff) go in text blocks rather than escaped JSON.
    pub fn shared_context(&self) -> String {
        format!("## Run input\n\n{}", render_value(&self.run_input))
    }

    /// The first message of an agent whose shared context travels in its system
    /// prompt: the upstream outputs and the comparison, or, with neither, a pointer
    /// to the run input.
    pub fn first_message(&self) -> String {
        let own = self.own_sections();
        match own.trim_start() {
            "" => "Do what your instructions say with the run input given above.".to_string(),
            own => own.to_string(),
        }
    }

    /// The part that is this agent's own: upstream outputs and the comparison, each
    /// in its own section (empty when it has neither).
    pub fn own_sections(&self) -> String {
        let mut out = String::new();
        for (node, output) in &self.upstream {
            out.push_str(&format!("\n\n## Output of `{node}`\n\n"));
            out.push_str(&render_value(output));
        }
        if let Some(check) = &self.comparison {
            let headings = &self.headings;
            for ((key, groups), title) in sections(check).into_iter().zip([
                &headings.contradictions,
                &headings.disagreements,
                &headings.duplicates,
            ]) {
                out.push_str(&format!("\n\n## {title} (`{key}`)\n\n"));
                out.push_str(&fenced_json(&serde_json::to_value(groups).unwrap_or_default()));
            }
        }
        if let Some(fit) = self.fitted.as_ref().filter(|f| !f.cuts.is_empty()) {
            out.push_str("\n\n## Cut to fit the model's context window\n\n");
            out.push_str(&format!("The input above was cut so that it fits: {}.", fit.cuts_text()));
        }
        out
    }
}

fn sections(check: &FindingsCheck) -> [(&'static str, &Vec<FindingGroup>); 3] {
    [
        ("contradictions", &check.contradictions),
        ("disagreements", &check.disagreements),
        ("duplicates", &check.duplicates),
    ]
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Object(map) if map.values().any(is_block) => {
            let mut parts = Vec::new();
            for (key, v) in map {
                if is_block(v) {
                    let text = v.as_str().unwrap_or_default().trim_end();
                    let fence = fence_for(text);
                    parts.push(format!("`{key}`:\n{fence}\n{text}\n{fence}"));
                } else {
                    parts.push(format!("`{key}`: {}", serde_json::to_string(v).unwrap_or_default()));
                }
            }
            parts.join("\n\n")
        }
        other => fenced_json(other),
    }
}

/// A code fence the text cannot close: three backticks, or one more than the
/// longest run of backticks in it (a diff of Markdown, a rules file with examples).
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn is_block(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.contains('\n') || s.len() > 200)
}

fn fenced_json(value: &Value) -> String {
    format!("```json\n{}\n```", serde_json::to_string_pretty(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_block_holding_fences_is_fenced_longer_so_it_cannot_end_early() {
        let diff = "--- README.md (modified)\n+    3 | ```sh\n+    4 | make\n+    5 | ```\n";
        let input = AgentInput { run_input: json!({"diff": diff, "base": "main"}), ..AgentInput::default() };
        assert_eq!(
            input.shared_context(),
            format!("## Run input\n\n`diff`:\n````\n{}\n````\n\n`base`: \"main\"", diff.trim_end())
        );
        let plain = AgentInput { run_input: json!({"diff": "a\nb"}), ..AgentInput::default() };
        assert_eq!(plain.shared_context(), "## Run input\n\n`diff`:\n```\na\nb\n```");
        assert_eq!(fence_for("x ````` y"), "``````");
    }

    #[test]
    fn what_was_cut_to_fit_the_window_is_told_last() {
        let fit = InputFit {
            window: 8192,
            answer_room: 2048,
            tokens_before: 9000,
            tokens_after: 6000,
            cuts: vec![conclave_shared::InputCut::Dropped { severity: conclave_shared::Severity::Nit, findings: 2 }],
        };
        let input = AgentInput {
            upstream: vec![("security".into(), json!({"findings": []}))],
            fitted: Some(fit.clone()),
            ..AgentInput::default()
        };
        assert!(
            input.own_sections().ends_with(
                "## Cut to fit the model's context window\n\nThe input above was cut so that it fits: 2 nit finding(s) \
                 left out."
            ),
            "{}",
            input.own_sections()
        );
        let nothing_cut = AgentInput { fitted: Some(InputFit { cuts: Vec::new(), ..fit }), ..input };
        assert!(!nothing_cut.own_sections().contains("Cut to fit"), "nothing cut, nothing said");
    }
}
