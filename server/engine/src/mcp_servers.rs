//! The MCP servers of one run: each server an agent of the run lists a tool of is
//! connected (a stdio one started) the first time an agent needs it, through the
//! registry's `ToolServers`, kept for every agent of the run, and stopped when the
//! run ends, is cancelled or is dropped. An agent sees the tools it lists as
//! `mcp__SERVER__TOOL` with the server's descriptions and input schemas.

use conclave_core::{ServerPlace, ToolServer, ToolServerError, ToolServers, ToolSpec};
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::{McpToolRef, model_tool_name};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OnceCell;

use crate::node_error::NodeError;

/// The MCP tools an agent may call: what the model is offered, and which server's
/// tool each model name is.
#[derive(Debug, Clone, Default)]
pub struct AgentMcpTools {
    /// The specs offered, in the order the agent lists them.
    pub specs: Vec<ToolSpec>,
    /// By model name (`mcp__docs__git_log`): the server, its tool, and the tool's id
    /// (`mcp:docs/git_log`).
    pub by_name: HashMap<String, McpTarget>,
}

/// One MCP tool an agent may call.
#[derive(Debug, Clone)]
pub struct McpTarget {
    /// The connected server.
    pub server: Arc<dyn ToolServer>,
    /// The tool's name on the server.
    pub tool: String,
    /// Its id, as agents list it and events name it.
    pub id: String,
}

type Connection = Arc<OnceCell<Result<Arc<dyn ToolServer>, ToolServerError>>>;

/// A run's servers, connected on first use.
#[derive(Debug)]
pub struct RunServers {
    host: Arc<dyn ToolServers>,
    place: ServerPlace,
    connections: Mutex<BTreeMap<(String, String), Connection>>,
}

impl RunServers {
    /// The servers of a run connecting through `host`, in `place`.
    pub fn new(host: Arc<dyn ToolServers>, place: ServerPlace) -> RunServers {
        RunServers { host, place, connections: Mutex::new(BTreeMap::new()) }
    }

    /// The server `name` declared as `config`, connected once for the whole run (a
    /// failed start is remembered: every agent needing it fails alike).
    pub async fn server(&self, name: &str, config: &McpServerConfig) -> Result<Arc<dyn ToolServer>, ToolServerError> {
        let key = (name.to_string(), serde_json::to_string(config).unwrap_or_default());
        let cell = self.connections.lock().unwrap_or_else(PoisonError::into_inner).entry(key).or_default().clone();
        cell.get_or_init(|| self.host.connect(name, config, &self.place)).await.clone()
    }

    /// The tools `refs` name on `servers` (an agent's conclave's entries), connecting
    /// the servers they are on; an agent listing a tool its server does not have
    /// fails, with the names it does have.
    pub async fn agent_tools(
        &self,
        refs: &[McpToolRef],
        servers: &BTreeMap<String, McpServerConfig>,
    ) -> Result<AgentMcpTools, NodeError> {
        let mut tools = AgentMcpTools::default();
        for reference in refs {
            let Some(config) = servers.get(&reference.server) else {
                return Err(NodeError::ToolServer(format!(
                    "`{}` names the MCP server `{}`, which the conclave's `settings.mcp_servers` does not declare",
                    reference.id(),
                    reference.server
                )));
            };
            let server =
                self.server(&reference.server, config).await.map_err(|e| NodeError::ToolServer(e.to_string()))?;
            let listed = server.tools();
            let chosen: Vec<_> = listed.iter().filter(|t| reference.is_all() || t.name == reference.tool).collect();
            if chosen.is_empty() && !reference.is_all() {
                let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
                return Err(NodeError::ToolServer(format!(
                    "the MCP server `{}` has no tool `{}`; it has {}",
                    reference.server,
                    reference.tool,
                    names.join(", ")
                )));
            }
            for tool in chosen {
                let name = model_tool_name(&reference.server, &tool.name);
                if tools.by_name.contains_key(&name) {
                    continue;
                }
                tools.specs.push(ToolSpec {
                    name: name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.input_schema.clone(),
                });
                let target = McpTarget { server: server.clone(), tool: tool.name.clone(), id: tool.id.clone() };
                tools.by_name.insert(name, target);
            }
        }
        Ok(tools)
    }

    /// Stops every server connected: a started process is killed with its group.
    pub async fn stop(&self) {
        let connections: Vec<Connection> =
            std::mem::take(&mut *self.connections.lock().unwrap_or_else(PoisonError::into_inner))
                .into_values()
                .collect();
        for cell in connections {
            if let Some(Ok(server)) = cell.get() {
                server.stop().await;
            }
        }
    }
}
