//! Cached nodes: the key an agent's or a command's output is kept under, a SHA-256
//! of everything that determines it, and the entry stored for later runs.
//!
//! For an agent: its settings (the `cache` setting itself aside), the system prompt
//! it sends (with the prompt contract), its schema as lowered for its provider, the
//! provider, the tools offered (an MCP server's as it lists them) with the entries
//! of its MCP servers, and the rendered input message. For a command: its
//! settings, the directory it runs in, and its input (the run input and the upstream
//! outputs). A change to any of these is a miss.

use conclave_core::{CachedOutput, ToolSpec, now_ms};
use conclave_shared::{CacheSetting, NodeOutput};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::command::CommandPlan;
use crate::plan::AgentPlan;

/// The cache key of an agent about to receive `message`, offered `mcp_specs` by its
/// MCP servers.
pub fn agent_key(agent: &AgentPlan, message: &str, mcp_specs: &[ToolSpec]) -> String {
    let mut config = agent.config.as_ref().clone();
    config.cache = None;
    let contract = agent.contract.as_ref().map(|c| json!({"original": c.original, "target": c.target}));
    let native = agent.native_schema.as_ref().map(|s| json!({"name": s.name, "schema": *s.schema}));
    let tools: Vec<Value> = agent
        .tools
        .iter()
        .chain(mcp_specs)
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let mut determined = json!({
        "kind": "agent",
        "config": config,
        "provider": agent.provider.name(),
        "system_prompt": agent.system_prompt,
        "contract": contract,
        "native_schema": native,
        "tools": tools,
        "samples": agent.samples,
    });
    // Only agents with MCP tools carry their servers' entries, so other keys stay as they were.
    if !agent.mcp_servers.is_empty() {
        determined["mcp_servers"] = json!(agent.mcp_servers);
    }
    digest(&determined, message.as_bytes())
}

/// The cache key of a command given `input` (the run input and upstream outputs).
pub fn command_key(command: &CommandPlan, input: &Value) -> String {
    let mut config = command.config.clone();
    config.cache = None;
    let determined = json!({"kind": "command", "config": config, "workdir": command.workdir});
    let input = serde_json::to_vec(input).unwrap_or_default();
    digest(&determined, &input)
}

/// SHA-256 of the settings' JSON and the input, each length-prefixed so that no
/// two pairs hash alike by where one ends.
fn digest(settings: &Value, input: &[u8]) -> String {
    let settings = serde_json::to_vec(settings).unwrap_or_default();
    let mut hasher = Sha256::new();
    for part in [settings.as_slice(), input] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex::encode(hasher.finalize())
}

/// The entry that keeps `output` of `node_id` in `run_id` as `setting` says.
pub fn entry(setting: CacheSetting, output: &NodeOutput, run_id: &str, node_id: &str) -> CachedOutput {
    let stored_ms = now_ms();
    CachedOutput {
        output: output.clone(),
        run_id: run_id.to_string(),
        node_id: node_id.to_string(),
        stored_ms,
        expires_ms: setting.ttl_secs().map(|s| stored_ms.saturating_add(s.saturating_mul(1000))),
    }
}
