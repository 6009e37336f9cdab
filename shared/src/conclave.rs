//! The conclave file format: a graph of trigger, agent, route, command and output
//! nodes.
//!
//! Files are `conclaves/<id>.conclave.json`. Field order in these structs is the
//! key order on disk, and JSON objects inside (schemas) keep their insertion order,
//! so writing a file that was read unchanged reproduces it byte for byte.

use crate::lowering::DialectSetting;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The version of the file format that this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Default number of extra attempts an agent gets when its output fails its schema.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// Default number of model turns an agent may take (tool calls included).
pub const DEFAULT_MAX_TURNS: u32 = 8;

/// Default cap on generated tokens per call.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// One conclave: a directed acyclic graph of nodes joined by edges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Conclave {
    /// Format version; always 1 for now.
    #[serde(default = "format_version")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 1)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1))]
    pub version: u32,
    /// Identifier, also the file name stem (`<id>.conclave.json`).
    #[cfg_attr(feature = "openapi", schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$"))]
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// What the conclave is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Run-wide settings (concurrency, timeouts).
    #[serde(default, skip_serializing_if = "Settings::is_default")]
    pub settings: Settings,
    /// The nodes, in display order.
    pub nodes: Vec<Node>,
    /// Directed edges carrying each node's output to the next.
    #[serde(default)]
    pub edges: Vec<Edge>,
}

fn format_version() -> u32 {
    FORMAT_VERSION
}

/// Run-wide settings stored with a conclave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// How many nodes may run at once (default: the engine's limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub max_concurrency: Option<u32>,
    /// Per-provider limits on concurrent calls, keyed by provider name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provider_limits: BTreeMap<String, u32>,
    /// Timeout for each node, in seconds, unless the agent sets its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub node_timeout_secs: Option<u64>,
    /// In review runs, narrow the `file` of findings-shaped schemas to the files of the
    /// change (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_tightening: Option<bool>,
    /// Instructions every agent reads first, before the run input and its own system
    /// prompt. Text common to several agents belongs here: providers that cache
    /// prompts then cache it once for all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prompt: Option<String>,
    /// The most the run may spend (`max_cost_usd`, `max_tokens`); a call that cannot
    /// fit in what is left is not made, and its agent fails with `budget`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::Budget>,
    /// In review runs, give reviewers the repository's rules files (`AGENTS.md`,
    /// `CLAUDE.md`, `REVIEW.md` and `.conclave/rules/*.md`) in the run input
    /// (default true); `false` reads none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<bool>,
    /// MCP servers the agents may call, by name: a stdio `command` (run in the
    /// command sandbox, once per run) or an HTTP `url`. An agent lists the tools it
    /// may call as `mcp:SERVER/TOOL` (`mcp:SERVER/*` for all of them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, crate::mcp::McpServerConfig>,
    /// In review runs, give reviewers the change's impact in the run input: the
    /// callers and tests of each function the change adds, removes or modifies,
    /// found with the repository's symbol index (default on, at most 40 callers
    /// and tests and 8 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<crate::impact::ImpactSettings>,
}

impl Settings {
    /// True when every setting has its default value (and is left out of the file).
    pub fn is_default(&self) -> bool {
        self == &Settings::default()
    }
}

/// A node of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Unique within the conclave; other nodes receive this node's output under it.
    pub id: String,
    /// What the node does.
    pub kind: NodeKind,
    /// Display label.
    #[serde(default)]
    pub label: String,
    /// Position of the node card on the editor canvas.
    #[serde(default)]
    pub position: Position,
    /// Agent configuration; present exactly when `kind` is `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "AgentConfig"))]
    pub agent: Option<AgentConfig>,
    /// Route configuration; present exactly when `kind` is `route`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "RouteConfig"))]
    pub route: Option<RouteConfig>,
    /// Command configuration; present exactly when `kind` is `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "CommandConfig"))]
    pub command: Option<CommandConfig>,
    /// Approval configuration; optional on `approval` nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "ApprovalConfig"))]
    pub approval: Option<ApprovalConfig>,
    /// The conclave this node runs; present exactly when `kind` is `conclave`.
    #[serde(default, rename = "conclave", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "ChildConclave"))]
    pub child: Option<ChildConclave>,
    /// Loop configuration; present exactly when `kind` is `loop`.
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "LoopConfig"))]
    pub repeat: Option<LoopConfig>,
}

impl Node {
    /// A node of `kind` at the origin, labelled with its id, with no configuration.
    pub fn new(id: impl Into<String>, kind: NodeKind) -> Node {
        let id = id.into();
        Node {
            label: id.clone(),
            id,
            kind,
            position: Position::default(),
            agent: None,
            route: None,
            command: None,
            approval: None,
            child: None,
            repeat: None,
        }
    }
}

/// The kinds of node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// The run's input enters the graph here.
    Trigger,
    /// Calls a provider with a prompt, tools and an optional output schema.
    Agent,
    /// Collects its upstream outputs as the run's result.
    Output,
    /// Takes one of its outgoing branches, chosen by a predicate on its input; the
    /// others are skipped.
    Route,
    /// Runs a program (no shell) and passes on what it printed, parsed.
    Command,
    /// Runs its body (other nodes of the file) again and again until a predicate on
    /// the body's outputs holds or `max_iterations` is reached.
    Loop,
    /// Waits for a person to approve or reject; the run is parked (`waiting`) until
    /// they do.
    Approval,
    /// Runs another conclave of the catalog, by id, as one node.
    Conclave,
}

impl NodeKind {
    /// All kinds, in palette order.
    pub const ALL: [NodeKind; 8] = [
        NodeKind::Trigger,
        NodeKind::Agent,
        NodeKind::Route,
        NodeKind::Command,
        NodeKind::Loop,
        NodeKind::Approval,
        NodeKind::Conclave,
        NodeKind::Output,
    ];

    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Trigger => "trigger",
            NodeKind::Agent => "agent",
            NodeKind::Output => "output",
            NodeKind::Route => "route",
            NodeKind::Command => "command",
            NodeKind::Loop => "loop",
            NodeKind::Approval => "approval",
            NodeKind::Conclave => "conclave",
        }
    }

    /// The kind named `name` in files.
    pub fn parse(name: &str) -> Option<NodeKind> {
        NodeKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Canvas position in editor pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Position {
    /// Horizontal position.
    pub x: i32,
    /// Vertical position.
    pub y: i32,
}

/// A directed edge: `from`'s output becomes part of `to`'s input.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// Upstream node id.
    pub from: String,
    /// Downstream node id.
    pub to: String,
    /// For an edge out of a route: the case that takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

impl Edge {
    /// A plain edge `from -> to`.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Edge {
        Edge { from: from.into(), to: to.into(), case: None }
    }

    /// The identifier used in diagnostics: `from -> to`.
    pub fn label(&self) -> String {
        format!("{} -> {}", self.from, self.to)
    }
}

pub use crate::cache::CacheSetting;
pub use crate::command::{
    CommandConfig, CommandDir, CommandParse, DEFAULT_COMMAND_OUTPUT_BYTES, DEFAULT_COMMAND_TIMEOUT_SECS,
};
pub use crate::route::{Predicate, PredicateOp, RouteCase, RouteConfig};

/// The conclave a `conclave` node runs: another file of the catalog, by id. Its
/// trigger receives the run input, its first nodes also the node's upstream outputs,
/// and its output node's value is the node's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ChildConclave {
    /// The id of a conclave of the catalog (`conclaves/<id>.conclave.json`).
    pub id: String,
}

/// What a person is asked at an approval node, and how long they have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// What the approver is asked, shown with the request.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
    /// Seconds the approver has; a decision after that is refused and the run ends
    /// rejected (timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub timeout_secs: Option<u64>,
}

/// The most iterations a loop may have.
pub const MAX_LOOP_ITERATIONS: u32 = 100;

/// A loop: the nodes of its body, when it stops, and how many times it may run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LoopConfig {
    /// The ids of the nodes that run in each iteration (agents, commands, routes);
    /// the edges among them are the body's graph. Nothing outside the loop connects
    /// to them: the body's first nodes receive the loop's inputs, and the loop passes
    /// the last iteration on.
    pub body: Vec<String>,
    /// The loop ends after an iteration whose outputs (each body node's under its id)
    /// make this hold.
    pub until: Predicate,
    /// The most iterations, from 1 to 100. Reaching it is the outcome `exhausted`,
    /// which the next node reads; it is not a failure.
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 100)))]
    pub max_iterations: u32,
}

impl Conclave {
    /// The loop whose body holds node `id`, if any.
    pub fn loop_of(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.repeat.as_ref().is_some_and(|l| l.body.iter().any(|b| b == id)))
    }
}

/// How an agent calls its provider and what it must answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Provider name, such as `anthropic`, `openai`, `ollama`, `claude-code` or `local`.
    pub provider: String,
    /// Model name understood by the provider (for `local`, a GGUF path may be given).
    #[serde(default)]
    pub model: String,
    /// The agent's instructions.
    #[serde(default)]
    pub system_prompt: String,
    /// Built-in tool ids the agent may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Most model turns the agent may take; default 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub max_turns: Option<u32>,
    /// Inline JSON Schema the agent's answer must satisfy (the Structured Output chip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "Option<BTreeMap<String, Value>>"))]
    pub output_schema: Option<Value>,
    /// Dotted reference to a schema file, such as `review.findings.v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(regex(pattern = r"^[a-z0-9_-]+(\.[a-z0-9_-]+)+$")))]
    pub output_schema_ref: Option<String>,
    /// Extra attempts after an answer fails its schema; default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_retries: Option<u32>,
    /// Timeout for this agent, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub timeout_secs: Option<u64>,
    /// Most tokens the model may generate per call (default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub max_tokens: Option<u32>,
    /// How the schema reaches the model: `native` structured output where the provider
    /// has it (the default), or a `prompt` contract rendered into the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_mode: Option<OutputMode>,
    /// What to do when the provider cannot express part of the schema: `lossy` (drop it
    /// with a warning, the default) or `strict` (refuse to run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
    /// For `openai`: the Chat Completions API (`chat`, the default) or the Responses API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<OpenAiApi>,
    /// For `openai`: how the server receives the output schema. `auto` (the default,
    /// or `OPENAI_OUTPUT_DIALECT`) starts with `json_schema` and steps down when the
    /// server rejects it; `json_schema`, `json_object_schema`, `json_object` or
    /// `prompt` fix one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<DialectSetting>,
    /// The most this agent's provider calls may cost, in US dollars, every sample
    /// and retry together, within the run's budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 0)))]
    pub max_cost: Option<f64>,
    /// Keep the answer for later runs that would send the same request (the same
    /// settings, schema, provider, model and input): `true`, or `{"ttl_secs": N}`.
    /// A later run reuses it as `cached`, at no cost; `--no-cache` turns this off
    /// for a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSetting>,
}

/// How an agent's output schema reaches the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// The provider's own structured-output feature, falling back to the prompt contract
    /// where it has none.
    #[default]
    Native,
    /// The schema is rendered into the prompt; the answer is parsed from text.
    Prompt,
}

/// What to do with schema features a provider cannot express.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Compatibility {
    /// Drop or rewrite them and warn; local validation still checks the original.
    #[default]
    Lossy,
    /// Refuse to run the agent.
    Strict,
}

/// Which OpenAI API an agent calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OpenAiApi {
    /// `POST /chat/completions`.
    #[default]
    Chat,
    /// `POST /responses`.
    Responses,
}

impl AgentConfig {
    /// A fresh agent for `provider` with every optional setting left at its default.
    pub fn new(provider: impl Into<String>) -> Self {
        AgentConfig {
            provider: provider.into(),
            model: String::new(),
            system_prompt: String::new(),
            tools: Vec::new(),
            max_turns: None,
            output_schema: None,
            output_schema_ref: None,
            output_retries: None,
            timeout_secs: None,
            max_tokens: None,
            output_mode: None,
            compatibility: None,
            api: None,
            dialect: None,
            max_cost: None,
            cache: None,
        }
    }

    /// Extra attempts allowed after a schema-invalid answer.
    pub fn retries(&self) -> u32 {
        self.output_retries.unwrap_or(DEFAULT_OUTPUT_RETRIES)
    }

    /// Most model turns allowed.
    pub fn turns(&self) -> u32 {
        self.max_turns.unwrap_or(DEFAULT_MAX_TURNS)
    }

    /// Most tokens per call.
    pub fn tokens(&self) -> u32 {
        self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)
    }
}

impl Conclave {
    /// Parses a conclave from JSON text.
    pub fn from_json(text: &str) -> Result<Conclave, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The canonical file text: pretty-printed, stable key order, trailing newline.
    pub fn to_file_text(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Looks up a node by id.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The ids of the conclaves its `conclave` nodes run, each once, in node order.
    pub fn children(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for id in self.nodes.iter().filter_map(|n| Some(n.child.as_ref()?.id.as_str())) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    /// Ids of the nodes with an edge into `id`, in edge order.
    pub fn upstream_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.edges.iter().filter(move |e| e.to == id).map(|e| e.from.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Conclave {
        let mut agent = AgentConfig::new("openai");
        agent.model = "gpt-4.1-mini".into();
        agent.output_schema = Some(serde_json::json!({
            "type": "object",
            "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}},
            "required": ["zeta"]
        }));
        Conclave {
            version: 1,
            id: "sample".into(),
            name: "Sample".into(),
            description: String::new(),
            settings: Settings::default(),
            nodes: vec![
                Node { label: "Input".into(), position: Position { x: 0, y: 0 }, ..Node::new("in", NodeKind::Trigger) },
                Node {
                    label: "A".into(),
                    position: Position { x: 200, y: -40 },
                    agent: Some(agent),
                    ..Node::new("a", NodeKind::Agent)
                },
            ],
            edges: vec![Edge { from: "in".into(), to: "a".into(), case: None }],
        }
    }

    #[test]
    fn file_text_round_trips_byte_for_byte_and_keeps_schema_key_order() {
        let text = sample().to_file_text();
        let again = Conclave::from_json(&text).expect("parses").to_file_text();
        assert_eq!(text, again);
        // Property order inside a schema is the author's order, not alphabetical.
        let zeta = text.find("\"zeta\"").expect("zeta present");
        let alpha = text.find("\"alpha\"").expect("alpha present");
        assert!(zeta < alpha, "schema keys were reordered:\n{text}");
    }

    #[test]
    fn absent_optional_settings_stay_absent() {
        let text = sample().to_file_text();
        for key in ["settings", "output_retries", "max_turns", "tools", "description", "output_schema_ref"] {
            assert!(!text.contains(&format!("\"{key}\"")), "{key} written though unset:\n{text}");
        }
        assert!(text.starts_with("{\n  \"version\": 1,\n  \"id\": \"sample\","));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = Conclave::from_json(r#"{"id":"x","name":"x","nodes":[],"colour":"red"}"#)
            .expect_err("unknown field accepted");
        assert!(err.to_string().contains("unknown field `colour`"), "{err}");
    }
}
