//! Samples (`conclave review --samples K`): merging the answers of K runs of one
//! reviewer into one output, and each finding's stability: how many of the samples
//! raised it.
//!
//! Findings of different samples are the same finding when they are the same issue by
//! the one rule, [`same_issue`](crate::same_issue) (its fingerprints computed against
//! the reviewed files as the report does, and its quotes read where they were found).
//! A sample counts once per finding however often it repeats it. The merged output is
//! the first answering sample's, with its findings replaced by one entry per merged
//! finding (the first sample's wording) carrying `stability: {raised, samples}`, its
//! `counts` recomputed, and a `samples` object saying how many ran and why any failed.

use conclave_shared::{Finding, Stability};
use serde_json::{Map, Value, json};
use std::path::Path;

use crate::anchor::anchor_findings;
use crate::findings::read_finding;
use crate::repository_anchors::anchor_in_repository;
use crate::same_issue::same_issue;

/// One merged finding: the item that stands for it, the samples that raised it.
struct Merged {
    item: Value,
    finding: Finding,
    samples: Vec<usize>,
}

/// Merges the validated `answers` of one agent's samples (see the module header);
/// `root` is the reviewed repository, when known, for fingerprints.
pub fn merge_samples(answers: Vec<Value>, field: &str, failed: &[String], root: Option<&Path>) -> Value {
    let answered = answers.len();
    // Entries that name no place cannot be matched: the first sample's stay.
    let (placed, unplaced) = place(&answers, field, "sample", root, |sample| sample == 0);
    let mut merged: Vec<Merged> = Vec::new();
    for (sample, item, finding) in placed {
        match merged.iter_mut().find(|m| same_issue(&m.finding, &finding)) {
            Some(m) if !m.samples.contains(&sample) => m.samples.push(sample),
            Some(_) => {}
            None => merged.push(Merged { item, finding, samples: vec![sample] }),
        }
    }
    let samples = answered as u32;
    let items: Vec<Value> = merged
        .into_iter()
        .map(|m| with_stability(m.item, Stability { raised: m.samples.len() as u32, samples }))
        .chain(unplaced)
        .collect();
    merged_output(answers, field, items, ("samples", failed))
}

/// Merges the validated `answers` of one reviewer that reviewed a change in parts
/// (in part order; `failed` says which parts gave none and why): the findings of
/// every part, a finding of one part that is the same issue (by the one rule) as
/// one of an earlier part merged into it (a file split by hunks is seen by two
/// parts near their boundary), `counts` recomputed, and a `parts` object saying how
/// many answered and why any failed. The first part's other fields stand.
pub fn merge_parts(answers: Vec<Value>, field: &str, failed: &[String], root: Option<&Path>) -> Value {
    let (placed, unplaced) = place(&answers, field, "part", root, |_| true);
    let mut kept: Vec<(usize, Value, Finding)> = Vec::new();
    for (part, item, finding) in placed {
        if !kept.iter().any(|(p, _, f)| *p != part && same_issue(f, &finding)) {
            kept.push((part, item, finding));
        }
    }
    let items: Vec<Value> = kept.into_iter().map(|(_, item, _)| item).chain(unplaced).collect();
    merged_output(answers, field, items, ("parts", failed))
}

/// The findings of every answer (`label` names what an answer is, in messages),
/// each with the index of its answer, placed in the repository at `root` (or by
/// their quotes alone) and fingerprinted; and the entries that name no place, of
/// the answers `keep_unplaced` accepts.
fn place(
    answers: &[Value],
    field: &str,
    label: &str,
    root: Option<&Path>,
    keep_unplaced: impl Fn(usize) -> bool,
) -> (Vec<(usize, Value, Finding)>, Vec<Value>) {
    let mut placed: Vec<(usize, Value, Finding)> = Vec::new();
    let mut unplaced: Vec<Value> = Vec::new();
    for (index, answer) in answers.iter().enumerate() {
        for item in answer.get(field).and_then(Value::as_array).into_iter().flatten() {
            match read_finding(label, item) {
                Some(finding) => placed.push((index, item.clone(), finding)),
                None if keep_unplaced(index) => unplaced.push(item.clone()),
                None => {}
            }
        }
    }
    let mut findings: Vec<Finding> = placed.iter().map(|(_, _, f)| f.clone()).collect();
    match root {
        Some(root) => anchor_in_repository(&mut findings, root),
        None => anchor_findings(&mut findings, |_| None),
    }
    let placed = placed.into_iter().zip(findings).map(|((index, item, _), finding)| (index, item, finding)).collect();
    (placed, unplaced)
}

/// The first answer's output with the merged `items` as its findings, `counts`
/// recomputed, and under `key` how many answers were asked for, how many came and
/// why the `failed` ones did not.
fn merged_output(answers: Vec<Value>, field: &str, items: Vec<Value>, (key, failed): (&str, &[String])) -> Value {
    let answered = answers.len();
    let mut output = answers.into_iter().next().and_then(|a| a.as_object().cloned()).unwrap_or_default();
    recount(&mut output, &items);
    output.insert(field.to_string(), Value::Array(items));
    output.insert(key.into(), json!({ "requested": answered + failed.len(), "answered": answered, "failed": failed }));
    Value::Object(output)
}

fn with_stability(mut item: Value, stability: Stability) -> Value {
    if let Some(object) = item.as_object_mut() {
        object.insert("stability".into(), json!(stability));
    }
    item
}

/// Recomputes `counts` (when the output has them) from the merged findings, so the
/// merged output does not look like a miscount.
fn recount(output: &mut Map<String, Value>, items: &[Value]) {
    let Some(Value::Object(counts)) = output.get_mut("counts") else { return };
    for (severity, count) in counts.iter_mut() {
        let n = items.iter().filter(|i| i.get("severity").and_then(Value::as_str) == Some(severity)).count();
        *count = json!(n);
    }
}

/// The stability of each result finding that lacks one, from the sampled reviewers'
/// findings `raised`: the highest among those that raised the same issue.
pub fn carry_stability(findings: &mut [Finding], raised: &[Finding]) {
    for finding in findings.iter_mut().filter(|f| f.stability.is_none()) {
        finding.stability = raised
            .iter()
            .filter(|r| r.stability.is_some() && same_issue(r, finding))
            .filter_map(|r| r.stability)
            .max_by(|a, b| a.rate().total_cmp(&b.rate()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(line: u64, description: &str, severity: &str) -> Value {
        json!({"file": "src/a.rs", "line": line, "description": description, "severity": severity, "raisedBy": "security"})
    }

    fn answer(items: Vec<Value>) -> Value {
        json!({"findings": items, "counts": {"blocker": 9, "major": 9, "minor": 9, "nit": 9}})
    }

    fn stabilities(merged: &Value) -> Vec<(u64, String)> {
        let items = merged["findings"].as_array().expect("findings");
        items
            .iter()
            .map(|i| {
                (i["line"].as_u64().unwrap_or(0), format!("{}/{}", i["stability"]["raised"], i["stability"]["samples"]))
            })
            .collect()
    }

    #[test]
    fn findings_of_different_samples_merge_and_count_their_samples() {
        let traversal = "the upload name is joined to the root without checks: path traversal";
        let answers = vec![
            answer(vec![item(8, traversal, "blocker"), item(20, "the write is not atomic", "minor")]),
            answer(vec![item(9, "path traversal: the upload name is joined to the root without checks", "blocker")]),
            answer(vec![item(8, traversal, "blocker"), item(8, traversal, "blocker"), item(40, "a typo", "nit")]),
        ];
        let merged = merge_samples(answers, "findings", &["timed out".into()], None);
        assert_eq!(stabilities(&merged), [(8, "3/3".into()), (20, "1/3".into()), (40, "1/3".into())]);
        assert_eq!(merged["counts"], json!({"blocker": 1, "major": 0, "minor": 1, "nit": 1}));
        assert_eq!(merged["samples"], json!({"requested": 4, "answered": 3, "failed": ["timed out"]}));
    }

    #[test]
    fn a_result_finding_takes_the_stability_of_the_reviewer_finding_it_repeats() {
        let at = |agent: &str, line: u64, text: &str, stability: Option<Stability>| Finding {
            agent: agent.into(),
            file: "src/a.rs".into(),
            line,
            description: text.into(),
            stability,
            ..Finding::default()
        };
        let two = Stability { raised: 2, samples: 3 };
        let raised = [at("security", 8, "path traversal in the upload name", Some(two))];
        let mut findings =
            [at("writer", 9, "path traversal in the upload name", None), at("writer", 30, "other", None)];
        carry_stability(&mut findings, &raised);
        assert_eq!(findings.map(|f| f.stability), [Some(two), None]);
    }
}
