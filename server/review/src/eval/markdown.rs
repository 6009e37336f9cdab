//! An eval's summary and a comparison of two, as Markdown tables: the headline
//! figures with their intervals, each node, each support level, each severity, and
//! the cases with what each missed and invented.

use conclave_shared::eval::{CaseDetail, Comparison, EvalSummary, Interval};
use std::fmt::Write;

/// The summary as Markdown: a headline table, then one table by node, by support
/// level, by severity, and per case.
pub fn summary_markdown(s: &EvalSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Eval of {} on {}\n", cell(&s.conclave), cell(&s.dataset));
    let matching = match (&s.matching.judge, s.matching.threshold) {
        (Some(judge), _) => format!("judged by {}", cell(judge)),
        (None, Some(t)) => format!("same-issue rule, wording threshold {t:.2}"),
        (None, None) => "same-issue rule".into(),
    };
    let _ = writeln!(
        out,
        "A finding matches a golden issue in the same file within {} line(s) ({matching}); min support {}; \
         95% intervals from {} bootstrap resamples over cases.\n",
        s.matching.window, s.min_support, s.matching.resamples
    );
    headline(&mut out, s);
    nodes_and_levels(&mut out, s);
    severities(&mut out, s);
    cases(&mut out, &s.cases_detail);
    out
}

/// A comparison as Markdown: one row per figure, then one sentence naming the
/// significant differences.
pub fn comparison_markdown(c: &Comparison) -> String {
    let mut out = format!("# {} → {}\n\n", cell(&c.a), cell(&c.b));
    let _ = writeln!(out, "B − A over {} paired case(s), with paired-bootstrap 95% intervals.\n", c.paired_cases);
    out.push_str("| figure | A | B | Δ | 95% interval | verdict |\n|---|---:|---:|---:|---|---|\n");
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
        c.deltas.iter().filter(|d| d.significant).map(|d| format!("{} ({:+.3})", flat(&d.figure), d.delta)).collect();
    if significant.is_empty() {
        out.push_str("\nNo difference is significant: every interval holds 0.\n");
    } else {
        let _ = writeln!(out, "\nSignificant: {}.", significant.join(", "));
    }
    out
}

/// Text on one line.
fn flat(text: &str) -> String {
    text.replace("\r\n", " ").replace(['\n', '\r'], " ")
}

/// Text for a table cell: no `|` or line break ends the cell. A backslash is
/// escaped too, or a text ending in one would escape the pipe after it.
fn cell(text: &str) -> String {
    // `<` and `&` too: Markdown renderers pass raw HTML through, and a finding may quote
    // code such as `<script>`.
    flat(text).replace('\\', "\\\\").replace('|', "\\|").replace('&', "&amp;").replace('<', "&lt;")
}

/// A cell's text cut to `most` characters (before escaping, so an escape is never cut in two).
fn short(text: &str, most: usize) -> String {
    let flat = flat(text);
    if flat.chars().count() <= most {
        return cell(&flat);
    }
    let cut: String = flat.chars().take(most.saturating_sub(1)).collect();
    format!("{}…", cell(cut.trim_end()))
}

fn interval(i: &Interval) -> String {
    format!("{:.3}–{:.3}", i.low, i.high)
}

fn headline(out: &mut String, s: &EvalSummary) {
    out.push_str("| figure | value | 95% interval |\n|---|---:|---|\n");
    let _ = writeln!(out, "| cases | {} | |", s.cases);
    for (name, value, ci) in
        [("precision", s.precision, &s.ci95.precision), ("recall", s.recall, &s.ci95.recall), ("F1", s.f1, &s.ci95.f1)]
    {
        let _ = writeln!(out, "| {name} | {value:.3} | {} |", interval(ci));
    }
    let c = &s.counts;
    for (name, count) in
        [("TP (matched)", c.true_positives), ("FP (extra)", c.false_positives), ("FN (missed)", c.false_negatives)]
    {
        let _ = writeln!(out, "| {name} | {count} | |");
    }
    let cost = s.cost.map_or_else(|| "unknown".to_string(), |c| format!("${c:.4}"));
    let _ = writeln!(out, "| cost | {cost} | |");
    let _ = writeln!(out, "| tokens (in / out) | {} / {} | |\n", s.tokens.input, s.tokens.output);
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
}

fn severities(out: &mut String, s: &EvalSummary) {
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

/// How long a description may be in the case table.
const DESCRIPTION: usize = 60;

fn cases(out: &mut String, cases: &[CaseDetail]) {
    out.push_str("\n## Cases\n\n| case | status | TP | FP | FN | missed issues | extra findings |\n");
    out.push_str("|---|---|---:|---:|---:|---|---|\n");
    for c in cases {
        let status = match &c.error {
            Some(error) => format!("{}: {}", cell(&c.status), short(error, DESCRIPTION)),
            None => cell(&c.status),
        };
        let missed: Vec<String> = c
            .missed
            .iter()
            .map(|m| format!("{}:{} {}", cell(&m.file), m.line, short(&m.description, DESCRIPTION)))
            .collect();
        let extra: Vec<String> = c
            .extra
            .iter()
            .map(|f| format!("{}:{} {}", cell(&f.file), f.line, short(&f.description, DESCRIPTION)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {status} | {} | {} | {} | {} | {} |",
            cell(&c.id),
            c.counts.true_positives,
            c.counts.false_positives,
            c.counts.false_negatives,
            missed.join("; "),
            extra.join("; ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::html::tests::sample;
    use conclave_shared::eval::Delta;

    /// The rows of the table under `heading`.
    fn rows<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
        let after = &text[text.find(heading).unwrap_or_else(|| panic!("{heading} in {text}"))..];
        after.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).skip(2).collect()
    }

    /// The cells of a row, split as a GitHub-flavoured Markdown table splits them: at
    /// every `|` that no backslash escapes.
    fn cells(row: &str) -> Vec<String> {
        let (mut cells, mut current, mut chars) = (Vec::new(), String::new(), row.trim().chars());
        while let Some(c) = chars.next() {
            match c {
                '\\' => current.extend(chars.next().map(|next| vec![c, next]).unwrap_or_default()),
                '|' => cells.push(std::mem::take(&mut current).trim().to_string()),
                c => current.push(c),
            }
        }
        cells.into_iter().skip(1).collect()
    }

    #[test]
    fn every_table_has_its_rows() {
        let text = summary_markdown(&sample());
        let headline = rows(&text, "# Eval of");
        assert_eq!(headline.len(), 9, "cases, three figures, three counts, cost, tokens: {text}");
        assert!(headline.contains(&"| cases | 2 | |"), "{text}");
        assert!(headline.contains(&"| precision | 0.500 | 0.250–0.750 |"), "{text}");
        assert!(headline.contains(&"| FN (missed) | 1 | |") && headline.contains(&"| cost | $0.0125 | |"), "{text}");
        assert!(headline.contains(&"| tokens (in / out) | 1200 / 340 | |"), "{text}");
        let nodes = rows(&text, "## By node");
        assert_eq!(
            nodes,
            [
                "| security | 2 | 0.500 | 0.500 | +0.250 |",
                "| correctness | 2 | 0.500 | 0.500 | +0.125 |",
                "| writer (result) | 2 | 0.500 | 0.500 | +0.000 |"
            ]
        );
        let levels = rows(&text, "## By support");
        assert_eq!(levels, ["| 1 | 4 | 0.500 | 0.500 |", "| 2 | 2 | 0.750 | 0.250 |", "| 3 | 1 | 1.000 | 0.125 |"]);
        let severities = rows(&text, "## By severity");
        assert_eq!(severities, ["| high | 2 | 1 | 2 | 1 | 0.500 | 0.500 |", "| low | 4 | 1 | 2 | 1 | 0.250 | 0.500 |"]);
        let cases = rows(&text, "## Cases");
        assert_eq!(cases.len(), 2, "{text}");
        assert_eq!(cells(cases[1])[..5], ["two", "failed: the provider timed out", "1", "1", "1"]);
    }

    #[test]
    fn no_pipe_or_line_break_in_a_text_breaks_a_row() {
        let text = summary_markdown(&sample());
        for row in rows(&text, "## Cases") {
            let cells = cells(row);
            assert_eq!(cells.len(), 7, "{row}");
            assert_eq!(cells[5], r"src/lib.rs:12 the lock is held across an await \| and a path ends in C:\\");
            assert_eq!(cells[6], r"a.rs:3 a \| b &lt;script>alert('x')&lt;/script>", "no raw HTML");
        }
        let long = "x".repeat(80) + "|";
        assert_eq!(short(&long, 10), "xxxxxxxxx…", "cut before escaping, with a mark");
        assert_eq!(short("a|b", 10), r"a\|b");
        assert_eq!(cell("C:\\\r\nD"), r"C:\\ D");
        assert_eq!(cells(&format!("| {} |", cell(r"a\|b"))), [r"a\\\|b"], "a written `\\|` stays in its cell");
    }

    fn delta(figure: &str, delta: f64, low: f64, high: f64) -> Delta {
        Delta {
            figure: figure.into(),
            a: 0.5,
            b: 0.5 + delta,
            delta,
            ci95: Interval { low, high },
            significant: low > 0.0 || high < 0.0,
        }
    }

    #[test]
    fn a_comparison_names_what_is_significant() {
        let c = Comparison {
            a: "x".into(),
            b: "y".into(),
            paired_cases: 30,
            deltas: vec![delta("precision", 0.01, -0.05, 0.07), delta("recall", -0.2, -0.3, -0.1)],
        };
        let text = comparison_markdown(&c);
        assert_eq!(
            rows(&text, "# x → y"),
            [
                "| precision | 0.500 | 0.510 | +0.010 | -0.050 to +0.070 | not significant |",
                "| recall | 0.500 | 0.300 | -0.200 | -0.300 to -0.100 | significant |"
            ]
        );
        assert!(text.ends_with("\nSignificant: recall (-0.200).\n"), "{text}");
        let none = Comparison { deltas: vec![delta("a|b recall", 0.01, -0.05, 0.07)], ..c };
        let text = comparison_markdown(&none);
        assert!(text.contains("| a\\|b recall | 0.500 |"), "{text}");
        assert!(text.ends_with("\nNo difference is significant: every interval holds 0.\n"), "{text}");
    }
}
