//! Comparing the findings of sibling reviewers, in time linear in the number of
//! findings: exact `(file, line)` buckets for contradictions, disagreements and
//! agreements, then a sorted sweep of each file's findings for near-duplicates: the
//! findings of different agents a few lines apart that the one rule,
//! [`SameIssue`](crate::same_issue::SameIssue), says are the same issue.

use conclave_shared::{Finding, FindingGroup, FindingsCheck, Stance};
use petgraph::unionfind::UnionFind;
use std::collections::HashMap;

use crate::same_issue::SameIssue;
use crate::similarity::push_word_hashes;

/// Most later findings each finding is compared with in the near-duplicate sweep, so
/// a pile of findings on one line cannot make the sweep quadratic.
const NEAR_WINDOW: usize = 32;

/// Compares the findings of sibling agents, the reviewers that feed one node (each
/// `(agent, findings)`): contradictions, disagreements, agreements and near-duplicates.
pub fn compare_siblings(per_agent: &[(String, Vec<Finding>)]) -> FindingsCheck {
    let all: Vec<&Finding> = per_agent.iter().flat_map(|(_, f)| f).collect();
    // Agents by index: comparing numbers in the inner loops, not names.
    let agent_of: Vec<u32> =
        per_agent.iter().enumerate().flat_map(|(a, (_, f))| std::iter::repeat_n(a as u32, f.len())).collect();
    let mut check =
        FindingsCheck { agents: per_agent.iter().map(|(a, _)| a.clone()).collect(), ..FindingsCheck::default() };

    // One sort by (file, line) serves both passes: exact buckets are runs, and the
    // near-duplicate sweep only looks a few lines ahead in the same file.
    let mut file_ids: HashMap<&str, u32> = HashMap::new();
    let mut order: Vec<(u32, u64, u32)> = all
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let next = file_ids.len() as u32;
            (*file_ids.entry(f.file.as_str()).or_insert(next), f.line, i as u32)
        })
        .collect();
    order.sort_unstable();

    let mut start = 0;
    while start < order.len() {
        let key = (order[start].0, order[start].1);
        let end = start + order[start..].iter().take_while(|o| (o.0, o.1) == key).count();
        let group: Vec<&Finding> = order[start..end].iter().map(|o| all[o.2 as usize]).collect();
        start = end;
        if order[start - group.len()..start]
            .iter()
            .all(|o| agent_of[o.2 as usize] == agent_of[order[start - 1].2 as usize])
        {
            continue;
        }
        let findings: Vec<Finding> = group.iter().map(|f| (*f).clone()).collect();
        let (file, line) = (group[0].file.clone(), group[0].line);
        let make = |summary: String| FindingGroup {
            file: file.clone(),
            line,
            end_line: line,
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

    for members in near_duplicate_groups(&all, &agent_of, &order) {
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
    for groups in [&mut check.contradictions, &mut check.disagreements, &mut check.agreements, &mut check.duplicates] {
        groups.sort_by(|a, b| (&a.file, a.line, &a.basis).cmp(&(&b.file, b.line, &b.basis)));
    }
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

/// Groups (indices into `all`) of findings of different agents that are the same
/// issue, joined transitively. `order` is `(file id, line, index)` sorted. Candidates
/// are the findings of another agent within the rule's window in the sorted order;
/// word lists are computed only for findings that have one.
fn near_duplicate_groups(all: &[&Finding], agent_of: &[u32], order: &[(u32, u64, u32)]) -> Vec<Vec<usize>> {
    let rule = SameIssue::default();
    // Candidate pairs come from the compact sorted array alone; descriptions are then
    // hashed in memory order, which keeps the sweep cache-friendly on big inputs.
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for (pos, &(file, line, i)) in order.iter().enumerate() {
        for &(other_file, other_line, j) in order[pos + 1..].iter().take(NEAR_WINDOW) {
            if other_file != file || other_line - line > rule.window {
                break;
            }
            if agent_of[i as usize] != agent_of[j as usize] {
                pairs.push((i, j));
            }
        }
    }
    let words = Words::of_pairs(all, &pairs);
    let mut sets: UnionFind<u32> = UnionFind::new(all.len());
    let mut linked = vec![false; all.len()];
    for (i, j) in pairs {
        let (a, b) = (i as usize, j as usize);
        if rule.score_hashed(all[a], words.of(a), all[b], words.of(b)).is_some() {
            sets.union(i, j);
            linked[a] = true;
            linked[b] = true;
        }
    }
    // Each group in ascending order of its members, the groups by their first member.
    let mut first_of_root: HashMap<u32, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in (0..all.len()).filter(|&i| linked[i]) {
        let root = sets.find_mut(i as u32);
        let group = *first_of_root.entry(root).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[group].push(i);
    }
    groups
}

/// The word hashes of the findings that are in some candidate pair, in one arena.
struct Words {
    arena: Vec<u64>,
    span: Vec<(u32, u32)>,
}

impl Words {
    /// Hashes the descriptions of the findings in `pairs`, in memory order.
    fn of_pairs(all: &[&Finding], pairs: &[(u32, u32)]) -> Words {
        let mut needed = vec![false; all.len()];
        for &(i, j) in pairs {
            needed[i as usize] = true;
            needed[j as usize] = true;
        }
        let mut words = Words { arena: Vec::new(), span: vec![(0, 0); all.len()] };
        for i in (0..all.len()).filter(|&i| needed[i]) {
            let start = words.arena.len();
            push_word_hashes(&all[i].description, &mut words.arena);
            words.span[i] = (start as u32, (words.arena.len() - start) as u32);
        }
        words
    }

    /// The word hashes of finding `i` (empty when it is in no pair).
    fn of(&self, i: usize) -> &[u64] {
        let (start, len) = self.span[i];
        &self.arena[start as usize..(start + len) as usize]
    }
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
