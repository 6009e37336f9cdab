//! Cutting the findings in an agent's input (a Writer's) to fit a small model's
//! context window, in one stated order:
//!
//! 1. the longest descriptions first: every description longer than a step of
//!    [`DESCRIPTION_STEPS`] is shortened to it, step by step;
//! 2. then the lowest severities: the nits are left out, then the minor findings, then
//!    the major ones and last the blockers (findings without a severity go with the
//!    nits).
//!
//! It stops as soon as the input fits. The engine's comparison (contradictions,
//! disagreements, near-duplicates) is cut alike, and a group left with fewer than two
//! findings leaves it. Counts are of the reviewers' outputs; the comparison's copies
//! of their findings are not counted again.

use conclave_engine::AgentInput;
use conclave_shared::{Finding, FindingGroup, InputCut, Severity};
use serde_json::Value;

/// The lengths, in characters, descriptions are shortened to, one step at a time.
/// The embedded model's descriptions are at most 200 characters (its lowering bounds
/// free strings), so its cuts start at 160.
pub const DESCRIPTION_STEPS: [usize; 9] = [800, 400, 300, 200, 160, 120, 80, 60, 40];

/// The order severities are left out in, the least serious first.
pub const DROP_ORDER: [Severity; 4] = [Severity::Nit, Severity::Minor, Severity::Major, Severity::Blocker];

/// Cuts `input` in the order above until `fits` says it fits, or nothing is left to
/// cut; returns the steps taken. `findings` names the findings-shaped upstream
/// outputs and the property holding their findings.
pub fn cut_to_fit(
    input: &mut AgentInput,
    findings: &[(String, String)],
    fits: &mut dyn FnMut(&AgentInput) -> bool,
) -> Vec<InputCut> {
    let mut cuts = Vec::new();
    for chars in DESCRIPTION_STEPS {
        let shortened = shorten_descriptions(input, findings, chars);
        if shortened == 0 {
            continue;
        }
        cuts.push(InputCut::Shortened { chars: chars as u32, findings: shortened });
        if fits(input) {
            return cuts;
        }
    }
    for severity in DROP_ORDER {
        let dropped = drop_severity(input, findings, severity);
        if dropped == 0 {
            continue;
        }
        cuts.push(InputCut::Dropped { severity, findings: dropped });
        if fits(input) {
            return cuts;
        }
    }
    cuts
}

/// The finding items of each findings-shaped upstream output of `input`.
fn items_of<'a>(input: &'a mut AgentInput, findings: &[(String, String)]) -> Vec<&'a mut Vec<Value>> {
    input
        .upstream
        .iter_mut()
        .filter_map(|(node, output)| {
            let (_, field) = findings.iter().find(|(id, _)| id == node)?;
            output.get_mut(field.as_str())?.as_array_mut()
        })
        .collect()
}

/// The comparison's groups as the agent reads them.
fn groups_of(input: &mut AgentInput) -> Vec<&mut Vec<FindingGroup>> {
    match input.comparison.as_mut() {
        Some(check) => vec![&mut check.contradictions, &mut check.disagreements, &mut check.duplicates],
        None => Vec::new(),
    }
}

/// Shortens every description longer than `chars`; returns how many of the
/// reviewers' findings were.
fn shorten_descriptions(input: &mut AgentInput, findings: &[(String, String)], chars: usize) -> u32 {
    let mut shortened = 0;
    for items in items_of(input, findings) {
        for item in items.iter_mut() {
            if let Some(Value::String(description)) = item.get_mut("description")
                && let Some(short) = shorten(description, chars)
            {
                *description = short;
                shortened += 1;
            }
        }
    }
    for groups in groups_of(input) {
        for finding in groups.iter_mut().flat_map(|g| g.findings.iter_mut()) {
            if let Some(short) = shorten(&finding.description, chars) {
                finding.description = short;
            }
        }
    }
    shortened
}

/// `text` cut to at most `chars` characters, at a word's end when one is near, with
/// an ellipsis; `None` when it is no longer than that.
pub fn shorten(text: &str, chars: usize) -> Option<String> {
    if text.chars().count() <= chars {
        return None;
    }
    let kept: String = text.chars().take(chars.saturating_sub(1)).collect();
    let at_word = match kept.rfind(char::is_whitespace) {
        Some(space) if kept[space..].chars().count() <= 16 => kept[..space].trim_end(),
        _ => kept.as_str(),
    };
    Some(format!("{at_word}…"))
}

/// The severity a finding item is left out with: its own, or a nit's without one.
fn severity_of(item: &Value) -> Severity {
    item.get("severity").and_then(Value::as_str).and_then(Severity::parse).unwrap_or(Severity::Nit)
}

/// Leaves out the findings of `severity`; returns how many of the reviewers' were.
fn drop_severity(input: &mut AgentInput, findings: &[(String, String)], severity: Severity) -> u32 {
    let mut dropped = 0;
    for items in items_of(input, findings) {
        let before = items.len();
        items.retain(|item| severity_of(item) != severity);
        dropped += (before - items.len()) as u32;
    }
    let keep = |f: &Finding| f.severity.unwrap_or(Severity::Nit) != severity;
    for groups in groups_of(input) {
        for group in groups.iter_mut() {
            group.findings.retain(keep);
        }
        groups.retain(|g| g.findings.len() >= 2);
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_shared::FindingsCheck;
    use serde_json::json;

    fn finding(severity: &str, description: &str) -> Value {
        json!({"severity": severity, "file": "a.rs", "line": 1, "description": description, "raisedBy": "x"})
    }

    fn input() -> AgentInput {
        let long = "word ".repeat(40);
        let security = json!({"findings": [finding("blocker", &long), finding("nit", "short"), finding("minor", "m")]});
        let analyzer = json!({"findings": [finding("nit", &long[..150]), json!({"file": "b.rs", "line": 2, "description": "no severity"})]});
        let group = |severities: [&str; 2]| FindingGroup {
            file: "a.rs".into(),
            line: 1,
            end_line: 1,
            basis: "same_line".into(),
            summary: "s".into(),
            findings: severities
                .iter()
                .map(|s| Finding { severity: Severity::parse(s), description: long.clone(), ..Finding::default() })
                .collect(),
        };
        AgentInput {
            upstream: vec![("security".into(), security), ("ruff".into(), analyzer), ("notes".into(), json!("text"))],
            comparison: Some(FindingsCheck {
                contradictions: vec![group(["blocker", "nit"])],
                disagreements: vec![group(["major", "minor"])],
                ..FindingsCheck::default()
            }),
            ..AgentInput::default()
        }
    }

    fn fields() -> Vec<(String, String)> {
        vec![("security".into(), "findings".into()), ("ruff".into(), "findings".into())]
    }

    fn descriptions(input: &AgentInput) -> Vec<String> {
        input.upstream[..2]
            .iter()
            .flat_map(|(_, v)| v["findings"].as_array().cloned().unwrap_or_default())
            .map(|f| f["description"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn the_longest_descriptions_are_shortened_first_step_by_step() {
        let mut cut = input();
        let mut asked = 0;
        // Fits once no description is longer than 120 characters.
        let cuts = cut_to_fit(&mut cut, &fields(), &mut |i| {
            asked += 1;
            descriptions(i).iter().all(|d| d.chars().count() <= 120)
        });
        assert_eq!(
            cuts,
            vec![InputCut::Shortened { chars: 160, findings: 1 }, InputCut::Shortened { chars: 120, findings: 2 },],
            "the 200-character description first, then it and the 150-character one"
        );
        assert_eq!(asked, 2, "steps that shorten nothing are not measured");
        let left = descriptions(&cut);
        assert!(left[0].chars().count() <= 120 && left[0].ends_with('…'), "{left:?}");
        assert_eq!(left[1], "short", "short descriptions are left as they are");
        let groups = &cut.comparison.as_ref().expect("comparison").contradictions[0];
        assert!(groups.findings.iter().all(|f| f.description.chars().count() <= 120), "the comparison is cut alike");
        assert_eq!(cut.upstream[2].1, json!("text"), "outputs that are not findings are left alone");
    }

    #[test]
    fn then_the_lowest_severities_are_left_out_nits_first_and_blockers_last() {
        let mut cut = input();
        // Fits once no nit or minor finding is left.
        let cuts = cut_to_fit(&mut cut, &fields(), &mut |i| {
            let all: Vec<Value> = i.upstream[..2]
                .iter()
                .flat_map(|(_, v)| v["findings"].as_array().cloned().unwrap_or_default())
                .collect();
            all.iter().all(|f| matches!(f["severity"].as_str(), Some("blocker" | "major")))
        });
        let dropped: Vec<&InputCut> = cuts.iter().filter(|c| matches!(c, InputCut::Dropped { .. })).collect();
        assert_eq!(
            dropped,
            [
                &InputCut::Dropped { severity: Severity::Nit, findings: 3 },
                &InputCut::Dropped { severity: Severity::Minor, findings: 1 },
            ],
            "two nits and the finding without a severity, then the minor one"
        );
        assert!(
            cuts.iter().take_while(|c| matches!(c, InputCut::Shortened { .. })).count() == cuts.len() - 2,
            "every description step came first: {cuts:?}"
        );
        assert_eq!(cut.upstream[0].1["findings"].as_array().map(Vec::len), Some(1), "the blocker stays");
        assert_eq!(cut.upstream[1].1["findings"], json!([]));
        let check = cut.comparison.as_ref().expect("comparison");
        assert!(check.contradictions.is_empty(), "a blocker left alone is no contradiction");
        assert!(check.disagreements.is_empty(), "nor a major finding alone a disagreement");
    }

    #[test]
    fn an_input_that_never_fits_loses_every_finding_and_says_so() {
        let mut cut = input();
        let cuts = cut_to_fit(&mut cut, &fields(), &mut |_| false);
        let dropped: Vec<Severity> = cuts
            .iter()
            .filter_map(|c| match c {
                InputCut::Dropped { severity, .. } => Some(*severity),
                InputCut::Shortened { .. } => None,
            })
            .collect();
        assert_eq!(dropped, [Severity::Nit, Severity::Minor, Severity::Blocker], "no major finding to leave out");
        assert!(descriptions(&cut).is_empty());
    }

    #[test]
    fn shortening_ends_at_a_word_with_an_ellipsis() {
        assert_eq!(shorten("short", 10), None);
        assert_eq!(shorten("the path is built from input", 16).as_deref(), Some("the path is…"));
        assert_eq!(shorten(&"x".repeat(50), 10).as_deref(), Some("xxxxxxxxx…"));
        assert_eq!(shorten("é".repeat(30).as_str(), 5).map(|s| s.chars().count()), Some(5));
    }
}
