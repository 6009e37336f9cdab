//! reviewdog's rdjsonl: one diagnostic per line for each concern, its fingerprint and
//! anchor state in `original_output`.

use conclave_shared::{Severity, Stance};
use serde_json::json;

use super::review_report::{ReviewReport, fingerprint, lane};

pub(super) fn render(report: &ReviewReport) -> String {
    let mut out = String::new();
    for f in report.findings.iter().filter(|f| f.effective_stance() == Stance::Concern) {
        let severity = match f.severity {
            Some(Severity::Blocker) => "ERROR",
            Some(Severity::Major) => "WARNING",
            _ => "INFO",
        };
        let line = json!({
            "message": f.description,
            "location": {"path": f.file, "range": {"start": {"line": f.line}}},
            "severity": severity,
            "source": {"name": "conclave"},
            "code": {"value": format!("{}/{}", lane(f), f.severity.map_or("unrated", |s| s.as_str()))},
            // rdjsonl has no fingerprint field; reviewdog shows `original_output` as is.
            "original_output": format!("fingerprint: {}; anchor: {}", fingerprint(f), f.anchor.map_or("none", |a| a.as_str()))
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}
