//! Code review's output policy, the engine's `OutputPolicy` for every run Conclave
//! starts: it narrows the `file` of findings to the files of the change (review runs
//! only), normalizes finding paths before validation, compares the findings of
//! sibling reviewers, cuts a Writer's findings to fit a small model's window
//! (`input_fit.rs`), checks a Writer's counts against its findings, and merges the
//! answers of a sampled reviewer, or of one that reviewed a change in parts
//! (`samples.rs`). An agent with tools whose quoted
//! evidence is nowhere in the file is told so while it has retries left.

use conclave_engine::{AgentInput, ComparisonHeadings, OutputPolicy, SiblingOutput};
use conclave_schema::walk::escape;
use conclave_shared::{Anchor, CountMismatch, Finding, FindingsCheck, InputCut, LoweringNote, NoteKind};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::compare::compare_siblings;
use crate::findings::{count_mismatches, normalize_path, read_finding, read_findings};
use crate::repository_anchors::anchor_in_repository;
use crate::samples::merge_samples;

/// The review policy; [`ReviewPolicy::default`] compares and checks but narrows
/// nothing, [`ReviewPolicy::for_change`] also narrows findings to a change's files.
#[derive(Debug, Clone, Default)]
pub struct ReviewPolicy {
    changed_files: Option<Vec<String>>,
    /// The reviewed repository, whose files fingerprint the findings of samples.
    root: Option<PathBuf>,
}

impl ReviewPolicy {
    /// The policy of a review of a change with these files.
    pub fn for_change(changed_files: Vec<String>) -> ReviewPolicy {
        ReviewPolicy { changed_files: Some(changed_files), root: None }
    }

    /// The same policy, fingerprinting the findings of samples against the files
    /// under `root` when it merges them.
    pub fn in_repository(self, root: PathBuf) -> ReviewPolicy {
        ReviewPolicy { root: Some(root), ..self }
    }
}

impl OutputPolicy for ReviewPolicy {
    fn shape_schema(&self, schema: &mut Value, findings_field: Option<&str>) -> Vec<LoweringNote> {
        let (Some(files), Some(field)) = (&self.changed_files, findings_field) else { return Vec::new() };
        let Some(pointer) = narrow_files(schema, field, files) else { return Vec::new() };
        let message = format!(
            "`file` narrowed to the {} file(s) of the change (switch off with settings.diff_tightening)",
            files.len()
        );
        vec![LoweringNote { path: pointer, kind: NoteKind::Tightened, message }]
    }

    fn normalize_answer(&self, answer: &mut Value, findings_field: Option<&str>) {
        let Some(items) = findings_field.and_then(|f| answer.get_mut(f)).and_then(Value::as_array_mut) else { return };
        for item in items {
            if let Some(Value::String(file)) = item.get_mut("file") {
                *file = normalize_path(file);
            }
        }
    }

    fn compare(&self, siblings: &[SiblingOutput<'_>]) -> Option<FindingsCheck> {
        let mut findings: Vec<(String, Vec<Finding>)> = siblings
            .iter()
            .map(|s| (s.node_id.to_string(), read_findings(s.node_id, s.output, s.findings_field)))
            .collect();
        // Placed where their quotes are, two reviewers who cite the same code a few
        // lines apart meet at one line.
        if let Some(root) = &self.root {
            for (_, list) in &mut findings {
                anchor_in_repository(list, root);
            }
        }
        Some(compare_siblings(&findings))
    }

    fn comparison_headings(&self) -> ComparisonHeadings {
        ComparisonHeadings {
            contradictions: "Contradictions the engine found between the reviewers above".into(),
            disagreements: "Disagreements (one severity level apart) the engine found".into(),
            duplicates: "Near-duplicate findings the engine found (the same issue from several reviewers)".into(),
        }
    }

    /// The longest descriptions shortened first, then the lowest severities left out
    /// (`input_fit.rs`).
    fn cut_to_fit(
        &self,
        input: &mut AgentInput,
        findings: &[(String, String)],
        fits: &mut dyn FnMut(&AgentInput) -> bool,
    ) -> Vec<InputCut> {
        crate::input_fit::cut_to_fit(input, findings, fits)
    }

    fn check_output(&self, output: &Value) -> Vec<CountMismatch> {
        count_mismatches(output).unwrap_or_default()
    }

    fn reject_answer(&self, answer: &Value, findings_field: Option<&str>) -> Vec<String> {
        match (&self.root, findings_field) {
            (Some(root), Some(field)) => unanchored_quotes(answer, field, root),
            _ => Vec::new(),
        }
    }

    fn merge_samples(&self, answers: Vec<Value>, findings_field: &str, failed: &[String]) -> Value {
        merge_samples(answers, findings_field, failed, self.root.as_deref())
    }

    fn merge_parts(&self, answers: Vec<Value>, findings_field: &str, failed: &[String]) -> Value {
        crate::samples::merge_parts(answers, findings_field, failed, self.root.as_deref())
    }
}

/// Restricts the `file` property of the findings items to `files`; returns the JSON
/// pointer changed, or `None` when the schema has no such property.
fn narrow_files(schema: &mut Value, field: &str, files: &[String]) -> Option<String> {
    let items_pointer = format!("/properties/{}/items", escape(field));
    let items = schema.pointer(&items_pointer)?;
    let target = match items.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference.strip_prefix('#')?.to_string(),
        None => items_pointer,
    };
    let pointer = format!("{target}/properties/file");
    let file = schema.pointer_mut(&pointer)?.as_object_mut()?;
    file.insert("enum".into(), Value::Array(files.iter().map(|f| Value::String(f.clone())).collect()));
    Some(pointer)
}

/// One problem per finding of `answer` whose quoted `evidence` is nowhere in its file
/// (checked as the report checks it), with its JSON path and what to do.
fn unanchored_quotes(answer: &Value, field: &str, root: &Path) -> Vec<String> {
    let Some(items) = answer.get(field).and_then(Value::as_array) else { return Vec::new() };
    let placed: Vec<(usize, Finding)> =
        items.iter().enumerate().filter_map(|(i, item)| Some((i, read_finding("agent", item)?))).collect();
    let mut findings: Vec<Finding> = placed.iter().map(|(_, f)| f.clone()).collect();
    anchor_in_repository(&mut findings, root);
    placed
        .iter()
        .zip(&findings)
        .filter(|(_, f)| f.anchor == Some(Anchor::Unanchored))
        .map(|((i, f), _)| {
            format!(
                "/{}/{i}/evidence: the quote `{}` is not in {} at line {} nor anywhere else in the file; read the \
                 file and quote its code exactly (one to three lines), or drop the finding if the code is not there",
                escape(field),
                f.evidence.as_deref().unwrap_or_default(),
                f.file,
                f.line
            )
        })
        .collect()
}
