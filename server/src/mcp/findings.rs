//! A stored review's findings as tools return them: read from the run's JSON report
//! (so any server on the same store answers alike), compact or full, and paged by a
//! cursor that is the offset of the page's first finding, each page cut to fit the
//! answer cap.

use serde_json::Value;
use std::collections::BTreeMap;

use super::answers::{FindingItem, MAX_STRUCTURED_CHARS, ReviewAnswer, json_chars};
use super::args::Detail;
use super::context::Refusal;

/// The most findings on one page, whatever their size.
pub const PAGE_FINDINGS: usize = 50;

/// Room left on a page for everything besides the findings.
const PAGE_OVERHEAD: usize = 8_000;

/// The stored review's answer: `report` is its JSON report; the page starts at `cursor`.
pub fn page(report: &str, cursor: Option<&str>, detail: Detail) -> Result<ReviewAnswer, Refusal> {
    let doc: Value = serde_json::from_str(report).map_err(|e| format!("the stored report is not JSON: {e}"))?;
    let run_id = doc.get("run_id").and_then(Value::as_str).unwrap_or_default().to_string();
    let findings = doc.pointer("/review/findings").and_then(Value::as_array).cloned().unwrap_or_default();
    let start = start_of(cursor, findings.len())?;
    let mut items = Vec::new();
    let mut used = PAGE_OVERHEAD;
    for finding in findings.iter().skip(start).take(PAGE_FINDINGS) {
        let mut item = item(finding, detail);
        // A finding whose whole record alone would overflow a page comes compact.
        if json_chars(&item) > MAX_STRUCTURED_CHARS - PAGE_OVERHEAD {
            item.details = None;
        }
        let size = json_chars(&item);
        if used + size > MAX_STRUCTURED_CHARS && !items.is_empty() {
            break;
        }
        used += size;
        items.push(item);
    }
    let end = start + items.len();
    let next_cursor = (end < findings.len()).then(|| end.to_string());
    let note = match &next_cursor {
        Some(next) => format!(
            "findings {}-{} of {}; call get_review with run `{run_id}` and cursor `{next}` for the next page",
            start + 1,
            end,
            findings.len()
        ),
        None => format!("all {} finding(s) returned (from {})", findings.len(), start + 1),
    };
    Ok(ReviewAnswer {
        report_uri: Some(format!("conclave://runs/{run_id}/report.md")),
        status: doc.get("status").and_then(Value::as_str).unwrap_or("succeeded").to_string(),
        totals: totals(&doc),
        total_findings: findings.len(),
        findings: items,
        next_cursor,
        degraded: strings(doc.pointer("/review/degraded_reasons")),
        notices: Vec::new(),
        note,
        run_id,
    })
}

/// Where a page starts: the cursor's offset, refused when it is not one of ours.
fn start_of(cursor: Option<&str>, len: usize) -> Result<usize, Refusal> {
    match cursor {
        None => Ok(0),
        Some(text) => match text.parse::<usize>() {
            Ok(offset) if offset <= len => Ok(offset),
            _ => Err(format!(
                "`{text}` is not a cursor of this review: pass the `next_cursor` of the previous page, or none for the first"
            )),
        },
    }
}

/// One finding as a page holds it.
fn item(finding: &Value, detail: Detail) -> FindingItem {
    let text = |key: &str| finding.get(key).and_then(Value::as_str).map(str::to_string);
    FindingItem {
        severity: text("severity"),
        file: text("file").unwrap_or_default(),
        line: finding.get("line").and_then(Value::as_u64).unwrap_or(0),
        description: text("description").unwrap_or_default(),
        fingerprint: text("fingerprint"),
        details: (detail == Detail::Full).then(|| finding.clone()),
    }
}

fn totals(doc: &Value) -> BTreeMap<String, u64> {
    let Some(totals) = doc.pointer("/review/totals").and_then(Value::as_object) else { return BTreeMap::new() };
    totals.iter().filter_map(|(severity, n)| Some((severity.clone(), n.as_u64()?))).collect()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}
