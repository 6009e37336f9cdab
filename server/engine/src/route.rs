//! How a route node runs: it tests its cases on its input (each upstream output
//! under the upstream node's id) and passes on the case it took with the
//! non-trigger inputs, which the branch it took receives. Which successors are on
//! that branch is `Plan::takes`; the scheduler skips the others.

use conclave_shared::{NodeOutput, RouteConfig};
use serde_json::{Map, Value, json};

/// The output of a route that took `case` (none when nothing matched), passing on
/// `inputs`: its upstream outputs without the triggers', whose value is the run input
/// every node already gets.
pub fn output(route: &RouteConfig, document: &Value, inputs: Map<String, Value>) -> Value {
    json!({"case": route.choose(document), "inputs": inputs})
}

/// The case a route's output says it took.
pub fn taken_case(output: &NodeOutput) -> Option<String> {
    match output {
        NodeOutput::Json(value) => value.get("case")?.as_str().map(str::to_string),
        NodeOutput::Text(_) => None,
    }
}
