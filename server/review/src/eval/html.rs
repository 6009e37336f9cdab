//! An eval's summary as one self-contained HTML page: the headline figures with their
//! intervals, SVG charts drawn here (precision and recall against min-support, a bar
//! per node of what it adds) and the case table. No script, no external resource.

use conclave_shared::eval::{EvalSummary, NodeFigures, SupportFigures};
use std::fmt::Write;

/// Text safe inside HTML and SVG, in content and in quoted attributes.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1d2330}\
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccd;padding:.25rem .5rem;text-align:left}\
td.n{text-align:right}svg{display:block;margin:1rem 0}.axis{stroke:#556;stroke-width:1}\
.precision{stroke:#1f6feb;fill:#1f6feb}.recall{stroke:#d1242f;fill:#d1242f}polyline{fill:none;stroke-width:2}\
.bar{fill:#2da44e}.bar.negative{fill:#d1242f}text{font-size:12px;fill:#1d2330}";

/// The page.
pub fn summary_html(s: &EvalSummary) -> String {
    let mut out = String::new();
    let title = format!("Eval of {} on {}", s.conclave, s.dataset);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    out.push_str(
        "<table class=\"headline\"><thead><tr><th>figure</th><th>value</th><th>95% interval</th></tr></thead><tbody>\n",
    );
    for (name, value, ci) in
        [("precision", s.precision, &s.ci95.precision), ("recall", s.recall, &s.ci95.recall), ("F1", s.f1, &s.ci95.f1)]
    {
        let _ = writeln!(
            out,
            "<tr><td>{name}</td><td class=\"n\">{value:.3}</td><td>{:.3}–{:.3}</td></tr>",
            ci.low, ci.high
        );
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p>{} case(s): {} matched, {} extra, {} missed; tokens {} in, {} out{}.</p>",
        s.cases,
        s.counts.true_positives,
        s.counts.false_positives,
        s.counts.false_negatives,
        s.tokens.input,
        s.tokens.output,
        s.cost.map(|c| format!("; cost ${c:.4}")).unwrap_or_default()
    );
    out.push_str("<h2>Precision and recall against min-support</h2>\n");
    out.push_str(&support_chart(&s.by_support));
    out.push_str("<h2>What each node adds to the union's recall</h2>\n");
    out.push_str(&nodes_chart(&s.by_node));
    out.push_str("<h2>Cases</h2>\n");
    out.push_str(&case_table(s));
    out.push_str("</body></html>\n");
    out
}

const W: f64 = 520.0;
const H: f64 = 240.0;
const PAD: f64 = 40.0;

/// Precision and recall (0 to 1) at each support level, as points joined by lines.
fn support_chart(levels: &[SupportFigures]) -> String {
    let mut svg = format!(
        "<svg class=\"support-chart\" role=\"img\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">\
         <title>Precision and recall against min-support</title>\n\
         <line class=\"axis\" x1=\"{PAD}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/><line class=\"axis\" x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{b}\"/>\n\
         <text x=\"4\" y=\"{t}\">1.0</text><text x=\"4\" y=\"{b}\">0.0</text><text x=\"{mid}\" y=\"{lbl}\">min support</text>\n",
        b = H - PAD,
        r = W - PAD / 2.0,
        t = PAD + 4.0,
        mid = W / 2.0 - 30.0,
        lbl = H - 8.0
    );
    let n = levels.len();
    let x = |k: usize| {
        if n <= 1 { (PAD + W) / 2.0 } else { PAD + 20.0 + k as f64 * (W - 2.0 * PAD - 20.0) / (n - 1) as f64 }
    };
    let y = |v: f64| H - PAD - v.clamp(0.0, 1.0) * (H - 2.0 * PAD);
    for (class, value) in
        [("precision", (|l: &SupportFigures| l.precision) as fn(&SupportFigures) -> f64), ("recall", |l| l.recall)]
    {
        let points: Vec<String> =
            levels.iter().enumerate().map(|(k, l)| format!("{:.1},{:.1}", x(k), y(value(l)))).collect();
        let _ = writeln!(svg, "<polyline class=\"{class}\" points=\"{}\"/>", points.join(" "));
        for (k, l) in levels.iter().enumerate() {
            let _ = writeln!(
                svg,
                "<circle class=\"point {class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>{class} {:.3} at min support {}</title></circle>",
                x(k),
                y(value(l)),
                value(l),
                l.min_support
            );
        }
    }
    for (k, l) in levels.iter().enumerate() {
        let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>", x(k) - 3.0, H - PAD + 16.0, l.min_support);
    }
    svg.push_str("<text class=\"precision\" x=\"60\" y=\"20\">● precision</text><text class=\"recall\" x=\"160\" y=\"20\">● recall</text></svg>\n");
    svg
}

/// A horizontal bar per node, as long as what it adds (0 to 1; a negative value is
/// drawn leftwards from the axis in another colour).
fn nodes_chart(nodes: &[NodeFigures]) -> String {
    let row = 26.0;
    let height = PAD + row * nodes.len() as f64;
    let (label, axis, span) = (150.0, 160.0, W - 200.0);
    let mut svg = format!(
        "<svg class=\"nodes-chart\" role=\"img\" width=\"{W}\" height=\"{height}\" viewBox=\"0 0 {W} {height}\">\
         <title>What each node adds to the union's recall</title>\n\
         <line class=\"axis\" x1=\"{axis}\" y1=\"8\" x2=\"{axis}\" y2=\"{}\"/>\n",
        height - 8.0
    );
    for (k, node) in nodes.iter().enumerate() {
        let top = 16.0 + k as f64 * row;
        let width = node.adds.abs().min(1.0) * span;
        let (x, class) = if node.adds < 0.0 { (axis - width, "bar adds negative") } else { (axis, "bar adds") };
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect class=\"{class}\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{width:.1}\" height=\"{:.1}\"><title>{} adds {:+.3}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\">{:+.3}</text>",
            label,
            top + 14.0,
            esc(&node.node),
            row - 8.0,
            esc(&node.node),
            node.adds,
            axis + width.max(0.0) + 6.0,
            top + 14.0,
            node.adds
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn case_table(s: &EvalSummary) -> String {
    let mut out = String::from(
        "<table class=\"cases\"><thead><tr><th>case</th><th>status</th><th>matched</th><th>extra</th><th>missed</th>\
         <th>missed issues</th><th>extra findings</th></tr></thead><tbody>\n",
    );
    for c in &s.cases_detail {
        let missed: Vec<String> =
            c.missed.iter().map(|m| esc(&format!("{}:{} {}", m.file, m.line, m.description))).collect();
        let extra: Vec<String> =
            c.extra.iter().map(|f| esc(&format!("{}:{} {}", f.file, f.line, f.description))).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.id),
            esc(&c.status),
            c.counts.true_positives,
            c.counts.false_positives,
            c.counts.false_negatives,
            missed.join("<br>"),
            extra.join("<br>")
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use conclave_shared::eval::{
        CaseDetail, Counts, FoundRef, Interval, Intervals, MatchingSettings, SUMMARY_FORMAT,
    };

    /// A summary of 2 support levels, 2 nodes and 2 cases, one finding worded to break markup.
    pub(crate) fn sample() -> EvalSummary {
        let ci = Interval { low: 0.25, high: 0.75 };
        let counts = Counts { true_positives: 1, false_positives: 1, false_negatives: 1 };
        let case = |id: &str| CaseDetail {
            id: id.into(),
            run_id: None,
            status: "succeeded".into(),
            error: None,
            counts,
            matched: Vec::new(),
            missed: Vec::new(),
            extra: vec![FoundRef {
                node: "writer".into(),
                raised_by: None,
                file: "a.rs".into(),
                line: 3,
                severity: None,
                description: "a | b <script>alert('x')</script>".into(),
                support: Some(1),
            }],
            by_node: Default::default(),
        };
        let node = |name: &str, adds: f64, result: bool| NodeFigures {
            node: name.into(),
            result,
            findings: 2,
            precision: 0.5,
            recall: 0.5,
            union_recall_without: 0.5 - adds,
            adds,
        };
        EvalSummary {
            format: SUMMARY_FORMAT,
            dataset: "d".into(),
            conclave: "c".into(),
            matching: MatchingSettings { window: 3, threshold: Some(0.24), judge: None, resamples: 1000, seed: 1 },
            min_support: 0,
            cases: 2,
            precision: 0.5,
            recall: 0.5,
            f1: 0.5,
            counts,
            ci95: Intervals { precision: ci, recall: ci, f1: ci },
            by_node: vec![node("security", 0.25, false), node("writer", 0.0, true)],
            by_support: vec![
                SupportFigures { min_support: 1, findings: 4, precision: 0.5, recall: 0.5 },
                SupportFigures { min_support: 2, findings: 1, precision: 1.0, recall: 0.25 },
            ],
            by_severity: Default::default(),
            cost: None,
            tokens: Default::default(),
            cases_detail: vec![case("one"), case("two")],
        }
    }

    #[test]
    fn the_charts_have_an_element_per_level_and_node_and_text_is_escaped() {
        let page = summary_html(&sample());
        assert_eq!(page.matches("<circle class=\"point precision\"").count(), 2);
        assert_eq!(page.matches("<circle class=\"point recall\"").count(), 2);
        assert_eq!(page.matches("<polyline").count(), 2);
        assert_eq!(page.matches("<rect class=\"bar adds").count(), 2);
        assert_eq!(page.matches("<tr><td>").count(), 3 + 2, "three headline rows, two cases");
        assert!(!page.contains("<script>") && page.contains("&lt;script&gt;alert(&#39;x&#39;)"), "escaped");
        assert!(!page.contains("http"), "no external resource");
        let empty = EvalSummary { by_support: Vec::new(), by_node: Vec::new(), ..sample() };
        let page = summary_html(&empty);
        assert!(!page.contains("NaN") && page.contains("<svg"), "empty charts draw without dividing by zero");
    }
}
