//! How a request is laid out for OpenAI's automatic prompt cache: the same tools in
//! every call of an agent (they are part of the cached prefix) and a key per run
//! (`prompt_cache_key`) that keeps a review's calls on the servers holding its
//! prefix. The shared prefix leading the system text is `chat.rs`' and
//! `responses.rs`' part.

use conclave_core::{AgentRequest, ToolSpec};
use serde_json::{Value, json};

/// The key that keeps one run's calls on the servers holding its cached prefix:
/// the run's id, which every agent of a review shares (a run id names no person).
pub(super) fn prompt_cache_key(request: &AgentRequest) -> String {
    format!("conclave-{}", request.run_id)
}

/// The tools a request carries: every tool the agent has when the layout is for the
/// cache (they are part of the cached prefix), else only those it may call now;
/// with `tool_choice` `none` when they are carried but may not be called.
pub(super) fn add_tools(body: &mut Value, request: &AgentRequest, cache: bool, tool: impl Fn(&ToolSpec) -> Value) {
    let tools = if cache { &request.tools[..] } else { request.callable_tools() };
    if tools.is_empty() {
        return;
    }
    body["tools"] = tools.iter().map(tool).collect();
    if !request.tool_calls_allowed {
        body["tool_choice"] = json!("none");
    }
}
