//! MCP servers as conclave files name them: the `settings.mcp_servers` entries (a
//! stdio command or an HTTP URL), the `mcp:SERVER/TOOL` ids agents list in `tools`,
//! the name a model sees for each (`mcp__SERVER__TOOL`), and the API bodies that list a
//! server's tools for the editor's palette.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::sandbox::SandboxConfig;

/// The prefix of an MCP tool id in an agent's `tools`.
pub const MCP_TOOL_PREFIX: &str = "mcp:";

/// The separator of server and tool in the name a model sees (`mcp__docs__git_log`).
pub const MODEL_NAME_SEPARATOR: &str = "__";

/// One MCP server a conclave's agents may call: exactly one of `command` (a stdio
/// server, started once per run in the command sandbox) or `url` (Streamable HTTP).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program and its arguments of a stdio server (`["mcp-server-git",
    /// "--repository", "."]`); it runs in the repository (or the workspace), sandboxed
    /// as a command node is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The endpoint of a Streamable HTTP server (`https://tracker.example/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Request headers of an HTTP server whose values come from environment variables
    /// of the Conclave process, by name (`{"Authorization": "TRACKER_TOKEN"}`); the
    /// file never holds the secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers_from_env: BTreeMap<String, String>,
    /// How a stdio server widens its sandbox (network, paths, variables, limits), as
    /// a command node's `sandbox` block does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "SandboxConfig"))]
    pub sandbox: Option<SandboxConfig>,
}

impl McpServerConfig {
    /// The transport's problem, if the entry is not exactly one of a non-empty
    /// `command` or a `url`, or mixes the two transports' settings.
    pub fn problem(&self) -> Option<&'static str> {
        match (self.command.is_empty(), &self.url) {
            (true, None) => Some("an MCP server needs `command` (stdio) or `url` (HTTP)"),
            (false, Some(_)) => Some("an MCP server has `command` (stdio) or `url` (HTTP), not both"),
            (false, None) if self.command[0].trim().is_empty() => {
                Some("an MCP server's `command` starts with its program")
            }
            (false, None) if !self.headers_from_env.is_empty() => {
                Some("`headers_from_env` is for HTTP servers; a stdio server takes variables in `sandbox.env`")
            }
            (true, Some(_)) if self.sandbox.is_some() => {
                Some("`sandbox` is for stdio servers; an HTTP server runs elsewhere")
            }
            _ => None,
        }
    }

    /// The program of a stdio server.
    pub fn program(&self) -> Option<&str> {
        self.command.first().map(String::as_str)
    }
}

/// An `mcp:SERVER/TOOL` id from an agent's `tools`; `TOOL` is `*` for every tool of
/// the server.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct McpToolRef {
    /// The server's name in `settings.mcp_servers`.
    pub server: String,
    /// The tool's name on the server, or `*`.
    pub tool: String,
}

impl McpToolRef {
    /// Reads a tool id: `None` when it is not an `mcp:` id, the problem when it is one
    /// but malformed.
    pub fn parse(id: &str) -> Option<Result<McpToolRef, String>> {
        let rest = id.strip_prefix(MCP_TOOL_PREFIX)?;
        let Some((server, tool)) = rest.split_once('/') else {
            return Some(Err(format!(
                "`{id}` names no tool: write `mcp:SERVER/TOOL`, or `mcp:SERVER/*` for every tool of the server"
            )));
        };
        if !is_name(server) {
            return Some(Err(format!(
                "`{id}`: the server name `{server}` must be letters, digits, `-` and `_` (at most 64)"
            )));
        }
        if tool != "*" && (tool.is_empty() || tool.contains('/')) {
            return Some(Err(format!("`{id}`: write the tool's exact name after the `/`, or `*` for all")));
        }
        Some(Ok(McpToolRef { server: server.to_string(), tool: tool.to_string() }))
    }

    /// Whether it means every tool of the server.
    pub fn is_all(&self) -> bool {
        self.tool == "*"
    }

    /// The id as an agent lists it.
    pub fn id(&self) -> String {
        format!("{MCP_TOOL_PREFIX}{}/{}", self.server, self.tool)
    }
}

/// The name a model sees for a server's tool: `mcp__SERVER__TOOL`, with every
/// character a vendor refuses in a tool name (they take `[A-Za-z0-9_-]`, at most 64)
/// written as `_`, and cut to 64 characters.
pub fn model_tool_name(server: &str, tool: &str) -> String {
    let raw = format!("mcp{MODEL_NAME_SEPARATOR}{server}{MODEL_NAME_SEPARATOR}{tool}");
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(64).collect()
}

/// Whether `name` is a server name: letters, digits, `-` and `_`, 1 to 64 of them.
pub fn is_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `POST /api/mcp/tools`: list a server's tools, as a conclave's settings declare it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct McpToolsRequest {
    /// The server's name in the conclave (`docs`), for messages and tool ids.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_-]{1,64}$"))]
    pub name: String,
    /// The server's entry.
    pub server: McpServerConfig,
}

/// The tools an MCP server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpToolsResponse {
    /// The server's name, as asked.
    pub name: String,
    /// Its tools, in the server's order.
    pub tools: Vec<McpToolInfo>,
}

/// One tool of an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpToolInfo {
    /// The tool's name on the server (`git_log`).
    pub name: String,
    /// The id an agent lists (`mcp:docs/git_log`).
    pub id: String,
    /// What the server says the tool does.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its input.
    #[serde(default)]
    pub input_schema: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_ids_read_exactly() {
        assert_eq!(McpToolRef::parse("read_file"), None);
        let all = McpToolRef::parse("mcp:docs/*").and_then(Result::ok).expect("every tool");
        assert!(all.is_all());
        let one = McpToolRef::parse("mcp:docs/git_log").and_then(Result::ok).expect("one tool");
        assert_eq!((one.server.as_str(), one.tool.as_str(), one.id()), ("docs", "git_log", "mcp:docs/git_log".into()));
        for bad in ["mcp:docs", "mcp:/git_log", "mcp:docs/", "mcp:do cs/x", "mcp:docs/a/b"] {
            assert!(matches!(McpToolRef::parse(bad), Some(Err(_))), "{bad} is refused");
        }
    }

    #[test]
    fn model_names_are_what_vendors_accept() {
        assert_eq!(model_tool_name("docs", "git_log"), "mcp__docs__git_log");
        assert_eq!(model_tool_name("docs", "get.file"), "mcp__docs__get_file");
        assert_eq!(model_tool_name("x", &"t".repeat(100)).len(), 64);
    }

    #[test]
    fn an_entry_is_one_transport() {
        let stdio = McpServerConfig { command: vec!["mcp-server-git".into()], ..Default::default() };
        assert_eq!(stdio.problem(), None);
        let http = McpServerConfig { url: Some("https://x/mcp".into()), ..Default::default() };
        assert_eq!(http.problem(), None);
        assert!(McpServerConfig::default().problem().is_some());
        assert!(McpServerConfig { url: Some("u".into()), ..stdio.clone() }.problem().is_some());
        let headers = BTreeMap::from([("Authorization".to_string(), "T".to_string())]);
        assert!(McpServerConfig { headers_from_env: headers, ..stdio }.problem().is_some());
    }
}
