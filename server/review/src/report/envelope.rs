//! The JSON envelope: the run's status and its result as validated JSON, its schema
//! reference and its canonical text, with provider, model and usage.

use conclave_shared::Usage;
use serde_json::{Map, Value, json};

use super::repeats::{stability_distribution, support_distribution};
use super::review_report::{ReviewReport, anchor_counts};

pub(super) fn render(report: &ReviewReport) -> String {
    let mut total = Usage::default();
    for a in &report.usage {
        total.add(&a.usage);
    }
    let first = report.result_nodes.first().and_then(|id| report.usage.iter().find(|u| &u.node_id == id));
    let totals: Map<String, Value> =
        report.totals().into_iter().map(|(s, n)| (s.as_str().to_string(), json!(n))).collect();
    let checks: Vec<Value> =
        report.checks.iter().map(|(node, check)| json!({"node_id": node, "check": check})).collect();
    let mismatches: Vec<Value> =
        report.mismatches.iter().map(|(node, m)| json!({"node_id": node, "mismatches": m})).collect();
    let mut doc = json!({
        "status": report.status.as_str(),
        "run_id": report.run_id,
        "conclave": report.conclave.0,
        "error": report.error,
        "result": {
            "json": report.result,
            "schema_ref": report.schema_ref,
            "text": canonical(&report.result),
        },
        "provider": first.map(|u| u.provider.clone()),
        "model": first.map(|u| u.model.clone()),
        "usage": total,
        "review": {
            "findings": report.findings,
            "totals": totals,
            "gated_totals": report.gated_totals().into_iter().map(|(s, n)| (s.as_str().to_string(), json!(n))).collect::<Map<String, Value>>(),
            "degraded": !report.degraded.is_empty(),
            "degraded_reasons": report.degraded,
            "baseline": report.baseline,
            "absent": report.absent,
            "samples": report.samples,
            "stability": stability_distribution(report).into_iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<Map<String, Value>>(),
            "min_stability": report.min_stability,
            "min_support": report.min_support,
            "support": support_distribution(report).into_iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<Map<String, Value>>(),
            "repeat": report.repeat,
            "anchors": anchor_counts(&report.findings).into_iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<Map<String, Value>>(),
            "findings_checks": checks,
            "count_mismatches": mismatches,
            "cached": report.usage.iter().filter_map(|u| Some(json!({"node_id": u.node_id, "from_run": u.cached_from.as_ref()?}))).collect::<Vec<_>>(),
            "dialects": report.lowerings.iter().filter_map(|l| Some(json!({"node_id": l.node_id, "dialect": l.dialect?}))).collect::<Vec<_>>(),
            "analyzers": report.analyzers,
            "omitted": report.omitted.iter().map(|(path, bytes)| json!({"path": path, "diff_bytes": bytes})).collect::<Vec<_>>(),
        },
    });
    if let (Some(scope), Some(review)) = (&report.scope, doc.get_mut("review").and_then(Value::as_object_mut)) {
        review.insert("scope".into(), json!(scope));
    }
    // Only a review with a base says which side configured it.
    if let (Some(configuration), Some(review)) =
        (super::configuration::json(report), doc.get_mut("review").and_then(Value::as_object_mut))
    {
        review.insert("configuration".into(), configuration);
    }
    // Only a review that had rules files (or refused some) says which.
    if let (false, Some(review)) = (report.rules.is_empty(), doc.get_mut("review").and_then(Value::as_object_mut)) {
        review.insert("rules".into(), json!(report.rules));
    }
    // Only a change reviewed in parts (or with hunks left out) says so.
    if let (false, Some(review)) = (report.parts.is_empty(), doc.get_mut("review").and_then(Value::as_object_mut)) {
        review.insert("parts".into(), json!(report.parts));
    }
    if let Some(review) = doc.get_mut("review").and_then(Value::as_object_mut) {
        super::impact::json(review, report);
        super::sandboxes::json(review, &report.sandboxes);
        super::input_fits::json(review, &report.input_fits);
    }
    // Only a run with a budget says what it spent against it.
    if let (Some(budget), Some(doc)) = (&report.budget, doc.as_object_mut()) {
        doc.insert("budget".into(), json!(budget));
    }
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// Canonical JSON: object keys sorted at every level, no insignificant whitespace.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}
