//! Turns a conclave into an executable plan: node indices, adjacency, resolved
//! providers and schemas, compiled validators. Everything that can be wrong with a
//! conclave is found here, before the run is created.

use conclave_shared::{AgentConfig, Compatibility, Conclave, LoweringNote, NodeKind, NoteKind, OutputMode};
use petgraph::graph::DiGraph;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

use super::EngineError;
use crate::providers::{Provider, ProviderRegistry, SchemaSpec, ToolSpec};
use crate::review::findings_field;
use crate::schema::contract::render_contract;
use crate::schema::walk::escape;
use crate::schema::{LowerTarget, SchemaCatalog, check_schema, lower, normalize};
use crate::tools::ToolRunner;

/// How an agent's answer is constrained and checked.
#[derive(Debug)]
pub struct OutputContract {
    /// The schema as the author wrote it (resolved from its reference); answers are
    /// validated against this.
    pub original: Arc<Value>,
    /// `original`, compiled once for the run.
    pub validator: Arc<jsonschema::Validator>,
    /// The lowered schema for the provider's native structured output, if used.
    pub native: Option<SchemaSpec>,
    /// Whether nulls the OpenAI lowering forced onto optional properties are removed.
    pub restore_nulls: bool,
    /// The dialect (`openai`, `anthropic`, ...) or `prompt` for the prompt contract.
    pub target: String,
    /// What lowering changed.
    pub notes: Vec<LoweringNote>,
    /// The root property holding findings, when the output is findings-shaped.
    pub findings_field: Option<String>,
}

/// An agent ready to call.
#[derive(Debug)]
pub struct AgentPlan {
    /// The node's configuration.
    pub config: AgentConfig,
    /// The provider it calls.
    pub provider: Arc<dyn Provider>,
    /// The system prompt sent, with the prompt contract appended when used.
    pub system_prompt: String,
    /// The output contract, when the agent has a schema.
    pub contract: Option<OutputContract>,
    /// Tools offered to the model.
    pub tools: Vec<ToolSpec>,
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

/// What a plan is built with besides the conclave.
#[derive(Debug, Clone, Default)]
pub struct PlanContext {
    /// Concurrent calls per provider, before the conclave's own settings.
    pub provider_limits: HashMap<String, usize>,
    /// Default node timeout.
    pub node_timeout: Option<Duration>,
    /// The tools agents may call, if this run offers any.
    pub tools: Option<Arc<dyn ToolRunner>>,
    /// For review runs: the files of the change, which findings may cite.
    pub changed_files: Option<Vec<String>>,
}

/// Builds the plan, refusing duplicate ids, dangling edges, cycles, unknown or
/// unconfigured providers and unusable schemas.
pub fn build_plan(
    conclave: &Conclave,
    providers: &ProviderRegistry,
    schemas: &SchemaCatalog,
    limits: &PlanContext,
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
                    .and_then(|()| provider.check_model(&config.model))
                    .map_err(|e| EngineError::Provider { node_id: node.id.clone(), message: e.to_string() })?;
                let contract = match resolve_schema(&node.id, config, schemas)? {
                    Some(schema) => {
                        let narrow = limits
                            .changed_files
                            .as_deref()
                            .filter(|_| conclave.settings.diff_tightening != Some(false));
                        Some(output_contract(&node.id, config, provider.as_ref(), schema, narrow)?)
                    }
                    None => None,
                };
                let tools = agent_tools(&node.id, config, provider.as_ref(), limits.tools.as_deref())?;
                let timeout = config
                    .timeout_secs
                    .or(conclave.settings.node_timeout_secs)
                    .map(Duration::from_secs)
                    .or(limits.node_timeout);
                let system_prompt = match &contract {
                    Some(c) if c.native.is_none() => {
                        let rule = render_contract(&c.original);
                        if config.system_prompt.is_empty() {
                            rule
                        } else {
                            format!("{}\n\n{rule}", config.system_prompt)
                        }
                    }
                    _ => config.system_prompt.clone(),
                };
                Some(Arc::new(AgentPlan {
                    config: config.clone(),
                    provider_limit: provider_limit(&config.provider),
                    provider,
                    system_prompt,
                    contract,
                    tools,
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

/// Decides how the schema reaches the model (native or prompt contract), lowers it,
/// and refuses in `strict` compatibility mode when lowering would lose meaning.
fn output_contract(
    node_id: &str,
    config: &AgentConfig,
    provider: &dyn Provider,
    mut schema: Value,
    changed_files: Option<&[String]>,
) -> Result<OutputContract, EngineError> {
    let schema_error = |message: String| EngineError::Schema { node_id: node_id.into(), message };
    let findings_field = findings_field(&schema);
    let narrowed = match (&findings_field, changed_files) {
        (Some(field), Some(files)) => narrow_files(&mut schema, field, files),
        _ => None,
    };
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| schema_error(format!("output schema does not compile: {e}")))?;
    let name = config.output_schema_ref.clone().unwrap_or_else(|| format!("{node_id}_output"));
    let wants_native = config.output_mode.unwrap_or_default() == OutputMode::Native;
    let (native, target, notes, restore_nulls) = match provider.capabilities().native_schema.filter(|_| wants_native) {
        Some(target) => {
            let lowered = lower(&schema, target).map_err(|e| schema_error(e.to_string()))?;
            let restore = target == LowerTarget::OpenAi && lowered.native;
            let native =
                lowered.native.then(|| SchemaSpec { name: name.clone(), schema: Arc::new(lowered.schema.clone()) });
            (native, target.as_str().to_string(), lowered.notes, restore)
        }
        None => {
            normalize(&schema).map_err(|e| schema_error(e.to_string()))?;
            (None, "prompt".to_string(), Vec::new(), false)
        }
    };
    let mut notes = notes;
    if let Some(pointer) = narrowed {
        let count = changed_files.map_or(0, <[String]>::len);
        let message =
            format!("`file` narrowed to the {count} file(s) of the change (switch off with settings.diff_tightening)");
        notes.insert(0, LoweringNote { path: pointer, kind: NoteKind::Tightened, message });
    }
    if config.compatibility.unwrap_or_default() == Compatibility::Strict {
        let losses: Vec<String> = notes.iter().filter(|n| n.kind.loses_meaning()).map(|n| format!("  {n}")).collect();
        if !losses.is_empty() {
            return Err(schema_error(format!(
                "strict compatibility: provider `{}` cannot express the whole output schema:\n{}\nadapt the schema, or set \"compatibility\": \"lossy\" to accept these changes",
                provider.name(),
                losses.join("\n")
            )));
        }
    }
    let target = if native.is_some() { target } else { "prompt".to_string() };
    Ok(OutputContract {
        original: Arc::new(schema),
        validator: Arc::new(validator),
        native,
        restore_nulls,
        target,
        notes,
        findings_field,
    })
}

/// Restricts the `file` property of the findings items to `files`; returns the JSON
/// pointer changed, or `None` when the schema has no such property.
fn narrow_files(schema: &mut Value, field: &str, files: &[String]) -> Option<String> {
    let items_pointer = format!("/properties/{}/items", escape(field));
    let items = schema.pointer(&items_pointer)?;
    let target = match items.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference.strip_prefix('#')?.to_string(),
        None => items_pointer,
    };
    let pointer = format!("{target}/properties/file");
    let file = schema.pointer_mut(&pointer)?.as_object_mut()?;
    file.insert("enum".into(), Value::Array(files.iter().map(|f| Value::String(f.clone())).collect()));
    Some(pointer)
}

/// The tool specs offered to an agent.
fn agent_tools(
    node_id: &str,
    config: &AgentConfig,
    provider: &dyn Provider,
    runner: Option<&dyn ToolRunner>,
) -> Result<Vec<ToolSpec>, EngineError> {
    if config.tools.is_empty() || !provider.capabilities().tools {
        return Ok(Vec::new());
    }
    let Some(runner) = runner else {
        return Err(EngineError::Invalid(format!(
            "agent `{node_id}` lists tools ({}) but this run has no tool sandbox; remove `tools` or run it where tools are available",
            config.tools.join(", ")
        )));
    };
    runner
        .specs(&config.tools)
        .map_err(|unknown| EngineError::Invalid(format!("agent `{node_id}`: unknown tool `{unknown}`")))
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
