//! Which nodes of a review conclave are its agents, and which of them are its
//! reviewers: the findings-shaped agents a large change's parts and `--samples` run
//! several times, and whose context windows bound a request.

use conclave_catalog::CheckedConclave;
use conclave_shared::NodeKind;

/// The agents `--samples` runs several times: the findings-shaped reviewers that
/// feed another agent (the specialists before a Writer), or, in a conclave without
/// such, every findings-shaped agent.
pub(crate) fn sampled_agents(checked: &CheckedConclave) -> Vec<String> {
    let conclave = checked.conclave();
    let findings_shaped: Vec<String> = agent_ids(checked)
        .into_iter()
        .filter(|id| checked.output(id).is_some_and(|o| o.findings_field.is_some()))
        .collect();
    let feeds_an_agent = |id: &str| {
        conclave.edges.iter().any(|e| e.from == id && conclave.node(&e.to).is_some_and(|n| n.kind == NodeKind::Agent))
    };
    let specialists: Vec<String> = findings_shaped.iter().filter(|id| feeds_an_agent(id)).cloned().collect();
    if specialists.is_empty() { findings_shaped } else { specialists }
}

/// Every agent node's id, in file order.
pub(crate) fn agent_ids(conclave: &CheckedConclave) -> Vec<String> {
    conclave.conclave().nodes.iter().filter(|n| n.agent.is_some()).map(|n| n.id.clone()).collect()
}
