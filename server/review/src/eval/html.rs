//! An eval's summary as one self-contained HTML page: the headline figures with their
//! intervals, SVG charts drawn here (precision and recall against min-support, a bar
//! per node of what it adds) and the case table. No script, no external resource.

use conclave_shared::eval::{CaseDetail, EvalSummary, NodeFigures, SupportFigures};
use std::fmt::Write;

/// The page: one HTML file with its style inline and its charts as inline SVG, the
/// same bytes for the same summary.
pub fn summary_html(s: &EvalSummary) -> String {
    let title = format!("Eval of {} on {}", s.conclave, s.dataset);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{STYLE}</style></head>\
         <body>\n<h1>{t}</h1>\n",
        t = esc(&title)
    );
    out.push_str(&headline(s));
    out.push_str("<h2>Precision and recall against min-support</h2>\n");
    out.push_str(&support_chart(&s.by_support));
    out.push_str("<h2>What each node adds to the union's recall</h2>\n");
    out.push_str(&nodes_chart(&s.by_node));
    out.push_str("<h2>Cases</h2>\n");
    out.push_str(&case_table(&s.cases_detail));
    out.push_str("</body></html>\n");
    out
}

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

/// A figure to draw: a value that is not a number is drawn as 0 rather than as
/// coordinates the browser drops.
fn drawn(value: f64) -> f64 {
    if value.is_finite() { value } else { 0.0 }
}

/// Only local fonts, no `url(...)`: the page fetches nothing.
const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1d2330;max-width:70rem}\
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccd;padding:.25rem .5rem;text-align:left;\
vertical-align:top}td.n{text-align:right}td.list{font-size:12px}svg{display:block;margin:1rem 0}\
.axis{stroke:#556;stroke-width:1}.grid{stroke:#dde;stroke-width:1}polyline{fill:none;stroke-width:2}\
.precision{stroke:#1f6feb;fill:#1f6feb}.recall{stroke:#d1242f;fill:#d1242f}text.precision,text.recall{stroke:none}\
.bar{fill:#2da44e}.bar.negative{fill:#d1242f}text{font-size:12px;fill:#1d2330}text.empty{fill:#667}";

fn headline(s: &EvalSummary) -> String {
    let mut out = String::from(
        "<table class=\"headline\"><thead><tr><th>figure</th><th>value</th><th>95% interval</th></tr></thead><tbody>\n",
    );
    let _ = writeln!(out, "<tr><td>cases</td><td class=\"n\">{}</td><td></td></tr>", s.cases);
    for (name, value, ci) in
        [("precision", s.precision, &s.ci95.precision), ("recall", s.recall, &s.ci95.recall), ("F1", s.f1, &s.ci95.f1)]
    {
        let _ = writeln!(
            out,
            "<tr><td>{name}</td><td class=\"n\">{value:.3}</td><td>{:.3}–{:.3}</td></tr>",
            ci.low, ci.high
        );
    }
    let c = &s.counts;
    for (name, count) in
        [("TP (matched)", c.true_positives), ("FP (extra)", c.false_positives), ("FN (missed)", c.false_negatives)]
    {
        let _ = writeln!(out, "<tr><td>{name}</td><td class=\"n\">{count}</td><td></td></tr>");
    }
    let cost = s.cost.map_or_else(|| "unknown".to_string(), |c| format!("${c:.4}"));
    let _ = writeln!(out, "<tr><td>cost</td><td class=\"n\">{cost}</td><td></td></tr>");
    let _ = writeln!(
        out,
        "<tr><td>tokens (in / out)</td><td class=\"n\">{} / {}</td><td></td></tr>\n</tbody></table>",
        s.tokens.input, s.tokens.output
    );
    out
}

/// The support chart's size and the plot area inside it.
const W: f64 = 520.0;
const H: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 32.0;
const BOTTOM: f64 = 48.0;

/// Where level `k` of `n` sits across the plot (the middle when there is one).
fn level_x(k: usize, n: usize) -> f64 {
    let (from, to) = (LEFT + 20.0, W - RIGHT - 20.0);
    if n <= 1 { (from + to) / 2.0 } else { from + k as f64 * (to - from) / (n - 1) as f64 }
}

/// Where a figure from 0 to 1 sits up the plot.
fn value_y(v: f64) -> f64 {
    H - BOTTOM - drawn(v).clamp(0.0, 1.0) * (H - TOP - BOTTOM)
}

/// Precision and recall (0 to 1) at each support level, as points joined by lines.
fn support_chart(levels: &[SupportFigures]) -> String {
    let mut svg = format!(
        "<svg class=\"chart support-chart\" role=\"img\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">\
         <title>Precision and recall against min-support</title>\n"
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let y = value_y(tick);
        let _ = writeln!(
            svg,
            "<line class=\"grid\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{tick:.2}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let (bottom, mid) = (H - BOTTOM, (LEFT + W - RIGHT) / 2.0);
    let _ = writeln!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{bottom}\" x2=\"{r}\" y2=\"{bottom}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{bottom}\"/>\n\
         <text x=\"{mid}\" y=\"{label}\" text-anchor=\"middle\">min support</text>\
         <text x=\"14\" y=\"{middle}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {middle})\">value</text>",
        r = W - RIGHT,
        label = H - 10.0,
        middle = (TOP + bottom) / 2.0
    );
    if levels.is_empty() {
        let _ = writeln!(
            svg,
            "<text class=\"empty\" x=\"{mid}\" y=\"{:.1}\" text-anchor=\"middle\">no support levels</text>",
            (TOP + bottom) / 2.0
        );
    }
    let n = levels.len();
    for (k, l) in levels.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            level_x(k, n),
            bottom + 16.0,
            l.min_support
        );
    }
    series(&mut svg, levels, "precision", |l| l.precision);
    series(&mut svg, levels, "recall", |l| l.recall);
    svg.push_str(
        "<text class=\"precision\" x=\"64\" y=\"18\">● precision</text>\
         <text class=\"recall\" x=\"164\" y=\"18\">● recall</text></svg>\n",
    );
    svg
}

/// One figure's line and its points, each point titled with its value.
fn series(svg: &mut String, levels: &[SupportFigures], class: &str, value: fn(&SupportFigures) -> f64) {
    let n = levels.len();
    let points: Vec<String> =
        levels.iter().enumerate().map(|(k, l)| format!("{:.1},{:.1}", level_x(k, n), value_y(value(l)))).collect();
    let _ = writeln!(svg, "<polyline class=\"{class}\" points=\"{}\"/>", points.join(" "));
    for (k, l) in levels.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<circle class=\"point {class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>{class} {:.3} at min support {} \
             ({} findings)</title></circle>",
            level_x(k, n),
            value_y(value(l)),
            value(l),
            l.min_support,
            l.findings
        );
    }
}

/// The node chart's row height, where its names end and where its bars start, and
/// the length of a bar of 1.
const ROW: f64 = 26.0;
const NAME_END: f64 = 170.0;
const BAR_START: f64 = 180.0;
const BAR_SPAN: f64 = 280.0;
/// The most characters of a node's name drawn beside its bar (its title has all).
const NAME_CHARS: usize = 24;

/// A horizontal bar per node, as long as what it adds (0 to 1; a negative value is
/// drawn leftwards from the axis in another colour).
fn nodes_chart(nodes: &[NodeFigures]) -> String {
    let rows = nodes.len().max(1) as f64;
    let (top, bottom) = (12.0, 12.0 + rows * ROW);
    let height = bottom + 36.0;
    let mut svg = format!(
        "<svg class=\"chart nodes-chart\" role=\"img\" width=\"{W}\" height=\"{height}\" viewBox=\"0 0 {W} {height}\">\
         <title>What each node adds to the union's recall</title>\n\
         <line class=\"axis\" x1=\"{BAR_START}\" y1=\"{top}\" x2=\"{BAR_START}\" y2=\"{bottom}\"/>\
         <line class=\"axis\" x1=\"{BAR_START}\" y1=\"{bottom}\" x2=\"{end}\" y2=\"{bottom}\"/>\n\
         <text x=\"{BAR_START}\" y=\"{tick}\" text-anchor=\"middle\">0</text>\
         <text x=\"{end}\" y=\"{tick}\" text-anchor=\"middle\">1</text>\
         <text x=\"{mid}\" y=\"{label}\" text-anchor=\"middle\">adds to the union's recall</text>\n",
        end = BAR_START + BAR_SPAN,
        tick = bottom + 14.0,
        mid = BAR_START + BAR_SPAN / 2.0,
        label = bottom + 30.0
    );
    if nodes.is_empty() {
        let _ = writeln!(
            svg,
            "<text class=\"empty\" x=\"{NAME_END}\" y=\"{:.1}\" text-anchor=\"end\">no nodes</text>",
            top + 17.0
        );
    }
    for (k, node) in nodes.iter().enumerate() {
        let y = top + 4.0 + k as f64 * ROW;
        let adds = drawn(node.adds);
        let width = adds.abs().min(1.0) * BAR_SPAN;
        let (x, class) = if adds < 0.0 { (BAR_START - width, "bar adds negative") } else { (BAR_START, "bar adds") };
        let name = esc(&node.node);
        let label = if node.result { format!("{} (result)", shortened(&node.node)) } else { shortened(&node.node) };
        let _ = writeln!(
            svg,
            "<text x=\"{NAME_END}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect class=\"{class}\" data-node=\"{name}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\">\
             <title>{name} adds {adds:+.3}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\">{adds:+.3}</text>",
            y + 13.0,
            esc(&label),
            ROW - 8.0,
            BAR_START + width + 6.0,
            y + 13.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// A node's name cut to [`NAME_CHARS`].
fn shortened(name: &str) -> String {
    if name.chars().count() <= NAME_CHARS {
        return name.to_string();
    }
    let cut: String = name.chars().take(NAME_CHARS - 1).collect();
    format!("{cut}…")
}

fn case_table(cases: &[CaseDetail]) -> String {
    let mut out = String::from(
        "<table class=\"cases\"><thead><tr><th>case</th><th>status</th><th>TP</th><th>FP</th><th>FN</th>\
         <th>missed issues</th><th>extra findings</th></tr></thead><tbody>\n",
    );
    let item =
        |file: &str, line: u64, description: &str| format!("<code>{}:{line}</code> {}", esc(file), esc(description));
    for c in cases {
        let status = match &c.error {
            Some(error) => format!("{}: {}", esc(&c.status), esc(error)),
            None => esc(&c.status),
        };
        let missed: Vec<String> = c.missed.iter().map(|m| item(&m.file, m.line, &m.description)).collect();
        let extra: Vec<String> = c.extra.iter().map(|f| item(&f.file, f.line, &f.description)).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{status}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"list\">{}</td><td class=\"list\">{}</td></tr>",
            esc(&c.id),
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
        Counts, FoundRef, GoldenRef, Interval, Intervals, MatchingSettings, SUMMARY_FORMAT, SeverityFigures, Tokens,
    };

    /// A summary of 3 support levels, 3 nodes (the result's adds nothing), 2 severities
    /// and 2 cases (the second failed), with text worded to break markup and tables.
    pub(crate) fn sample() -> EvalSummary {
        let ci = Interval { low: 0.25, high: 0.75 };
        let counts = Counts { true_positives: 1, false_positives: 1, false_negatives: 1 };
        let case = |id: &str, error: Option<&str>| CaseDetail {
            id: id.into(),
            run_id: None,
            status: if error.is_some() { "failed" } else { "succeeded" }.into(),
            error: error.map(Into::into),
            counts,
            matched: Vec::new(),
            missed: vec![GoldenRef {
                index: 0,
                file: "src/lib.rs".into(),
                line: 12,
                description: "the lock is held across\nan await | and a path ends in C:\\".into(),
                severity: Some("high".into()),
            }],
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
        let level = |min_support: u32, findings: u64, precision: f64, recall: f64| SupportFigures {
            min_support,
            findings,
            precision,
            recall,
        };
        let severity = |findings: u64| SeverityFigures {
            findings,
            matched_findings: 1,
            issues: 2,
            matched_issues: 1,
            precision: 1.0 / findings as f64,
            recall: 0.5,
        };
        EvalSummary {
            format: SUMMARY_FORMAT,
            dataset: "data/set".into(),
            conclave: "a&b \"q\" 'r'".into(),
            matching: MatchingSettings { window: 3, threshold: Some(0.24), judge: None, resamples: 1000, seed: 1 },
            min_support: 0,
            cases: 2,
            precision: 0.5,
            recall: 0.5,
            f1: 0.5,
            counts,
            ci95: Intervals { precision: ci, recall: ci, f1: ci },
            by_node: vec![node("security", 0.25, false), node("correctness", 0.125, false), node("writer", 0.0, true)],
            by_support: vec![level(1, 4, 0.5, 0.5), level(2, 2, 0.75, 0.25), level(3, 1, 1.0, 0.125)],
            by_severity: [("high".to_string(), severity(2)), ("low".to_string(), severity(4))].into(),
            cost: Some(0.0125),
            tokens: Tokens { input: 1200, output: 340 },
            cases_detail: vec![case("one", None), case("two", Some("the provider timed out"))],
        }
    }

    /// The part of `page` from `start` to the first `end` after it.
    fn section<'a>(page: &'a str, start: &str, end: &str) -> &'a str {
        let from = page.find(start).unwrap_or_else(|| panic!("{start} in {page}"));
        let to = page[from..].find(end).unwrap_or_else(|| panic!("{end} after {start}")) + from;
        &page[from..to]
    }

    #[test]
    fn each_chart_has_an_element_per_level_and_node_and_the_case_table_a_row_per_case() {
        let page = summary_html(&sample());
        let support = section(&page, "<svg class=\"chart support-chart\"", "</svg>");
        assert_eq!(support.matches("<circle class=\"point precision\"").count(), 3);
        assert_eq!(support.matches("<circle class=\"point recall\"").count(), 3);
        assert_eq!(support.matches("<polyline").count(), 2);
        assert!(
            support.contains("<polyline class=\"precision\" points=\"76.0,122.0 276.0,77.0 476.0,32.0\"/>"),
            "{support}"
        );
        assert!(support.contains(">min support</text>") && support.contains(">1.00</text>"), "axes are labelled");
        let nodes = section(&page, "<svg class=\"chart nodes-chart\"", "</svg>");
        assert_eq!(nodes.matches("<rect class=\"bar adds\"").count(), 3);
        assert!(nodes.contains("data-node=\"security\" x=\"180.0\" y=\"16.0\" width=\"70.0\""), "{nodes}");
        assert!(nodes.contains("data-node=\"writer\" x=\"180.0\" y=\"68.0\" width=\"0.0\""), "{nodes}");
        assert!(nodes.contains(">writer (result)</text>"), "{nodes}");
        assert_eq!(page.matches("role=\"img\"").count(), 2);
        assert_eq!(page.matches("\"img\" width").count(), 2);
        for chart in [support, nodes] {
            assert!(chart.contains("viewBox") && chart.contains("><title>"), "an accessible title: {chart}");
        }
        let cases = section(&page, "<table class=\"cases\">", "</table>");
        assert_eq!(section(cases, "<tbody>", "</tbody>").matches("<tr>").count(), 2);
        assert!(cases.contains("<td>failed: the provider timed out</td>"), "{cases}");
        let headline = section(&page, "<table class=\"headline\">", "</table>");
        assert!(headline.contains("<tr><td>precision</td><td class=\"n\">0.500</td><td>0.250–0.750</td></tr>"));
        assert!(headline.contains("<td>cost</td><td class=\"n\">$0.0125</td>") && headline.contains("1200 / 340"));
        assert_eq!(summary_html(&sample()), page, "the same summary gives the same bytes");
    }

    #[test]
    fn every_text_is_escaped_and_nothing_is_fetched() {
        let page = summary_html(&sample());
        assert!(!page.contains("<script"), "no script, and none injected: {page}");
        assert!(page.contains("a | b &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), "{page}");
        assert!(page.contains("<title>Eval of a&amp;b &quot;q&quot; &#39;r&#39; on data/set</title>"), "{page}");
        for external in ["http", "src=", "href=", "url(", "@import", "<link", "<img", "<iframe", "<object"] {
            assert!(!page.contains(external), "`{external}` would fetch something");
        }
    }

    #[test]
    fn empty_lists_and_missing_figures_still_draw() {
        let empty = EvalSummary { by_support: Vec::new(), by_node: Vec::new(), cases_detail: Vec::new(), ..sample() };
        let page = summary_html(&empty);
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches("<circle").count() + page.matches("<rect").count(), 0);
        assert!(page.contains(">no support levels</text>") && page.contains(">no nodes</text>"), "{page}");
        assert!(!page.contains("NaN") && !page.contains("inf"), "nothing divided by zero: {page}");
        let mut odd = sample();
        odd.by_support.truncate(1);
        odd.by_support[0].precision = f64::NAN;
        odd.by_node[0].adds = f64::INFINITY;
        let page = summary_html(&odd);
        assert!(!page.contains("=\"NaN") && !page.contains("=\"inf"), "no coordinate is not a number: {page}");
        assert!(
            page.contains("<circle class=\"point precision\" cx=\"276.0\" cy=\"212.0\""),
            "one level sits in the middle at 0"
        );
    }
}
