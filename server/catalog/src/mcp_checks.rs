//! The checks of a conclave's MCP servers and of the `mcp:` tools its agents list:
//! each `settings.mcp_servers` entry is one transport under a valid name, and each
//! `mcp:SERVER/TOOL` id is well formed and names a declared server (with a
//! did-you-mean among the declared ones). Whether the server has the tool is asked
//! of the server itself, by `conclave validate`, not here: these checks do no I/O.

use conclave_shared::mcp::{McpToolRef, is_name};
use conclave_shared::{Diagnostic, McpServerConfig, Subject};
use serde_json::Value;

use super::pointer;
use super::views::{NodeView, did_you_mean};

/// The JSON path of the servers' settings.
const SERVERS_PATH: &str = "/settings/mcp_servers";

/// The names of the servers `conclave` declares.
pub fn declared_servers(conclave: &Value) -> Vec<&str> {
    let servers = conclave.pointer(SERVERS_PATH).and_then(Value::as_object);
    servers.map(|s| s.keys().map(String::as_str).collect()).unwrap_or_default()
}

/// Checks every server entry: its name, and that it is one transport.
pub fn check_servers(conclave: &Value, out: &mut Vec<Diagnostic>) {
    let Some(servers) = conclave.pointer(SERVERS_PATH).and_then(Value::as_object) else { return };
    for (name, entry) in servers {
        let path = pointer(SERVERS_PATH, name);
        if !is_name(name) {
            out.push(
                Diagnostic::error(
                    "mcp-server-name",
                    Subject::File,
                    path.clone(),
                    format!("`{name}` is not an MCP server name"),
                )
                .with_help("name it with letters, digits, `-` and `_` (at most 64): agents write `mcp:NAME/TOOL`"),
            );
        }
        // An entry that does not read is the file format's to report.
        let Ok(config) = serde_json::from_value::<McpServerConfig>(entry.clone()) else { continue };
        if let Some(problem) = config.problem() {
            out.push(
                Diagnostic::error("mcp-server", Subject::File, path, problem.to_string())
                    .with_help("a stdio server is {\"command\": [\"program\", \"arg\"...]}; an HTTP one is {\"url\": \"https://…/mcp\"}"),
            );
        }
    }
}

/// Checks the `mcp:` id `tool`, the `index`th of an agent's `tools` at `base`.
pub fn check_tool(node: &NodeView, base: &str, index: usize, tool: &str, servers: &[&str], out: &mut Vec<Diagnostic>) {
    let path = format!("{base}/tools/{index}");
    let reference = match McpToolRef::parse(tool) {
        None => return,
        Some(Err(problem)) => {
            out.push(Diagnostic::error("mcp-tool", node.subject(), path, problem));
            return;
        }
        Some(Ok(reference)) => reference,
    };
    if servers.contains(&reference.server.as_str()) {
        return;
    }
    let declared =
        if servers.is_empty() { "none is declared".to_string() } else { format!("declared: {}", servers.join(", ")) };
    let help = match did_you_mean(&reference.server, servers.iter().copied()) {
        Some(near) => format!("did you mean `mcp:{near}/{}`? {declared}", reference.tool),
        None => format!("declare it in `settings.mcp_servers`; {declared}"),
    };
    out.push(
        Diagnostic::error(
            "unknown-mcp-server",
            node.subject(),
            path,
            format!("`{tool}` names the MCP server `{}`, which the conclave does not declare", reference.server),
        )
        .with_help(help),
    );
}
