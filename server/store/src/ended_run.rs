//! For the stores' migration tests: a run that ended with every kind of node a run
//! ends with (the conformance suite's `every_kind_of_node`), as the node rows of
//! earlier schema versions held it.

use conclave_doubles::conformance::{every_kind_of_node, sample_conclave};
use conclave_shared::{NodeSummary, RunEvent, RunRecord};
use serde_json::json;

/// The run `id`, folded from its events.
pub(crate) fn ended_run(id: &str) -> RunRecord {
    let mut record = RunRecord::new(id.into(), sample_conclave(), json!({}), 1);
    for (i, kind) in every_kind_of_node().into_iter().enumerate() {
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
