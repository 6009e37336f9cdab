//! A fake of the MCP boundary (`ToolServers`): servers that list the tools they were
//! given and answer each call with `NAME(ARGUMENTS)`, counting how many times they
//! were connected and stopped, so a test can see that a run starts each server once
//! and stops it with the run.

use async_trait::async_trait;
use conclave_core::{ServerPlace, ToolOutcome, ToolServer, ToolServerError, ToolServers};
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::{MCP_TOOL_PREFIX, McpToolInfo};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Fake servers, each offering the same tools.
#[derive(Debug, Default)]
pub struct FakeToolServers {
    tools: Vec<String>,
    delay: Duration,
    connected: Arc<AtomicUsize>,
    stopped: Arc<AtomicUsize>,
}

impl FakeToolServers {
    /// Servers offering `tools` (each takes any object).
    pub fn offering(tools: &[&str]) -> FakeToolServers {
        FakeToolServers { tools: tools.iter().map(|t| t.to_string()).collect(), ..FakeToolServers::default() }
    }

    /// The same servers, each call answered after `delay` (a slow tool).
    pub fn answering_after(self, delay: Duration) -> FakeToolServers {
        FakeToolServers { delay, ..self }
    }

    /// How many times a server was connected.
    pub fn connected(&self) -> usize {
        self.connected.load(Ordering::SeqCst)
    }

    /// How many times a server was stopped.
    pub fn stopped(&self) -> usize {
        self.stopped.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ToolServers for FakeToolServers {
    async fn connect(
        &self,
        name: &str,
        _config: &McpServerConfig,
        _place: &ServerPlace,
    ) -> Result<Arc<dyn ToolServer>, ToolServerError> {
        self.connected.fetch_add(1, Ordering::SeqCst);
        let tools = self
            .tools
            .iter()
            .map(|tool| McpToolInfo {
                name: tool.clone(),
                id: format!("{MCP_TOOL_PREFIX}{name}/{tool}"),
                description: format!("The fake `{tool}`."),
                input_schema: json!({"type": "object"}),
            })
            .collect();
        Ok(Arc::new(FakeServer { tools, delay: self.delay, stopped: self.stopped.clone() }))
    }
}

#[derive(Debug)]
struct FakeServer {
    tools: Vec<McpToolInfo>,
    delay: Duration,
    stopped: Arc<AtomicUsize>,
}

#[async_trait]
impl ToolServer for FakeServer {
    fn tools(&self) -> &[McpToolInfo] {
        &self.tools
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError> {
        tokio::time::sleep(self.delay).await;
        Ok(ToolOutcome::ok(format!("{tool}({arguments})")))
    }

    async fn stop(&self) {
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}
