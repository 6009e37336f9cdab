//! An eval's summary and a comparison of two, as Markdown tables: the headline
//! figures with their intervals, each node, each support level, each severity, and
//! the cases with what each missed and invented.

use conclave_shared::eval::{CaseDetail, Comparison, EvalSummary, Interval};
use std::fmt::Write;

/// Text for a table cell: no `|` or line break breaks the table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn short(text: &str, most: usize) -> String {
    let flat = cell(text);
    if flat.chars().count() <= most {
        return flat;
    }
    let cut: String = flat.chars().take(most.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

fn interval(i: &Interval) -> String {
    format!("{:.3}–{:.3}", i.low, i.high)
}

/// The summary as Markdown.
pub fn summary_markdown(s: &EvalSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Eval of `{}` on {}\n", cell(&s.conclave), cell(&s.dataset));
    let matching = match (&s.matching.judge, s.matching.threshold) {
        (Some(judge), _) => format!("judged by `{}`", cell(judge)),
        (None, Some(t)) => format!("same-issue rule, wording threshold {t:.2}"),
        (None, None) => "same-issue rule".into(),
    };
    let _ = writeln!(
        out,
        "{} case(s); a finding matches a golden issue in the same file within {} line(s) ({matching}); min support {}; \
         95% intervals from {} bootstrap resamples over cases.\n",
        s.cases, s.matching.window, s.min_support, s.matching.resamples
    );
    out.push_str("| figure | value | 95% interval |\n|---|---:|---|\n");
    for (name, value, ci) in
        [("precision", s.precision, &s.ci95.precision), ("recall", s.recall, &s.ci95.recall), ("F1", s.f1, &s.ci95.f1)]
    {
        let _ = writeln!(out, "| {name} | {value:.3} | {} |", interval(ci));
    }
    let c = &s.counts;
    let cost = s.cost.map_or_else(|| "unknown".to_string(), |c| format!("${c:.4}"));
    let _ = writeln!(
        out,
        "\n{} matched, {} extra, {} missed. Cost {cost}; tokens {} in, {} out.\n",
        c.true_positives, c.false_positives, c.false_negatives, s.tokens.input, s.tokens.output
    );
    nodes_and_levels(&mut out, s);
    cases(&mut out, &s.cases_detail);
    out
}

fn nodes_and_levels(out: &mut String, s: &EvalSummary) {
    out.push_str("## By node\n\n| node | findings | precision | recall | adds |\n|---|---:|---:|---:|---:|\n");
    for n in &s.by_node {
        let name = if n.result { format!("{} (result)", cell(&n.node)) } else { cell(&n.node) };
        let _ = writeln!(out, "| {name} | {} | {:.3} | {:.3} | {:+.3} |", n.findings, n.precision, n.recall, n.adds);
    }
    out.push_str("\n## By support\n\n| min support | findings | precision | recall |\n|---:|---:|---:|---:|\n");
    for l in &s.by_support {
        let _ = writeln!(out, "| {} | {} | {:.3} | {:.3} |", l.min_support, l.findings, l.precision, l.recall);
    }
    out.push_str("\n## By severity\n\n| severity | findings | matched | issues | found | precision | recall |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for (severity, f) in &s.by_severity {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.3} | {:.3} |",
            cell(severity),
            f.findings,
            f.matched_findings,
            f.issues,
            f.matched_issues,
            f.precision,
            f.recall
        );
    }
}

fn cases(out: &mut String, cases: &[CaseDetail]) {
    out.push_str("\n## Cases\n\n| case | status | matched | extra | missed | missed issues | extra findings |\n");
    out.push_str("|---|---|---:|---:|---:|---|---|\n");
    for c in cases {
        let missed: Vec<String> =
            c.missed.iter().map(|m| format!("{}:{} {}", cell(&m.file), m.line, short(&m.description, 60))).collect();
        let extra: Vec<String> =
            c.extra.iter().map(|f| format!("{}:{} {}", cell(&f.file), f.line, short(&f.description, 60))).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&c.id),
            cell(&c.status),
            c.counts.true_positives,
            c.counts.false_positives,
            c.counts.false_negatives,
            missed.join("; "),
            extra.join("; ")
        );
    }
}

/// A comparison as Markdown: one row per figure, then which differences are significant.
pub fn comparison_markdown(c: &Comparison) -> String {
    let mut out = format!("# {} → {}\n\n", cell(&c.a), cell(&c.b));
    let _ = writeln!(out, "B − A over {} paired case(s), with paired-bootstrap 95% intervals.\n", c.paired_cases);
    out.push_str("| figure | A | B | Δ | 95% interval | |\n|---|---:|---:|---:|---|---|\n");
    for d in &c.deltas {
        let verdict = if d.significant { "significant" } else { "not significant" };
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:+.3} | {:+.3} to {:+.3} | {verdict} |",
            cell(&d.figure),
            d.a,
            d.b,
            d.delta,
            d.ci95.low,
            d.ci95.high
        );
    }
    let significant: Vec<String> =
        c.deltas.iter().filter(|d| d.significant).map(|d| format!("{} ({:+.3})", d.figure, d.delta)).collect();
    if significant.is_empty() {
        out.push_str("\nNo difference is significant: every interval holds 0.\n");
    } else {
        let _ = writeln!(out, "\nSignificant: {}.", significant.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::html::tests::sample;
    use conclave_shared::eval::{Delta, Interval};

    #[test]
    fn every_table_has_its_rows_and_cells_cannot_break_them() {
        let text = summary_markdown(&sample());
        assert!(text.contains("| precision | 0.500 | 0.250–0.750 |"), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("| writer (result) |")).count(), 1);
        assert_eq!(text.lines().filter(|l| l.starts_with("| 1 |") || l.starts_with("| 2 |")).count(), 2);
        assert!(text.contains("a \\| b <script>"), "a pipe is escaped: {text}");
        assert!(!text.contains("a | b"), "{text}");
    }

    #[test]
    fn a_comparison_names_what_is_significant() {
        let d = |figure: &str, delta: f64, low: f64, high: f64| Delta {
            figure: figure.into(),
            a: 0.5,
            b: 0.5 + delta,
            delta,
            ci95: Interval { low, high },
            significant: low > 0.0 || high < 0.0,
        };
        let c = Comparison {
            a: "x".into(),
            b: "y".into(),
            paired_cases: 30,
            deltas: vec![d("precision", 0.01, -0.05, 0.07), d("recall", -0.2, -0.3, -0.1)],
        };
        let text = comparison_markdown(&c);
        assert!(text.contains("| recall | 0.500 | 0.300 | -0.200 | -0.300 to -0.100 | significant |"), "{text}");
        assert!(text.contains("| precision |") && text.contains("not significant"), "{text}");
        assert!(text.contains("Significant: recall (-0.200)."), "{text}");
    }
}
