//! The one pass that makes a report's model-authored text inert before any format is
//! rendered or stored: descriptions, lanes, reasons, the result's JSON and what the
//! engine's comparisons quote pass the sanitizer (`inert/`) under the link policy the
//! run input records; quotes of code and paths keep their text, with invisible
//! characters escaped in quotes. Dismissals are people's words (the repository's
//! file, a reply by someone with write access) and stay as written; the Markdown
//! report shows them through its whole-document pass. `pipeline::finish_against` calls it once, after
//! anchoring and the baseline comparison, which need the text as the model wrote it.

use conclave_shared::invisible::escape_invisible;
use conclave_shared::{Finding, FindingGroup};
use serde_json::Value;

use super::review_report::ReviewReport;
use crate::inert::{LinkPolicy, sanitize};

/// The run input's key for the forge repository's web URL, the only place links in
/// a report or a posting may point to. Recorded when the review is prepared, so a
/// report built later (by a worker, after an approval) keeps the same links. A
/// record of the run (its name begins with the engine's `RECORD_PREFIX`): no agent
/// sees it, so the prompts of a review do not depend on where its repository lives.
pub const REPOSITORY_URL_INPUT: &str = "_repository_url";

/// The link policy a run input records (none kept without a URL).
pub fn links_of_input(input: &Value) -> LinkPolicy {
    input.get(REPOSITORY_URL_INPUT).and_then(Value::as_str).and_then(LinkPolicy::repository).unwrap_or_default()
}

/// Makes every model-authored text of `report` inert (idempotent: a report read back
/// and sanitized again is unchanged).
pub fn sanitize_report(report: &mut ReviewReport) {
    let links = report.links.clone();
    let text = |s: &mut String| *s = sanitize(s, &links);
    for finding in report.findings.iter_mut().chain(&mut report.absent).chain(&mut report.raised) {
        sanitize_finding(finding, &links);
    }
    for (_, check) in &mut report.checks {
        let groups =
            [&mut check.contradictions, &mut check.disagreements, &mut check.agreements, &mut check.duplicates];
        for group in groups.into_iter().flatten() {
            sanitize_group(group, &links);
        }
    }
    sanitize_json(&mut report.result, None, &links);
    report.degraded.iter_mut().for_each(text);
    report.error.iter_mut().for_each(text);
    for lane in &mut report.analyzers {
        lane.failed.iter_mut().for_each(text);
    }
    // The change's own words: the reason and author of a dismissal it added.
    for refused in &mut report.dismissals_not_applied {
        text(&mut refused.reason);
        text(&mut refused.author);
    }
}

fn sanitize_finding(finding: &mut Finding, links: &LinkPolicy) {
    finding.description = sanitize(&finding.description, links);
    if let Some(lane) = finding.raised_by.as_mut() {
        *lane = sanitize(lane, links);
    }
    if let Some(evidence) = finding.evidence.as_mut() {
        *evidence = escape_invisible(evidence).into_owned();
    }
}

fn sanitize_group(group: &mut FindingGroup, links: &LinkPolicy) {
    group.summary = sanitize(&group.summary, links);
    for finding in &mut group.findings {
        sanitize_finding(finding, links);
    }
}

/// Every string of the result's JSON: paths and other names kept, quotes of code
/// with invisible characters escaped, the rest sanitized as Markdown.
fn sanitize_json(value: &mut Value, key: Option<&str>, links: &LinkPolicy) {
    match value {
        Value::String(s) => match key {
            Some("file" | "path" | "fingerprint" | "severity" | "stance") => {}
            Some("evidence" | "quote" | "code") => *s = escape_invisible(s).into_owned(),
            _ => *s = sanitize(s, links),
        },
        Value::Array(items) => items.iter_mut().for_each(|v| sanitize_json(v, key, links)),
        Value::Object(map) => map.iter_mut().for_each(|(k, v)| sanitize_json(v, Some(k), links)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
