//! Turns a checked conclave into an executable plan: node indices and adjacency, and
//! for each agent its provider, output contract and tools. The graph was checked when
//! the conclave was loaded; what is found here is what only a run can know: whether
//! each provider is compiled in and configured, whether its schema dialect can carry
//! the agent's schema, and whether the run offers the agent's tools.

use conclave_catalog::CheckedConclave;
use conclave_core::{Provider, ProviderRegistry, SchemaSpec, ToolRunner, ToolSpec};
use conclave_schema::contract::render_contract;
use conclave_schema::{ContractSpec, OutputContract, output_contract};
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::McpToolRef;
use conclave_shared::{
    AgentConfig, ApprovalConfig, CommandConfig, CommandParse, Compatibility, DialectSetting, Edge, LoopConfig, Node,
    NodeKind, OutputMode, RouteConfig,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::command::CommandPlan;
use crate::config::{EngineConfig, MAX_SAMPLES, RunOptions, Samples};
use crate::start_error::StartError;

/// An agent ready to call.
#[derive(Debug)]
pub struct AgentPlan {
    /// The node's configuration, shared with each request to its provider.
    pub config: Arc<AgentConfig>,
    /// The provider it calls.
    pub provider: Arc<dyn Provider>,
    /// What the agent's conclave tells every agent first (its `shared_prompt`
    /// setting; empty when unset), before the run input.
    pub shared_prompt: String,
    /// The system prompt sent, with the prompt contract appended when used.
    pub system_prompt: String,
    /// For agents whose server may take the schema in several dialects: the dialect
    /// setting and the server, and the system prompt with the contract appended for
    /// the dialects that carry it in the prompt.
    pub dialects: Option<AgentDialects>,
    /// The output contract, when the agent has a schema.
    pub contract: Option<OutputContract>,
    /// The schema sent through the provider's native structured output, if used.
    pub native_schema: Option<SchemaSpec>,
    /// Tools offered to the model.
    pub tools: Vec<ToolSpec>,
    /// The MCP tools it lists (`mcp:SERVER/TOOL`), offered once their servers are
    /// connected in the run.
    pub mcp_tools: Vec<McpToolRef>,
    /// The entries of the MCP servers those tools are on, from the agent's conclave.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// For a provider that caches prompts: the tools of every agent of the conclave
    /// on that provider, in one order, sent in each of their calls so that all their
    /// prompts start alike (only `tools` may be called). Empty otherwise.
    pub cache_tools: Vec<ToolSpec>,
    /// Per-node timeout.
    pub timeout: Option<Duration>,
    /// How many times the agent runs (`RunOptions::samples`); 1 but for sampled agents.
    pub samples: u32,
}

/// How an agent's schema reaches a server that may take it in several dialects.
#[derive(Debug, Clone)]
pub struct AgentDialects {
    /// The server's base URL.
    pub endpoint: String,
    /// The agent's setting, or its provider's.
    pub setting: DialectSetting,
    /// The system prompt with the prompt contract appended.
    pub prompt_with_contract: String,
    /// The schema sent in the `json_object_schema` dialect: lowered for llama.cpp's
    /// schema-to-grammar conversion (which llama-cpp-python's server uses), since the
    /// servers that take this dialect build a grammar from it. The OpenAI lowering's
    /// forced nulls would only confuse it.
    pub object_schema: Option<SchemaSpec>,
}

impl AgentPlan {
    /// Whether the agent may call any tool, built-in or MCP.
    pub fn has_tools(&self) -> bool {
        !self.tools.is_empty() || !self.mcp_tools.is_empty()
    }

    /// The root property of the agent's findings, when its output is findings-shaped.
    pub fn findings_field(&self) -> Option<&str> {
        self.contract.as_ref()?.findings_field.as_deref()
    }
}

/// One node of the plan.
#[derive(Debug)]
pub struct PlanNode {
    /// Node id.
    pub id: String,
    /// Its label, the name people know it by.
    pub label: String,
    /// Its kind.
    pub kind: NodeKind,
    /// For agents, how to run them.
    pub agent: Option<Arc<AgentPlan>>,
    /// For routes, their cases.
    pub route: Option<Arc<RouteConfig>>,
    /// For commands, how to run them.
    pub command: Option<Arc<CommandPlan>>,
    /// For loops, their body and when they stop.
    pub repeat: Option<Arc<LoopPlan>>,
    /// For approval nodes, what the approver is asked and how long they have.
    pub approval: Option<ApprovalConfig>,
    /// For `conclave` nodes, the plan of the conclave they run.
    pub child: Option<Arc<Plan>>,
}

/// A loop ready to run: its configuration and the plan of its body.
#[derive(Debug)]
pub struct LoopPlan {
    /// When it stops, and how many times it may run.
    pub config: LoopConfig,
    /// The body's nodes and edges, planned like a conclave of their own.
    pub body: Arc<Plan>,
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
    /// The cases that take each edge out of a route, by (route, successor).
    pub cases: HashMap<(usize, usize), Vec<String>>,
}

impl Plan {
    /// Every node of the plan and of its loops' bodies, the loops before their bodies.
    pub fn all_nodes(&self) -> Vec<&PlanNode> {
        let mut all = Vec::new();
        for node in &self.nodes {
            all.push(node);
            if let Some(repeat) = &node.repeat {
                all.extend(repeat.body.all_nodes());
            }
        }
        all
    }

    /// Whether the edge `from -> to` is on a taken branch when `from` took `case`:
    /// always for an edge out of anything but a route.
    pub fn takes(&self, from: usize, to: usize, case: Option<&str>) -> bool {
        match self.cases.get(&(from, to)) {
            Some(cases) => case.is_some_and(|case| cases.iter().any(|c| c == case)),
            None => self.nodes[from].route.is_none(),
        }
    }
}

/// Builds the plan of a checked conclave for one run: the nodes outside every loop's
/// body, each loop holding the plan of its body.
pub fn build_plan(
    checked: &CheckedConclave,
    providers: &ProviderRegistry,
    config: &EngineConfig,
    options: &RunOptions,
) -> Result<Plan, StartError> {
    let planner = Planner { checked, providers, default_timeout: config.node_timeout, config, options };
    let plan = planner.conclave()?;
    if let Some(samples) = &options.samples {
        check_samples(samples, &plan.nodes, options.policy.is_some())?;
    }
    Ok(plan)
}

/// What planning one graph (the conclave's, or a loop's body) needs.
struct Planner<'a> {
    checked: &'a CheckedConclave,
    providers: &'a ProviderRegistry,
    default_timeout: Option<Duration>,
    config: &'a EngineConfig,
    options: &'a RunOptions,
}

impl Planner<'_> {
    /// The plan of the conclave's nodes outside every loop's body.
    fn conclave(&self) -> Result<Plan, StartError> {
        let conclave = self.checked.conclave();
        let in_bodies: HashSet<&str> = conclave
            .nodes
            .iter()
            .filter_map(|n| n.repeat.as_ref())
            .flat_map(|l| l.body.iter().map(String::as_str))
            .collect();
        let outside: Vec<&Node> = conclave.nodes.iter().filter(|n| !in_bodies.contains(n.id.as_str())).collect();
        self.graph(&outside)
    }

    /// The plan of `nodes` and the edges among them.
    fn graph(&self, nodes: &[&Node]) -> Result<Plan, StartError> {
        let (successors, predecessors, cases) = adjacency(nodes, &self.checked.conclave().edges);
        let planned = nodes.iter().map(|node| self.node(node)).collect::<Result<Vec<_>, StartError>>()?;
        Ok(Plan { nodes: planned, successors, predecessors, cases })
    }

    fn node(&self, node: &Node) -> Result<PlanNode, StartError> {
        let (checked, options) = (self.checked, self.options);
        let agent = match (node.kind, &node.agent) {
            (NodeKind::Agent, Some(config)) => {
                Some(Arc::new(plan_agent(checked, node, config, self.providers, self.default_timeout, options)?))
            }
            _ => None,
        };
        let command = match (node.kind, &node.command) {
            (NodeKind::Command, Some(config)) => {
                Some(Arc::new(plan_command(checked, node, config, options, self.config)?))
            }
            _ => None,
        };
        let repeat = match (node.kind, &node.repeat) {
            (NodeKind::Loop, Some(config)) => {
                let body: Vec<&Node> = config.body.iter().filter_map(|id| checked.conclave().node(id)).collect();
                Some(Arc::new(LoopPlan { config: config.clone(), body: Arc::new(self.graph(&body)?) }))
            }
            _ => None,
        };
        let route = node.route.clone().filter(|_| node.kind == NodeKind::Route).map(Arc::new);
        let approval = (node.kind == NodeKind::Approval).then(|| node.approval.clone().unwrap_or_default());
        let child = match (node.kind, &node.child) {
            (NodeKind::Conclave, Some(child)) => {
                let refuse = || StartError::ChildNotLoaded { node_id: node.id.clone(), conclave: child.id.clone() };
                let checked = checked.child(&child.id).ok_or_else(refuse)?;
                let planner = Planner { checked, ..*self };
                Some(Arc::new(planner.conclave()?))
            }
            _ => None,
        };
        Ok(PlanNode {
            id: node.id.clone(),
            label: node.label.clone(),
            kind: node.kind,
            agent,
            route,
            command,
            repeat,
            approval,
            child,
        })
    }
}

/// Refuses a count out of range, and nodes that are not findings-shaped agents of
/// the plan or that no policy could merge.
fn check_samples(samples: &Samples, nodes: &[PlanNode], has_policy: bool) -> Result<(), StartError> {
    if !(1..=MAX_SAMPLES).contains(&samples.count) {
        return Err(StartError::Samples {
            target: format!("{} times", samples.count),
            reason: format!("give a sample count from 1 to {MAX_SAMPLES}"),
        });
    }
    for id in &samples.nodes {
        let refuse = |reason: &str| StartError::Samples { target: format!("node `{id}`"), reason: reason.into() };
        let node = nodes.iter().find(|n| &n.id == id).ok_or_else(|| refuse("the conclave has no such node"))?;
        let agent = node.agent.as_ref().ok_or_else(|| refuse("it is not an agent"))?;
        if agent.findings_field().is_none() {
            return Err(refuse("its output has no findings to merge; give it a findings schema"));
        }
        if !has_policy && samples.count > 1 {
            return Err(refuse("the run has no output policy to merge samples with"));
        }
    }
    Ok(())
}

/// The adjacency of a plan: successors and predecessors of each node, by index
/// (repeated edges count once), and the cases on each edge out of a route.
type Adjacency = (Vec<Vec<usize>>, Vec<Vec<usize>>, HashMap<(usize, usize), Vec<String>>);

fn adjacency(nodes: &[&Node], edges: &[Edge]) -> Adjacency {
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let mut successors = vec![Vec::new(); nodes.len()];
    let mut predecessors = vec![Vec::new(); nodes.len()];
    let mut cases: HashMap<(usize, usize), Vec<String>> = HashMap::new();
    for edge in edges {
        // A checked conclave has no dangling edges; an edge leaving these nodes is
        // another graph's.
        let (Some(&from), Some(&to)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str())) else { continue };
        if let Some(case) = &edge.case {
            cases.entry((from, to)).or_default().push(case.clone());
        }
        if !successors[from].contains(&to) {
            successors[from].push(to);
            predecessors[to].push(from);
        }
    }
    (successors, predecessors, cases)
}

fn plan_agent(
    checked: &CheckedConclave,
    node: &Node,
    config: &AgentConfig,
    providers: &ProviderRegistry,
    default_timeout: Option<Duration>,
    options: &RunOptions,
) -> Result<AgentPlan, StartError> {
    let node_id = node.id.clone();
    let provider = providers.get(&config.provider).ok_or_else(|| StartError::ProviderUnavailable {
        node_id: node_id.clone(),
        provider: config.provider.clone(),
    })?;
    provider
        .check_config()
        .and_then(|()| provider.check_model(&config.model))
        .map_err(|error| StartError::ProviderConfig { node_id: node_id.clone(), error })?;
    let contract = match checked.output(&node.id) {
        Some(output) => Some(contract_for(node, config, provider.as_ref(), output, options)?),
        None => None,
    };
    let native_schema =
        contract.as_ref().and_then(|c| Some(SchemaSpec { name: c.name.clone(), schema: c.native.clone()? }));
    let with_contract = |c: &OutputContract| {
        let rule = render_contract(&c.original);
        if config.system_prompt.is_empty() { rule } else { format!("{}\n\n{rule}", config.system_prompt) }
    };
    let system_prompt = match &contract {
        Some(c) if c.native.is_none() => with_contract(c),
        _ => config.system_prompt.clone(),
    };
    let dialects = match (&contract, provider.dialects()) {
        (Some(c), Some(server)) if c.native.is_some() => Some(AgentDialects {
            endpoint: server.endpoint,
            setting: config.dialect.unwrap_or(server.setting),
            prompt_with_contract: with_contract(c),
            object_schema: conclave_schema::lower(&c.original, server.object_schema)
                .ok()
                .filter(|lowered| lowered.native)
                .map(|lowered| SchemaSpec { name: c.name.clone(), schema: Arc::new(lowered.schema) }),
        }),
        _ => None,
    };
    let timeout = config
        .timeout_secs
        .or(checked.conclave().settings.node_timeout_secs)
        .map(Duration::from_secs)
        .or(default_timeout);
    let cache_tools = match options.tools.as_deref() {
        Some(runner) if provider.caches_prompts() && provider.capabilities().tools => {
            shared_tools(checked, &config.provider, runner)
        }
        _ => Vec::new(),
    };
    let (mcp_tools, mcp_servers) = mcp_tools(checked, node, config, provider.as_ref(), options)?;
    if !mcp_tools.is_empty() && providers.tool_servers().is_none() {
        return Err(StartError::McpServer {
            node_id: node.id.clone(),
            reason: "the agent lists MCP tools, and this process connects to no MCP server".into(),
        });
    }
    Ok(AgentPlan {
        tools: agent_tools(&node.id, config, provider.as_ref(), options.tools.as_deref())?,
        mcp_tools,
        mcp_servers,
        cache_tools,
        config: Arc::new(config.clone()),
        provider,
        shared_prompt: checked.conclave().settings.shared_prompt.clone().unwrap_or_default(),
        system_prompt,
        dialects,
        contract,
        native_schema,
        timeout,
        samples: options.samples.as_ref().map_or(1, |s| s.count_for(&node.id)),
    })
}

/// The name an inline schema is sent under: from its content, not from the node, so
/// sibling agents with the same schema send the same bytes before their prompts, and
/// a vendor that caches the schema with the prompt's prefix (OpenAI) shares it.
fn schema_name(schema: &serde_json::Value) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(schema.to_string().as_bytes());
    format!("output_{}", &hex::encode(digest)[..12])
}

/// The output contract: the policy shapes the schema, then it is lowered for the
/// provider's dialect (or the prompt contract) and compiled.
fn contract_for(
    node: &Node,
    config: &AgentConfig,
    provider: &dyn Provider,
    output: &conclave_catalog::AgentOutput,
    options: &RunOptions,
) -> Result<OutputContract, StartError> {
    let mut schema = output.schema.clone();
    let findings_field = output.findings_field.clone();
    let shaping_notes = match &options.policy {
        Some(policy) => policy.shape_schema(&mut schema, findings_field.as_deref()),
        None => Vec::new(),
    };
    let wants_native = config.output_mode.unwrap_or_default() == OutputMode::Native;
    let spec = ContractSpec {
        name: config.output_schema_ref.clone().unwrap_or_else(|| schema_name(&schema)),
        provider: provider.name().to_string(),
        native: provider.capabilities().native_schema.filter(|_| wants_native),
        strict: config.compatibility.unwrap_or_default() == Compatibility::Strict,
        findings_field,
        shaping_notes,
    };
    output_contract(schema, spec).map_err(|error| StartError::Contract { node_id: node.id.clone(), error })
}

/// A command node's plan: refused unless the run allows commands and the node's
/// program, with the validator of its output schema for `json` output.
fn plan_command(
    checked: &CheckedConclave,
    node: &Node,
    config: &CommandConfig,
    options: &RunOptions,
    engine: &EngineConfig,
) -> Result<CommandPlan, StartError> {
    let refuse = |reason: String| StartError::Command { node_id: node.id.clone(), reason };
    let Some(allowed) = &options.commands else {
        return Err(refuse(
            "this run does not allow commands: they run only from conclave files on disk, or programs the server was told to allow".into(),
        ));
    };
    if !allowed.allows(config.program()) {
        return Err(refuse(format!("`{}` is not among the programs this run may start", config.program())));
    }
    let validator = match (config.parse, checked.output(&node.id)) {
        (CommandParse::Json, Some(output)) => Some(Arc::new(
            jsonschema::validator_for(&output.schema)
                .map_err(|e| refuse(format!("its output schema does not compile: {e}")))?,
        )),
        _ => None,
    };
    let workdir = match config.cwd {
        conclave_shared::CommandDir::Repository => options.workdir.clone().or_else(|| allowed.workspace.clone()),
        conclave_shared::CommandDir::Workspace => allowed.workspace.clone().or_else(|| options.workdir.clone()),
    };
    let workdir =
        workdir.ok_or_else(|| refuse("the run has neither a repository nor a workspace to run it in".into()))?;
    Ok(CommandPlan {
        config: config.clone(),
        validator,
        workdir,
        workspace: allowed.workspace.clone(),
        allow_unsandboxed: engine.allow_unsandboxed,
        redactor: engine.redactor.clone(),
    })
}

/// The tool specs offered to an agent.
/// The tools of every agent of `checked` on `provider`, sorted by name, as the
/// runner describes them (none when one of them is unknown: the agent naming it is
/// refused on its own).
fn shared_tools(checked: &CheckedConclave, provider: &str, runner: &dyn ToolRunner) -> Vec<ToolSpec> {
    let mut ids: Vec<String> = checked
        .conclave()
        .nodes
        .iter()
        .filter_map(|n| n.agent.as_ref())
        .filter(|a| a.provider == provider)
        .flat_map(|a| a.tools.iter().cloned())
        .filter(|id| McpToolRef::parse(id).is_none())
        .collect();
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return Vec::new();
    }
    runner.specs(&ids).unwrap_or_default()
}

fn agent_tools(
    node_id: &str,
    config: &AgentConfig,
    provider: &dyn Provider,
    runner: Option<&dyn ToolRunner>,
) -> Result<Vec<ToolSpec>, StartError> {
    let built_in: Vec<String> = config.tools.iter().filter(|id| McpToolRef::parse(id).is_none()).cloned().collect();
    if built_in.is_empty() || !provider.capabilities().tools {
        return Ok(Vec::new());
    }
    let Some(runner) = runner else {
        return Err(StartError::NoTools { node_id: node_id.to_string(), tools: built_in });
    };
    runner.specs(&built_in).map_err(|tool| StartError::UnknownTool { node_id: node_id.to_string(), tool })
}

/// The MCP tools an agent lists, and the entries of their servers: each server
/// declared by the agent's conclave, a stdio server's program one the run may start,
/// and the run able to connect to MCP servers at all.
fn mcp_tools(
    checked: &CheckedConclave,
    node: &Node,
    config: &AgentConfig,
    provider: &dyn Provider,
    options: &RunOptions,
) -> Result<(Vec<McpToolRef>, BTreeMap<String, McpServerConfig>), StartError> {
    let refuse = |reason: String| StartError::McpServer { node_id: node.id.clone(), reason };
    let mut refs = Vec::new();
    let mut servers = BTreeMap::new();
    if !provider.capabilities().tools {
        return Ok((refs, servers));
    }
    let declared = &checked.conclave().settings.mcp_servers;
    for id in &config.tools {
        let Some(parsed) = McpToolRef::parse(id) else { continue };
        let reference = parsed.map_err(refuse)?;
        let Some(entry) = declared.get(&reference.server) else {
            return Err(refuse(format!(
                "`{id}` names the MCP server `{}`, which `settings.mcp_servers` does not declare",
                reference.server
            )));
        };
        if let Some(program) = entry.program() {
            match &options.commands {
                Some(allowed) if allowed.allows(program) => {}
                Some(_) => {
                    return Err(refuse(format!(
                        "the MCP server `{}` runs `{program}`, which is not among the programs this run may start",
                        reference.server
                    )));
                }
                None => {
                    return Err(refuse(format!(
                        "the MCP server `{}` is a command, and this run does not allow commands: they run only from \
                         conclave files on disk, or programs the server was told to allow",
                        reference.server
                    )));
                }
            }
        }
        servers.insert(reference.server.clone(), entry.clone());
        refs.push(reference);
    }
    Ok((refs, servers))
}
