//! For the stores' migration tests: a run that ended with every kind of node a run
//! ends with (reused, succeeded after a failed attempt, stopped with the run, never
//! started), as the node rows of earlier schema versions held it.

use conclave_core::testing::conformance::sample_conclave;
use conclave_shared::{EventKind, NodeOutput, NodeSummary, RunEvent, RunRecord, RunStatus, Usage};
use serde_json::json;

/// The run `id`, folded from its events.
pub(crate) fn ended_run(id: &str) -> RunRecord {
    let mut record = RunRecord::new(id.into(), sample_conclave(), json!({}), 1);
    let usage = Usage { input_tokens: 9, output_tokens: 5, cost_usd: Some(0.5) };
    let kinds = [
        EventKind::NodeReused {
            node_id: "in".into(),
            from_run: "r0".into(),
            output: NodeOutput::Text("earlier \"quoted\"\nlines".into()),
            input: Some("earlier input".into()),
        },
        EventKind::NodeStarted { node_id: "a".into(), input: Some("## Run input\n\nhello".into()) },
        EventKind::AttemptFailed {
            node_id: "a".into(),
            attempt: 1,
            errors: vec!["/x: missing".into()],
            raw: "{}".into(),
            usage: Usage { input_tokens: 4, output_tokens: 2, cost_usd: None },
        },
        EventKind::NodeCompleted {
            node_id: "a".into(),
            output: NodeOutput::Json(json!({"x": [1, 2]})),
            usage,
            duration_ms: 2,
        },
        EventKind::NodeStarted { node_id: "b".into(), input: None },
        EventKind::RunFinished { status: RunStatus::Cancelled, failed_node: None, error: None },
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        record.apply(&RunEvent { run_id: id.into(), seq: i as u64 + 1, at_ms: 1000 + i as u64, kind });
    }
    record
}

/// A node's JSON-valued columns (`output_json`, `usage_json`) as the rows held them.
pub(crate) fn json_columns(node: &NodeSummary) -> (Option<String>, Option<String>) {
    let text = |v: serde_json::Result<String>| v.expect("serializes");
    (
        node.output.as_ref().map(|o| text(serde_json::to_string(o))),
        node.usage.as_ref().map(|u| text(serde_json::to_string(u))),
    )
}
