//! The Markdown report: the verdict first, then where reviewers contradict each other,
//! the Writer's miscounts, the findings by file (unanchored ones apart), merged
//! near-duplicates, agreements, lowering notes, and tokens and cost per agent.

use conclave_shared::{Anchor, BaselineState, Finding, FindingGroup, Severity, Stance, Usage};
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::repeats::{stability_distribution, support_distribution};
use super::review_report::{LoweringSummary, ReviewReport, anchor_counts, listed};
use crate::inert::code_span;

pub(super) fn render(r: &ReviewReport) -> String {
    let mut out = String::new();
    verdict(&mut out, r);
    super::scope::markdown(&mut out, r);
    super::impact::markdown(&mut out, r);
    super::configuration::markdown(&mut out, r);
    repeated(&mut out, r);
    conflicts(&mut out, r);
    miscounts(&mut out, r);
    findings(&mut out, r);
    refuted(&mut out, r);
    omitted(&mut out, r);
    super::parts::markdown(&mut out, &r.parts);
    super::input_fits::markdown(&mut out, &r.input_fits);
    super::rules::markdown(&mut out, r);
    super::analyzer_lanes::render_markdown(&mut out, r);
    super::sandboxes::markdown(&mut out, &r.sandboxes);
    merged(&mut out, r);
    lowerings(&mut out, r);
    usage(&mut out, r);
    if let Some(budget) = &r.budget {
        super::budget::markdown(&mut out, budget);
    }
    out
}

/// The title and the totals, computed from the findings.
fn verdict(out: &mut String, r: &ReviewReport) {
    let _ = writeln!(out, "# Review: {}\n", r.conclave.1);
    if !r.degraded.is_empty() {
        let _ = writeln!(
            out,
            "> **Degraded review:** {}. It is less than it claims to be; gates fail on it unless degraded reviews are allowed.\n",
            r.degraded.iter().map(|d| one_line(d)).collect::<Vec<_>>().join("; ")
        );
    }
    let totals = r.totals();
    let summary: Vec<String> = totals.iter().map(|(s, n)| format!("{n} {}", plural(*s, *n))).collect();
    let found: u64 = totals.values().sum();
    let _ = writeln!(out, "Run `{}`, {}. **{found} finding(s):** {}.", r.run_id, r.status.as_str(), summary.join(", "));
    if let Some(error) = &r.error {
        let _ = writeln!(out, "\n> **The run did not succeed:** {}", one_line(error));
    }
}

/// The findings a verifier refuted from the code (a result with `refuted`, such as
/// `review.verified.v1`): dropped from the findings, each with why it does not hold.
fn refuted(out: &mut String, r: &ReviewReport) {
    let Some(refuted) = r.result.get("refuted").and_then(|v| v.as_array()).filter(|l| !l.is_empty()) else { return };
    let _ = writeln!(out, "\n## Refuted by the verifier ({})\n", refuted.len());
    let _ =
        writeln!(out, "These findings were checked against the code and do not hold; they are not counted above.\n");
    for item in refuted {
        let text = |key: &str| item.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let line = item.get("line").and_then(|v| v.as_u64()).unwrap_or(0);
        let _ = writeln!(
            out,
            "- **{}:{line}**: {}. *Refuted:* {}",
            text("file"),
            one_line(&text("description")),
            one_line(&text("reason"))
        );
    }
}

/// Contradictions first, then disagreements: where reviewers part ways.
fn conflicts(out: &mut String, r: &ReviewReport) {
    let contradictions: Vec<&FindingGroup> = r.contradictions().collect();
    let disagreements: Vec<&FindingGroup> = r.checks.iter().flat_map(|(_, c)| &c.disagreements).collect();
    if !contradictions.is_empty() {
        let _ = writeln!(out, "\n## Contradictions ({})\n", contradictions.len());
        let _ = writeln!(
            out,
            "Reviewers gave opposite verdicts, or severities two or more levels apart, about the same code.\n"
        );
        for g in &contradictions {
            group(out, g);
        }
    }
    if !disagreements.is_empty() {
        let _ = writeln!(out, "\n## Disagreements ({})\n", disagreements.len());
        let _ = writeln!(out, "Severities one level apart about the same line.\n");
        for g in &disagreements {
            group(out, g);
        }
    }
}

/// Agents whose `counts` disagree with their own findings.
fn miscounts(out: &mut String, r: &ReviewReport) {
    if r.mismatches.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Warning: count mismatches\n");
    let _ = writeln!(
        out,
        "An agent's `counts` disagree with its own findings; the totals above are computed from the findings.\n"
    );
    for (node, mismatches) in &r.mismatches {
        for m in mismatches {
            let _ = writeln!(
                out,
                "- `{node}` claimed **{} {}** but listed **{}**.",
                m.claimed,
                plural(m.severity, m.claimed),
                m.actual
            );
        }
    }
}

/// The findings by file, in line order.
fn findings(out: &mut String, r: &ReviewReport) {
    let _ = writeln!(out, "\n## Findings\n");
    if r.findings.is_empty() {
        let _ = writeln!(out, "No findings.");
    }
    anchors(out, r);
    support(out, r);
    stability(out, r);
    baseline(out, r);
    let mut by_file: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in r.findings.iter().filter(|f| listed(f)) {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    for (file, mut findings) in by_file {
        findings.sort_by_key(|f| (f.line, f.severity));
        let _ = writeln!(out, "### {}\n", code_span(file));
        let _ = writeln!(out, "| Line | Severity | Raised by | Finding |");
        let _ = writeln!(out, "|---:|---|---|---|");
        for f in findings {
            let mut severity = match (f.effective_stance(), f.severity) {
                (Stance::Approval, _) => "approval".to_string(),
                (_, Some(s)) => s.as_str().to_string(),
                (_, None) => "-".to_string(),
            };
            if let Some(state) = f.baseline {
                severity = format!("{severity} ({})", state.as_str());
            }
            let line = match f.cited_line {
                Some(cited) => format!("{} (cited {cited})", f.line),
                None => f.line.to_string(),
            };
            let mut raised_by = cell(f.raised_by.as_deref().unwrap_or(&f.agent));
            if let (Some(support), false) = (f.support, r.raised.is_empty()) {
                raised_by = format!("{raised_by} · support {support}");
            }
            if let Some(stability) = f.stability {
                raised_by = format!("{raised_by} · stability {stability}");
            }
            let _ = writeln!(out, "| {line} | {severity} | {raised_by} | {} |", cell(&f.description));
        }
        out.push('\n');
    }
    unanchored(out, r);
}

/// How the findings' quotes were found in the code, when they were checked.
fn anchors(out: &mut String, r: &ReviewReport) {
    if r.findings.iter().all(|f| f.anchor.is_none()) {
        return;
    }
    let counts: Vec<String> = anchor_counts(&r.findings)
        .into_iter()
        .filter(|(state, n)| *n > 0 && *state != "none")
        .map(|(state, n)| format!("{n} {state}"))
        .collect();
    let _ = writeln!(
        out,
        "Quotes checked against the code: {}. Relocated findings show the line their quote is on.\n",
        counts.join(", ")
    );
}

/// The findings grouped by support: how many have each number of reviewers behind them.
fn support(out: &mut String, r: &ReviewReport) {
    let groups = support_distribution(r);
    if r.raised.is_empty() || groups.is_empty() {
        return;
    }
    let shares: Vec<String> = groups.iter().map(|(support, n)| format!("{n} with support {support}")).collect();
    let _ = write!(out, "Support (distinct reviewers, samples and models behind each finding): {}.", shares.join(", "));
    if r.min_support > 0 {
        let below = r.findings.iter().filter(|f| listed(f) && !r.supported(f)).count();
        let _ = write!(out, " {below} finding(s) below the minimum support of {} fail no gate.", r.min_support);
    }
    out.push_str("\n\n");
}

/// How stable the findings of sampled reviewers are: how many have each stability.
fn stability(out: &mut String, r: &ReviewReport) {
    let distribution = stability_distribution(r);
    if r.samples.is_empty() && distribution.is_empty() {
        return;
    }
    let agents: Vec<String> =
        r.samples.iter().map(|s| format!("`{}` ({} of {})", s.node_id, s.answered, s.requested)).collect();
    let shares: Vec<String> = distribution.iter().map(|(s, n)| format!("{n} at {s}")).collect();
    let _ = write!(
        out,
        "Stability (how many samples raised each finding; samples answered: {}): {}.",
        agents.join(", "),
        if shares.is_empty() { "no findings".to_string() } else { shares.join(", ") }
    );
    if r.min_stability > 0.0 {
        let below = r.findings.iter().filter(|f| listed(f) && !r.stable(f)).count();
        let _ = write!(out, " {below} finding(s) below the minimum stability of {:.2} fail no gate.", r.min_stability);
    }
    out.push_str("\n\n");
}

/// The summary of a repeated review: rates over the runs, then findings that came back.
fn repeated(out: &mut String, r: &ReviewReport) {
    let Some(rep) = &r.repeat else { return };
    let _ = writeln!(out, "\n## Repeated {} times\n", rep.runs);
    let _ = writeln!(
        out,
        "{} of {} runs succeeded. Count mismatches in {} run(s) (rate {:.2}); contradictions in {} run(s) (rate {:.2}).",
        rep.succeeded,
        rep.runs,
        rep.runs_with_count_mismatch,
        rep.count_mismatch_rate,
        rep.runs_with_contradiction,
        rep.contradiction_rate
    );
    let per_run: Vec<String> = rep.findings_per_run.iter().map(u64::to_string).collect();
    let _ = writeln!(
        out,
        "Findings per run: {}. {} distinct finding(s) over all runs, {} raised in every run. The findings below are the last run's.",
        per_run.join(", "),
        rep.distinct_findings,
        rep.in_every_run
    );
}

/// How the findings compare with the baseline, and what is gone since.
fn baseline(out: &mut String, r: &ReviewReport) {
    let Some(source) = &r.baseline else { return };
    let count = |state: BaselineState| r.findings.iter().filter(|f| f.baseline == Some(state)).count();
    let _ = writeln!(
        out,
        "Against the baseline `{source}`: {} new, {} updated, {} unchanged, {} fixed. {}\n",
        count(BaselineState::New),
        count(BaselineState::Updated),
        count(BaselineState::Unchanged),
        r.absent.len(),
        if r.incremental() {
            "Gates count every finding: the earlier review was of this branch."
        } else {
            "Gates count new and updated findings only."
        }
    );
    if r.absent.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Fixed since the baseline ({})\n", r.absent.len());
    let _ = writeln!(out, "| File | Line then | Severity | Finding |");
    let _ = writeln!(out, "|---|---:|---|---|");
    for f in &r.absent {
        let _ =
            writeln!(out, "| {} | {} | {} | {} |", code_span(&f.file), f.line, severity_of(f), cell(&f.description));
    }
    out.push('\n');
}

/// Findings whose quote is nowhere in the file: listed apart, never gating.
fn unanchored(out: &mut String, r: &ReviewReport) {
    let list: Vec<&Finding> =
        r.findings.iter().filter(|f| f.anchor == Some(Anchor::Unanchored) && f.dismissed.is_none()).collect();
    if list.is_empty() {
        return dismissed(out, r);
    }
    let _ = writeln!(out, "### Unanchored ({})\n", list.len());
    let _ = writeln!(
        out,
        "Their quoted code is not in the file, so they may cite code that does not exist; they fail no gate.\n"
    );
    let _ = writeln!(out, "| File | Line | Severity | Raised by | Finding | Quote |");
    let _ = writeln!(out, "|---|---:|---|---|---|---|");
    for f in list {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            code_span(&f.file),
            f.line,
            severity_of(f),
            cell(f.raised_by.as_deref().unwrap_or(&f.agent)),
            cell(&f.description),
            f.evidence.as_deref().map(|e| cell(&code_span(e))).unwrap_or_default()
        );
    }
    out.push('\n');
    dismissed(out, r);
}

/// Findings the repository dismissed (`.conclave/dismissed.json`, or a `/conclave
/// dismiss` reply on a pull request kept in the run store), with the reason.
fn dismissed(out: &mut String, r: &ReviewReport) {
    let list: Vec<&Finding> = r.findings.iter().filter(|f| f.dismissed.is_some()).collect();
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Dismissed ({})\n", list.len());
    let _ = writeln!(
        out,
        "Suppressed by `.conclave/dismissed.json` or a `/conclave dismiss` reply on a pull request; they fail no gate.\n"
    );
    let _ = writeln!(out, "| File | Line | Severity | Finding | Reason | By |");
    let _ = writeln!(out, "|---|---:|---|---|---|---|");
    for f in list {
        let Some(d) = &f.dismissed else { continue };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            code_span(&f.file),
            f.line,
            severity_of(f),
            cell(&f.description),
            cell(&d.reason),
            cell(&d.author)
        );
    }
    out.push('\n');
}

/// Files of the change the agents did not see, because the diff was over the cap.
fn omitted(out: &mut String, r: &ReviewReport) {
    if r.omitted.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Not reviewed ({})\n", r.omitted.len());
    let _ = writeln!(out, "The diff was over the size cap, so these files were left out, largest first:\n");
    for (path, bytes) in &r.omitted {
        let _ = writeln!(out, "- {} ({bytes} bytes of diff)", code_span(path));
    }
    out.push('\n');
}

/// Near-duplicates merged with all their raisers, then corroborated findings.
fn merged(out: &mut String, r: &ReviewReport) {
    let duplicates: Vec<&FindingGroup> = r.checks.iter().flat_map(|(_, c)| &c.duplicates).collect();
    if !duplicates.is_empty() {
        let _ = writeln!(out, "## Near-duplicates, merged ({})\n", duplicates.len());
        for g in duplicates {
            let raisers: Vec<String> = g.findings.iter().map(|f| format!("{} ({})", f.agent, severity_of(f))).collect();
            let _ = writeln!(
                out,
                "- **{}:{}** raised by {}: {}",
                g.file,
                range(g),
                raisers.join(", "),
                cell(&g.findings[0].description)
            );
        }
        out.push('\n');
    }
    let agreements: Vec<&FindingGroup> = r.checks.iter().flat_map(|(_, c)| &c.agreements).collect();
    if !agreements.is_empty() {
        let _ = writeln!(out, "## Corroborated ({})\n", agreements.len());
        for g in agreements {
            let _ = writeln!(out, "- **{}:{}**: {}", g.file, g.line, g.summary);
        }
        out.push('\n');
    }
}

/// What lowering changed, one entry per way of lowering.
fn lowerings(out: &mut String, r: &ReviewReport) {
    if r.lowerings.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Schema lowering notes\n");
    // Agents lowered the same way share one entry.
    let mut shared: Vec<(Vec<&str>, &LoweringSummary)> = Vec::new();
    for l in &r.lowerings {
        let same = |s: &&LoweringSummary| {
            s.target == l.target && s.native == l.native && s.dialect == l.dialect && s.notes == l.notes
        };
        match shared.iter_mut().find(|(_, s)| same(s)) {
            Some((nodes, _)) => nodes.push(&l.node_id),
            None => shared.push((vec![&l.node_id], l)),
        }
    }
    for (nodes, l) in shared {
        let mut how = if l.native { format!("native, {}", l.target) } else { "prompt contract".to_string() };
        if let Some(dialect) = l.dialect {
            how.push_str(&format!(", dialect `{dialect}`"));
        }
        let names: Vec<String> = nodes.iter().map(|n| format!("`{n}`")).collect();
        let _ = writeln!(out, "- {} ({how}):", names.join(", "));
        for note in &l.notes {
            let _ = writeln!(out, "  - [{}] {}", note.kind.as_str(), note);
        }
    }
    out.push('\n');
}

/// Tokens and cost per agent, with the total; with the prompt cache's reads, writes
/// and what it saved when any token was cached.
fn usage(out: &mut String, r: &ReviewReport) {
    if r.usage.is_empty() {
        return;
    }
    let cached = r.usage.iter().any(|a| a.usage.cache_read_tokens + a.usage.cache_write_tokens > 0);
    let _ = writeln!(out, "## Tokens and cost\n");
    if cached {
        let _ = writeln!(
            out,
            "| Agent | Provider | Model | Input tokens | Cache reads | Cache writes | Output tokens | Cost | Saved by caching |"
        );
        let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|");
    } else {
        let _ = writeln!(out, "| Agent | Provider | Model | Input tokens | Output tokens | Cost |");
        let _ = writeln!(out, "|---|---|---|---:|---:|---:|");
    }
    let mut total = Usage::default();
    for a in &r.usage {
        total.add(&a.usage);
        let agent = match &a.cached_from {
            Some(run) => format!("{} (cached, from run {run})", a.node_id),
            None => a.node_id.clone(),
        };
        let _ = writeln!(out, "| {agent} | {} | {} | {} |", a.provider, cell(&a.model), usage_cells(&a.usage, cached));
    }
    let _ = writeln!(out, "| **total** | | | {} |", usage_cells(&total, cached));
}

/// The token and cost cells of one row.
fn usage_cells(u: &Usage, cached: bool) -> String {
    if cached {
        format!(
            "{} | {} | {} | {} | {} | {}",
            u.input_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.output_tokens,
            money(u.cost_usd),
            money(u.cache_savings_usd)
        )
    } else {
        format!("{} | {} | {}", u.input_tokens, u.output_tokens, money(u.cost_usd))
    }
}

fn group(out: &mut String, g: &FindingGroup) {
    let _ = writeln!(out, "- **{}:{}**: {}", g.file, range(g), g.summary);
    for f in &g.findings {
        let stance = if f.effective_stance() == Stance::Approval { ", approval" } else { "" };
        let _ =
            writeln!(out, "  - {} ({}{stance}, line {}): {}", f.agent, severity_of(f), f.line, cell(&f.description));
    }
}

fn range(g: &FindingGroup) -> String {
    if g.line == g.end_line { g.line.to_string() } else { format!("{}-{}", g.line, g.end_line) }
}

fn severity_of(f: &Finding) -> &'static str {
    f.severity.map_or("unrated", |s| s.as_str())
}

fn plural(s: Severity, n: u64) -> String {
    if n == 1 { s.as_str().to_string() } else { format!("{}s", s.as_str()) }
}

fn money(cost: Option<f64>) -> String {
    cost.map_or_else(|| "-".to_string(), |c| format!("${c:.4}"))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}
