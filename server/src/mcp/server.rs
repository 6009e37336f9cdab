//! The MCP server: `ConclaveMcp`, the handler rmcp calls for every request on either
//! transport. Tools are routed by the router `tools.rs` builds; `review` becomes a
//! task (`tasks.rs`) for a client that supports tasks; resources are `resources.rs`'.
//! It holds no state of its own beyond the request's context: what it answers is
//! read from the store and the catalog.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ContentBlock, GetTaskParams, GetTaskResult,
    Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};

use super::args::ReviewArgs;
use super::context::McpContext;
use super::{resources, tasks};

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "Conclave reviews code changes with several specialist agents and a Writer, and runs \
other conclaves (agent workflows). Use `review` on a git repository for findings (severity, file, line, \
description, fingerprint); findings come a page at a time: pass `next_cursor` to `get_review` for the next. \
`list_conclaves` and `run_conclave` run other workflows; `approve` decides at a waiting approval node.";

/// Conclave as an MCP server, over one transport's context.
#[derive(Clone)]
pub struct ConclaveMcp {
    /// What requests are answered from.
    pub context: McpContext,
    /// The tools.
    tools: ToolRouter<ConclaveMcp>,
}

impl std::fmt::Debug for ConclaveMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConclaveMcp").field("context", &self.context).finish_non_exhaustive()
    }
}

impl ConclaveMcp {
    /// A server answering from `context`.
    pub fn new(context: McpContext) -> ConclaveMcp {
        ConclaveMcp { context, tools: Self::tool_router() }
    }
}

#[tool_handler(router = self.tools)]
impl ServerHandler for ConclaveMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_resources().enable_tasks().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("conclave", env!("CARGO_PKG_VERSION")).with_title("Conclave"))
            .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tasks = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        if tasks && request.name == "review" {
            let arguments = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
            let args: ReviewArgs =
                serde_json::from_value(arguments).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
            if args.wait != Some(false) {
                return Ok(match tasks::create(&self.context, args).await {
                    Ok(created) => CallToolResponse::Task(created),
                    Err(message) => rmcp::model::CallToolResult::error(vec![ContentBlock::text(message)]).into(),
                });
            }
        }
        self.tools.call(ToolCallContext::new(self, request, context)).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        resources::list(&self.context).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Ok(resources::read(&self.context, &request.uri).await?.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::get(&self.context, &request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::cancel(&self.context, &request.task_id).await
    }
}
