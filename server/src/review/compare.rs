//! Comparing the findings of sibling reviewers, in time linear in the number of
//! findings: exact `(file, line)` buckets for contradictions, disagreements and
//! agreements, then a sorted sweep of each file's findings for near-duplicates.

use conclave_shared::{Finding, FindingGroup, FindingsCheck, Stance};
use std::collections::{BTreeMap, HashMap, HashSet};

use super::similarity::{NEAR_DUPLICATE_THRESHOLD, NEAR_LINES, dice, word_set};

/// Most later findings each finding is compared with in the near-duplicate sweep, so
/// a pile of findings on one line cannot make the sweep quadratic.
const NEAR_WINDOW: usize = 32;

/// Compares the findings of several agents (each `(agent, findings)`).
pub fn compare_findings(per_agent: &[(String, Vec<Finding>)]) -> FindingsCheck {
    let all: Vec<&Finding> = per_agent.iter().flat_map(|(_, f)| f).collect();
    let mut check =
        FindingsCheck { agents: per_agent.iter().map(|(a, _)| a.clone()).collect(), ..FindingsCheck::default() };

    let mut buckets: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    for (i, f) in all.iter().enumerate() {
        buckets.entry((f.file.as_str(), f.line)).or_default().push(i);
    }
    for ((file, line), members) in &buckets {
        let group: Vec<&Finding> = members.iter().map(|&i| all[i]).collect();
        if distinct_agents(&group) < 2 {
            continue;
        }
        let findings: Vec<Finding> = group.iter().map(|f| (*f).clone()).collect();
        let make = |summary: String| FindingGroup {
            file: file.to_string(),
            line: *line,
            end_line: *line,
            basis: "same_line".into(),
            summary,
            findings: findings.clone(),
        };
        match classify(&group) {
            Verdict::Contradiction(why) => check.contradictions.push(make(why)),
            Verdict::Disagreement(why) => check.disagreements.push(make(why)),
            Verdict::Agreement(why) => check.agreements.push(make(why)),
            Verdict::Nothing => {}
        }
    }

    for members in near_duplicate_groups(&all) {
        let group: Vec<&Finding> = members.iter().map(|&i| all[i]).collect();
        let (line, end_line) =
            (group.iter().map(|f| f.line).min().unwrap_or(0), group.iter().map(|f| f.line).max().unwrap_or(0));
        let agents: Vec<&str> = unique(group.iter().map(|f| f.agent.as_str()));
        let findings: Vec<Finding> = group.iter().map(|f| (*f).clone()).collect();
        let file = group[0].file.clone();
        let make = |summary: String| FindingGroup {
            file: file.clone(),
            line,
            end_line,
            basis: "near_duplicate".into(),
            summary,
            findings: findings.clone(),
        };
        check.duplicates.push(make(format!("{} describe the same issue", agents.join(", "))));
        // A conflict on one line is already reported from its bucket.
        if line != end_line
            && let Verdict::Contradiction(why) = classify(&group)
        {
            check.contradictions.push(make(why));
        }
    }
    check.contradictions.sort_by(|a, b| (&a.file, a.line, &a.basis).cmp(&(&b.file, b.line, &b.basis)));
    check
}

enum Verdict {
    Contradiction(String),
    Disagreement(String),
    Agreement(String),
    Nothing,
}

/// Classifies findings of two or more agents about one place.
fn classify(group: &[&Finding]) -> Verdict {
    let approvers = unique(group.iter().filter(|f| f.effective_stance() == Stance::Approval).map(|f| f.agent.as_str()));
    let objectors = unique(group.iter().filter(|f| f.effective_stance() == Stance::Concern).map(|f| f.agent.as_str()));
    if !approvers.is_empty() && !objectors.is_empty() && approvers.iter().any(|a| !objectors.contains(a)) {
        let concerns: Vec<String> = group
            .iter()
            .filter(|f| f.effective_stance() == Stance::Concern)
            .map(|f| format!("{} ({})", f.agent, f.severity.map_or("concern", |s| s.as_str())))
            .collect();
        return Verdict::Contradiction(format!(
            "{} raised a concern that {} approved",
            concerns.join(", "),
            approvers.join(", ")
        ));
    }
    let rated: Vec<&&Finding> = group.iter().filter(|f| f.severity.is_some()).collect();
    let (Some(max), Some(min)) = (
        rated.iter().max_by_key(|f| f.severity.map(|s| s.level())),
        rated.iter().min_by_key(|f| f.severity.map(|s| s.level())),
    ) else {
        return Verdict::Nothing;
    };
    let (hi, lo) = (max.severity.map_or(0, |s| s.level()), min.severity.map_or(0, |s| s.level()));
    let describe = |f: &Finding| format!("{} says {}", f.agent, f.severity.map_or("?", |s| s.as_str()));
    match hi - lo {
        0 => {
            let agents = unique(rated.iter().map(|f| f.agent.as_str()));
            if agents.len() < 2 {
                return Verdict::Nothing;
            }
            Verdict::Agreement(format!(
                "{} agree it is {}",
                agents.join(", "),
                max.severity.map_or("?", |s| s.as_str())
            ))
        }
        1 => Verdict::Disagreement(format!("{}, {} (one level apart)", describe(max), describe(min))),
        spread => Verdict::Contradiction(format!("{}, {} ({spread} levels apart)", describe(max), describe(min))),
    }
}

/// Groups (indices into `all`) of similar findings from different agents in the same
/// file within `NEAR_LINES` lines, joined transitively.
fn near_duplicate_groups(all: &[&Finding]) -> Vec<Vec<usize>> {
    let words: Vec<HashSet<String>> = all.iter().map(|f| word_set(&f.description)).collect();
    let mut by_file: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in all.iter().enumerate() {
        by_file.entry(f.file.as_str()).or_default().push(i);
    }
    let mut parent: Vec<usize> = (0..all.len()).collect();
    let mut linked = vec![false; all.len()];
    for indices in by_file.values_mut() {
        indices.sort_by_key(|&i| (all[i].line, i));
        for (pos, &i) in indices.iter().enumerate() {
            for &j in indices[pos + 1..].iter().take(NEAR_WINDOW) {
                if all[j].line - all[i].line > NEAR_LINES {
                    break;
                }
                if all[i].agent != all[j].agent && dice(&words[i], &words[j]) >= NEAR_DUPLICATE_THRESHOLD {
                    union(&mut parent, i, j);
                    linked[i] = true;
                    linked[j] = true;
                }
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in (0..all.len()).filter(|&i| linked[i]) {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().push(i);
    }
    let mut out: Vec<Vec<usize>> = groups.into_values().collect();
    out.sort_by_key(|g| (all[g[0]].file.clone(), g.iter().map(|&i| all[i].line).min()));
    out
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb)] = ra.min(rb);
    }
}

fn distinct_agents(group: &[&Finding]) -> usize {
    unique(group.iter().map(|f| f.agent.as_str())).len()
}

fn unique<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
