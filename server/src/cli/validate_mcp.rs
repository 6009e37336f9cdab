//! What `conclave validate` asks MCP servers: each server a conclave file declares
//! is connected (a stdio one started in the command sandbox, for as long as it takes
//! to list its tools) and every `mcp:SERVER/TOOL` an agent lists is checked against
//! the tools it has, with a did-you-mean. A server that cannot be asked is a
//! warning: its tools are then unchecked, not wrong.

use conclave_catalog::{Diagnostic, Subject, ValidationReport, did_you_mean, pointer};
use conclave_core::{ServerPlace, ToolServers};
use conclave_shared::mcp::McpToolRef;
use conclave_shared::{Conclave, McpServerConfig};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::Workspace;

/// The longest one server may take to start and list its tools.
const ASK_TIMEOUT: Duration = Duration::from_secs(20);

/// Adds what the servers of each conclave file of `report` say about its agents'
/// `mcp:` tools. Runs on a blocking thread of the runtime.
pub fn check_servers(report: &mut ValidationReport, workspace: &Workspace) {
    let Some(servers) = workspace.providers.tool_servers() else { return };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    for (file, diagnostics) in &mut report.files {
        if !file.ends_with(".conclave.json") || diagnostics.iter().any(Diagnostic::is_error) {
            continue;
        }
        let Some(conclave) =
            std::fs::read(Path::new(file.as_str())).ok().and_then(|b| serde_json::from_slice::<Conclave>(&b).ok())
        else {
            continue;
        };
        if conclave.settings.mcp_servers.is_empty() {
            continue;
        }
        let found = runtime.block_on(ask(servers.as_ref(), &conclave));
        for mut d in found {
            d.file = file.clone();
            diagnostics.push(d);
        }
    }
}

/// The diagnostics of `conclave`'s `mcp:` tools, its servers asked one by one.
async fn ask(servers: &dyn ToolServers, conclave: &Conclave) -> Vec<Diagnostic> {
    let place = ServerPlace {
        workdir: Some(".".into()),
        workspace: Some(".".into()),
        allow_unsandboxed: false,
        redactor: Some(conclave_core::process_redactor()),
        label: "validate".into(),
    };
    let mut listed: BTreeMap<&str, Result<Vec<String>, String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, entry) in &conclave.settings.mcp_servers {
        let tools = list(servers, name, entry, &place).await;
        if let Err(why) = &tools {
            out.push(
                Diagnostic::warning(
                    "mcp-server-unreachable",
                    Subject::File,
                    pointer("/settings/mcp_servers", name),
                    format!("could not ask the MCP server `{name}` for its tools: {why}"),
                )
                .with_help("its agents' `mcp:` tools were not checked; they are when it can be started or reached"),
            );
        }
        listed.insert(name, tools);
    }
    for (index, node) in conclave.nodes.iter().enumerate() {
        let Some(agent) = &node.agent else { continue };
        for (i, id) in agent.tools.iter().enumerate() {
            let Some(Ok(reference)) = McpToolRef::parse(id) else { continue };
            let Some(Ok(tools)) = listed.get(reference.server.as_str()) else { continue };
            if reference.is_all() || tools.contains(&reference.tool) {
                continue;
            }
            let have = tools.join(", ");
            let help = match did_you_mean(&reference.tool, tools.iter().map(String::as_str)) {
                Some(near) => format!("did you mean `{near}`? it has {have}"),
                None => format!("it has {have}"),
            };
            out.push(
                Diagnostic::error(
                    "unknown-mcp-tool",
                    Subject::Node(node.id.clone()),
                    format!("/nodes/{index}/agent/tools/{i}"),
                    format!("the MCP server `{}` has no tool `{}`", reference.server, reference.tool),
                )
                .with_help(help),
            );
        }
    }
    out
}

/// The names of a server's tools, or why it could not be asked.
async fn list(
    servers: &dyn ToolServers,
    name: &str,
    entry: &McpServerConfig,
    place: &ServerPlace,
) -> Result<Vec<String>, String> {
    match tokio::time::timeout(ASK_TIMEOUT, conclave_mcp::list_tools(servers, name, entry, place)).await {
        Ok(Ok(tools)) => Ok(tools.into_iter().map(|t| t.name).collect()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("it did not list its tools within {}s", ASK_TIMEOUT.as_secs())),
    }
}
