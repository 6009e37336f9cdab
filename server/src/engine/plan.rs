//! Turns a conclave into an executable plan: node indices, adjacency, resolved
//! providers and schemas, compiled validators. Everything that can be wrong with a
//! conclave is found here, before the run is created.

use conclave_shared::{AgentConfig, Conclave, NodeKind};
use petgraph::graph::DiGraph;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

use super::EngineError;
use crate::providers::{Provider, ProviderRegistry};
use crate::schema::{SchemaCatalog, check_schema};

/// An agent ready to call.
#[derive(Debug)]
pub struct AgentPlan {
    /// The node's configuration.
    pub config: AgentConfig,
    /// The provider it calls.
    pub provider: Arc<dyn Provider>,
    /// The resolved output schema (inline or by reference).
    pub schema: Option<Arc<Value>>,
    /// The schema compiled once for the whole run.
    pub validator: Option<Arc<jsonschema::Validator>>,
    /// Per-node timeout.
    pub timeout: Option<Duration>,
    /// Limit on concurrent calls to this agent's provider.
    pub provider_limit: Option<Arc<Semaphore>>,
}

/// One node of the plan.
#[derive(Debug)]
pub struct PlanNode {
    /// Node id.
    pub id: String,
    /// Its kind.
    pub kind: NodeKind,
    /// For agents, how to run them.
    pub agent: Option<Arc<AgentPlan>>,
}

/// An acyclic, fully resolved conclave.
#[derive(Debug)]
pub struct Plan {
    /// Nodes in conclave order.
    pub nodes: Vec<PlanNode>,
    /// Downstream nodes of each node.
    pub successors: Vec<Vec<usize>>,
    /// Upstream nodes of each node, in edge order.
    pub predecessors: Vec<Vec<usize>>,
}

/// Limits that apply while building a plan.
#[derive(Debug, Clone, Default)]
pub struct PlanLimits {
    /// Concurrent calls per provider, before the conclave's own settings.
    pub provider_limits: HashMap<String, usize>,
    /// Default node timeout.
    pub node_timeout: Option<Duration>,
}

/// Builds the plan, refusing duplicate ids, dangling edges, cycles, unknown or
/// unconfigured providers and unusable schemas.
pub fn build_plan(
    conclave: &Conclave,
    providers: &ProviderRegistry,
    schemas: &SchemaCatalog,
    limits: &PlanLimits,
) -> Result<Plan, EngineError> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, node) in conclave.nodes.iter().enumerate() {
        if index.insert(node.id.as_str(), i).is_some() {
            return Err(EngineError::Invalid(format!("duplicate node id `{}`", node.id)));
        }
    }
    let mut graph: DiGraph<usize, ()> = DiGraph::with_capacity(conclave.nodes.len(), conclave.edges.len());
    let gi: Vec<_> = (0..conclave.nodes.len()).map(|i| graph.add_node(i)).collect();
    let mut successors = vec![Vec::new(); conclave.nodes.len()];
    let mut predecessors = vec![Vec::new(); conclave.nodes.len()];
    for edge in &conclave.edges {
        let (Some(&from), Some(&to)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str())) else {
            return Err(EngineError::Invalid(format!("edge `{}` points to a missing node", edge.label())));
        };
        if successors[from].contains(&to) {
            continue;
        }
        graph.add_edge(gi[from], gi[to], ());
        successors[from].push(to);
        predecessors[to].push(from);
    }
    if let Err(cycle) = petgraph::algo::toposort(&graph, None) {
        let id = &conclave.nodes[graph[cycle.node_id()]].id;
        return Err(EngineError::Invalid(format!(
            "the graph has a cycle through `{id}`; run `conclave validate` to see it"
        )));
    }

    let mut semaphores: HashMap<String, Arc<Semaphore>> = HashMap::new();
    let mut provider_limit = |name: &str| -> Option<Arc<Semaphore>> {
        let limit = conclave
            .settings
            .provider_limits
            .get(name)
            .map(|&n| n as usize)
            .or_else(|| limits.provider_limits.get(name).copied())?;
        Some(semaphores.entry(name.to_string()).or_insert_with(|| Arc::new(Semaphore::new(limit.max(1)))).clone())
    };
    let mut nodes = Vec::with_capacity(conclave.nodes.len());
    for node in &conclave.nodes {
        let agent = match (node.kind, &node.agent) {
            (NodeKind::Agent, Some(config)) => {
                let provider = providers.get(&config.provider).ok_or_else(|| EngineError::Provider {
                    node_id: node.id.clone(),
                    message: if providers.known_names().contains(&config.provider) {
                        format!("provider `{}` is not available in this build of Conclave", config.provider)
                    } else {
                        format!("unknown provider `{}`", config.provider)
                    },
                })?;
                provider
                    .check_config()
                    .map_err(|e| EngineError::Provider { node_id: node.id.clone(), message: e.to_string() })?;
                let schema = resolve_schema(&node.id, config, schemas)?;
                let validator = match &schema {
                    Some(s) => Some(Arc::new(jsonschema::validator_for(s).map_err(|e| EngineError::Schema {
                        node_id: node.id.clone(),
                        message: format!("output schema does not compile: {e}"),
                    })?)),
                    None => None,
                };
                let timeout = config
                    .timeout_secs
                    .or(conclave.settings.node_timeout_secs)
                    .map(Duration::from_secs)
                    .or(limits.node_timeout);
                Some(Arc::new(AgentPlan {
                    config: config.clone(),
                    provider_limit: provider_limit(&config.provider),
                    provider,
                    schema: schema.map(Arc::new),
                    validator,
                    timeout,
                }))
            }
            (NodeKind::Agent, None) => {
                return Err(EngineError::Invalid(format!("agent node `{}` has no `agent` configuration", node.id)));
            }
            _ => None,
        };
        nodes.push(PlanNode { id: node.id.clone(), kind: node.kind, agent });
    }
    if !nodes.iter().any(|n| n.kind == NodeKind::Trigger) {
        return Err(EngineError::Invalid("the conclave has no trigger node".into()));
    }
    Ok(Plan { nodes, successors, predecessors })
}

fn resolve_schema(node_id: &str, config: &AgentConfig, schemas: &SchemaCatalog) -> Result<Option<Value>, EngineError> {
    let schema = match (&config.output_schema, &config.output_schema_ref) {
        (Some(_), Some(_)) => {
            return Err(EngineError::Schema {
                node_id: node_id.into(),
                message: "both `output_schema` and `output_schema_ref` are set".into(),
            });
        }
        (Some(inline), None) => inline.clone(),
        (None, Some(reference)) => {
            schemas
                .resolve(reference)
                .map_err(|e| EngineError::Schema { node_id: node_id.into(), message: e.to_string() })?
                .schema
        }
        (None, None) => return Ok(None),
    };
    if let Some(problem) = check_schema(&schema).into_iter().next() {
        let at = if problem.pointer.is_empty() { "/".to_string() } else { problem.pointer };
        return Err(EngineError::Schema {
            node_id: node_id.into(),
            message: format!("invalid output schema at {at}: {}", problem.message),
        });
    }
    Ok(Some(schema))
}
